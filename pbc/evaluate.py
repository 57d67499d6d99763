"""eval(): drains the runtime's queues, assembles one Kernel per (backend, size) group,
compiles it through the backend's caches, launches it, and keeps the kernel history."""

import logging
import sys
import time

from . import _runtime, config
from .flags import JitFlag, flag
from .kernel import assemble
from .ops import TYPE_NAMES
from .tree import leaves

log = logging.getLogger('pbc')
if config.DEBUG:
    logging.basicConfig()
    log.setLevel(logging.DEBUG)

BACKENDS = ('llvm', 'cuda')
_history = []


def _backend(code):
    if BACKENDS[code] != 'llvm':
        raise RuntimeError(f'pbc: the {BACKENDS[code]} backend cannot launch kernels here')
    from .backend import llvm_jit
    return llvm_jit.backend()


def eval_pending():
    """Runs every scheduled evaluation and queued side effect."""
    roots, groups = _runtime.take_groups()
    try:
        for backend, size, outputs, _effects, records in groups:
            _run_group(backend, size, outputs, records)
    finally:
        _runtime.release_roots(roots)


def _run_group(backend_code, size, outputs, records):
    be = _backend(backend_code)
    t0 = time.perf_counter()
    launch = assemble(be.name, size, outputs, records)
    addr, info = be.compile(launch.kernel)
    # Assembly counts as code generation, as rendering does.
    info['codegen_time'] = time.perf_counter() - t0 - info['backend_time']
    if flag(JitFlag.PrintIR):
        print(info['ir'])
    values = list(launch.param_values)
    buffers = []
    try:
        for slot, nid, tname in launch.outputs:
            values[slot] = _runtime.alloc(TYPE_NAMES.index(tname), size)
            buffers.append((nid, values[slot], tname))
        prints = launch.kernel.uses('print')
        if prints:
            sys.stdout.flush()
        t1 = time.perf_counter()
        be.launch(addr, size, values, serial=prints)
        exec_time = time.perf_counter() - t1
        if prints:
            _runtime.flush_c_stdout()
    except BaseException:
        for _, ptr, tname in buffers:
            _runtime.free_buffer(ptr, TYPE_NAMES.index(tname), size)
        raise
    for nid, ptr, _ in buffers:
        _runtime.become_evaluated(nid, ptr)
    record = dict(backend=be.name, hash=info['hash'], ir_ops=launch.kernel.ir_ops,
                  size=size, cache_hit=info['cache_hit'], codegen_time=info['codegen_time'],
                  backend_time=info['backend_time'], execution_time=exec_time,
                  outputs=len(outputs))
    if flag(JitFlag.KernelHistory):
        _history.append(record)
    if config.DEBUG:
        log.debug('pbc: launched %s kernel %s: %d lanes, %d ops, cache %s, codegen %.3f ms, '
                  'backend %.3f ms, run %.3f ms', be.name, info['hash'][:12], size,
                  launch.kernel.ir_ops, info['cache_hit'], info['codegen_time'] * 1e3,
                  info['backend_time'] * 1e3, exec_time * 1e3)


def schedule(*args):
    """Queues the arrays inside args for the next eval(); True if there is work to do."""
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
    """Waits for launched kernels. CPU launches complete before returning, so this only
    flushes pending work that a later read would otherwise start."""


def flush_kernel_cache():
    from .backend import llvm_jit
    if llvm_jit._backend is not None:
        llvm_jit._backend.flush_memory_cache()


_runtime.set_eval_hook(eval_pending)
