"""Dr.Jit 1.x behaviours that code ported to pbc relies on: in-place operators, Python values
as operands and arguments, mask operands, reductions with axes, and the cases that once gave
silently wrong results (each has a regression test here)."""

import numpy as np
import pytest
import suite_backend
from hypothesis import given, settings
from hypothesis import strategies as st
from suite_backend import (
    Array2f,
    Array3b,
    Array3f,
    Array3i,
    Bool,
    Float,
    Float64,
    Int,
    Int64,
    Matrix2f,
    TensorXf,
    UInt32,
)

import pbc


# ---- silently wrong results of the past ------------------------------------------------------
def test_width_one_counter_is_a_value_not_the_lane_index():
    assert (pbc.arange(UInt32, 1) + UInt32([5, 6, 7])).numpy().tolist() == [5, 6, 7]
    assert (pbc.linspace(Float, 2, 3, 1) + Float(0, 1, 2)).numpy().tolist() == [2, 3, 4]
    assert (pbc.arange(UInt32, 0) + 1).numpy().tolist() == []


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([UInt32, Int, Float, Float64]), st.integers(1, 40),
       st.lists(st.integers(-50, 50), min_size=1, max_size=40))
def test_sequences_are_operands(T, n, values):
    values = (values * n)[:n]
    x = pbc.arange(T, n) + 3
    ref = np.arange(n) + 3
    data = np.asarray(values)
    if T is UInt32:
        data = np.abs(data)
    for op in ('__add__', '__sub__', '__mul__', '__eq__', '__lt__', '__radd__'):
        got = getattr(x, op)(list(data.tolist()))
        want = getattr(ref.astype(np.dtype(T.Type)), op)(data.astype(np.dtype(T.Type)))
        np.testing.assert_array_equal(np.asarray(got.numpy(), want.dtype), want)
    assert pbc.all(x == tuple(ref.tolist()))[0]
    assert pbc.all(x == np.asarray(ref))[0]


def test_python_sequences_as_operands_everywhere():
    assert pbc.all(UInt32(1, 2) == [1, 2])[0] and not pbc.all(UInt32(1, 2) == [1, 3])[0]
    assert pbc.all(Array3f(1, 2, 3) + (1, 2, 3) == Array3f(2, 4, 6), axis=None)[0]
    assert pbc.all([1, 2, 3] + Array3f(1, 2, 3) == Array3f(2, 4, 6), axis=None)[0]
    t = pbc.zeros(Float, 3)
    pbc.scatter(t, 1.0, [0, 2])
    assert t.numpy().tolist() == [1, 0, 1]
    assert pbc.gather(Float, Float(5, 6, 7), [2, 0]).numpy().tolist() == [7, 5]
    assert pbc.select(Bool(True, False), [1, 2], [3, 4]).numpy().tolist() == [1, 4]
    with pytest.raises(ValueError, match='length 2'):
        Array3f(1, 2, 3) + (1, 2)


def test_tensor_and_matrix_equality_compares_elements():
    a = TensorXf(np.array([[1, 2], [3, 4]], np.float32))
    b = TensorXf(np.array([[1, 0], [3, 4]], np.float32))
    assert (a == b).numpy().tolist() == [[True, False], [True, True]]
    assert not pbc.all(a == b, axis=None).item() and pbc.all(a == a, axis=None).item()
    assert (a != b).numpy().tolist() == [[False, True], [False, False]]
    m, n = Matrix2f(1, 2, 3, 4), Matrix2f(1, 2, 3, 5)
    assert pbc.all(m == m, axis=None)[0] and not pbc.all(m == n, axis=None)[0]
    assert (m != n).numpy()[:, :, 0].tolist() == [[False, False], [False, True]]


def test_in_place_operators_change_the_object():
    x = Float(1, 2)
    y = x
    x += 1
    assert x is y and y.numpy().tolist() == [2, 3]
    for op, arg, ref in (('__isub__', 1, [1, 2]), ('__imul__', 2, [2, 4]),
                         ('__itruediv__', 2, [1, 2]), ('__ipow__', 2, [1, 4])):
        r = getattr(x, op)(arg)
        assert r is x and x.numpy().tolist() == ref
    i = UInt32(5, 6)
    j = i
    i //= 2
    i <<= 1
    i |= 1
    assert j.numpy().tolist() == [5, 7]
    k = UInt32(1)
    k2 = k
    k += 0.5                        # another result type: the name is rebound
    assert type(k) is Float and k2.numpy().tolist() == [1]
    v = Array3f(1, 2, 3)
    vx = v.x
    v += 1
    assert vx.numpy().tolist() == [2]            # components change in place too
    v.y += 5
    assert v.numpy()[:, 0].tolist() == [2, 8, 4]


def test_in_place_operators_in_loops_reach_the_caller():
    @pbc.syntax
    def f(x):
        while x < 10:
            x += 1
        return x

    x = UInt32(1, 12)
    y = f(x)
    assert y is x and x.numpy().tolist() == [10, 12]

    @pbc.syntax
    def g(x):
        while x < 10:
            x = x + 1               # rebinding: the caller's array stays as it was
        return x

    x = UInt32(1, 12)
    assert g(x).numpy().tolist() == [10, 12] and x.numpy().tolist() == [1, 12]


def test_reductions_and_math_on_python_values():
    assert pbc.sum([1.0, 2.0, 3.0]) == 6.0 and type(pbc.sum([1.0, 2.0])) is float
    assert pbc.max([1, 5, 2]) == 5 and pbc.min((4, 1.5)) == 1.5 and pbc.prod([2, 3]) == 6
    assert pbc.sum(6.0) == 6.0 and pbc.all(True) and not pbc.any([False, False])
    assert pbc.all(()) is True and pbc.any(()) is False and pbc.none([False])
    assert pbc.minimum(1.0, 2.0) == 1.0 and pbc.rsqrt(4.0) == 0.5 and pbc.sqrt(2.0) == 2 ** 0.5
    assert pbc.count(Array3b(True, False, True))[0] == 2 and pbc.count([True, True]) == 2
    assert pbc.abs(-3) == 3 and pbc.popcnt(7) == 3 and pbc.fma(2, 3, 4) == 10
    assert pbc.sqrt([1.0, 4.0]) == [1.0, 2.0] and pbc.isnan(float('nan'))
    assert pbc.atan2(1, -1) == pytest.approx(3 * np.pi / 4, rel=1e-15)
    with pytest.raises(RuntimeError) as e:
        pbc.all((True, 'hello'))
    assert isinstance(e.value.__cause__, TypeError)


def test_reduction_axes_follow_dr_jit():
    v = Array3f([1, 2, 3], [2, 3, 4], [3, 4, 5])
    assert pbc.sum(v).numpy().tolist() == [6, 9, 12] and type(pbc.sum(v)) is Float
    lanes = pbc.sum(v, axis=-1)
    assert type(lanes) is Array3f and lanes.numpy()[:, 0].tolist() == [6, 9, 12]
    assert pbc.sum(v, axis=None).numpy().tolist() == [27]
    assert pbc.sum(v, axis=(0, 1))[0] == 27
    assert pbc.sum(Float(1, 2, 3), keepdims=True)[0] == 6
    with pytest.raises(RuntimeError, match='out-of-bounds axis'):
        pbc.sum(v, axis=2)
    with pytest.raises(RuntimeError, match='keepdims=True'):
        pbc.sum(v, axis=0, keepdims=True)
    assert pbc.mean(Array3f(1, 2, 6))[0] == 3 and pbc.mean(UInt32(1, 2))[0] == 1.5
    assert pbc.dot(Float(1, 2, 3), Float(4, 5, 6))[0] == 32      # over the lanes
    assert pbc.dot([1, 2], [3, 4]) == 11 and pbc.dot(Array3f(1, 2, 3), (1, 1, 1))[0] == 6


def test_a_mask_operand_selects():
    a = Int(1, 2, 3, 4)
    assert (a & (a < 3)).numpy().tolist() == [1, 2, 0, 0]
    assert ((a < 3) & a).numpy().tolist() == [1, 2, 0, 0]
    # '|' and '^' take the mask as a number, 0 or 1 (as Dr.Jit); floats: an error
    assert (a | (a > 2)).numpy().tolist() == [1, 2, 3, 5]
    assert (a ^ (a < 3)).numpy().tolist() == [0, 3, 3, 4]
    f = Float(1.5, 2.5)
    assert (f & Bool(True, False)).numpy().tolist() == [1.5, 0]
    with pytest.raises(TypeError, match="only '&'"):
        f | Bool(True, False)
    # Python bools and sequences of them are masks too
    assert (a & True).numpy().tolist() == [1, 2, 3, 4]
    assert (a & [True, True, False, False]).numpy().tolist() == [1, 2, 0, 0]
    b = Int(1, 2, 3, 4)
    b &= b < 3
    assert b.numpy().tolist() == [1, 2, 0, 0]
    assert pbc.mul_hi(0xcafe9876, 0xfafecafe) == (0xcafe9876 * 0xfafecafe) >> 32


def test_copysign_on_integers():
    for T in (Int, Int64):
        a, b = T(1, 2, 3, 4), T(1, -1, 1, -1)
        assert pbc.copysign(a, b).numpy().tolist() == [1, -2, 3, -4]
        assert pbc.copysign(-a, b).numpy().tolist() == [1, -2, 3, -4]
        assert pbc.mulsign(-a, b).numpy().tolist() == [-1, 2, -3, 4]
    assert pbc.copysign(Float(1, -2), Float(-0.0, 3)).numpy().tolist() == [-1, 2]


def test_vectors_from_numpy_are_components():
    v = Array3f(np.array([1, 2, 3], dtype=np.float32))
    assert v.numpy().tolist() == [[1], [2], [3]]
    w = Array3f(np.arange(6, dtype=np.float32).reshape(3, 2))
    assert w.numpy().tolist() == [[0, 1], [2, 3], [4, 5]]
    u = Array3f(np.arange(6, dtype=np.float32).reshape(2, 3), flip_axes=True)
    assert u.numpy().tolist() == [[0, 3], [1, 4], [2, 5]]
    t = TensorXf(np.arange(6, dtype=np.float32).reshape(3, 2))
    assert Array3f(t).numpy().tolist() == [[0, 1], [2, 3], [4, 5]]
    c = Array3f(Float(7))                  # a flat array broadcasts, one object per component
    c.x += 1
    assert c.numpy()[:, 0].tolist() == [8, 7, 7]


def test_width_of_plain_values():
    assert pbc.width([1, 2, 3, 'hello']) == 1 and pbc.width(Float()) == 0
    assert pbc.width([Float(1, 2), Float(1)]) == 2
    with pytest.raises(RuntimeError, match='ragged'):
        pbc.width([Float(1, 2), Float(1, 2, 3)])


# ---- API that Dr.Jit code uses -----------------------------------------------------------------
def test_empty_arrays_hold_no_variable():
    x = Float()
    assert x.index == 0 and len(x) == 0 and x.state == 'invalid'
    assert Float(x).index == 0 and x.numpy().tolist() == []
    with pytest.raises(ValueError, match='uninitialized'):
        x + 1


def test_slicing_and_index_arrays():
    x = pbc.arange(Float, 10)
    ref = np.arange(10, dtype=np.float32)
    for key in (slice(1, 3), slice(None, None, 2), slice(8, 2, -2), slice(-3, None)):
        assert x[key].numpy().tolist() == ref[key].tolist()
    assert x[[1, 5]].numpy().tolist() == [1, 5] and x[UInt32(9, 0)].numpy().tolist() == [9, 0]
    y = pbc.zeros(Float, 6)
    y[1:5:2] = 7
    assert y.numpy().tolist() == [0, 7, 0, 7, 0, 0]
    assert x[-1] == 9 and Float(4).item() == 4
    with pytest.raises(RuntimeError, match='arrays of length 1'):
        x.item()


def test_swizzles_and_unary_plus():
    v = Array3f(1, 2, 3)
    assert v.xy.numpy().tolist() == [[1], [2]] and type(v.zyx) is Array3f
    assert v.xxxx.numpy()[:, 0].tolist() == [1, 1, 1, 1]
    v.zx = (7, 8)
    assert v.numpy()[:, 0].tolist() == [8, 2, 7]
    assert (+Array3i(1, 2, 3)).numpy()[:, 0].tolist() == [1, 2, 3]
    with pytest.raises(AttributeError):
        getattr(v, "xq")  # noqa: B009


def test_minimum_maximum_propagate_nan_and_fmin_fmax_ignore_it():
    nan = float('nan')
    a, b = Float(nan, 5, nan, 5), Float(5, nan, nan, 1)
    for x, y in ((a, b), (b, a)):
        np.testing.assert_array_equal(pbc.minimum(x, y).numpy(), [nan, nan, nan, 1])
        np.testing.assert_array_equal(pbc.maximum(x, y).numpy(), [nan, nan, nan, 5])
        np.testing.assert_array_equal(pbc.fmin(x, y).numpy(), [5, 5, nan, 1])
        np.testing.assert_array_equal(pbc.fmax(x, y).numpy(), [5, 5, nan, 5])
    # folded on the host alike
    assert np.isnan(pbc.minimum(Float(nan), Float(5))[0]) and pbc.fmin(Float(nan), 5)[0] == 5
    np.testing.assert_array_equal(pbc.clip(Float(nan, 9), 0, 3).numpy(), [nan, 3])
    assert pbc.min(Float(nan, 1, 2))[0] == 1                  # reductions ignore NaNs
    assert pbc.minimum(Float(-0.0), Float(0.0)).numpy().view(np.uint32)[0] == 0x80000000


def test_hashable_arrays_work_as_dataclass_defaults():
    import dataclasses

    @dataclasses.dataclass
    class Z:
        x: Float = Float(1)
        v: Array2f = Array2f(1, 2)

    assert Z().x[0] == 1 and {Float(1): 'key'}


def test_creation_of_python_types_structs_and_sequences():
    import dataclasses
    assert type(pbc.zeros(float)) is float and pbc.zeros(float) == 0 and pbc.ones(int) == 1
    v = pbc.full(Array3f, (1, 2, 3), 4)
    assert v.numpy().tolist() == [[1] * 4, [2] * 4, [3] * 4]
    with pytest.raises(RuntimeError, match='3 values'):
        pbc.full(Array3f, (1, 2), 4)

    @dataclasses.dataclass
    class D:
        x: Float = Float(0)
        v: Array3f = Array3f(0)

    class S:
        DRJIT_STRUCT = {'a': UInt32, 'b': Float64}

    d = pbc.zeros(D, 10)
    assert isinstance(d, D) and len(d.x) == 10 and d.v.numpy().shape == (3, 10)
    s = pbc.ones(S, 3)
    assert type(s) is S and s.a.numpy().tolist() == [1, 1, 1] and type(s.b) is Float64
    m = pbc.zeros(Matrix2f, (2, 2, 5))
    assert len(m[1][1]) == 5
    with pytest.raises(RuntimeError, match='incompatible'):
        pbc.zeros(Matrix2f, (2, 3, 5))
    assert pbc.count([[True, False], [True, True]], axis=None) == 3


def test_construction_from_sequences_and_bad_input():
    for T in (Float, UInt32, Array3f, Matrix2f):
        with pytest.raises(TypeError, match="Unknown keyword argument 'hello'"):
            T(hello='world')
    assert Float((v for v in (1, 2, 3))).numpy().tolist() == [1, 2, 3]       # generators
    assert Array3f(iter([1, 2, 3])).numpy()[:, 0].tolist() == [1, 2, 3]

    class MyList(list):
        pass

    assert Float(MyList([4, 5])).numpy().tolist() == [4, 5]
    for bad in ((0, 0, 0, 0), ([0] * 4,), ((0,) * 2,)):
        with pytest.raises(TypeError, match=r'wrong size \(expected 3 elements, got'):
            Array3f(*bad)
    with pytest.raises(TypeError, match=r'Could not construct from sequence'):
        Float([None, None])
    with pytest.raises(TypeError, match=r'Could not construct from sequence'):
        Array3f(None, None, None)


def test_masked_updates_of_vectors_and_single_meshgrid():
    a = Array3f(1, 2, 3)
    c = a
    a[Array3b(False, True, False)] += Array3f(2, 3, 1)
    assert a is c and a.numpy()[:, 0].tolist() == [1, 5, 3]
    v = Array3f(Float(1, 2), 0, 0)
    v[Bool(False, True)] = Array3f(9, 9, 9)          # one mask for every component
    assert v.numpy().tolist() == [[1, 9], [0, 9], [0, 9]]
    g = pbc.meshgrid(Float(1, 2), indexing='ij')     # one input: the array itself
    assert type(g) is Float and g.numpy().tolist() == [1, 2]


def test_division_operators_follow_dr_jit():
    # `/` divides floats; integer arrays divide with `//` (C truncation, as Dr.Jit)
    with pytest.raises(TypeError, match=r'unsupported operand type\(s\) for /'):
        Int(7, -7) / Int(2)
    with pytest.raises(TypeError, match=r'unsupported operand type\(s\) for /'):
        7 / UInt32(2)
    assert (Int(7, -7) // 2).numpy().tolist() == [3, -3]
    assert (Int(7, -7) / 2.0).numpy().tolist() == [3.5, -3.5]       # promotes to Float
    with pytest.raises(RuntimeError, match='cannot reinterpret-cast between types of different'):
        pbc.reinterpret_array(suite_backend.UInt64, Float(1.0))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 6), st.sampled_from(['C', 'F', 'A']),
       st.sampled_from(['Array2f', 'Array3i', 'Array4u', 'Matrix2f', 'Matrix3f']))
def test_ravel_and_unravel_against_numpy(width, order, name):
    T = getattr(suite_backend, name)
    rng = np.random.default_rng(width)
    data = rng.integers(0, 100, pbc.shape(pbc.zeros(T, width))).astype(np.float32)
    x = T(data) if issubclass(T, pbc.vector.StaticArray) else T._from(
        [T.Row(row) for row in data]) if width else T()
    flat = pbc.ravel(x, order)
    want = data.ravel(order='F' if order == 'A' else order) if width else np.zeros(0)
    assert flat.numpy().tolist() == want.tolist()
    back = pbc.unravel(T, flat, order)
    assert np.array_equal(np.asarray(back.numpy()).reshape(data.shape), data)


def test_ravel_reshape_errors_and_static_reshapes():
    v = Array3f([1, 2, 3], [4, 5, 6], 7)
    assert pbc.ravel(Float(1, 2)).numpy().tolist() == [1, 2] and pbc.ravel(2.5) == 2.5
    with pytest.raises(RuntimeError, match='order parameter must equal'):
        pbc.ravel(v, order='Q')
    with pytest.raises(RuntimeError, match='ragged'):
        pbc.ravel(Array3f(Float(1, 2), Float(3, 4), Float(5, 6, 7)))
    with pytest.raises(RuntimeError, match='not divisible'):
        pbc.unravel(Array3f, Float(1, 2, 3, 4))
    value = Array2f([1, 2, 3], [4, 5, 6])
    c = pbc.reshape(dtype=Array3f, value=value, shape=(3, -1), order='C')
    assert c.numpy().tolist() == [[1, 2], [3, 4], [5, 6]]
    with pytest.raises(RuntimeError, match=r'mismatched array sizes \(input: 6, target: 20\)'):
        pbc.reshape(dtype=Array3f, value=value, shape=(4, 5))
    s = pbc.reshape(Array2f, Array2f(pbc.arange(Float, 10), 1), 5, shrink=True)
    assert s.numpy().tolist() == [[0, 1, 2, 3, 4], [1, 1, 1, 1, 1]]


def test_var_state():
    VS = pbc.VarState
    a = Array3f(1, 2, 3)
    assert a.state == VS.Literal and a.state == 'literal'
    a.x = Float(1, 2, 3)
    assert a.x.state == VS.Evaluated and a.state == VS.Mixed
    a.y = a.x + 1
    assert a.y.state == VS.Unevaluated
    assert Float().state == VS.Invalid
    t = pbc.zeros(Float, 3)
    pbc.scatter(t, 1, UInt32(0))
    assert t.state == VS.Dirty
    pbc.eval(t)
    assert t.state == VS.Evaluated
    seen = []

    def body(i):
        seen.append(i.state)
        return (i + 1,)
    pbc.while_loop((UInt32(0, 1),), lambda i: i < 3, body, mode='symbolic')
    assert seen == [VS.Symbolic]
