"""ravel / unravel: static arrays (vectors, matrices) to flat arrays and back, as Dr.Jit's.

An array of shape (s0, s1, ..., lanes) holds one value per index (i0, i1, ..., lane). Its
flat form lists them in C order (the last index, the lane, varies fastest: all lanes of the
first component, then of the next) or in F order (the first index varies fastest: the
components of lane 0, then of lane 1: interleaved, as a structure of arrays is stored by
its lanes). 'A' means 'F' here, as for Dr.Jit's JIT arrays.
"""

import math

from . import _runtime
from ._runtime import ArrayBase
from .vector import Matrix, StaticArray, static_shape

ORDERS = ('A', 'C', 'F')


def _check_order(order, where):
    if order not in ORDERS:
        raise RuntimeError(f"pbc.{where}(): the order parameter must equal 'A', 'C' or 'F', "
                           f'not {order!r}')
    return 'F' if order == 'A' else order


def _components(x, sizes):
    """(multi-index, flat array) of every component of static array x, in C order."""
    out = [((), x)]
    for _ in sizes:
        out = [(i + (k,), c) for i, v in out for k, c in enumerate(v._pbc_children())]
    return out


def _offset(index, lanes, sizes, width, order):
    """The flat positions of component `index` for `lanes` (a UInt32 array)."""
    if order == 'C':          # the lane varies fastest
        base = 0
        for i, n in zip(index, sizes):
            base = base * n + i
        return lanes + base * width
    base, stride = 0, 1       # F: the first index varies fastest
    for i, n in zip(index, sizes):
        base += i * stride
        stride *= n
    return lanes * stride + base


def ravel(array, order='A'):
    """The values of static array `array` as one flat array (see the module's docstring);
    a flat array or a Python number is returned as it is."""
    order = _check_order(order, 'ravel')
    if not isinstance(array, (StaticArray, Matrix)):
        return array
    sizes, T = static_shape(type(array))
    parts = _components(array, sizes)
    widths = {len(c) for _, c in parts} - {1}
    if len(widths) > 1:
        raise RuntimeError(f'pbc.ravel(): the array is ragged (components of widths '
                           f'{sorted(widths)})')
    width = widths.pop() if widths else min(len(c) for _, c in parts)
    if any(c.index == 0 for _, c in parts):
        width = 0
    from .routines import scatter, zeros
    out = zeros(T, math.prod(sizes) * width)
    if width:
        UInt32 = _runtime.class_for(out, 'uint32')
        lanes = _runtime.counter(UInt32, width)
        for index, c in parts:
            scatter(out, c, _offset(index, lanes, sizes, width, order))
    return out


def unravel(dtype, array, order='A'):
    """The static array of type `dtype` whose flat form (see ravel) is `array`; a flat
    array of type dtype is returned as it is."""
    order = _check_order(order, 'unravel')
    if not isinstance(array, ArrayBase):
        raise TypeError(f'pbc.unravel(): expected a flat array, not {type(array).__name__}')
    if not (isinstance(dtype, type) and issubclass(dtype, (StaticArray, Matrix))):
        return array if type(array) is dtype else dtype(array)
    sizes, T = static_shape(dtype)
    count = math.prod(sizes)
    if len(array) % count:
        raise RuntimeError(f'pbc.unravel(): the input size ({len(array)}) is not divisible by '
                           f'the number of components of {dtype.__name__} ({count})')
    width = len(array) // count
    if type(array) is not T:
        array = T(array)
    from .routines import gather
    UInt32 = _runtime.class_for(array, 'uint32')
    lanes = _runtime.counter(UInt32, width)

    def build(D, index):
        if issubclass(D, (StaticArray, Matrix)):
            inner = D.Value if issubclass(D, StaticArray) else D.Row
            return D._from([build(inner, index + (k,)) for k in range(D.Size)])
        if width == 0:
            return D()
        return gather(D, array, _offset(index, lanes, sizes, width, order))
    return build(dtype, ())
