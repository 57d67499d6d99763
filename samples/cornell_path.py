"""Path tracing of the Cornell box scene (samples/scenes/cornell): next-event estimation and
BSDF sampling with multiple importance sampling, Russian roulette, materials as pbc.Object
classes called through Ptr arrays; one kernel for the whole image (see
samples/renderer/path.py).

    python samples/cornell_path.py --size 512 --spp 16 --output cornell_path.png
    python samples/cornell_path.py --backend cuda --save-npy   # on a GPU, + the floats
"""

import argparse
import os
import time

import numpy as np
from renderer import jit, path, scene

import pbc


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--scene', default='cornell', help='a directory of samples/scenes')
    parser.add_argument('--size', default=None, help="WxH or N (default: the scene's camera)")
    parser.add_argument('--spp', type=int, default=16, help='paths per pixel (default 16)')
    parser.add_argument('--max-depth', type=int, default=8, help='segments per path, at most')
    parser.add_argument('--mode', choices=('symbolic', 'evaluated'), default='symbolic',
                        help='record the loops into the kernel, or run them one kernel per '
                             'iteration')
    parser.add_argument('--output', default='cornell_path.png')
    jit.add_argument(parser)
    parser.add_argument('--save-npy', nargs='?', const='', metavar='PATH',
                        help='also save the linear radiance as a float32 (H, W, 3) NumPy '
                             'array (default path: the PNG\'s, ending in .npy)')
    args = parser.parse_args()
    jit.use(args.backend)               # (before the scene's arrays are made)

    sc = scene.load(args.scene)
    tracer = path.PathTracer(sc, max_depth=args.max_depth)
    w, h = sc.camera.width, sc.camera.height
    if args.size:
        w, h = (int(s) for s in (args.size.split('x') * 2)[:2])
    times = []
    for _ in range(2):                          # the first run compiles, the second is warm
        t = time.perf_counter()
        image = tracer.render(w, h, args.spp, mode=args.mode)
        pbc.eval(image)
        pbc.sync_thread()                       # (launches return while the kernel runs)
        times.append(time.perf_counter() - t)
    rgb = image.numpy().T.reshape(h, w, 3)
    from PIL import Image  # the `samples` extra
    srgb = np.where(rgb <= 0.0031308, 12.92 * rgb, 1.055 * np.maximum(rgb, 0) ** (1 / 2.4) - 0.055)
    Image.fromarray((np.clip(srgb, 0, 1) * 255 + 0.5).astype(np.uint8)).save(args.output)
    if args.save_npy is not None:
        np.save(args.save_npy or os.path.splitext(args.output)[0] + '.npy', rgb)
    where = 'cuda' if args.backend == 'cuda' else f'{pbc.thread_count()} threads'
    print(f'{w}x{h} path tracing, {args.spp} paths per pixel, at most {args.max_depth} '
          f'segments, {args.mode} loops -> {args.output} ({where})')
    print(f'first {times[0] * 1e3:8.1f} ms (trace, compile, run)')
    print(f'warm  {times[1] * 1e3:8.1f} ms')


if __name__ == '__main__':
    main()
