"""The CUDA driver API (libcuda), bound with ctypes: the calls pbc.cuda makes, nothing more.

Invariant: every method is one driver call (or a fixed few) that raises CUDAError with the
driver's name for the failure; nothing here holds state but the library handle. Contexts,
streams, memory and modules are plain integers (the driver's handles and device
addresses), owned by the caller (pbc/backend/cuda_jit.py).

Why ctypes and not a compiled binding (PyCUDA, cuda-python): the driver is the only thing a
GPU machine is sure to have. It is loaded at run time, as Dr.Jit loads it, so pbc.cuda
needs no build step against a CUDA toolkit and no package beyond pbc's own. ctypes releases
the GIL around each call.
"""

import ctypes

from .. import config

# cuda.h's numbers for what is used here
CUDA_SUCCESS = 0
CUDA_ERROR_OUT_OF_MEMORY = 2
ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
JIT_INFO_LOG_BUFFER = 3
JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4
JIT_ERROR_LOG_BUFFER = 5
JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
JIT_OPTIMIZATION_LEVEL = 7
LOG_BYTES = 1 << 14

_p, _u, _i, _sz, _u64 = ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_size_t, \
    ctypes.c_uint64
_pp = ctypes.POINTER(ctypes.c_void_p)
# name in libcuda -> argument types (each returns a CUresult). The _v2 names are what
# cuda.h's macros select: the unsuffixed ones are the 32-bit-era entry points.
SIGNATURES = {
    'cuInit': [_u],
    'cuDriverGetVersion': [ctypes.POINTER(_i)],
    'cuDeviceGetCount': [ctypes.POINTER(_i)],
    'cuDeviceGet': [ctypes.POINTER(_i), _i],
    'cuDeviceGetName': [ctypes.c_char_p, _i, _i],
    'cuDeviceGetAttribute': [ctypes.POINTER(_i), _i, _i],
    'cuDevicePrimaryCtxRetain': [_pp, _i],
    'cuDevicePrimaryCtxRelease_v2': [_i],
    'cuCtxPushCurrent_v2': [_p],
    'cuCtxPopCurrent_v2': [_pp],
    'cuStreamCreate': [_pp, _u],
    'cuStreamSynchronize': [_p],
    'cuStreamDestroy_v2': [_p],
    'cuMemAlloc_v2': [ctypes.POINTER(_u64), _sz],
    'cuMemFree_v2': [_u64],
    'cuMemGetInfo_v2': [ctypes.POINTER(_sz), ctypes.POINTER(_sz)],
    'cuMemcpyHtoDAsync_v2': [_u64, _p, _sz, _p],
    'cuMemcpyDtoHAsync_v2': [_p, _u64, _sz, _p],
    'cuMemcpyDtoDAsync_v2': [_u64, _u64, _sz, _p],
    'cuModuleLoadDataEx': [_pp, ctypes.c_char_p, _u, ctypes.POINTER(_i), _pp],
    'cuModuleGetFunction': [_pp, _p, ctypes.c_char_p],
    'cuModuleUnload': [_p],
    'cuLaunchKernel': [_p, _u, _u, _u, _u, _u, _u, _u, _p, _pp, _pp],
    'cuGetErrorName': [_i, ctypes.POINTER(ctypes.c_char_p)],
}


class CUDAError(RuntimeError):
    """A driver call failed; `code` is its CUresult."""

    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


class OutOfMemory(CUDAError):
    """cuMemAlloc found no room (CUDA_ERROR_OUT_OF_MEMORY)."""


class Driver:
    """libcuda, loaded and initialized. OSError if it cannot be loaded, CUDAError if it
    does not start."""

    def __init__(self, path=None):
        lib = ctypes.CDLL(path or config.LIBCUDA)
        self._calls = {}
        for name, argtypes in SIGNATURES.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = argtypes, _i
            self._calls[name] = fn
        self._call('cuInit', 0)

    def _call(self, name, *args):
        code = self._calls[name](*args)
        if code != CUDA_SUCCESS:
            raise (OutOfMemory if code == CUDA_ERROR_OUT_OF_MEMORY else CUDAError)(
                f'{name} failed: {self.error_name(code)}', code)

    def _out(self, name, ctype, *args):
        """Calls `name` with a pointer to a new `ctype` first; returns its value."""
        value = ctype()
        self._call(name, ctypes.byref(value), *args)
        return value.value

    def error_name(self, code):
        text = ctypes.c_char_p()
        if self._calls['cuGetErrorName'](code, ctypes.byref(text)) != CUDA_SUCCESS:
            return f'CUresult {code}'
        return f'{text.value.decode()} ({code})'

    # ---- the driver and its devices -------------------------------------------------------
    def version(self):
        """The driver's CUDA version, as 1000 * major + 10 * minor (13000: CUDA 13.0)."""
        return self._out('cuDriverGetVersion', _i)

    def device_count(self):
        return self._out('cuDeviceGetCount', _i)

    def device(self, ordinal):
        return self._out('cuDeviceGet', _i, ordinal)

    def device_name(self, device):
        name = ctypes.create_string_buffer(256)
        self._call('cuDeviceGetName', name, 256, device)
        return name.value.decode()

    def attribute(self, device, attribute):
        return self._out('cuDeviceGetAttribute', _i, attribute, device)

    def compute_capability(self, device):
        return (self.attribute(device, ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                self.attribute(device, ATTRIBUTE_COMPUTE_CAPABILITY_MINOR))

    def memory_info(self):
        """(free, total) bytes of the current context's device."""
        free, total = _sz(), _sz()
        self._call('cuMemGetInfo_v2', ctypes.byref(free), ctypes.byref(total))
        return free.value, total.value

    # ---- contexts and streams -------------------------------------------------------------
    def retain_primary_context(self, device):
        return self._out('cuDevicePrimaryCtxRetain', _p, device)

    def release_primary_context(self, device):
        self._call('cuDevicePrimaryCtxRelease_v2', device)

    def push_context(self, context):
        self._call('cuCtxPushCurrent_v2', context)

    def pop_context(self):
        return self._out('cuCtxPopCurrent_v2', _p)

    def create_stream(self):
        return self._out('cuStreamCreate', _p, 0)

    def synchronize(self, stream):
        self._call('cuStreamSynchronize', stream)

    def destroy_stream(self, stream):
        self._call('cuStreamDestroy_v2', stream)

    # ---- memory (device addresses are ints) -------------------------------------------------
    def mem_alloc(self, nbytes):
        return self._out('cuMemAlloc_v2', _u64, nbytes)

    def mem_free(self, address):
        self._call('cuMemFree_v2', address)

    def memcpy_htod(self, dst, host_address, nbytes, stream):
        """Queues a copy from host memory; the host memory may go once this returns (the
        driver stages pageable memory before returning)."""
        self._call('cuMemcpyHtoDAsync_v2', dst, host_address, nbytes, stream)

    def memcpy_dtoh(self, host_address, src, nbytes, stream):
        self._call('cuMemcpyDtoHAsync_v2', host_address, src, nbytes, stream)

    def memcpy_dtod(self, dst, src, nbytes, stream):
        self._call('cuMemcpyDtoDAsync_v2', dst, src, nbytes, stream)

    # ---- modules and launches ---------------------------------------------------------------
    def load_module(self, ptx, optimization_level=4):
        """Compiles PTX text for the current context's device; a rejected module raises
        CUDAError with the JIT compiler's error log."""
        error_log = ctypes.create_string_buffer(LOG_BYTES)
        info_log = ctypes.create_string_buffer(LOG_BYTES)
        options = (_i * 5)(JIT_OPTIMIZATION_LEVEL, JIT_ERROR_LOG_BUFFER,
                           JIT_ERROR_LOG_BUFFER_SIZE_BYTES, JIT_INFO_LOG_BUFFER,
                           JIT_INFO_LOG_BUFFER_SIZE_BYTES)
        # (an option's value is passed in the pointer-sized slot itself)
        values = (_p * 5)(optimization_level, ctypes.addressof(error_log), LOG_BYTES,
                          ctypes.addressof(info_log), LOG_BYTES)
        module = _p()
        code = self._calls['cuModuleLoadDataEx'](
            ctypes.byref(module), ptx.encode() + b'\0', 5, options, values)
        if code != CUDA_SUCCESS:
            log = error_log.value.decode(errors='replace').strip()
            raise CUDAError(f'cuModuleLoadDataEx failed: {self.error_name(code)}\n{log}', code)
        return module.value

    def unload_module(self, module):
        self._call('cuModuleUnload', module)

    def get_function(self, module, name):
        return self._out('cuModuleGetFunction', _p, module, name.encode())

    def launch(self, function, blocks, threads, stream, args):
        """Queues `function` on `stream` over `blocks` blocks of `threads` threads; `args`
        are its parameters, all 64-bit integers (the driver copies them at the call)."""
        words = (_u64 * len(args))(*args)
        pointers = (_p * len(args))(*[ctypes.addressof(words) + 8 * k
                                      for k in range(len(args))])
        self._call('cuLaunchKernel', function, blocks, 1, 1, threads, 1, 1, 0, stream,
                   pointers, None)
