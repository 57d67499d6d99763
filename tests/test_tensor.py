"""Tensors (TensorX* of the suite's backend): element-wise operations with broadcasting,
reductions, reshaping, axis permutations, indexing and creation, checked against NumPy; and
Dr.Jit's conventions where it differs from NumPy (default reduction axis, masks, .T)."""

import operator
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from suite_backend import (
    Array3f,
    Bool,
    Float,
    Int32,
    Matrix3f,
    TensorXb,
    TensorXf,
    TensorXf64,
    TensorXi,
    TensorXu,
    UInt32,
)

import pbc
from pbc.tensor import Tensor

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
NP_TYPE = {np.float32: TensorXf, np.float64: TensorXf64, np.int32: TensorXi,
           np.uint32: TensorXu, np.bool_: TensorXb}


def values(shape, dtype=np.float32, offset=0):
    """Deterministic small values of `shape` (nonzero where offset > 0)."""
    n = int(np.prod(shape))
    if dtype is np.bool_:
        return ((np.arange(n) * 7 + offset) % 3 == 0).reshape(shape)
    v = (np.arange(n) * 7 + 3 * offset) % 11 + offset
    if dtype in (np.float32, np.float64, np.int32):
        v = v - 5 if offset == 0 else v
    return v.astype(dtype).reshape(shape)


def check(t, expected, rtol=1e-6):
    """t is a tensor equal to NumPy array `expected` in shape, element type and values."""
    expected = np.asarray(expected)
    assert isinstance(t, Tensor), type(t)
    assert t.shape == expected.shape
    assert type(t) is NP_TYPE[expected.dtype.type], (type(t), expected.dtype)
    assert t.array.numpy().shape == (expected.size,)
    if expected.dtype.kind == 'f':
        np.testing.assert_allclose(t.numpy(), expected, rtol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(t.numpy(), expected)


two_shapes = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3,
                                               min_side=0, max_side=4)


# ---- element-wise operators ------------------------------------------------------------
FLOAT_OPS = {'add': operator.add, 'sub': operator.sub, 'mul': operator.mul,
             'truediv': operator.truediv, 'pow': operator.pow}
INT_OPS = {'add': operator.add, 'sub': operator.sub, 'mul': operator.mul,
           'floordiv': operator.floordiv, 'mod': operator.mod, 'and': operator.and_,
           'or': operator.or_, 'xor': operator.xor, 'lshift': operator.lshift,
           'rshift': operator.rshift}
COMPARE = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]


@SETTINGS
@given(shapes=two_shapes, name=st.sampled_from(sorted(FLOAT_OPS)))
def test_float_operators_broadcast(shapes, name):
    (sa, sb), out = shapes
    a, b = values(sa), values(sb, offset=1)
    fn = FLOAT_OPS[name]
    if name == 'pow':
        a = np.abs(a)
    check(fn(TensorXf(a), TensorXf(b)), fn(a, b), rtol=1e-5)
    assert fn(TensorXf(a), TensorXf(b)).shape == out


@SETTINGS
@given(shapes=two_shapes, name=st.sampled_from(sorted(INT_OPS)),
       dtype=st.sampled_from([np.int32, np.uint32]))
def test_integer_operators_broadcast(shapes, name, dtype):
    (sa, sb), _ = shapes
    a, b = values(sa, dtype, offset=2), values(sb, dtype, offset=1)     # positive
    fn = INT_OPS[name]
    check(fn(NP_TYPE[dtype](a), NP_TYPE[dtype](b)), fn(a, b))


@SETTINGS
@given(shapes=two_shapes, fn=st.sampled_from(COMPARE))
def test_comparisons_broadcast(shapes, fn):
    (sa, sb), _ = shapes
    a, b = values(sa), values(sb, offset=0) * 0.5
    check(fn(TensorXf(a), TensorXf(b)), fn(a, b))


def test_equality_is_elementwise():
    a = TensorXf([[1, 2], [3, 4]])
    check(a == TensorXf([[1, 0], [3, 0]]), np.array([[True, False], [True, False]]))
    check(a != 2, np.array([[True, False], [True, True]]))
    assert pbc.all(a == TensorXf([[1, 2], [3, 4]]), axis=None)
    assert not pbc.all(a == TensorXf([1, 2]), axis=None)
    assert pbc.any(a == TensorXf([1, 0]))
    assert {a: 1}[a] == 1                  # hashed by identity, as flat arrays
    check(TensorXb([True, False]) == TensorXb([True, True]), np.array([True, False]))


@SETTINGS
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=1, min_dims=0, max_dims=3,
                                                 max_side=4),
       name=st.sampled_from(sorted(FLOAT_OPS)))
def test_inplace_operators_change_the_tensor(shapes, name):
    (sb,), out = shapes           # b broadcasts to `out`, the shape of t
    a, b = values(out), values(sb, offset=1)
    fn = FLOAT_OPS[name]
    if name == 'pow':
        a = np.abs(a)
    t = TensorXf(a)
    alias, array = t, t.array
    t = getattr(operator, f'i{name}')(t, TensorXf(b))
    assert t is alias and t.array is array
    check(t, fn(a, b), rtol=1e-5)
    np.testing.assert_allclose(array.numpy(), fn(a, b).reshape(-1), rtol=1e-5)


@pytest.mark.parametrize('name', sorted(INT_OPS))
def test_inplace_integer_operators(name):
    a, b = values((2, 3), np.int32, offset=2), values((3,), np.int32, offset=1)
    t = TensorXi(a)
    alias = t
    t = getattr(operator, f'i{name}')(t, b)        # a NumPy array operand
    assert t is alias
    check(t, INT_OPS[name](a, b))


def test_inplace_with_other_operands_and_types():
    t = TensorXf([[1, 2], [3, 4]])
    alias = t
    t += 1
    t *= Float(2, 3)                     # a flat array acts as a 1-D tensor
    t -= [[1], [2]]
    t /= np.float32(2)
    assert t is alias
    check(t, (((np.array([[1, 2], [3, 4]]) + 1) * [2, 3] - [[1], [2]]) / 2).astype(np.float32))
    # a result of another type rebinds the name (as Dr.Jit and Python's number types)
    i = TensorXi([1, 2])
    j = i
    i += 0.5
    assert type(i) is TensorXf and type(j) is TensorXi
    check(i, np.array([1.5, 2.5], np.float32))
    check(j, np.array([1, 2], np.int32))
    # as in Dr.Jit, a broadcasting in-place operation takes the broadcast shape
    s = TensorXf(1.0)
    s += TensorXf([1, 2, 3])
    check(s, np.array([2, 3, 4], np.float32))


def test_reflected_operators_and_operands():
    a = values((2, 3))
    t = TensorXf(a)
    check(1 - t, 1 - a)
    check(2.0 / (t + 10), 2.0 / (a + 10))
    check([1, 2, 3] - t, np.array([1, 2, 3], np.float32) - a)
    check([[1], [2]] * t, np.array([[1], [2]], np.float32) * a)
    check(np.arange(3.0) + t, (np.arange(3.0) + a).astype(np.float32))
    check(np.arange(3) == t, np.arange(3) == a)
    check(np.float32(2) * t, 2 * a)
    check(Float(1, 2, 3) - t, np.array([1, 2, 3], np.float32) - a)
    check(t - Float(1, 2, 3), a - np.array([1, 2, 3], np.float32))
    check(t + Float(5), a + 5)                      # a width-1 array is of shape (1,)
    check(2 ** TensorXf([1, 2, 3]), np.array([2, 4, 8], np.float32))
    check(1 << TensorXu([1, 2]), np.array([2, 4], np.uint32))
    check(True & TensorXb([True, False]), np.array([True, False]))


def test_type_promotion():
    i, f = TensorXi([1, 2]), TensorXf([0.5, 1.5])
    assert type(i + 1) is TensorXi and type(i + 0.5) is TensorXf and type(i + f) is TensorXf
    assert type(f + TensorXf64([1, 2])) is TensorXf64
    assert type(TensorXu([1]) + TensorXi([1])) is TensorXu
    assert type(i + Float(1, 2)) is TensorXf and type(i < 1) is TensorXb
    check(TensorXi([1, 2]) + np.array([0.5, 0.5]), np.array([1.5, 2.5], np.float32))


def test_unary_operators():
    a = values((2, 3))
    check(-TensorXf(a), -a)
    check(abs(TensorXf(a)), np.abs(a))
    check(+TensorXf(a), a)
    check(~TensorXi(values((4,), np.int32)), ~values((4,), np.int32))
    check(~TensorXb([[True, False]]), np.array([[False, True]]))
    t = TensorXf(a)
    assert (+t) is not t and (+t).array is not t.array


def test_incompatible_shapes_name_both():
    with pytest.raises(RuntimeError, match=r'incompatible shapes: \(2,\) and \(3,\)'):
        TensorXf([1, 2]) + TensorXf([1, 2, 3])
    with pytest.raises(RuntimeError, match=r'incompatible shapes: \(3, 2\) and \(2, 3\)'):
        pbc.zeros(TensorXf, (3, 2)) + pbc.zeros(TensorXf, (2, 3))
    with pytest.raises(RuntimeError, match=r'incompatible shapes: \(3, 2\) and \(3,\)'):
        pbc.zeros(TensorXf, (3, 2)) * Float(1, 2, 3)
    with pytest.raises(RuntimeError, match=r'\(2,\) and \(4,\)'):
        t = TensorXf([1, 2])
        t += [1, 2, 3, 4]
    with pytest.raises(RuntimeError, match='Incompatible arguments'):
        TensorXf([1, 2, 3]) + Array3f(1, 2, 3)
    with pytest.raises(RuntimeError, match='Incompatible arguments'):
        Array3f(1, 2, 3) * TensorXf([1, 2, 3])
    with pytest.raises(TypeError):
        TensorXf([1]) + 'a'


# ---- math functions --------------------------------------------------------------------
@SETTINGS
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3))
def test_math_functions_broadcast(shapes):
    (sa, sb, sc), _ = shapes
    a, b, c = values(sa) / 4, values(sb, offset=1) / 4, values(sc) / 4
    ta, tb, tc = TensorXf(a), TensorXf(b), TensorXf(c)
    check(pbc.fma(ta, tb, tc), a * b + c)
    check(pbc.select(ta > 0, tb, tc), np.where(a > 0, b, c))
    check(pbc.minimum(ta, tb), np.minimum(a, b))
    check(pbc.maximum(ta, 0.5), np.maximum(a, np.float32(0.5)))
    check(pbc.clip(ta, tb - 2, tb), np.clip(a, b - 2, b))
    check(pbc.lerp(ta, tb, 0.25), a + (b - a) * np.float32(0.25))
    check(pbc.atan2(ta, tb), np.arctan2(a, b), rtol=1e-5)


def test_math_functions_keep_the_shape():
    a = np.abs(values((2, 3, 2))) / 3 + 0.1
    t = TensorXf(a)
    for fn, ref in [(pbc.sqrt, np.sqrt), (pbc.exp, np.exp), (pbc.log, np.log),
                    (pbc.sin, np.sin), (pbc.floor, np.floor), (pbc.rcp, np.reciprocal),
                    (pbc.square, np.square), (pbc.abs, np.abs)]:
        check(fn(t), ref(a).astype(np.float32), rtol=1e-5)
    check(pbc.isnan(t / 0 - t / 0), np.ones((2, 3, 2), bool))
    s, c = pbc.sincos(t)
    check(s, np.sin(a), rtol=1e-5)
    check(c, np.cos(a), rtol=1e-5)
    check(pbc.select(TensorXb([[True], [False]]), TensorXi([1, 2]), 0),
          np.array([[1, 2], [0, 0]], np.int32))
    check(pbc.fma(TensorXf(2.0), 3, 1), np.float32(7))              # 0-d


# ---- reductions ------------------------------------------------------------------------
@st.composite
def shape_and_axis(draw, max_dims=4):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=max_dims, min_side=0, max_side=4))
    n = len(shape)
    if n == 0:
        return shape, draw(st.sampled_from([None, ()]))
    axis = draw(st.one_of(
        st.none(), st.integers(-n, n - 1),
        st.lists(st.integers(-n, n - 1), max_size=n, unique_by=lambda a: a % n).map(tuple)))
    return shape, axis


REDUCTIONS = {'sum': np.sum, 'prod': np.prod, 'min': np.min, 'max': np.max,
              'mean': np.mean}


@SETTINGS
@given(sa=shape_and_axis(), name=st.sampled_from(sorted(REDUCTIONS)),
       keepdims=st.booleans())
def test_reductions_match_numpy(sa, name, keepdims):
    shape, axis = sa
    a = values(shape) / 2 + 0.5 * (name == 'prod')       # products of small numbers
    fn = getattr(pbc, name)
    axes = range(len(shape)) if axis is None else np.atleast_1d(axis) if axis != () else ()
    if name in ('min', 'max') and any(shape[x] == 0 for x in axes):
        with pytest.raises(ValueError, match='zero-size'):
            fn(TensorXf(a), axis=axis, keepdims=keepdims)
        return
    with warnings.catch_warnings(), np.errstate(all='ignore'):
        warnings.simplefilter('ignore')                 # NumPy's mean of nothing is NaN
        expected = REDUCTIONS[name](a, axis=axis, keepdims=keepdims).astype(np.float32)
    check(fn(TensorXf(a), axis=axis, keepdims=keepdims), expected, rtol=1e-5)


@SETTINGS
@given(sa=shape_and_axis(), keepdims=st.booleans())
def test_boolean_reductions_match_numpy(sa, keepdims):
    shape, axis = sa
    a = values(shape, np.bool_)
    t = TensorXb(a)
    check(pbc.all(t, axis=axis, keepdims=keepdims), np.all(a, axis=axis, keepdims=keepdims))
    check(pbc.any(t, axis=axis, keepdims=keepdims), np.any(a, axis=axis, keepdims=keepdims))
    check(pbc.none(t, axis=axis, keepdims=keepdims), ~np.any(a, axis=axis, keepdims=keepdims))
    check(pbc.count(t, axis=axis, keepdims=keepdims),
          np.count_nonzero(a, axis=axis, keepdims=keepdims).astype(np.uint32))


def test_reductions_of_many_elements():
    # more inputs per output than are combined in straight-line code: a loop in the kernel
    a = values((3, 40, 5))
    for axis in (1, (0, 2), (1, 2), (0, 1)):
        check(pbc.sum(TensorXf(a), axis=axis), a.sum(axis=axis))
        check(pbc.max(TensorXf(a), axis=axis), a.max(axis=axis))
    i = values((50, 3), np.int32)
    check(pbc.sum(TensorXi(i), axis=0), i.sum(axis=0, dtype=np.int32))
    check(pbc.min(TensorXi(i), axis=0, keepdims=True), i.min(axis=0, keepdims=True))


def test_reduction_defaults_and_results():
    a = values((3, 4))
    t = TensorXf(a)
    total = pbc.sum(t)                        # the default axis is None, as in Dr.Jit
    assert type(total) is TensorXf and total.shape == ()
    assert total.item() == float(total) == a.sum()
    check(pbc.sum(t, axis=0), a.sum(axis=0))
    check(pbc.sum(t, axis=-1, keepdims=True), a.sum(axis=-1, keepdims=True))
    check(pbc.sum(t, axis=(1, 0)), a.sum())
    check(pbc.sum(t, axis=()), a)
    check(pbc.mean(TensorXi([[1, 2], [3, 5]]), axis=1), np.array([1.5, 4], np.float32))
    check(pbc.mean(TensorXf(np.zeros((2, 0), np.float32)), axis=1), np.full(2, np.nan,
                                                                             np.float32))
    check(pbc.prod(TensorXf(np.zeros((0, 2), np.float32)), axis=0), np.ones(2, np.float32))
    check(pbc.sum(TensorXi(np.zeros((0, 2), np.int32))), np.int32(0))
    zero_d = TensorXf(2.5)
    check(pbc.sum(zero_d), np.float32(2.5))
    check(pbc.sum(zero_d, axis=0), np.float32(2.5))       # as Dr.Jit: a no-op
    assert bool(pbc.all(TensorXb([[True, True]]))) and not pbc.any(TensorXb([False]))
    assert int(pbc.count(TensorXb([True, False, True]))) == 2


def test_reduction_errors():
    t = TensorXf(values((2, 3)))
    with pytest.raises(RuntimeError, match='out-of-bounds axis 2'):
        pbc.sum(t, axis=2)
    with pytest.raises(RuntimeError, match='out-of-bounds axis -3'):
        pbc.max(t, axis=(0, -3))
    with pytest.raises(RuntimeError, match="'axis' must be"):
        pbc.sum(t, axis=1.0)
    with pytest.raises(TypeError, match='TensorXb'):
        pbc.all(t)
    with pytest.raises(ValueError, match='zero-size'):
        pbc.min(TensorXf([]))


# ---- item, bool, len, iteration ----------------------------------------------------------
def test_scalar_conversions():
    assert TensorXf([[42]]).item() == 42 and float(TensorXf(1.5)) == 1.5
    assert int(TensorXi([7])) == 7 and isinstance(TensorXi([7]).item(), int)
    assert bool(TensorXb([[True]])) and not bool(TensorXb(False))
    with pytest.raises(RuntimeError, match='length 1'):
        TensorXf([1, 2]).item()
    with pytest.raises(RuntimeError, match='length 1'):
        TensorXf().item()
    with pytest.raises(ValueError, match='ambiguous'):
        bool(TensorXb([True, False]))
    with pytest.raises(TypeError, match='TensorXb'):
        bool(TensorXf([1]))
    t = TensorXf(values((3, 2)))
    assert len(t) == 3 and t.ndim == 2 and len(TensorXf(1.0)) == 0 and TensorXf(1.0).ndim == 0
    rows = list(t)
    assert len(rows) == 3 and all(type(r) is TensorXf and r.shape == (2,) for r in rows)
    check(rows[2], values((3, 2))[2])
    with pytest.raises(TypeError, match='0-d'):
        iter(TensorXf(1.0))


# ---- reshape and axes --------------------------------------------------------------------
def test_reshape():
    a = values((2, 6))
    t = TensorXf(a)
    check(pbc.reshape(TensorXf, t, (3, -1)), a.reshape(3, -1))
    check(pbc.reshape(t, (-1,)), a.reshape(-1))              # dtype = type(value)
    check(pbc.reshape(t, shape=(2, 3, 2)), a.reshape(2, 3, 2))
    check(pbc.reshape(t, 12), a.reshape(12))
    check(pbc.reshape(TensorXi, t, (4, 3)), a.reshape(4, 3).astype(np.int32))
    check(pbc.reshape(TensorXf, pbc.arange(Float, 6), (2, 3)),
          np.arange(6, dtype=np.float32).reshape(2, 3))
    flat = pbc.reshape(Float, t, -1)
    assert type(flat) is Float and flat.numpy().tolist() == a.reshape(-1).tolist()
    check(pbc.reshape(t, (2, 2), shrink=True), a.reshape(-1)[:4].reshape(2, 2))
    check(pbc.reshape(TensorXf, TensorXf(np.zeros((0, 3), np.float32)), (3, 0, 5)),
          np.zeros((3, 0, 5), np.float32))
    r = pbc.reshape(t, (12,))
    r += 1                                   # the result does not alias the input
    check(t, a)
    with pytest.raises(RuntimeError, match='mismatched array sizes'):
        pbc.reshape(t, (5, 2))
    with pytest.raises(RuntimeError, match='cannot infer'):
        pbc.reshape(t, (5, -1))
    with pytest.raises(RuntimeError, match='invalid shape'):
        pbc.reshape(t, (-1, -1))
    with pytest.raises(RuntimeError, match="'C'"):
        pbc.reshape(t, (3, 4), order='F')
    # a static array goes through its flat form (pbc.ravel)
    assert pbc.reshape(TensorXf, Array3f(1, 2, 3), (3,)).numpy().tolist() == [1, 2, 3]
    with pytest.raises(TypeError, match='reshapes tensors and flat arrays'):
        pbc.reshape(TensorXf, 'text', (3,))


@st.composite
def shape_and_permutation(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
    perm = draw(st.permutations(range(len(shape))))
    return shape, tuple(perm)


@SETTINGS
@given(sp=shape_and_permutation())
def test_transpose_and_moveaxis_match_numpy(sp):
    shape, perm = sp
    a = values(shape)
    t = TensorXf(a)
    check(pbc.transpose(t), np.transpose(a))
    check(pbc.transpose(t, perm), np.transpose(a, perm))
    neg = tuple(p - len(shape) for p in perm)
    check(pbc.transpose(t, neg), np.transpose(a, perm))
    if shape:
        k = len(shape) // 2
        check(pbc.moveaxis(t, perm[:k], list(range(k))), np.moveaxis(a, perm[:k], range(k)))
        check(pbc.moveaxis(t, -1, 0), np.moveaxis(a, -1, 0))
        check(pbc.swapaxes(t, 0, -1), np.swapaxes(a, 0, -1))
    if len(shape) >= 2:
        check(t.mT, np.swapaxes(a, -1, -2))


def test_transpose_conventions_and_errors():
    a = values((2, 3))
    t = TensorXf(a)
    check(t.T, a.T)
    check(t.T.T, a)
    with pytest.raises(TypeError, match='2-D'):
        _ = TensorXf(values((2, 3, 4))).T        # .T is for 2-D tensors (as Dr.Jit)
    with pytest.raises(TypeError, match='at least 2'):
        _ = TensorXf([1, 2]).mT
    with pytest.raises(RuntimeError, match='length 2'):
        pbc.transpose(t, (0,))
    with pytest.raises(RuntimeError, match='out of bounds'):
        pbc.transpose(t, (0, 5))
    with pytest.raises(RuntimeError, match='permutation|repeated'):
        pbc.transpose(t, (0, 0))
    with pytest.raises(TypeError, match='expected a tensor'):
        pbc.transpose(Float(1, 2))
    with pytest.raises(TypeError, match='expected a tensor'):
        pbc.swapaxes(Float(1, 2), 0, 1)
    # matrices keep their transpose
    m = Matrix3f(np.arange(9, dtype=np.float32).reshape(3, 3))
    np.testing.assert_array_equal(pbc.transpose(m).numpy()[..., 0],
                                  np.arange(9).reshape(3, 3).T)


# ---- indexing --------------------------------------------------------------------------
@st.composite
def shape_and_index(draw, newaxis=True):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5))
    index = draw(hnp.basic_indices(shape, min_dims=0, allow_newaxis=newaxis,
                                   allow_ellipsis=True))
    return shape, index


@SETTINGS
@given(si=shape_and_index())
def test_basic_indexing_matches_numpy(si):
    shape, index = si
    a = values(shape, np.int32)
    check(TensorXi(a)[index], np.asarray(a[index]))


@SETTINGS
@given(si=shape_and_index(newaxis=False), scalar=st.booleans())
def test_slice_assignment_matches_numpy(si, scalar):
    shape, index = si
    a = values(shape, np.int32)
    region = a[index].shape
    v = np.int32(99) if scalar else values(region[1:], np.int32, offset=20)
    t = TensorXi(a)
    alias, array = t, t.array
    t[index] = v
    a[index] = v
    assert t is alias and t.array is array
    check(t, a)


def test_indexing_examples():
    a = values((4, 5, 6), np.int32)
    t = TensorXi(a)
    check(t[1], a[1])
    check(t[1, 2, 3], a[1, 2, 3])                 # a 0-d tensor, as in Dr.Jit
    check(t[-1, :, ::-2], a[-1, :, ::-2])
    check(t[..., 0], a[..., 0])
    check(t[None, 1:3, None], a[None, 1:3, None])
    check(t[:, 1:3], a[:, 1:3])
    check(t[::2], a[::2])
    check(t[5:], a[5:])
    check(t[()], a)
    with pytest.raises(IndexError, match='index 4 is out of bounds for axis 0 with size 4'):
        t[4]
    with pytest.raises(IndexError, match='index -7 is out of bounds for axis 2'):
        t[0, 0, -7]
    with pytest.raises(IndexError, match='too many indices'):
        t[0, 0, 0, 0]
    with pytest.raises(IndexError, match='single ellipsis'):
        t[..., 0, ...]
    with pytest.raises(TypeError, match='indexed by'):
        t['a']
    with pytest.raises(TypeError, match='indexed by'):
        t[Float(1, 2)]


def test_integer_array_indexing():
    a = values((4, 5, 6), np.int32)
    t = TensorXi(a)
    idx = [3, 0, -1]
    for key in ([3, 0, -1], np.array(idx), Int32(idx), TensorXi(idx)):
        check(t[key], a[idx])
        check(t[:, key], a[:, idx])
        check(t[1, :, key], a[1, :, idx])       # NumPy's rule: (3, 5)
    check(t[UInt32(2, 0)], a[[2, 0]])
    check(t[[1, 2], [3, 4]], a[[1, 2], [3, 4]])               # element-wise pairs
    check(t[[1, 2], :, [3, 4]], a[[1, 2], :, [3, 4]])         # apart: their axis first
    check(t[:, [1, 2], [3, 4]], a[:, [1, 2], [3, 4]])         # adjacent: in place
    check(t[[1], :, [0, 2, 5]], a[[1], :, [0, 2, 5]])         # length 1 broadcasts
    check(t[:, [1, 2], 3], a[:, [1, 2], 3])
    check(t[[1, 2], None, 3], a[[1, 2], None, 3])
    check(t[UInt32(1, 2), 3, UInt32(0, 5)], a[[1, 2], 3, [0, 5]])
    check(t[[], 1], a[np.array([], int), 1])
    with pytest.raises(IndexError, match='out of bounds'):
        t[:, [0, 5]]
    with pytest.raises(IndexError, match='cannot be broadcast'):
        t[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match='1-D'):
        t[[[0, 1]]]


def test_assignment_examples():
    a = values((3, 4), np.int32)
    t = TensorXi(a)
    t[1, :] = [7, 8, 9, 10]
    t[0] = 5
    t[1:3, ::2] = TensorXi([[-1], [-2]])
    t[:, [3, 0]] = 0
    t[-1, -1] = 42
    a[1, :] = [7, 8, 9, 10]
    a[0] = 5
    a[1:3, ::2] = [[-1], [-2]]
    a[:, [3, 0]] = 0
    a[-1, -1] = 42
    check(t, a)
    t[...] = 1.0                 # a float into an int tensor converts, as elsewhere
    check(t, np.ones((3, 4), np.int32))
    with pytest.raises(RuntimeError, match=r'shape \(2,\) to tensor elements of shape \(4,\)'):
        t[0] = [1, 2]
    with pytest.raises(IndexError, match='out of bounds'):
        t[3] = 0


def test_mask_indexing():
    t = TensorXf([[1, 2], [4, 5]])
    alias = t
    t[t > 4] = 10                                   # masked assignment, as Dr.Jit
    check(t, np.array([[1, 2], [4, 10]], np.float32))
    t[t < 3] += 100                                 # t[mask] is t: this adds where masked
    assert t is alias
    check(t, np.array([[101, 102], [4, 10]], np.float32))
    t[TensorXb([True, False])] = TensorXf([[0], [1]])   # the mask broadcasts
    check(t, np.array([[0, 102], [1, 10]], np.float32))
    with pytest.raises(RuntimeError, match='masked assignment'):
        t[TensorXb([True, False])[None, None]] = 1
    with pytest.raises(RuntimeError, match='incompatible shapes'):
        t[TensorXb([True, False, True])] = 1


# ---- creation and conversion -------------------------------------------------------------
def test_creation_functions():
    check(pbc.arange(TensorXi, 4), np.arange(4, dtype=np.int32))
    check(pbc.arange(TensorXf, 1, 7, 2), np.arange(1, 7, 2, dtype=np.float32))
    check(pbc.arange(TensorXu, 0), np.zeros(0, np.uint32))
    check(pbc.zeros(TensorXf, (2, 3)), np.zeros((2, 3), np.float32))
    check(pbc.zeros(TensorXf, 3), np.zeros(3, np.float32))
    check(pbc.zeros(TensorXf, shape=()), np.float32(0))
    check(pbc.ones(TensorXi, (2, 0)), np.ones((2, 0), np.int32))
    check(pbc.full(TensorXf64, 2.5, (1, 2, 3)), np.full((1, 2, 3), 2.5))
    check(pbc.full(TensorXb, True, [2]), np.ones(2, bool))
    assert pbc.empty(TensorXf, (4, 1)).shape == (4, 1)
    check(pbc.linspace(TensorXf, 0, 1, 5), np.linspace(0, 1, 5, dtype=np.float32))
    check(pbc.linspace(TensorXf, 0, 1, 4, endpoint=False),
          np.linspace(0, 1, 4, endpoint=False, dtype=np.float32))
    o = pbc.opaque(TensorXf, 3, (2, 2))
    assert o.state == 'evaluated'
    check(o, np.full((2, 2), 3, np.float32))
    # flat and vector types keep their behaviour, and take shapes as pbc.shape() gives them
    assert pbc.zeros(Float, 3).numpy().tolist() == [0, 0, 0]
    assert pbc.full(Float, 2, (4,)).numpy().tolist() == [2] * 4
    assert pbc.ones(Array3f, (3, 2)).numpy().tolist() == [[1, 1]] * 3
    check(pbc.zeros_like(TensorXi([[1, 2]])), np.zeros((1, 2), np.int32))
    check(pbc.ones_like(TensorXf(2.0)), np.float32(1))
    assert pbc.empty_like(Float(1, 2, 3)).numpy().tolist() == [0, 0, 0]
    assert pbc.ones_like(Array3f(Float(1, 2), 3, 4)).numpy().tolist() == [[1, 1]] * 3


def test_slice_index():
    shape, idx = pbc.slice_index(UInt32, (3, 7), (slice(None), 2))
    assert shape == (3,) and idx.numpy().tolist() == [2, 9, 16]
    shape, idx = pbc.slice_index(UInt32, (3, 7), (None, ..., UInt32(0, 2)))
    assert shape == (1, 3, 2) and idx.numpy().tolist() == [0, 2, 7, 9, 14, 16]
    shape, idx = pbc.slice_index(UInt32, (2, 2), ())
    assert shape == (2, 2) and idx.numpy().tolist() == [0, 1, 2, 3]
    with pytest.raises(RuntimeError, match='index 20 is out of bounds for axis 0 with size 10'):
        pbc.slice_index(UInt32, (10,), (20,))
    with pytest.raises(RuntimeError, match='too many indices'):
        pbc.slice_index(UInt32, (10,), (2, 3))
    with pytest.raises(RuntimeError, match='unsupported type "str" in slice'):
        pbc.slice_index(UInt32, (10,), ('foo',))
    with pytest.raises(TypeError, match='UInt32'):
        pbc.slice_index(Int32, (10,), (1,))


def test_construction():
    check(TensorXf(), np.zeros(0, np.float32))
    check(TensorXf([]), np.zeros(0, np.float32))
    check(TensorXf(2.5), np.float32(2.5))
    assert TensorXf(1.0).state == 'literal'
    check(TensorXi([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]], np.int32))
    check(TensorXf(np.arange(6.0).reshape(1, 2, 3)), np.arange(6.0, dtype=np.float32)
          .reshape(1, 2, 3))
    check(TensorXf(Float(1, 2, 3, 4)), np.array([1, 2, 3, 4], np.float32))
    check(TensorXf(Float(1, 2, 3, 4), shape=(2, 2)), np.array([[1, 2], [3, 4]], np.float32))
    check(TensorXf(array=[1, 2, 3, 4], shape=(4, 1)), np.array([[1], [2], [3], [4]],
                                                                np.float32))
    check(TensorXf(TensorXf([1, 2]), (2, 1)), np.array([[1], [2]], np.float32))
    check(TensorXf(np.int32(3)), np.float32(3))
    # conversion between tensor types casts the elements
    check(TensorXi(TensorXf([[1.5, -2.5]])), np.array([[1, -2]], np.int32))
    check(TensorXf64(TensorXu([[3]])), np.array([[3.0]]))
    check(TensorXf(TensorXb([True, False])), np.array([1, 0], np.float32))
    t = TensorXf([1, 2])
    copy = TensorXf(t)
    copy += 1
    check(t, np.array([1, 2], np.float32))
    # static vectors and matrices: their shape, lanes last; flip_axes reverses the axes
    v = Array3f([1, 2], [3, 4], [5, 6])
    check(TensorXf(v), np.array([[1, 2], [3, 4], [5, 6]], np.float32))
    check(TensorXf(v, flip_axes=True), np.array([[1, 3, 5], [2, 4, 6]], np.float32))
    check(TensorXf(Array3f(Float(1, 2), 3, 4)), np.array([[1, 2], [3, 3], [4, 4]],
                                                         np.float32))
    m = Matrix3f(np.arange(9, dtype=np.float32).reshape(3, 3))
    check(TensorXf(m), np.arange(9, dtype=np.float32).reshape(3, 3, 1))
    check(TensorXf(m, flip_axes=True), np.arange(9, dtype=np.float32).reshape(3, 3, 1).T)


def test_construction_errors():
    with pytest.raises(TypeError, match='Input array must be specified'):
        TensorXf(shape=(3, 4))
    with pytest.raises(TypeError, match=r'wrong number of entries \(got 4, expected 8'):
        TensorXf(Float(1, 2, 3, 4), (2, 4))
    with pytest.raises(TypeError, match='ragged input'):
        TensorXf([[1, 2, 3, 4], [5, 6, 7, 8], 5])
    with pytest.raises(TypeError, match='must be flat'):
        TensorXf([[1, 2], [3, 4]], shape=(4,))
    with pytest.raises(TypeError, match='flip_axes'):
        TensorXf([1, 2], flip_axes=True)
    with pytest.raises(TypeError, match='a shape is a tuple'):
        TensorXf([1, 2], shape='ab')
    with pytest.raises(ValueError, match='negative'):
        TensorXf([1, 2], shape=(-1, -2))


# ---- tensors inside other machinery --------------------------------------------------------
def test_tensor_as_loop_state():
    t = TensorXf([1, 2, 3])

    def body(i, t):
        t += 1                          # in place: written back into the caller's tensor
        return i + 1, t

    _, r = pbc.while_loop((UInt32(0), t), lambda i, t: i < 4, body)
    assert r is t
    check(t, np.array([5, 6, 7], np.float32))
    _, r = pbc.while_loop((UInt32(0), t), lambda i, t: i < 2, lambda i, t: (i + 1, t * 2))
    check(r, np.array([20, 24, 28], np.float32))
    check(t, np.array([5, 6, 7], np.float32))


def test_shape_and_print():
    t = TensorXf(values((2, 3)))
    assert pbc.shape(t) == (2, 3) and t.shape == (2, 3)
    assert str(TensorXi([[1, 2], [3, 4]]) + 1) == '[[2, 3],\n [4, 5]]'
    assert str(pbc.sum(TensorXi([[1, 2], [3, 4]]))) == '10'
    assert type(t.array) is Float and len(t.array) == 6
    assert isinstance(TensorXb([True]).array, Bool)


@pytest.mark.parametrize('mode', ['symbolic', 'evaluated'])
@pytest.mark.parametrize('in_place', [False, True])
def test_tensors_as_loop_state_and_conditions(mode, in_place):
    # A one-element tensor that the loop broadcasts takes the loop's shape.
    @pbc.syntax
    def f(mode):
        i = pbc.arange(TensorXu, 7)
        z = TensorXu(0)
        while pbc.hint(i < 5, mode=mode):
            i += 1
            if in_place:
                z += 1
            else:
                z = i + 4
        return i, z

    i, z = f(mode)
    assert i.shape == z.shape == (7,)
    assert i.numpy().tolist() == [5, 5, 5, 5, 5, 5, 6]
    assert z.numpy().tolist() == ([5, 4, 3, 2, 1, 0, 0] if in_place else
                                  [9, 9, 9, 9, 9, 0, 0])

    @pbc.syntax
    def g(x, mode):
        if pbc.hint(x > 2, mode=mode):
            x = x * 10
        return x

    x = TensorXu(np.arange(6, dtype=np.uint32).reshape(2, 3))
    r = g(x, mode)
    assert r.shape == (2, 3) and r.numpy().tolist() == [[0, 1, 2], [30, 40, 50]]


def test_reshape_of_a_tree_reshapes_its_arrays():
    v = pbc.arange(TensorXf, 6)
    out = pbc.reshape(dtype=dict, value={'a': (v,), 'b': [TensorXf(v)]}, shape=(3, -1))
    assert type(out) is dict and type(out['a']) is tuple and type(out['b']) is list
    assert out['a'][0].shape == (3, 2) and out['a'][0].numpy().tolist() == [[0, 1], [2, 3],
                                                                            [4, 5]]
