"""The side-by-side benchmark harness (benchmarks/compare.py): the pbc namespace a
measurement is written against, and the table of figures and ratios it prints; the GPU
suite (benchmarks/gpu.py), run through the stand-in driver."""

import json
import os
import subprocess
import sys

import numpy as np

from benchmarks import ROOT, compare, cpu_model


def test_a_measurement_written_once_runs_on_pbcs_namespace():
    lib = compare.Pbc()
    x = lib.Float(np.arange(4, dtype=np.float32))
    n = lib.count_kernels(lambda: lib.eval(lib.exp(x) + lib.arange(lib.UInt32, 4)))
    assert n == 1
    assert isinstance(cpu_model(), str) and cpu_model()


def test_rows_print_both_figures_and_their_ratio(capsys):
    compare.print_rows({'pbc': {'t': 0.002}, 'drjit 1.5': {'t': 0.004}},
                       [('t', 'a time', 'ms', 1e3)])
    line = capsys.readouterr().out.splitlines()[-1]
    assert line.split()[-3:] == ['2.0', '4.0', '0.50']
    compare.print_rows({'pbc': {'t': 0.002}, 'drjit 1.5': {'error': 'No module drjit'}},
                       [('t', 'a time', 'ms', 1e3)])
    out = capsys.readouterr().out
    assert 'not available' in out and out.splitlines()[-1].split()[-3:] == ['2.0', '-', '-']


def test_rounds_alternate_and_keep_the_best_times(monkeypatch):
    import benchmarks
    calls, figures = [], {'a': iter([3.0, 1.0, 2.0]), 'b': iter([5.0, 6.0, 4.0])}

    def run_child(module, *args, env=None, timeout=None):
        calls.append(args[0])
        if args[0] == 'c':
            return {'error': 'no such library'}
        return {'first': next(figures[args[0]]), 'kernels': 1}

    monkeypatch.setattr(benchmarks, 'run_child', run_child)
    best = benchmarks.best_of_rounds({n: ('m', (n,), None) for n in 'abc'}, rounds=3)
    assert calls == ['a', 'b', 'c', 'b', 'a', 'a', 'b']      # every other round reversed
    assert best == {'a': {'first': 1.0, 'kernels': 1}, 'b': {'first': 4.0, 'kernels': 1},
                    'c': {'error': 'no such library'}}


def test_dispatch_children_compute_what_numpy_does(monkeypatch):
    # (in this process, on few lanes: the children of `python -m benchmarks dispatch`)
    import pbc
    from benchmarks import dispatch
    monkeypatch.setattr(dispatch, 'N', 3000)
    monkeypatch.setattr(dispatch, 'WARM_REPEAT', 1)
    _, expected = dispatch.numpy_dispatch('sinexp', 4)
    figures = {}
    for lib in ('pbc', 'unmerged'):
        with pbc.scoped_set_flag(pbc.JitFlag.MergeFunctions, True):
            figures[lib] = dispatch.child('symbolic', 'sinexp', 4, lib)
        assert abs(figures[lib]['checksum'] - expected) <= 1e-3 * max(1.0, abs(expected))
        assert figures[lib]['kernels'] == 1
    # (the unmerged targets' constants stay in their own code: a subroutine each)
    assert figures['pbc']['ir_ops'] < figures['unmerged']['ir_ops']
    assert pbc.flag(pbc.JitFlag.MergeFunctions)


def _prb_toy_gradients(kind, lanes):
    """NumPy's gradients of the PRB toy's tables (benchmarks/ad.py): each lane's product L
    of its STEPS values (a texel, times its material's scale in the method toy),
    differentiated w.r.t. the texels it read (float64)."""
    from benchmarks import ad
    rng = np.random.default_rng(3)
    count = ad.PRB_MATERIALS if kind == 'method' else 1
    tables = [rng.uniform(0.9, 1.1, ad.PRB_TEXELS).astype(np.float32).astype(np.float64)
              for _ in range(count)]
    scales = [np.float64(np.float32(0.95 + 0.05 * k)) if kind == 'method' else 1.0
              for k in range(count)]
    lane = np.arange(lanes, dtype=np.int64)
    material = (lane * 40503) % 2**32 % count
    steps = [(lane * 2654435761 + i * 40503) % 2**32 % ad.PRB_TEXELS
             for i in range(ad.PRB_STEPS)]
    values = [np.choose(material, [t[k] * s for t, s in zip(tables, scales)]) for k in steps]
    L = np.prod(values, axis=0)
    grads = [np.zeros(ad.PRB_TEXELS) for _ in range(count)]
    for k, v in zip(steps, values):
        for j in range(count):
            sel = material == j
            np.add.at(grads[j], k[sel], (L / v * scales[j])[sel])
    return grads


def test_the_prb_toy_computes_numpys_gradients_both_ways(monkeypatch):
    # (in this process, on few lanes: the children of `python -m benchmarks ad`)
    from benchmarks import ad
    monkeypatch.setattr(ad, 'PRB_LANES', 5000)
    for kind in ('method', 'texture'):
        expected = _prb_toy_gradients(kind, ad.PRB_LANES)
        kernels = {}
        for variant in ('megakernel', 'wavefront'):
            figures, gradients = ad.prb_child('pbc', variant, kind)
            kernels[variant] = figures['kernels']
            for g, e in zip(gradients, expected, strict=True):
                np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4 * np.abs(e).max())
        assert kernels['megakernel'] <= 2 < kernels['wavefront']


def test_the_gpu_suite_measures_every_figure_on_the_stand_in(tmp_path):
    # (`python -m benchmarks gpu --quick`, as a GPU machine runs it, on the stand-in GPU of
    # tests/standin_site; Dr.Jit is not installed here, or finds no GPU: a note says so)
    from benchmarks import gpu
    out = tmp_path / 'gpu.json'
    site = os.path.join(ROOT, 'tests', 'standin_site')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [site, ROOT, os.environ.get('PYTHONPATH')])))
    res = subprocess.run([sys.executable, '-m', 'benchmarks', 'gpu', '--quick', '--json',
                          str(out)], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    report = json.loads(out.read_text())
    assert report['header']['gpu'] == 'stand-in device'
    assert set(report['figures']) == set(gpu.ROWS)
    for figure, rows in gpu.ROWS.items():
        p, d = (report['figures'][figure][lib] for lib in ('pbc.cuda', 'drjit.cuda'))
        assert 'error' not in p and p['ok'] is True, (figure, p)
        assert all(p[key] > 0 for key, *_ in rows), (figure, p)
        assert p['first'] >= p['compile']
        if 'error' in d:
            assert d['available'] is False and d['error'].startswith('not available: ')
        else:
            assert figure != 'ao' and d['ok'] is True
        assert gpu.titles(report['sizes'])[figure] in res.stdout


def test_options_go_to_the_suites_that_take_them(capsys):
    from benchmarks.__main__ import main
    assert main(['core', '--quick']) == 2
    assert 'take(s) no options' in capsys.readouterr().out
    assert main(['nosuch']) == 2
