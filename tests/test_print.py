"""Printing as Dr.Jit 1.5 does it: str()/repr() of every array kind, pbc.format, and
pbc.print (immediate outside symbolic code, captured by the kernel inside it)."""

import dataclasses
import io
import math
import re
import warnings

import numpy as np
import pytest
from suite_backend import (
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

import pbc


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
    assert str(pbc.identity(Matrix3f)) == '[[[1, 0, 0],\n  [0, 1, 0],\n  [0, 0, 1]]]'
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


# ---- pbc.format ----------------------------------------------------------------------------
def test_format_fields():
    x = UInt32(1, 2, 3)
    assert pbc.format('plain') == 'plain'
    assert pbc.format('{} and {}', x, 'text') == '[1, 2, 3] and text'
    assert pbc.format('{1} {0}', 'b', 'a') == 'a b'
    assert pbc.format('{name} {}', 0.25, name=x) == '[1, 2, 3] 0.25'
    assert pbc.format('{x=}, {{literal}}', x=x) == 'x=[1, 2, 3], {literal}'
    assert pbc.format('{} {} {}', 1 / 3, 10**20, True) == '0.333333 100000000000000000000 True'
    # Beyond Dr.Jit: Python's conversions and specs (applied to each element of an array).
    assert pbc.format('{:.2f} {:>4} {!r}', Float(1, 2.5), 'ab', 'q') == "[1.00, 2.50]   ab 'q'"
    assert pbc.format('{:x}', UInt32(255, 16)) == '[ff, 10]'


def test_format_without_format_string():
    assert pbc.format(Float(1, 2)) == '[1, 2]'
    assert pbc.format(pbc.arange(Int, 30), limit=30) == '[' + ', '.join(map(str, range(30))) + ']'
    assert pbc.format(pbc.arange(Int, 30), limit=-1) == pbc.format(pbc.arange(Int, 30), limit=30)
    assert pbc.format(pbc.arange(Int, 30)) == '[0, 1, 2, .. 24 skipped .., 27, 28, 29]'


def test_format_evaluates_in_one_kernel():
    pbc.set_flag(pbc.JitFlag.KernelHistory, True)
    try:
        pbc.kernel_history_clear()
        x = pbc.arange(Float, 5)
        assert pbc.format('{} {}', x * 2, [x + 1]) == '[0, 2, 4, 6, 8] [\n  [1, 2, 3, 4, 5]\n]'
        assert len(pbc.kernel_history()) == 1
    finally:
        pbc.set_flag(pbc.JitFlag.KernelHistory, False)


class Hit:
    DRJIT_STRUCT = {'dist': Float, 'ids': tuple}

    def __init__(self):
        self.dist = Float(0.5, 1)
        self.ids = (UInt32(7), 'name')


@dataclasses.dataclass
class Ray:
    o: Array3f
    t: float


def test_format_nested_containers():
    x = Float(1, 2)
    assert pbc.format('{}', (x,)) == '(\n  [1, 2]\n)'
    assert pbc.format([]) == '[]' and pbc.format(()) == '()' and pbc.format({}) == '{}'
    assert pbc.format({'a': [x, 0.5, 'str'], 'b': (3, None)}) == '\n'.join([
        '{',
        "  'a': [",
        '    [1, 2],',
        '    0.5,',
        "    'str'",
        '  ],',
        "  'b': (",
        '    3,',
        '    None',
        '  )',
        '}'])
    assert pbc.format(Hit()) == '\n'.join([
        'Hit[',
        '  dist=[0.5, 1],',
        '  ids=(',
        '    [7],',
        "    'name'",
        '  )',
        ']'])
    # Matrices and vectors inside containers keep their rows aligned.
    assert pbc.format((Matrix2f(1, 2, 3, 4),)) == '(\n  [[[1, 2],\n    [3, 4]]]\n)'
    assert pbc.format([Array3f(Float(1, 2), 0, 0)]) == '[\n  [[1, 0, 0],\n   [2, 0, 0]]\n]'
    # Dataclasses show as their repr(), as in Dr.Jit.
    assert pbc.format(Ray(Array3f(1, 2, 3), 0.5)) == 'Ray(o=[[1, 2, 3]], t=0.5)'


def test_format_limit_applies_inside_containers():
    big = pbc.arange(UInt32, 25)
    assert pbc.format({'k': big}) == "{\n  'k': [0, 1, 2, .. 19 skipped .., 22, 23, 24]\n}"
    assert pbc.format({'k': big}, limit=25) == \
        "{\n  'k': [" + ', '.join(map(str, range(25))) + ']\n}'


@pytest.mark.parametrize('fmt, args, kwargs, message', [
    ('123{456', (), {}, 'unmatched brace in format string (at position 3)'),
    ('a}b', (), {}, 'single "}" encountered'),
    ('{hello}', (), {}, 'missing keyword argument "hello" referenced by format string '
                        '(at position 0)'),
    ('{}{}', ('a',), {}, 'missing positional argument 1 referenced by format string '
                         '(at position 2)'),
    ('{}{0}', ('a',), {}, 'cannot switch from implicit to explicit field numbering'),
    ('{0}{}', ('a',), {}, 'cannot switch from explicit to implicit field numbering'),
    ('{thread_id}', (), {'thread_id': 1}, "the 'thread_id' keyword argument is reserved"),
])
def test_format_errors(fmt, args, kwargs, message):
    with pytest.raises(RuntimeError, match=r'^pbc\.format\(\): ' + re.escape(message)):
        pbc.format(fmt, *args, **kwargs)


# ---- pbc.print: immediate ------------------------------------------------------------------
def test_print_outside_symbolic_code_is_immediate(capfd):
    x = pbc.arange(UInt32, 1, 4) * 2
    pbc.print('x = {}', x)
    assert capfd.readouterr().out == 'x = [2, 4, 6]\n'       # once, right away
    pbc.eval()
    assert capfd.readouterr().out == ''


def test_print_without_format_string(capfd):
    pbc.print(Float(1, 2.5))
    pbc.print(Array3f(1, 2, 3), end='|')
    pbc.print({'k': 1})
    pbc.print()
    assert capfd.readouterr().out == "[1, 2.5]\n[[1, 2, 3]]|{\n  'k': 1\n}\n\n"


def test_print_plain_python_values(capfd):
    pbc.print('plain {} {!r}', 1, 'two', end='|')
    assert capfd.readouterr().out == "plain 1 'two'|"


def test_print_to_a_file_immediate(capfd):
    f = io.StringIO()
    pbc.print('{} {a}', Float(0.5), a=[1, 'b'], file=f, end='.')
    pbc.print('second', file=f)
    assert f.getvalue() == "[0.5] [\n  1,\n  'b'\n].second\n"
    assert capfd.readouterr().out == ''


def test_print_immediate_masks():
    v = UInt32(1, 2, 3, 1)

    def out(**kw):
        f = io.StringIO()
        pbc.print('{} {w}', v, w=Array3f(pbc.arange(Float, 4), 0, 1), file=f, **kw)
        return f.getvalue()

    assert out(active=True) == '[1, 2, 3, 1] [[0, 0, 1],\n [1, 0, 1],\n [2, 0, 1],\n [3, 0, 1]]\n'
    assert out(active=False) == ''
    assert out(active=v > 100) == ''                 # no active entry: no output at all
    assert out(active=v > 1) == '[2, 3] [[1, 0, 1],\n [2, 0, 1]]\n'
    f = io.StringIO()
    pbc.print('{} {}', v, Float(9), active=v == 1, file=f)       # width 1 broadcasts
    assert f.getvalue() == '[1, 1] [9, 9]\n'


def test_print_in_an_evaluated_loop():
    # Each iteration prints right away, all lanes; an `active` array is also restricted
    # to the lanes still in the loop.
    @pbc.syntax
    def run(i, f, mask=True):
        while pbc.hint(i < 3, mode='evaluated'):
            pbc.print(i, end=';', active=mask, file=f)
            i += 1
        return i

    f = io.StringIO()
    run(UInt32(0, 2, 3), f)
    assert f.getvalue() == '[0, 2, 3];[1, 3, 3];[2, 3, 3];'
    f = io.StringIO()
    i = UInt32(0, 2, 3)
    run(i, f, i > 0)
    assert f.getvalue() == '[2];'


def test_print_format_spec_errors_are_immediate():
    with pytest.raises(ValueError, match="Unknown format code 'd'"):
        pbc.print('{:d}', Float(1.0))


# ---- pbc.print: symbolic -------------------------------------------------------------------
def test_symbolic_print_waits_for_the_kernel(capfd):
    x = pbc.arange(Float, 5) * 1.5
    pbc.print('x[{}] = {:.2f} v={v}', pbc.arange(UInt32, 5), x, v=Array3f(1, 2, 3),
              active=x > 2, mode='symbolic')
    assert capfd.readouterr().out == ''          # nothing until a kernel runs
    pbc.eval()
    assert capfd.readouterr().out == \
        'x[[2, 3, 4]] = [3.00, 4.50, 6.00] v=[[1, 2, 3],\n [1, 2, 3],\n [1, 2, 3]]\n'


def test_symbolic_print_to_a_file():
    f = io.StringIO()
    pbc.print('a={} b={}', UInt32(1, 2, 3), Float(0.5), file=f, end='', mode='symbolic')
    assert f.getvalue() == ''
    pbc.eval()
    assert f.getvalue() == 'a=[1, 2, 3] b=[0.5, 0.5, 0.5]'


def test_symbolic_print_of_every_type():
    f = io.StringIO()
    pbc.print('{} {} {} {} {} {:x} {}', Float64(0.25, -math.inf), Int64(-2**40, 2**62),
              Bool(True, False), Float(math.nan, -0.0),
              UInt64(np.array([2**64 - 1, 0], dtype=np.uint64)),
              UInt32(255, 16), Int(-7, 2**31 - 1), file=f, mode='symbolic')
    pbc.eval()
    assert f.getvalue() == ('[0.25, -inf] [-1099511627776, 4611686018427387904] '
                            '[True, False] [nan, -0] [18446744073709551615, 0] [ff, 10] '
                            '[-7, 2147483647]\n')


def test_print_in_a_symbolic_loop():
    @pbc.syntax
    def count(n: UInt32, f):
        i = UInt32(0)
        while i < n:
            pbc.print('{thread_id=} {i=}', i=i, file=f)     # deferred: the loop is symbolic
            i += 1
        return i

    f = io.StringIO()
    count(UInt32(2, 0, 3), f)
    assert f.getvalue() == ''
    pbc.eval()
    # One line per print statement; each lane's iterations together, lanes in order.
    assert f.getvalue() == 'thread_id=[0, 0, 2, 2, 2] i=[0, 1, 0, 1, 2]\n'


def test_print_in_symbolic_branches(capfd):
    @pbc.syntax
    def f(x: Float):
        if x > 2:
            pbc.print('big {}', x)
        else:
            pbc.print('small {} {v}', x, v=Array3f(x, 0, 1))
        return x

    f(Float(1, 2, 3, 4))
    assert capfd.readouterr().out == ''
    pbc.eval()
    assert capfd.readouterr().out == 'big [3, 4]\nsmall [1, 2] [[1, 0, 1],\n [2, 0, 1]]\n'


def test_print_in_call_targets_and_nested_loops():
    f1, f2 = io.StringIO(), io.StringIO()

    def first(x):
        def body(i):
            pbc.print('tid={thread_id}, x={}', x + i * 10, file=f1)
            return (i + 1,)
        pbc.while_loop((UInt32(0),), lambda i: i < 2, body)
        return x

    def second(x):
        pbc.print('tid={thread_id}, x={}', x, file=f2)
        return x

    y = pbc.switch(UInt32(0, 0, 0, 1, 1, 1), [first, second], UInt32(1, 2, 3, 4, 5, 6))
    pbc.eval(y)
    assert f1.getvalue() == 'tid=[0, 0, 1, 1, 2, 2], x=[1, 11, 2, 12, 3, 13]\n'
    assert f2.getvalue() == 'tid=[3, 4, 5], x=[4, 5, 6]\n'


def test_symbolic_print_limit_warns(capfd):
    pbc.print(pbc.arange(UInt32, 1000) * 2, mode='symbolic', limit=25)
    with pytest.warns(RuntimeWarning, match='only captured 25 of 1000 available outputs'):
        pbc.eval()
    values = [int(v) for v in capfd.readouterr().out.strip()[1:-1].split(',')]
    assert len(values) == 25 and values == sorted(values)
    pbc.print(pbc.arange(UInt32, 30), mode='symbolic', limit=-1)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        pbc.eval()
    assert capfd.readouterr().out == '[' + ', '.join(map(str, range(30))) + ']\n'


def test_symbolic_print_many_lanes_in_order(capfd):
    n = 50_000          # several blocks: lane order is kept
    i = pbc.arange(UInt32, n)
    pbc.print('{}', i, active=i % 10_000 == 0, mode='symbolic')
    pbc.eval()
    assert capfd.readouterr().out == '[0, 10000, 20000, 30000, 40000]\n'


def test_symbolic_print_without_active_lanes_prints_nothing(capfd):
    def body(i):
        pbc.print('never', active=i > 100)
        pbc.print('{}', i, active=False)
        return (i - 1,)

    i, = pbc.while_loop((UInt32(5, 3),), lambda i: i > 0, body)
    pbc.eval(i)
    assert capfd.readouterr().out == ''


def test_symbolic_print_reuses_its_kernel():
    pbc.set_flag(pbc.JitFlag.KernelHistory, True)
    try:
        pbc.kernel_history_clear()
        f = io.StringIO()
        for k in range(3):
            pbc.print('{}', pbc.arange(Float, 4) + pbc.opaque(Float, k), file=f,
                      mode='symbolic')
            pbc.eval()
        assert f.getvalue() == '[0, 1, 2, 3]\n[1, 2, 3, 4]\n[2, 3, 4, 5]\n'
        assert [h['cache_hit'] for h in pbc.kernel_history()][1:] == ['memory', 'memory']
    finally:
        pbc.set_flag(pbc.JitFlag.KernelHistory, False)


def test_symbolic_print_of_a_tensor_shows_its_captured_entries():
    f = io.StringIO()
    pbc.print(TensorXf(np.arange(6, dtype=np.float32).reshape(2, 3)), file=f, mode='symbolic')
    pbc.eval()
    assert f.getvalue() == '[0, 1, 2, 3, 4, 5]\n'


def test_print_errors():
    with pytest.raises(RuntimeError, match=r'incompatible sizes \(2 vs 3\)'):
        pbc.print('{} {}', Float(1, 2), Float(1, 2, 3), mode='symbolic')
    with pytest.raises(RuntimeError, match='missing keyword argument "y"'):
        pbc.print('{y}', Float(1, 2), mode='symbolic')         # checked before the kernel
    with pytest.raises(RuntimeError, match="'mode' must be one of"):
        pbc.print('{}', Float(1), mode='later')
    with pytest.raises(TypeError, match="'active' argument"):
        pbc.print('{}', Float(1), active=1)
    with pytest.raises(RuntimeError, match="'thread_id' keyword argument is reserved"):
        pbc.print('{thread_id}', thread_id=Float(1))
    pbc.eval()
