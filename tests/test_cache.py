"""Kernel caches: memory hits, disk hits from a fresh process, corrupt entries, unwritable
cache directories; kernel_history records; PrintIR and PBC_DEBUG output."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import suite_backend
from suite_backend import Float, UInt32

import pbc

SCRIPT = textwrap.dedent('''
    import pbc, numpy as np
    from pbc.llvm import Float
    pbc.set_flag(pbc.JitFlag.KernelHistory, True)
    x = pbc.arange(Float, 1000)
    y = pbc.sqrt(x * 3.25 + 17.0)
    assert np.allclose(y.numpy(), np.sqrt(np.arange(1000) * 3.25 + 17.0))
    print('HIT', pbc.kernel_history()[-1]['cache_hit'])
''')


def run_script(cache_dir, extra_env=None, script=SCRIPT):
    env = dict(os.environ, PBC_CACHE_DIR=str(cache_dir), **(extra_env or {}))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env['PYTHONPATH'] = root + os.pathsep + env.get('PYTHONPATH', '')
    return subprocess.run([sys.executable, '-c', script], env=env, capture_output=True,
                          text=True, timeout=120)


def test_memory_cache_hit():
    pbc.kernel_history_clear()
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
        for _ in range(2):
            pbc.eval(pbc.arange(Float, 77) * 1.25 + 0.125)
        first, second = pbc.kernel_history()
    assert second['cache_hit'] == 'memory' and second['hash'] == first['hash']
    for key in ('backend', 'hash', 'ir_ops', 'size', 'cache_hit', 'codegen_time',
                'backend_time', 'execution_time'):
        assert key in first
    assert first['backend'] == suite_backend.NAME and first['size'] == 77


def test_disk_cache_hit_in_fresh_process(tmp_path):
    first = run_script(tmp_path)
    assert first.returncode == 0, first.stderr
    second = run_script(tmp_path)
    assert second.returncode == 0, second.stderr
    assert second.stdout.split()[-1] == 'disk'
    assert first.stdout.split()[-1] in ('none', 'disk')


@pytest.mark.parametrize('damage', ['garbage', 'truncate', 'empty'])
def test_corrupt_cache_entry_is_recompiled(tmp_path, damage):
    assert run_script(tmp_path).returncode == 0
    files = [f for f in os.listdir(tmp_path) if f.endswith('.o')]
    assert files
    for f in files:
        path = tmp_path / f
        data = path.read_bytes()
        path.write_bytes({'garbage': os.urandom(len(data)), 'truncate': data[:len(data) // 2],
                          'empty': b''}[damage])
    again = run_script(tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout.split()[-1] == 'none'
    assert run_script(tmp_path).stdout.split()[-1] == 'disk'    # rewritten correctly


def test_unwritable_cache_dir_falls_back_to_memory(tmp_path):
    blocker = tmp_path / 'file'
    blocker.write_text('not a directory')
    r = run_script(blocker / 'cache')
    assert r.returncode == 0, r.stderr
    assert 'not writable' in r.stderr and 'memory only' in r.stderr


def test_print_ir(capsys):
    with pbc.scoped_set_flag(pbc.JitFlag.PrintIR, True):
        pbc.eval(pbc.arange(Float, 9) * 5.5)
    out = capsys.readouterr().out
    # (the backend's text: LLVM IR of explicit vectors, or PTX)
    kernel, multiply = {'llvm': ('define void @kernel', 'fmul <'),
                        'cuda': ('.visible .entry kernel', 'mul.rn.f32')}[suite_backend.NAME]
    assert kernel in out and multiply in out


def test_debug_env_logs_launches(tmp_path):
    r = run_script(tmp_path, {'PBC_DEBUG': '1'})
    assert r.returncode == 0
    assert 'launched llvm kernel' in r.stderr


def test_flush_kernel_cache():
    pbc.kernel_history_clear()
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
        pbc.eval(pbc.arange(Float, 31) * 4.75)
        pbc.flush_kernel_cache()
        pbc.eval(pbc.arange(Float, 31) * 4.75)
        assert pbc.kernel_history()[-1]['cache_hit'] in ('disk', 'none')
    np.testing.assert_array_equal((pbc.arange(Float, 3) * 4.75).numpy(), [0, 4.75, 9.5])


def test_vector_width_follows_the_dependence_chains():
    # Two registers per vector for a kernel that is one dependent chain (they hide its
    # latency) or that scatters, one for straight-line code with independent work to
    # overlap (sin) and for calls outside loops; on few lanes, two for a straight-line
    # chain or scatter, one for a loop (its compile time would not pay).
    from pbc.backend.llvm_jit import backend
    be = backend()

    def width(build):
        pbc.schedule(build())
        kernel, = pbc.evaluate.take_kernels()
        return be.lanes(kernel)

    x = pbc.arange(Float, 1 << 16)

    def chain():
        y = x
        for _ in range(50):
            y = y * 1.5 + y
        return y

    assert width(chain) == 2 * be.width
    assert width(lambda: pbc.sin(x + 1)) == be.width
    def loop():
        return pbc.while_loop((x, suite_backend.UInt32(0)), lambda v, i: i < 5,
                              lambda v, i: (v * 1.5 + v, i + 1), mode='symbolic')[0]

    def scatter():                           # (an evaluated call's target, in short)
        out = pbc.zeros(Float, len(x))
        index = pbc.arange(UInt32, len(x))
        pbc.scatter(out, pbc.sin(pbc.gather(Float, x, index)), index)
        return out

    assert width(loop) == 2 * be.width
    assert width(scatter) == 2 * be.width
    # A call of several codes: narrow (compile time), but wide inside a loop.
    index = pbc.arange(UInt32, len(x)) % 3
    codes = [lambda v: v * 2 + 1, pbc.sin, lambda v: v * v]
    assert width(lambda: pbc.switch(index, codes, x)) == be.width
    assert width(lambda: pbc.while_loop(
        (x, UInt32(0)), lambda v, i: i < 3,
        lambda v, i: (pbc.switch(index, codes, v), i + 1), mode='symbolic')[0]) == 2 * be.width
    x = pbc.arange(Float, 1000)              # few lanes
    assert width(chain) == 2 * be.width
    assert width(scatter) == 2 * be.width
    assert width(loop) == be.width


def test_loop_free_kernels_get_the_short_pipeline(monkeypatch):
    # Kernels without loops (calls included) are optimized by a few passes (instruction
    # selection does the rest); symbolic loops (but those around calls), per-lane atomics
    # and calls whose targets are all inlined on request (PBC_INLINE_CALLS) get O2.
    from pbc.backend import llvm_jit
    from pbc.backend.llvm_jit import _short_pipeline

    def kernel(build):
        pbc.schedule(build())
        k, = pbc.evaluate.take_kernels()
        return k

    x = pbc.arange(Float, 100)
    index = pbc.arange(suite_backend.UInt32, 100)
    assert _short_pipeline(kernel(lambda: pbc.sin(x) * 2))
    call = kernel(lambda: pbc.switch(index % 2, [lambda v: v + 1, pbc.sin], x))
    assert _short_pipeline(call)
    monkeypatch.setattr(pbc.config, 'INLINE_CALLS', True)
    assert not _short_pipeline(call)
    monkeypatch.setattr(pbc.config, 'INLINE_CALLS', False)
    target = pbc.zeros(Float, 4)
    pbc.scatter_reduce(pbc.ReduceOp.Add, target, x, index % 4)
    assert not _short_pipeline(kernel(lambda: target))

    @pbc.syntax
    def loop(v):
        while v < 10:
            v = v + 1
        return v

    assert not _short_pipeline(kernel(lambda: loop(x)))
    # A loop around a call gets the short pipeline too; a call after a loop does not.
    targets = [lambda v: v * 2 + 1, pbc.sin]
    around = kernel(lambda: pbc.while_loop(
        (x, suite_backend.UInt32(0)), lambda v, i: i < 3,
        lambda v, i: (pbc.switch(index % 2, targets, v), i + 1), mode='symbolic')[0])
    assert around.loops and around.calls and _short_pipeline(around)
    after = kernel(lambda: pbc.switch(index % 2, targets, loop(x)))
    assert after.loops and after.calls and not _short_pipeline(after)

    # A loop of hundreds of instructions gets it too.
    @pbc.syntax
    def big(v):
        while v < 10:
            for _ in range(llvm_jit.BIG_KERNEL_OPS):      # (unrolled when traced)
                v = pbc.fma(v, 1.0001, 0.5)
        return v

    large = kernel(lambda: big(x))
    assert large.loops and large.ir_ops >= llvm_jit.BIG_KERNEL_OPS and _short_pipeline(large)


@pytest.mark.llvm_only          # (LLVM's scheduler options)
def test_a_huge_straight_line_kernel_is_scheduled_without_register_pressure(monkeypatch,
                                                                            tmp_path):
    # Above HUGE_BLOCK_OPS (lowered here), a loop-free kernel without calls compiles with
    # LLVM's -misched-regpressure off, and the option is back to its default afterwards.
    from pbc.backend import llvm_jit
    from pbc.backend.disk_cache import DiskCache
    be = llvm_jit.backend()                    # (made first: it sets options of its own)
    monkeypatch.setattr(be, 'disk', DiskCache(str(tmp_path)))    # (compiled, not loaded)
    monkeypatch.setattr(llvm_jit, 'HUGE_BLOCK_OPS', 600)
    options = []
    set_option = llvm_jit.llvm.set_option
    monkeypatch.setattr(llvm_jit.llvm, 'set_option',
                        lambda name, opt: (options.append(opt), set_option(name, opt)))
    x = np.linspace(-1, 1, 50, dtype=np.float32)
    results = []
    for rounds in (100, 400):                  # 303 and 1203 IR ops
        y, want = Float(x), x.copy()
        for k in range(rounds):
            y = y * 0.5 + k
            want = want * np.float32(0.5) + np.float32(k)
        pbc.eval(y)
        np.testing.assert_array_equal(y.numpy(), want)
        results.append(list(options))
        options.clear()
    assert results == [[], ['-misched-regpressure=false', '-misched-regpressure=true']]


BATCH_SCRIPT = textwrap.dedent('''
    import pbc, numpy as np
    from pbc.llvm import Float, UInt32
    pbc.set_flag(pbc.JitFlag.KernelHistory, True)
    outs = [pbc.sqrt(pbc.arange(Float, n) * 1.75 + k) for k, n in enumerate((100, 200, 300))]
    i, = pbc.while_loop((pbc.arange(UInt32, 50),), lambda i: i < 20, lambda i: (i + 3,),
                        mode='symbolic')         # a loop: the other pipeline (O2)
    pbc.eval(outs, i)
    for k, (n, y) in enumerate(zip((100, 200, 300), outs)):
        assert np.allclose(y.numpy(), np.sqrt(np.arange(n) * 1.75 + k))
    assert i.numpy().tolist() == [v if v >= 20 else v + 3 * -(-(20 - v) // 3) for v in range(50)]
    print('HITS', *[h['cache_hit'] for h in pbc.kernel_history()])
    assert all(h['backend_time'] > 0 for h in pbc.kernel_history())
''')


def test_kernels_of_one_eval_compile_together_and_load_from_disk(tmp_path):
    # Three groups (sizes) on the short pipeline compile as one LLVM module, stored as one
    # cache file; the loop kernel compiles alone. A fresh process loads both files.
    first = run_script(tmp_path, script=BATCH_SCRIPT)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ['HITS'] + ['none'] * 4
    assert len([f for f in os.listdir(tmp_path) if f.endswith('.o')]) == 2
    second = run_script(tmp_path, script=BATCH_SCRIPT)
    assert second.returncode == 0, second.stderr
    assert second.stdout.split() == ['HITS'] + ['disk'] * 4


PARTS_SCRIPT = textwrap.dedent('''
    import os, tempfile, pbc, numpy as np
    from pbc.backend import llvm_jit
    from pbc.llvm import Float
    pbc.set_thread_count(2)
    pbc.set_flag(pbc.JitFlag.KernelHistory, True)
    parent, marks = os.getpid(), tempfile.mkdtemp()
    compile_object = llvm_jit.LLVMBackend._compile_object
    def spy(self, *args):                       # (a child leaves a file: its memory is its own)
        if os.getpid() != parent:
            open(os.path.join(marks, str(os.getpid())), 'w').close()
        return compile_object(self, *args)
    llvm_jit.LLVMBackend._compile_object = spy
    x = np.linspace(-1, 1, 7, dtype=np.float32)
    outs = []
    for n in range(1, 41):                     # 40 sizes, 40 kernels, ~3300 IR ops
        y = Float(np.resize(x, n))
        for k in range(n + 20):
            y = y * 0.75 + k
        outs.append(y)
    pbc.eval(outs)
    for n, y in enumerate(outs, 1):
        want = np.resize(x, n)
        for k in range(n + 20):
            want = want * np.float32(0.75) + np.float32(k)
        assert np.allclose(y.numpy(), want), n
    assert os.getpid() == parent
    print('HITS', *sorted(set(h['cache_hit'] for h in pbc.kernel_history())))
    print('CHILD', bool(os.listdir(marks)))
''')


def test_a_large_batch_compiles_in_parts_in_parallel_and_loads_from_disk(tmp_path):
    # Kernels of one eval beyond PART_OPS IR ops compile as several modules, some of them
    # in forked processes; each module is one cache file, which a fresh process loads.
    first = run_script(tmp_path, script=PARTS_SCRIPT)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ['HITS', 'none', 'CHILD', 'True']
    assert len([f for f in os.listdir(tmp_path) if f.endswith('.o')]) >= 2
    second = run_script(tmp_path, script=PARTS_SCRIPT)
    assert second.returncode == 0, second.stderr
    assert second.stdout.split() == ['HITS', 'disk', 'CHILD', 'False']


def test_a_group_reading_an_earlier_groups_output_compiles_after_it_runs():
    # w (one lane) is an output of the first group and an operand of the second: the
    # second's kernel reads w's memory once the first has run, not w's expression.
    a = Float(2.0, 9.0)
    pbc.eval(a)
    w = pbc.sqrt(pbc.gather(Float, a, UInt32(1)) + 7.0)
    y = pbc.arange(Float, 5) * w + 0.5
    pbc.schedule(w, y)
    roots, groups = pbc._runtime.take_groups()
    try:
        assert [s is not None for s in pbc._runtime.group_summaries(groups)] == [True, False]
    finally:
        pbc._runtime.release_roots(roots)
    pbc.kernel_history_clear()
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
        pbc.eval(w, y)
        assert len(pbc.kernel_history()) == 2
    assert w.numpy().tolist() == [4.0]
    assert y.numpy().tolist() == [0.5, 4.5, 8.5, 12.5, 16.5]


@pytest.mark.llvm_only          # (the CPU thread pool's batched launches)
@pytest.mark.parametrize('threads', [1, 2])
def test_independent_groups_launch_together(monkeypatch, threads):
    # Groups that read no other group's output run as one job of the thread pool (kernels
    # of every size, empty ones too, and disjoint scatters into one array); a group that
    # reads an earlier one's output, or prints, waits for the groups before it.
    # (blocks of kernels launched together: 1024 lanes, taken first blocks first)
    sizes = [0, 1, 5, 1023, 1024, 1025, 8191, 8192, 8193, 20000, 70001]
    launches = []
    many = pbc._runtime.launch_many
    monkeypatch.setattr(pbc._runtime, 'launch_many',
                        lambda kernels, wait, threads=0: (launches.append(len(kernels)),
                                                          many(kernels, wait, threads))[1])
    old = pbc._runtime.thread_count()
    pbc._runtime.set_thread_count(threads)
    try:
        xs = [np.random.default_rng(n).uniform(-1, 1, n).astype(np.float32) for n in sizes]
        arrays = [Float(x) for x in xs]
        pbc.eval(arrays)
        ys = [pbc.sqrt(a * a + 1.0) for a in arrays]
        out = pbc.zeros(Float, 200)
        for k in range(4):                   # (scatters of 25 lanes each: one group)
            pbc._runtime.scatter(out, Float(k + 1.0), pbc.arange(UInt32, 25) * 4 + k,
                                 True, 0, True)
        w = pbc.sqrt(pbc.gather(Float, arrays[3], UInt32(7)) + 7.0)   # one lane
        z = pbc.arange(Float, 3) * w       # (reads w, an output of this eval)
        pbc.eval(ys, out, w, z)
    finally:
        pbc._runtime.set_thread_count(old)
    for x, y in zip(xs, ys):
        assert np.array_equal(y.numpy(), np.sqrt(x * x + np.float32(1)))
    assert np.array_equal(out.numpy()[:100], np.tile(np.float32([1, 2, 3, 4]), 25))
    w_ref = np.sqrt(xs[3][7] + np.float32(7))
    assert w.numpy().tolist() == [w_ref] and np.allclose(z.numpy(), [0, w_ref, 2 * w_ref])
    assert launches and sum(launches) >= len(sizes) - 1 and max(launches) > 2


@pytest.mark.llvm_only          # (fails the LLVM backend's compile)
def test_eval_leaves_the_garbage_collector_as_it_found_it(monkeypatch):
    # (eval pauses Python's cyclic collector while it assembles and compiles kernels)
    import gc

    from pbc.backend import llvm_jit
    seen = []

    def compile_many(self, jobs):
        seen.append(gc.isenabled())
        raise RuntimeError('compile failed')

    was = gc.isenabled()
    try:
        for enabled in (True, False):
            gc.enable() if enabled else gc.disable()
            pbc.eval(pbc.arange(Float, 11) * (3.5 + enabled))
            assert gc.isenabled() == enabled
            monkeypatch.setattr(llvm_jit.LLVMBackend, 'compile_many', compile_many)
            with pytest.raises(RuntimeError, match='compile failed'):
                pbc.eval(pbc.arange(Float, 12) * (5.5 + enabled))
            monkeypatch.undo()
            assert gc.isenabled() == enabled
    finally:
        gc.enable() if was else gc.disable()
    assert seen == [False, False]


def test_gathers_are_one_instruction_on_avx2_parts():
    # (x86 code generation scalarizes a masked gather, a branch per lane, unless the CPU
    # has AVX-512 or is tuned "fast-gather"; the backend adds that tuning on AVX2 parts)
    import llvmlite.binding as llvm

    from pbc.backend import llvm_jit
    from pbc.backend.llvm_render import render
    assert llvm_jit.tuned_features('+avx,+avx2,-avx512f').split(',')[-1] == '+fast-gather'
    for features in ('+avx,+avx2,+avx512f', '+sse4.2,-avx2', '+avx2,+fast-gather'):
        assert llvm_jit.tuned_features(features) == features
    be = llvm_jit.backend()
    if '+avx2' not in be.features.split(','):
        pytest.skip('no AVX2 on this CPU: gathers are scalar code')
    table, lane = pbc.arange(Float, 64) * 2, pbc.arange(UInt32, 1000)
    pbc.eval(table)
    pbc.schedule(pbc.gather(Float, table, (lane * 7) % 64, lane % 3 != 0))
    k, = pbc.evaluate.take_kernels()
    asm = be.tm.emit_assembly(llvm.parse_assembly(render(k, be.lanes(k), be.scalef)))
    assert 'vgatherdps' in asm or 'vpgatherdd' in asm


@pytest.mark.parametrize('module', ['llvm_jit', 'cuda_jit'])
def test_backends_implement_the_backend_protocol(module):
    import importlib
    import inspect

    from pbc.backend import protocol
    backend = importlib.import_module(f'pbc.backend.{module}')
    cls = {'llvm_jit': 'LLVMBackend', 'cuda_jit': 'CUDABackend'}[module]
    cls = getattr(backend, cls)
    for name, method in inspect.getmembers(protocol.Backend, inspect.isfunction):
        if not name.startswith('_'):
            assert list(inspect.signature(getattr(cls, name)).parameters) == \
                list(inspect.signature(method).parameters), name
    assert isinstance(cls.name, str)
    assert backend.CompiledKernel is protocol.CompiledKernel
    if module == 'llvm_jit':
        assert isinstance(backend.backend(), protocol.Backend)
