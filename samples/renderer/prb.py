"""Path Replay Backpropagation (Vicini et al. 2021): the reverse-mode derivative of the path
tracer (path.py) w.r.t. the scene's parameters that carry derivatives (a Diffuse's albedo,
a TexturedDiffuse's texture: `pbc.enable_grad` them), without storing the paths.

For every sample, one kernel traces the path as the primal renderer does, which gives its
radiance L, then traces it again with the same random numbers (the replay). At each vertex
of the replay, L less what the path has gathered so far is the radiance that arrives from
further along it; `backward_from` inside the loop then propagates the adjoint radiance
times the derivatives of this vertex's contributions: next-event estimation's (through the
BSDF's value towards the light) and the rest of the path's (through the BSDF's value in
the sampled direction, the factor that the path's throughput carries on). The BSDFs'
methods are called again for this, inside `resume_grad()`: their derivative calls
scatter-add into the parameters' gradients, in the same kernel.

Like Mitsuba's `prb` integrator, it treats Russian roulette's probabilities and the
sampling of directions as constants (they depend on the albedos only through which paths
exist, not through their values); with roulette off (rr_depth >= max_depth), the result
is the exact derivative of the primal image for the same random numbers."""

import pbc

from . import jit
from .ao import camera_rays
from .materials import BSDF
from .path import PathTracer


class PathReplay(PathTracer):
    """A PathTracer (same arguments) that also computes derivatives of its images."""

    def render_backward(self, grad_image, w=None, h=None, spp=16, mode=None, seed=0):
        """Adds the derivatives of sum(render(w, h, spp, mode, seed) * grad_image) (the
        image's adjoint, an Array3f of w * h pixels) w.r.t. the parameters that carry
        derivatives to their gradients (read them with pbc.grad). Returns the image of
        the paths it replayed: render(w, h, spp, mode, seed)'s."""
        cam = self.scene.camera
        w, h = w or cam.width, h or cam.height
        grad = jit.Array3f(grad_image)
        if pbc.width(grad) not in (1, w * h):
            raise ValueError(f'render_backward: the adjoint image has {pbc.width(grad)} pixels, '
                             f'not {w} x {h}')
        with pbc.suspend_grad():
            return self._pixels_backward(w, h, spp, self._streams(w * h, seed),
                                         pbc.detach(grad) / spp, mode)

    @pbc.syntax
    def _pixels_backward(self, w, h, spp, rng, grad, mode):
        total = jit.Array3f(0.0)
        s = jit.UInt32(0)
        while pbc.hint(s < spp, mode=mode, label='samples'):
            # (the random numbers of _pixels, in its order)
            du, dv = rng.next_float32(), rng.next_float32()
            o, d = camera_rays(self.scene.camera, w, h, du, dv)
            start = jit.UInt64(rng.state)
            L = self._path(o, d, rng, mode)
            rng.state = start
            self._replay(o, d, rng, L, grad, mode)
            total += L
            s += 1
        return total / spp

    @pbc.syntax
    def _replay(self, o, d, rng, L, grad, mode):
        """The path that _path traced from (o, d) with these random numbers again, L its
        radiance: backpropagates grad times its derivatives, vertex by vertex."""
        geo = self.geometry
        remaining = jit.Array3f(L)          # (a copy: the loop changes it in place)
        beta = jit.Array3f(1.0)
        depth = jit.UInt32(0)
        prev_pdf, prev_delta = jit.Float(1.0), jit.Bool(True)
        hit = geo.ray_intersect(o, d, mode=mode)
        active = hit.valid
        while pbc.hint(active, mode=mode, label='replay'):
            shape = geo.shape_id(hit)
            si = geo.surface_point(hit, o, d, shape)
            wi = -d
            remaining -= self._emitted(hit, si, shape, wi, beta, prev_pdf, prev_delta)
            more = depth + 1 < self.max_depth
            bsdf = pbc.gather(jit.Ptr[BSDF], self.shape_bsdf, shape, more)
            with pbc.resume_grad():
                direct = self._next_event(si, wi, bsdf, more, beta, rng, mode)
            u_bsdf = jit.Array2f(rng.next_float32(), rng.next_float32())
            wo, bsdf_weight, pdf = bsdf.sample(si, wi, u_bsdf)
            # (what arrives from further along the path: its vertices' contributions all
            # carry this vertex's BSDF value in the throughput)
            remaining -= pbc.detach(direct)
            with pbc.resume_grad():
                f, _ = bsdf.eval_pdf(si, wi, wo)
                value = pbc.detach(f)
                nonzero = value > 0
                ratio = pbc.select(nonzero, f / pbc.select(nonzero, value, 1.0), 0.0)
                # (a vertex whose contributions no parameter changes: nothing to do)
                pbc.backward_from(grad * (direct + remaining * ratio),
                                  flags=pbc.ADFlag.Default | pbc.ADFlag.AllowNoGrad)
            beta *= bsdf_weight
            prev_pdf, prev_delta = pdf, jit.Bool(False)
            o, d, hit, beta, active = self._advance(si, wo, beta, depth, more, rng, mode)
            depth += 1
