"""The side-by-side benchmark harness (benchmarks/compare.py): the pbc namespace a
measurement is written against, and the table of figures and ratios it prints."""

import numpy as np

from benchmarks import compare, cpu_model


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

    def run_child(module, *args, env=None):
        calls.append(args[0])
        if args[0] == 'c':
            return {'error': 'no such library'}
        return {'first': next(figures[args[0]]), 'kernels': 1}

    monkeypatch.setattr(benchmarks, 'run_child', run_child)
    best = benchmarks.best_of_rounds({n: ('m', (n,), None) for n in 'abc'}, rounds=3)
    assert calls == ['a', 'b', 'c', 'a', 'b', 'a', 'b']
    assert best == {'a': {'first': 1.0, 'kernels': 1}, 'b': {'first': 4.0, 'kernels': 1},
                    'c': {'error': 'no such library'}}
