"""pbc.allclose / assert_allclose (NumPy as the oracle) and pbc.assert_true / assert_false,
outside and inside symbolic code."""

import numpy as np
import pytest
import suite_backend
from suite_backend import (
    Array3f,
    Array3f64,
    Array3i,
    Bool,
    Float,
    Float64,
    Int,
    Matrix2f,
    TensorXf,
    TensorXf64,
    UInt32,
)

import pbc


def perturbed(rng, n, dtype, rtol, atol, close):
    """(a, b): b random, a within (close) or well beyond (not close) the tolerance of b in
    some lanes, far from the boundary so that rounding cannot decide."""
    b = rng.normal(size=n).astype(dtype) * rng.choice([1e-6, 1, 1e4], size=n)
    b = b.astype(dtype)
    tol = np.abs(b) * rtol + atol
    scale = rng.uniform(0.05, 0.5, size=n) if close else rng.uniform(0, 0.5, size=n)
    a = b + (tol * scale * rng.choice([-1, 1], size=n)).astype(dtype)
    if not close:
        k = rng.choice(n, size=3, replace=False)
        a[k] = b[k] + (tol[k] * 20 * rng.choice([-1, 1], size=3)).astype(dtype)
    return a.astype(dtype), b


@pytest.mark.parametrize('T, dtype, rtol, atol', [
    (Float, np.float32, 1e-3, 1e-5), (Float64, np.float64, 1e-5, 1e-8)])
@pytest.mark.parametrize('close', [True, False])
def test_allclose_default_tolerances_follow_the_precision(T, dtype, rtol, atol, close):
    rng = np.random.default_rng(7)
    for _ in range(5):
        a, b = perturbed(rng, 1000, dtype, rtol, atol, close)
        expected = np.allclose(a, b, rtol=rtol, atol=atol)
        assert expected == close
        assert pbc.allclose(T(a), T(b)) is expected
        assert pbc.allclose(T(a), b.astype(dtype)) is expected
        assert pbc.allclose(a.tolist(), T(b)) is expected
        # explicit tolerances override the defaults
        assert pbc.allclose(T(a), T(b), rtol=rtol * 100, atol=atol * 100)
        assert not pbc.allclose(T(a), T(b), rtol=0, atol=0) or np.array_equal(a, b)


def test_allclose_mixed_precision_compares_in_the_wider_type():
    a = np.linspace(1, 2, 100)
    b = a * (1 + 1e-4)                       # close for Float32, not for Float64
    assert pbc.allclose(Float(a), Float(b))
    assert not pbc.allclose(Float(a), Float64(b))       # Float - Float64 is Float64
    assert not pbc.allclose(Float(a), b)                 # float64 NumPy data, too
    assert pbc.allclose(Float(a), b.astype(np.float32))
    assert pbc.allclose(Float(a), b.tolist())            # Python floats adopt Float32


def test_allclose_scalars_and_sequences():
    assert pbc.allclose(1.0, 1.0 + 1e-9) and not pbc.allclose(1.0, 1.001)
    assert pbc.allclose(3, 3) and not pbc.allclose(3, 4)
    assert pbc.allclose([1, [2, 3]], [1, [2, 3 + 1e-9]])
    assert not pbc.allclose([1, [2, 3]], [1, [2, 4]])
    assert pbc.allclose([1, 1, 1], 1) and pbc.allclose([[1, 2]], [[1, 2], [1, 2]])
    assert pbc.allclose(np.ones((2, 3)), 1) and pbc.allclose(np.ones((2, 3)), np.ones((1, 3)))
    assert pbc.allclose([1, 2], np.array([1.0, 2.0]))
    assert isinstance(pbc.allclose(np.float32(1), 1), bool)
    with pytest.raises(RuntimeError, match='incompatible'):
        pbc.allclose([1, 2, 3], [1, 2])
    with pytest.raises(RuntimeError, match='incompatible'):
        pbc.allclose(np.ones((2, 3)), np.ones((3, 2)))


def test_allclose_arrays_broadcast():
    assert pbc.allclose(Float(2, 2, 2), 2) and pbc.allclose(Float(2), [2, 2, 2])
    assert pbc.allclose(Int(1, 2, 3), UInt32(1, 2, 3)) and not pbc.allclose(Int(1), Int(2))
    with pytest.raises(RuntimeError, match='incompatible shapes'):
        pbc.allclose(Float(1, 2, 3), Float(1, 2))
    with pytest.raises(RuntimeError, match='incompatible shapes'):
        pbc.allclose(Float(1, 2, 3), np.ones(4))
    with pytest.raises(TypeError, match='incompatible types'):
        pbc.allclose(Array3f(1, 2, 3), TensorXf(np.ones(3)))
    with pytest.raises(TypeError):
        pbc.allclose(Float(1), 'text')


def test_allclose_vectors_and_matrices():
    rng = np.random.default_rng(1)
    data = rng.normal(size=(3, 50)).astype(np.float32)
    v = Array3f(data)
    assert pbc.allclose(v, data) and pbc.allclose(data, v) and pbc.allclose(v, Array3f(v))
    assert pbc.allclose(v, Array3f64(data.astype(np.float64)))
    wrong = data.copy()
    wrong[1, 7] += 1
    assert not pbc.allclose(v, wrong)
    # Lists give the components; flat arrays and numbers apply to every component
    assert pbc.allclose(Array3f(1, 2, 3), [1, 2, 3]) and pbc.allclose(Array3f(1, 2, 3),
                                                                      np.array([1, 2, 3]))
    assert pbc.allclose(Array3f(Float(1, 2), Float(1, 2), Float(1, 2)), Float(1, 2))
    assert pbc.allclose(Array3i(4, 4, 4), 4) and not pbc.allclose(Array3i(4, 4, 5), 4)
    with pytest.raises(TypeError, match='incompatible types'):
        pbc.allclose(Array3f(1, 2, 3), suite_backend.Array4f(1, 2, 3, 4))
    # Matrices compare entry by entry (a number applies to every entry)
    m = Matrix2f(1, 2, 3, 4)
    assert pbc.allclose(m, [[1, 2], [3, 4]]) and pbc.allclose(m, np.array([[1, 2], [3, 4]]))
    assert not pbc.allclose(m, np.eye(2)) and pbc.allclose(pbc.identity(Matrix2f), np.eye(2))
    assert pbc.allclose(Matrix2f(5, 5, 5, 5), 5) and not pbc.allclose(Matrix2f(5.0), 5)


def test_allclose_tensors():
    rng = np.random.default_rng(2)
    data = rng.normal(size=(4, 5, 6))
    t = TensorXf64(data)
    assert pbc.allclose(t, data) and pbc.allclose(t, TensorXf64(data))
    assert pbc.allclose(TensorXf(np.ones((2, 3))), 1)
    assert pbc.allclose(TensorXf(np.tile(np.arange(3.0), (2, 1))), np.arange(3.0))  # NumPy
    assert not pbc.allclose(t, data + 1e-3)
    near = data * (1 + 1e-4)
    assert pbc.allclose(TensorXf(data), near.astype(np.float32))
    assert not pbc.allclose(TensorXf(data), near)        # TensorXf - float64 is in Float64
    with pytest.raises(RuntimeError, match='incompatible shapes'):
        pbc.allclose(t, np.ones((5, 4, 6)))


def test_allclose_nan_inf_and_masks():
    nan, inf = float('nan'), float('inf')
    a = Float(1, nan, inf, -inf)
    assert not pbc.allclose(a, [1, nan, inf, -inf])
    assert pbc.allclose(a, [1, nan, inf, -inf], equal_nan=True)
    assert not pbc.allclose(a, [1, nan, -inf, -inf], equal_nan=True)
    assert not pbc.allclose(nan, nan) and pbc.allclose(nan, nan, equal_nan=True)
    assert pbc.allclose(inf, inf) and not pbc.allclose(inf, -inf)
    assert not pbc.allclose(Float(1, inf), [inf, 1]) and not pbc.allclose(1.0, inf)
    assert np.allclose([1, nan, inf], [1, nan, inf], equal_nan=True)   # as NumPy
    # Masks have no tolerance: they must be equal
    assert pbc.allclose(Bool(True, False), [True, False])
    assert not pbc.allclose(Bool(True, False), Bool(True, True))
    assert pbc.allclose(Bool(True), [True, True], rtol=10, atol=10)


def test_assert_allclose_reports_where_values_differ():
    pbc.assert_allclose(Float(1, 2, 3), [1, 2, 3])
    pbc.assert_allclose([1, 2], (1, 2))
    with pytest.raises(AssertionError) as e:
        pbc.assert_allclose(Float(1, 2, 3, 4), Float(1, 2.5, 3, 8), err_msg='step 2')
    msg = str(e.value)
    assert msg.startswith('step 2\nArrays are not equal to tolerance rtol=0.001, atol=1e-05\n')
    assert 'Mismatched elements: 2 / 4 (50%)' in msg
    assert 'Max absolute difference: 4\n' in msg
    assert 'Max relative difference: 0.499999\n' in msg      # |4 - 8| / (8 + atol)
    assert ' ACTUAL: [1, 2, 3, 4]' in msg and ' DESIRED: [1, 2.5, 3, 8]' in msg
    with pytest.raises(AssertionError, match='rtol=1e-05, atol=1e-08'):
        pbc.assert_allclose(Float64(1), 2)
    with pytest.raises(AssertionError, match='Mismatched elements: 1 / 6'):
        pbc.assert_allclose(Array3f(Float(1, 2), 0, 0), [[1, 2], [0, 0], [0, 1]])
    with pytest.raises(AssertionError, match=r'assert_allclose\(\) failed: actual=\[1, 2\]'):
        pbc.assert_allclose([1, 2], [1, 3])
    with pytest.raises(RuntimeError, match='incompatible'):
        pbc.assert_allclose(Float(1, 2), Float(1, 2, 3))


# ---- assert_true / assert_false ----------------------------------------------------------------
@pytest.fixture
def debug():
    with pbc.scoped_set_flag(pbc.JitFlag.Debug, True):
        yield


def test_assertions_need_the_debug_flag():
    with pbc.scoped_set_flag(pbc.JitFlag.Debug, False):
        pbc.assert_true(False)
        pbc.assert_false(Float(1, 2) > 0)


def test_assert_true_on_values(debug):
    pbc.assert_true(True)
    pbc.assert_false(False)
    pbc.assert_true(Float(1, 2) > 0)
    pbc.assert_false(np.bool_(False))
    with pytest.raises(AssertionError, match='^Assertion failure!$'):
        pbc.assert_true(False)
    with pytest.raises(AssertionError, match='^Assertion failure!$'):
        pbc.assert_false(True)
    x = Float(1, -4, -2, 3)
    with pytest.raises(AssertionError) as e:
        pbc.assert_true(x >= 0, 'negative {} at {i} ({:.1f})', x, x, i=pbc.arange(UInt32, 4))
    assert str(e.value) == 'Assertion failure: negative [-4, -2] at [1, 2] ([-4.0, -2.0])'
    with pytest.raises(AssertionError) as e:
        pbc.assert_false(x < 0, '{} {} {}', Array3f(x, 0, 1), Float(7), 'text')
    assert str(e.value) == 'Assertion failure: [[-4, 0, 1],\n [-2, 0, 1]] [7, 7] text'
    with pytest.raises(AssertionError, match='^Assertion failure: 5 all: \\[1, 2\\]$'):
        pbc.assert_true(Bool(False), '{} all: {}', 5, Float(1, 2))
    with pytest.raises(TypeError, match='Bool array'):
        pbc.assert_true(Float(1))


def test_assert_true_in_conditionals_checks_their_lanes(debug, capfd):
    @pbc.syntax
    def evaluated(i):
        if pbc.hint(i > 3, mode='evaluated'):
            pbc.assert_true(i > 4, 'bad {}', i)
        return i

    evaluated(UInt32(1, 2, 5, 6))              # lanes 1, 2 fail the check but skip it
    # (the failure in the branch comes out as the cause of a RuntimeError, as in Dr.Jit)
    with pytest.raises(RuntimeError) as e:
        evaluated(UInt32(2, 3, 4, 5, 6))
    assert isinstance(e.value.__cause__, AssertionError)
    assert str(e.value.__cause__) == 'Assertion failure: bad [4]'

    @pbc.syntax
    def symbolic(i):                           # a symbolic branch: reported by the kernel
        if i > 3:
            pbc.assert_true(i > 4, 'bad {}', i)
        return i

    pbc.eval(symbolic(UInt32(1, 2, 5, 6)))
    assert 'Assertion' not in capfd.readouterr().err
    pbc.eval(symbolic(UInt32(2, 3, 4, 5, 6)))
    assert capfd.readouterr().err.startswith('Assertion failure: bad [4]')


@pytest.mark.parametrize('assertion', ['true', 'false'])
def test_assertion_in_a_symbolic_loop_prints_failing_lanes(debug, capfd, assertion):
    @pbc.syntax
    def f(i):
        while i < 8:
            if assertion == 'true':
                pbc.assert_true(i >= 4, 'i={}', i)
            else:
                pbc.assert_false(i < 4, 'i={}', i)
            i = i + 1
        return i

    r = f(UInt32(2, 3, 4, 5))                  # traced: nothing is known yet, no error
    assert capfd.readouterr().err == ''
    pbc.eval(r)
    np.testing.assert_array_equal(r.numpy(), [8, 8, 8, 8])
    err = capfd.readouterr().err               # the failing lanes' values, as one array
    failures = [line for line in err.splitlines() if line.startswith('Assertion failure')]
    assert failures == ['Assertion failure: i=[2, 3, 3]']
    # followed by the line of the assertion in this file
    assert err.count(__file__) == 1 and err.count(f"pbc.assert_{assertion}(i") == 1


def test_passing_assertion_in_a_symbolic_loop_prints_nothing(debug, capfd):
    @pbc.syntax
    def f(i):
        while i < 8:
            pbc.assert_true(i >= 0)
            i = i + 1
        return i

    pbc.eval(f(UInt32(2, 3, 4, 5)))
    assert capfd.readouterr().out == ''


def test_assertion_in_an_evaluated_loop_raises(debug):
    @pbc.syntax
    def f(i):
        while pbc.hint(i < 8, mode='evaluated'):
            pbc.assert_true(i >= 4, 'i={}', i)
            i = i + 1
        return i

    with pytest.raises(RuntimeError) as e:
        f(UInt32(2, 3, 4, 5))
    assert str(e.value.__cause__) == 'Assertion failure: i=[2, 3]'
    pbc.eval(f(UInt32(4, 5, 6)))


def test_python_bool_assertion_in_a_symbolic_loop_prints_active_lanes(debug, capfd):
    @pbc.syntax
    def f(i):
        while i < 3:
            pbc.assert_false(True, 'i={}', i)
            i = i + 1
        return i

    pbc.eval(f(UInt32(1, 2)))
    err = capfd.readouterr().err.splitlines()
    assert [line for line in err if line.startswith('Assertion')] == [
        'Assertion failure: i=[1, 2, 2]']
