"""The flat JIT array classes of each backend (Bool, Float, UInt32, ...)."""

import numpy as np

from . import _runtime
from ._runtime import ArrayBase

FLAT = (('Bool', 'bool'), ('Int32', 'int32'), ('UInt32', 'uint32'), ('Int64', 'int64'),
        ('UInt64', 'uint64'), ('Float32', 'float32'), ('Float64', 'float64'))
ALIASES = {'Float': 'Float32', 'Int': 'Int32', 'UInt': 'UInt32'}


class _Exported:
    """Keeps a JIT array alive while a NumPy view (and its DLPack capsule) uses its memory."""

    def __init__(self, array):
        self.array = type(array)(array)     # shares the variable: later writes copy first
        addr = _runtime.data_address(self.array)
        n = len(array)
        dtype = np.dtype(_runtime.NUMPY_DTYPES[type(array)._vt_code])
        self.__array_interface__ = dict(shape=(n,), typestr=dtype.str, version=3,
                                        data=(addr, False))


def _view(array):
    """A zero-copy NumPy view of the evaluated array (literals are materialized first)."""
    if array.state == 'literal':
        _runtime.make_opaque(array)
    return np.asarray(_Exported(array))


class FlatArray:
    """Mixin for the flat classes: DLPack, type metadata, convenience."""
    __slots__ = ()

    def __dlpack__(self, *args, **kwargs):
        return _view(self).__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return (1, 0)      # kDLCPU

    @property
    def shape(self):
        """(N,) for N lanes, as pbc.shape()."""
        return (len(self),)

    @classmethod
    def from_dlpack(cls, obj):
        """A pbc array holding the contents of any DLPack producer (copied into padded memory)."""
        return cls(np.from_dlpack(obj))


def make_flat_types(backend_code, module_name):
    """Creates and registers the flat classes of one backend; returns {name: class}."""
    types = {}
    for name, tname in FLAT:
        cls = type(name, (FlatArray, ArrayBase), {'__module__': module_name, '__slots__': (),
                                                   '__qualname__': name,
                                                   'Type': tname})
        _runtime.register_class(backend_code, _runtime.TYPE_NAMES.index(tname), cls)
        types[name] = cls
    for alias, name in ALIASES.items():
        types[alias] = types[name]
    return types
