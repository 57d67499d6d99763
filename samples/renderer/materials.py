"""Materials and lights as pbc.Object classes: an integrator holds one Ptr[BSDF] per mesh and
calls its methods on every lane's own instance; pbc compiles each method once per class as
a subroutine, reading the instances' attributes (albedos) from memory.

The methods take the point hit (`si`, a shapes.SurfacePoint: position, unit geometric normal
`si.n`, surface coordinates `si.uv`) and directions in world space: `wi` the unit direction
towards where the ray came from, `wo` the unit direction a path continues in."""

import numpy as np

import pbc
from pbc.llvm import Array3f, Int32, UInt32

from .ao import square_to_cosine_hemisphere, to_world


class BSDF(pbc.Object):
    def eval_pdf(self, si, wi, wo):
        """(f(wi, wo) cos(n, wo), the density of sample() choosing wo, per solid angle)."""
        raise NotImplementedError

    def sample(self, si, wi, u):
        """(wo, f cos / pdf, pdf) for a point u of the unit square."""
        raise NotImplementedError


class Diffuse(BSDF):
    """One-sided Lambertian reflection: albedo / pi on the front side of the surface (the
    side its normal points to), black where either direction lies behind it."""

    def __init__(self, albedo):
        super().__init__()
        self.albedo = Array3f(*np.asarray(albedo, np.float32))

    def reflectance(self, si):
        return self.albedo

    def eval_pdf(self, si, wi, wo):
        cos_i, cos_o = pbc.dot(si.n, wi), pbc.dot(si.n, wo)
        front = (cos_i > 0) & (cos_o > 0)
        value = self.reflectance(si) * (cos_o / np.pi)
        return (pbc.select(front, value, Array3f(0.0)),
                pbc.select(front, cos_o / np.pi, 0.0))

    def sample(self, si, wi, u):
        wo = to_world(si.n, square_to_cosine_hemisphere(u))
        cos_o = pbc.dot(si.n, wo)
        front = (pbc.dot(si.n, wi) > 0) & (cos_o > 0)
        return (wo, pbc.select(front, self.reflectance(si), Array3f(0.0)),
                pbc.select(front, cos_o / np.pi, 0.0))


class TexturedDiffuse(Diffuse):
    """Diffuse reflection whose albedo is an RGB texture (a (H, W, 3) array; row 0 at v = 0)
    looked up at the surface coordinates with bilinear filtering, repeating beyond [0, 1)
    (Mitsuba's bitmap defaults). `texture` is a pbc Array3f of H * W texels: gradients
    can flow into it."""

    def __init__(self, texture):
        pbc.Object.__init__(self)
        texture = np.asarray(texture, np.float32)
        if texture.ndim != 3 or texture.shape[2] != 3 or texture.size == 0:
            raise ValueError('TexturedDiffuse: expects an (H, W, 3) array of texels')
        self.height, self.width = texture.shape[:2]
        self.texture = Array3f(texture.reshape(-1, 3).T)

    def reflectance(self, si):
        w, h = self.width, self.height
        x, y = si.uv.x * w - 0.5, si.uv.y * h - 0.5
        x0, y0 = pbc.floor(x), pbc.floor(y)
        fx, fy = x - x0, y - y0
        # (texel coordinates taken modulo the size: repeat)
        ix0 = UInt32(Int32(x0) % w + w) % w
        iy0 = UInt32(Int32(y0) % h + h) % h
        ix1, iy1 = (ix0 + 1) % w, (iy0 + 1) % h

        def texel(ix, iy):
            return pbc.gather(Array3f, self.texture, iy * w + ix)
        return (texel(ix0, iy0) * ((1 - fx) * (1 - fy)) + texel(ix1, iy0) * (fx * (1 - fy))
                + texel(ix0, iy1) * ((1 - fx) * fy) + texel(ix1, iy1) * (fx * fy))


class AreaLights:
    """The emitting triangles of a scene, sampled by area for next-event estimation: each
    emits constant radiance from its front side. (Few triangles: the choice among them is a
    chain of selects.)"""

    def __init__(self, scene):
        ids, radiance = [], []
        for mesh in scene.meshes:
            if mesh.name in scene.emitters:
                ids += range(mesh.first, mesh.first + mesh.count)
                radiance += [scene.emitters[mesh.name]] * mesh.count
        self.ids = np.array(ids, dtype=np.int64)
        tri = scene.triangles[self.ids].astype(np.float32)
        area = 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]),
                                    axis=1)
        self.total_area = float(area.sum())
        self.cdf = np.cumsum(area) / self.total_area
        self.tri, self.radiance = tri, np.array(radiance, np.float32)
        self.normals = scene.normals[self.ids].astype(np.float32)

    def __len__(self):
        return len(self.ids)

    def sample(self, u_tri, u):
        """(a point on the lights, its unit normal, its radiance) for uniform numbers u_tri
        and u (Array2f): a triangle chosen with probability proportional to its area, then
        a uniform point on it; the density per unit area is 1 / total_area."""
        k = len(self) - 1
        p0, p1, p2, n, le = (Array3f(*c) for c in (self.tri[k, 0], self.tri[k, 1],
                                                   self.tri[k, 2], self.normals[k],
                                                   self.radiance[k]))
        for j in range(len(self) - 2, -1, -1):     # the first whose cdf exceeds u_tri
            here = u_tri < float(self.cdf[j])
            p0, p1, p2, n, le = (pbc.select(here, Array3f(*c), v) for c, v in zip(
                (self.tri[j, 0], self.tri[j, 1], self.tri[j, 2], self.normals[j],
                 self.radiance[j]), (p0, p1, p2, n, le)))
        # Uniform barycentrics (Turk's mapping), as Mitsuba's square_to_uniform_triangle.
        t = pbc.sqrt(1 - u.x)
        b1, b2 = 1 - t, u.y * t
        return p0 * (1 - b1 - b2) + p1 * b1 + p2 * b2, n, le

