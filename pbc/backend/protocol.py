"""What eval() (pbc/evaluate.py) asks of a backend. The LLVM backend (llvm_jit.py)
implements it; a backend is chosen by the backend code of the arrays' types (pbc.llvm's
are 0) through evaluate.BACKENDS.

eval() assembles a trace group into a pbc.kernel.Kernel and its Layout, asks the backend
for a compiled form (`lookup` by the group's key, else `compile`), fills the parameter slots
from `layout.param_values(...)` (64-bit values: buffer addresses and element counts) and
launches it; its outputs then hold the results. A compiled form carries what eval() and
kernel_history() read (CompiledKernel). A backend's module has `backend()`, which makes the
backend on first use (or raises a RuntimeError saying why it cannot run here), and
`_backend`, the one made so far or None.

A backend whose arrays live on a device has a `memory` (DeviceMemory): the runtime keeps
their buffers there (pbc/_rt_device.pxi) and passes device addresses in the parameters.
The LLVM backend's `memory` is None: its arrays are the runtime's host buffers.
"""

from typing import NamedTuple, Protocol, runtime_checkable


class CompiledKernel(NamedTuple):
    """A backend's compiled form of a trace group: what eval() and kernel_history() read."""
    address: object        # what `launch` runs (the LLVM backend: a function address)
    layout: object         # pbc.kernel.Layout: how to fill the parameter slots
    hash: str              # cache key of the rendered text
    ir_ops: int
    prints: bool           # contains pbc.print: launched alone, its output delivered after
    ir: str                # the rendered text (JitFlag.PrintIR)
    cache_hit: str         # 'none', 'memory' or 'disk': how the first request was served
    backend_time: float    # seconds compiling (or loading from the disk cache)
    stats: dict = {}       # what assembly optimized (Kernel.stats())
    threads: int = 0       # the most threads it may run on (0: any)


@runtime_checkable
class DeviceMemory(Protocol):
    """A device's memory, as the runtime uses it. Addresses are ints; every call is ordered
    after the work queued before it, and a download returns once its data has arrived."""

    def alloc(self, nbytes):
        """The address of a new block of at least nbytes (reused blocks come first)."""

    def free(self, address, nbytes):
        """Gives back a block of alloc(nbytes); work queued before may still use it."""

    def upload(self, address, host_address, nbytes):
        """Copies nbytes of host memory to the device (the host memory may go at return)."""

    def download(self, host_address, address, nbytes):
        """Copies nbytes from the device to host memory, after the work queued before."""

    def copy(self, dst, src, nbytes):
        """Copies nbytes between two device blocks, after the work queued before."""

    def trim(self):
        """Returns the blocks kept for reuse to the driver."""


@runtime_checkable
class Backend(Protocol):
    name: str              # 'llvm', ...: Kernel assembly and kernel_history() use it
    memory: object         # DeviceMemory, or None where arrays live in host memory

    def lookup(self, group_key):
        """The CompiledKernel of a trace group seen before, or None."""

    def compile(self, kernel, layout, group_key):
        """Renders and compiles `kernel` (through the backend's caches, keyed on the rendered
        text and what the code is for) and remembers the result under `group_key`."""

    def compile_many(self, jobs):
        """compile() of [(kernel, layout, group_key)], as one batch where that is cheaper."""

    def launch(self, address, size, params, serial=False, wait=True, threads=0):
        """Runs a compiled kernel on lanes [0, size); returns before it ends unless `wait`."""

    def launch_many(self, kernels, wait=True, threads=0):
        """Runs [(address, size, params)] that read nothing the others write, as one job."""

    def sync(self):
        """Returns once every launched kernel has finished."""

    def flush_memory_cache(self):
        """Forgets compiled kernels held in memory (the disk cache stays)."""
