"""pbc.cuda: the CUDA backend's types and launcher (pbc/backend/cuda_jit.py).

Three kinds of checks:
  - without the CUDA driver, the first kernel says what is missing and nothing else is
    disturbed;
  - with the stand-in driver of tests/cuda_standin.py, whose "device" is separate host
    memory (at addresses the host cannot read), whose stream runs its work only when
    synchronized and whose "GPU" runs each loaded kernel with the LLVM backend, every code
    path of the launcher and of device memory (contexts, loading, the pool and its reuse,
    where arrays live and when they move, the copies, the parameter table, DLPack) runs, and
    the results must equal NumPy's: what this cannot show is that the PTX itself computes
    the same (ptxas checks it assembles: test_ptx.py);
  - on a machine with a GPU (pbc.has_backend('cuda')), the same programs on the device.
"""

import ctypes
import io

import cuda_standin
import numpy as np
import pytest

import pbc
import pbc.cuda
from pbc import _runtime
from pbc.backend import cuda_jit

location = _runtime.buffer_location     # 'host', 'device' or 'none' (unevaluated)


@pytest.fixture
def no_driver(monkeypatch):
    """No CUDA driver to load (the backend made before, if any, is put back after)."""
    saved = cuda_standin.set_aside_backend()
    monkeypatch.setattr(pbc.config, 'LIBCUDA', '/nonexistent/libcuda.so.1')
    monkeypatch.setattr(cuda_jit, 'load_driver', cuda_standin.REAL_LOAD_DRIVER)
    yield
    cuda_standin.put_back_backend(saved)


def test_without_a_driver_the_first_kernel_says_what_is_missing(no_driver):
    from pbc.llvm import Float
    assert not pbc.has_backend('cuda')
    x = pbc.cuda.Float(1, 2, 3)
    y = x * 2 + 1
    for _ in range(2):                    # (and again: nothing was left half done)
        with pytest.raises(cuda_jit.CUDAUnavailable,
                           match=r'needs the NVIDIA driver \(libcuda.so.1\)'):
            y.numpy()
    assert x.numpy().tolist() == [1, 2, 3]
    assert (Float(1, 2) * 3).numpy().tolist() == [3, 6]      # the CPU backend goes on


def test_cuda_module_has_the_llvm_module_names():
    names = {n for n in dir(pbc.llvm) if not n.startswith('_')}
    assert names == {n for n in dir(pbc.cuda) if not n.startswith('_')}
    assert pbc.cuda.ad is pbc.cuda and pbc.cuda.Float is not pbc.llvm.Float
    assert pbc.backend_v(pbc.cuda.Float) is pbc.JitBackend.CUDA and pbc.is_cuda_v(pbc.cuda.Float)
    with pytest.raises(Exception, match='backend'):
        pbc.cuda.Float(1) + pbc.llvm.Float(1)


def test_arithmetic_runs_through_the_launcher(fake_gpu):
    from pbc.backend import protocol
    from pbc.cuda import Float, UInt32
    assert pbc.has_backend('cuda') and isinstance(cuda_jit.backend(), protocol.Backend)
    xs = np.linspace(-3, 3, 1000, dtype=np.float32)
    x = Float(xs)
    y = pbc.fma(x, 2, 1) * x
    np.testing.assert_array_equal(y.numpy(), (xs * 2 + 1) * xs)
    i = pbc.arange(UInt32, 1000)
    np.testing.assert_array_equal((i * 3 + (i > 500)).numpy(), np.arange(1000) * 3 +
                                  (np.arange(1000) > 500))
    blocks, threads, size = fake_gpu.launches[-1]
    assert size == 1000 and threads == 256 and blocks == 4


def test_gathers_scatters_and_reductions_copy_back_what_they_write(fake_gpu):
    from pbc.cuda import Float, UInt32
    target = pbc.zeros(Float, 8)
    pbc.eval(target)
    index = UInt32(1, 3, 3, 7)
    pbc.scatter_reduce(pbc.ReduceOp.Add, target, Float(1, 2, 3, 4), index)
    pbc.scatter(target, Float(9), UInt32(0))
    assert target.numpy().tolist() == [9, 1, 0, 5, 0, 0, 0, 4]
    source = Float(np.arange(8, dtype=np.float32) * 10)
    assert pbc.gather(Float, source, UInt32(7, 0, 2)).numpy().tolist() == [70, 0, 20]


def test_symbolic_loop_and_pool_reuse(fake_gpu):
    from pbc.cuda import UInt32

    @pbc.syntax
    def collatz(n):
        steps = UInt32(0)
        while n != 1:
            n = pbc.select(n % 2 == 0, n // 2, 3 * n + 1)
            steps += 1
        return steps

    assert collatz(UInt32(1, 2, 3, 6, 7, 27)).numpy().tolist() == [0, 1, 7, 8, 16, 111]
    before = fake_gpu.allocations
    assert collatz(UInt32(1, 2, 3, 6, 7, 27)).numpy().tolist() == [0, 1, 7, 8, 16, 111]
    assert fake_gpu.allocations == before        # the second launch reused the pool's blocks


def test_arrays_stay_on_the_device_between_kernels(fake_gpu):
    from pbc.cuda import Float
    xs = np.arange(1000, dtype=np.float32)
    x = Float(xs)
    assert location(x) == 'host'          # made on the host: moves when read
    y = x * 2
    pbc.eval(y)
    assert location(x) == location(y) == 'device'
    z = y + x
    pbc.eval(z)
    assert fake_gpu.downloads == []                  # nothing came back to the host
    np.testing.assert_array_equal(z.numpy(), xs * 3)
    assert fake_gpu.downloads == [4000] and location(z) == 'device'
    assert z[999] == 2997 and fake_gpu.downloads[-1] == 4       # one element
    downloads = len(fake_gpu.downloads)
    assert pbc.sum(z).numpy()[0] == xs.sum() * 3     # reduced on the device
    assert location(z) == 'device' and fake_gpu.downloads[downloads:] == [4]
    scan = pbc.prefix_sum(z)                          # and scanned there
    assert location(z) == location(scan) == 'device'
    np.testing.assert_array_equal((z - x + scan).numpy(), xs * 2 + np.cumsum(xs * 3) - xs * 3)
    key = pbc.cuda.UInt32(z) % 7
    pbc.eval(key)
    groups = _runtime.partition(key, [0, 1, 2])       # (evaluated calls') runs on the host
    assert location(key) == 'host' and location(groups[1]) == 'host'
    np.testing.assert_array_equal(pbc.gather(Float, z, groups[1]).numpy(),
                                  (xs * 3)[(xs * 3) % 7 == 1])
    assert location(groups[1]) == 'device'


def test_launches_do_not_wait_and_reused_blocks_keep_their_order(fake_gpu):
    # The fake stream runs its work only when synchronized: a chain of kernels, each freeing
    # its parameter table and intermediates at once for the next to reuse, must still give
    # the right result, with one wait at the end.
    from pbc.cuda import UInt32
    x = pbc.arange(UInt32, 300)
    for k in range(6):
        x = x * 3 + k
        pbc.eval(x)
    assert fake_gpu.queue                             # launched, not run yet
    want = np.arange(300, dtype=np.uint32)
    for k in range(6):
        want = want * 3 + k
    np.testing.assert_array_equal(x.numpy(), want)
    assert fake_gpu.queue == []


@pytest.mark.parametrize('tname', ['Float', 'Float64', 'Int32', 'UInt32', 'Int64', 'Bool'])
def test_reductions_of_device_arrays_run_as_kernels(fake_gpu, tname):
    rng = np.random.default_rng(7)
    for n in (1, 15, 16, 17, 255, 256, 257, 4099):
        data = rng.integers(-50, 50, n)
        if tname == 'Bool':
            data = data > 30
        elif tname.startswith('Float'):
            data = data / 8
            data[rng.integers(0, n, n // 5)] = np.nan          # (min and max ignore NaNs)
        names = ('and', 'or', 'min', 'max') if tname == 'Bool' else (
            'sum', 'prod', 'min', 'max') + (() if tname.startswith('Float') else ('and', 'or'))
        for name in names:
            want = _runtime.reduce(getattr(pbc.llvm, tname)(data), name).numpy()
            device = getattr(pbc.cuda, tname)(data)
            launches = len(fake_gpu.launches)
            got = _runtime.reduce(device, name)       # (what pbc.sum etc. call)
            assert type(got) is type(device) and len(got) == 1 and location(device) != 'host'
            assert len(fake_gpu.launches) - launches == max(1, int(np.ceil(np.log(n) /
                                                                            np.log(16))))
            if name in ('sum', 'prod') and tname.startswith('Float'):
                np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=0)
            else:
                np.testing.assert_array_equal(got.numpy(), want, err_msg=f'{name} {n}')
        if tname == 'Bool':
            assert pbc.count(pbc.cuda.Bool(data))[0] == data.sum()


@pytest.mark.parametrize('tname', ['Float', 'Float64', 'UInt32', 'Int64'])
def test_prefix_sums_and_compress_of_device_arrays_run_as_kernels(fake_gpu, tname):
    rng = np.random.default_rng(11)
    for n in (1, 2, 16, 17, 256, 300, 4097):
        data = rng.integers(0, 9, n)
        if tname.startswith('Float'):
            data = data / 4              # (sums of quarters: exact in any order)
        cpu, device = getattr(pbc.llvm, tname)(data), getattr(pbc.cuda, tname)(data)
        _runtime.device_address(device)                 # (moves it to the device)
        for inclusive in (False, True):
            for reverse in (False, True):
                scan = pbc.cumsum if inclusive else pbc.prefix_sum
                got, want = scan(device, reverse=reverse), scan(cpu, reverse=reverse)
                np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=f'{n}')
                assert location(device) == 'device'       # (not moved to the host)
                assert location(got) == 'device' or n == 1      # (1: a literal's buffer)
        mask = device > 4
        np.testing.assert_array_equal(pbc.compress(mask).numpy(), np.flatnonzero(data > 4))
        assert location(mask) == 'device'
    assert pbc.compress(pbc.cuda.Bool(False, False)).numpy().tolist() == []


def test_a_scatter_into_a_shared_device_array_copies_it_on_the_device(fake_gpu):
    from pbc.cuda import Float, UInt32
    a = Float(1, 2, 3, 4) + 0
    pbc.eval(a)
    b = Float(a)                                      # shares a's variable
    pbc.scatter(b, Float(9), UInt32(2))
    assert b.numpy().tolist() == [1, 2, 9, 4] and a.numpy().tolist() == [1, 2, 3, 4]
    assert location(a) == location(b) == 'device'


def test_device_memory_is_reused_and_trimmed(fake_gpu, capsys):
    from pbc.cuda import Float
    x = Float(np.ones(5000, dtype=np.float32))
    (x * 2).numpy()
    before = fake_gpu.allocations
    (x * 3).numpy()                                   # the freed output block comes back
    assert fake_gpu.allocations == before
    pool = cuda_jit.backend().memory
    assert pool.cached
    figures = pbc.whos(print_table=False)
    assert figures['device_memory'] == pool.live_bytes >= 20000
    assert figures['device_cached_memory'] == pool.cached_bytes > 0
    pbc.whos()
    assert 'evaluated (device)' in capsys.readouterr().out         # (x)
    pbc.flush_malloc_cache()
    assert pool.cached == {} and len(fake_gpu.blocks) == len(pool.live)
    assert pbc.whos(print_table=False)['device_cached_memory'] == 0


def printing(mod, out):
    """Symbolic prints in a loop (several rows per lane) and in a call's targets."""
    @pbc.syntax
    def countdown(n):
        while n > 0:
            pbc.print('lane {thread_id}: {n}', n=n, file=out, limit=None)
            n -= 1
        return n

    pbc.eval(countdown(mod.UInt32(2, 0, 3, 1)))
    x = mod.Float(1.5, -2, 0.25)
    pbc.switch(mod.UInt32(1, 0, 1), [lambda v: pbc.print('a {}', v, file=out) or v,
                                     lambda v: pbc.print('b {} {}', v, v > 0, file=out) or v],
               x).numpy()
    pbc.print('{}', mod.Int64(-5, 7) * 3, file=out, mode='symbolic', limit=1)
    pbc.eval()


def test_symbolic_prints_are_captured_as_on_the_cpu(fake_gpu):
    want, got = io.StringIO(), io.StringIO()
    with pytest.warns(RuntimeWarning, match='only captured 1 of 2'):
        printing(pbc.llvm, want)
    with pytest.warns(RuntimeWarning, match='only captured 1 of 2'):
        printing(pbc.cuda, got)
    assert got.getvalue() == want.getvalue()
    assert 'lane [0, 0, 2, 2, 2, 3]: [2, 1, 3, 2, 1, 1]' in got.getvalue()
    assert fake_gpu.launches


def test_out_of_device_memory_frees_the_cache_then_raises(fake_gpu):
    from pbc.cuda import Float
    small = Float(np.ones(1000, dtype=np.float32))
    for k in range(3):
        (small * k).numpy()                           # its output blocks, freed, kept
    pool = cuda_jit.backend().memory
    kept = max(pool.cached)                           # (the outputs' size)
    fake_gpu.capacity = len(fake_gpu.blocks)          # the device is full
    big = pbc.arange(Float, 50_000)
    np.testing.assert_array_equal((big * 2).numpy(), np.arange(50_000) * 2)
    assert kept not in pool.cached                    # given back to make room
    pbc.flush_malloc_cache()
    fake_gpu.capacity = len(fake_gpu.blocks)          # full, and nothing cached to give
    with pytest.raises(MemoryError, match=r'pbc.cuda: cannot allocate \d+ bytes of device'):
        (big * 3 + small[0]).numpy()
    fake_gpu.capacity = 1 << 30
    assert (big * 3)[7] == 21 and small[999] == 1    # nothing was left half done


def test_a_kernel_the_driver_rejects_raises_with_its_log(fake_gpu, monkeypatch):
    from pbc.cuda import Float
    render = cuda_jit.ptx_render.render
    monkeypatch.setattr(cuda_jit.ptx_render, 'render',
                        lambda k, name='kernel': render(k, name) + '// REJECT\n')
    with pytest.raises(RuntimeError, match=r'(?s)driver rejected.*line 3; error: REJECT'):
        (Float(1, 2) + 5).numpy()


# ---- the same programs on both backends ---------------------------------------------------
class Body(pbc.Object):
    def __init__(self, mod, k):
        self.k = mod.Float(k, k + 1, k + 2)[mod.UInt32(0)]      # closure data: an array

    def eval(self, x):
        return x * self.k + 1


class Other(Body):
    def eval(self, x):
        return pbc.sqrt(pbc.abs(x)) - self.k


def dispatch(mod):
    """Calls of two classes' methods (per-lane instance pointers, closure data)."""
    a, b = Body(mod, 2), Other(mod, 3)
    ptrs = mod.Ptr[Body]([a, b, None, b, a])
    return ptrs.eval(mod.Float(1, 4, 9, 16, 25))


def random_walk(mod):
    """A symbolic loop over PCG32 state with a branch inside."""
    @pbc.syntax
    def walk(rng, n):
        x, i = mod.Float(0), mod.UInt32(0)
        while i < n:
            step = rng.next_float32()
            if step > 0.5:
                x += step
            else:
                x -= 1
            i += 1
        return x
    return walk(mod.PCG32(64), mod.UInt32(np.arange(64) % 7))


def gradient(mod):
    """Reverse-mode AD through gathers (its adjoint scatters)."""
    x = mod.Float(np.linspace(0, 1, 16, dtype=np.float32))
    pbc.enable_grad(x)
    y = pbc.gather(mod.Float, x, mod.UInt32(np.arange(32) % 16)) ** 2
    pbc.backward(pbc.sum(y))
    return pbc.grad(x)


def tables_and_masks(mod):
    """Many distinct literals (a kernel's constant table), Bool outputs, 64-bit types."""
    i = pbc.arange(mod.UInt32, 100)
    picked = pbc.switch(i % 4, [lambda v: v * 3, lambda v: v + 7, lambda v: v ^ 5,
                                lambda v: v // 2], i)
    wide = mod.Float64(i) * 1e-3 + mod.Int64(i) * 3
    return picked, wide, (i % 3) == 0


def host_side_operations(mod):
    """Results of the host's reductions, scans and compress feeding kernels, and kernels'
    results feeding them (arrays move between host and device both ways)."""
    x = (pbc.arange(mod.UInt32, 1000) * 7919) % 1009
    big = x > 500
    kept = pbc.gather(mod.UInt32, x, pbc.compress(big))
    total = pbc.sum(kept) + pbc.count(big)
    scan = pbc.prefix_sum(x) - total
    target = pbc.zeros(mod.UInt32, 16)                  # a literal, then a buffer
    pbc.scatter_reduce(pbc.ReduceOp.Add, target, 1, x % 16)
    return scan, target, pbc.max(x) + pbc.min(kept)


def evaluated_control_flow(mod):
    """A loop and calls run one kernel at a time (each step reads a reduction, calls
    partition their lanes and scatter into a result that every lane fills)."""
    with pbc.scoped_set_flag(pbc.JitFlag.SymbolicLoops, False), \
            pbc.scoped_set_flag(pbc.JitFlag.SymbolicCalls, False):
        y = dispatch(mod)

        @pbc.syntax
        def halve(n):
            steps = mod.UInt32(0)
            while n > 1:
                n = n // 2
                steps += 1
            return steps

        return y, halve(mod.UInt32(1, 5, 1000, 70000))


PROGRAMS = [dispatch, random_walk, gradient, tables_and_masks, host_side_operations,
            evaluated_control_flow]


@pytest.mark.parametrize('program', PROGRAMS)
def test_programs_give_the_cpu_backends_results(fake_gpu, program):
    want, got = program(pbc.llvm), program(pbc.cuda)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    for a, b in zip(want, got, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert fake_gpu.launches


def test_one_eval_of_both_backends_with_the_same_trace(fake_gpu):
    # Two groups traced alike, one per backend: each gets its own backend's kernel, and
    # the CPU's launches are not batched with the device's.
    a = pbc.llvm.Float(1, 2, 3) * 3 + 1
    b = pbc.cuda.Float(1, 2, 3) * 3 + 1
    c = pbc.llvm.Float(4, 5, 6) * 2
    pbc.eval(a, b, c)
    assert a.numpy().tolist() == b.numpy().tolist() == [4, 7, 10]
    assert c.numpy().tolist() == [8, 10, 12] and len(fake_gpu.launches) == 1


# ---- DLPack and the CUDA Array Interface on the device -----------------------------------
class _DLDevice(ctypes.Structure):
    _fields_ = [('device_type', ctypes.c_int32), ('device_id', ctypes.c_int32)]


class _DLTensor(ctypes.Structure):        # DLPack 0.x's layout, from its specification
    _fields_ = [('data', ctypes.c_void_p), ('device', _DLDevice), ('ndim', ctypes.c_int32),
                ('code', ctypes.c_uint8), ('bits', ctypes.c_uint8), ('lanes', ctypes.c_uint16),
                ('shape', ctypes.POINTER(ctypes.c_int64)),
                ('strides', ctypes.POINTER(ctypes.c_int64)), ('byte_offset', ctypes.c_uint64)]


def _dl_tensor(capsule):
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return _DLTensor.from_address(get(capsule, b'dltensor'))


class _Producer:
    """A DLPack producer handing out a given capsule (as a CUDA library would)."""
    def __init__(self, capsule, device=(2, 0)):
        self.capsule, self.device, self.streams = capsule, device, []

    def __dlpack__(self, stream=None, **_):
        self.streams.append(stream)
        return self.capsule

    def __dlpack_device__(self):
        return self.device


def test_dlpack_capsules_describe_device_memory(fake_gpu):
    from pbc.cuda import Float, UInt32
    x = Float(np.arange(6, dtype=np.float32)) * 2
    assert x.__dlpack_device__() == (2, 0)
    capsule = x.__dlpack__()
    t = _dl_tensor(capsule)
    assert (t.device.device_type, t.device.device_id, t.ndim) == (2, 0, 1)
    assert (t.code, t.bits, t.lanes, t.shape[0], t.strides[0]) == (2, 32, 1, 6, 1)
    assert t.data == _runtime.device_address(x) and fake_gpu.queue == []     # ready
    np.testing.assert_array_equal(fake_gpu.view(t.data, 24).view(np.float32),
                                  np.arange(6) * 2)
    pbc.scatter(x, Float(-1), UInt32(0))          # a later write copies first: the
    assert fake_gpu.view(t.data, 4).view(np.float32)[0] == 0     # consumer's data stays
    y = Float.from_dlpack(_Producer(capsule))
    assert y.numpy().tolist() == [0, 2, 4, 6, 8, 10] and x[0] == -1
    with pytest.raises(TypeError, match='unused DLPack capsule'):
        Float.from_dlpack(_Producer(capsule))     # (taken already)
    del capsule, t
    u = pbc.cuda.UInt32.from_dlpack(_Producer(pbc.cuda.Int32(-1, 5).__dlpack__()))
    assert u.numpy().tolist() == [2**32 - 1, 5]   # converted on the device


def test_dlpack_import_checks_layout_and_device(fake_gpu):
    from pbc.cuda import Float
    y = Float(1, 2, 3) + 0
    other = _runtime.dlpack_export(y, _runtime.device_address(y), 3, Float._vt_code, 2, 1)
    with pytest.raises(BufferError, match='on CUDA device 1, pbc.cuda uses device 0'):
        Float.from_dlpack(_Producer(other))
    square = _Producer(np.ones((2, 2), dtype=np.float32).__dlpack__())   # (said on device)
    with pytest.raises(BufferError, match=r'contiguous 1-D tensor, not one of shape \(2, 2\)'):
        Float.from_dlpack(square)
    producer = _Producer(np.arange(3, dtype=np.float32).__dlpack__(), device=(1, 0))
    assert Float.from_dlpack(producer).numpy().tolist() == [0, 1, 2]    # host memory
    assert pbc.llvm.Float.from_dlpack(np.ones(2)).numpy().tolist() == [1, 1]
    on_cpu = pbc.llvm.Float.from_dlpack(_Producer(y.__dlpack__()))      # (via the device)
    assert type(on_cpu) is pbc.llvm.Float and on_cpu.numpy().tolist() == [1, 2, 3]


def test_cuda_array_interface(fake_gpu):
    from pbc.cuda import UInt32
    x = pbc.arange(UInt32, 5) * 7
    cai = x.__cuda_array_interface__
    assert cai['shape'] == (5,) and cai['typestr'] == '<u4' and cai['version'] == 3
    np.testing.assert_array_equal(fake_gpu.view(cai['data'][0], 20).view(np.uint32),
                                  np.arange(5) * 7)
    assert not hasattr(pbc.llvm.UInt32(1), '__cuda_array_interface__')


# ---- on a GPU -----------------------------------------------------------------------------
on_gpu = pytest.mark.skipif(not pbc.has_backend('cuda'),
                            reason='needs an NVIDIA driver and a GPU (none here)')


@on_gpu
def test_on_the_gpu_arithmetic_and_scatters_match_numpy():
    from pbc.cuda import Float, UInt32
    xs = np.linspace(-3, 3, 100_003, dtype=np.float32)
    np.testing.assert_allclose((pbc.sin(Float(xs)) * 2).numpy(), np.sin(xs) * 2, rtol=2e-6,
                               atol=1e-6)
    target = pbc.zeros(Float, 4)
    pbc.scatter_reduce(pbc.ReduceOp.Add, target, Float(1, 2, 3), UInt32(0, 0, 3))
    assert target.numpy().tolist() == [3, 0, 0, 3]


@on_gpu
@pytest.mark.parametrize('program', PROGRAMS)
def test_on_the_gpu_programs_give_the_cpu_backends_results(program):
    want, got = program(pbc.llvm), program(pbc.cuda)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    for a, b in zip(want, got, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


@on_gpu
def test_on_the_gpu_arrays_stay_there_and_export_through_dlpack():
    from pbc.cuda import Float
    x = Float(np.arange(10_000, dtype=np.float32))
    y = x * 2 + 1
    pbc.eval(y)
    assert location(x) == location(y) == 'device'
    z = Float.from_dlpack(_Producer(y.__dlpack__()))
    np.testing.assert_array_equal(z.numpy(), np.arange(10_000) * 2 + 1)
    assert y.__cuda_array_interface__['data'][0] == _runtime.device_address(y)
