"""A stand-in for the CUDA driver (pbc/backend/cuda_driver.Driver's calls), so that pbc.cuda's
launcher and device memory run on a machine without a GPU.

Device memory is host memory of its own, at addresses the host cannot dereference
(non-canonical on x86-64: a host read of one crashes, as it would with a GPU); the stream
queues its work and runs it when synchronized, as a device would run it later; a loaded
module's kernel runs through the LLVM backend on the device memory. What this cannot show
is that the PTX computes what the LLVM code computes (ptxas checks that it assembles:
tests/test_ptx.py), nor the driver's timing: that needs a GPU.

`install()` puts it in place of the driver for a whole test session
(PBC_TEST_BACKEND=cuda without a GPU: tests/conftest.py); the `fake_gpu` fixture of
tests/conftest.py makes one per test.
"""

import atexit
import bisect
import ctypes

import numpy as np

import pbc
from pbc import evaluate
from pbc.backend import cuda_driver, cuda_jit, llvm_jit, ptx_render

DEVICE_BASE = 0xD000_0000_0000_0000     # device addresses start here (non-canonical)
REAL_LOAD_DRIVER = cuda_jit.load_driver  # (what Installed replaces)


class StandInDriver:
    """cuda_driver.Driver's calls, on host memory, with a queue for a stream."""
    next_address = DEVICE_BASE          # (shared: no two stand-ins' addresses meet)

    def __init__(self, kernels):
        self.kernels = kernels            # PTX text -> Kernel (recorded by the renderer)
        self.blocks = {}                  # device address -> its host bytes
        self.starts = []                  # the blocks' addresses, sorted
        self.allocations = 0
        self.depth = 0                    # of pushed contexts
        self.launches = []                # (blocks, threads, lanes) of each launch
        self.downloads = []               # bytes per device-to-host copy
        self.queue = []                   # the stream's work, not yet run
        self.capacity = 1 << 30           # blocks the "device" holds at most
        self.modules = {}                 # handle -> PTX text, of loaded modules
        self.retained = 0

    def _current(self):
        assert self.depth > 0, 'a driver call without a current context'

    # ---- the driver and its device --------------------------------------------------------
    def version(self):
        return 12040

    def device_count(self):
        return 1

    def device(self, ordinal):
        assert ordinal == 0
        return 0

    def device_name(self, device):
        return 'stand-in device'

    def attribute(self, device, attribute):
        self._current()
        assert attribute == cuda_driver.ATTRIBUTE_MULTIPROCESSOR_COUNT
        return 2

    def compute_capability(self, device):
        return (9, 0)

    def memory_info(self):
        return (1 << 30, 1 << 31)

    # ---- contexts and the stream ----------------------------------------------------------
    def retain_primary_context(self, device):
        self.retained += 1
        return 0xC0

    def release_primary_context(self, device):
        self.retained -= 1

    def push_context(self, context):
        assert context == 0xC0
        self.depth += 1

    def pop_context(self):
        self.depth -= 1
        return 0xC0

    def create_stream(self):
        self._current()
        return 0x5000

    def destroy_stream(self, stream):
        self._current()
        assert stream == 0x5000 and not self.queue

    def synchronize(self, stream):
        self._current()
        assert stream == 0x5000
        work, self.queue[:] = list(self.queue), []
        for run in work:
            run()

    # ---- memory ---------------------------------------------------------------------------
    def mem_alloc(self, nbytes):
        self._current()
        if len(self.blocks) >= self.capacity:
            raise cuda_driver.OutOfMemory('cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (2)',
                                          cuda_driver.CUDA_ERROR_OUT_OF_MEMORY)
        self.allocations += 1
        block = np.zeros(nbytes + 256, dtype=np.uint8)      # (LLVM kernels load vectors)
        start = -block.ctypes.data % 64
        address = StandInDriver.next_address
        StandInDriver.next_address += (nbytes + 4096) // 4096 * 4096
        self.blocks[address] = block[start:start + nbytes + 128]    # (and 128 to spare)
        bisect.insort(self.starts, address)
        return address

    def mem_free(self, address):
        self._current()
        del self.blocks[address]
        del self.starts[bisect.bisect_left(self.starts, address)]

    def view(self, address, nbytes):
        """The host bytes of device memory [address, address + nbytes)."""
        k = bisect.bisect_right(self.starts, address) - 1
        base = self.starts[k] if k >= 0 else None
        assert base is not None and address + nbytes <= base + self.blocks[base].size - 128, \
            'not device memory'
        return self.blocks[base][address - base:address - base + nbytes]

    def host_address(self, word):
        """A kernel parameter: device addresses become the host addresses of their bytes."""
        return word if word < DEVICE_BASE else self.view(word, 0).ctypes.data

    def memcpy_htod(self, dst, host_address, nbytes, stream):
        self._current()
        staged = _host(host_address, nbytes).copy()         # (the host's may go at return)
        self.queue.append(lambda: self.view(dst, nbytes).__setitem__(..., staged))

    def memcpy_dtoh(self, host_address, src, nbytes, stream):
        self._current()
        self.downloads.append(nbytes)
        self.queue.append(lambda: _host(host_address, nbytes).__setitem__(
            ..., self.view(src, nbytes)))

    def memcpy_dtod(self, dst, src, nbytes, stream):
        self._current()
        self.queue.append(lambda: self.view(dst, nbytes).__setitem__(
            ..., self.view(src, nbytes)))

    # ---- modules and launches -------------------------------------------------------------
    def load_module(self, ptx, optimization_level=4):
        self._current()
        assert optimization_level == 4
        if 'REJECT' in ptx:
            raise cuda_driver.CUDAError('cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX '
                                        '(218)\nptxas application ptx input, line 3; error: '
                                        'REJECT', 218)
        handle = 0x100 + len(self.modules) + 1
        while handle in self.modules:
            handle += 1
        self.modules[handle] = ptx
        return handle

    def unload_module(self, module):
        self._current()
        del self.modules[module]

    def get_function(self, module, name):
        assert name == 'kernel'
        return _Function(self, self.modules[module])

    def launch(self, function, blocks, threads, stream, args):
        self._current()
        table, size = args
        assert blocks * threads >= 1 and stream == 0x5000
        self.launches.append((blocks, threads, size))
        self.queue.append(lambda: function.run(table, size))


class _Function:
    """A loaded kernel: the LLVM backend's compiled form of the same Kernel."""

    def __init__(self, driver, ptx):
        self.driver, self.kernel = driver, driver.kernels[ptx]
        # (keyed by the text: an id() of a Kernel since freed could name another kernel)
        self.key = ('stand-in', ptx)
        self.compiled()

    def compiled(self):
        """The LLVM backend's code, compiled again if its cache was flushed since (a flush
        of both backends' caches flushes the LLVM one first, then waits for the stream)."""
        be = llvm_jit.backend()
        return be.lookup(self.key) or be.compile(self.kernel, None, self.key)

    def run(self, table, size):
        driver = self.driver
        words = driver.view(table, 8 * len(self.kernel.params)).view(np.uint64)
        for word, param in zip(words, self.kernel.params):
            if param.kind != 'size':                  # device addresses only
                assert word >= DEVICE_BASE, param
        params = [driver.host_address(int(w)) for w in words]
        sinks = {ins.slot: _Capture(driver, int(words[ins.slot]), len(ins.args) - 1)
                 for ins in self.kernel.instrs if ins.op == 'print'}
        for slot, capture in sinks.items():
            params[slot] = ctypes.addressof(capture.sink)
        # (a GPU kernel flushes subnormals as it was compiled to; the CPU's as the flag
        # is when it is launched, which for the stand-in's queue is later)
        with pbc.scoped_set_flag(pbc.JitFlag.FlushDenormals, self.kernel.flush_denormals):
            llvm_jit.backend().launch(self.compiled().address, size, params,
                                      serial=bool(sinks), wait=True)
        for capture in sinks.values():
            capture.finish()


class _HostSink(ctypes.Structure):        # pbc/_print_capture.h's pbc_print_sink
    _fields_ = [('count', ctypes.c_uint64), ('limit', ctypes.c_uint64),
                ('cap', ctypes.c_uint64), ('nvalues', ctypes.c_uint32),
                ('data', ctypes.POINTER(ctypes.c_uint64))]


class _Capture:
    """What ptx_render's op_print does to a device sink (a count, the rows kept, the rows),
    done by the LLVM kernel's capture into a host sink and copied over, the lanes' rows in
    reverse order (a GPU's rows arrive in any order; each lane's in its own order)."""

    def __init__(self, driver, address, nvalues):
        self.header = driver.view(address, 16).view(np.uint64)
        self.rows = driver.view(address + 16, 8 * int(self.header[1]) * nvalues).view(np.uint64)
        self.sink = _HostSink(count=0, limit=int(self.header[1]), cap=0, nvalues=nvalues)
        self.nvalues = nvalues

    def finish(self):
        kept = min(self.sink.count, self.sink.limit)
        if kept:
            rows = np.ctypeslib.as_array(self.sink.data, shape=(kept, self.nvalues)).copy()
            rows = rows[np.argsort(-rows[:, -1].astype(np.int64), kind='stable')]
            self.rows[:rows.size] = rows.ravel()
            ctypes.CDLL(None).free(self.sink.data)
        self.header[0] += self.sink.count


def _host(address, nbytes):
    """A NumPy view of `nbytes` of host memory at `address`."""
    return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(address))


def set_aside_backend():
    """Makes the next use of pbc.cuda make a new backend; returns what put_back_backend
    needs to put back the one made before, if any."""
    saved = cuda_jit._backend, evaluate._backends.pop(1, None)
    cuda_jit._backend = None
    return saved


def put_back_backend(saved):
    cuda_jit._backend, before = saved
    evaluate._backends.pop(1, None)
    if before is not None:
        evaluate._backends[1] = before


class Installed:
    """A stand-in put in place of the driver: PTX the renderer makes is recorded with its
    Kernel (the stand-in's "GPU" runs that), and the backend made next uses the stand-in.
    `close()` puts back what was there, the backend made before included."""

    def __init__(self, set_attribute=setattr):
        self.kernels = {}
        self.driver = StandInDriver(self.kernels)
        render = ptx_render.render

        def recording(kernel, name='kernel'):
            # (Kernels that render the same PTX are the same program on a GPU: the first
            # one's LLVM code stands for all of them, as a driver's cache would)
            text = render(kernel, name)
            self.kernels.setdefault(text, kernel)
            return text

        self.saved = set_aside_backend()
        set_attribute(cuda_jit.ptx_render, 'render', recording)
        set_attribute(cuda_jit, 'load_driver', lambda: self.driver)

    def close(self):
        """Closes the backend made on the stand-in (what the interpreter's exit runs) and
        puts back the one made before."""
        made = cuda_jit._backend
        if made is not None:
            made.close()
            atexit.unregister(made.close)
        put_back_backend(self.saved)
        return made
