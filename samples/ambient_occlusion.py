"""Ambient occlusion of a few spheres in front of a wall on a ground plane: the running example
of the Dr.Jit paper. One camera ray per pixel; at each hit, a plain Python `while` loop draws
cosine-weighted shadow rays from a PCG32 stream per pixel and counts those that escape.
@pbc.syntax records the loop once into the kernel (symbolic mode) or runs it as one kernel per
iteration (--mode evaluated); both give the same image.

    python samples/ambient_occlusion.py --size 1024x1024 --spp 64 --output ambient_occlusion.png
    python samples/ambient_occlusion.py --backend cuda --save-npy     # on a GPU, + the floats
"""

import argparse
import os
import time

import numpy as np
from renderer import jit

import pbc

SPHERES = [                              # (center, radius)
    ((-1.6, 0.7, 0.2), 0.7),
    ((0.0, 1.0, -0.6), 1.0),
    ((1.55, 0.6, 0.4), 0.6),
    ((0.5, 0.35, 1.4), 0.35),
]
PLANES = [                               # (unit normal, offset): the points p with n.p = offset
    ((0.0, 1.0, 0.0), 0.0),              # the ground
    ((0.0, 0.0, 1.0), -2.0),             # a wall behind the spheres
]
EYE, TARGET, FOV = (0.3, 1.8, 6.5), (0.0, 0.6, 0.0), 42.0
AO_RANGE = 1.5                           # shadow rays longer than this count as unoccluded
EPS = 1e-3
INF = 1e30


# ---- geometry ----------------------------------------------------------------------------

def hit_sphere(o, d, center, radius, t_min=EPS):
    """Distance along the unit ray (o, d) to the sphere, or INF where it misses (or the hit
    is closer than t_min)."""
    oc = o - jit.Array3f(*center)
    b = pbc.dot(oc, d)
    disc = b * b - (pbc.dot(oc, oc) - radius * radius)
    t = -b - pbc.sqrt(pbc.maximum(disc, 0.0))
    return pbc.select((disc > 0) & (t > t_min), t, INF)


def hit_plane(o, d, normal, offset, t_min=EPS):
    """Distance along the ray (o, d) to the plane, or INF where it misses (or the hit is
    closer than t_min)."""
    n = jit.Array3f(*normal)
    t = (offset - pbc.dot(o, n)) / pbc.dot(d, n)
    return pbc.select(t > t_min, t, INF)


def intersect(o, d):
    """Nearest hit of the rays: (distance or INF, surface normal)."""
    t, normal = jit.Float(INF), jit.Array3f(0, 1, 0)
    shapes = [(hit_plane, n, c) for n, c in PLANES] + [(hit_sphere, c, r) for c, r in SPHERES]
    for hit, a, b in shapes:
        ts = hit(o, d, a, b)
        closer = ts < t
        t = pbc.select(closer, ts, t)
        if hit is hit_plane:
            n = jit.Array3f(*a)
        else:
            n = (o + d * ts - jit.Array3f(*a)) / b
        normal = pbc.select(closer, n, normal)
    return t, normal


def occluded(o, d, t_max):
    """Whether anything lies along the ray (o, d) closer than t_max. The ray starts just off
    its surface, so hits at any t > 0 count: in the corner where the ground meets the wall,
    the wall may be closer than EPS."""
    hit = hit_plane(o, d, *PLANES[0], t_min=0) < t_max
    for normal, offset in PLANES[1:]:
        hit |= hit_plane(o, d, normal, offset, t_min=0) < t_max
    for center, radius in SPHERES:
        hit |= hit_sphere(o, d, center, radius, t_min=0) < t_max
    return hit


def square_to_cosine_hemisphere(sample):
    """Maps a point of the unit square to the z >= 0 hemisphere with density cos(theta)/pi."""
    sin_phi, cos_phi = pbc.sincos(sample.x * (2 * np.pi))
    r = pbc.sqrt(sample.y)
    return jit.Array3f(r * cos_phi, r * sin_phi, pbc.sqrt(1 - sample.y))


def to_world(n, v):
    """Rotates v from the local frame whose z axis is the unit vector n into world space
    (the branchless orthonormal basis of Duff et al. 2017)."""
    sign = pbc.copysign(1.0, n.z)
    a = -1 / (sign + n.z)
    b = n.x * n.y * a
    s = jit.Array3f(1 + sign * n.x * n.x * a, sign * b, -sign * n.x)
    t = jit.Array3f(b, sign + n.y * n.y * a, -n.y)
    return s * v.x + t * v.y + n * v.z


def camera_rays(w, h):
    forward = pbc.normalize(jit.Array3f(*TARGET) - jit.Array3f(*EYE))
    right = pbc.normalize(pbc.cross(forward, jit.Array3f(0, 1, 0)))
    up = pbc.cross(right, forward)
    scale = np.tan(np.radians(FOV) / 2)
    x, y = pbc.meshgrid(pbc.linspace(jit.Float, -1, 1, w, endpoint=False) + 1 / w,
                        pbc.linspace(jit.Float, 1, -1, h, endpoint=False) - 1 / h)
    d = forward + right * (x * scale * w / h) + up * (y * scale)
    return jit.Array3f(*EYE), pbc.normalize(d)


# ---- the integrator ----------------------------------------------------------------------

@pbc.syntax
def ambient_occlusion(p, n, rng, spp, mode='symbolic'):
    """The fraction of `spp` cosine-weighted shadow rays from p (offset along the normal n)
    that travel AO_RANGE without hitting anything. The `while` loop is ordinary Python:
    @pbc.syntax turns it into one loop inside the kernel (or, with mode='evaluated', one
    kernel per iteration) and finds its state (rng, i and result) by itself."""
    origin = p + n * EPS
    i, result = jit.UInt32(0), jit.Float(0)
    while pbc.hint(i < spp, mode=mode):
        sample = jit.Array2f(rng.next_float32(), rng.next_float32())
        direction = to_world(n, square_to_cosine_hemisphere(sample))
        result += pbc.select(occluded(origin, direction, AO_RANGE), 0.0, 1.0)
        i += 1
    return result / spp


def render(w, h, spp=64, mode='symbolic', backend=None):
    """The ambient occlusion of every pixel (row-major Float of w*h values in [0, 1]; 1 where
    the camera ray leaves the scene). mode: 'symbolic' or 'evaluated' loop. backend: 'llvm'
    or 'cuda' (None: renderer.jit's current one)."""
    with jit.using(backend):
        o, d = camera_rays(w, h)
        t, n = intersect(o, d)
        hit = t < INF
        rng = jit.PCG32(size=w * h)              # one random number stream per pixel
        ao = ambient_occlusion(o + d * t, n, rng, spp, mode)
        return pbc.select(hit, ao, 1.0)


def timed_render(w, h, spp=64, mode='symbolic', backend=None):
    """Renders with the kernel history on; returns (image as a NumPy array, timings in s):
    trace (Python-side, without kernels launched while tracing), compile (codegen + LLVM),
    run (kernel execution), eval (wall time of the final pbc.eval), kernels, ir_ops."""
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
        pbc.kernel_history_clear()
        t0 = time.perf_counter()
        ao = render(w, h, spp, mode, backend)
        t1 = time.perf_counter()
        during_trace = pbc.kernel_history()   # evaluated mode launches kernels while tracing
        pbc.eval(ao)
        t2 = time.perf_counter()
        hist = pbc.kernel_history()
    in_trace = sum(k['codegen_time'] + k['backend_time'] + k['execution_time']
                   for k in during_trace)
    return ao.numpy().reshape(h, w), {
        'trace': t1 - t0 - in_trace,
        'compile': sum(k['codegen_time'] + k['backend_time'] for k in hist),
        'run': sum(k['execution_time'] for k in hist),
        'eval': t2 - t1,
        'wall': t2 - t0,
        'kernels': len(hist),
        'kernels_in_trace': len(during_trace),
        'ir_ops': sum(k['ir_ops'] for k in hist),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--size', default='1024x1024', help='WxH or N (default 1024x1024)')
    parser.add_argument('--spp', type=int, default=64, help='shadow rays per pixel (default 64)')
    parser.add_argument('--mode', choices=('symbolic', 'evaluated'), default='symbolic',
                        help='record the loop into the kernel, or run one kernel per iteration')
    parser.add_argument('--output', default='ambient_occlusion.png')
    jit.add_argument(parser)
    parser.add_argument('--save-npy', nargs='?', const='', metavar='PATH',
                        help='also save the image as float32 (H, W) NumPy array (default '
                             'path: the PNG\'s, ending in .npy)')
    args = parser.parse_args()
    w, h = (int(s) for s in (args.size.split('x') * 2)[:2])
    jit.use(args.backend)

    t0 = time.perf_counter()
    ao, t = timed_render(w, h, args.spp, args.mode)
    # Linear gray levels (AO images are usually shown without gamma), quantized to 8 bits.
    image = (np.clip(ao, 0, 1) * 255 + 0.5).astype(np.uint8)
    from PIL import Image  # the `samples` extra
    Image.fromarray(image).save(args.output)
    total = time.perf_counter() - t0
    if args.save_npy is not None:
        np.save(args.save_npy or os.path.splitext(args.output)[0] + '.npy', ao)

    where = ('cuda' if args.backend == 'cuda' else f'{pbc.thread_count()} threads')
    print(f'{w}x{h} image, {args.spp} shadow rays per pixel, {args.mode} loop -> {args.output} '
          f'({t["kernels"]} kernel(s), {t["ir_ops"]} IR ops, {where})')
    launched = t['kernels_in_trace']
    print(f'trace   {t["trace"] * 1e3:8.2f} ms'
          + (f' (not counting the {launched} kernel(s) it launched)' if launched else ''))
    print(f'compile {t["compile"] * 1e3:8.2f} ms')
    print(f'run     {t["run"] * 1e3:8.2f} ms')
    print(f'eval    {t["eval"] * 1e3:8.2f} ms (compile + run + one-time '
          f'{args.backend.upper()} setup)')
    print(f'total   {total * 1e3:8.2f} ms (including PNG encoding)')


if __name__ == '__main__':
    main()
