"""Smoke tests of the samples: the ambient occlusion renderer at a tiny size, in both loop modes,
against an independent NumPy implementation fed with the reference PCG32's random numbers;
the samples' command lines (PNG and .npy output), and the same images from both backends."""

import gc
import importlib.util
import pathlib
import sys

import numpy as np
import pytest
import suite_backend
from test_pcg32 import references

import pbc

ROOT = pathlib.Path(__file__).resolve().parent.parent
W, H, SPP = 32, 24, 4

sys.path.insert(0, str(ROOT / 'samples'))       # (the samples import the renderer package)
from renderer import jit  # noqa: E402


def load_sample(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / 'samples' / f'{name}.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope='module', autouse=True)
def renderer_backend():
    """The samples build their arrays on the suite's backend (module-wide, set before the
    module's other fixtures render anything)."""
    with jit.using(suite_backend.NAME):
        yield


@pytest.fixture(scope='module')
def ao():
    return load_sample('ambient_occlusion')


@pytest.fixture(scope='module')
def images(ao):
    return {mode: ao.render(W, H, SPP, mode=mode).numpy() for mode in ('symbolic', 'evaluated')}


# ---- the NumPy implementation ------------------------------------------------------------

f32 = np.float32


def unit(v):
    return v / np.sqrt(np.sum(v * v, axis=-1, keepdims=True))


def sphere_t(o, d, center, radius, eps):
    oc = o - np.asarray(center, f32)
    b = np.sum(oc * d, axis=-1)
    disc = b * b - (np.sum(oc * oc, axis=-1) - f32(radius * radius))
    t = -b - np.sqrt(np.maximum(disc, 0))
    return np.where((disc > 0) & (t > eps), t, np.inf).astype(f32)


def plane_t(o, d, normal, offset, eps):
    n = np.asarray(normal, f32)
    with np.errstate(divide='ignore', invalid='ignore'):
        t = (f32(offset) - np.sum(o * n, axis=-1)) / np.sum(d * n, axis=-1)
    return np.where(t > eps, t, np.inf).astype(f32)


def numpy_ao(ao, w, h, spp):
    """Per-pixel ambient occlusion computed with NumPy float32 arrays, the shadow-ray samples
    drawn from the plain-Python PCG32 reference (lane i seeded like PCG32(size=w*h))."""
    eye, target = np.asarray(ao.EYE, f32), np.asarray(ao.TARGET, f32)
    forward = unit(target - eye)
    right = unit(np.cross(forward, np.asarray((0, 1, 0), f32)))
    up = np.cross(right, forward)
    scale = f32(np.tan(np.radians(ao.FOV) / 2))
    xs = np.linspace(-1, 1, w, endpoint=False, dtype=f32) + f32(1 / w)
    ys = np.linspace(1, -1, h, endpoint=False, dtype=f32) - f32(1 / h)
    x, y = (a.reshape(-1) for a in np.meshgrid(xs, ys))
    d = unit(forward + right * (x * scale * f32(w / h))[:, None] + up * (y * scale)[:, None])
    o = np.broadcast_to(eye, d.shape)

    t, normal = np.full(w * h, np.inf, f32), np.tile(np.asarray((0, 1, 0), f32), (w * h, 1))
    for n, c in ao.PLANES:
        ts = plane_t(o, d, n, c, ao.EPS)
        closer = ts < t
        t[closer], normal[closer] = ts[closer], n
    for c, r in ao.SPHERES:
        ts = sphere_t(o, d, c, r, ao.EPS)
        closer = ts < t
        t[closer] = ts[closer]
        normal[closer] = ((o + d * ts[:, None] - np.asarray(c, f32)) / f32(r))[closer]
    hit = np.isfinite(t)
    p = np.where(hit[:, None], o + d * np.where(hit, t, 0)[:, None], 0).astype(f32)
    origin = p + normal * f32(ao.EPS)

    # The local frame around the normal (Duff et al.) and the cosine-weighted samples.
    nx, ny, nz = normal.T
    sign = np.where(np.signbit(nz), f32(-1), f32(1))
    a = f32(-1) / (sign + nz)
    b = nx * ny * a
    s = np.stack([1 + sign * nx * nx * a, sign * b, -sign * nx], axis=-1)
    tt = np.stack([b, sign + ny * ny * a, -ny], axis=-1)
    refs = references(w * h)
    unoccluded = np.zeros(w * h, f32)
    for _ in range(spp):
        u = np.array([[(r.next() >> 9) * 2.0**-23 for r in refs] for _ in range(2)], f32)
        phi = u[0] * f32(2 * np.pi)
        r = np.sqrt(u[1])
        local = np.stack([r * np.cos(phi), r * np.sin(phi), np.sqrt(1 - u[1])], axis=-1)
        direction = s * local[:, :1] + tt * local[:, 1:2] + normal * local[:, 2:]
        blocked = np.zeros(w * h, bool)
        for n, c in ao.PLANES:
            blocked |= plane_t(origin, direction, n, c, 0) < ao.AO_RANGE
        for c, rad in ao.SPHERES:
            blocked |= sphere_t(origin, direction, c, rad, 0) < ao.AO_RANGE
        unoccluded += ~blocked
    return np.where(hit, unoccluded / f32(spp), 1).astype(f32)


# ---- tests -------------------------------------------------------------------------------

def test_modes_agree_and_image_is_plausible(images):
    sym, ev = images['symbolic'], images['evaluated']
    assert sym.shape == (W * H,)
    np.testing.assert_allclose(sym, ev, rtol=0, atol=1e-5)
    assert np.all((sym >= 0) & (sym <= 1))
    # values are multiples of 1/SPP, and the image has shading (occluded and open pixels)
    np.testing.assert_allclose(sym * SPP, np.round(sym * SPP), atol=1e-5)
    assert sym.min() < 0.5 and sym.max() == 1 and np.unique(sym).size >= 3


def test_matches_numpy(ao, images):
    expected = numpy_ao(ao, W, H, SPP)
    diff = np.abs(images['symbolic'] - expected)
    # Rounding differences (pbc's sincos, linspace) may flip a shadow ray grazing a silhouette:
    # a few pixels may differ by one ray, none by more.
    assert diff.max() <= 1 / SPP + 1e-6
    assert np.count_nonzero(diff > 1e-6) <= 0.02 * W * H


def test_main_writes_png(ao, images, tmp_path, monkeypatch, capsys):
    pytest.importorskip('PIL')
    out = tmp_path / 'ao.png'
    monkeypatch.setattr('sys.argv', ['ambient_occlusion.py', '--size', f'{W}x{H}', '--spp',
                                     str(SPP), '--output', str(out), '--backend',
                                     suite_backend.NAME, '--save-npy'])
    # (main() turns the kernel history on, and chooses the renderer's backend)
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, pbc.flag(pbc.JitFlag.KernelHistory)), \
            jit.using(None):
        ao.main()
    from PIL import Image
    assert Image.open(out).size == (W, H)
    assert 'compile' in capsys.readouterr().out
    # The raw image beside the PNG: the floats of render().
    raw = np.load(tmp_path / 'ao.npy')
    assert raw.dtype == np.float32 and raw.shape == (H, W)
    np.testing.assert_array_equal(raw.ravel(), images['symbolic'])


def run_sample(name, backend, tmp_path, monkeypatch, *args):
    """The .npy image that sample `name`'s main() saves with `args`, rendered on `backend`."""
    npy = tmp_path / f'{name}_{backend}.npy'
    monkeypatch.setattr('sys.argv', [f'{name}.py', '--backend', backend, '--output',
                                     str(tmp_path / f'{name}_{backend}.png'), '--save-npy',
                                     str(npy), *args])
    gc.collect()       # (no objects of the other backend's render left for calls to meet)
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, pbc.flag(pbc.JitFlag.KernelHistory)), \
            jit.using(None):
        load_sample(name).main()
    gc.collect()
    return np.load(npy)


@pytest.mark.parametrize('name, args', [
    ('ambient_occlusion', ('--size', '16x12', '--spp', '4')),
    ('spheres', ('--size', '16x12')),
    ('cornell_ao', ('--size', '12x10', '--spp', '4')),
    ('cornell_path', ('--size', '8x6', '--spp', '2', '--max-depth', '3'))])
def test_both_backends_render_the_same_image(name, args, fake_gpu, tmp_path, monkeypatch):
    # The sample on pbc.llvm, then on pbc.cuda in the same process (the stand-in driver's
    # "GPU" runs the CUDA backend's kernels with the LLVM backend: the same numbers, but for
    # rounding where the two backends' traces differ).
    pytest.importorskip('PIL')
    cpu = run_sample(name, 'llvm', tmp_path, monkeypatch, *args)
    gpu = run_sample(name, 'cuda', tmp_path, monkeypatch, *args)
    assert fake_gpu.launches                       # (it ran on the "device")
    assert cpu.shape == gpu.shape and cpu.dtype == gpu.dtype == np.float32
    np.testing.assert_allclose(gpu, cpu, rtol=1e-5, atol=1e-6)
