"""eval(): drains the runtime's queues, assembles one Kernel per (backend, size) group,
compiles it through the backend's caches, launches it, and keeps the kernel history."""

import atexit
import gc
import importlib
import logging
import sys
import time

from . import _runtime, config
from .flags import JitFlag
from .kernel import FEW_LANES, STREAMING_LANES, assemble
from .tree import ArrayBase, leaves

log = logging.getLogger('pbc')
if config.DEBUG:
    logging.basicConfig()
    log.setLevel(logging.DEBUG)

BACKENDS = ('llvm', 'cuda')     # by backend code
# The module whose backend() makes each backend that can run (pbc/backend/protocol.py),
# imported on first use (LLVM's loads LLVM).
_MAKERS = {'llvm': 'pbc.backend.llvm_jit', 'cuda': 'pbc.backend.cuda_jit'}
_history = []


def _backend(code):
    be = _backends.get(code)
    if be is None:
        name = BACKENDS[code]
        be = _backends[code] = importlib.import_module(_MAKERS[name]).backend()
    return be


_backends = {}                  # backend code -> the backend, once made


def has_backend(backend):
    """Whether arrays of `backend` ('llvm', 'cuda', or a JitBackend) can run kernels here:
    CUDA needs the NVIDIA driver and a device."""
    from .traits import JitBackend
    if isinstance(backend, JitBackend):
        backend = backend.name.lower()
    if backend not in ('llvm', 'cuda', 'metal', 'invalid'):
        raise ValueError(f'pbc.has_backend(): unknown backend {backend!r}')
    if backend not in _MAKERS:
        return False
    try:
        _backend(BACKENDS.index(backend))
    except RuntimeError:            # (the backend's error says what is missing)
        return False
    return True


def eval_pending(compiled_only=False):
    """Runs every scheduled evaluation and queued side effect; with `compiled_only`, only
    if every kernel that takes is compiled already (else it leaves the queues as they were
    and returns False). Python's cyclic garbage collector waits meanwhile: assembly makes
    many short-lived tuples, which set off collections that scanned the whole heap (64
    `i mod 5` call targets, first call: 16-20 -> 14.5 ms); what they leave behind is a few
    objects, collected later."""
    roots, groups = _runtime.take_groups()
    printed = []
    collecting = gc.isenabled()
    gc.disable()
    try:
        summaries = _runtime.group_summaries(groups)
        bits = _runtime.get_flags()
        options = _options(bits)
        if compiled_only and not _compiled(groups, summaries, options):
            _runtime.requeue(roots)
            roots = []
            return False
        ahead = _compile_ahead(groups, summaries, options) if len(groups) > 1 else {}
        batch = []                  # prepared runs of groups that no other reads from
        try:
            for (backend, size, outputs, _effects, ids), summary in zip(groups, summaries):
                if summary is None:       # it reads outputs of groups before it: run those
                    printed += _launch(batch, bits)
                run = _prepare(backend, size, outputs, ids, summary, ahead, options, bits)
                if batch and batch[0].be is not run.be:   # (a batch is one backend's job)
                    printed += _launch(batch, bits)
                batch.append(run)
                if run.entry.prints:      # (in lane order, alone)
                    printed += _launch(batch, bits)
            printed += _launch(batch, bits)
        except BaseException:
            for run in batch:
                run.free()
            raise
    finally:
        if collecting:
            gc.enable()
        _runtime.release_roots(roots)
    # Symbolic prints are formatted once the runtime is consistent again: formatting (or the
    # file it writes to) may use pbc itself.
    for deliver, rows, count in printed:
        deliver(rows, count)
    return True


def _compiled(groups, summaries, options):
    """Whether a cache holds the kernel of every group (each with a summary now)."""
    for (code, size, _, _, _), summary in zip(groups, summaries):
        if summary is None or \
                _backend(code).lookup(_group_key(code, size, summary[0], options)) is None:
            return False
    return True


def take_kernels(backend='llvm'):
    """Drains the queues into Kernels without running them (their side effects are dropped):
    for inspecting or rendering what eval() would launch."""
    roots, groups = _runtime.take_groups()
    try:
        options = _options(_runtime.get_flags())
        return [assemble(backend, outputs, _runtime.group_records(ids), size, *options)[0]
                for _, size, outputs, _, ids in groups]
    finally:
        _runtime.release_roots(roots)


# Flag bits as plain ints: `bits & JitFlag.X` would make an enum member every time.
(_OPTIMIZE_LOOPS, _MERGE_FUNCTIONS, _OPTIMIZE_CALLS, _FLUSH_DENORMALS, _PRINT_IR,
 _KERNEL_HISTORY, _LAUNCH_BLOCKING) = map(int, (
     JitFlag.OptimizeLoops, JitFlag.MergeFunctions, JitFlag.OptimizeCalls,
     JitFlag.FlushDenormals, JitFlag.PrintIR, JitFlag.KernelHistory, JitFlag.LaunchBlocking))


def _options(bits):
    """The flags kernel assembly reads, of the runtime's flag bits (assemble's optional
    arguments, in order)."""
    return bool(bits & _OPTIMIZE_LOOPS), bool(bits & _MERGE_FUNCTIONS), \
        bool(bits & _OPTIMIZE_CALLS), bool(bits & _FLUSH_DENORMALS)


def _group_key(backend_code, size, summary_key, options):
    """A group's kernel cache key: its summary's, with what else assembly reads (and the
    backend, so that groups of two backends traced alike never share an entry)."""
    return backend_code, summary_key, size >= STREAMING_LANES, size < FEW_LANES, options


def _compile_ahead(groups, summaries, options):
    """Compiles the kernels of the groups that no cache holds yet, all together (see
    compile_many), before the first runs: those with a summary (see group_summaries), whose
    kernels are the same now as when they run. {group key: (CompiledKernel, code
    generation time)} of those compiled."""
    jobs, codegen, keys = [], [], set()
    be = _backend(0)
    for (code, size, outputs, _, ids), summary in zip(groups, summaries):
        if summary is None or BACKENDS[code] != 'llvm':
            continue
        key = _group_key(code, size, summary[0], options)
        if key not in keys and be.lookup(key) is None:
            t0 = time.perf_counter()
            keys.add(key)
            kernel, layout = assemble(be.name, outputs, _runtime.group_records(ids), size,
                                      *options)
            jobs.append((kernel, layout, key))
            codegen.append(time.perf_counter() - t0)
    if not jobs:
        return {}
    t0 = time.perf_counter()
    entries = be.compile_many(jobs)
    rendering = (time.perf_counter() - t0 - sum(e.backend_time for e in entries)) / len(jobs)
    return {job[2]: (entry, t + rendering) for job, entry, t in zip(jobs, entries, codegen)}


class _Run:
    """A group ready to launch: its compiled kernel, output buffers and parameters."""
    __slots__ = ('code', 'be', 'entry', 'size', 'outputs', 'leaves', 'buffers', 'values',
                 'hit', 'codegen_time', 'backend_time')

    def free(self):
        for ptr, vt in zip(self.buffers, self.entry.layout.output_types):
            _runtime.free_buffer(ptr, vt, self.size, self.code)
        self.buffers = []


def _prepare(backend_code, size, outputs, ids, summary, ahead, options, bits):
    """The group's _Run: its kernel from a cache or compiled now, its outputs allocated."""
    run = _Run()
    run.code, run.be = backend_code, (be := _backend(backend_code))
    t0 = time.perf_counter()
    summary_key, run.leaves = summary or _runtime.group_summary(ids, size, outputs)
    key = _group_key(backend_code, size, summary_key, options)
    entry, codegen_ahead = ahead.pop(key, (None, 0.0))
    backend_here = 0.0
    if entry is not None:                    # compiled just now, with the other groups
        run.hit, run.backend_time = entry.cache_hit, entry.backend_time
    else:
        entry = be.lookup(key)
        if entry is None:
            kernel, layout = assemble(be.name, outputs, _runtime.group_records(ids), size,
                                      *options)
            entry = be.compile(kernel, layout, key)
            run.hit, run.backend_time = entry.cache_hit, entry.backend_time
            backend_here = entry.backend_time
        else:
            run.hit, run.backend_time = 'memory', 0.0
    if bits & _PRINT_IR:
        print(entry.ir)
    run.entry, run.size, run.outputs, run.buffers = entry, size, outputs, []
    try:
        for vt in entry.layout.output_types:
            run.buffers.append(_runtime.alloc(vt, size, backend_code))
        run.values = entry.layout.param_values(run.leaves, run.buffers)
    except BaseException:
        run.free()
        raise
    # Assembly and rendering count as code generation.
    run.codegen_time = time.perf_counter() - t0 - backend_here + codegen_ahead
    return run


def _launch(batch, bits):
    """Launches the prepared runs (and empties `batch`): one alone, several as one job of
    the thread pool, whose threads take blocks of any of them, so that none waits at the
    end of each kernel for the others (they read nothing the others write: see
    eval_pending). Their outputs become evaluated; returns what their prints captured.

    The launch returns before the kernels finish (as in the paper: tracing goes on while
    they run), but where their prints are to be delivered, their times recorded
    (KernelHistory, debug logging) or LaunchBlocking asks for it."""
    if not batch:
        return []
    runs = list(batch)
    batch.clear()
    history = bool(bits & _KERNEL_HISTORY)
    recorded = history or config.DEBUG
    wait = recorded or bool(bits & _LAUNCH_BLOCKING)
    t0 = time.perf_counter()
    try:
        if len(runs) == 1:
            run = runs[0]
            run.be.launch(run.entry.address, run.size, run.values, serial=run.entry.prints,
                          wait=wait, threads=run.entry.threads)
        else:
            limits = [run.entry.threads for run in runs if run.entry.threads]
            runs[0].be.launch_many([(run.entry.address, run.size, run.values)
                                    for run in runs], wait=wait, threads=min(limits, default=0))
    except BaseException:
        for run in runs:
            run.free()
        raise
    elapsed = time.perf_counter() - t0
    lanes = sum(run.size for run in runs) if recorded else 0
    printed = []
    for run in runs:
        for nid, ptr in zip(run.outputs, run.buffers):
            _runtime.become_evaluated(nid, ptr)
        if recorded:                  # (kernels launched together share their time by lanes)
            _record(run, elapsed * run.size / max(lanes, 1), history)
        if run.entry.prints:              # what its symbolic prints captured, in queue order
            printed += _runtime.take_print_rows([a for _, a, _ in run.leaves])
    return printed


def _record(run, exec_time, history):
    entry = run.entry
    if history:
        _history.append(dict(backend=run.be.name, hash=entry.hash, ir_ops=entry.ir_ops,
                             size=run.size, cache_hit=run.hit,
                             codegen_time=run.codegen_time, backend_time=run.backend_time,
                             execution_time=exec_time, outputs=len(run.outputs),
                             **entry.stats))
    if config.DEBUG:
        log.debug('pbc: launched %s kernel %s: %d lanes, %d ops, cache %s, codegen %.3f ms, '
                  'backend %.3f ms, run %.3f ms', run.be.name, entry.hash[:12], run.size,
                  entry.ir_ops, run.hit, run.codegen_time * 1e3, run.backend_time * 1e3,
                  exec_time * 1e3)


def schedule(*args):
    """Queues the arrays inside args for the next eval(); True if there is work to do."""
    if len(args) == 1 and isinstance(args[0], ArrayBase):    # (the common case, fast)
        return _runtime.schedule(args[0].index)
    work = False
    for leaf in leaves(args):
        work |= _runtime.schedule(leaf.index)
    return work


def eval(*args):
    """Evaluates the arrays inside args (and anything scheduled) in as few kernels as possible."""
    schedule(*args)
    if _runtime.has_pending():
        eval_pending()


def kernel_history():
    """Records of the kernels launched while JitFlag.KernelHistory was set."""
    return list(_history)


def kernel_history_clear():
    _history.clear()


def sync_thread():
    """Waits until every launched kernel has finished (launches return while their kernel
    runs; reading an array's contents waits by itself)."""
    _runtime.sync()
    for be in list(_backends.values()):
        be.sync()


def flush_malloc_cache():
    """Returns the memory kept for reuse (host buffers, the devices' blocks) to the system."""
    _runtime.flush_malloc_cache()
    for be in list(_backends.values()):
        if be.memory is not None:
            be.memory.trim()


def flush_kernel_cache():
    """Forgets the kernels compiled in memory (the disk cache stays)."""
    for module in _MAKERS.values():       # (the backends made so far: see protocol.py)
        made = getattr(sys.modules.get(module), '_backend', None)
        if made is not None:
            made.flush_memory_cache()


_runtime.set_eval_hook(eval_pending)


def _memory(code, make, made=_backends):
    """The DeviceMemory of backend `code` (the runtime's memory hook); with `make` false,
    None unless the backend was made. (`made` is bound here: frees still come while the
    interpreter tears this module down.)"""
    be = _backend(code) if make else made.get(code)
    return None if be is None else be.memory


_runtime.set_memory_hook(_memory)
# (a kernel still running at exit would read memory that the interpreter's teardown frees)
atexit.register(_runtime.sync)
