"""pbc.cuda: the CUDA backend's types and launcher (pbc/backend/cuda_jit.py).

No GPU runs these tests here. Three kinds of checks:
  - without PyCUDA, the first kernel says what is missing and nothing else is disturbed;
  - with a stand-in for PyCUDA's driver whose "device" is separate host memory and whose
    "GPU" runs each loaded kernel with the LLVM backend, every code path of the launcher
    (contexts, loading, the memory pool, copies in and out, scatter write-back, the
    parameter table) runs, and the results must equal NumPy's: what this cannot show is
    that the PTX itself computes the same (ptxas checks it assembles: test_ptx.py);
  - on a machine with a GPU (pbc.has_backend('cuda')), the same programs on the device.
"""

import atexit
import sys
import types

import numpy as np
import pytest

import pbc
import pbc.cuda
from pbc import evaluate
from pbc.backend import cuda_jit, llvm_jit, ptx_render


def reset():
    cuda_jit._backend = None
    evaluate._backends.pop(1, None)


@pytest.fixture
def no_pycuda(monkeypatch):
    monkeypatch.setitem(sys.modules, 'pycuda', None)
    monkeypatch.setitem(sys.modules, 'pycuda.driver', None)
    reset()
    yield
    reset()


def test_without_pycuda_the_first_kernel_says_what_is_missing(no_pycuda):
    from pbc.llvm import Float
    assert not pbc.has_backend('cuda')
    x = pbc.cuda.Float(1, 2, 3)
    y = x * 2 + 1
    for _ in range(2):                    # (and again: nothing was left half done)
        with pytest.raises(cuda_jit.CUDAUnavailable, match=r"needs PyCUDA \(pip install"):
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


# ---- a stand-in for pycuda.driver ---------------------------------------------------------
class FakeDriver(types.ModuleType):
    """pycuda.driver's calls that cuda_jit makes. Device memory is host memory of its own
    (padded as pbc's buffers are, since the LLVM kernels load whole vectors); a loaded
    module's kernel runs through the LLVM backend on it."""

    class Error(Exception):
        pass

    device_attribute = types.SimpleNamespace(MULTIPROCESSOR_COUNT='multiprocessors')

    def __init__(self, kernels):
        super().__init__('pycuda.driver')
        self.kernels = kernels            # PTX text -> Kernel (recorded by the renderer)
        self.memory = {}                  # address -> its bytes
        self.allocations = 0
        self.depth = 0                    # of pushed contexts
        self.launches = []
        driver = self

        class Context:
            @staticmethod
            def pop():
                driver.depth -= 1

            @staticmethod
            def synchronize():
                assert driver.depth > 0

        class PrimaryContext:
            def push(self):
                driver.depth += 1

        class Device:
            @staticmethod
            def count():
                return 1

            def __init__(self, n):
                assert n == 0

            def compute_capability(self):
                return (9, 0)

            def get_attribute(self, attr):
                assert driver.depth > 0 and attr == 'multiprocessors'
                return 2

            def retain_primary_context(self):
                return PrimaryContext()

        self.Context, self.Device = Context, Device

    def init(self):
        pass

    def get_driver_version(self):
        return 12040

    def get_version(self):
        return (12, 4, 0)

    def mem_alloc(self, nbytes):
        assert self.depth > 0
        self.allocations += 1
        block = np.zeros(nbytes + 256, dtype=np.uint8)
        start = -block.ctypes.data % 64
        address = block.ctypes.data + start
        self.memory[address] = block[start:start + nbytes]
        return _Allocation(address, block)

    def memcpy_htod(self, dest, src):
        view = np.frombuffer(memoryview(src).cast('B'), dtype=np.uint8)
        self.memory[int(dest)][:view.size] = view

    def memcpy_dtoh(self, dest, src):
        dest[...] = self.memory[int(src)][:dest.size]

    def module_from_buffer(self, text, message_handler=None):
        assert self.depth > 0
        text = text.decode()
        if 'REJECT' in text:
            message_handler(False, '', 'ptxas application ptx input, line 3; error: REJECT')
            raise self.Error('cuModuleLoadDataEx failed: a PTX JIT compilation failed')
        return _Module(self, self.kernels[text])


class _Allocation:
    def __init__(self, address, block):
        self.address, self.block = address, block

    def __int__(self):
        return self.address

    def free(self):
        self.block = None


class _Module:
    def __init__(self, driver, kernel):
        self.driver, self.kernel = driver, kernel

    def get_function(self, name):
        assert name == 'kernel'
        return _Function(self.driver, self.kernel)


class _Function:
    def __init__(self, driver, kernel):
        self.driver, self.kernel = driver, kernel
        be = llvm_jit.backend()
        self.compiled = be.compile(kernel, None, ('fake cuda', id(kernel)))

    def prepare(self, signature):
        assert signature == 'QQ'

    def prepared_call(self, grid, block, table, size):
        assert self.driver.depth > 0 and grid[0] * block[0] >= 1
        slots = self.driver.memory[int(table)].view(np.uint64)[:len(self.kernel.params)]
        for slot, param in enumerate(self.kernel.params):   # device addresses only
            assert param.kind in ('size', 'sink') or int(slots[slot]) in self.driver.memory
        self.driver.launches.append((grid, block, int(size)))
        llvm_jit.backend().launch(self.compiled.address, int(size), [int(v) for v in slots],
                                  wait=True)


@pytest.fixture
def fake_gpu(monkeypatch):
    kernels = {}
    render = ptx_render.render

    def recording(kernel, name='kernel'):
        text = render(kernel, name)
        kernels[text] = kernel
        return text

    driver = FakeDriver(kernels)
    package = types.ModuleType('pycuda')
    package.driver = driver
    monkeypatch.setitem(sys.modules, 'pycuda', package)
    monkeypatch.setitem(sys.modules, 'pycuda.driver', driver)
    monkeypatch.setattr(cuda_jit.ptx_render, 'render', recording)
    reset()
    yield driver
    assert driver.depth == 0              # every push was popped
    made = cuda_jit._backend
    if made is not None:
        made.close()                      # (what the interpreter's exit runs)
        atexit.unregister(made.close)
        assert made.pool == {} and made.memory == {} and driver.depth == 0
    reset()


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
    grid, block, size = fake_gpu.launches[-1]
    assert size == 1000 and block == (256, 1, 1) and grid[0] == 4


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


@pytest.mark.parametrize('program', [dispatch, random_walk, gradient, tables_and_masks])
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


# ---- on a GPU -----------------------------------------------------------------------------
on_gpu = pytest.mark.skipif(not pbc.has_backend('cuda'),
                            reason='needs PyCUDA, an NVIDIA driver and a GPU (none here)')


@on_gpu
def test_on_the_gpu_arithmetic_and_scatters_match_numpy():
    from pbc.cuda import Float, UInt32
    xs = np.linspace(-3, 3, 100_003, dtype=np.float32)
    np.testing.assert_allclose((pbc.sin(Float(xs)) * 2).numpy(), np.sin(xs) * 2, rtol=2e-6,
                               atol=1e-6)
    target = pbc.zeros(Float, 4)
    pbc.scatter_reduce(pbc.ReduceOp.Add, target, Float(1, 2, 3), UInt32(0, 0, 3))
    assert target.numpy().tolist() == [3, 0, 0, 3]
