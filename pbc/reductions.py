"""Horizontal reductions with Dr.Jit's axis rules: sum, prod, min, max, all, any, none, count,
mean.

An array's axes are its static dimensions, outermost first, then its lanes: an Array3f has
axes (component, lane), a Matrix3f (row, column, lane), a flat array just (lane). `axis=0`
(the default) reduces the outermost one, so pbc.sum(Array3f) adds the components (a Float)
and pbc.sum(Float) adds the lanes (a width-1 Float); `axis=-1` reduces the lanes of every
component (an Array3f of width 1); `axis=None` reduces everything. Python numbers reduce to
themselves, Python sequences fold with the operator into a Python value. Tensors follow
NumPy (pbc/tensor.py), and their default axis (`axis=...`) is None, all of them, as in
Dr.Jit. `min`/`max` ignore NaNs (as Dr.Jit's reductions do).
"""

import builtins
import functools
import operator

import numpy as np

from . import _runtime
from ._runtime import ArrayBase
from .ad import function as ad_function
from .routines import ReduceOp, fmax, fmin
from .tensor import Tensor
from .vector import Matrix, StaticArray

# name -> (operator combining two values, runtime reduction of a flat array's lanes)
_OPS = {'sum': (operator.add, 'sum'), 'prod': (operator.mul, 'prod'),
        'min': (fmin, 'min'), 'max': (fmax, 'max'),
        'all': (operator.and_, 'and'), 'any': (operator.or_, 'or'),
        'and': (operator.and_, 'and'), 'or': (operator.or_, 'or')}     # bitwise, any type
_EMPTY = {'sum': 0, 'prod': 1, 'all': True, 'any': False}
MODES = (None, 'symbolic', 'evaluated')
_DIFFERENTIABLE = ('sum', 'prod', 'min', 'max')


def _static(x):
    return isinstance(x, (StaticArray, Matrix))


def _depth(x):
    """The number of axes of array x (its static dimensions and its lanes)."""
    d = 1
    while _static(x):
        d, x = d + 1, x._pbc_children()[0]
    return d


def _rebuild(x, parts):
    """A static array like x around `parts` (their own vector type if the type changes)."""
    from .vector import vector_type
    if builtins.all(type(p) is type(q) for p, q in zip(parts, x._pbc_children())):
        return x._pbc_rebuild(parts)
    return vector_type(len(parts), type(parts[0]))._from(parts)


def _lanes(name, x):
    """Reduces the lanes of a flat array into a width-1 array."""
    if name == 'all' or name == 'any':
        if x.Type != 'bool':
            raise TypeError(f'pbc.{name}(): needs Bool arrays, not {type(x).__name__}')
    if name in _DIFFERENTIABLE and _runtime.ad_tracked((x,)):
        return ad_function.apply('reduce_' + name, lambda v: _runtime.reduce(v, _OPS[name][1]),
                                 (x,), keep_value=name != 'sum')
    return _runtime.reduce(x, _OPS[name][1])


def _fold(name, items):
    items = list(items)
    if not items:
        if name not in _EMPTY:
            raise ValueError(f'pbc.{name}(): empty sequence')
        return _EMPTY[name]
    return functools.reduce(_OPS[name][0], items)


def _reduce(name, x, axis):
    """Reduces axis `axis` (already normalized: 0 <= axis < depth) of array x."""
    if isinstance(x, ArrayBase):
        return _lanes(name, x)
    parts = x._pbc_children()
    if axis == 0:
        return _fold(name, parts)
    return _rebuild(x, [_reduce(name, p, axis - 1) for p in parts])


def _reduce_all(name, x):
    while _static(x):
        x = _fold(name, x._pbc_children())
    return _lanes(name, x) if isinstance(x, ArrayBase) else x


def reduce(name, x, axis=..., keepdims=False, mode=None):
    """The reduction `name` of x over `axis` (see the module's docstring)."""
    if axis is Ellipsis:
        axis = None if isinstance(x, Tensor) else 0
    if mode not in MODES:
        raise ValueError(f"pbc.{name}(): mode must be 'symbolic' or 'evaluated', not {mode!r}")
    if isinstance(x, Tensor):
        from .tensor import reduce as reduce_tensor
        return reduce_tensor(name, x, axis, keepdims)
    if isinstance(x, (list, tuple)):
        if keepdims:
            raise RuntimeError(f'pbc.{name}(): keepdims=True needs an array (a Python '
                               'sequence loses its dimension)')
        try:
            value = _fold(name, x)
        except TypeError as e:
            raise RuntimeError(f'pbc.{name}(): cannot reduce {x!r}') from e
        return reduce(name, value, None) if axis is None else value
    if not (isinstance(x, ArrayBase) or _static(x)):
        if isinstance(x, (bool, int, float, np.generic)):
            return x                                   # a single value is its own reduction
        raise TypeError(f'pbc.{name}(): unsupported argument of type {type(x).__name__}')
    if axis is None:
        return _reduce_all(name, x)
    depth = _depth(x)
    if isinstance(axis, (tuple, list)):            # several axes: the innermost first
        axes = sorted({a + depth if a < 0 else a for a in axis}, reverse=True)
        if len(axes) == depth:
            return _reduce_all(name, x)
        for a in axes:
            x = reduce(name, x, a, keepdims, mode)
        return x
    a = axis + depth if axis < 0 else axis
    if not 0 <= a < depth:
        raise RuntimeError(f'pbc.{name}(): out-of-bounds axis {axis} for an array with '
                           f'{depth} axes')
    if keepdims and a != depth - 1:
        raise RuntimeError(f'pbc.{name}(): keepdims=True would change the type of a '
                           f'{type(x).__name__} (reducing axis {axis}); convert it to a tensor '
                           'first')
    return _reduce(name, x, a)


_BY_OP = {ReduceOp.Add: 'sum', ReduceOp.Mul: 'prod', ReduceOp.Min: 'min',
          ReduceOp.Max: 'max', ReduceOp.And: 'and', ReduceOp.Or: 'or'}


def reduce_op(op, value, axis=0, mode=None, keepdims=False):
    """Dr.Jit's dr.reduce: the reduction of `value` by ReduceOp `op` over `axis`."""
    try:
        name = _BY_OP[ReduceOp(op)]
    except (KeyError, ValueError):
        raise ValueError(f'pbc.reduce(): {op!r} combines nothing') from None
    return reduce(name, value, axis, keepdims, mode)


def _reduction(name, doc):
    def fn(value, axis=..., keepdims=False, mode=None):
        return reduce(name, value, axis, keepdims, mode)
    fn.__name__, fn.__qualname__, fn.__doc__ = name, name, doc
    return fn


sum = _reduction('sum', 'Sum over `axis` (see pbc/reductions.py).')             # noqa: A001
prod = _reduction('prod', 'Product over `axis`.')
min = _reduction('min', 'Minimum over `axis`; NaNs are ignored.')                 # noqa: A001
max = _reduction('max', 'Maximum over `axis`; NaNs are ignored.')                 # noqa: A001
all = _reduction('all', 'Whether every entry along `axis` is True.')             # noqa: A001
any = _reduction('any', 'Whether some entry along `axis` is True.')              # noqa: A001


def none(value, axis=..., keepdims=False, mode=None):
    """Whether no entry along `axis` is True."""
    r = any(value, axis, keepdims, mode)
    return not r if isinstance(r, (bool, np.bool_)) else ~r


def count(value, axis=..., keepdims=False, mode=None):
    """The number of True entries along `axis` (UInt32)."""
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (list, tuple)):
        if axis is None:             # every entry of a nested sequence
            return builtins.sum(count(v, None) if isinstance(v, (list, tuple)) else int(bool(v))
                                for v in value)
        return builtins.sum(int(bool(v)) for v in value)
    if isinstance(value, ArrayBase) and value.Type == 'bool' and axis in (..., 0, -1, None):
        return _runtime.count_true(value)        # (one pass over the Bool's bytes)
    return sum(_as_uint32(value), axis, keepdims, mode)


def _as_uint32(x):
    if isinstance(x, ArrayBase):
        if x.Type != 'bool':
            raise TypeError(f'pbc.count(): needs Bool arrays, not {type(x).__name__}')
        return _runtime.class_for(x, 'uint32')(x)
    if isinstance(x, Tensor):
        from .tensor import tensor_type
        return tensor_type(_runtime.class_for(x.array, 'uint32'))(_as_uint32(x.array), x.shape)
    return _rebuild(x, [_as_uint32(p) for p in x._pbc_children()])


def mean(value, axis=..., keepdims=False, mode=None):
    """The mean along `axis` (floating point)."""
    if isinstance(value, (list, tuple)):
        return sum(value, axis) / builtins.max(len(value), 1)
    if isinstance(value, Tensor):
        from .tensor import reduce as reduce_tensor
        return reduce_tensor('mean', value, axis, keepdims)
    axis = 0 if axis is Ellipsis else axis
    if isinstance(value, ArrayBase) and not value.Type.startswith('float'):
        value = _runtime.class_for(value, 'float32')(value)
    if not (isinstance(value, ArrayBase) or _static(value)):
        return value
    total = sum(value, axis, keepdims, mode)
    return total / _count_along(value, axis)


def _count_along(x, axis):
    """The number of entries that a reduction of x over `axis` combines."""
    depth = _depth(x)
    sizes, y = [], x
    for _ in range(depth - 1):
        sizes.append(len(y._pbc_children()))
        y = y._pbc_children()[0]
    sizes.append(_width(x))
    if axis is None:
        return int(np.prod(sizes))
    return sizes[axis + depth if axis < 0 else axis]


def _width(x):
    return x.width() if isinstance(x, StaticArray) else (
        builtins.max(_width(r) for r in x._pbc_children()) if isinstance(x, Matrix) else len(x))
