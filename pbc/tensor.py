"""Tensors: a flat JIT array plus a shape (C order), as Dr.Jit's TensorX types.

Element-wise operations broadcast shapes as NumPy does. An operand whose shape differs from
the result's is read through an index expression and a gather (symbolic: nothing is copied or
evaluated). Indexing is in pbc/tensor_index.py; reshaping and axis permutations are in
pbc/tensor_shape.py.
"""

import math
import operator

import numpy as np

from . import _runtime
from ._runtime import ArrayBase
from .ad.api import GradAttribute

_SCALARS = (bool, int, float, np.generic)
_KINDS = {'b': 'bool', 'i': 'int32', 'u': 'int32', 'f': 'float32'}   # weak types, as flat ops


class Tensor:
    """An n-dimensional array: `array` (flat, C order) and `shape` (a tuple of ints).

    Tensor(array=None, shape=None, flip_axes=False): from a NumPy array or nested sequence
    (its shape), a Python number (shape ()), a flat array (1-D, or `shape`), another tensor
    (a conversion of its elements), or a static vector or matrix (its shape, lanes last; with
    flip_axes, the axes reversed). Tensor() is empty, of shape (0,)."""
    Array = None          # the flat class holding the elements
    __slots__ = ('array', 'shape')
    __array_priority__ = 200
    grad = GradAttribute()

    def __init__(self, array=None, shape=None, flip_axes=False):
        self.array, self.shape = _convert(type(self), array, shape, flip_axes)

    @classmethod
    def _new(cls, array, shape):
        """A tensor around flat `array` (not copied) of `shape` (not checked)."""
        out = object.__new__(cls)
        out.array, out.shape = array, shape
        return out

    def _pbc_children(self):
        return [self.array]

    def _pbc_rebuild(self, children):
        return self._new(children[0], self._shape_for(children[0]))

    def _pbc_assign(self, children):
        self.array = children[0]
        self.shape = self._shape_for(children[0])

    def _shape_for(self, array):
        """This tensor's shape for new elements `array`: the same, or (n,) for n elements
        where it had one element (loop state broadcast to the loop's width n) or one
        dimension (a compressed loop's state, gathered to the lanes still in it and written
        back)."""
        if len(array) == int(np.prod(self.shape)) or (
                int(np.prod(self.shape)) != 1 and len(self.shape) != 1):
            return self.shape
        return (len(array),)

    # ---- shape and values ----
    @property
    def ndim(self):
        return len(self.shape)

    def __len__(self):
        return self.shape[0] if self.shape else 0       # 0 for a 0-d tensor, as Dr.Jit

    @property
    def state(self):
        return self.array.state

    @property
    def index(self):
        return self.array.index

    def __iter__(self):
        if not self.shape:
            raise TypeError('pbc: iteration over a 0-d tensor')
        return (self[i] for i in range(self.shape[0]))

    def item(self):
        """The one element of a one-element tensor, as a Python number."""
        if len(self.array) != 1:
            raise RuntimeError(f'pbc: item() can only convert arrays of length 1 (this '
                               f'tensor has shape {self.shape})')
        return self.array[0]

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __bool__(self):
        if self.array.Type != 'bool':
            raise TypeError(f'pbc: bool() needs a TensorXb, not {type(self).__name__}')
        if len(self.array) != 1:
            raise ValueError(f'pbc: the truth value of a tensor of shape {self.shape} is '
                             'ambiguous; use pbc.all(), pbc.any() or pbc.none()')
        return bool(self.array[0])

    def numpy(self):
        return self.array.numpy().reshape(self.shape)

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def __repr__(self):
        from .printing import array_repr
        return array_repr(self)

    # Identity hash (== compares elements), as for flat arrays.
    def __hash__(self):
        return id(self) >> 4

    # ---- element-wise operators (more are generated below) ----
    def _inplace(self, r):
        """self updated to r (t += 1 changes the tensor object, as in Dr.Jit). Its array
        object changes too, so that a name bound to t.array sees the new values, as Dr.Jit's
        t.array (a reference into the tensor) does. A result of another type (TensorXi +=
        0.5) rebinds the name instead."""
        if r is NotImplemented or type(r) is not type(self):
            return r
        _assign(self, r)
        return self

    def __neg__(self): return _unary(self, operator.neg)
    def __pos__(self): return _unary(self, operator.pos)
    def __invert__(self): return _unary(self, operator.invert)
    def __abs__(self): return _unary(self, abs)

    # ---- indexing and axes (pbc/tensor_index.py, pbc/tensor_shape.py) ----
    def __getitem__(self, key):
        from .tensor_index import getitem
        return getitem(self, key)

    def __setitem__(self, key, value):
        from .tensor_index import setitem
        setitem(self, key, value)

    @property
    def T(self):
        """The transpose of a 2-D tensor (other ranks: TypeError, as Dr.Jit; see .mT and
        pbc.transpose)."""
        if self.ndim != 2:
            raise TypeError(f"pbc: '.T' is only defined for 2-D tensors (this one has shape "
                            f"{self.shape}); use '.mT' to swap the last two axes or "
                            'pbc.transpose() to reverse them all')
        return self.mT

    @property
    def mT(self):
        """The tensor with its last two axes swapped."""
        if self.ndim < 2:
            raise TypeError(f"pbc: '.mT' requires at least 2 dimensions (this tensor has "
                            f'shape {self.shape})')
        from .tensor_shape import permute
        n = self.ndim
        return permute(self, tuple(range(n - 2)) + (n - 1, n - 2))


def _assign(dst, src):
    """Tensor dst takes src's values and shape in place."""
    if dst.array.index:
        dst.array._assign(src.array)
    else:
        dst.array = src.array
    dst.shape = src.shape


def _unary(t, fn):
    r = fn(t.array)
    return tensor_type(type(r))._new(r, t.shape)


_COMPARE = {'eq': operator.eq, 'ne': operator.ne, 'lt': operator.lt, 'le': operator.le,
            'gt': operator.gt, 'ge': operator.ge}


def _operators():
    from .vector import _BINARY
    for name, fn in _BINARY.items():
        setattr(Tensor, f'__{name}__', lambda s, o, fn=fn: elementwise(fn, (s, o), True))
        setattr(Tensor, f'__r{name}__', lambda s, o, fn=fn: elementwise(fn, (o, s), True))
        setattr(Tensor, f'__i{name}__',
                lambda s, o, fn=fn: s._inplace(elementwise(fn, (s, o), True)))
    for name, fn in _COMPARE.items():
        setattr(Tensor, f'__{name}__', lambda s, o, fn=fn: elementwise(fn, (s, o), True))


_operators()

_TENSORS = {}


def tensor_type(flat_cls):
    """The tensor class whose elements are of flat class `flat_cls`."""
    try:
        return _TENSORS[flat_cls]
    except KeyError:
        raise TypeError(f'pbc has no tensor type of {flat_cls.__name__} elements') from None


# ---- construction ----------------------------------------------------------------------
def _convert(cls, data, shape, flip_axes):
    """(flat array, shape) of cls(data, shape, flip_axes)."""
    from .vector import Matrix, StaticArray
    A, name = cls.Array, f'pbc: {cls.__name__}()'
    nested = isinstance(data, (StaticArray, Matrix))
    if flip_axes and (shape is not None or not nested):
        raise TypeError(f'{name}: flip_axes=True needs a static vector or matrix (e.g. '
                        'Array3f) and no shape')
    if data is None:
        if shape is not None:
            raise TypeError(f'{name}: Input array must be specified (along with the shape)')
        return _runtime.literal(A, 0, 0), (0,)
    if shape is not None:
        shape = _shape_tuple(shape, name)
        if isinstance(data, Tensor):
            if data.ndim != 1:
                raise TypeError(f'{name}: with a shape, the input must be flat (use '
                                'pbc.reshape() to reshape a tensor)')
            data = data.array
        flat = _flat(A, data, name)
        if len(flat) != math.prod(shape):
            raise TypeError(f'{name}: Input array has the wrong number of entries (got '
                            f'{len(flat)}, expected {math.prod(shape)}) for shape {shape}')
        return flat, shape
    if isinstance(data, Tensor):
        return A(data.array), data.shape
    if isinstance(data, ArrayBase):
        return A(data), (len(data),)
    if nested:
        t = _from_nested(cls, data)
        if flip_axes:
            from .tensor_shape import permute
            t = permute(t, tuple(reversed(range(t.ndim))))
        return t.array, t.shape
    if isinstance(data, _SCALARS):
        return A(data), ()
    arr = _host_array(data, name)
    return A(arr.reshape(-1)) if arr.ndim else A(arr), arr.shape


def _shape_tuple(shape, name):
    try:
        shape = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else \
            tuple(operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(f'{name}: a shape is a tuple of ints, not {shape!r}') from None
    if any(s < 0 for s in shape):
        raise ValueError(f'{name}: negative dimension in shape {shape}')
    return shape


def _flat(A, data, name):
    """data (a flat array, a 1-D sequence or a number) as a flat array of class A."""
    if isinstance(data, (ArrayBase,) + _SCALARS):
        return A(data)
    arr = _host_array(data, name)
    if arr.ndim > 1:
        raise TypeError(f'{name}: with a shape, the input must be flat (got shape {arr.shape})')
    return A(arr)


def _host_array(data, name):
    """A NumPy array of nested sequence or array `data`, of booleans or numbers."""
    try:
        arr = np.asarray(data)
    except ValueError:
        arr = None
    if arr is None or arr.dtype.kind not in 'biuf':
        raise TypeError(f'{name}: cannot convert {type(data).__name__} to a tensor (ragged '
                        'input, or elements that are not numbers)')
    return arr


def _from_nested(cls, x):
    """Tensor of static vector or matrix x, of shape pbc.shape(x) (lanes last)."""
    from .routines import broadcast_lanes, scatter
    from .traits import shape as shape_of
    from .tree import leaves
    shape = shape_of(x)
    parts, n = list(leaves(x)), shape[-1]
    A = cls.Array
    UInt32 = _runtime.class_for(A, 'uint32')
    out = _runtime.literal(A, 0, len(parts) * n)
    lane = _runtime.counter(UInt32, n)
    for j, p in enumerate(parts):
        p = broadcast_lanes(A(p), n)
        scatter(out, p, lane + j * n)
    return cls._new(out, shape)


# ---- broadcasting ----------------------------------------------------------------------
def broadcast_shapes(*shapes):
    """The shape that operands of these shapes broadcast to (NumPy's rules); RuntimeError
    naming two shapes that do not combine."""
    out = shapes[0]
    for s in shapes[1:]:
        n = max(len(out), len(s))
        a, b = (1,) * (n - len(out)) + out, (1,) * (n - len(s)) + s
        if any(x != y and x != 1 and y != 1 for x, y in zip(a, b)):
            raise RuntimeError(f'pbc: operands have incompatible shapes: {out} and {s}.')
        out = tuple(y if x == 1 else x for x, y in zip(a, b))
    return out


def c_strides(shape):
    """The element strides of a C-order array of `shape`."""
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return tuple(reversed(out))


def strided_index(UInt32, dims, base=0, source_size=None):
    """The flat index `base + sum(coordinate_k * stride_k)` of each element of an array
    whose axes are `dims` = [(size, stride), ...] (outermost first, C order), as a UInt32
    expression of the elements' counter. None where that is 0, 1, ..., source_size - 1,
    that is, where reading through it would just copy a source of that size."""
    merged = []
    for size, stride in dims:
        if size == 1:
            continue                              # a single coordinate: 0
        if merged and merged[-1][1] == size * stride:
            merged[-1] = (merged[-1][0] * size, stride)    # one run of equal steps
        else:
            merged.append((size, stride))
    total = math.prod(size for size, _ in merged)
    if total == 0:
        return _runtime.literal(UInt32, 0, 0)
    if base == 0 and total == source_size and merged in ([(total, 1)], []):
        return None
    i = _runtime.counter(UInt32, total)
    idx, inner = None, 1
    for size, stride in reversed(merged):
        if stride:
            c = i if inner == 1 else i // inner
            if inner * size != total:             # the outermost axis needs no modulo
                c = c % size
            c = c if stride == 1 else c * (stride % 2**32)     # negative steps wrap
            idx = c if idx is None else idx + c
        inner *= size
    if idx is None:
        return _runtime.literal(UInt32, base, total)
    return idx + base if base else idx


def expand(flat, shape, out_shape):
    """The elements of `flat` (a flat array of `shape`, or a Python number) broadcast to
    out_shape, as a flat array (a number stays as it is)."""
    if shape == out_shape or not isinstance(flat, ArrayBase) or len(flat) == 1:
        return flat                               # width-1 arrays broadcast by themselves
    pad = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    strides = c_strides(pad)
    dims = [(n, s if m == n else 0) for n, m, s in zip(out_shape, pad, strides)]
    idx = strided_index(_runtime.class_for(flat, 'uint32'), dims, 0, len(flat))
    if idx is None:
        return flat
    from .routines import gather
    return gather(type(flat), flat, idx)


def operand(x, ref):
    """(flat value, shape) of x as an operand of an element-wise tensor operation, or None
    if x is none; `ref` (a flat array) gives the backend for sequences."""
    from .vector import Matrix, StaticArray
    if isinstance(x, Tensor):
        return x.array, x.shape
    if isinstance(x, ArrayBase):
        return x, (len(x),)                       # a flat array acts as a 1-D tensor
    if isinstance(x, _SCALARS):
        return x, ()
    if isinstance(x, (list, tuple, np.ndarray)):
        arr = _host_array(x, 'pbc')
        if arr.size == 1:                         # a number keeps its weak type
            return arr.reshape(-1)[0].item(), arr.shape
        # as an array of the weak type flat operations give a sequence of these elements
        cls = _runtime.class_for(ref, _KINDS[arr.dtype.kind])
        return cls(arr.reshape(-1)), arr.shape
    if isinstance(x, (StaticArray, Matrix)):
        raise RuntimeError(f'pbc: Incompatible arguments: a tensor does not combine with '
                           f'{type(x).__name__} (convert one into the other)')
    return None


def elementwise(fn, args, strict=False):
    """fn (a function of flat arrays and Python numbers) applied to the elements of its
    arguments (tensors and other operands, see operand()) broadcast together; the result is
    a tensor (or a tuple of them) of the broadcast shape. An argument that is no operand
    makes this NotImplemented with `strict` (for operators), else is passed on as it is."""
    ref = next(a for a in args if isinstance(a, Tensor)).array
    ops = []
    for a in args:
        o = operand(a, ref)
        if o is None:
            if strict:
                return NotImplemented
            o = (a, ())
        ops.append(o)
    shape = broadcast_shapes(*[s for _, s in ops])
    r = fn(*[expand(f, s, shape) for f, s in ops])
    if r is NotImplemented:
        return r
    return tuple(_result(x, shape) for x in r) if isinstance(r, tuple) else _result(r, shape)


def _result(r, shape):
    n = math.prod(shape)
    if len(r) != n:
        # only a width-1 result can differ: every input was a number or a width-1 array
        from .routines import broadcast_lanes
        r = broadcast_lanes(r, n)
    return tensor_type(type(r))._new(r, shape)


# ---- reductions ------------------------------------------------------------------------
_UNROLL = 16        # reduce this many elements per output with straight-line code


def reduce(name, t, axis=None, keepdims=False):
    """The reduction `name` ('sum', 'prod', 'min', 'max', 'all', 'any', 'mean') of tensor t
    over `axis` (an int, a tuple of them, None or ... for all), as NumPy: a tensor (of shape
    () for a full reduction; with keepdims, reduced axes stay as 1s)."""
    from .reductions import _EMPTY, _lanes
    where, ndim, A = f'pbc.{name}()', t.ndim, type(t.array)
    # as Dr.Jit: axis 0 of a 0-d tensor reduces nothing
    axes = () if ndim == 0 and axis == 0 else normalize_axes(axis, ndim, where)
    if name in ('all', 'any') and A.Type != 'bool':
        raise TypeError(f'{where}: needs a TensorXb, not {type(t).__name__}')
    kept = [a for a in range(ndim) if a not in axes]
    out_shape = tuple(t.shape[a] for a in kept)
    n, m = math.prod(t.shape[a] for a in axes), math.prod(out_shape)
    op = 'sum' if name == 'mean' else name
    if not axes:
        r = A(t.array)
    elif n == 0:
        if op not in _EMPTY:
            raise ValueError(f'{where}: zero-size reduction (an axis of size 0 in shape '
                             f'{t.shape}) has no identity')
        r = _runtime.literal(A, _EMPTY[op], m)
    elif m == 0:
        r = _runtime.literal(A, 0, 0)
    elif not kept:
        r = _lanes(op, t.array)
    else:
        r = _reduce_axes(op, t, axes)
    if name == 'mean':
        if not r.Type.startswith('float'):
            r = _runtime.class_for(r, 'float32')(r)
        r = r / n if n else _runtime.literal(type(r), math.nan, m)
    if keepdims:
        out_shape = tuple(1 if a in axes else s for a, s in enumerate(t.shape))
    return tensor_type(type(r))._new(r, out_shape)


def normalize_axes(axis, ndim, where):
    """`axis` (an int, a tuple of ints, None or ... for all) as sorted non-negative axes;
    RuntimeError for one out of range."""
    if axis is None or axis is Ellipsis:
        return tuple(range(ndim))
    items = axis if isinstance(axis, tuple) else (axis,)
    out = set()
    for a in items:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise RuntimeError(f"{where}: 'axis' must be an int, a tuple of ints or None, "
                               f'not {axis!r}')
        if not -ndim <= a < ndim:
            raise RuntimeError(f'{where}: out-of-bounds axis {a} for a tensor with {ndim} '
                               'dimensions')
        out.add(int(a) % ndim)
    return tuple(sorted(out))


def _reduce_axes(op, t, axes):
    """Reduces `axes` of t (not all of them, none empty): each output element combines its
    inputs, read by gathers (in a symbolic loop over them where there are many)."""
    from .control import while_loop
    from .reductions import _OPS
    from .routines import gather
    A = type(t.array)
    UInt32 = _runtime.class_for(A, 'uint32')
    strides = c_strides(t.shape)
    kept = [(t.shape[a], strides[a]) for a in range(t.ndim) if a not in axes]
    red = [(t.shape[a], strides[a]) for a in axes]
    base = strided_index(UInt32, kept)          # each output's first input
    n = math.prod(size for size, _ in red)
    combine = _OPS[op][0]

    def offset(j):                              # of the j-th input in a group
        off = 0
        for size, stride in reversed(red):
            off = off + (j % size) * stride
            j = j // size
        return off

    if n <= _UNROLL:
        acc = gather(A, t.array, base)
        for j in range(1, n):
            acc = combine(acc, gather(A, t.array, base + offset(j)))
        return acc
    first = gather(A, t.array, base)
    _, acc = while_loop((UInt32(1), first), lambda j, acc: j < n,
                        lambda j, acc: (j + 1, combine(acc, gather(
                            A, t.array, base + offset(j)))))
    return acc


def make_tensor_types(flat, module_name):
    types = {}
    for name, comp in (('TensorXf', 'Float32'), ('TensorXf64', 'Float64'),
                       ('TensorXu', 'UInt32'), ('TensorXi', 'Int32'), ('TensorXb', 'Bool')):
        cls = type(name, (Tensor,), {'Array': flat[comp], '__slots__': (),
                                     '__module__': module_name, '__qualname__': name})
        _TENSORS[flat[comp]] = cls
        types[name] = cls
    return types
