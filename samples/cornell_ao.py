"""Ambient occlusion of the Cornell box scene (samples/scenes/cornell), traced through a BVH
inside pbc's kernels: one camera ray per pixel centre, then `num_rays` cosine-weighted
shadow rays per hit, as the scene file defines them (see samples/renderer/ao.py).

    python samples/cornell_ao.py --size 512 --spp 64 --output cornell_ao.png
    python samples/cornell_ao.py --backend cuda --save-npy    # on a GPU, + the floats
"""

import argparse
import os
import time

import numpy as np
from renderer import ao, jit, scene

import pbc


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--scene', default='cornell', help='a directory of samples/scenes')
    parser.add_argument('--size', default=None, help="WxH or N (default: the scene's camera)")
    parser.add_argument('--spp', type=int, default=None,
                        help="shadow rays per pixel (default: the scene's)")
    parser.add_argument('--mode', choices=('symbolic', 'evaluated'), default='symbolic',
                        help='record the loops into the kernel, or run them one kernel per '
                             'iteration')
    parser.add_argument('--output', default='cornell_ao.png')
    jit.add_argument(parser)
    parser.add_argument('--save-npy', nargs='?', const='', metavar='PATH',
                        help='also save the image as a float32 (H, W) NumPy array (default '
                             'path: the PNG\'s, ending in .npy)')
    args = parser.parse_args()
    jit.use(args.backend)               # (before the scene's arrays are made)

    t0 = time.perf_counter()
    sc = scene.load(args.scene)
    integrator = ao.AmbientOcclusion(sc)
    t1 = time.perf_counter()
    w, h = sc.camera.width, sc.camera.height
    if args.size:
        w, h = (int(s) for s in (args.size.split('x') * 2)[:2])
    spp = integrator.num_rays if args.spp is None else args.spp
    times = []
    for _ in range(2):                          # the first run compiles, the second is warm
        t = time.perf_counter()
        image = integrator.render(w, h, spp, mode=args.mode)
        pbc.eval(image)
        pbc.sync_thread()                       # (launches return while the kernel runs)
        times.append(time.perf_counter() - t)
    from PIL import Image  # the `samples` extra
    values = image.numpy().reshape(h, w)
    pixels = (np.clip(values, 0, 1) * 255 + 0.5).astype(np.uint8)
    Image.fromarray(pixels).save(args.output)
    if args.save_npy is not None:
        np.save(args.save_npy or os.path.splitext(args.output)[0] + '.npy', values)
    where = 'cuda' if args.backend == 'cuda' else f'{pbc.thread_count()} threads'
    print(f'{w}x{h} ambient occlusion, {spp} rays per pixel, {len(sc.triangles)} triangles, '
          f'{args.mode} loops -> {args.output} ({where})')
    print(f'scene + BVH {(t1 - t0) * 1e3:8.1f} ms')
    print(f'first       {times[0] * 1e3:8.1f} ms (trace, compile, run)')
    print(f'warm        {times[1] * 1e3:8.1f} ms')


if __name__ == '__main__':
    main()
