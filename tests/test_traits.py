"""Type traits (pbc.value_t, pbc.is_float_v, pbc.expr_t, pbc.shape, ...) on every family of
pbc types, on their instances and on Python values, with Dr.Jit's answers written out here;
types pbc lacks raise a TypeError that names them."""

import numpy as np
import pytest
import suite_backend
from suite_backend import (
    PCG32,
    Array2b,
    Array3b,
    Array3f,
    Array3f64,
    Array3i,
    Array3u,
    Array4f,
    Bool,
    Float,
    Float32,
    Float64,
    Int,
    Int32,
    Int64,
    Matrix2f,
    Matrix3f,
    Ptr,
    TensorXb,
    TensorXf,
    TensorXf64,
    TensorXi,
    TensorXu,
    UInt,
    UInt32,
    UInt64,
)

import pbc
from pbc import JitBackend, VarType
from pbc.dispatch import PtrBase
from pbc.tensor import Tensor
from pbc.vector import vector_type

# Flat type: its VarType, Python scalar type, bytes per element, tensor type, and
# (is_float, is_integral, is_arithmetic, is_signed, is_unsigned, is_mask)
FLAT = {
    Bool: (VarType.Bool, bool, 1, TensorXb, (0, 0, 0, 0, 1, 1)),
    Int32: (VarType.Int32, int, 4, TensorXi, (0, 1, 1, 1, 0, 0)),
    UInt32: (VarType.UInt32, int, 4, TensorXu, (0, 1, 1, 0, 1, 0)),
    Int64: (VarType.Int64, int, 8, None, (0, 1, 1, 1, 0, 0)),
    UInt64: (VarType.UInt64, int, 8, None, (0, 1, 1, 0, 1, 0)),
    Float32: (VarType.Float32, float, 4, TensorXf, (1, 0, 1, 1, 0, 0)),
    Float64: (VarType.Float64, float, 8, TensorXf64, (1, 0, 1, 1, 0, 0)),
}
PREDICATES = (pbc.is_float_v, pbc.is_integral_v, pbc.is_arithmetic_v, pbc.is_signed_v,
              pbc.is_unsigned_v, pbc.is_mask_v)
# Same-size integer and float types by element type (None: pbc has no such type)
SAME_SIZE = {Bool: (None, None, None), Int32: (UInt32, Int32, Float32),
             UInt32: (UInt32, Int32, Float32), Int64: (UInt64, Int64, Float64),
             UInt64: (UInt64, Int64, Float64), Float32: (UInt32, Int32, Float32),
             Float64: (UInt64, Int64, Float64)}
RETYPE = (pbc.bool_array_t, pbc.int32_array_t, pbc.uint32_array_t, pbc.int64_array_t,
          pbc.uint64_array_t, pbc.float32_array_t, pbc.float64_array_t)
RETYPED = (Bool, Int32, UInt32, Int64, UInt64, Float32, Float64)


def instance(T):
    """A small instance of pbc type T."""
    if issubclass(T, Tensor):
        return T(np.zeros((2, 3)))
    if issubclass(T, PtrBase):
        return T()
    return T(1)


def both(T):
    """T and an instance of it: every trait answers the same for both."""
    return (T, instance(T))


BACKEND = {'llvm': JitBackend.LLVM, 'cuda': JitBackend.CUDA}[suite_backend.NAME]


def common(x, vt):
    assert pbc.is_array_v(x) and pbc.is_jit_v(x)
    assert pbc.is_llvm_v(x) == (BACKEND is JitBackend.LLVM)
    assert pbc.is_cuda_v(x) == (BACKEND is JitBackend.CUDA)
    assert pbc.type_v(x) is vt and pbc.backend_v(x) is BACKEND
    assert pbc.is_diff_v(x)                  # pbc.llvm is also pbc.llvm.ad, as pbc.cuda
    assert pbc.diff_array_t(x) is pbc.detached_t(x) is (x if isinstance(x, type) else type(x))
    assert not pbc.is_complex_v(x) and not pbc.is_quaternion_v(x) and not pbc.is_half_v(x)
    assert not pbc.is_struct_v(x)
    assert pbc.is_dynamic_v(x)
    with pytest.raises(TypeError, match='no Float16 arrays'):
        pbc.float16_array_t(x)
    with pytest.raises(TypeError, match='no Int8 arrays'):
        pbc.int8_array_t(x)


@pytest.mark.parametrize('T', list(FLAT), ids=lambda T: T.__name__)
def test_flat(T):
    vt, py, size, tensor, preds = FLAT[T]
    for x in both(T):
        common(x, vt)
        assert pbc.size_v(x) == pbc.Dynamic == -1 and pbc.depth_v(x) == 1
        assert pbc.value_t(x) is pbc.scalar_t(x) is py
        assert pbc.mask_t(x) is Bool and pbc.bool_array_t(x) is Bool
        assert pbc.array_t(x) is pbc.leaf_t(x) is pbc.expr_t(x) is T
        assert pbc.itemsize_v(x) == size
        assert tuple(int(p(x)) for p in PREDICATES) == preds
        assert not pbc.is_vector_v(x) and not pbc.is_matrix_v(x) and not pbc.is_tensor_v(x)
        assert not pbc.is_special_v(x) and not pbc.is_static_array_v(x)
        assert pbc.matrix_t(x) is None
        assert [f(x) for f in RETYPE] == list(RETYPED)
        for vt2, T2 in zip((VarType.Int32, VarType.Float64, VarType.Bool), (Int, Float64, Bool)):
            assert pbc.replace_type_t(x, vt2) is pbc.reinterpret_array_t(x, vt2) is T2
        if tensor is None:
            with pytest.raises(TypeError, match=f'no TensorX{"i" if vt < 10 else "u"}64 type'):
                pbc.tensor_t(x)
        else:
            assert pbc.tensor_t(x) is tensor
        same = SAME_SIZE[T]
        if same[0] is None:           # 1-byte elements: Dr.Jit answers UInt8 / Int8 / error
            with pytest.raises(TypeError, match='no UInt8 arrays'):
                pbc.uint_array_t(x)
            with pytest.raises(TypeError, match='no Int8 arrays'):
                pbc.int_array_t(x)
            with pytest.raises(TypeError, match='1-byte'):
                pbc.float_array_t(x)
        else:
            assert (pbc.uint_array_t(x), pbc.int_array_t(x), pbc.float_array_t(x)) == same
    assert pbc.shape(T(1, 2, 3)) == T(1, 2, 3).shape == (3,) and T().shape == (0,)
    assert pbc.replace_shape_t(T, (-1,)) is T


VECTORS = [vector_type(n, T) for n in (2, 3, 4) for T in FLAT]


@pytest.mark.parametrize('V', VECTORS, ids=lambda V: V.__name__)
def test_vector(V):
    n, T = V.Size, V.Value
    vt, py, size, tensor, preds = FLAT[T]
    for x in both(V):
        common(x, vt)
        assert pbc.size_v(x) == n and pbc.depth_v(x) == 2
        assert pbc.value_t(x) is pbc.leaf_t(x) is T and pbc.scalar_t(x) is py
        assert pbc.mask_t(x) is pbc.bool_array_t(x) is vector_type(n, Bool)
        assert pbc.array_t(x) is pbc.expr_t(x) is V
        assert pbc.itemsize_v(x) == size
        assert tuple(int(p(x)) for p in PREDICATES) == preds
        assert pbc.is_vector_v(x) and pbc.is_static_array_v(x)
        assert not pbc.is_matrix_v(x) and not pbc.is_tensor_v(x) and not pbc.is_special_v(x)
        assert [f(x) for f in RETYPE] == [vector_type(n, R) for R in RETYPED]
        assert pbc.replace_type_t(x, VarType.Float32) is vector_type(n, Float)
        if vt in MATRIX_SUFFIX:
            assert pbc.matrix_t(x) is getattr(suite_backend, f'Matrix{n}{MATRIX_SUFFIX[vt]}')
        else:                               # Dr.Jit has no integer or mask matrices either
            assert pbc.matrix_t(x) is None
        if tensor is not None:
            assert pbc.tensor_t(x) is tensor
        if SAME_SIZE[T][0] is not None:
            assert pbc.uint_array_t(x) is vector_type(n, SAME_SIZE[T][0])
            assert pbc.float_array_t(x) is vector_type(n, SAME_SIZE[T][2])
    assert pbc.replace_shape_t(V, (-1,)) is T
    assert pbc.replace_shape_t(T, (n, -1)) is V


MATRIX_SUFFIX = {VarType.Float32: 'f', VarType.Float64: 'f64'}
MATRICES = [getattr(suite_backend, f'Matrix{n}{s}') for s in ('f', 'f64') for n in (2, 3, 4)]


@pytest.mark.parametrize('M', MATRICES, ids=lambda M: M.__name__)
def test_matrix(M):
    n, T = M.Size, M.Row.Value
    vt, other = (VarType.Float32, 'f64') if T is Float else (VarType.Float64, 'f')
    for x in both(M):
        common(x, vt)
        assert pbc.size_v(x) == n and pbc.depth_v(x) == 3
        assert pbc.value_t(x) is M.Row is vector_type(n, T)
        assert pbc.leaf_t(x) is T and pbc.scalar_t(x) is float
        assert pbc.is_matrix_v(x) and pbc.is_special_v(x) and pbc.is_static_array_v(x)
        assert not pbc.is_vector_v(x) and not pbc.is_tensor_v(x)
        assert pbc.is_float_v(x) and pbc.is_signed_v(x) and not pbc.is_mask_v(x)
        assert pbc.matrix_t(x) is pbc.expr_t(x) is M
        assert pbc.tensor_t(x) is pbc.tensor_t(T)
        assert pbc.itemsize_v(x) == pbc.itemsize_v(T)
        # (the other precision's matrix, as Dr.Jit's float32_array_t / float64_array_t)
        assert pbc.float32_array_t(x) is getattr(suite_backend, f'Matrix{n}f')
        assert pbc.float64_array_t(x) is getattr(suite_backend, f'Matrix{n}f64')
        assert pbc.replace_type_t(x, VarType.Float32 if other == 'f' else VarType.Float64) \
            is getattr(suite_backend, f'Matrix{n}{other}')
        # (comparisons of matrices give Array33b); Dr.Jit's other answer is nested arrays
        # (Array33f)
        mask = getattr(suite_backend, f'Array{n}{n}b')
        assert pbc.mask_t(x) is mask and type(pbc.identity(M) == pbc.identity(M)) is mask
        assert pbc.value_t(mask) is vector_type(n, Bool) and pbc.depth_v(mask) == 3
        assert pbc.is_mask_v(mask) and pbc.size_v(mask) == n
        with pytest.raises(TypeError, match=f'no Array{n}{n}f'):
            pbc.array_t(x)
        with pytest.raises(TypeError, match=f'no Matrix{n}i type'):
            pbc.int32_array_t(x)
    assert pbc.shape(pbc.identity(M)) == pbc.identity(M).shape == (n, n, 1)
    assert pbc.shape(M()) == (n, n, 0)
    assert pbc.replace_shape_t(T, (n, n, -1), 'matrix') is M
    assert pbc.replace_shape_t(vector_type(n, T), (n, -1), 'matrix') is M


TENSORS = {TensorXf: Float32, TensorXf64: Float64, TensorXu: UInt32, TensorXi: Int32,
           TensorXb: Bool}


@pytest.mark.parametrize('X', list(TENSORS), ids=lambda X: X.__name__)
def test_tensor(X):
    T = TENSORS[X]
    vt, py, size, _, preds = FLAT[T]
    for x in both(X):
        common(x, vt)
        # Dr.Jit gives tensor types no static shape
        assert pbc.size_v(x) == 0 and pbc.depth_v(x) == 0
        assert pbc.value_t(x) is pbc.scalar_t(x) is py
        assert pbc.array_t(x) is pbc.leaf_t(x) is T
        assert pbc.mask_t(x) is TensorXb and pbc.tensor_t(x) is X
        assert pbc.is_tensor_v(x) and not pbc.is_static_array_v(x)
        assert not pbc.is_vector_v(x) and not pbc.is_special_v(x)
        assert tuple(int(p(x)) for p in PREDICATES) == preds
        assert pbc.itemsize_v(x) == size and pbc.matrix_t(x) is None
        assert pbc.uint32_array_t(x) is TensorXu and pbc.float32_array_t(x) is TensorXf
        with pytest.raises(TypeError, match='no TensorXi64 type'):
            pbc.int64_array_t(x)
    assert pbc.shape(X(np.zeros((2, 3, 4)))) == (2, 3, 4)
    assert pbc.shape(X(np.zeros(()))) == ()


def test_pointer_arrays():
    class Shape(pbc.Object):
        pass

    P = Ptr[Shape]
    for T in (Ptr, P):
        for x in both(T):
            common(x, VarType.Pointer)
            assert pbc.value_t(x) is pbc.scalar_t(x) is T.Base
            assert pbc.size_v(x) == -1 and pbc.depth_v(x) == 1 and pbc.itemsize_v(x) == 8
            assert pbc.array_t(x) is pbc.leaf_t(x) is pbc.expr_t(x, x) is T
            assert pbc.mask_t(x) is Bool
            assert not any(p(x) for p in PREDICATES)
            assert pbc.uint32_array_t(x) is UInt32 and pbc.uint_array_t(x) is UInt64
    assert pbc.shape(P([Shape(), None])) == (2,)
    with pytest.raises(TypeError, match='incompatible types'):
        pbc.expr_t(P, UInt32)


def test_pcg32_is_a_struct_not_an_array():
    for x in both(PCG32):
        assert pbc.is_struct_v(x) and not pbc.is_array_v(x) and not pbc.is_jit_v(x)
        assert pbc.value_t(x) is pbc.scalar_t(x) is pbc.leaf_t(x) is pbc.array_t(x) is PCG32
        assert pbc.mask_t(x) is bool and pbc.size_v(x) == 1 and pbc.depth_v(x) == 0
        assert pbc.type_v(x) is VarType.Void and pbc.backend_v(x) is JitBackend.Invalid
        assert not pbc.is_diff_v(x) and pbc.tensor_t(x) is None


# Python value: (is_float, is_integral, is_arithmetic, is_signed, is_unsigned, is_mask)
PYTHON = {1.5: (1, 0, 1, 1, 0, 0), 3: (0, 1, 1, 1, 0, 0), True: (0, 0, 0, 0, 1, 1),
          'text': (0, 0, 0, 0, 0, 0), None: (0, 0, 0, 0, 0, 0), (1, 2): (0, 0, 0, 0, 0, 0)}


@pytest.mark.parametrize('value', list(PYTHON), ids=repr)
def test_python_values(value):
    tp = type(value)
    for x in (value, tp):
        assert not pbc.is_array_v(x) and not pbc.is_jit_v(x) and not pbc.is_diff_v(x)
        assert tuple(int(p(x)) for p in PREDICATES) == PYTHON[value]
        assert pbc.size_v(x) == 1 and pbc.depth_v(x) == 0
        assert pbc.value_t(x) is pbc.scalar_t(x) is pbc.leaf_t(x) is pbc.array_t(x) is tp
        assert pbc.diff_array_t(x) is pbc.detached_t(x) is tp
        assert pbc.replace_type_t(x, VarType.Float32) is tp
        assert pbc.mask_t(x) is pbc.bool_array_t(x) is bool
        assert pbc.type_v(x) is VarType.Void and pbc.backend_v(x) is JitBackend.Invalid
        assert not pbc.is_vector_v(x) and not pbc.is_special_v(x) and not pbc.is_dynamic_v(x)
        assert not pbc.is_struct_v(x) and not pbc.is_half_v(x)
        assert pbc.tensor_t(x) is None and pbc.matrix_t(x) is None
        # The Python scalar type of the element type
        assert pbc.float32_array_t(x) is pbc.float16_array_t(x) is pbc.float_array_t(x) is float
        assert pbc.uint32_array_t(x) is pbc.int64_array_t(x) is pbc.uint_array_t(x) is int
        assert pbc.reinterpret_array_t(x, VarType.Bool) is bool
        with pytest.raises(TypeError, match='not a pbc array'):
            pbc.itemsize_v(x)


def test_enums_match_drjit():
    assert [(m.name, m.value) for m in VarType] == [
        ('Void', 0), ('Bool', 1), ('Int8', 3), ('UInt8', 4), ('Int16', 5), ('UInt16', 6),
        ('Int32', 7), ('UInt32', 8), ('Int64', 9), ('UInt64', 10), ('Pointer', 11),
        ('Float16', 13), ('Float32', 14), ('Float64', 15)]
    assert [(m.name, m.value) for m in JitBackend] == [
        ('Invalid', 0), ('CUDA', 1), ('LLVM', 2), ('Metal', 3)]
    assert pbc.Dynamic == -1


# ---- expr_t ---------------------------------------------------------------------------------
SCALARS = (True, 3, 2.5)
FLATS = list(FLAT)


def _value(T):
    return T(1, 0) if T is not Bool else T(True, False)


def _sum_type(a, b):
    """The type pbc's + gives (None where pbc refuses the operation)."""
    try:
        return type(a + b)
    except TypeError:
        return None


@pytest.mark.parametrize('A', FLATS, ids=lambda T: T.__name__)
def test_expr_t_follows_the_operators(A):
    # Every pair of flat types, and flat types with Python scalars, as values and types
    for b in FLATS + list(SCALARS):
        a, bv = _value(A), _value(b) if isinstance(b, type) else b
        expected = _sum_type(a, bv)
        if expected is None:
            continue
        assert pbc.expr_t(a, bv) is pbc.expr_t(bv, a) is expected
        assert pbc.expr_t(A, type(bv)) is pbc.expr_t(type(bv), A) is expected
        # Vectors and tensors promote their elements the same way
        V = vector_type(3, A)
        if isinstance(b, type):
            assert pbc.expr_t(V, vector_type(3, b)) is vector_type(3, expected)
        assert pbc.expr_t(V, bv) is type(V(a) + bv) is vector_type(3, expected)
        if A in (Float32, Int32, UInt32) and not isinstance(b, type):
            X = pbc.tensor_t(A)
            assert pbc.expr_t(X, bv) is type(X(np.ones(2)) + bv) is pbc.tensor_t(expected)


@pytest.mark.parametrize('args, expected', [
    ((int, float), float), ((int, int), int), ((bool, int), int), ((1, 2.0), float),
    ((True, False), bool), ((Bool, Float), Float), ((Int, UInt), UInt),
    ((Float, Float64), Float64), ((Int64, 1.0), Float), ((UInt64, Int64), UInt64),
    ((Array3f, Float(4)), Array3f), ((Array3i, 0.5), Array3f), ((Array3f, Float64), Array3f64),
    ((Array3f, [1, 2, 3]), Array3f), ((Float, [1, 2, 3]), Float),
    ((Array3f, [Float(1), Float(2), Float(3)]), Array3f),
    ((np.zeros((3, 10), np.float32), Array3f), Array3f),
    ((np.zeros(10), Float), Float64), ((Array3u, Array3i, UInt), Array3u),
    ((TensorXf, Float), TensorXf), ((TensorXi, np.zeros((2, 2), np.float32)), TensorXf),
    ((Float(1),), Float), ((Array2b,), Array2b), ((), None),
])
def test_expr_t_cases(args, expected):
    assert pbc.expr_t(*args) is expected


@pytest.mark.parametrize('args, message', [
    ((Array3f, Array4f), 'incompatible types "Array3f" and "Array4f"'),
    ((Matrix3f, Array3f), 'incompatible types'),
    ((TensorXf, Array3f), 'incompatible types'),
    ((Array3f, {}), 'incompatible types'),
    ((Float, None), 'incompatible types'),
    ((PCG32, Float), 'incompatible types'),
    ((Float, 'text'), 'incompatible types'),
    ((TensorXi, Int64), 'no TensorXi64 type'),
    ((1.0, [1, 2]), "no scalar backend \\(Dr.Jit's drjit.scalar.Array2f\\)"),
    ((Float, np.zeros((10, 3))), 'no ArrayXf64 type'),
])
def test_expr_t_errors(args, message):
    with pytest.raises(TypeError, match=message):
        pbc.expr_t(*args)


# ---- replace_shape_t, missing types -------------------------------------------------------------
def test_replace_shape_t():
    assert pbc.replace_shape_t(Float, (3, -1)) is Array3f
    assert pbc.replace_shape_t(Array3f, (4, -1), 'array') is Array4f
    assert pbc.replace_shape_t(Matrix3f, (3, -1)) is Array3f
    assert pbc.replace_shape_t(2.0, (3, -1)) is float
    with pytest.raises(TypeError, match='no Array22f type'):
        pbc.replace_shape_t(Float, (2, 2, -1))
    with pytest.raises(TypeError, match='no ArrayXf type'):
        pbc.replace_shape_t(Float, (-1, -1))
    with pytest.raises(TypeError, match='no complex types'):
        pbc.replace_shape_t(Float, (2, -1), 'complex')
    with pytest.raises(ValueError):
        pbc.replace_shape_t(Float, (2, 2, 2, -1))


def test_missing_types_are_named():
    for f, x, name in [(pbc.float16_array_t, Array3f, 'Float16 arrays'),
                       (pbc.uint8_array_t, TensorXf, 'UInt8 arrays'),
                       (pbc.int_array_t, Array3b, 'Int8 arrays'),
                       (pbc.int64_array_t, TensorXf, 'TensorXi64 type'),
                       (pbc.array_t, Matrix3f, 'Array33f type'),
                       (lambda x: pbc.replace_type_t(x, VarType.Int16), Float, 'Int16'),
                       (lambda x: pbc.replace_type_t(x, VarType.Pointer), Float,
                        'Pointer type')]:
        with pytest.raises(TypeError, match=f'pbc has no {name}'):
            f(x)


# ---- shape -----------------------------------------------------------------------------------
@pytest.mark.parametrize('value, expected', [
    (1.5, ()), (True, ()), ('text', ()), ([], (0,)), ([1, 2, 3], (3,)),
    ([[1, 2], [3, 4], [5, 6]], (3, 2)), ([[1, 2], [3]], (2, 2)), ((1, (2, 3)), None),
    ([[1, 2], [3, 4, 5]], None), (np.zeros((2, 5)), (2, 5)),
    (Float(1, 2, 3), (3,)), (Float(), (0,)), (Array3f(1, 2, 3), (3, 1)),
    (Array3f(Float(1, 2), 0, Float(3, 4)), (3, 2)), (Array3f(), (3, 0)),
    (Array3f(Float(1, 2), Float(1, 2, 3), 0), None), (pbc.identity(Matrix2f), (2, 2, 1)),
    (Matrix2f(Float(1, 2), 0, 0, Float(1, 1)), (2, 2, 2)),
    (TensorXf(np.zeros((4, 1, 2))), (4, 1, 2)),
    ([Float(1, 2, 3), Float(4, 5, 6)], (2, 3)), ([Float(1, 2, 3), 7], None),
    ([Array3f(1, 2, 3), Array3f(Float(1, 2), 0, 0)], (2, 3, 2)),
])
def test_shape(value, expected):
    if expected is None:
        with pytest.raises(RuntimeError, match='ragged'):
            pbc.shape(value)
        return
    assert pbc.shape(value) == expected
    if pbc.is_array_v(value):
        assert value.shape == expected
        assert np.asarray(value.numpy()).shape == expected


def test_shape_of_a_tensor_inside_a_sequence_is_refused():
    with pytest.raises(RuntimeError, match='unsupported'):
        pbc.shape([TensorXf(np.zeros(2))])
