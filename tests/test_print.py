"""Printing as Dr.Jit 1.5 does it: str()/repr() of every array kind, pbc.format, and
pbc.print (immediate outside symbolic code, captured by the kernel inside it)."""

import math

import numpy as np
import pytest

import pbc
from pbc.llvm import (
    Array2u,
    Array3b,
    Array3f,
    Array3i,
    Bool,
    Float,
    Float64,
    Int,
    Int64,
    Matrix2f,
    Matrix3f,
    Matrix4f,
    TensorXb,
    TensorXf,
    TensorXi,
    UInt32,
    UInt64,
)


# ---- str() and repr() ----------------------------------------------------------------------
def test_flat_arrays_of_every_type():
    assert str(Bool(True, False)) == '[True, False]'
    assert str(Int(-5, 3, -2**31)) == '[-5, 3, -2147483648]'
    assert str(UInt32(0, 2**32 - 1)) == '[0, 4294967295]'
    assert str(Int64(-2**62, 7)) == '[-4611686018427387904, 7]'
    assert str(UInt64(2**64 - 1)) == '[18446744073709551615]'
    # Floats print like C's %g: six significant digits, exponents past that.
    assert str(Float(1, 2.5, -3, 0.1, 1e-5, 123456789)) == \
        '[1, 2.5, -3, 0.1, 1e-05, 1.23457e+08]'
    assert str(Float64(1 / 3, 1e300, 2**53)) == '[0.333333, 1e+300, 9.0072e+15]'
    assert str(Float(math.inf, -math.inf, -0.0, 0.0)) == '[inf, -inf, -0, 0]'
    # NaN shows its sign as printf does; 0/0 on x86 is the negative default NaN.
    assert str(Float(math.nan)) == '[nan]'
    assert str(Float(-math.nan)) == '[-nan]'
    zero = pbc.opaque(Float, 0, 2)
    assert str(zero / zero) in ('[-nan, -nan]', '[nan, nan]')


def test_repr_is_str_and_evaluates():
    x = pbc.arange(Float, 4) * 0.5
    assert repr(x) == str(x) == '[0, 0.5, 1, 1.5]'
    v = Array3f(x, 1, -x)
    assert repr(v) == str(v)


def test_empty_arrays():
    assert str(Float()) == '[]'
    assert str(Bool()) == '[]'
    assert str(Array3f()) == '[]'
    assert str(TensorXf()) == '[]'


def test_long_flat_arrays_keep_three_entries_per_end():
    assert str(pbc.arange(UInt32, 20)) == '[' + ', '.join(map(str, range(20))) + ']'
    assert str(pbc.arange(UInt32, 21)) == '[0, 1, 2, .. 15 skipped .., 18, 19, 20]'
    assert str(pbc.arange(UInt32, 1000)) == '[0, 1, 2, .. 994 skipped .., 997, 998, 999]'
    assert str(pbc.linspace(Float, -1, 1, 1024 * 1024)) == \
        '[-1, -0.999998, -0.999996, .. 1048570 skipped .., 0.999996, 0.999998, 1]'


def test_static_vectors_print_one_entry_per_lane():
    assert str(Array3f(1, 2, 3)) == '[[1, 2, 3]]'
    # Components of width 1 broadcast over the others' lanes.
    assert str(Array3f(Float(1, 2), 3, Float(4, 5))) == '[[1, 3, 4],\n [2, 3, 5]]'
    assert str(Array3b(True, False, Bool(True, False))) == \
        '[[True, False, True],\n [True, False, False]]'
    assert str(Array2u(pbc.arange(UInt32, 100), 0)) == \
        '[[0, 0],\n [1, 0],\n [2, 0],\n .. 94 skipped ..,\n [97, 0],\n [98, 0],\n [99, 0]]'


def test_ragged_vector():
    # Components of different widths (other than 1) have no lanes in common.
    assert str(Array3i(Int(1, 5, 6), Int(2, 3), 4)) == '[ragged array]'
    assert str(Array3i(4, Int(2, 3), 4)) == '[[4, 2, 4],\n [4, 3, 4]]'


def test_matrices():
    assert str(Matrix2f(1, 2, 3, 4)) == '[[[1, 2],\n  [3, 4]]]'
    assert str(Matrix3f()) == '[[[1, 0, 0],\n  [0, 1, 0],\n  [0, 0, 1]]]'
    m = Matrix4f(*range(16))
    assert str(m) == ('[[[0, 1, 2, 3],\n  [4, 5, 6, 7],\n  [8, 9, 10, 11],\n'
                      '  [12, 13, 14, 15]]]')
    # Two lanes: one matrix per lane.
    assert str(Matrix2f(1, 2, 3, Float(4, -1))) == \
        '[[[1, 2],\n  [3, 4]],\n [[1, 2],\n  [3, -1]]]'


def test_tensors():
    assert str(TensorXf(Float(2.5), ())) == '2.5'
    assert str(TensorXi(np.array(7, dtype=np.int32))) == '7'
    assert str(TensorXf(np.arange(5, dtype=np.float32))) == '[0, 1, 2, 3, 4]'
    assert str(TensorXi(np.arange(6, dtype=np.int32).reshape(2, 3))) == \
        '[[0, 1, 2],\n [3, 4, 5]]'
    assert str(TensorXf(np.arange(8, dtype=np.float32).reshape(2, 2, 2))) == \
        '[[[0, 1],\n  [2, 3]],\n [[4, 5],\n  [6, 7]]]'
    assert str(TensorXb(np.array([[True, False]]))) == '[[True, False]]'
    assert str(TensorXf(np.zeros((2, 0), dtype=np.float32))) == '[[],\n []]'
    assert str(TensorXf(np.zeros((0, 3), dtype=np.float32))) == '[]'


def test_long_tensors_are_abbreviated_in_every_dimension():
    assert str(TensorXf(np.arange(30, dtype=np.float32))) == \
        '[0, 1, 2, .. 24 skipped .., 27, 28, 29]'
    t = TensorXi(np.arange(10000, dtype=np.int32).reshape(100, 100))
    assert str(t) == ('[[0, 1, 2, .. 94 skipped .., 97, 98, 99],\n'
                      ' [100, 101, 102, .. 94 skipped .., 197, 198, 199],\n'
                      ' [200, 201, 202, .. 94 skipped .., 297, 298, 299],\n'
                      ' .. 94 skipped ..,\n'
                      ' [9700, 9701, 9702, .. 94 skipped .., 9797, 9798, 9799],\n'
                      ' [9800, 9801, 9802, .. 94 skipped .., 9897, 9898, 9899],\n'
                      ' [9900, 9901, 9902, .. 94 skipped .., 9997, 9998, 9999]]')


# ---- pbc.print ------------------------------------------------------------------------------
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
