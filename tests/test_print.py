"""pbc.print: output happens when the kernel runs, per active lane, in lane order."""

import pytest

import pbc
from pbc.llvm import Array3f, Bool, Float, Float64, Int64, UInt32


def test_device_print_runs_with_the_kernel(capfd):
    x = pbc.arange(Float, 5) * 1.5
    pbc.print('x[{}] = {:.2f} v={v}', pbc.arange(UInt32, 5), x, v=Array3f(1, 2, 3),
              active=x > 2)
    assert capfd.readouterr().out == ''          # nothing until a kernel runs
    pbc.eval()
    assert capfd.readouterr().out.splitlines() == [
        'x[2] = 3.00 v=[1, 2, 3]', 'x[3] = 4.50 v=[1, 2, 3]', 'x[4] = 6.00 v=[1, 2, 3]']


def test_print_types_and_specs(capfd):
    pbc.print('{} {} {} {:x} 100%', Float64(0.25), Int64(-2**40), Bool(True), UInt32(255))
    pbc.eval()
    assert capfd.readouterr().out == '0.25 -1099511627776 1 ff 100%\n'


def test_print_without_jit_values_is_immediate(capfd):
    pbc.print('plain {} {!r}', 1, 'two', end='|')
    assert capfd.readouterr().out == "plain 1 'two'|"


def test_print_many_lanes_in_order(capfd):
    n = 50_000          # several blocks: lane order is kept
    pbc.print('{}', pbc.arange(UInt32, n), active=pbc.arange(UInt32, n) % 10_000 == 0)
    pbc.eval()
    assert capfd.readouterr().out.split() == ['0', '10000', '20000', '30000', '40000']


def test_print_errors():
    with pytest.raises(ValueError, match='does not apply'):
        pbc.print('{:d}', Float(1.0))
    with pytest.raises(ValueError, match='incompatible sizes'):
        pbc.print('{} {}', Float(1, 2), Float(1, 2, 3))
