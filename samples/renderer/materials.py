"""Materials and lights as pbc.Object classes: an integrator holds one Ptr[BSDF] per mesh and
calls its methods on every lane's own instance; pbc compiles each method once per class as
a subroutine, reading the instances' attributes (albedos) from memory.

The methods take the point hit (`si`, a shapes.SurfacePoint: position, unit geometric normal
`si.n`, surface coordinates `si.uv`) and directions in world space: `wi` the unit direction
towards where the ray came from, `wo` the unit direction a path continues in."""

import numpy as np

import pbc

from . import jit
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
        self.albedo = jit.Array3f(*np.asarray(albedo, np.float32))

    def reflectance(self, si):
        return self.albedo

    def eval_pdf(self, si, wi, wo):
        cos_i, cos_o = pbc.dot(si.n, wi), pbc.dot(si.n, wo)
        front = (cos_i > 0) & (cos_o > 0)
        value = self.reflectance(si) * (cos_o / np.pi)
        return (pbc.select(front, value, jit.Array3f(0.0)),
                pbc.select(front, cos_o / np.pi, 0.0))

    def sample(self, si, wi, u):
        wo = to_world(si.n, square_to_cosine_hemisphere(u))
        cos_o = pbc.dot(si.n, wo)
        front = (pbc.dot(si.n, wi) > 0) & (cos_o > 0)
        return (wo, pbc.select(front, self.reflectance(si), jit.Array3f(0.0)),
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
        self.texture = jit.Array3f(texture.reshape(-1, 3).T)

    def reflectance(self, si):
        w, h = self.width, self.height
        x, y = si.uv.x * w - 0.5, si.uv.y * h - 0.5
        x0, y0 = pbc.floor(x), pbc.floor(y)
        fx, fy = x - x0, y - y0
        # (texel coordinates taken modulo the size: repeat)
        ix0 = jit.UInt32(jit.Int32(x0) % w + w) % w
        iy0 = jit.UInt32(jit.Int32(y0) % h + h) % h
        ix1, iy1 = (ix0 + 1) % w, (iy0 + 1) % h

        def texel(ix, iy):
            return pbc.gather(jit.Array3f, self.texture, iy * w + ix)
        return (texel(ix0, iy0) * ((1 - fx) * (1 - fy)) + texel(ix1, iy0) * (fx * (1 - fy))
                + texel(ix0, iy1) * ((1 - fx) * fy) + texel(ix1, iy1) * (fx * fy))


class Emitter(pbc.Object):
    def eval(self, si, wi):
        """The radiance leaving the point si in the direction wi."""
        raise NotImplementedError

    def sample_position(self, u_tri, u):
        """(a point on the emitter, its unit normal), uniformly distributed over its area,
        for a uniform number u_tri and a point u of the unit square."""
        raise NotImplementedError


class AreaEmitter(Emitter):
    """Constant radiance from the front side (where the normal points) of triangles (T, 3,
    3), e.g. a mesh's."""

    def __init__(self, triangles, radiance):
        super().__init__()
        tri = np.asarray(triangles, np.float32)
        cross = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        area = 0.5 * np.linalg.norm(cross, axis=1)
        if len(tri) == 0 or not area.sum() > 0:
            raise ValueError('AreaEmitter: needs triangles of positive area')
        self.area = float(area.sum())
        self.count = len(tri)
        self.cdf_np = (np.cumsum(area) / self.area).astype(np.float32)
        self.cdf_np[-1] = 1.0
        self.cdf = jit.Float(self.cdf_np)
        self.corners = [jit.Array3f(tri[:, c].T) for c in range(3)]
        self.normals = jit.Array3f((cross / np.linalg.norm(cross, axis=1, keepdims=True)).T)
        self.radiance = jit.Array3f(*np.asarray(radiance, np.float32))

    def eval(self, si, wi):
        return pbc.select(pbc.dot(si.n, wi) > 0, self.radiance, jit.Array3f(0.0))

    def sample_position(self, u_tri, u):
        # The first triangle whose cumulative area share exceeds u_tri: a binary search
        # unrolled at trace time, one gather per step.
        k, size = jit.UInt32(0), self.count
        while size > 1:
            half = size // 2
            k = pbc.select(pbc.gather(jit.Float, self.cdf, k + (half - 1)) <= u_tri,
                           k + half, k)
            size -= half
        p0, p1, p2 = (pbc.gather(jit.Array3f, c, k) for c in self.corners)
        # Uniform barycentrics (Turk's mapping), as Mitsuba's square_to_uniform_triangle.
        t = pbc.sqrt(1 - u.x)
        b1, b2 = 1 - t, u.y * t
        return p0 * (1 - b1 - b2) + p1 * b1 + p2 * b2, pbc.gather(jit.Array3f, self.normals, k)


def scene_emitters(scene):
    """An AreaEmitter per emitting mesh of the scene: {mesh index: emitter}."""
    return {k: AreaEmitter(scene.triangles[m.first:m.first + m.count], scene.emitters[m.name])
            for k, m in enumerate(scene.meshes) if m.name in scene.emitters}
