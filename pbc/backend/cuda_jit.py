"""The CUDA backend (pbc/backend/protocol.py): PTX from ptx_render.py, loaded and launched
through PyCUDA's driver API.

Arrays live in device memory (pbc/_rt_device.pxi): what the host makes moves there when a
kernel first reads it, kernels write their outputs there, and the host copies out only what
it reads (.numpy(), an element, the host-side reductions). Device memory comes from a pool
that reuses freed blocks by size, as the runtime's host buffer cache does. Launches, copies
and frees are queued on one stream in order, so a launch returns at once and a block freed
while a kernel may still read it is reused only by work queued after that kernel; reading
memory on the host waits for the stream.

PyCUDA is an optional extra, imported here on first use. Without it, without a driver or
without a device, making the backend raises CUDAUnavailable naming what is missing.
The device's primary context is retained (never pycuda.autoinit) and pushed around work.
"""

import atexit
import contextlib
import ctypes
import hashlib
import threading
import time
from typing import NamedTuple

import numpy as np

from .. import _runtime
from . import ptx_render
from .protocol import CompiledKernel

BLOCK = 256                 # threads per block; the kernels loop over lanes (grid-stride)
BLOCKS_PER_SM = 32          # enough blocks to fill the device and no more
PRINT_ROWS = 1 << 16        # rows a print keeps without a limit, if it has fewer lanes


class CUDAUnavailable(RuntimeError):
    """pbc.cuda cannot run here; the message says what is missing."""


class Launchable(NamedTuple):
    """A CUDA kernel's CompiledKernel.address, what `launch` gets."""
    function: object        # the prepared kernel function
    sinks: tuple            # parameter slots of print sinks (the runtime's, on the host)


def driver():
    """pycuda.driver, initialized, or CUDAUnavailable."""
    try:
        import pycuda.driver as cuda
    except ImportError as e:
        missing = 'the NVIDIA driver (libcuda)' if 'libcuda' in str(e) else \
            "PyCUDA (pip install 'pbc[cuda]')"
        raise CUDAUnavailable(f'pbc.cuda needs {missing}: {e}') from None
    try:
        cuda.init()
        count = cuda.Device.count()
    except cuda.Error as e:
        raise CUDAUnavailable(f'pbc.cuda: the CUDA driver does not start: {e}') from None
    if count == 0:
        raise CUDAUnavailable('pbc.cuda: the CUDA driver finds no device')
    return cuda


class CUDABackend:
    name = 'cuda'

    def __init__(self, cuda, device=0):
        self.cuda = cuda
        self.device = cuda.Device(device)
        self.ordinal = device
        self.context = self.device.retain_primary_context()
        # The kernel cache's key: the PTX text and what it is compiled for and by.
        self.machine_id = '|'.join([
            'sm_%d%d' % self.device.compute_capability(), f'driver {cuda.get_driver_version()}',
            f'pycuda cuda {cuda.get_version()}', ptx_render.TARGET, ptx_render.ISA])
        self.lock = threading.RLock()
        with self.active():
            sms = self.device.get_attribute(cuda.device_attribute.MULTIPROCESSOR_COUNT)
            self.stream = cuda.Stream()
        self.max_blocks = max(1, sms) * BLOCKS_PER_SM
        self.memory = DevicePool(self)
        self.modules = {}       # cache key -> (module, prepared function)
        self.groups = {}        # trace group key -> CompiledKernel
        atexit.register(self.close)

    def close(self):
        """Waits for the device, frees its memory and drops the loaded modules while the
        context is current (after that, as the interpreter exits, freeing them would fail).
        Arrays still alive then lose their memory: nothing reads them any more."""
        with self.lock, self.active():
            self.stream.synchronize()
            self.memory.close()
            self.flush_memory_cache()

    @contextlib.contextmanager
    def active(self):
        """The device's primary context made current around a piece of work."""
        with self.lock:
            self.context.push()
            try:
                yield
            finally:
                self.cuda.Context.pop()

    def sync(self):
        with self.active():
            self.stream.synchronize()

    # ---- compiling ----------------------------------------------------------------------
    def lookup(self, group_key):
        return self.groups.get(group_key)

    def compile(self, kernel, layout, group_key):
        return self.compile_many([(kernel, layout, group_key)])[0]

    def compile_many(self, jobs):
        with self.active():
            return [self._compile(*job) for job in jobs]

    def _compile(self, kernel, layout, group_key):
        text = ptx_render.render(kernel)
        key = hashlib.sha256(f'{self.machine_id}\n{text}'.encode()).hexdigest()[:32]
        hit, t0 = 'memory', time.perf_counter()
        if key not in self.modules:
            hit = 'none'
            log = []
            try:
                module = self.cuda.module_from_buffer(
                    text.encode(), options=[(self.cuda.jit_option.OPTIMIZATION_LEVEL, 4)],
                    message_handler=lambda ok, info, error: log.append(error))
            except self.cuda.Error as e:
                raise RuntimeError(f'pbc.cuda: the driver rejected a generated kernel ({e}): '
                                   + ''.join(log).strip() + f'\n{text}') from None
            function = module.get_function('kernel')
            function.prepare('QQ')
            self.modules[key] = (module, function)
        sinks = tuple(slot for slot, p in enumerate(kernel.params) if p.kind == 'sink')
        entry = CompiledKernel(Launchable(self.modules[key][1], sinks), layout, key,
                               kernel.ir_ops, kernel.uses('print'), text, hit,
                               time.perf_counter() - t0, kernel.stats(), 0)
        self.groups[group_key] = entry
        return entry

    def flush_memory_cache(self):
        self.modules.clear()
        self.groups.clear()

    # ---- launching ----------------------------------------------------------------------
    def launch(self, address, size, params, serial=False, wait=True, threads=0):
        # (a kernel that prints is waited for: the driver writes its output at that point)
        self.launch_many([(address, size, params)], wait or serial, threads)

    def launch_many(self, kernels, wait=True, threads=0):
        """Queues the kernels on the stream, in order; returns at once unless `wait`."""
        with self.active():
            for launchable, size, params in kernels:
                if size:
                    self._launch(launchable, size, params)
            if wait:
                self.stream.synchronize()

    def _launch(self, launchable, size, params):
        """One launch: the parameter table (device addresses and element counts) goes to a
        block of its own, read by the kernel through its first argument. A kernel that
        prints captures its rows into device sinks, handed to the runtime's afterwards."""
        table = np.array([0 if p is None else p for p in params], dtype=np.uint64)
        sinks = [DeviceSink(self.memory, _runtime.print_sink(params[slot]), size)
                 for slot in launchable.sinks]
        address = self.memory.alloc(table.nbytes)
        try:
            for slot, sink in zip(launchable.sinks, sinks):
                table[slot] = sink.address
            self.memory.upload(address, table.ctypes.data, table.nbytes)
            blocks = min(self.max_blocks, -(-size // BLOCK))
            launchable.function.prepared_async_call(
                (blocks, 1), (BLOCK, 1, 1), self.stream, np.uint64(address), np.uint64(size))
            for sink in sinks:
                sink.collect()
        finally:
            self.memory.free(address, table.nbytes)   # (reused only by work queued later)
            for sink in sinks:
                sink.free()


class DeviceSink:
    """A print's capture on the device (ptx_render's op_print): a 64-bit count of the rows
    offered, the number of rows kept, then the rows. The kept rows (the first to arrive)
    go to the runtime's sink once the kernel has run, which formats them in lane order."""

    def __init__(self, memory, host, lanes):
        self.memory, self.host = memory, host
        self.rows = min(host.limit, max(lanes, PRINT_ROWS))
        self.nbytes = 16 + 8 * self.rows * host.nvalues
        self.address = memory.alloc(self.nbytes)
        self.header = np.array([0, self.rows], dtype=np.uint64)
        memory.upload(self.address, self.header.ctypes.data, self.header.nbytes)

    def collect(self):
        self.memory.download(self.header.ctypes.data, self.address, 16)    # (waits)
        count = int(self.header[0])
        rows = np.empty((min(count, self.rows), self.host.nvalues), dtype=np.uint64)
        self.memory.download(rows.ctypes.data, self.address + 16, rows.nbytes)
        self.host.store(rows, count)

    def free(self):
        if self.address is not None:
            self.memory.free(self.address, self.nbytes)
            self.address = None


class DevicePool:
    """The device's memory as the runtime uses it (protocol.DeviceMemory): blocks from
    cuMemAlloc, kept for reuse by size once freed; copies queued on the backend's stream."""

    def __init__(self, backend):
        self.backend, self.cuda, self.stream = backend, backend.cuda, backend.stream
        self.live = {}          # address -> its allocation (pycuda DeviceAllocation)
        self.cached = {}        # bytes -> [freed allocations of that size]
        self.live_bytes = self.cached_bytes = 0
        self.closed = False

    def alloc(self, nbytes):
        with self.backend.active():
            if self.closed:
                raise RuntimeError('pbc.cuda: the CUDA backend was closed (at exit)')
            blocks = self.cached.get(nbytes)
            if blocks:
                block = blocks.pop()
                self.cached_bytes -= nbytes
            else:
                block = self._new(nbytes)
            self.live[int(block)] = block
            self.live_bytes += nbytes
            return int(block)

    def _new(self, nbytes):
        try:
            return self.cuda.mem_alloc(nbytes)
        except self.cuda.MemoryError:
            self.trim()                     # the cache's blocks may be of other sizes
            try:
                return self.cuda.mem_alloc(nbytes)
            except self.cuda.MemoryError:
                raise MemoryError(f'pbc.cuda: cannot allocate {nbytes} bytes of device '
                                  'memory') from None

    def free(self, address, nbytes):
        with self.backend.lock:
            block = self.live.pop(address, None)
            if block is not None:           # (None: freed at close)
                self.cached.setdefault(nbytes, []).append(block)
                self.live_bytes -= nbytes
                self.cached_bytes += nbytes

    def upload(self, address, host_address, nbytes):
        if nbytes:
            with self.backend.active():
                self.cuda.memcpy_htod_async(address, _host(host_address, nbytes), self.stream)

    def download(self, host_address, address, nbytes):
        if nbytes:
            with self.backend.active():
                self.cuda.memcpy_dtoh_async(_host(host_address, nbytes), address, self.stream)
                self.stream.synchronize()

    def copy(self, dst, src, nbytes):
        if nbytes:
            with self.backend.active():
                self.cuda.memcpy_dtod_async(dst, src, nbytes, self.stream)

    def trim(self):
        with self.backend.active():
            self.stream.synchronize()       # (a cached block may still be read)
            for blocks in self.cached.values():
                for block in blocks:
                    block.free()
            self.cached.clear()
            self.cached_bytes = 0

    def close(self):
        self.trim()
        for block in self.live.values():
            block.free()
        self.live.clear()
        self.live_bytes = 0
        self.closed = True


def _host(address, nbytes):
    """A NumPy view of `nbytes` of host memory at `address` (a runtime buffer)."""
    return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(address))


_backend = None
_creating = threading.Lock()


def backend():
    """The CUDA backend on device 0, made on first use; CUDAUnavailable where it cannot be."""
    global _backend
    with _creating:
        if _backend is None:
            _backend = CUDABackend(driver())
    return _backend
