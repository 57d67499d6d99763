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


def _tensor_for(flat):
    """The tensor class for a flat result (Bool results stay flat-backed in a Float-less
    tensor of their own element type when one exists)."""
    return _TENSORS.get(type(flat), Tensor)


def make_tensor_types(flat, module_name):
    types = {}
    for name, comp in (('TensorXf', 'Float32'), ('TensorXf64', 'Float64'),
                       ('TensorXu', 'UInt32'), ('TensorXi', 'Int32'), ('TensorXb', 'Bool')):
        cls = type(name, (Tensor,), {'Array': flat[comp], '__slots__': (),
                                     '__module__': module_name, '__qualname__': name})
        _TENSORS[flat[comp]] = cls
        types[name] = cls
    return types
