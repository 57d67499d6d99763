"""Tensors: a flat JIT array plus a shape (C order), as Dr.Jit's TensorX types."""

import numpy as np

from ._runtime import ArrayBase


class Tensor:
    Array = None          # the flat class holding the elements
    __slots__ = ('array', 'shape')
    __array_priority__ = 200

    def __init__(self, data=None, shape=None):
        A = self.Array
        if data is None:
            data, shape = A(), (0,) if shape is None else shape
        if isinstance(data, Tensor):
            flat, inferred = A(data.array), data.shape
        elif isinstance(data, ArrayBase):
            flat, inferred = A(data), (len(data),)
        else:
            arr = np.asarray(data)
            flat, inferred = A(np.ascontiguousarray(arr).reshape(-1)), arr.shape
        shape = tuple(int(s) for s in (inferred if shape is None else shape))
        if int(np.prod(shape)) != len(flat):
            raise ValueError(f'pbc: tensor shape {shape} does not match {len(flat)} elements')
        self.array = flat
        self.shape = shape

    def _pbc_children(self):
        return [self.array]

    def _pbc_rebuild(self, children):
        out = object.__new__(type(self))
        out.array, out.shape = children[0], self.shape
        return out

    def _pbc_assign(self, children):
        self.array = children[0]

    @property
    def ndim(self):
        return len(self.shape)

    def __len__(self):
        return self.shape[0] if self.shape else 1

    def numpy(self):
        return self.array.numpy().reshape(self.shape)

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def __repr__(self):
        from .printing import array_repr
        return array_repr(self)

    def _binary(self, other, fn, reflected=False):
        if isinstance(other, Tensor):
            if other.shape != self.shape:
                raise ValueError(f'pbc: tensor shapes {self.shape} and {other.shape} differ')
            other = other.array
        elif not isinstance(other, (int, float, bool)):
            return NotImplemented
        r = fn(other, self.array) if reflected else fn(self.array, other)
        return _tensor_for(r)(r, self.shape)

    def __add__(self, o): return self._binary(o, lambda a, b: a + b)
    def __radd__(self, o): return self._binary(o, lambda a, b: a + b, True)
    def __sub__(self, o): return self._binary(o, lambda a, b: a - b)
    def __rsub__(self, o): return self._binary(o, lambda a, b: a - b, True)
    def __mul__(self, o): return self._binary(o, lambda a, b: a * b)
    def __rmul__(self, o): return self._binary(o, lambda a, b: a * b, True)
    def __truediv__(self, o): return self._binary(o, lambda a, b: a / b)
    def __rtruediv__(self, o): return self._binary(o, lambda a, b: a / b, True)
    def __lt__(self, o): return self._binary(o, lambda a, b: a < b)
    def __gt__(self, o): return self._binary(o, lambda a, b: a > b)
    def __neg__(self): return type(self)(-self.array, self.shape)


_TENSORS = {}


def tensor_type(flat_cls):
    """The tensor class whose elements are of flat class `flat_cls`."""
    try:
        return _TENSORS[flat_cls]
    except KeyError:
        raise TypeError(f'pbc has no tensor type of {flat_cls.__name__} elements') from None


def _tensor_for(flat):
    return tensor_type(type(flat))


def elementwise(fn, args):
    """fn (a function of flat arrays and Python numbers) applied to the elements of tensor
    arguments of one shape; the result is a tensor of that shape."""
    shape = next(a.shape for a in args if isinstance(a, Tensor))
    flat = []
    for a in args:
        if isinstance(a, Tensor):
            if a.shape != shape:
                raise ValueError(f'pbc: tensor shapes {shape} and {a.shape} differ')
            a = a.array
        flat.append(a)
    r = fn(*flat)
    return tensor_type(type(r))(r, shape)


def reduce(name, t, axis=0, keepdims=False):
    """The reduction `name` ('sum', 'prod', 'min', 'max', 'all', 'any', 'mean') of tensor t
    over `axis` (an int, a tuple of them, or None for all), as NumPy."""
    from . import reductions
    ndim = len(t.shape)
    axes = tuple(range(ndim)) if axis is None else (axis,) if isinstance(axis, int) else axis
    axes = sorted({a + ndim if a < 0 else a for a in axes})
    if ndim == 0:
        axes = []
    if any(not 0 <= a < ndim for a in axes):
        raise RuntimeError(f'pbc.{name}(): out-of-bounds axis {axis} for a tensor with '
                           f'{ndim} dimensions')
    kept = [a for a in range(ndim) if a not in axes]
    out_shape = tuple(t.shape[a] for a in kept)
    n = int(np.prod([t.shape[a] for a in axes]))
    op = 'sum' if name == 'mean' else name
    if len(kept) == 0:                   # everything: one reduction of the flat array
        r = reductions.reduce(op, t.array) if n else reductions.reduce(op, [])
        r = r if isinstance(r, ArrayBase) else type(t).Array(r)
    else:
        r = _reduce_axes(op, t, axes, kept, n)
    if name == 'mean':
        r = (r if r.Type.startswith('float') else _as_float(r)) / max(n, 1)
    if keepdims:
        out_shape = tuple(1 if a in axes else s for a, s in enumerate(t.shape))
    return tensor_type(type(r))(r, out_shape)


def _as_float(r):
    from ._runtime import class_for
    return class_for(r, 'float32')(r)


def _reduce_axes(op, t, axes, kept, n):
    """Reduces `axes` of t, keeping `kept`: each output element combines its n inputs, read
    by a loop over them in the kernel."""
    from ._runtime import class_for
    from .control import while_loop
    from .reductions import _OPS
    from .routines import arange, gather
    UInt32 = class_for(t.array, 'uint32')
    strides = np.cumprod((1,) + t.shape[::-1])[::-1][1:]
    out_shape = [t.shape[a] for a in kept]
    m = int(np.prod(out_shape))
    # the offset of each output element's first input, and of each input within a group
    idx = arange(UInt32, m)
    base = UInt32(0)
    for a, size in reversed(list(zip(kept, out_shape))):
        base = base + (idx % size) * int(strides[a])
        idx = idx // size
    combine = _OPS[op][0]

    def offset(j):
        off = UInt32(0)
        for a in reversed(axes):
            off = off + (j % t.shape[a]) * int(strides[a])
            j = j // t.shape[a]
        return off

    first = gather(type(t.array), t.array, base + offset(UInt32(0)))
    _, acc = while_loop((UInt32(1), first), lambda j, acc: j < n,
                        lambda j, acc: (j + 1, combine(acc, gather(
                            type(t.array), t.array, base + offset(j)))))
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
