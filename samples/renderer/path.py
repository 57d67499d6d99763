"""A unidirectional path tracer: next-event estimation and BSDF sampling combined by multiple
importance sampling (the power heuristic), Russian roulette from depth `rr_depth`, paths of
at most `max_depth` segments; the algorithm of Mitsuba 3's `path` integrator for the
materials and lights of scene.json (one-sided diffuse surfaces, one-sided area lights).

The per-sample loop, the path loop inside it and the BVH traversals inside that are plain
`while` statements that @pbc.syntax records into one kernel; `bsdf.eval_pdf(...)` and
`bsdf.sample(...)` on a Ptr[BSDF] array are calls of each lane's own material.

Random numbers, one PCG32 stream per pixel, drawn in this order per sample: the film
position (2), then per path vertex: the light triangle (1), the point on it (2), the BSDF
sample (2), Russian roulette (1)."""

import numpy as np

import pbc

from . import jit
from .ao import RAY_EPSILON, camera_rays
from .materials import BSDF, Diffuse, Emitter, scene_emitters
from .shapes import Geometry, SurfacePoint

PCG32_STATE = 0x853C49E6748FEA9B      # PCG32's default initial state
SHADOW_EPSILON = 10 * RAY_EPSILON    # shadow rays to a light stop this fraction short of it


def mis_weight(a, b):
    """The power heuristic's weight of a sampling technique of density a against one of b."""
    a2, b2 = a * a, b * b
    return pbc.select(a2 + b2 > 0, a2 / (a2 + b2), 0.0)


def spawn(p, n, d):
    """The origin of a ray leaving the surface point p (unit normal n) in direction d: p
    moved off the surface, to the side d goes to (Mitsuba's ray epsilon)."""
    eps = (1 + pbc.max(pbc.abs(p))) * RAY_EPSILON
    return p + n * pbc.mulsign(eps, pbc.dot(n, d))


class PathTracer:
    """geometry: the scene's shapes.Geometry (by default its meshes alone, in `accel` if
    given); bsdfs: a BSDF per shape (by default, for each mesh a Diffuse of its material's
    albedo, one instance per material; shapes beyond the meshes need theirs given)."""

    def __init__(self, scene, accel=None, max_depth=8, rr_depth=5, geometry=None,
                 bsdfs=None):
        self.scene = scene
        self.geometry = geo = geometry or Geometry(scene, accel=accel)
        self.max_depth, self.rr_depth = max_depth, rr_depth
        if bsdfs is None:
            if len(geo) > len(scene.meshes):
                raise ValueError('PathTracer: give a BSDF for every shape (bsdfs=...)')
            materials = {name: Diffuse(albedo) for name, albedo in scene.albedo.items()}
            bsdfs = [materials[m.material] for m in scene.meshes]
        if len(bsdfs) != len(geo):
            raise ValueError(f'PathTracer: {len(bsdfs)} BSDFs for {len(geo)} shapes')
        self.bsdfs = list(bsdfs)
        self.shape_bsdf = jit.Ptr[BSDF](self.bsdfs)
        # The scene's area lights: a pointer per shape (none for most), and a choice among
        # them in proportion to their areas for next-event estimation.
        emitters = scene_emitters(scene)
        if not emitters:
            raise ValueError('PathTracer: the scene has no emitter')
        self.emitters = list(emitters.values())
        self.shape_emitter = jit.Ptr[Emitter]([emitters.get(k) for k in range(len(geo))])
        self.emitter_table = jit.Ptr[Emitter](self.emitters)
        self.total_area = sum(e.area for e in self.emitters)
        self.emitter_cdf = np.cumsum([e.area for e in self.emitters]) / self.total_area

    def render(self, w=None, h=None, spp=16, mode=None, seed=0):
        """The image as a row-major Array3f of w * h RGB values (linear radiance), the
        average of spp paths per pixel through random points of it. `seed` picks other
        random number streams (0: PCG32's defaults, as Mitsuba's independent sampler)."""
        cam = self.scene.camera
        w, h = w or cam.width, h or cam.height
        return self._pixels(w, h, spp, self._streams(w * h, seed), mode)

    @staticmethod
    def _streams(size, seed):
        """A PCG32 stream per pixel; the seed lives in memory, so that another seed runs
        the same kernel."""
        return jit.PCG32(size=size, initstate=pbc.opaque(jit.UInt64, PCG32_STATE + seed))

    @pbc.syntax
    def _pixels(self, w, h, spp, rng, mode):
        total = jit.Array3f(0.0)
        s = jit.UInt32(0)
        while pbc.hint(s < spp, mode=mode, label='samples'):
            du, dv = rng.next_float32(), rng.next_float32()
            o, d = camera_rays(self.scene.camera, w, h, du, dv)
            total += self._path(o, d, rng, mode)
            s += 1
        return total / spp

    def _sample_emitter(self, u_choice, u):
        """(a point on an emitter, its normal, its emitter): an emitter chosen in proportion
        to its area (u_choice, reused within it), then a uniform point on it. The density
        per unit area is 1 / total_area."""
        cdf = [float(c) for c in self.emitter_cdf]
        index, lo, hi = jit.UInt32(0), jit.Float(0.0), jit.Float(cdf[0])
        u_within = u_choice
        for k in range(1, len(cdf)):                    # (few emitters: selects)
            past = u_choice >= cdf[k - 1]
            index = pbc.select(past, k, index)
            lo = pbc.select(past, cdf[k - 1], lo)
            hi = pbc.select(past, cdf[k], hi)
        if len(cdf) > 1:
            u_within = (u_choice - lo) / (hi - lo)
        emitter = pbc.gather(jit.Ptr[Emitter], self.emitter_table, index)
        q, nq = emitter.sample_position(u_within, u)
        return q, nq, emitter

    @pbc.syntax
    def _path(self, o, d, rng, mode):
        """The radiance arriving along the rays (o, d)."""
        geo = self.geometry
        radiance, beta = jit.Array3f(0.0), jit.Array3f(1.0)
        depth = jit.UInt32(0)
        prev_pdf, prev_delta = jit.Float(1.0), jit.Bool(True)    # (no MIS for the camera ray)
        hit = geo.ray_intersect(o, d, mode=mode)
        active = hit.valid
        while pbc.hint(active, mode=mode, label='path', max_iterations=self.max_depth):
            shape = geo.shape_id(hit)
            si = geo.surface_point(hit, o, d, shape)
            wi = -d
            radiance += self._emitted(hit, si, shape, wi, beta, prev_pdf, prev_delta)
            more = depth + 1 < self.max_depth
            bsdf = pbc.gather(jit.Ptr[BSDF], self.shape_bsdf, shape, more)
            radiance += self._next_event(si, wi, bsdf, more, beta, rng, mode)

            # BSDF sampling: the path's next direction.
            u_bsdf = jit.Array2f(rng.next_float32(), rng.next_float32())
            wo, bsdf_weight, pdf = bsdf.sample(si, wi, u_bsdf)
            beta *= bsdf_weight
            prev_pdf, prev_delta = pdf, jit.Bool(False)
            o, d, hit, beta, active = self._advance(si, wo, beta, depth, more, rng, mode)
            depth += 1
        return radiance

    def _emitted(self, hit, si, shape, wi, beta, prev_pdf, prev_delta):
        """Emission where the path hits a light's front side, weighted against the chance
        that next-event estimation at the previous vertex chose this point."""
        emitter = pbc.gather(jit.Ptr[Emitter], self.shape_emitter, shape)
        le = emitter.eval(si, wi)
        light_pdf = hit.t * hit.t / (pbc.abs(pbc.dot(si.n, wi)) * self.total_area)
        weight = pbc.select(prev_delta, 1.0, mis_weight(prev_pdf, light_pdf))
        return beta * le * weight

    def _next_event(self, si, wi, bsdf, more, beta, rng, mode):
        """Next-event estimation: the radiance from a point on a light, seen unless
        something blocks it, weighted against BSDF sampling's chance of finding it."""
        p, n = si.p, si.n
        u_light = rng.next_float32()
        u_point = jit.Array2f(rng.next_float32(), rng.next_float32())
        q, nq, light = self._sample_emitter(u_light, u_point)
        to_light = q - p
        dist = pbc.norm(to_light)
        wl = to_light / dist
        cos_l = -pbc.dot(nq, wl)
        le_q = light.eval(SurfacePoint(q, nq, jit.Array2f(0.0)), -wl)
        f, bsdf_pdf = bsdf.eval_pdf(si, wi, wl)
        lit = more & (cos_l > 0) & (pbc.max(f) > 0)
        # (only lanes that the light reaches trace their shadow rays: a quarter fewer)
        blocked = self.geometry.ray_test(spawn(p, n, wl), wl, dist * (1 - SHADOW_EPSILON),
                                         lit, mode=mode)
        pdf_l = dist * dist / (cos_l * self.total_area)
        return pbc.select(lit & ~blocked, beta * f * le_q * (mis_weight(pdf_l, bsdf_pdf) / pdf_l),
                          jit.Array3f(0.0))

    def _advance(self, si, wo, beta, depth, more, rng, mode):
        """The path's next segment, from si in direction wo, past Russian roulette (from
        depth rr_depth on): (its origin, direction and hit, beta, whether the path goes
        on)."""
        u_rr = rng.next_float32()
        rr_prob = pbc.minimum(pbc.max(beta), 0.95)
        roulette = depth + 1 >= self.rr_depth
        beta = pbc.select(roulette, beta / rr_prob, beta)
        go = more & (~roulette | (u_rr < rr_prob)) & (pbc.max(beta) > 0)
        o = spawn(si.p, si.n, wo)
        hit = self.geometry.ray_intersect(o, wo, active=go, mode=mode)
        return o, wo, hit, beta, go & hit.valid
