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


_DL_CPU, _DL_CUDA = 1, 2       # DLPack's device types


def _device_backend(cls):
    """The backend of a device array class (made on first use: it may raise why not)."""
    from .evaluate import _backend
    return _backend(cls._backend_code)


class FlatArray:
    """Mixin for the flat classes: DLPack, type metadata, convenience."""
    __slots__ = ()

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of the contents: host memory for pbc.llvm's arrays (zero-copy,
        through NumPy), device memory for pbc.cuda's (the array moves to the device first;
        the capsule is ready for any stream of the consumer's)."""
        if type(self)._backend_code == 0:
            asked = dict(stream=stream, max_version=max_version, dl_device=dl_device,
                         copy=copy)     # (older NumPy knows fewer of them)
            return _view(self).__dlpack__(**{k: v for k, v in asked.items() if v is not None})
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f'pbc: cannot export {type(self).__name__} to DLPack device '
                              f'{tuple(dl_device)}')
        be = _device_backend(type(self))
        owner = type(self)(self)    # shares the variable: later writes copy first
        address = _runtime.device_address(owner)
        if copy:
            owner = _runtime.device_copy_in(type(self)._backend_code, type(self).Type,
                                            address, len(self))
            address = _runtime.device_address(owner)
        be.sync()
        return _runtime.dlpack_export(owner, address, len(self), type(self)._vt_code,
                                      _DL_CUDA, be.ordinal)

    def __dlpack_device__(self):
        return (_DL_CPU, 0) if type(self)._backend_code == 0 else (_DL_CUDA, 0)

    @property
    def __cuda_array_interface__(self):
        """The CUDA Array Interface (version 3) of a pbc.cuda array: its device memory,
        ready to read on any stream (pbc.llvm's arrays have none)."""
        if type(self)._backend_code == 0:
            raise AttributeError('pbc: only pbc.cuda arrays live in CUDA device memory')
        be = _device_backend(type(self))
        address = _runtime.device_address(self)
        be.sync()
        dtype = np.dtype(_runtime.NUMPY_DTYPES[type(self)._vt_code])
        return dict(shape=(len(self),), typestr=dtype.str, data=(address, False),
                    strides=None, version=3, stream=None)

    @property
    def shape(self):
        """(N,) for N lanes, as pbc.shape()."""
        return (len(self),)

    @classmethod
    def from_dlpack(cls, obj):
        """A pbc array holding a copy of the contents of any DLPack producer: through
        NumPy from host memory; from CUDA device memory through pbc.cuda (copied on the
        device, and for pbc.llvm's types on to the host)."""
        device = obj.__dlpack_device__() if hasattr(obj, '__dlpack_device__') else None
        if device is None or device[0] != _DL_CUDA:
            return cls(np.from_dlpack(obj))
        if cls._backend_code == 0:
            import pbc.cuda
            return cls(getattr(pbc.cuda, cls.__name__).from_dlpack(obj).numpy())
        be = _device_backend(cls)
        tensor = _runtime.take_dlpack(obj.__dlpack__(stream=be.stream))
        try:
            if tensor.device_id != be.ordinal:
                raise BufferError(f'pbc.cuda: the tensor is on CUDA device '
                                  f'{tensor.device_id}, pbc.cuda uses device {be.ordinal}')
            if len(tensor.shape) != 1 or tensor.strides not in (None, (1,)):
                raise BufferError(f'pbc: {cls.__name__}.from_dlpack needs a contiguous 1-D '
                                  f'tensor, not one of shape {tensor.shape} and strides '
                                  f'{tensor.strides}')
            if tensor.type is None:
                raise BufferError('pbc: the tensor\'s element type has no pbc array type')
            array = _runtime.device_copy_in(cls._backend_code, tensor.type, tensor.address,
                                            tensor.shape[0])
            be.sync()               # (the producer may free its memory once released)
        finally:
            tensor.release()
        return array if type(array) is cls else cls(array)


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
