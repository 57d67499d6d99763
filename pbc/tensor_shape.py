"""Reshaping and axis permutations of tensors: pbc.reshape, pbc.transpose (also of matrices),
pbc.moveaxis and pbc.swapaxes, as Dr.Jit's.

A reshape keeps the tensor's flat array; a permutation reads it through a gather of computed
indices (symbolic: nothing is evaluated).
"""

import math

from . import _runtime
from ._runtime import ArrayBase
from .tensor import Tensor, c_strides, strided_index
from .vector import Matrix, StaticArray, static_shape


def permute(t, axes):
    """Tensor t with its axes in the order `axes` (a permutation of range(t.ndim))."""
    shape = tuple(t.shape[a] for a in axes)
    strides = c_strides(t.shape)
    A = type(t.array)
    idx = strided_index(_runtime.class_for(A, 'uint32'),
                        [(t.shape[a], strides[a]) for a in axes], 0, len(t.array))
    if idx is None:
        return type(t)._new(A(t.array), shape)
    from .routines import gather
    return type(t)._new(gather(A, t.array, idx), shape)


def _check_tensor(x, where):
    if not isinstance(x, Tensor):
        raise TypeError(f'pbc.{where}(): expected a tensor, not {type(x).__name__}')


def _axis_list(axes, ndim, where, what):
    """axes (an int or a sequence of them) as non-negative ints, without repeats."""
    items = [axes] if isinstance(axes, int) else list(axes)
    out = []
    for a in items:
        if not -ndim <= a < ndim:
            raise RuntimeError(f'pbc.{where}(): {what} axis {a} is out of bounds for a tensor '
                               f'with {ndim} dimensions')
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise RuntimeError(f'pbc.{where}(): {what} contains repeated axes: {axes}')
    return out


def transpose(value, axes=None):
    """Tensor `value` with its axes permuted: reversed by default, or in the order `axes` (as
    NumPy). A matrix (Matrix3f, ...) gives its transpose."""
    from .vector import transpose as transpose_matrix
    if isinstance(value, Matrix) and axes is None:
        return transpose_matrix(value)
    _check_tensor(value, 'transpose')
    n = value.ndim
    if axes is None:
        return permute(value, tuple(reversed(range(n))))
    axes = tuple(axes)
    if len(axes) != n:
        raise RuntimeError(f"pbc.transpose(): 'axes' must have length {n} (got {len(axes)})")
    order = [a % n if -n <= a < n else None for a in axes]
    if None in order:
        raise RuntimeError(f"pbc.transpose(): an axis of {axes} is out of bounds for a "
                           f'tensor with {n} dimensions')
    if sorted(order) != list(range(n)):
        raise RuntimeError(f"pbc.transpose(): 'axes' must be a permutation of 0..{n - 1}, "
                           f'not {axes}')
    return permute(value, tuple(order))


def moveaxis(value, source, destination):
    """Tensor `value` with axes `source` moved to positions `destination` (ints or sequences
    of them); the other axes keep their order (as NumPy)."""
    _check_tensor(value, 'moveaxis')
    n = value.ndim
    src = _axis_list(source, n, 'moveaxis', 'source')
    dst = _axis_list(destination, n, 'moveaxis', 'destination')
    if len(src) != len(dst):
        raise ValueError("pbc.moveaxis(): 'source' and 'destination' must have the same "
                         'number of elements')
    order = [a for a in range(n) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(value, tuple(order))


def swapaxes(value, axis1, axis2):
    """Tensor `value` with axes axis1 and axis2 exchanged."""
    _check_tensor(value, 'swapaxes')
    (a,), (b,) = (_axis_list(x, value.ndim, 'swapaxes', 'axis') for x in (axis1, axis2))
    order = list(range(value.ndim))
    order[a], order[b] = b, a
    return permute(value, tuple(order))


_PARAMS = ('dtype', 'value', 'shape', 'order', 'shrink')


def reshape(*args, **kwargs):
    """reshape(dtype, value, shape, order='A', shrink=False), or reshape(value, shape, ...)
    with dtype = type(value), as Dr.Jit's: `value` (a tensor or a flat array) with its
    elements (C order) rearranged into `shape` (an int or a tuple; one entry may be -1,
    inferred), as a tensor of type dtype (or a flat array of that type where dtype is one and
    the shape is 1-D). With shrink=True, the shape may hold fewer elements than value: the
    first ones."""
    names = _PARAMS if (args and isinstance(args[0], type)) or 'dtype' in kwargs \
        else _PARAMS[1:]
    if len(args) > len(names):
        raise TypeError(f'pbc.reshape(): takes at most {len(names)} arguments')
    p = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names or k in p:
            raise TypeError(f'pbc.reshape(): unexpected or repeated argument {k!r}')
        p[k] = v
    if 'value' not in p or 'shape' not in p:
        raise TypeError('pbc.reshape(): needs a value and a shape')
    value, order, shrink = p['value'], p.get('order', 'A'), p.get('shrink', False)
    dtype = p.get('dtype', type(value))
    if order not in ('A', 'C', 'F'):
        raise RuntimeError(f"pbc.reshape(): 'order' must be 'A', 'C' or 'F', not {order!r}")
    if isinstance(dtype, type) and issubclass(dtype, (StaticArray, Matrix)):
        return _reshape_static(dtype, value, p['shape'], order, shrink)
    if isinstance(value, (list, tuple, dict)):     # a tree: each of its arrays, as itself
        from .tree import children, rebuild
        return rebuild(value, [reshape(type(x), x, p['shape'], order, shrink)
                               for x in children(value)])
    if isinstance(value, (StaticArray, Matrix)):      # through its flat form (pbc.ravel)
        from .ravel import ravel
        value = ravel(value, order)
    if isinstance(value, Tensor):
        flat, in_shape = value.array, value.shape
    elif isinstance(value, ArrayBase):
        flat, in_shape = value, (len(value),)
    else:
        raise TypeError(f'pbc.reshape(): reshapes tensors and flat arrays, not '
                        f'{type(value).__name__}')
    shape = conform_shape(in_shape, p['shape'], shrink)
    if order == 'F' and (len(in_shape) > 1 or len(shape) > 1):
        raise RuntimeError("pbc.reshape(): tensors are reshaped in C order ('C' or 'A')")
    n = math.prod(shape)
    if n < len(flat):                           # shrink=True: the first n elements
        flat = _first(flat, n)
    if isinstance(dtype, type) and issubclass(dtype, Tensor):
        return dtype._new(dtype.Array(flat), shape)
    if isinstance(dtype, type) and issubclass(dtype, ArrayBase) and len(shape) == 1:
        return dtype(flat)
    raise TypeError(f'pbc.reshape(): cannot make a {getattr(dtype, "__name__", dtype)} of '
                    f'shape {shape}')


def _reshape_static(dtype, value, shape, order, shrink):
    """reshape() to or from static arrays: through their flat form (pbc.ravel), or, with
    shrink and a lane count, their first lanes."""
    from .ravel import ravel, unravel
    from .routines import gather
    if shrink and isinstance(shape, int) and isinstance(value, (StaticArray, Matrix)):
        first = _runtime.counter(_runtime.class_for(_leaf(value), 'uint32'), shape)
        # (a component of width 1 stands for every lane: it stays as it is)
        return _map_leaves(value, lambda c: gather(type(c), c, first) if len(c) > 1
                           else type(c)(c)) if type(value) is dtype else \
            reshape(dtype, value, shape)
    flat = ravel(value, order)
    sizes, _ = static_shape(dtype)
    full = conform_shape((len(flat),), shape, shrink)
    if list(full[:-1]) != sizes:
        raise RuntimeError(f'pbc.reshape(): shape {tuple(full)} does not fit '
                           f'{dtype.__name__} (static sizes {tuple(sizes)})')
    n = math.prod(full)
    if n < len(flat):
        flat = _first(flat, n)
    return unravel(dtype, flat, order)


def _first(flat, n):
    """The first n elements of flat array `flat`."""
    from .routines import gather
    return gather(type(flat), flat, _runtime.counter(_runtime.class_for(flat, 'uint32'), n))


def _leaf(x):
    while not isinstance(x, ArrayBase):
        x = x._pbc_children()[0]
    return x


def _map_leaves(x, fn):
    if isinstance(x, ArrayBase):
        return fn(x)
    return x._pbc_rebuild([_map_leaves(c, fn) for c in x._pbc_children()])


def conform_shape(in_shape, shape, shrink=False):
    """Target `shape` (an int or a tuple, with at most one -1) for an input of in_shape;
    RuntimeError if the sizes differ (or, with shrink, if the target is larger)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    size = math.prod(in_shape)
    if any(s < -1 for s in shape) or shape.count(-1) > 1:
        raise RuntimeError(f"pbc.reshape(): invalid shape {shape}: entries are sizes, and only "
                           "a single 'shape' entry may be equal to -1")
    known = math.prod(s for s in shape if s != -1)
    if -1 in shape:
        if known == 0 or size % known:
            raise RuntimeError(f'pbc.reshape(): cannot infer a compatible shape from {shape} '
                               f'for {size} elements')
        shape = tuple(size // known if s == -1 else s for s in shape)
    elif known != size and not (shrink and known < size):
        raise RuntimeError(f'pbc.reshape(): mismatched array sizes (input: {size}, target: '
                           f'{known}): shapes {tuple(in_shape)} and {shape}')
    return shape
