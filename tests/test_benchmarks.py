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
