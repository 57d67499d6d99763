"""Trace templates (pbc/_rt_template.pxi): library functions recorded once per argument
signature and replayed. A replay must make exactly the nodes the function's Python code
makes, whatever the arguments it is replayed on."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from suite_backend import Float, Float64, UInt32

import pbc
from pbc import _runtime
from pbc.math import TRACED

UNARY = sorted(name for name in TRACED if name not in ('atan2', '_power_real'))
BINARY = ['atan2', '_power_real']


def floats(rng, n, T=Float, lo=-3.0, hi=3.0):
    return T(rng.uniform(lo, hi, n).astype(np.float32 if T is Float else np.float64))


def check_replay(fn, *args):
    """fn (a TracedFunction) on args: the same nodes as its Python code makes (value
    numbering finds them), and the same values."""
    got = fn(*args)
    want = fn.fn(*args)
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(got, want):
        assert g.index == w.index
        np.testing.assert_array_equal(g.numpy(), w.numpy())


@settings(max_examples=20, deadline=None)
@given(sizes=st.lists(st.integers(1, 40), min_size=2, max_size=4), seed=st.integers(0, 99),
       wide=st.booleans())
def test_math_functions_replay_their_own_trace(sizes, seed, wide):
    rng = np.random.default_rng(seed)
    T = Float64 if wide else Float
    for n in sizes:
        for name in UNARY:
            check_replay(TRACED[name], floats(rng, n, T))
        for name in BINARY:
            x = floats(rng, n, T, 0.1, 3.0)
            check_replay(TRACED[name], x, floats(rng, n, T))
            check_replay(TRACED[name], x, floats(rng, 1, T))      # broadcast
    for name in UNARY + BINARY:
        assert all(why is None for why in TRACED[name].signatures().values()), name


def test_signature_separates_widths_literals_and_flags():
    f = _runtime.TracedFunction(lambda x, y: x * y + 1.0)
    x = Float(1, 2, 3)
    check_replay(f, x, Float(np.float32(2)))                   # literal: keyed by value
    check_replay(f, x, Float(np.float32(3)))
    check_replay(f, x, Float(1, 1, 2))
    check_replay(f, x, pbc.opaque(Float, 4))                  # one lane, not a literal
    with pbc.scoped_set_flag(pbc.JitFlag.ValueNumbering, False):
        np.testing.assert_array_equal(f(x, x + 1).numpy(), [3, 7, 13])
    keys = f.signatures()
    assert len(keys) == 5 and all(why is None for why in keys.values())


def test_empty_arguments_run_the_function():
    # Every op on empty arrays gives the same empty literal: a recording made on them
    # would merge all its values.
    f = _runtime.TracedFunction(TRACED['atan2'].fn)
    empty = Float(np.zeros(0, np.float32))
    assert len(f(empty, empty)) == 0 and f.signatures() == {}
    x, y = Float(0.5, 1, 2), Float(-1, 0.5, 2)
    np.testing.assert_allclose(f(x, y).numpy(), np.arctan2(x.numpy(), y.numpy()), rtol=1e-6)


def test_merges_of_the_arguments_do_not_leak_into_the_recording():
    # Recorded with x = -y, the function's -x would be y and its -x + y would be 2y: it
    # records on placeholders instead, and later calls with unrelated arguments are right.
    f = _runtime.TracedFunction(lambda x, y: (-x + y, -x))
    y = Float(1, 2, 3)
    check_replay(f, -y, y)
    a, b = Float(5, 6, 7), Float(1, 1, 1)
    s, n = f(a, b)
    np.testing.assert_array_equal(s.numpy(), [-4, -5, -6])
    np.testing.assert_array_equal(n.numpy(), [-5, -6, -7])


TABLE = Float(10, 20, 30)


@pytest.mark.parametrize('fn, why', [
    (lambda x: x + TABLE, 'made outside'),
    (lambda x: pbc.gather(Float, x, UInt32(0, 1, 0)), 'made outside'),
    (lambda x: x.numpy().sum(), 'other than arrays'),
    (lambda x: Float(1, 2, 3), 'none of its ops'),
])
def test_functions_that_cannot_be_replayed_run_as_they_are(fn, why):
    f = _runtime.TracedFunction(fn)
    x = Float(1, 2, 3)
    for _ in range(2):
        got, want = f(x), fn(x)
        np.testing.assert_array_equal(np.asarray(got if not isinstance(got, Float) else
                                                 got.numpy()),
                                      np.asarray(want if not isinstance(want, Float) else
                                                 want.numpy()))
    (reason,) = f.signatures().values()
    assert why in reason


def test_same_argument_twice_and_derivatives_run_the_function():
    x = Float(0.5, 1.0, 2.0)
    np.testing.assert_allclose(pbc.atan2(x, x).numpy(), np.pi / 4, rtol=1e-6)
    pbc.enable_grad(x)
    y = pbc.exp(x)
    pbc.backward(y)
    np.testing.assert_allclose(pbc.grad(x).numpy(), np.exp(x.numpy()), rtol=1e-6)


def test_exceptions_come_from_the_real_call():
    f = _runtime.TracedFunction(lambda x, y: x + y)
    with pytest.raises(ValueError, match='incompatible sizes'):
        f(Float(1, 2), Float(1, 2, 3))
    np.testing.assert_array_equal(f(Float(1, 2), Float(3, 4)).numpy(), [4, 6])


def test_recorded_and_replayed_inside_symbolic_loops_and_calls():
    # Fresh functions, so that the first call (the recording) happens inside a loop body
    # and inside a call target, and later calls replay outside them and inside.
    step = _runtime.TracedFunction(lambda v: pbc.sin(v) + pbc.exp(v * 0.1))
    shift = _runtime.TracedFunction(lambda v: pbc.log(v + 2) * 0.5)

    @pbc.syntax
    def loop(x, n):
        i = UInt32(0)
        while i < n:
            x = step(x)
            i += 1
        return x

    x = Float(np.linspace(-1, 1, 7, dtype=np.float32))
    xs = x.numpy().astype(np.float64)
    want = xs
    for _ in range(3):
        want = np.sin(want) + np.exp(want * 0.1)
    np.testing.assert_allclose(loop(x, UInt32(3)).numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(step(x).numpy(), np.sin(xs) + np.exp(xs * 0.1), rtol=1e-6)
    sel = [0, 1, 0, 1, 1, 0, 0]
    for _ in range(2):
        r = pbc.switch(UInt32(sel), [shift, step], x)
        np.testing.assert_allclose(r.numpy(), np.where(sel, np.sin(xs) + np.exp(xs * 0.1),
                                                       np.log(xs + 2) * 0.5), rtol=1e-6)
    np.testing.assert_allclose(shift(x).numpy(), np.log(xs + 2) * 0.5, rtol=1e-6)
    assert all(why is None for f in (step, shift) for why in f.signatures().values())


class _MyFloat(Float):
    pass


def test_library_functions_convert_what_the_replay_cannot_take():
    """pbc.atan2 and friends replay directly only on float arrays of one class without
    derivatives; a subclass, mixed precisions, integers and numbers are converted first,
    as the general path does, and give the same values."""
    y, x = np.array([0.5, -1.0, 2.0]), np.array([1.5, 2.0, -0.5])
    want = np.arctan2(y, x)
    cases = [(Float(y), Float(x), Float), (_MyFloat(y), _MyFloat(x), Float),
             (Float(y), Float64(x), Float64), (Float64(y), Float64(x), Float64),
             (Float(y), 2.0, Float), (UInt32(1, 2, 3), Float(x), Float)]
    for a, b, T in cases:
        got = pbc.atan2(a, b)
        assert type(got) is T
        ref = np.arctan2(np.asarray(a.numpy() if hasattr(a, 'numpy') else a, np.float64),
                         np.asarray(b.numpy() if hasattr(b, 'numpy') else b, np.float64))
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-6)
    np.testing.assert_allclose(pbc.atan2(Float(y), Float(x)).numpy(), want, rtol=1e-6)


def test_replays_keep_their_literals_unchanged_by_the_callers_own():
    """A replay holds the literals its function uses; a caller's equal literal made opaque
    (a new variable) or written to does not change what the next replay computes."""
    f = _runtime.TracedFunction(lambda x: x * 3.0 + 0.25)
    x = Float(1, 2, 3)
    np.testing.assert_array_equal(f(x).numpy(), [3.25, 6.25, 9.25])
    three = Float(3.0)
    pbc.make_opaque(three)
    three[0] = 5.0
    quarter = Float(0.25)
    quarter += 1
    check_replay(f, Float(4, 5))
    np.testing.assert_array_equal(f(x).numpy(), [3.25, 6.25, 9.25])
