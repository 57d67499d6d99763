"""Type traits as in Dr.Jit (value_t, mask_t, is_float_v, expr_t, shape, ...) for pbc's types
and instances and for Python values.

Each pbc array type is described by a record like Dr.Jit's array metadata: element type,
backend, kind and static shape. Traits that answer with a type change the record and look
the type up by its Dr.Jit name ('Array3f', 'TensorXu', ...) in the backend's module, so an
answer that Dr.Jit has and pbc lacks raises a TypeError that names it."""

import enum
import functools
import importlib
from typing import NamedTuple

import numpy as np

from ._runtime import ArrayBase
from .dispatch import PtrBase
from .tensor import Tensor
from .vector import Matrix, StaticArray

Dynamic = -1


class VarType(enum.IntEnum):
    """Element types, with Dr.Jit's values (its promotion uses 2 and 12 for Python int and
    float, which is why they are missing here)."""
    Void = 0
    Bool = 1
    Int8 = 3
    UInt8 = 4
    Int16 = 5
    UInt16 = 6
    Int32 = 7
    UInt32 = 8
    Int64 = 9
    UInt64 = 10
    Pointer = 11
    Float16 = 13
    Float32 = 14
    Float64 = 15


class JitBackend(enum.IntEnum):
    Invalid = 0        # not a JIT type (Dr.Jit's JitBackend::None)
    CUDA = 1
    LLVM = 2
    Metal = 3


# Weak types of Python scalars in promotion: an int adopts any array's type, a float any
# float type, and both turn into Int32 / Float32 when nothing else decides.
_BASE_INT, _BASE_FLOAT = 2, 12

V = VarType
# VarType: (Dr.Jit's flat type name, vector suffix, bytes per element, Python scalar type)
_TYPES = {
    V.Bool: ('Bool', 'b', 1, bool),
    V.Int8: ('Int8', 'i8', 1, int),
    V.UInt8: ('UInt8', 'u8', 1, int),
    V.Int16: ('Int16', 'i16', 2, int),
    V.UInt16: ('UInt16', 'u16', 2, int),
    V.Int32: ('Int', 'i', 4, int),
    V.UInt32: ('UInt', 'u', 4, int),
    V.Int64: ('Int64', 'i64', 8, int),
    V.UInt64: ('UInt64', 'u64', 8, int),
    V.Pointer: ('Pointer', 'p', 8, int),
    V.Float16: ('Float16', 'f16', 2, float),
    V.Float32: ('Float', 'f', 4, float),
    V.Float64: ('Float64', 'f64', 8, float),
}
_FROM_PBC = {'bool': V.Bool, 'int32': V.Int32, 'uint32': V.UInt32, 'int64': V.Int64,
             'uint64': V.UInt64, 'float32': V.Float32, 'float64': V.Float64}
_FROM_NUMPY = {'b1': V.Bool, 'i1': V.Int8, 'u1': V.UInt8, 'i2': V.Int16, 'u2': V.UInt16,
               'i4': V.Int32, 'u4': V.UInt32, 'i8': V.Int64, 'u8': V.UInt64,
               'f2': V.Float16, 'f4': V.Float32, 'f8': V.Float64}
_PYTHON = {bool: V.Bool, int: _BASE_INT, float: _BASE_FLOAT}
_FLOAT = {V.Float16, V.Float32, V.Float64}
_INTEGRAL = {V.Int8, V.UInt8, V.Int16, V.UInt16, V.Int32, V.UInt32, V.Int64, V.UInt64}
_SIGNED = {V.Int8, V.Int16, V.Int32, V.Int64} | _FLOAT
_UNSIGNED = {V.Bool, V.UInt8, V.UInt16, V.UInt32, V.UInt64}
_NO_ARRAYS = {V.Int8, V.UInt8, V.Int16, V.UInt16, V.Float16}   # element types pbc lacks
_BACKENDS = {0: JitBackend.LLVM, 1: JitBackend.CUDA}            # pbc's backend codes
_MODULES = {JitBackend.LLVM: 'pbc.llvm', JitBackend.CUDA: 'pbc.cuda'}
del V


class _Meta(NamedTuple):
    vt: int                  # a VarType (or _BASE_INT / _BASE_FLOAT while promoting)
    backend: JitBackend = JitBackend.Invalid
    kind: str = ''           # '', 'vector', 'matrix', 'tensor' or 'pointer'
    shape: tuple = ()        # static sizes, outermost first; a JIT type's last is Dynamic
    seq: bool = False        # a Python sequence or NumPy array (expr_t only)


def _array_meta(tp):
    """The record of pbc array type tp, or None if tp is not one."""
    if not isinstance(tp, type):
        return None
    if issubclass(tp, ArrayBase) and hasattr(tp, 'Type'):
        return _Meta(_FROM_PBC[tp.Type], _BACKENDS[tp._backend_code], '', (Dynamic,))
    if issubclass(tp, StaticArray) and tp.Value is not None:
        m = _array_meta(tp.Value)
        return m._replace(kind='vector', shape=(tp.Size,) + m.shape)
    if issubclass(tp, Matrix) and tp.Row is not None:
        m = _array_meta(tp.Row)
        return m._replace(kind='matrix', shape=(tp.Size,) + m.shape)
    if issubclass(tp, Tensor) and tp.Array is not None:
        # Dr.Jit gives tensor types no static shape: depth_v and size_v are 0
        return _array_meta(tp.Array)._replace(kind='tensor', shape=())
    if issubclass(tp, PtrBase) and tp.UInt32 is not None:
        return _Meta(VarType.Pointer, _BACKENDS[tp.UInt32._backend_code], 'pointer',
                     (Dynamic,))
    return None


def _tp(x):
    return x if isinstance(x, type) else type(x)


def _meta(x):
    return _array_meta(_tp(x))


def _name(m):
    """Dr.Jit's name of the type m describes."""
    flat, suffix = _TYPES[m.vt][:2]
    if m.kind == 'tensor':
        return 'TensorX' + suffix
    dims = m.shape[:-1] if m.backend else m.shape
    if not dims:
        return flat
    if m.kind == 'matrix':
        dims = dims[:1] + dims[2:]          # Matrix3f, not Matrix33f
    sizes = ''.join('X' if d == Dynamic else str(d) for d in dims)
    return ('Matrix' if m.kind == 'matrix' else 'Array') + sizes + suffix


def _type_for(m, like=None):
    """The type that m describes (`like` itself when m describes it)."""
    if like is not None and _array_meta(like) == m:
        return like
    m = m._replace(vt=VarType(m.vt))
    name = _name(m)
    if not m.backend:
        if m.shape or m.kind:
            raise TypeError(f"pbc has no scalar backend (Dr.Jit's drjit.scalar.{name})")
        return _TYPES[m.vt][3]
    prefix = f'drjit.{m.backend.name.lower()}.'
    if m.vt in _NO_ARRAYS:
        raise TypeError(f"pbc has no {m.vt.name} arrays (Dr.Jit's {prefix}{name})")
    try:
        module = importlib.import_module(_MODULES[m.backend])
    except (KeyError, ImportError):
        raise TypeError(f"pbc has no {m.backend.name} arrays (Dr.Jit's {prefix}{name})") \
            from None
    tp = getattr(module, name, None)
    found = _array_meta(tp) if isinstance(tp, type) else None
    if found is None or _name(found) != name:
        raise TypeError(f"pbc has no {name} type (Dr.Jit's {prefix}{name})")
    return tp


# ---- array type tests ----------------------------------------------------------------------
def is_array_v(x):
    """Whether x is a pbc array type or instance (flat, vector, matrix, tensor, pointer)."""
    return _meta(x) is not None


def _vt_test(types, python, doc):
    """A trait: x's element type is in `types`, or x is (of) one of the Python types."""
    def trait(x):
        m = _meta(x)
        return m.vt in types if m is not None else _tp(x) in python
    trait.__doc__ = f'Whether x is (of) a {doc} pbc array type or Python type.'
    return trait


is_float_v = _vt_test(_FLOAT, (float,), 'floating point')
is_half_v = _vt_test({VarType.Float16}, (), 'half precision')
is_integral_v = _vt_test(_INTEGRAL, (int,), 'integer')     # bool is not, as in Dr.Jit
is_arithmetic_v = _vt_test(_FLOAT | _INTEGRAL, (int, float), 'integer or floating point')
is_signed_v = _vt_test(_SIGNED, (int, float), 'signed')
is_unsigned_v = _vt_test(_UNSIGNED, (bool,), 'unsigned (or mask)')
is_mask_v = _vt_test({VarType.Bool}, (bool,), 'mask')


def _kind_test(kind, doc):
    def trait(x):
        m = _meta(x)
        return m is not None and m.kind == kind
    trait.__doc__ = f'Whether x is (of) a pbc {doc} type.'
    return trait


is_vector_v = _kind_test('vector', 'static vector')
is_matrix_v = _kind_test('matrix', 'matrix')
is_tensor_v = _kind_test('tensor', 'tensor')


def is_special_v(x):
    """Whether x is (of) a type with special arithmetic: matrices in pbc (Dr.Jit's complex
    and quaternion types too)."""
    return is_matrix_v(x)


def is_complex_v(x):
    """Always False: pbc has no complex types."""
    return False


def is_quaternion_v(x):
    """Always False: pbc has no quaternion types."""
    return False


def is_dynamic_v(x):
    """Whether x is (of) a dynamically sized type: flat arrays, vectors of them, tensors."""
    m = _meta(x)
    return m is not None and (m.kind == 'tensor' or Dynamic in m.shape)


def is_static_array_v(x):
    """Whether x is (of) an array type with a static outer size (vectors, matrices)."""
    m = _meta(x)
    return m is not None and m.kind != 'tensor' and m.shape[0] != Dynamic


def is_jit_v(x):
    return backend_v(x) != JitBackend.Invalid


def is_llvm_v(x):
    return backend_v(x) == JitBackend.LLVM


def is_cuda_v(x):
    return backend_v(x) == JitBackend.CUDA


def is_diff_v(x):
    """Whether x is (of) a differentiable array type: every pbc array type, as every type in
    Dr.Jit's AD namespaces (pbc.llvm is also pbc.llvm.ad)."""
    return _meta(x) is not None


def is_struct_v(x):
    """Whether x's type declares DRJIT_STRUCT (a PyTree with named fields)."""
    return hasattr(_tp(x), 'DRJIT_STRUCT')


# ---- array properties ----------------------------------------------------------------------
def type_v(x):
    m = _meta(x)
    return VarType(m.vt) if m is not None else VarType.Void


def backend_v(x):
    m = _meta(x)
    return m.backend if m is not None else JitBackend.Invalid


def size_v(x):
    """The static size of x's outer dimension: Dynamic (-1) for flat arrays, 1 for non-array
    values, 0 for tensors (as Dr.Jit, whose tensor types carry no static shape)."""
    m = _meta(x)
    if m is None:
        return 1
    return m.shape[0] if m.shape else 0


def depth_v(x):
    """Nesting depth: 1 for flat arrays, 2 for vectors, 3 for matrices, 0 for tensors and
    non-array values."""
    m = _meta(x)
    return len(m.shape) if m is not None else 0


def itemsize_v(x):
    """Bytes per element of pbc array (type) x."""
    m = _meta(x)
    if m is None:
        raise TypeError(f'pbc.itemsize_v(): {_tp(x).__name__} is not a pbc array type')
    return _TYPES[m.vt][2]


# ---- related types -------------------------------------------------------------------------
def value_t(x):
    """The type of x[0]: a vector's component type, a matrix's row type, a flat array's or a
    tensor's Python scalar type, a pointer array's base class; x's type if not an array."""
    tp = _tp(x)
    m = _array_meta(tp)
    if m is None:
        return tp
    attr = {'vector': 'Value', 'matrix': 'Row', 'pointer': 'Base'}.get(m.kind)
    return getattr(tp, attr) if attr else _TYPES[m.vt][3]


def scalar_t(x):
    """The element type at the lowest level (a Python type)."""
    tp = _tp(x)
    while is_array_v(tp):
        tp = value_t(tp)
    return tp


def array_t(x):
    """The plain array form: a tensor's flat storage type; a matrix's nested array type
    (which pbc does not have); the type itself otherwise."""
    tp = _tp(x)
    m = _array_meta(tp)
    if m is None or m.kind not in ('matrix', 'tensor'):
        return tp
    if m.kind == 'tensor':
        return _type_for(m._replace(kind='', shape=(Dynamic,)))
    return _type_for(m._replace(kind='vector'))


def leaf_t(x):
    """The innermost type that is still a pbc array (Float for Array3f, Matrix3f, TensorXf)."""
    tp = _tp(x)
    if not is_array_v(tp):
        return tp
    while is_array_v(value_t(tp)):
        tp = value_t(tp)
    return array_t(tp)


def _plain_kind(m):
    # Masks and re-typed pointers are plain arrays of the same shape
    return {'matrix': 'vector', 'pointer': ''}.get(m.kind, m.kind)


def mask_t(x):
    """The type of comparisons of x (bool for non-array values)."""
    tp = _tp(x)
    m = _array_meta(tp)
    if m is None:
        return bool
    return _type_for(m._replace(vt=VarType.Bool, kind=_plain_kind(m)), like=tp)


def replace_type_t(x, vt):
    """x's array type with element type vt (x's type unchanged if it is not an array)."""
    tp = _tp(x)
    m = _array_meta(tp)
    if m is None:
        return tp
    kind = '' if m.kind == 'pointer' else m.kind
    return _type_for(m._replace(vt=VarType(vt), kind=kind), like=tp)


def reinterpret_array_t(x, vt):
    """As replace_type_t; for non-array values, the Python scalar type of vt."""
    if not is_array_v(x):
        return bool if vt == VarType.Bool else float if vt in _FLOAT else int
    return replace_type_t(x, vt)


def _retype(vt, doc):
    def trait(x):
        return reinterpret_array_t(x, vt)
    trait.__doc__ = f'x with {doc} elements (the Python scalar type for non-array values).'
    return trait


bool_array_t = _retype(VarType.Bool, 'Bool')
int8_array_t = _retype(VarType.Int8, 'Int8')
uint8_array_t = _retype(VarType.UInt8, 'UInt8')
int32_array_t = _retype(VarType.Int32, 'Int32')
uint32_array_t = _retype(VarType.UInt32, 'UInt32')
int64_array_t = _retype(VarType.Int64, 'Int64')
uint64_array_t = _retype(VarType.UInt64, 'UInt64')
float16_array_t = _retype(VarType.Float16, 'Float16')
float32_array_t = _retype(VarType.Float32, 'Float32')
float64_array_t = _retype(VarType.Float64, 'Float64')


def _same_size(table, python, doc):
    def trait(x):
        if not is_array_v(x):
            return python
        size = itemsize_v(x)
        if size not in table:
            raise TypeError(f'pbc.{doc}_array_t(): no {doc} type has {size}-byte elements')
        return replace_type_t(x, table[size])
    trait.__doc__ = f'x with {doc} elements of the same size ({python.__name__} for ' \
                    'non-array values).'
    return trait


uint_array_t = _same_size({1: VarType.UInt8, 2: VarType.UInt16, 4: VarType.UInt32,
                           8: VarType.UInt64}, int, 'uint')
int_array_t = _same_size({1: VarType.Int8, 2: VarType.Int16, 4: VarType.Int32,
                          8: VarType.Int64}, int, 'int')
float_array_t = _same_size({2: VarType.Float16, 4: VarType.Float32, 8: VarType.Float64},
                           float, 'float')


def diff_array_t(x):
    """x's type: pbc's arrays are differentiable themselves."""
    return _tp(x)


def detached_t(x):
    """x's type: pbc has no separate non-differentiable array types."""
    return _tp(x)


def tensor_t(x):
    """The tensor type of x's element type and backend (None for non-array values)."""
    m = _meta(x)
    if m is None:
        return None
    return _type_for(_Meta(m.vt, m.backend, 'tensor'), like=_tp(x))


def matrix_t(x):
    """The matrix type of vector (or matrix) type x; None where Dr.Jit has none either
    (its matrices hold floating point values)."""
    m = _meta(x)
    if m is None or m.kind not in ('vector', 'matrix') or m.vt not in _FLOAT:
        return None
    return _type_for(m._replace(kind='matrix'), like=_tp(x))


def replace_shape_t(x, shape, kind=None):
    """x's array type with the given shape (-1 = dynamic) and, optionally, kind 'array' or
    'matrix'."""
    tp = _tp(x)
    m = _array_meta(tp)
    if m is None:
        return tp
    if len(shape) >= 4:
        raise ValueError('pbc.replace_shape_t(): len(shape) must be < 4')
    kinds = {None: _plain_kind(m), 'array': 'vector', 'matrix': 'matrix'}
    if kind not in kinds:
        if kind in ('complex', 'quaternion'):
            raise TypeError(f'pbc has no {kind} types')
        raise ValueError("pbc.replace_shape_t(): kind must be 'array' or 'matrix'")
    shape = tuple(Dynamic if s == -1 else int(s) for s in shape)
    return _type_for(m._replace(kind=kinds[kind], shape=shape), like=tp)


# ---- expr_t --------------------------------------------------------------------------------
def _general_meta(x):
    """The record of x for promotion (arrays, Python and NumPy scalars, sequences, NumPy
    arrays, and the types int, float, bool), or None if x does not take part."""
    tp = _tp(x)
    m = _array_meta(tp)
    if m is not None:
        return m
    if tp in _PYTHON:
        return _Meta(_PYTHON[tp])
    if isinstance(x, type):
        return None
    if isinstance(x, (np.bool_, np.integer, np.floating)):   # weak, as pbc's operators
        return _Meta(VarType.Bool if isinstance(x, np.bool_) else
                     _BASE_INT if isinstance(x, np.integer) else _BASE_FLOAT)
    if isinstance(x, (list, tuple)):
        return _sequence_meta(x)
    if isinstance(x, np.ndarray):
        vt = _FROM_NUMPY.get(x.dtype.str[1:])
        if vt is None or not 1 <= x.ndim <= 4:
            return None
        return _Meta(vt, shape=tuple(Dynamic if s > 4 else s for s in x.shape), seq=True)
    return None


def _sequence_meta(x):
    """A list or tuple: the promotion of its entries, with its length as outer size."""
    m, n = _Meta(VarType.Void), len(x)
    for item in x:
        mi = _general_meta(item)
        if mi is None or isinstance(item, type) or len(mi.shape) >= 3:
            return None
        mi = mi._replace(shape=(Dynamic if n > 4 else n,) + mi.shape)
        m = m if m == mi else _promote(m, mi)
        if m is None:
            return None
    return m._replace(seq=True)


def _promote(a, b):
    """The record of an operation on a and b (Dr.Jit's rules), or None if incompatible."""
    if a.backend and b.backend and a.backend != b.backend:
        return None
    kinds = {a.kind, b.kind} - {''}
    if len(kinds) > 1 or 'pointer' in kinds:
        return None
    kind = kinds.pop() if kinds else ''
    backend, vt = max(a.backend, b.backend), max(a.vt, b.vt)
    if kind == 'tensor':
        return _Meta(vt, backend, kind)

    def static(m):
        # The static sizes: a JIT type's last size is its lanes, and so is a sequence's
        # innermost one when it meets a JIT type.
        lanes = m.shape and (m.backend or (backend and m.seq))
        return m.shape[:-1] if lanes else m.shape

    sa, sb = static(a), static(b)
    shape = []
    for i in range(max(len(sa), len(sb))):
        x, y = (s[i] if i < len(s) else 1 for s in (sa, sb))
        if x != y and Dynamic not in (x, y) and 1 not in (x, y):
            return None
        shape.append(x if x == y else Dynamic if Dynamic in (x, y) else max(x, y))
    if backend:
        shape.append(Dynamic)
    return _Meta(vt, backend, kind, tuple(shape))


def _expr_meta(a, b):
    """The record of an arithmetic operation on a and b; TypeError if they do not combine."""
    ma, mb = _general_meta(a), _general_meta(b)
    m = _promote(ma, mb) if ma is not None and mb is not None else None
    if m is None or m.vt == VarType.Void:
        raise TypeError(f'pbc.expr_t(): incompatible types "{_tp(a).__name__}" and '
                        f'"{_tp(b).__name__}"')
    return m._replace(vt={_BASE_INT: VarType.Int32, _BASE_FLOAT: VarType.Float32}.get(m.vt,
                                                                                     m.vt))


def _expr2(a, b):
    ta, tb = _tp(a), _tp(b)
    if ta is tb:
        return ta
    m = _expr_meta(a, b)
    for t in (ta, tb):
        if _array_meta(t) == m:
            return t
    return _type_for(m)


def expr_t(*args):
    """The type of an arithmetic expression on args (pbc arrays, Python values, sequences,
    NumPy arrays, or their types), following the promotion rules of pbc's operators: a
    Python int adopts an array's type, a Python float makes integer arrays Float, the wider
    element type wins (Int < UInt < Int64 < UInt64 < Float < Float64, Bool below all),
    vectors and tensors promote their elements. TypeError if they do not combine."""
    if not args:
        return None
    return functools.reduce(_expr2, args[1:], _tp(args[0]) if len(args) == 1 else args[0])


# ---- shape ---------------------------------------------------------------------------------
def shape(x):
    """Dr.Jit's dr.shape: (3, N) for an Array3f of N lanes, (3, 3, N) for a Matrix3f, (N,)
    for a flat array, a tensor's shape, () for a scalar, and the sizes of nested sequences
    (entries of size 1 broadcast). RuntimeError for ragged input."""
    if isinstance(x, Tensor):
        return tuple(x.shape)
    if isinstance(x, np.ndarray):
        return x.shape
    ndim, o = 0, x
    while True:                      # the depth: follow first entries down
        m = _meta(o)
        if m is not None:
            ndim += len(m.shape)
            break
        n = _length(o)
        if n is None:
            break
        ndim += 1
        if n == 0:
            break
        o = o[0]
    sizes = [0] * ndim
    if not _fill(x, sizes, 0):
        raise RuntimeError('pbc.shape(): the input is ragged (i.e., it does not have a '
                           'consistent size).')
    return tuple(sizes)


def _length(x):
    if isinstance(x, (str, bytes, dict)) or _meta(x) is not None:
        return None
    try:
        return len(x)
    except TypeError:
        return None


def _fill(x, sizes, i):
    """Merges x's sizes into sizes[i:] (sizes of 1 and unset (0) ones broadcast); False if
    x does not fit."""
    m = _meta(x)
    if isinstance(x, Tensor):
        raise RuntimeError('pbc.shape(): unsupported type in input (a tensor inside a '
                           'sequence)!')
    if m is not None:
        n = m.shape[0] if m.shape[0] != Dynamic else len(x)
        parts = x._pbc_children() if m.kind in ('vector', 'matrix') else None
    else:
        n = _length(x)
        if n is None:
            return i == len(sizes)
        parts = x
    if i == len(sizes):
        return False
    if n != sizes[i]:
        if n != 1 and sizes[i] not in (0, 1):
            return False
        sizes[i] = max(n, sizes[i])
    if parts is None:                # a flat array: its lanes are the last dimension
        return i == len(sizes) - 1 or n == 0
    return all(_fill(parts[j], sizes, i + 1) for j in range(n))
