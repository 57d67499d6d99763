"""The CUDA backend (pbc/backend/protocol.py): PTX from ptx_render.py, loaded and launched
through the CUDA driver API (cuda_driver.py, libcuda bound with ctypes).

Arrays live in device memory (pbc/_rt_device.pxi): what the host makes moves there when a
kernel first reads it, kernels write their outputs there, and the host copies out only what
it reads (.numpy(), an element, the host-side reductions). Device memory comes from a pool
that reuses freed blocks by size, as the runtime's host buffer cache does. Launches, copies
and frees are queued on one stream in order, so a launch returns at once and a block freed
while a kernel may still read it is reused only by work queued after that kernel; reading
memory on the host waits for the stream.

Without the NVIDIA driver or without a device, making the backend raises CUDAUnavailable
naming what is missing. The device's primary context is retained (as the CUDA runtime and
Dr.Jit do, so pbc shares it with them) and pushed around each piece of work.
"""

import atexit
import contextlib
import dataclasses
import hashlib
import os
import threading
import time
from typing import NamedTuple

import numpy as np

from .. import _runtime
from ..kernel import CONSTANT
from . import cuda_driver, ptx_render
from .protocol import CompiledKernel

BLOCK = 256                 # threads per block; the kernels loop over lanes (grid-stride)
BLOCKS_PER_SM = 32          # enough blocks to fill the device and no more
PRINT_ROWS = 1 << 16        # rows a print keeps without a limit, if it has fewer lanes


class CUDAUnavailable(RuntimeError):
    """pbc.cuda cannot run here; the message says what is missing."""


class Launchable(NamedTuple):
    """A CUDA kernel's CompiledKernel.address, what `launch` gets."""
    function: int           # the driver's handle of the kernel function
    sinks: tuple            # parameter slots of print sinks (the runtime's, on the host)


def load_driver():
    """The CUDA driver (cuda_driver.Driver), started, with a device; or CUDAUnavailable."""
    try:
        driver = cuda_driver.Driver()
    except OSError as e:
        raise CUDAUnavailable(f'pbc.cuda needs the NVIDIA driver (libcuda.so.1): {e}') from None
    except cuda_driver.CUDAError as e:
        raise CUDAUnavailable(f'pbc.cuda: the CUDA driver does not start: {e}') from None
    if driver.device_count() == 0:
        raise CUDAUnavailable('pbc.cuda: the CUDA driver finds no device')
    return driver


class CUDABackend:
    name = 'cuda'

    def __init__(self, driver, ordinal=0):
        self.driver = driver
        self.device = driver.device(ordinal)
        self.ordinal = ordinal
        self.context = driver.retain_primary_context(self.device)
        # The kernel cache's key: the PTX text and what it is compiled for and by.
        self.machine_id = '|'.join([
            'sm_%d%d' % driver.compute_capability(self.device),
            f'driver {driver.version()}', ptx_render.TARGET, ptx_render.ISA])
        self.lock = threading.RLock()
        self.pid = os.getpid()  # (CUDA does not survive fork: see active)
        with self.active():
            sms = driver.attribute(self.device, cuda_driver.ATTRIBUTE_MULTIPROCESSOR_COUNT)
            self.stream = driver.create_stream()
        self.max_blocks = max(1, sms) * BLOCKS_PER_SM
        self.memory = DevicePool(self)
        self.modules = {}       # cache key -> (module handle, function handle)
        self.groups = {}        # trace group key -> CompiledKernel
        self.tables = {}        # trace group key -> [(device address, bytes)] of its tables
        atexit.register(self.close)

    def close(self):
        """Waits for the device, frees its memory and unloads the modules while the
        context is current (after that, as the interpreter exits, freeing them would fail),
        then releases the context. Arrays still alive then lose their memory: nothing
        reads them any more."""
        with self.lock:
            if self.context is None or os.getpid() != self.pid:   # (closed, or a fork's)
                return
            with self.active():
                self.driver.synchronize(self.stream)
                self.memory.close()
                self.flush_memory_cache()
                self.driver.destroy_stream(self.stream)
            self.driver.release_primary_context(self.device)
            self.context = None

    @contextlib.contextmanager
    def active(self):
        """The device's primary context made current around a piece of work."""
        with self.lock:
            if self.context is None:
                raise RuntimeError('pbc.cuda: the CUDA backend was closed (at exit)')
            if os.getpid() != self.pid:
                raise CUDAUnavailable(
                    'pbc.cuda: this process was forked from one that had started the CUDA '
                    'driver, and CUDA cannot run in such a process: start worker processes '
                    "with multiprocessing's 'spawn' or 'forkserver' method")
            self.driver.push_context(self.context)
            try:
                yield
            finally:
                self.driver.pop_context()

    def sync(self):
        with self.active():
            self.driver.synchronize(self.stream)

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
            try:
                module = self.driver.load_module(text)
            except cuda_driver.CUDAError as e:
                raise RuntimeError(f'pbc.cuda: the driver rejected a generated kernel: {e}'
                                   f'\n{text}') from None
            self.modules[key] = (module, self.driver.get_function(module, 'kernel'))
        sinks = tuple(slot for slot, p in enumerate(kernel.params) if p.kind == 'sink')
        layout = self._tables_on_device(kernel, layout, group_key)
        entry = CompiledKernel(Launchable(self.modules[key][1], sinks), layout, key,
                               kernel.ir_ops, kernel.uses('print'), text, hit,
                               time.perf_counter() - t0, kernel.stats(), 0)
        self.groups[group_key] = entry
        return entry

    def _tables_on_device(self, kernel, layout, group_key):
        """The layout with the tables that assembly made (constants of merged call targets,
        host memory) copied to device memory, which the group's entry keeps until the
        cache is flushed."""
        if not layout.tables:
            return layout
        device = {}                       # host address -> device address
        for table in layout.tables:
            address = self.memory.alloc(table.nbytes)
            self.memory.upload(address, table.ctypes.data, table.nbytes)
            device[table.ctypes.data] = address
            self.tables.setdefault(group_key, []).append((address, table.nbytes))
        sources = [(pos, device[value]) if pos == CONSTANT and param.kind == 'ptr'
                   else (pos, value) for (pos, value), param in zip(layout.sources,
                                                                    kernel.params)]
        return dataclasses.replace(layout, sources=sources, tables=[])

    def flush_memory_cache(self):
        with self.active():
            self.driver.synchronize(self.stream)     # (a queued launch may use a module)
            for module, _ in self.modules.values():
                self.driver.unload_module(module)
        for blocks in self.tables.values():
            for address, nbytes in blocks:
                self.memory.free(address, nbytes)
        self.modules.clear()
        self.groups.clear()
        self.tables.clear()

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
                self.driver.synchronize(self.stream)

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
            self.driver.launch(launchable.function, blocks, BLOCK, self.stream,
                               (address, size))
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
        self.backend, self.driver, self.stream = backend, backend.driver, backend.stream
        self.live = {}          # address -> bytes, of blocks in use
        self.cached = {}        # bytes -> [addresses of freed blocks of that size]
        self.live_bytes = self.cached_bytes = 0

    def alloc(self, nbytes):
        with self.backend.active():
            blocks = self.cached.get(nbytes)
            if blocks:
                address = blocks.pop()
                self.cached_bytes -= nbytes
            else:
                address = self._new(nbytes)
            self.live[address] = nbytes
            self.live_bytes += nbytes
            return address

    def _new(self, nbytes):
        try:
            return self.driver.mem_alloc(nbytes)
        except cuda_driver.OutOfMemory:
            self.trim()                     # the cache's blocks may be of other sizes
            try:
                return self.driver.mem_alloc(nbytes)
            except cuda_driver.OutOfMemory:
                raise MemoryError(f'pbc.cuda: cannot allocate {nbytes} bytes of device '
                                  'memory') from None

    def free(self, address, nbytes):
        with self.backend.lock:
            if self.live.pop(address, None) is not None:        # (None: freed at close)
                self.cached.setdefault(nbytes, []).append(address)
                self.live_bytes -= nbytes
                self.cached_bytes += nbytes

    def upload(self, address, host_address, nbytes):
        if nbytes:
            with self.backend.active():
                self.driver.memcpy_htod(address, host_address, nbytes, self.stream)

    def download(self, host_address, address, nbytes):
        if nbytes:
            with self.backend.active():
                self.driver.memcpy_dtoh(host_address, address, nbytes, self.stream)
                self.driver.synchronize(self.stream)

    def copy(self, dst, src, nbytes):
        if nbytes:
            with self.backend.active():
                self.driver.memcpy_dtod(dst, src, nbytes, self.stream)

    def trim(self):
        with self.backend.active():
            self.driver.synchronize(self.stream)      # (a cached block may still be read)
            for blocks in self.cached.values():
                for address in blocks:
                    self.driver.mem_free(address)
            self.cached.clear()
            self.cached_bytes = 0

    def close(self):
        self.trim()
        for address in self.live:
            self.driver.mem_free(address)
        self.live.clear()
        self.live_bytes = 0


_backend = None
_creating = threading.Lock()


def backend():
    """The CUDA backend on device 0, made on first use; CUDAUnavailable where it cannot be."""
    global _backend
    with _creating:
        if _backend is None:
            _backend = CUDABackend(load_driver())
    return _backend
