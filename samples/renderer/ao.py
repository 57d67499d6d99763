"""Ambient occlusion as scene.json's `ao` block defines it: one camera ray through each pixel
centre; at its first hit, `num_rays` cosine-weighted shadow rays of length `ray_length`
around the face-forward geometric normal; the image is the fraction that escapes (0 where the
camera ray leaves the scene). The shadow-ray loop is a plain `while` that @pbc.syntax
records into the kernel, and each ray's BVH traversal is a loop inside it."""

import numpy as np

import pbc

from . import jit
from .shapes import Geometry

# Mitsuba's ray epsilon: origins move off surfaces by (1 + max |p_k|) * RAY_EPSILON.
RAY_EPSILON = 1500 * 2.0 ** -24


def camera_rays(camera, w, h, du=0.5, dv=0.5):
    """Rays (origin, unit direction) through the film positions ((i + du) / w, (j + dv) / h)
    of pixels (column i, row j from the top), in row-major order, starting on the near
    plane as Mitsuba's perspective camera does."""
    i = pbc.arange(jit.UInt32, w * h)
    u = (jit.Float(i % w) + du) / w
    v = (jit.Float(i // w) + dv) / h
    f, r, up = (jit.Array3f(*np.asarray(c, np.float32)) for c in (camera.forward, camera.right,
                                                                  camera.up))
    aspect = camera.height / camera.width
    d = pbc.normalize(f + r * ((2 * u - 1) * camera.tan_half)
                      + up * ((1 - 2 * v) * (camera.tan_half * aspect)))
    o = jit.Array3f(*np.asarray(camera.origin, np.float32)) + d * (camera.near_clip / pbc.dot(d, f))
    return o, d


def square_to_cosine_hemisphere(sample):
    """A point of the unit square mapped to the z >= 0 hemisphere, density cos(theta) / pi
    (Malley's method: the concentric disk mapping of Shirley and Chiu, lifted)."""
    x, y = 2 * sample.x - 1, 2 * sample.y - 1
    first = pbc.abs(x) > pbc.abs(y)
    r = pbc.select(first, x, y)
    safe_r = pbc.select(r == 0, 1.0, r)
    phi = pbc.select(first, (np.pi / 4) * (y / safe_r), np.pi / 2 - (np.pi / 4) * (x / safe_r))
    s, c = pbc.sincos(phi)
    px, py = r * c, r * s
    return jit.Array3f(px, py, pbc.sqrt(pbc.maximum(1 - px * px - py * py, 0.0)))


def to_world(n, v):
    """v from the frame whose z axis is the unit vector n to world space (the orthonormal
    basis of Duff et al. 2017)."""
    sign = pbc.copysign(1.0, n.z)
    a = -1 / (sign + n.z)
    b = n.x * n.y * a
    s = jit.Array3f(1 + sign * n.x * n.x * a, sign * b, -sign * n.x)
    t = jit.Array3f(b, sign + n.y * n.y * a, -n.y)
    return s * v.x + t * v.y + n * v.z


class AmbientOcclusion:
    """The integrator of a scene (see scene.load)."""

    def __init__(self, scene, accel=None, geometry=None):
        """geometry: the scene's shapes.Geometry (by default its meshes alone, in `accel`
        if given)."""
        self.scene = scene
        self.geometry = geometry or Geometry(scene, accel=accel)
        self.num_rays = int(scene.ao.get('num_rays', 64))
        self.ray_length = float(scene.ao.get('ray_length', 0.1 * np.linalg.norm(
            scene.bbox[1] - scene.bbox[0])))

    def render(self, w=None, h=None, spp=None, mode=None):
        """The image as a row-major Float of w * h values in [0, 1] (default: the camera's
        size and the scene's number of rays). mode: the loops' 'symbolic' or 'evaluated'."""
        cam = self.scene.camera
        w, h = w or cam.width, h or cam.height
        spp = self.num_rays if spp is None else spp
        o, d = camera_rays(cam, w, h)
        hit = self.geometry.ray_intersect(o, d, mode=mode)
        si = self.geometry.surface_point(hit, o, d)
        n = pbc.select(pbc.dot(si.n, d) > 0, -si.n, si.n)       # face-forward
        origin = si.p + n * ((1 + pbc.max(pbc.abs(si.p))) * RAY_EPSILON)
        rng = jit.PCG32(size=w * h)
        return pbc.select(hit.valid, self._occlusion(origin, n, rng, spp, hit.valid, mode),
                          0.0)

    @pbc.syntax
    def _occlusion(self, origin, n, rng, spp, active, mode):
        """The fraction of spp cosine-weighted rays from origin around n that travel
        ray_length without hitting anything (traced where `active`: the camera rays that
        hit something)."""
        i, free = jit.UInt32(0), jit.Float(0)
        while pbc.hint(i < spp, mode=mode, label='ao'):
            sample = jit.Array2f(rng.next_float32(), rng.next_float32())
            direction = to_world(n, square_to_cosine_hemisphere(sample))
            blocked = self.geometry.ray_test(origin, direction, self.ray_length, active,
                                             mode=mode)
            free += pbc.select(blocked, 0.0, 1.0)
            i += 1
        return free / spp
