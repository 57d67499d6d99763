"""Inverse rendering: recovers the albedo texture of the Cornell box's left wall from an
image of the box, starting from grey, by gradient descent (pbc.opt.Adam) on the mean
square difference between path-traced images and that image. The gradients come from
Path Replay Backpropagation (samples/renderer/prb.py): each step is a render and a
replay, each one kernel, which every step after the first reuses.

The image to match is rendered with the same random numbers as every step (common random
numbers): the loss is then a deterministic function of the texture, zero at the hidden one,
and falls by orders of magnitude, where at a few paths per pixel the Monte Carlo noise of
independent images would hide the texture's share of the difference (about 1/20 of it in
the whole image at 16 paths per pixel). With --fresh-noise every step draws other random
numbers instead (as for a photograph), and the texture's error shows the progress.

    python samples/inverse_rendering.py --size 128 --spp 4 --steps 60 --output-dir out
    python samples/inverse_rendering.py --backend cuda --save-npy --output-dir out  # GPU

Writes target.png (the image to match, rendered with the hidden texture), initial.png
and final.png (renders with the grey and the recovered textures, as many paths per pixel
as the target), textures.png (the hidden, initial and recovered textures) and loss.png
(the loss per step); with --save-npy also the raw values beside them: target.npy,
initial.npy and final.npy (linear radiance, (H, W, 3)), textures.npy (3, 8, 8, 3) and
loss.npy.
"""

import argparse
import os
import time

import numpy as np
from renderer import jit, prb, scene
from renderer.materials import TexturedDiffuse

import pbc

TEXELS = 8                         # the texture: TEXELS x TEXELS RGB texels


def hidden_texture(n=TEXELS):
    """The texture to recover: horizontal bands of three colours with a diagonal stripe."""
    y, x = np.mgrid[0:n, 0:n]
    colours = np.array([[0.9, 0.1, 0.05], [0.05, 0.75, 0.1], [0.1, 0.2, 0.95]])
    tex = colours[(y * 3) // n].copy()
    tex[(x + y) % n < 2] = [0.95, 0.9, 0.2]
    return tex.astype(np.float32)


def optimize(size=128, spp=4, steps=60, view_spp=256, lr=0.05, max_depth=4,
             fresh_noise=False, progress=None, backend=None):
    """Runs the optimization; returns a dict: renders with the hidden, initial and
    recovered textures at view_spp paths per pixel ('target', 'initial', 'final': NumPy,
    (h, w, 3)), the textures (hidden, initial, recovered), the loss per step, the kernels
    compiled per step, and the seconds per step after the first. backend: 'llvm' or
    'cuda' (None: renderer.jit's current one)."""
    with jit.using(backend):
        return _optimize(size, spp, steps, view_spp, lr, max_depth, fresh_noise, progress)


def _optimize(size, spp, steps, view_spp, lr, max_depth, fresh_noise, progress):
    sc = scene.load('cornell')
    plain = prb.PathReplay(sc, max_depth=max_depth)
    bsdfs = list(plain.bsdfs)
    left = [m.name for m in sc.meshes].index('left_wall')
    wall = bsdfs[left] = TexturedDiffuse(hidden_texture())
    tracer = prb.PathReplay(sc, max_depth=max_depth, geometry=plain.geometry, bsdfs=bsdfs)
    w = h = size

    def render(spp, seed):
        with pbc.suspend_grad():
            image = tracer.render(w, h, spp, seed=seed)
            pbc.eval(image)
            return image

    def picture(image):
        return image.numpy().T.reshape(h, w, 3)

    hidden = wall.texture.numpy().T.reshape(TEXELS, TEXELS, 3)
    target = render(spp, seed=0)
    views = [picture(render(view_spp, seed=1 << 20))]
    wall.texture = jit.Array3f(np.full((3, TEXELS * TEXELS), 0.5, np.float32))
    initial_texture = wall.texture.numpy().T.reshape(TEXELS, TEXELS, 3)
    views.append(picture(render(view_spp, seed=1 << 20)))
    opt = pbc.opt.Adam(lr=lr, params={'texture': wall.texture})
    losses, compiled, times = [], [], []
    scale = 2.0 / (3 * w * h)
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
        for step in range(steps):
            t0 = time.perf_counter()
            pbc.kernel_history_clear()
            wall.texture = opt['texture']
            seed = step + 1 if fresh_noise else 0
            diff = render(spp, seed) - target
            losses.append(float(pbc.sum(pbc.sum(diff * diff)).numpy()[0]) / (3 * w * h))
            tracer.render_backward(diff * scale, w, h, spp, seed=seed)
            opt.step()
            opt['texture'] = pbc.clip(opt['texture'], 0.0, 1.0)
            pbc.eval(opt['texture'])
            pbc.sync_thread()
            compiled.append(sum(k['cache_hit'] != 'memory' for k in pbc.kernel_history()))
            times.append(time.perf_counter() - t0)
            if progress is not None:
                progress(losses[-1])
    wall.texture = opt['texture']
    recovered = wall.texture.numpy().T.reshape(TEXELS, TEXELS, 3)
    return dict(target=views[0], initial=views[1],
                final=picture(render(view_spp, seed=1 << 20)),
                textures=(hidden, initial_texture, recovered), losses=losses,
                compiled=compiled, step_time=float(np.mean(times[1:])) if steps > 1 else None)


def save_png(path, rgb):
    from PIL import Image  # the `samples` extra
    srgb = np.where(rgb <= 0.0031308, 12.92 * rgb, 1.055 * np.maximum(rgb, 0) ** (1 / 2.4) - 0.055)
    Image.fromarray((np.clip(srgb, 0, 1) * 255 + 0.5).astype(np.uint8)).save(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--size', type=int, default=128, help='image width and height')
    parser.add_argument('--spp', type=int, default=4, help='paths per pixel per step')
    parser.add_argument('--steps', type=int, default=60)
    parser.add_argument('--view-spp', type=int, default=256,
                        help='paths per pixel of the PNGs (default 256)')
    parser.add_argument('--lr', type=float, default=0.05, help="Adam's learning rate")
    parser.add_argument('--fresh-noise', action='store_true',
                        help='other random numbers at every step than in the target')
    parser.add_argument('--output-dir', default='.')
    jit.add_argument(parser)
    parser.add_argument('--save-npy', action='store_true',
                        help='also save the raw images, textures and losses as .npy files '
                             'beside the PNGs')
    args = parser.parse_args()
    jit.use(args.backend)

    from tqdm import tqdm  # the `samples` extra
    os.makedirs(args.output_dir, exist_ok=True)
    with tqdm(total=args.steps, unit='step') as bar:
        def progress(loss):
            bar.set_postfix(loss=f'{loss:.3g}')
            bar.update()
        r = optimize(args.size, args.spp, args.steps, args.view_spp, args.lr,
                     fresh_noise=args.fresh_noise, progress=progress)

    for name in ('target', 'initial', 'final'):
        save_png(os.path.join(args.output_dir, f'{name}.png'), r[name])
    if args.save_npy:
        for name, values in (('target', r['target']), ('initial', r['initial']),
                             ('final', r['final']), ('textures', np.stack(r['textures'])),
                             ('loss', np.array(r['losses'], np.float64))):
            np.save(os.path.join(args.output_dir, f'{name}.npy'), values)
    strip = np.concatenate([np.pad(t, ((1, 1), (1, 1), (0, 0)), constant_values=1.0)
                            for t in r['textures']], axis=1)
    save_png(os.path.join(args.output_dir, 'textures.png'), np.kron(strip, np.ones((16, 16, 1))))
    import matplotlib  # the `samples` extra
    matplotlib.use('Agg')
    from matplotlib import pyplot as plt
    losses = r['losses']
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.semilogy(losses)
    ax.set_xlabel('step')
    ax.set_ylabel('mean square difference to the target')
    ax.set_title(f'{args.size}x{args.size}, {args.spp} paths per pixel per step')
    fig.tight_layout()
    fig.savefig(os.path.join(args.output_dir, 'loss.png'), dpi=100)

    hidden, initial, recovered = r['textures']
    print(f'loss {losses[0]:.4g} -> {losses[-1]:.4g} ({losses[0] / losses[-1]:.0f}x lower)')
    print(f'texture RMSE {np.sqrt(np.mean((initial - hidden) ** 2)):.4f} -> '
          f'{np.sqrt(np.mean((recovered - hidden) ** 2)):.4f}')
    where = 'cuda' if args.backend == 'cuda' else f'{pbc.thread_count()} threads'
    timing = ('one step' if r['step_time'] is None else
              f'{r["step_time"] * 1e3:.0f} ms per step after the first')
    print(f'kernels compiled per step: {r["compiled"][:3]} ... {r["compiled"][-3:]}; '
          f'{timing} ({where}); images in {args.output_dir}')


if __name__ == '__main__':
    main()
