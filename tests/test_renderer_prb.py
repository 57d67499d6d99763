"""Path Replay Backpropagation in the sample renderer (samples/renderer/prb.py): its
gradients w.r.t. a material's albedo and a texture against reverse mode through the
evaluated path tracer (which keeps every path vertex) and against finite differences of
the primal image, symbolic and evaluated, and the replay as one kernel."""

import pathlib
import sys

import numpy as np
import pytest
import suite_backend
from suite_backend import Array3f

import pbc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / 'samples'))
from renderer import jit, scene  # noqa: E402
from renderer.materials import TexturedDiffuse  # noqa: E402
from renderer.prb import PathReplay  # noqa: E402

MODES = ('symbolic', 'evaluated')
W, H, SPP = 8, 6, 2


@pytest.fixture(scope='module', autouse=True)
def renderer_backend():
    """The renderer builds its arrays on the suite's backend, the one of the tests' arrays
    (module-wide: set before the module-scoped tracer is built)."""
    with jit.using(suite_backend.NAME):
        yield


@pytest.fixture(scope='module')
def setup():
    """A PathReplay of the Cornell box at depth 3 without Russian roulette (its
    probabilities are constants to PRB), the left wall textured (4 x 3 texels), and an
    adjoint image."""
    sc = scene.load('cornell')
    plain = PathReplay(sc, max_depth=3, rr_depth=10)
    bsdfs = list(plain.bsdfs)
    left = [m.name for m in sc.meshes].index('left_wall')
    rng = np.random.default_rng(5)
    bsdfs[left] = TexturedDiffuse(rng.uniform(0.2, 0.8, (3, 4, 3)))
    tracer = PathReplay(sc, max_depth=3, rr_depth=10, geometry=plain.geometry, bsdfs=bsdfs)
    white = bsdfs[[m.name for m in sc.meshes].index('floor')]
    adjoint = Array3f(rng.uniform(-1, 1, (3, W * H)).astype(np.float32))
    return tracer, white, bsdfs[left], adjoint


def _fresh(white, textured):
    """The parameters as new arrays of their values, with derivatives."""
    white.albedo, textured.texture = (Array3f(a.numpy()) for a in (white.albedo,
                                                                  textured.texture))
    pbc.enable_grad(white.albedo, textured.texture)


def _gradients(tracer, white, textured, run):
    _fresh(white, textured)
    run()
    return [pbc.grad(a).numpy() for a in (white.albedo, textured.texture)]


@pytest.mark.parametrize('mode', MODES)
def test_path_replay_matches_reverse_mode_through_the_evaluated_path_tracer(setup, mode):
    tracer, white, textured, adjoint = setup
    images = []
    prb = _gradients(tracer, white, textured, lambda: images.append(
        tracer.render_backward(adjoint, W, H, SPP, mode=mode, seed=3)))
    # (it returns the image of the paths it replayed)
    with pbc.suspend_grad():
        np.testing.assert_array_equal(images[0].numpy(),
                                      tracer.render(W, H, SPP, mode=mode, seed=3).numpy())

    def wavefront():
        image = tracer.render(W, H, SPP, mode='evaluated', seed=3)
        pbc.backward(pbc.sum(pbc.sum(image * adjoint)))
    reference = _gradients(tracer, white, textured, wavefront)
    for got, want in zip(prb, reference):
        assert np.abs(want).max() > 1e-3            # (derivatives that the image has)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_path_replay_matches_finite_differences(setup):
    tracer, white, textured, adjoint = setup
    albedo, texture = white.albedo.numpy().copy(), textured.texture.numpy().copy()
    prb = _gradients(tracer, white, textured,
                     lambda: tracer.render_backward(adjoint, W, H, SPP))

    def loss(albedo, texture):
        white.albedo, textured.texture = Array3f(albedo), Array3f(texture)
        with pbc.suspend_grad():
            image = tracer.render(W, H, SPP)
            return float(np.sum(image.numpy().astype(np.float64) *
                                adjoint.numpy().astype(np.float64)))

    h = 1e-2
    for c in range(3):                                  # each channel of the albedo
        e = np.zeros_like(albedo)
        e[c] = h
        fd = (loss(albedo + e, texture) - loss(albedo - e, texture)) / (2 * h)
        np.testing.assert_allclose(prb[0][c], fd, rtol=2e-3, atol=1e-4)
    for c, texel in [(0, 0), (1, 5), (2, 11)]:          # a few texels
        e = np.zeros_like(texture)
        e[c, texel] = h
        fd = (loss(albedo, texture + e) - loss(albedo, texture - e)) / (2 * h)
        np.testing.assert_allclose(prb[1][c, texel], fd, rtol=2e-3, atol=1e-4)
    white.albedo, textured.texture = Array3f(albedo), Array3f(texture)


def test_path_replay_is_one_kernel(setup):
    tracer, white, textured, adjoint = setup
    _fresh(white, textured)
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
        pbc.kernel_history_clear()
        tracer.render_backward(adjoint, W, H, SPP, mode='symbolic')
        pbc.eval(pbc.grad(white.albedo), pbc.grad(textured.texture))
        kernels = pbc.kernel_history()
    # The primal paths, their replay, the BSDFs' derivative calls and the scatter-adds into
    # the gradients in one kernel of the image's width (the others, of the parameters'
    # widths, sum the gradients' per-thread copies).
    assert [k['size'] for k in kernels if k['size'] == W * H] == [W * H]
    assert all(k['size'] in (W * H, 1, 12) for k in kernels)
    # Without parameters that carry derivatives, there is nothing to propagate.
    for mode in MODES:
        with pbc.suspend_grad():
            plain = tracer.render(W, H, SPP, mode=mode).numpy()
        white.albedo, textured.texture = (Array3f(a.numpy()) for a in (white.albedo,
                                                                      textured.texture))
        np.testing.assert_array_equal(
            tracer.render_backward(adjoint, W, H, SPP, mode=mode).numpy(), plain)
    with pytest.raises(ValueError, match='adjoint image has 5 pixels'):
        tracer.render_backward(Array3f(np.ones((3, 5), np.float32)), W, H, SPP)


def test_inverse_rendering_lowers_the_loss_without_recompiling():
    import inverse_rendering
    r = inverse_rendering.optimize(size=16, spp=4, steps=8, view_spp=4)
    losses, compiled = r['losses'], r['compiled']
    assert losses[-1] < losses[0] / 4, losses
    assert compiled[0] > 0 and not any(compiled[1:]), compiled
    hidden, initial, recovered = r['textures']
    assert np.abs(recovered - hidden).mean() < np.abs(initial - hidden).mean()
    assert r['final'].shape == (16, 16, 3) and (recovered >= 0).all() and (recovered <= 1).all()


def test_inverse_rendering_sample_writes_its_images(tmp_path, monkeypatch, capsys):
    for name in ('tqdm', 'matplotlib', 'PIL'):          # (the `samples` extra)
        pytest.importorskip(name)
    import inverse_rendering
    monkeypatch.setattr(sys, 'argv', ['inverse_rendering.py', '--size', '12', '--spp', '2',
                                      '--steps', '3', '--view-spp', '2',
                                      '--output-dir', str(tmp_path), '--backend',
                                      suite_backend.NAME, '--save-npy'])
    with jit.using(None):                   # (main() chooses the renderer's backend)
        inverse_rendering.main()
    for name in ('target', 'initial', 'final', 'textures', 'loss'):
        assert (tmp_path / f'{name}.png').stat().st_size > 0
    assert 'x lower' in capsys.readouterr().out
    for name in ('target', 'initial', 'final'):
        assert np.load(tmp_path / f'{name}.npy').shape == (12, 12, 3)
    assert np.load(tmp_path / 'textures.npy').shape == (3, 8, 8, 3)
    assert np.load(tmp_path / 'loss.npy').shape == (3,)
