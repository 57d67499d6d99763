"""Indexing of tensors, as NumPy's basic and integer-array indexing (which Dr.Jit follows):
integers, slices (negative steps too), `...`, None (a new axis of size 1), and 1-D integer
arrays (flat UInt32/Int32 arrays, 1-D tensors, lists, NumPy arrays) along an axis. Several
integer arrays broadcast together and select element-wise: their common axis stays in place
if they (with any integers) are adjacent in the key, else it comes first.

t[key] gathers from t's flat array and t[key] = v scatters into it, at indices computed from
the key (symbolic: nothing is evaluated). A Bool mask (a TensorXb or Bool array) as the whole
key selects as Dr.Jit does: t[mask] = v sets the masked elements (NumPy's boolean indexing,
which compacts, is not supported), and t[mask] is t (so that t[mask] += v works).
"""

import math

import numpy as np

from . import _runtime
from ._runtime import ArrayBase
from .tensor import (
    Tensor,
    _assign,
    broadcast_shapes,
    c_strides,
    elementwise,
    expand,
    operand,
    strided_index,
)

_INDEX_TYPES = ('int32', 'uint32', 'int64', 'uint64')


def _is_mask(key):
    return isinstance(key, (Tensor, ArrayBase)) and getattr(key, 'array', key).Type == 'bool'


def getitem(t, key):
    A = type(t.array)
    if _is_mask(key):
        return type(t)._new(A(t.array), t.shape)
    shape, idx = _slice_index(_runtime.class_for(A, 'uint32'), t.shape, key)
    if idx is None:
        return type(t)._new(A(t.array), shape)
    from .routines import gather
    return type(t)._new(gather(A, t.array, idx), shape)


def setitem(t, key, value):
    from .routines import scatter, select
    A = type(t.array)
    if _is_mask(key):
        r = elementwise(select, (key, value, t))
        if r.shape != t.shape:
            raise RuntimeError(f'pbc: masked assignment to a tensor of shape {t.shape} with '
                               f'a mask and value that broadcast to {r.shape}')
        _assign(t, type(t)._new(A(r.array), r.shape))
        return
    UInt32 = _runtime.class_for(A, 'uint32')
    shape, idx = _slice_index(UInt32, t.shape, key)
    o = operand(value, t.array)
    if o is None:
        raise TypeError(f'pbc: cannot assign a {type(value).__name__} to tensor elements')
    flat, vshape = o
    while len(vshape) > len(shape) and vshape[0] == 1:     # as NumPy: leading 1s drop
        vshape = vshape[1:]
    if not _fits(vshape, shape):
        raise RuntimeError(f'pbc: cannot assign a value of shape {o[1]} to tensor elements '
                           f'of shape {shape}')
    flat = A(expand(flat, vshape, shape))
    n = math.prod(shape)
    if idx is None and len(flat) == n:
        t.array._assign(flat)                     # every element, in order: a replacement
    elif n:
        scatter(t.array, flat, _runtime.counter(UInt32, n) if idx is None else idx)


def slice_index(dtype, shape, indices):
    """(out_shape, index), as Dr.Jit's: the shape of t[indices] for a tensor t of `shape`,
    and the flat index into t's array of each of its elements (of type dtype, a UInt32
    array type). Errors are RuntimeErrors, as there."""
    if not (isinstance(dtype, type) and issubclass(dtype, ArrayBase) and
            dtype.Type == 'uint32'):
        raise TypeError(f'pbc.slice_index(): dtype must be a flat UInt32 array type, not '
                        f'{dtype!r}')
    try:
        out_shape, idx = _slice_index(dtype, tuple(shape), tuple(indices))
    except (IndexError, TypeError) as e:
        raise RuntimeError(f"pbc.slice_index(): {str(e).removeprefix('pbc: ')}") from e
    return out_shape, _runtime.counter(dtype, math.prod(shape)) if idx is None else idx


def _slice_index(UInt32, shape, key):
    """(out_shape, index) of tensor indexing t[key] for t of `shape`: the shape of the result
    and the flat index into t's array of each of its elements (a UInt32 expression), or None
    where the result is t's array as it is."""
    key = key if isinstance(key, tuple) else (key,)
    comps = _components(UInt32, shape, key)
    strides = c_strides(shape)
    arrays = [c for c in comps if c[0] == 'array']
    length = _broadcast_lengths([len(c[3]) for c in arrays])
    # The output axes: (size, input stride, is the arrays' common axis)
    axes, base = [], 0
    for kind, axis, start, data in comps:
        if kind == 'new':
            axes.append((1, 0, False))
        elif kind == 'int':
            base += start * strides[axis]
        elif kind == 'slice':
            step, count = data
            base += start * strides[axis]
            axes.append((count, step * strides[axis], False))
    if arrays:
        # NumPy's rule: integers count as array indices (of length 1) here
        pos = [i for i, c in enumerate(comps) if c[0] in ('array', 'int')]
        adjacent = pos == list(range(pos[0], pos[-1] + 1))
        at = sum(1 for c in comps[:pos[0]] if c[0] in ('new', 'slice')) if adjacent else 0
        axes.insert(at, (length, 0, True))
    out_shape = tuple(size for size, _, _ in axes)
    total = math.prod(out_shape)
    if total == 0:
        return out_shape, _runtime.literal(UInt32, 0, 0)
    idx = strided_index(UInt32, [(size, stride) for size, stride, _ in axes], base,
                        None if arrays else math.prod(shape))
    if arrays:
        from .routines import gather
        inner = math.prod(size for size, _, _ in axes[at + 1:])
        i = _runtime.counter(UInt32, total)
        a = i // inner if inner > 1 else i
        a = 0 if length == 1 else a if inner * length == total else a % length
        for _, axis, _, arr in arrays:
            picked = gather(UInt32, arr, a) if len(arr) > 1 else arr
            idx = idx + (picked * strides[axis] if strides[axis] != 1 else picked)
    return out_shape, idx


def _components(UInt32, shape, key):
    """The key as one entry per index: ('new', ...) for None, and per input axis ('int',
    axis, position, None), ('slice', axis, start, (step, count)) or ('array', axis, None,
    UInt32 indices)."""
    real = [k for k in key if k is not None and k is not Ellipsis]
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("pbc: an index can only have a single ellipsis ('...')")
    if len(real) > len(shape):
        raise IndexError(f'pbc: too many indices for a tensor of shape {shape}: '
                         f'{len(real)} were given')
    comps, axis = [], 0
    for k in key:
        if k is None:
            comps.append(('new', None, 0, None))
            continue
        if k is Ellipsis:
            for _ in range(len(shape) - len(real)):
                comps.append(('slice', axis, 0, (1, shape[axis])))
                axis += 1
            continue
        size = shape[axis]
        if isinstance(k, slice):
            start, stop, step = k.indices(size)
            comps.append(('slice', axis, start, (step, len(range(start, stop, step)))))
        elif isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            if not -size <= k < size:
                raise IndexError(f'pbc: index {k} is out of bounds for axis {axis} with '
                                 f'size {size}')
            comps.append(('int', axis, int(k) % size, None))
        else:
            comps.append(('array', axis, None, _index_array(UInt32, k, size, axis)))
        axis += 1
    for a in range(axis, len(shape)):               # an implicit '...' at the end
        comps.append(('slice', a, 0, (1, shape[a])))
    return comps


def _index_array(UInt32, k, size, axis):
    """Index array k (along an axis of `size`) as UInt32 positions; negative entries count
    from the end. Host data (lists, NumPy arrays) is checked against the size."""
    if isinstance(k, Tensor):
        if k.ndim != 1:
            raise IndexError(f'pbc: a tensor used as an index must be 1-D, not of shape '
                             f'{k.shape}')
        k = k.array
    if isinstance(k, ArrayBase):
        if k.Type not in _INDEX_TYPES:
            raise TypeError(f'pbc: tensors are indexed by integers, slices, ..., None or '
                            f'integer arrays, not a {type(k).__name__} (a Bool mask must be '
                            'the whole index)')
        if k.Type.startswith('int'):
            from .routines import select
            k = select(k < 0, k + size, k)
        return k if type(k) is UInt32 else UInt32(k)
    if not isinstance(k, (list, tuple, np.ndarray)):
        raise TypeError(f'pbc: unsupported type "{type(k).__name__}" in slice expression '
                        '(tensors are indexed by integers, slices, ..., None or integer '
                        'arrays)')
    arr = np.asarray(k)
    if arr.size == 0:
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in 'iu' or arr.ndim != 1:
        raise IndexError(f'pbc: an index array must be a 1-D sequence of integers, not '
                         f'{arr.dtype} of shape {arr.shape}')
    bad = (arr < -size) | (arr >= size)
    if bad.any():
        raise IndexError(f'pbc: index {arr[bad][0]} is out of bounds for axis {axis} with '
                         f'size {size}')
    return UInt32(np.where(arr < 0, arr + size, arr).astype(np.uint32))


def _fits(shape, target):
    """Whether a value of `shape` broadcasts to `target`."""
    try:
        return broadcast_shapes(target, shape) == target
    except RuntimeError:
        return False


def _broadcast_lengths(lengths):
    out = 1
    for n in lengths:
        if n != out and n != 1 and out != 1:
            raise IndexError(f'pbc: shape mismatch: index arrays of lengths {out} and {n} '
                             'cannot be broadcast together')
        out = n if out == 1 else out
    return out
