"""Ray-casts a few spheres on a checkered ground plane: Lambert shading, a Phong highlight and
hard shadows from one directional light. Straight-line array code (the loop over the spheres is
ordinary Python, unrolled at trace time), compiled into one fused kernel on evaluation.

    python samples/spheres.py --size 1024 --output spheres.png
    python samples/spheres.py --backend cuda --save-npy     # on a GPU, + the raw values
"""

import argparse
import os
import time

import numpy as np
from renderer import jit

import pbc

# (center, radius, albedo)
SPHERES = [
    ((-1.6, 0.7, 0.2), 0.7, (0.85, 0.20, 0.15)),
    ((0.0, 1.0, -0.6), 1.0, (0.20, 0.50, 0.90)),
    ((1.55, 0.6, 0.4), 0.6, (0.25, 0.75, 0.30)),
    ((0.5, 0.35, 1.4), 0.35, (0.95, 0.75, 0.15)),
]
LIGHT = (-0.6, 1.0, 0.7)                 # direction towards the light (not normalized)
EYE, TARGET, FOV = (0.3, 1.8, 6.5), (0.0, 0.6, 0.0), 42.0
INF = 1e30


def hit_sphere(o, d, center, radius):
    """Distance along the unit ray (o, d) to the sphere, or INF where it misses."""
    oc = o - jit.Array3f(*center)
    b = pbc.dot(oc, d)
    disc = b * b - (pbc.dot(oc, oc) - radius * radius)
    t = -b - pbc.sqrt(pbc.maximum(disc, 0.0))
    return pbc.select((disc > 0) & (t > 1e-3), t, INF)


def camera_rays(w, h):
    forward = pbc.normalize(jit.Array3f(*TARGET) - jit.Array3f(*EYE))
    right = pbc.normalize(pbc.cross(forward, jit.Array3f(0, 1, 0)))
    up = pbc.cross(right, forward)
    scale = np.tan(np.radians(FOV) / 2)
    x, y = pbc.meshgrid(pbc.linspace(jit.Float, -1, 1, w, endpoint=False) + 1 / w,
                        pbc.linspace(jit.Float, 1, -1, h, endpoint=False) - 1 / h)
    d = forward + right * (x * scale * w / h) + up * (y * scale)
    return jit.Array3f(*EYE), pbc.normalize(d)


def render(w, h, backend=None):
    """The image, row-major: an Array3f of w * h pixels, 8-bit values (gamma 2.2) as
    floats. backend: 'llvm' or 'cuda' (None: renderer.jit's current one)."""
    with jit.using(backend):
        return _shade(w, h)


def _shade(w, h):
    # (the light's direction, an array of the backend of this render)
    light = pbc.normalize(jit.Array3f(*LIGHT))
    o, d = camera_rays(w, h)

    # Nearest hit: the ground plane y = 0, then each sphere in turn.
    t_ground = -o.y / d.y
    t = pbc.select((d.y < 0) & (t_ground > 0), t_ground, INF)
    p = o + d * t
    checker = (pbc.floor(p.x) + pbc.floor(p.z)) * 0.5
    odd = checker - pbc.floor(checker) > 0.25
    albedo = pbc.select(odd, jit.Array3f(0.8, 0.8, 0.78), jit.Array3f(0.35, 0.35, 0.38))
    normal = jit.Array3f(0, 1, 0)
    shiny = jit.Float(0.0)
    for center, radius, color in SPHERES:
        ts = hit_sphere(o, d, center, radius)
        closer = ts < t
        t = pbc.select(closer, ts, t)
        ps = o + d * ts
        normal = pbc.select(closer, (ps - jit.Array3f(*center)) / radius, normal)
        albedo = pbc.select(closer, jit.Array3f(*color), albedo)
        shiny = pbc.select(closer, 1.0, shiny)
    hit = t < INF
    p = o + d * t

    # Hard shadows: is any sphere in the way towards the light?
    origin = p + normal * 1e-3
    lit = jit.Float(1.0)
    for center, radius, _ in SPHERES:
        lit = pbc.select(hit_sphere(origin, light, center, radius) < INF, 0.0, lit)

    # Lambert + Phong highlight + ambient; fog the ground towards the horizon.
    cos_theta = pbc.maximum(pbc.dot(normal, light), 0.0)
    reflected = d - normal * (2 * pbc.dot(d, normal))
    spec = shiny * pbc.maximum(pbc.dot(reflected, light), 0.0) ** 40
    sky = pbc.lerp(jit.Array3f(0.95, 0.97, 1.0), jit.Array3f(0.35, 0.55, 0.9),
                   pbc.clip(d.y * 2, 0, 1))
    color = albedo * (0.15 + 0.9 * lit * cos_theta) + lit * spec * 0.6
    fog = 1 - pbc.clip(t * 0.02, 0, 1) ** 2
    color = pbc.lerp(sky, color, fog)
    color = pbc.select(hit, color, sky)

    # Gamma 2.2, quantized to 8 bits.
    return pbc.floor(pbc.power(pbc.clip(color, 0, 1), 1 / 2.2) * 255 + 0.5)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--size', default='1024x1024', help='WxH or N (default 1024x1024)')
    parser.add_argument('--output', default='spheres.png')
    jit.add_argument(parser)
    parser.add_argument('--save-npy', nargs='?', const='', metavar='PATH',
                        help='also save the image as a float32 (H, W, 3) NumPy array of its '
                             '8-bit values (default path: the PNG\'s, ending in .npy)')
    args = parser.parse_args()
    w, h = (int(s) for s in (args.size.split('x') * 2)[:2])
    jit.use(args.backend)

    pbc.set_flag(pbc.JitFlag.KernelHistory, True)
    pbc.kernel_history_clear()
    t0 = time.perf_counter()
    rgb = render(w, h)
    t1 = time.perf_counter()
    pbc.eval(rgb)
    t2 = time.perf_counter()
    values = np.stack([c.numpy() for c in rgb], axis=-1).reshape(h, w, 3)
    image = values.astype(np.uint8)

    from PIL import Image  # the `samples` extra
    Image.fromarray(image).save(args.output)
    t3 = time.perf_counter()
    if args.save_npy is not None:
        np.save(args.save_npy or os.path.splitext(args.output)[0] + '.npy', values)

    hist = pbc.kernel_history()
    compile_s = sum(k['codegen_time'] + k['backend_time'] for k in hist)
    run_s = sum(k['execution_time'] for k in hist)
    ops = sum(k['ir_ops'] for k in hist)
    where = 'cuda' if args.backend == 'cuda' else f'{pbc.thread_count()} threads'
    print(f'{w}x{h} image -> {args.output} ({len(hist)} kernel(s), {ops} IR ops, {where})')
    print(f'trace   {(t1 - t0) * 1e3:8.2f} ms')
    print(f'compile {compile_s * 1e3:8.2f} ms')
    print(f'run     {run_s * 1e3:8.2f} ms')
    print(f'eval    {(t2 - t1) * 1e3:8.2f} ms (compile + run + one-time '
          f'{args.backend.upper()} setup)')
    print(f'total   {(t3 - t0) * 1e3:8.2f} ms (including PNG encoding)')


if __name__ == '__main__':
    main()
