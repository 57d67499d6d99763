"""Construction, conversion, printing, static vectors, matrices, tensors, interop, threads,
and clear errors for bad input."""

import functools
import importlib
import operator

import numpy as np
import pytest
import suite_backend
from hypothesis import given, settings
from hypothesis import strategies as st
from suite_backend import (
    Array2i,
    Array3b,
    Array3f,
    Array3f64,
    Array3i,
    Array4f,
    Bool,
    Float,
    Float64,
    Int,
    Int64,
    Matrix3f,
    TensorXf,
    TensorXu,
    UInt,
    UInt32,
)

import pbc
from pbc.backend import cuda_driver


def test_construction_forms():
    np.testing.assert_array_equal(Float(1, 2, 3).numpy(), [1, 2, 3])
    np.testing.assert_array_equal(Float([1, 2, 3]).numpy(), [1, 2, 3])
    np.testing.assert_array_equal(Float(np.arange(4, dtype=np.float64)).numpy(), [0, 1, 2, 3])
    lit = Float(2.5)
    assert lit.state == 'literal' and len(lit) == 1 and lit[0] == 2.5
    np.testing.assert_array_equal(Float(UInt32(1, 7)).numpy(), [1.0, 7.0])
    np.testing.assert_array_equal(Int(Float(-1.7, 2.9)).numpy(), [-1, 2])
    bits = pbc.reinterpret_array(UInt32, Float(1.0))
    assert bits[0] == 0x3F800000
    assert len(Float()) == 0 and Float().index == 0 and Float().state == 'invalid'
    assert Float(1, 2).index != 0 and pbc.width(Float(1, 2, 3)) == 3
    assert UInt(-1)[0] == 2**32 - 1


def test_construction_from_python_integers_past_int64_is_exact():
    # (NumPy makes floats of [1, 2**64 - 1]: each must wrap around exactly instead)
    UInt64 = pbc.uint64_array_t(UInt)
    assert UInt64([1, 2**64 - 1]).numpy().tolist() == [1, 2**64 - 1]
    assert UInt64((3, 2**63 + 5)).numpy().tolist() == [3, 2**63 + 5]
    assert Int64([1, 2**64 - 1, -2**63]).numpy().tolist() == [1, -1, -2**63]
    assert UInt([1, 2**64 - 1, 2**32 + 7]).numpy().tolist() == [1, 2**32 - 1, 7]


def test_creation_functions():
    np.testing.assert_array_equal(pbc.zeros(Float, 3).numpy(), [0, 0, 0])
    np.testing.assert_array_equal(pbc.ones(Int, 2).numpy(), [1, 1])
    np.testing.assert_array_equal(pbc.full(Float, 7, 2).numpy(), [7, 7])
    np.testing.assert_array_equal(pbc.arange(Int, 2, 11, 3).numpy(), [2, 5, 8])
    np.testing.assert_array_equal(pbc.arange(Float, 5).numpy(), np.arange(5))
    np.testing.assert_allclose(pbc.linspace(Float, 0, 1, 5).numpy(), np.linspace(0, 1, 5))
    np.testing.assert_allclose(pbc.linspace(Float, 0, 1, 4, endpoint=False).numpy(),
                               [0, .25, .5, .75])
    v = pbc.zeros(Array3f, 4)
    assert v.width() == 4 and v.numpy().shape == (3, 4)


def test_opaque_does_not_recompile():
    pbc.kernel_history_clear()
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
        for value in (1.0, 2.0, 3.0):
            s = pbc.opaque(Float, value)
            assert s.state == 'evaluated'
            pbc.eval(pbc.arange(Float, 10) * s)
        hashes = {h['hash'] for h in pbc.kernel_history()}
    assert len(hashes) == 1
    x = Float(4.0)
    pbc.make_opaque(x)
    assert x.state == 'evaluated' and x[0] == 4.0


def test_printing():
    assert str(Float(1, 2.5, -3)) == '[1, 2.5, -3]'
    assert str(pbc.linspace(Float, -1, 1, 1024 * 1024)) == \
        '[-1, -0.999998, -0.999996, .. 1048570 skipped .., 0.999996, 0.999998, 1]'
    assert str(Bool(True, False)) == '[True, False]'
    assert str(Int(-5, 3)) == '[-5, 3]'
    assert str(Array3f(1, 2, 3)) == '[[1, 2, 3]]'


@pytest.mark.llvm_only          # (host memory: pbc.cuda's DLPack is tested in test_cuda.py)
def test_numpy_and_dlpack_interop():
    x = Float(1, 2, 3) * 2
    a = np.array(x)
    assert a.dtype == np.float32 and a.tolist() == [2, 4, 6]
    view = np.from_dlpack(x)
    assert view.tolist() == [2, 4, 6]
    back = Float.from_dlpack(np.arange(5, dtype=np.float32))
    np.testing.assert_array_equal(back.numpy(), np.arange(5))
    # Writes after export copy first: the exported view keeps its values.
    pbc.scatter(x, 0.0, UInt32(0))
    assert view.tolist() == [2, 4, 6] and x.numpy().tolist() == [0, 4, 6]
    assert x.__dlpack_device__() == (1, 0)


def test_reading_a_vector_or_matrix_evaluates_its_components_in_one_kernel():
    # (one kernel per component would trace and run what they share once each)
    x = pbc.arange(Float, 100) * 0.5
    shared = pbc.sin(x) * pbc.exp(x * 0.01)
    m = suite_backend.Matrix2f(shared, x, shared * 2, x + 1)
    for make, shape in ((lambda: Array3f(shared, shared + 1, x * shared), (3, 100)),
                        (lambda: m * 1.5, (2, 2, 100))):
        for read in (lambda v: v.numpy().shape, lambda v: '[' in repr(v)):
            value = make()
            with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
                pbc.kernel_history_clear()
                assert read(value) in (shape, True)
                assert len(pbc.kernel_history()) == 1


def test_static_vectors():
    v = Array3f(1, 2, 3)
    w = Array3f(pbc.arange(Float, 3), 1, 0)
    assert v.x[0] == 1 and v[2][0] == 3
    s = v + w * 2
    np.testing.assert_array_equal(s.numpy(), [[1, 3, 5], [4, 4, 4], [3, 3, 3]])
    np.testing.assert_allclose(pbc.dot(v, v).numpy(), [14])
    np.testing.assert_allclose(pbc.norm(Array3f(3, 4, 0)).numpy(), [5])
    np.testing.assert_array_equal(pbc.cross(Array3f(1, 0, 0), Array3f(0, 1, 0)).numpy(),
                                  [[0], [0], [1]])
    m = v < 2
    assert type(m).__name__ == 'Array3b'
    assert type(Array2i(1, 2) + 1).__name__ == 'Array2i'
    v.y = Float(7)
    assert v.y[0] == 7
    a4 = Array4f(1, 2, 3, 4)
    assert pbc.sum(a4)[0] == 10 and a4.w[0] == 4


def test_matrices():
    rng = np.random.default_rng(0)
    A, B = rng.random((3, 3)).astype(np.float32), rng.random((3, 3)).astype(np.float32)
    ma, mb = Matrix3f(A), Matrix3f(B)
    np.testing.assert_allclose((ma @ mb).numpy()[..., 0], A @ B, rtol=1e-6)
    np.testing.assert_allclose((ma * mb).numpy()[..., 0], A @ B, rtol=1e-6)
    v = Array3f(1, 2, 3)
    np.testing.assert_allclose((ma @ v).numpy()[:, 0], A @ [1, 2, 3], rtol=1e-6)
    np.testing.assert_array_equal(pbc.identity(Matrix3f).numpy()[..., 0], np.eye(3))
    assert str(Matrix3f()) == '[]'          # empty entries, as in Dr.Jit
    np.testing.assert_array_equal(pbc.transpose(ma).numpy()[..., 0], A.T)


def test_tensors():
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = TensorXf(data)
    assert t.shape == (3, 4)
    np.testing.assert_array_equal(t.numpy(), data)
    t2 = TensorXf(pbc.arange(Float, 6), shape=(2, 3))
    np.testing.assert_array_equal((t2 * 2 + 1).numpy(), np.arange(6).reshape(2, 3) * 2 + 1)
    np.testing.assert_array_equal(t2.array.numpy(), np.arange(6))
    assert pbc.sum(t.array)[0] == 66
    total = pbc.sum(t, axis=None)
    assert type(total) is TensorXf and total.shape == () and total.numpy() == 66
    assert pbc.max(t, axis=None).numpy() == 11 and pbc.mean(t, axis=None).numpy() == 5.5
    # a tensor's default axis is None (all of them), as in Dr.Jit and NumPy
    assert pbc.sum(t).shape == () and pbc.sum(t).item() == 66
    np.testing.assert_array_equal(pbc.sum(t, axis=0).numpy(), data.sum(axis=0))
    np.testing.assert_array_equal(pbc.mean(t, axis=1).numpy(), data.mean(axis=1))
    assert TensorXu(np.ones((2, 2), dtype=np.uint32)).numpy().dtype == np.uint32
    with pytest.raises(TypeError, match='wrong number of entries'):
        TensorXf(pbc.arange(Float, 5), shape=(2, 3))


def test_thread_count():
    n = pbc.thread_count()
    assert n >= 1
    x = pbc.arange(Float64, 1_000_000)
    expected = (x * 3 + 1).numpy()
    try:
        pbc.set_thread_count(1)
        assert pbc.thread_count() == 1
        np.testing.assert_array_equal((pbc.arange(Float64, 1_000_000) * 3 + 1).numpy(),
                                      expected)
    finally:
        pbc.set_thread_count(n)
    with pytest.raises(ValueError):
        pbc.set_thread_count(0)


def _scaled_plus_one(k, v):
    return v * k + 1


def test_pool_jobs_at_any_thread_count():
    """Kernels, reductions and evaluated calls give NumPy's values with more pool threads
    than cores and with the thread count changing between jobs: workers join and leave
    jobs without a lock (pbc/_pool.h), and those beyond the count must stay out."""
    n = pbc.thread_count()
    rng = np.random.default_rng(7)
    try:
        for threads in (8, 3, 16, 1, 5):
            pbc.set_thread_count(threads)
            for size in [1, 8191, 8192, 8193, *rng.integers(2, 300_000, 6)]:
                a = rng.uniform(-1, 1, size).astype(np.float32)
                y = Float(a) * 2 + 1
                want = a * np.float32(2) + np.float32(1)
                np.testing.assert_array_equal(y.numpy(), want)
                np.testing.assert_allclose(pbc.sum(y).numpy(), want.sum(dtype=np.float64),
                                           rtol=1e-5, atol=1e-3)
            keys = rng.integers(0, 5, 100_000).astype(np.uint32)
            x = Float(rng.uniform(-1, 1, 100_000).astype(np.float32))
            targets = [functools.partial(_scaled_plus_one, k) for k in range(5)]
            z = pbc.switch(UInt32(keys), targets, x, mode='evaluated')
            np.testing.assert_array_equal(z.numpy(), x.numpy() * keys.astype(np.float32) + 1)
    finally:
        pbc.set_thread_count(n)


def test_bad_input_errors():
    with pytest.raises(ValueError, match='incompatible sizes'):
        Float(1, 2, 3) + Float(1, 2)
    with pytest.raises(TypeError, match='not supported on bool'):
        Bool(True) + Bool(False)
    with pytest.raises(TypeError, match='not supported on float32'):
        Float(1.0) << 2
    with pytest.raises(ValueError, match='ambiguous'):
        bool(Float(1, 2) < 2)
    with pytest.raises(TypeError, match='unsupported dtype'):
        Float(np.array(['a', 'b']))
    with pytest.raises(TypeError, match='unsupported dtype'):
        Float(np.array([1 + 2j]))
    with pytest.raises(ValueError, match='1-D'):
        Float(np.zeros((2, 2)))
    with pytest.raises(TypeError, match='indices must be integer'):
        pbc.gather(Float, Float(1, 2), Float(0, 1))
    with pytest.raises(TypeError, match='cannot gather'):
        pbc.gather(Int, Float(1, 2), UInt32(0))
    with pytest.raises(TypeError, match='cannot write float64'):
        pbc.scatter(Float(1, 2), Float64(1.0), UInt32(0))
    with pytest.raises(IndexError):
        Float(1, 2)[5]
    with pytest.raises(TypeError, match='reinterpret'):
        pbc.reinterpret_array(Int64, Float(1.0))
    assert bool(Float(1.0) < 2) is True


def test_failed_operation_leaves_inputs_intact():
    x = Float(1, 2, 3)
    before = x.index
    with pytest.raises(ValueError):
        x + Float(1, 2)
    assert x.index == before and x.numpy().tolist() == [1, 2, 3]
    t = Float(5, 6)
    with pbc.scoped_set_flag(pbc.JitFlag.Debug, True), pytest.raises(IndexError):
        pbc.scatter(t, Float(1, 1), UInt32(0, 9))
    assert t.numpy().tolist() == [5, 6]


def test_ad_alias_module():
    ad = importlib.import_module(suite_backend.module.__name__ + '.ad')
    assert ad.Float is Float


def test_kernels_run_in_a_forked_child():
    """The thread pool starts over in a child process (its threads did not survive fork)."""
    import multiprocessing
    x = pbc.arange(Float, 1_000_000) * 2       # a multi-threaded launch in the parent first
    pbc.eval(x)
    ctx = multiprocessing.get_context('fork')
    with ctx.Pool(1) as pool:
        if suite_backend.NAME == 'cuda':      # (CUDA cannot run in a forked child: it says so)
            with pytest.raises(RuntimeError, match="forked from one that had started"):
                pool.apply(_sum_in_child, (1_000_000,))
            return
        total = pool.apply(_sum_in_child, (1_000_000,))
    assert total == float(np.arange(1_000_000, dtype=np.float64).sum() * 3)


def _sum_in_child(n):
    return float(pbc.sum(pbc.arange(Float64, n) * 3)[0])


def test_vector_operators_for_every_kind_of_operand():
    # The operators take short paths for a vector of the same class and for Python numbers:
    # order (reflected forms), result classes and values must be those of the general path.
    v, w = Array3f(1, 2, 3), Array3f(4, 5, 6)
    a = np.array([[1], [2], [3]], dtype=np.float32)
    b = np.array([[4], [5], [6]], dtype=np.float32)
    cases = [(v - w, a - b), (w / v, b / a), (v - 2, a - 2), (2 - v, 2 - a),
             (v / 2.0, a / 2), (2.0 / v, 2 / a), (v - [1, 0, 1], a - [[1], [0], [1]]),
             ([1, 0, 1] - v, [[1], [0], [1]] - a), (v - Float(1), a - 1), (Float(1) - v, 1 - a),
             (-v, -a), (v ** 2, a ** 2)]
    for got, want in cases:
        assert type(got) is Array3f
        assert np.allclose(got.numpy(), want)
    less = v < w
    assert type(less) is Array3b and less.numpy().all()
    assert type(v * Float(2)) is Array3f and type(v + Int(1)) is Array3f


_FLOAT_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.lt,
              operator.le, operator.gt, operator.ge, operator.eq, operator.ne]
_INT_OPS = [operator.add, operator.sub, operator.mul, operator.and_, operator.or_,
            operator.xor, operator.lt, operator.eq, operator.ne, operator.ge]


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_vector_operators_match_numpy_for_any_operand_on_either_side(data):
    """Each operator of a vector (the C paths take a vector of the same class, a flat array
    or a Python int or float; everything else takes the general path) gives NumPy's values,
    in a vector of the result's type, with the operand on either side."""
    floating = data.draw(st.booleans(), label='floating')
    V, F, dtype = (Array3f, Float, np.float32) if floating else (Array3i, Int, np.int32)
    fn = data.draw(st.sampled_from(_FLOAT_OPS if floating else _INT_OPS), label='op')
    values = st.integers(1, 9)
    a = np.array(data.draw(st.lists(values, min_size=12, max_size=12)), dtype).reshape(3, 4)
    v = V(a)
    kind = data.draw(st.sampled_from(['vector', 'flat', 'int', 'float', 'list', 'numpy',
                                      'other vector']), label='operand')
    if kind == 'vector':
        b = np.array(data.draw(st.lists(values, min_size=12, max_size=12)), dtype)
        o, o_np = V(b.reshape(3, 4)), b.reshape(3, 4)
    elif kind == 'flat':
        b = np.array(data.draw(st.lists(values, min_size=4, max_size=4)), dtype)
        o, o_np = F(b), b
    elif kind in ('int', 'float'):
        o = o_np = data.draw(values) * (1 if kind == 'int' else 0.5)
    elif kind in ('list', 'numpy'):
        b = data.draw(st.lists(values, min_size=3, max_size=3))
        o = b if kind == 'list' else np.array(b, dtype)
        o_np = np.array(b, dtype).reshape(3, 1)
    else:
        b = np.array(data.draw(st.lists(values, min_size=12, max_size=12)), np.float64)
        o, o_np = Array3f64(b.reshape(3, 4)), b.reshape(3, 4)
    if not floating and fn in _INT_OPS[3:6] and kind in ('float', 'other vector'):
        return              # (bitwise operators of a float)
    reflected = data.draw(st.booleans(), label='reflected')
    got = fn(o, v) if reflected else fn(v, o)
    want = np.asarray(fn(o_np, a) if reflected else fn(a, o_np))
    expected = Array3b if want.dtype.kind == 'b' else Array3f64 if kind == 'other vector' \
        else Array3f if want.dtype.kind == 'f' else Array3i
    assert type(got) is expected
    out = got.numpy()
    np.testing.assert_allclose(out, np.broadcast_to(want, out.shape), rtol=1e-6)


def test_operators_of_nested_vectors_and_mixed_vector_classes():
    m, n = Matrix3f(np.arange(9.0).reshape(3, 3)), Matrix3f(np.full((3, 3), 4.0))
    both = (m < n) & (m > 1)          # vectors of vectors: the general path, per row
    assert type(both).__name__ == 'Array33b'
    np.testing.assert_array_equal(both.numpy()[..., 0],
                                  (np.arange(9).reshape(3, 3) < 4) &
                                  (np.arange(9).reshape(3, 3) > 1))
    i, f = Array3i(1, 2, 3), Array3f(0.5, 0.5, 0.5)
    assert type(i + f) is Array3f and type(f * i) is Array3f
    np.testing.assert_array_equal((i + f).numpy()[:, 0], [1.5, 2.5, 3.5])
    np.testing.assert_allclose(pbc.dot(i, f).numpy(), [3.0])
    np.testing.assert_allclose(pbc.cross(Array3f64(1, 0, 0), Array3f64(0, 1, 0)).numpy()[:, 0],
                               [0, 0, 1])
    np.testing.assert_allclose(pbc.dot(f, [2, 2, 2]).numpy(), [3.0])
    with pytest.raises(TypeError, match='/'):
        Array3i(1, 2, 3) / Array3i(1, 1, 1)     # integer vectors divide with //


def test_cross_dot_and_normalize_against_numpy():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(3, 9)).astype(np.float32), rng.normal(size=(3, 9)).astype(np.float32)
    u, v = Array3f(a), Array3f(b)
    c = pbc.cross(u, v)
    assert type(c) is Array3f
    np.testing.assert_allclose(c.numpy(), np.cross(a.T, b.T).T, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(pbc.dot(u, v).numpy(), (a * b).sum(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(pbc.normalize(u).numpy(), a / np.linalg.norm(a, axis=0),
                               rtol=1e-5, atol=1e-6)


def test_named_constants():
    import math
    expected = {'e': math.e, 'two_pi': 2 * math.pi, 'four_pi': 4 * math.pi,
                'inv_pi': 1 / math.pi, 'inv_two_pi': 0.5 / math.pi, 'inv_four_pi': 0.25 / math.pi,
                'sqrt_pi': math.sqrt(math.pi), 'sqrt_two': math.sqrt(2),
                'sqrt_two_pi': math.sqrt(2 * math.pi), 'sqrt_four_pi': math.sqrt(4 * math.pi),
                'inv_sqrt_pi': 1 / math.sqrt(math.pi), 'inv_sqrt_two': math.sqrt(0.5),
                'inv_sqrt_two_pi': 1 / math.sqrt(2 * math.pi),
                'inv_sqrt_four_pi': 1 / math.sqrt(4 * math.pi),
                'log_two': math.log(2), 'inv_log_two': 1 / math.log(2)}
    for name, value in expected.items():
        assert getattr(pbc, name) == pytest.approx(value, rel=1e-15), name
    x = suite_backend.Float(1, 2)
    assert (x * pbc.two_pi).numpy().tolist() == [np.float32(2 * math.pi), np.float32(4 * math.pi)]


def cuda_device_here():
    """Whether the CUDA driver loads here and finds a device, asked without pbc's backend."""
    try:
        return cuda_driver.Driver().device_count() > 0
    except (OSError, cuda_driver.CUDAError):
        return False


def test_loop_is_in_the_backend_module_as_in_dr_jit_0x():
    assert suite_backend.Loop is pbc.Loop


def test_has_backend():
    assert pbc.has_backend('llvm') and pbc.has_backend(pbc.JitBackend.LLVM)
    # CUDA: where the driver finds a device (or the suite runs on the stand-in driver)
    gpu = suite_backend.NAME == 'cuda' or cuda_device_here()
    assert pbc.has_backend('cuda') == pbc.has_backend(pbc.JitBackend.CUDA) == gpu
    assert not pbc.has_backend(pbc.JitBackend.Metal)
    with pytest.raises(ValueError, match="unknown backend 'vulkan'"):
        pbc.has_backend('vulkan')


@pytest.mark.parametrize('suffix', ['f', 'f64'])
@pytest.mark.parametrize('n', [2, 3, 4])
def test_inverse_and_determinant_of_matrices(n, suffix):
    # (Dr.Jit's rcp of a matrix is its inverse, not 1 / each entry)
    M = getattr(suite_backend.module, f'Matrix{n}{suffix}')
    a = np.random.default_rng(n).uniform(-1, 1, (2, n, n)) + 2 * np.eye(n)
    m = M(*[M.Row.Value(a[:, i, j]) for i in range(n) for j in range(n)])
    tol = 1e-5 if suffix == 'f' else 1e-12
    for inv in (pbc.inverse(m), pbc.rcp(m)):
        assert type(inv) is M
        got = np.array([[inv[i][j].numpy() for j in range(n)] for i in range(n)])
        assert np.allclose(np.moveaxis(got, -1, 0), np.linalg.inv(a), atol=tol)
    assert np.allclose(pbc.det(m).numpy(), np.linalg.det(a), atol=tol)
    assert np.allclose(pbc.trace(m).numpy(), np.trace(a, axis1=1, axis2=2), atol=tol)
    assert np.allclose((m @ pbc.inverse(m)).numpy(), np.eye(n)[..., None], atol=tol)
