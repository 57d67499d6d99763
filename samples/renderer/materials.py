"""Materials and lights as pbc.Object classes: an integrator holds one Ptr[BSDF] per mesh and
calls its methods on every lane's own instance; pbc compiles each method once per class as
a subroutine, reading the instances' attributes (albedos) from memory.

Directions are in world space: `n` the unit geometric normal of the surface hit, `wi` the unit
direction towards where the ray came from, `wo` the unit direction a path continues in."""

import numpy as np

import pbc
from pbc.llvm import Array3f

from .ao import square_to_cosine_hemisphere, to_world


class BSDF(pbc.Object):
    def eval_pdf(self, n, wi, wo):
        """(f(wi, wo) cos(n, wo), the density of sample() choosing wo, per solid angle)."""
        raise NotImplementedError

    def sample(self, n, wi, u):
        """(wo, f cos / pdf, pdf) for a point u of the unit square."""
        raise NotImplementedError


class Diffuse(BSDF):
    """One-sided Lambertian reflection: albedo / pi on the front side of the surface (the
    side its normal points to), black where either direction lies behind it."""

    def __init__(self, albedo):
        super().__init__()
        self.albedo = Array3f(*np.asarray(albedo, np.float32))

    def eval_pdf(self, n, wi, wo):
        cos_i, cos_o = pbc.dot(n, wi), pbc.dot(n, wo)
        front = (cos_i > 0) & (cos_o > 0)
        value = self.albedo * (cos_o / np.pi)
        return (pbc.select(front, value, Array3f(0.0)),
                pbc.select(front, cos_o / np.pi, 0.0))

    def sample(self, n, wi, u):
        wo = to_world(n, square_to_cosine_hemisphere(u))
        cos_o = pbc.dot(n, wo)
        front = (pbc.dot(n, wi) > 0) & (cos_o > 0)
        return (wo, pbc.select(front, self.albedo, Array3f(0.0)),
                pbc.select(front, cos_o / np.pi, 0.0))


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

