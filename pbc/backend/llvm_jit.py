"""The LLVM (CPU) backend: render, compile through llvmlite's ORC LLJIT for the host CPU,
cache in memory and on disk, and launch on all cores through the runtime's trampoline."""

import hashlib
import threading
import time
from typing import NamedTuple

import llvmlite
import llvmlite.binding as llvm

from .. import _runtime, config
from ..ops import REDUCE_NAMES
from . import processes
from .disk_cache import DiskCache
from .llvm_render import inline_all, render
from .protocol import CompiledKernel

WIDE_LIMIT = 500              # instructions, for two-register vectors (see lanes())
WIDE_LIMIT_LOOPS = 2000
# A batch of kernels compiles as modules of about PART_BYTES of IR text each (LLVM's time
# grows with it: 0.8-1.1 ms per KiB), at most PARTS of them, compiled in parallel (see
# _compile_batch). A fork costs 2.4 ms and a module about 2 ms beyond its code: 8 series
# targets (27 KiB) compiled no faster in two, 8 sin + exp targets (64 KiB) 70 -> 48 ms.
PART_BYTES = 32 << 10
PARTS = 8
# What loop-free kernels are optimized with (see _compile_object).
LOOP_FREE_PASSES = ('always_inliner', 'ipsccp', 'dead_arg_elimination', 'instruction_combine',
                    'simplify_cfg', 'new_gvn', 'instruction_combine', 'aggressive_dce',
                    'simplify_cfg')
BIG_KERNEL_OPS = 500          # IR ops: a kernel whose loops O2 no longer pays for
# A straight-line kernel of more IR ops than this is one huge basic block, over which LLVM's
# machine scheduler tracks register pressure in time that grows faster than linearly (200k
# dependent adds: 70 s to compile, 24 s without; 50k: 5.3 -> 2.5 s). It is compiled
# without that tracking (see _compile_object).
HUGE_BLOCK_OPS = 20_000
CHAIN_PARALLELISM = 2.0       # instructions per step of the longest dependence chain
CHAIN_MIN = 24                # steps: shorter chains end before their latency matters


def tuned_features(features):
    """The host's feature string (`+avx2,-avx512f,...`), plus `+fast-gather` on an AVX2 part
    without AVX-512. x86 code generation keeps a masked gather one instruction only where
    the CPU has AVX-512 or that tuning (Intel's AVX2 parts since Skylake); on the others
    (AMD Zen 1-3) it scalarizes each gather into a test, a branch and a load per lane,
    basic blocks that instruction selection takes most of a kernel's compile time over.
    On a Zen 3 part, with the tuning, PRB's first gradient step (renderer benchmark)
    compiled and ran in 2.4 instead of 4.2-4.4 s, 84 evaluated-call kernels of the PRB
    toy compiled in 2.0 instead of 4.6 s, and 10^7 gathers ran as fast or faster (from a
    1024-float table: 5.3 -> 5.0 ms with every lane, 5.8 -> 4.8 ms with a random half)."""
    feats = features.split(',')
    if '+avx2' in feats and '+avx512f' not in feats and '+fast-gather' not in feats:
        feats.append('+fast-gather')
    return ','.join(feats)


def _short_pipeline(kernel):
    """Whether LOOP_FREE_PASSES optimize the kernel rather than O2: it has no symbolic loop
    but one that makes calls, or is large (BIG_KERNEL_OPS), no loop over the lanes of a
    vector (which atomic scatters and prints make; scatter_add_local's lanes are unrolled),
    and does not inline all its call targets to have LLVM optimize across them
    (llvm_render.inline_all). O2's loop passes pay in tight loops (1.6x on x = (x + 1) ^ x),
    little around a dispatch: a 4-bounce loop over 3 materials (the callopt benchmark) ran
    5% slower without them (3.04 vs 2.89 ms) and compiled in 21 instead of 30 ms; and
    nothing in loops of hundreds of instructions (the renderer's ambient occlusion, 972 IR
    ops: 0.58 -> 0.36 s to compile, as fast or faster to run)."""
    return (not kernel.loops or _calls_in_loops(kernel) or kernel.ir_ops >= BIG_KERNEL_OPS
            ) and not (
        kernel.calls and inline_all(kernel)) and not any(
        ins.op == 'print' or (ins.op == 'scatter' and REDUCE_NAMES[ins.extra] not in (
            'none', 'add_local')) for ins in kernel.instrs)


def _thread_limit(kernel):
    """The most threads a kernel may run on: its scatter_add_locals' targets have a copy
    per thread (the literal's high half), as many as there were threads when traced."""
    copies = [ins.literal >> 32 for ins in kernel.instrs
              if ins.op == 'scatter' and REDUCE_NAMES[ins.extra] == 'add_local']
    return min(copies, default=0)


def _one_huge_block(kernel):
    """Whether the kernel is straight-line code of more than HUGE_BLOCK_OPS IR ops."""
    return kernel.ir_ops > HUGE_BLOCK_OPS and not kernel.loops and not kernel.calls


def _calls_in_loops(kernel):
    """Whether a symbolic call of the kernel lies inside a symbolic loop."""
    depth = 0
    for ins in kernel.instrs:
        if ins.op == 'loop_start':
            depth += 1
        elif ins.op == 'loop_end':
            depth -= 1
        elif ins.op == 'call' and depth:
            return True
    return False


def _is_chain(kernel):
    """Whether the kernel is mostly one long chain of dependent instructions."""
    depth = []
    for ins in kernel.instrs:
        depth.append(1 + max([depth[a] for a in ins.args], default=0))
    longest = max(depth, default=0)
    return longest >= CHAIN_MIN and len(depth) < CHAIN_PARALLELISM * longest


def _scatters(kernel):
    """Whether the kernel scatters (not atomically: those are a loop over the lanes)."""
    return any(ins.op == 'scatter' and not ins.extra for ins in kernel.instrs)


class _Member(NamedTuple):
    """A kernel of a batch to compile."""
    key: str           # its cache key
    text: str          # its IR
    ir_ops: int
    job: int           # its position among compile_many's jobs
    huge: bool         # one huge basic block (see HUGE_BLOCK_OPS)


class _Part:
    """Kernels of a batch compiled into one module: its cache key, its kernels' symbols,
    its object once loaded or compiled, and how it was served."""
    __slots__ = ('members', 'key', 'names', 'obj', 'hit')

    def __init__(self, members):
        self.members, self.obj, self.hit = members, None, 'disk'
        if len(members) == 1:
            self.key, self.names = members[0].key, ['kernel']
        else:
            self.key = hashlib.sha256('|'.join(['batch'] + [m.key for m in members]).encode()
                                      ).hexdigest()[:32]
            self.names = [f'kernel_{n}' for n in range(len(members))]


def _parts(members):
    """The members of a batch in consecutive parts of about equal IR text (PART_BYTES)."""
    total = sum(len(m.text) for m in members)
    count = max(1, min(PARTS, round(total / PART_BYTES)))
    parts, done = [[]], 0
    for m in members:
        # (a member that lies mostly past this part's share of the total starts the next)
        if parts[-1] and (done + len(m.text) / 2) * count > total * len(parts):
            parts.append([])
        parts[-1].append(m)
        done += len(m.text)
    return parts


class CompileError(RuntimeError):
    """LLVM rejected a generated kernel (a bug in pbc, reported with the IR)."""


class LLVMBackend:
    name = 'llvm'
    memory = None           # arrays live in the runtime's host buffers

    def __init__(self):
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        # Machine LICM hoists every vector constant out of the lane loop into its own
        # register; kernels with hundreds of constants then spend most of their compile
        # time in register allocation (and run slower, spilling). Left in the loop,
        # constants fold into instructions as broadcast memory operands.
        llvm.set_option('', '-disable-machine-licm')
        self.cpu = llvm.get_host_cpu_name()
        self.features = tuned_features(llvm.get_host_cpu_features().flatten())
        feats = set(self.features.split(','))
        # One SIMD register of 32-bit lanes: 16 on AVX-512, 8 on AVX/AVX2, 4 otherwise.
        self.width = 16 if '+avx512f' in feats else (8 if '+avx' in feats else 4)
        # AVX-512 scales by powers of two in one instruction (llvm_render.SCALEF), also on
        # the 128- and 256-bit vectors of narrow kernels (VL).
        self.scalef = '+avx512f' in feats and '+avx512vl' in feats
        # Gathers of neighbouring elements as a 16-byte load per lane (llvm_packets.py):
        # measured where gathers are slow, without AVX-512 (AMD Zen 3).
        self.packets = '+avx512f' not in feats
        target = llvm.Target.from_default_triple()
        self.tm = target.create_target_machine(cpu=self.cpu, features=self.features, opt=3,
                                               jit=True, codemodel='small', reloc='pic')
        self.jit = llvm.create_lljit_compiler(self.tm, use_jit_link=True)
        self.machine_id = '|'.join([self.cpu, self.features, llvmlite.__version__,
                                    '.'.join(map(str, llvm.llvm_version_info)),
                                    str(config.CACHE_VERSION), str(self.width)])
        self.loaded = {}         # IR key -> (resource tracker, function address)
        self.groups = {}         # trace group key -> CompiledKernel
        self.disk = DiskCache(config.CACHE_DIR)
        self.counter = 0
        # Compiling and linking from several Python threads: ctypes releases the GIL in
        # every LLVM call, and a kernel linked twice must keep its first code (a launch
        # may run it), so one thread at a time.
        self.lock = threading.RLock()

    def flush_memory_cache(self):
        _runtime.sync()                 # (the kernel in flight runs code about to go)
        self.loaded.clear()
        self.groups.clear()

    def lanes(self, kernel):
        """Vector width for `kernel`: two registers' worth where that hides latency. Each
        vector op then becomes two independent instructions, which pays off where the code
        is one dependent chain: loops above all (about 2x on x = (x + 1) ^ x, 1.3x on the
        ambient occlusion sample), whose chains run through every iteration, and short
        straight-line chains (an unrolled loop). Symbolic calls of several codes outside
        loops stay narrow: two registers ran their targets once for twice the lanes (8
        series targets, warm 2.6 -> 1.6 ms; Dr.Jit 3.7) but compiled 15-25% longer, which
        outweighed it in a first call (5 codes of `i mod 5`: 12.3 -> 13.2 ms; Dr.Jit 12.8).
        Other straight-line code has independent work to overlap already, or is too short
        for latency to matter: there two registers only cost compile time and registers
        (sin, exp and log, about 2.5 instructions per step, ran 7-13% slower; a reverse-mode
        gradient with 1.8 ran 1.3x faster). Long kernels keep one register either way
        (compile time), and so do kernels launched on few lanes with loops or calls, which
        run too briefly to pay for their compile time. Straight-line code that scatters is
        wide at any size, as its scatter holds back the next vector's loads (an evaluated
        call's target that gathers, computes sin and exp and scatters, 15.6k lanes on one
        thread: 47.7 -> 40.6 us, Dr.Jit 44.8), and so is a straight-line chain on few lanes
        (64 series targets of 15.6k lanes, evaluated: warm 5.3 -> 4.2 ms, first call 206 ->
        275 ms; Dr.Jit 4.6 and 370)."""
        if kernel.few_lanes:
            wide = not kernel.loops and not kernel.calls and kernel.ir_ops <= WIDE_LIMIT \
                and (_is_chain(kernel) or _scatters(kernel))
        elif kernel.loops:
            wide = kernel.ir_ops <= WIDE_LIMIT_LOOPS
        else:
            wide = kernel.ir_ops <= WIDE_LIMIT and (
                _is_chain(kernel) or (not kernel.calls and _scatters(kernel)))
        return self.width * 2 if wide else self.width

    def lookup(self, group_key):
        """The compiled kernel of a trace group seen before (see _runtime.group_summary)."""
        return self.groups.get(group_key)

    def compile(self, kernel, layout, group_key):
        """Renders and compiles `kernel` (through the memory and disk caches, keyed on the
        IR text and the optimization pipeline) and remembers it under the trace group's
        key."""
        return self.compile_many([(kernel, layout, group_key)])[0]

    def compile_many(self, jobs):
        """compile() for the kernels of several trace groups, [(kernel, layout, group key)].
        Those that neither cache holds are compiled together, in one LLVM module per
        pipeline: what LLVM costs per module (setting up the passes and the code generator,
        emitting and linking an object, the disk cache's file) is paid once. 64 targets of
        an evaluated call compile in 0.7 of the time they take one by one."""
        with self.lock:
            return self._compile_many(jobs)

    def _compile_many(self, jobs):
        rendered = []                     # (text, short pipeline, cache key) per job
        for kernel, _, _ in jobs:
            text = render(kernel, self.lanes(kernel), self.scalef, self.packets)
            short = _short_pipeline(kernel)
            rendered.append((text, short, self._cache_key(text, short)))
        hits, times = ['memory'] * len(jobs), [0.0] * len(jobs)
        batches = {True: {}, False: {}}   # pipeline -> {cache key: job}, in job order
        for j, (_, short, key) in enumerate(rendered):
            if key in self.loaded or any(key in b for b in batches.values()):
                continue
            t0 = time.perf_counter()
            obj = self.disk.load(key)
            if obj is None:
                batches[short][key] = j
                continue
            self._link(obj, [(key, 'kernel')])
            hits[j], times[j] = 'disk', time.perf_counter() - t0
        for short, batch in batches.items():
            if batch:
                self._compile_batch([_Member(key, rendered[j][0], jobs[j][0].ir_ops, j,
                                             _one_huge_block(jobs[j][0]))
                                     for key, j in batch.items()], short, hits, times)
        entries = []
        for j, (kernel, layout, group_key) in enumerate(jobs):
            text, _, key = rendered[j]
            entry = CompiledKernel(self.loaded[key][1], layout, key, kernel.ir_ops,
                                   kernel.uses('print'), text, hits[j], times[j],
                                   kernel.stats(), _thread_limit(kernel))
            self.groups[group_key] = entry
            entries.append(entry)
        return entries

    def _cache_key(self, text, short_pipeline):
        pipeline = 'short' if short_pipeline else 'O2'
        return hashlib.sha256(f'{self.machine_id}|{pipeline}\n{text}'.encode()).hexdigest()[:32]

    def _compile_batch(self, members, short, hits, times):
        """Compiles [_Member] into objects of about PART_BYTES of
        IR each (or loads them from the disk cache: a part of several members is stored
        under a key of their keys), links them, and shares the time among the members by
        their IR ops. Parts compile in parallel, in forked processes (see processes.py:
        llvmlite compiles one module at a time per process): the 64 evaluated-call targets
        of the dispatch series, 249-257 -> 158-182 ms on 2 cores (AMD Zen 5)."""
        t0 = time.perf_counter()
        parts = [_Part(part) for part in _parts(members)]
        for part in parts:
            if len(part.members) > 1:      # (a single member was looked up on disk already)
                part.obj = self.disk.load(part.key)
        todo = [part for part in parts if part.obj is None]
        # (the lock that llvmlite takes around every call into LLVM: without it, no fork)
        lock = getattr(llvm.ffi.lib, '_lock', None)
        objects = processes.run(lambda item: self._compile_object(*item, short),
                                [([m.text for m in part.members],
                                  any(m.huge for m in part.members)) for part in todo],
                                [sum(len(m.text) for m in part.members) for part in todo],
                                _runtime.thread_count() if lock is not None else 1, hold=lock)
        for part, obj in zip(todo, objects):
            part.obj, part.hit = obj, 'none'
            self.disk.store(part.key, obj)
        for part in parts:
            self._link(part.obj, [(m.key, name) for m, name in zip(part.members, part.names)])
        elapsed = time.perf_counter() - t0
        ops = sum(max(m.ir_ops, 1) for m in members)
        for part in parts:
            for m in part.members:
                hits[m.job], times[m.job] = part.hit, elapsed * max(m.ir_ops, 1) / ops

    def _link(self, obj, symbols):
        """Links an object into the JIT; symbols: (cache key, name of its kernel)."""
        with self.lock:
            self.counter += 1
            builder = (llvm.JITLibraryBuilder().add_object_img(obj).add_current_process()
                       .import_symbol('pbc_print_capture', _runtime.print_capture_address())
                       .import_symbol('pbc_thread_index', _runtime.thread_index_address()))
            for _, name in symbols:
                builder.export_symbol(name)
            tracker = builder.link(self.jit, f'pbc_kernel_{self.counter}')
        for key, name in symbols:
            self.loaded[key] = (tracker, tracker[name])

    def _compile_object(self, texts, huge_block, short_pipeline):
        """One object of the kernels in `texts`: `kernel`, or kernel_0, kernel_1, ... for
        several; where one is a huge basic block, scheduled without tracking register
        pressure (the option is global: compiles hold self.lock, or run in a child)."""
        module = None
        for n, text in enumerate(texts):
            try:
                part = llvm.parse_assembly(text)
                part.verify()
            except RuntimeError as e:
                raise CompileError(f'pbc: LLVM rejected a generated kernel: {e}\n{text}'
                                   ) from None
            if len(texts) > 1:
                part.get_function('kernel').name = f'kernel_{n}'
            if module is None:
                module = part
            else:
                module.link_in(part)        # (renames clashing internal functions)
        pto = llvm.create_pipeline_tuning_options(speed_level=2)
        # The IR is already explicitly vectorized: skip LLVM's own vectorizers.
        pto.loop_vectorization = False
        pto.slp_vectorization = False
        pb = llvm.create_pass_builder(self.tm, pto)
        if short_pipeline:
            # Without loops, the body of the lane loop is one basic block per target and
            # per dispatch step, which instruction selection combines and deduplicates as
            # a whole. A short pipeline (inlining what the renderer marks alwaysinline)
            # then gives about the machine code of O2 at a third of the cost: sin + exp,
            # 74 instructions either way, 1.1 instead of 4.7 ms; 64 sin + exp targets,
            # 4557 instead of 4491 instructions, 72 instead of 186 ms. (O2 also merges
            # code that small inlined targets share: 5-20% faster calls of such targets,
            # for 30-40% more compile time.)
            passes = llvm.create_new_module_pass_manager()
            for name in LOOP_FREE_PASSES:
                getattr(passes, f'add_{name}_pass')()
            passes.run(module, pb)
        else:
            pb.getModulePassManager().run(module, pb)
        if not huge_block:
            return self.tm.emit_object(module)
        llvm.set_option('', '-misched-regpressure=false')
        try:
            return self.tm.emit_object(module)
        finally:
            llvm.set_option('', '-misched-regpressure=true')      # (LLVM's default)

    def launch(self, address, size, params, serial=False, wait=True, threads=0):
        _runtime.launch(address, size, params, serial, wait, threads)

    def sync(self):
        _runtime.sync()

    def launch_many(self, kernels, wait=True, threads=0):
        """Launches [(address, size, params)] as one job (they read nothing the others
        write), on at most `threads` threads if not 0."""
        _runtime.launch_many(kernels, wait, threads)


_backend = None
_creating = threading.Lock()


def backend():
    """The LLVM backend, made on first use (by one Python thread: a second one would
    unload the first one's kernels when dropped)."""
    global _backend
    with _creating:
        if _backend is None:
            _backend = LLVMBackend()
    return _backend
