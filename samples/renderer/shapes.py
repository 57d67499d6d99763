"""The shapes of a scene as pbc.Object classes: triangle meshes (all of them in one BVH, see
intersect.py) and analytic spheres. `Geometry` finds the nearest hit among them; the shape
hit then describes the point (position, normal, surface coordinates) through a call on a
Ptr[Shape], one subroutine per class.

    geo = Geometry(scene, spheres=[Sphere((0, 0, 0), 0.5)])
    hit = geo.ray_intersect(o, d)
    si = geo.surface_point(hit, o, d)          # si.p, si.n, si.uv
"""

from typing import NamedTuple

import numpy as np

import pbc

from . import jit
from .intersect import NO_HIT, Accel, Hit


class SurfacePoint(NamedTuple):
    """A point on a surface: position, unit geometric normal (a mesh's: the side its
    triangles' corners wind counter-clockwise around; a sphere's: outwards) and surface
    coordinates in [0, 1]^2."""
    p: 'jit.Array3f'
    n: 'jit.Array3f'
    uv: 'jit.Array2f'


class Shape(pbc.Object):
    def surface_point(self, o, d, hit):
        """The SurfacePoint where the rays (o, d) hit this shape (`hit`: Geometry's)."""
        raise NotImplementedError


class MeshShape(Shape):
    """The triangle meshes of a scene, all of them: their triangles are in one BVH, and
    their normals and the surface coordinates of their corners in arrays by triangle id.
    (One instance for every mesh: what differs between meshes, their materials and
    emission, is looked up by mesh.)"""

    def __init__(self, accel, normals, uvs):
        super().__init__()
        self.accel, self.normals = accel, normals
        self.uv0, self.uv1, self.uv2 = uvs

    def surface_point(self, o, d, hit):
        n = pbc.gather(jit.Array3f, self.normals, hit.prim)
        uv0, uv1, uv2 = (pbc.gather(jit.Array2f, a, hit.prim) for a in (self.uv0, self.uv1,
                                                                        self.uv2))
        uv = uv0 * (1 - hit.b1 - hit.b2) + uv1 * hit.b1 + uv2 * hit.b2
        return SurfacePoint(self.accel.position(hit), n, uv)


class Sphere(Shape):
    """A sphere of `center` and `radius`; (u, v): longitude and colatitude over 2 pi and
    pi, about the y axis."""

    def __init__(self, center, radius):
        super().__init__()
        if not radius > 0:
            raise ValueError(f'Sphere: the radius must be positive, not {radius}')
        self.center_np = np.asarray(center, np.float32)
        self.radius = float(radius)
        self.center = jit.Array3f(*self.center_np)

    def intersect(self, o, d, t_max):
        """The nearest distance in [0, t_max) at which the rays (o, d) (d of unit length)
        meet the sphere, or INF. The discriminant is computed from the ray's closest
        approach to the centre, which keeps its precision far from the sphere (Haines et
        al., "Precision improvements for ray/sphere intersection", Ray Tracing Gems)."""
        f = o - self.center
        b = -pbc.dot(f, d)
        closest = f + d * b
        disc = self.radius * self.radius - pbc.squared_norm(closest)
        root = pbc.sqrt(pbc.maximum(disc, 0.0))
        # (b + sign(b) root) has no cancellation; the other root is c / q.
        q = b + pbc.copysign(root, b)
        c = pbc.squared_norm(f) - self.radius * self.radius
        t0 = pbc.select(q != 0, c / q, 0.0)
        near, far = pbc.minimum(q, t0), pbc.maximum(q, t0)
        t = pbc.select(near >= 0, near, far)
        return pbc.select((disc >= 0) & (t >= 0) & (t < t_max), t, float('inf'))

    def surface_point(self, o, d, hit):
        n = pbc.normalize(o + d * hit.t - self.center)
        u = (pbc.atan2(n.x, n.z) + np.pi) / (2 * np.pi)
        v = pbc.acos(pbc.clip(n.y, -1.0, 1.0)) / np.pi
        return SurfacePoint(self.center + n * self.radius, n, jit.Array2f(u, v))


def planar_uvs(scene):
    """Surface coordinates for meshes without them: each mesh's corners projected onto the
    two longest axes of its bounding box, scaled to [0, 1] (a wall gets the whole square).
    Three (T, 2) arrays, by corner."""
    uvs = np.zeros((len(scene.triangles), 3, 2), np.float32)
    for m in scene.meshes:
        tri = scene.triangles[m.first:m.first + m.count]
        lo, hi = tri.min(axis=(0, 1)), tri.max(axis=(0, 1))
        extent = hi - lo
        a, b = np.argsort(-extent, kind='stable')[:2]
        for axis, k in ((a, 0), (b, 1)):
            uvs[m.first:m.first + m.count, :, k] = (tri[..., axis] - lo[axis]) / max(
                extent[axis], 1e-30)
    return [uvs[:, c] for c in range(3)]


class Geometry:
    """Every shape of a scene: its meshes (one MeshShape each, all triangles in one BVH)
    and analytic `spheres`. Primitive ids: the scene's triangle ids, then len(triangles) +
    k for sphere k. Shape ids: the meshes' indices, then len(meshes) + k."""

    def __init__(self, scene, spheres=(), accel=None):
        self.scene = scene
        self.accel = accel or Accel(scene.triangles)
        self.triangles = len(scene.triangles)
        self.normals = jit.Array3f(scene.normals.astype(np.float32).T)
        self.uvs = [jit.Array2f(c.T) for c in planar_uvs(scene)]
        self.mesh_of = jit.UInt32(scene.mesh_of)
        self.spheres = list(spheres)
        self.mesh_shape = MeshShape(self.accel, self.normals, self.uvs)
        self.meshes = [self.mesh_shape] * len(scene.meshes)
        self.shapes = jit.Ptr[Shape](self.meshes + self.spheres)
        pbc.eval(self.normals, self.uvs, self.mesh_of)

    def __len__(self):
        """The number of shapes."""
        return len(self.meshes) + len(self.spheres)

    def ray_intersect(self, o, d, t_max=float('inf'), active=True, mode=None):
        """The nearest hits (intersect.Hit, with primitive ids as above) of the rays (o, d),
        d of unit length, at distances in [0, t_max); none where the lane is not `active`
        (its rays are not traced)."""
        hit = self.accel.ray_intersect(o, d, t_max, active, mode=mode)
        for k, sphere in enumerate(self.spheres):
            t = sphere.intersect(o, d, hit.t)
            closer = (t < hit.t) & active
            hit = Hit(pbc.select(closer, t, hit.t),
                      pbc.select(closer, self.triangles + k, hit.prim),
                      hit.b1, hit.b2, pbc.select(closer, NO_HIT, hit.slot))
        return hit

    def ray_test(self, o, d, t_max=float('inf'), active=True, mode=None):
        """Whether the rays (o, d), d of unit length, hit anything in [0, t_max) (False
        where the lane is not `active`)."""
        blocked = jit.Bool(False)
        for sphere in self.spheres:
            blocked |= (sphere.intersect(o, d, t_max) < t_max) & active
        return blocked | self.accel.ray_test(o, d, t_max, active, mode=mode)

    def shape_id(self, hit):
        """The shape of each hit (UInt32; undefined where there is none)."""
        mesh = pbc.gather(jit.UInt32, self.mesh_of, hit.prim, hit.prim < self.triangles)
        return pbc.select(hit.prim < self.triangles, mesh,
                          hit.prim - self.triangles + len(self.meshes))

    def surface_point(self, hit, o, d, shape=None):
        """The SurfacePoint of each hit (zeros where there is none), by a call of its
        shape's surface_point; `shape`: shape_id(hit), if already known."""
        shape = self.shape_id(hit) if shape is None else shape
        ptr = pbc.gather(jit.Ptr[Shape], self.shapes, shape, hit.valid)
        return ptr.surface_point(o, d, hit)

