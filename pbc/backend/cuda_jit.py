"""The CUDA backend (pbc/backend/protocol.py): PTX from ptx_render.py, loaded and launched
through PyCUDA's driver API.

Memory stays where the runtime keeps it, in host buffers, which every other part of pbc
reads; a launch mirrors them: it copies what the kernel reads to device memory, runs the
kernel, and copies back what it wrote (its outputs and the buffers it scatters into),
before returning. Device memory comes from a pool that reuses freed blocks by size, as the
runtime's host buffer cache does. This first form is correct before it is fast: arrays
living on the device between kernels are the next step.

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
from ..ops import TYPE_NAMES
from . import ptx_render
from .protocol import CompiledKernel

BLOCK = 256                 # threads per block; the kernels loop over lanes (grid-stride)
BLOCKS_PER_SM = 32          # enough blocks to fill the device and no more


class CUDAUnavailable(RuntimeError):
    """pbc.cuda cannot run here; the message says what is missing."""


class Launchable(NamedTuple):
    """A CUDA kernel's CompiledKernel.address, what `launch` gets: its prepared function
    and what its launch copies."""
    function: object
    transfers: object       # Transfers


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
        self.context = self.device.retain_primary_context()
        # The kernel cache's key: the PTX text and what it is compiled for and by.
        self.machine_id = '|'.join([
            'sm_%d%d' % self.device.compute_capability(), f'driver {cuda.get_driver_version()}',
            f'pycuda cuda {cuda.get_version()}', ptx_render.TARGET, ptx_render.ISA])
        with self.active():
            sms = self.device.get_attribute(cuda.device_attribute.MULTIPROCESSOR_COUNT)
        self.max_blocks = max(1, sms) * BLOCKS_PER_SM
        self.memory = {}        # cache key -> (module, prepared function)
        self.groups = {}        # trace group key -> CompiledKernel
        self.pool = {}          # bytes -> [free device allocations]
        self.lock = threading.RLock()
        atexit.register(self.close)

    def close(self):
        """Frees the pool's device memory and drops the loaded modules while the context is
        current (after that, as the interpreter exits, freeing them would fail)."""
        with self.lock, self.active():
            for blocks in self.pool.values():
                for block in blocks:
                    block.free()
            self.pool.clear()
            self.flush_memory_cache()

    @contextlib.contextmanager
    def active(self):
        """The device's primary context made current around a piece of work."""
        self.context.push()
        try:
            yield
        finally:
            self.cuda.Context.pop()

    # ---- compiling ----------------------------------------------------------------------
    def lookup(self, group_key):
        return self.groups.get(group_key)

    def compile(self, kernel, layout, group_key):
        return self.compile_many([(kernel, layout, group_key)])[0]

    def compile_many(self, jobs):
        with self.lock, self.active():
            return [self._compile(*job) for job in jobs]

    def _compile(self, kernel, layout, group_key):
        text = ptx_render.render(kernel)
        key = hashlib.sha256(f'{self.machine_id}\n{text}'.encode()).hexdigest()[:32]
        hit, t0 = 'memory', time.perf_counter()
        if key not in self.memory:
            hit = 'none'
            log = []
            try:
                module = self.cuda.module_from_buffer(
                    text.encode(), message_handler=lambda ok, info, error: log.append(error))
            except self.cuda.Error as e:
                raise RuntimeError(f'pbc.cuda: the driver rejected a generated kernel ({e}): '
                                   + ''.join(log).strip() + f'\n{text}') from None
            function = module.get_function('kernel')
            function.prepare('QQ')
            self.memory[key] = (module, function)
        entry = CompiledKernel(Launchable(self.memory[key][1], _transfers(kernel)), layout,
                               key, kernel.ir_ops, kernel.uses('print'), text, hit,
                               time.perf_counter() - t0, kernel.stats(), 0)
        self.groups[group_key] = entry
        return entry

    def flush_memory_cache(self):
        self.memory.clear()
        self.groups.clear()

    # ---- memory -------------------------------------------------------------------------
    def _alloc(self, nbytes):
        nbytes = max(nbytes, 8)
        free = self.pool.get(nbytes)
        return free.pop() if free else self.cuda.mem_alloc(nbytes)

    def _free(self, nbytes, block):
        self.pool.setdefault(max(nbytes, 8), []).append(block)

    # ---- launching ----------------------------------------------------------------------
    def launch(self, address, size, params, serial=False, wait=True, threads=0):
        self.launch_many([(address, size, params)], wait, threads)

    def launch_many(self, kernels, wait=True, threads=0):
        """Runs the kernels one after the other, each with its memory mirrored (see the
        module's description); returns when all are done and copied back."""
        with self.lock, self.active():
            for launchable, size, params in kernels:
                self._run(launchable, size, params)

    def _run(self, launchable, size, params):
        if size == 0:
            return
        cuda = self.cuda
        kinds = launchable.transfers
        slots = np.array([0 if p is None else p for p in params], dtype=np.uint64)
        device = []             # (host address, bytes, allocation, copy back)
        try:
            for slot, nbytes, back in kinds.copies(params, size):
                block = self._alloc(nbytes)
                device.append((int(params[slot]), nbytes, block, back))
                if not kinds.output(slot):
                    cuda.memcpy_htod(block, _host(int(params[slot]), nbytes))
                slots[slot] = int(block)
            for slot in kinds.sinks:
                slots[slot] = 0
            table = self._alloc(slots.nbytes)
            device.append((0, slots.nbytes, table, False))
            cuda.memcpy_htod(table, slots)
            blocks = min(self.max_blocks, -(-size // BLOCK))
            launchable.function.prepared_call((blocks, 1), (BLOCK, 1, 1),
                                              np.uint64(int(table)), np.uint64(size))
            cuda.Context.synchronize()
            for host, nbytes, block, back in device:
                if back:
                    cuda.memcpy_dtoh(_host(host, nbytes), block)
        finally:
            for _, nbytes, block, _ in device:
                self._free(nbytes, block)


class Transfers(NamedTuple):
    """What a kernel's launch copies, from its parameters (pbc.kernel.Param): 'in' buffers
    hold `size` values, 'in1' one, 'ptr' buffers as many as the next slot says, of the type
    the kernel's gathers and scatters give them; 'out' buffers are copied back, and so are
    the 'ptr' buffers the kernel scatters into."""
    kinds: tuple            # per slot: Param.kind
    types: tuple            # per slot: Param.type, for 'ptr' slots their elements' (or None)
    written: frozenset      # 'ptr' slots that scatters write

    @property
    def sinks(self):
        return [s for s, k in enumerate(self.kinds) if k == 'sink']

    def output(self, slot):
        return self.kinds[slot] == 'out'

    def copies(self, params, size):
        """(slot, bytes, copy back) per buffer the kernel reads or writes."""
        for slot, (kind, tname) in enumerate(zip(self.kinds, self.types)):
            if kind in ('in', 'out'):
                yield slot, size * _itemsize(tname), kind == 'out'
            elif kind == 'in1':
                yield slot, _itemsize(tname), False
            elif kind == 'ptr':
                if tname is None:
                    raise RuntimeError(f'pbc.cuda: cannot tell the element type of the buffer '
                                       f'in parameter {slot}, so it cannot be copied')
                yield slot, int(params[slot + 1]) * _itemsize(tname), slot in self.written


def _transfers(kernel):
    instrs = kernel.instrs

    def slots(reg):
        """The 'ptr' parameter slots a gather's or scatter's pointer may be."""
        ins = instrs[reg]
        if ins.op == 'ptr':
            return [ins.slot]
        return [instrs[p].slot for p in ins.args[1:]] if ins.op == 'lane_ptr' else []

    element, written = {}, set()
    for ins in instrs:
        if ins.op == 'gather':
            for slot in slots(ins.args[0]):
                element.setdefault(slot, ins.type)
        elif ins.op == 'scatter':
            for slot in slots(ins.args[0]):
                element.setdefault(slot, instrs[ins.args[1]].type)
                written.add(slot)
    types = tuple(element.get(slot) if p.kind == 'ptr' else p.type
                  for slot, p in enumerate(kernel.params))
    return Transfers(tuple(p.kind for p in kernel.params), types, frozenset(written))


def _itemsize(tname):
    """Bytes per element of a runtime buffer of type `tname` (Bools are one byte)."""
    return np.dtype(_runtime.NUMPY_DTYPES[TYPE_NAMES.index(tname)]).itemsize


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

