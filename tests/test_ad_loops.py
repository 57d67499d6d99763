"""Derivatives through symbolic loops: forward mode against evaluated loops and central
finite differences (float64), for derivatives of the state and of arrays the body reads
from outside it; the derivative as one kernel; reverse mode (max_iterations), also
through loops nested in others, and its errors naming the loop."""

import gc
import inspect

import numpy as np
import pytest
from fuzzing import guessing_all_state_invariant
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from suite_backend import Array3f64, Float, Float64, UInt32

import pbc
from pbc import _runtime

SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
MODES = ('symbolic', 'evaluated')


@pbc.syntax
def _orbit(x, a, b, n, mode, most=None):
    """A loop whose body mixes its state with arrays read from outside it (a, b)."""
    i = UInt32(0)
    y = Float64(x)
    while pbc.hint(i < n, mode=mode, max_iterations=most):
        y = pbc.sin(y) * a + y * b
        if y > 1.0:
            y = y * 0.5
        i += 1
    return y


def _tangent(fn, inputs, seed):
    """fn(*inputs)'s forward-mode derivative along tangents `seed` (one per input)."""
    xs = [Float64(v) for v in inputs]
    pbc.enable_grad(*xs)
    for x, t in zip(xs, seed):
        pbc.set_grad(x, t)
    y = fn(*xs)
    return pbc.forward_to(y).numpy(), y.numpy()


def _finite_difference(fn, inputs, seed, h=1e-6):
    up = fn(*[Float64(np.asarray(v) + h * t) for v, t in zip(inputs, seed)]).numpy()
    down = fn(*[Float64(np.asarray(v) - h * t) for v, t in zip(inputs, seed)]).numpy()
    return (up - down) / (2 * h)


lanes = st.lists(st.floats(-2, 2, allow_nan=False), min_size=5, max_size=5)


@SETTINGS
@given(lanes, st.floats(0.2, 1.5), st.floats(-0.9, 0.9), st.integers(0, 6),
       st.sampled_from([(1, 0, 0), (0, 1, 0), (0, 0, 1), (1, -0.5, 2)]))
def test_forward_mode_through_a_symbolic_loop_matches_evaluated_and_finite_differences(
        x, a, b, n, seed):
    inputs = (x, [a], [b])

    def fn(mode):
        return lambda x, a, b: _orbit(x, a, b, UInt32(n), mode)

    symbolic, value = _tangent(fn('symbolic'), inputs, seed)
    evaluated, value_e = _tangent(fn('evaluated'), inputs, seed)
    # (a lane on the branch's edge, y == 1 within rounding, has no derivative)
    with pbc.suspend_grad():
        fd = _finite_difference(fn('evaluated'), inputs, seed)
    smooth = np.abs(fd - evaluated) < 1e-4 * (1 + np.abs(fd))
    np.testing.assert_allclose(value, value_e, rtol=1e-12)
    np.testing.assert_allclose(symbolic, evaluated, rtol=1e-10, atol=1e-12)
    assert smooth.sum() >= 4


def test_the_derivative_of_a_symbolic_loop_is_one_kernel_with_a_loop():
    x = Float64(np.linspace(0, 1, 100))
    a = Float64(0.7)
    pbc.enable_grad(x, a)
    pbc.set_grad(a, 1.0)
    y = _orbit(x, a, Float64(0.3), UInt32(50), 'symbolic')
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
        pbc.kernel_history_clear()
        dy = pbc.forward_to(y)
        pbc.eval(dy, y)
        kernels = pbc.kernel_history()
    assert len(kernels) == 1
    assert pbc.loop_stats()['loops'] >= 2          # (the primal's and the derivative's)
    with pbc.suspend_grad():
        h = 1e-6
        fd = (_orbit(x, Float64(0.7 + h), Float64(0.3), UInt32(50), 'evaluated')
              - _orbit(x, Float64(0.7 - h), Float64(0.3), UInt32(50), 'evaluated')) / (2 * h)
    np.testing.assert_allclose(dy.numpy(), fd.numpy(), rtol=1e-5, atol=1e-7)


@pbc.syntax
def _nested(x, a, mode, most=None):
    i = UInt32(0)
    while pbc.hint(i < 3, mode=mode, max_iterations=most):
        j = UInt32(0)
        while pbc.hint(j < i + 1, mode=mode, max_iterations=most):
            x = x * a + pbc.cos(x)
            j += 1
        i += 1
    return x


@pytest.mark.parametrize('wrt', ['x', 'a'])
def test_nested_symbolic_loops(wrt):
    out = {}
    for mode in MODES:
        x, a = Float64([0.1, 0.5, 2.0]), Float64(0.8)
        pbc.enable_grad(x, a)
        pbc.set_grad(x if wrt == 'x' else a, 1.0)
        out[mode] = pbc.forward_to(_nested(x, a, mode)).numpy()
    np.testing.assert_allclose(out['symbolic'], out['evaluated'], rtol=1e-12)


@pbc.syntax
def _walk(p, v, mode, most=None):
    """State changed in place (p.x +=) and a loop left early (break)."""
    i = UInt32(0)
    while pbc.hint(i < 10, mode=mode, max_iterations=most):
        p.x += v.y * 0.5
        p.y = p.y * p.x
        if p.y > 4.0:
            break
        i += 1
    return p


def test_state_changed_in_place_and_break():
    out = {}
    for mode in MODES:
        v = Array3f64([0.5, 1.0], [1.5, 0.25], [0.0, 0.0])
        pbc.enable_grad(v)
        p = Array3f64(v)
        pbc.set_grad(v, Array3f64(1.0, 0.5, 0.0))
        q = _walk(p, v, mode)
        assert q is p                       # (the caller's object, changed in place)
        out[mode] = pbc.forward_to(q).numpy()
    np.testing.assert_allclose(out['symbolic'], out['evaluated'], rtol=1e-12)


def test_state_the_body_leaves_alone_keeps_its_derivatives():
    x = Float([1.0, 2.0])
    c = Float([3.0, 4.0])
    pbc.enable_grad(x, c)
    i, y, d = pbc.while_loop((UInt32(0), Float(x), c), lambda i, y, d: i < 3,
                             lambda i, y, d: (i + 1, y * 2.0, d), mode='symbolic')
    pbc.set_grad(x, 1.0)
    pbc.set_grad(c, 10.0)
    dy, dd = pbc.forward_to(y, d * 1.0)
    assert d is c and dy.numpy().tolist() == [8, 8] and dd.numpy().tolist() == [10, 10]


def test_loops_without_derivatives_make_no_nodes():
    x = Float([1.0, 2.0])
    pbc.enable_grad(x)
    live = _runtime.ad_live_count()
    with pbc.suspend_grad():
        y = _orbit(Float64(x), Float64(0.5), Float64(0.5), UInt32(3), 'symbolic')
    i, z = pbc.while_loop((UInt32(0), Float(1.0, 2.0)), lambda i, z: i < 3,
                          lambda i, z: (i + 1, z * 2.0), mode='symbolic')
    assert _runtime.ad_live_count() == live
    assert not pbc.grad_enabled(y) and not pbc.grad_enabled(z)
    assert z.numpy().tolist() == [8, 16]


@pbc.syntax
def _cubes(x):
    i = UInt32(0)
    y = Float(x)
    while i < 3:
        y = y * x
        i += 1
    return y


@SETTINGS
@given(lanes, st.floats(0.2, 1.5), st.floats(-0.9, 0.9),
       st.lists(st.integers(0, 6), min_size=5, max_size=5))
def test_reverse_mode_through_a_symbolic_loop_with_max_iterations(x, a, b, n):
    out = {}
    for mode in MODES:
        xs, av, bv = Float64(x), Float64(a), Float64(b)
        pbc.enable_grad(xs, av, bv)
        y = _orbit(xs, av, bv, UInt32(n), mode, most=6)
        pbc.backward(y * Float64(1.0, 2.0, -1.0, 0.5, 3.0))
        out[mode] = [pbc.grad(v).numpy() for v in (xs, av, bv)]
    for s, e in zip(out['symbolic'], out['evaluated']):
        np.testing.assert_allclose(s, e, rtol=1e-10, atol=1e-12)


def test_reverse_mode_runs_two_kernels_and_checks_the_bound():
    x = Float64(np.linspace(0, 1, 100))
    a = Float64(0.7)
    pbc.enable_grad(x, a)
    y = _orbit(x, a, Float64(0.3), UInt32(50), 'symbolic', most=50)
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
        pbc.kernel_history_clear()
        pbc.backward(y)
        pbc.eval(pbc.grad(x), pbc.grad(a))
        kernels = len(pbc.kernel_history())
    assert kernels <= 4              # (the loop storing its states, the adjoint loop, sums)
    with pbc.suspend_grad():
        h = 1e-6
        fd = (_orbit(x, Float64(0.7 + h), Float64(0.3), UInt32(50), 'evaluated')
              - _orbit(x, Float64(0.7 - h), Float64(0.3), UInt32(50), 'evaluated')) / (2 * h)
    np.testing.assert_allclose(pbc.grad(a).numpy(), [fd.numpy().sum()], rtol=1e-5)
    y = _orbit(x, a, Float64(0.3), UInt32(50), 'symbolic', most=49)
    with pytest.raises(RuntimeError, match=r'test_ad_loops.py:\d+: it runs more than '
                                           r'max_iterations=49'):
        pbc.backward(y)


@pbc.syntax
def _three_deep(x, a, mode):
    """Loops three deep: the inner ones read state of the enclosing bodies (z, y), values
    those bodies compute from the inputs (z), and the inputs themselves (a, x)."""
    i, y = UInt32(0), Float64(1.0)
    while pbc.hint(i < 3, mode=mode, max_iterations=3):
        z = x * a + pbc.sin(y)
        j = UInt32(0)
        while pbc.hint(j < i + 1, mode=mode, max_iterations=3):
            y = y * z + a * 0.1
            k = UInt32(0)
            while pbc.hint(k < 2, mode=mode, max_iterations=2):
                y = y + pbc.cos(y * x) * 0.2
                k += 1
            j += 1
        i += 1
    return y


@pytest.mark.parametrize('fn', ['nested', 'three deep'])
def test_reverse_mode_through_nested_symbolic_loops(fn):
    fn = (lambda x, a, mode: _nested(x, a, mode, most=4)) if fn == 'nested' else _three_deep
    x0, a0, w = np.array([0.1, 0.5, 0.9]), 0.8, np.array([1.0, -2.0, 0.5])
    grads = {}
    for mode in MODES:
        x, a = Float64(x0), Float64(a0)
        pbc.enable_grad(x, a)
        pbc.backward(fn(x, a, mode) * Float64(w))
        grads[mode] = [pbc.grad(x).numpy(), pbc.grad(a).numpy()]
    for g, e in zip(grads['symbolic'], grads['evaluated']):
        np.testing.assert_allclose(g, e, rtol=1e-12)
    with pbc.suspend_grad():
        dx = _finite_difference(lambda x: fn(x, Float64(a0), 'evaluated'), [x0],
                                [np.ones(3)])
        da = _finite_difference(lambda a: fn(Float64(x0), a, 'evaluated'), [a0], [1.0])
    np.testing.assert_allclose(grads['symbolic'][0], dx * w, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(grads['symbolic'][1], [np.dot(da, w)], rtol=1e-6)


def test_reverse_mode_through_a_nested_loop_that_runs_too_long_is_nan_and_reported(capsys):
    # (the bound of an inner loop is known to be exceeded only once the kernel runs)
    @pbc.syntax
    def power(x, n):
        i, y = UInt32(0), Float64(1.0)
        while pbc.hint(i < 2, max_iterations=2):
            j = UInt32(0)
            while pbc.hint(j < n, max_iterations=3):
                y = y * x
                j += 1
            i += 1
        return y

    x = Float64([0.3, 0.5, 0.7])
    pbc.enable_grad(x)
    pbc.backward(power(x, UInt32([1, 3, 4])))
    g = pbc.grad(x).numpy()
    np.testing.assert_allclose(g[:2], [2 * 0.3, 6 * 0.5 ** 5], rtol=1e-12)
    assert np.isnan(g[2])
    line = inspect.getsourcelines(power)[1] + 5     # (the decorator's line + 5: the inner)
    assert f'test_ad_loops.py:{line}: it runs more than max_iterations=3 iterations on ' \
        'some lanes ([2, 2]): their derivatives are NaN' in capsys.readouterr().err


def test_reverse_mode_with_state_changed_in_place_and_break():
    out = {}
    for mode in MODES:
        v = Array3f64([0.5, 1.0], [1.5, 0.25], [0.0, 0.0])
        pbc.enable_grad(v)
        p = Array3f64(v)
        q = _walk(p, v, mode, most=10)
        pbc.backward(q.x + 2.0 * q.y)
        out[mode] = pbc.grad(v).numpy()
    np.testing.assert_allclose(out['symbolic'], out['evaluated'], rtol=1e-12)


def test_a_loop_that_gathers_from_an_array_carrying_derivatives():
    table = Float64([1.0, 2.0, 3.0])
    pbc.enable_grad(table)

    def body(i, y):
        return i + 1, y + pbc.gather(Float64, table, i % 3)

    def run(mode):
        return pbc.while_loop((UInt32(0, 0), Float64(0, 1)), lambda i, y: i < 4, body,
                              mode=mode, max_iterations=4)[1]

    pbc.set_grad(table, 1.0)
    assert pbc.forward_to(run('symbolic')).numpy().tolist() == [4, 4]
    for mode in MODES:     # (each lane reads entries 0, 1, 2, 0)
        pbc.backward(run(mode) * Float64(1.0, 2.0))
        assert pbc.grad(table).numpy().tolist() == [6, 3, 3]
        pbc.clear_grad(table)


def test_reverse_mode_through_a_symbolic_loop_names_the_loop():
    x = Float([1.0, 2.0])
    pbc.enable_grad(x)
    y = _cubes(x)
    line = inspect.getsourcelines(_cubes)[1] + 4     # (the decorator's line + 4: `while`)
    with pytest.raises(NotImplementedError, match=rf'test_ad_loops.py:{line}\b.*evaluated'):
        pbc.backward(y)
    # Forward mode, and reverse mode where the gradient does not reach the loop, work.
    y = _cubes(x)
    pbc.set_grad(x, 1.0)
    assert pbc.forward_to(y).numpy().tolist() == [4, 32]
    z = x * 3.0
    pbc.backward(z)
    assert pbc.grad(x).numpy().tolist() == [3, 3]


def test_the_derivative_does_not_repeat_the_side_effects_of_the_body(capfd):
    x = Float([1.0, 2.0])
    pbc.enable_grad(x)
    counts = pbc.zeros(Float, 2)

    def body(i, y):
        pbc.scatter_add(counts, Float(1.0), UInt32(0, 1))
        pbc.print('step {i}', i=i, active=i == 2)
        return i + 1, y * 2.0

    i, y = pbc.while_loop((UInt32(0), Float(x)), lambda i, y: i < 3, body, mode='symbolic')
    pbc.set_grad(x, 1.0)
    assert pbc.forward_to(y).numpy().tolist() == [8, 8]
    assert counts.numpy().tolist() == [3, 3]
    assert capfd.readouterr().out == 'step [2, 2]\n'         # (once: both lanes)


def test_a_scatter_of_derivatives_in_a_symbolic_loop_is_a_clear_error():
    x = Float([1.0, 2.0])
    pbc.enable_grad(x)
    target = pbc.zeros(Float, 2)
    with pytest.raises(RuntimeError, match='loop body raised NotImplementedError.*scatter '
                       'inside a symbolic loop'):
        pbc.while_loop((UInt32(0), Float(x)), lambda i, y: i < 3,
                       lambda i, y: (i + 1, pbc.scatter(target, y, UInt32(0, 1)) or y * 2.0),
                       mode='symbolic')


def test_scatters_in_a_loop_that_carries_derivatives():
    x = Float([1.0, 2.0])
    pbc.enable_grad(x)
    image = pbc.zeros(Float, 2)

    def counting(i, y, n):                  # scatters values without derivatives: fine
        pbc.scatter_add(image, n, UInt32(0, 1))
        return i + 1, y * 2.0, n + 1.0

    i, y, n = pbc.while_loop((UInt32(0), Float(x), Float(0, 0)), lambda i, y, n: i < 3,
                             counting, mode='symbolic')
    pbc.set_grad(x, 1.0)
    assert pbc.forward_to(y).numpy().tolist() == [8, 8]
    assert image.numpy().tolist() == [3, 3]

    def accumulating(i, acc):               # acc carries x's derivatives from the 2nd step
        pbc.scatter(image, acc, UInt32(0, 1))
        return i + 1, acc + x

    with pytest.raises(RuntimeError, match='scatter inside a symbolic loop'):
        pbc.while_loop((UInt32(0), Float(0, 0)), lambda i, acc: i < 3, accumulating,
                       mode='symbolic')
    assert image.numpy().tolist() == [3, 3]     # (the failed loop left it alone)


LANE = UInt32(np.arange(7))
STEPS = UInt32([1, 3, 0, 2, 4, 1, 2])


@pbc.syntax
def _film(x, a, film, mode):
    """Scatter-adds into `film` in a loop's body, under the body's own conditional and
    under an enclosing one (lane 6 never runs the loop's writes)."""
    if pbc.hint(LANE != 6, mode=mode):
        i = UInt32(0)
        while pbc.hint(i < STEPS, mode=mode, max_iterations=4):
            pbc.scatter_add(film, x * x + a, (LANE * 2 + i) % 7)
            if pbc.hint(i == 1, mode=mode):
                pbc.scatter_add(film, a, UInt32(3))
            x = x * 1.5
            i += 1
    return x + pbc.gather(Float64, film, (LANE * 5 + 1) % 7)


def _film_inputs(d=None):
    d = np.zeros(9) if d is None else d
    x = Float64(np.linspace(0.1, 0.7, 7) + d[:7])
    a, p = Float64(0.3 + d[7]), Float64(0.5 + d[8])
    return x, a, p


def _run_film(mode, d=None):
    x, a, p = _film_inputs(d)
    return _film(x, a, p * pbc.arange(Float64, 7), mode)    # (film carries p's derivatives)


@pytest.mark.parametrize('mode', ['symbolic', 'evaluated'])
def test_scatter_adds_in_a_loop_body_differentiate(mode):
    h = 1e-6
    with pbc.suspend_grad():
        J = np.stack([(_run_film('evaluated', h * e).numpy() -
                       _run_film('evaluated', -h * e).numpy()) / (2 * h)
                      for e in np.eye(9)], axis=1)
    w = np.linspace(-1, 2, 7)
    x, a, p = _film_inputs()
    pbc.enable_grad(x, a, p)
    pbc.backward(_film(x, a, p * pbc.arange(Float64, 7), mode) * Float64(w))
    got = np.concatenate([pbc.grad(v).numpy() for v in (x, a, p)])
    np.testing.assert_allclose(got, J.T @ w, rtol=1e-6, atol=1e-9)
    d = np.linspace(0.5, 1.5, 9)
    x, a, p = _film_inputs()
    pbc.enable_grad(x, a, p)
    for v, t in ((x, d[:7]), (a, d[7]), (p, d[8])):
        pbc.set_grad(v, Float64(t))
    y = pbc.forward_to(_film(x, a, p * pbc.arange(Float64, 7), mode))
    np.testing.assert_allclose(y.numpy(), J @ d, rtol=1e-6, atol=1e-9)


def test_a_loop_body_that_reads_what_it_scatter_adds_into_is_a_clear_error():
    # (nested loops and calls that scatter-add: tests/test_ad_nested_scatters.py)
    x = Float64(1.0, 2.0)
    pbc.enable_grad(x)
    film = Float64(np.zeros(2))

    def reading(i, y):                      # (reads what it adds to, as no loop body may)
        y = y + pbc.gather(Float64, film, UInt32(1, 0))
        pbc.scatter_add(film, y, UInt32(0, 1))
        return i + 1, y

    with pytest.raises(RuntimeError, match='writes .scatters into. an array that it also '
                       'reads'):
        pbc.while_loop((UInt32(0), Float64(x)), lambda i, y: i < 2, reading,
                       mode='symbolic')


def test_a_condition_that_computes_with_arrays_carrying_derivatives():
    x, a = Float([1.0, 2.0]), Float(0.5)
    pbc.enable_grad(x, a)
    i, y = pbc.while_loop((UInt32(0), Float(x)), lambda i, y: y * a < 4.0,
                          lambda i, y: (i + 1, y * 2.0), mode='symbolic')
    pbc.set_grad(x, 1.0)
    assert pbc.forward_to(y).numpy().tolist() == [8, 4]     # 3 and 2 doublings


# ---- derivatives propagated inside a symbolic loop (Path Replay Backpropagation) ---------
def _texel(table, i):
    return pbc.gather(Float64, table, i % 3)


@pbc.syntax
def _throughput(table, n, mode):
    """The primal: per lane, the product of n texels read in turn."""
    i = UInt32(0)
    L = Float64(1.0)
    while pbc.hint(i < n, mode=mode):
        L = L * _texel(table, i)
        i += 1
    return L


@pbc.syntax
def _replay(table, n, dL, L):
    """The adjoint as Path Replay Backpropagation computes it: the loop runs again without
    derivatives, and each step differentiates its own factor, locally, with the final value
    L in hand (d L / d t = L / t for a factor t)."""
    i = UInt32(0)
    while i < n:
        with pbc.resume_grad():
            t = _texel(table, i)
            pbc.backward_from(dL * L * t / pbc.detach(t))
        i += 1
    return i


def test_path_replay_backpropagation_is_one_kernel_and_matches_reverse_mode():
    n = UInt32(np.arange(200) % 7)
    dL = Float64(np.linspace(-1, 1, 200))
    table = Float64(0.5, 0.8, 0.3)
    pbc.enable_grad(table)
    pbc.backward(_throughput(table, n, 'evaluated') * dL)
    reference = pbc.grad(table).numpy()
    pbc.clear_grad(table)
    with pbc.suspend_grad():
        L = _throughput(table, n, 'symbolic')
        pbc.eval(L)
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
        pbc.kernel_history_clear()
        with pbc.suspend_grad():
            _replay(table, n, dL, L)
        g = pbc.grad(table).numpy()
        kernels = pbc.kernel_history()
    # One kernel for the replay loop, its scatter-adds inside (into a copy of the gradient
    # per thread: then one more, of the table's width, sums the copies).
    assert [k['size'] for k in kernels if k['size'] != 3] == [200]
    np.testing.assert_allclose(g, reference, rtol=1e-12)


def test_gradients_propagated_inside_a_loop_continue_past_it():
    # The texels are computed from a parameter: after the loop, the gradient they received
    # inside it goes on to the parameter, as if there were no loop in between.
    p = Float64(0.2, 1.6, 0.6)
    pbc.enable_grad(p)
    n, dL = UInt32(1, 4, 5), Float64(1.0, 2.0, 3.0)
    pbc.backward(_throughput(p * 0.5, n, 'evaluated') * dL)
    reference = pbc.grad(p).numpy()
    pbc.clear_grad(p)
    table = p * 0.5
    with pbc.suspend_grad():
        L = _throughput(table, n, 'symbolic')
        _replay(table, n, dL, L)
    np.testing.assert_allclose(pbc.grad(p).numpy(), reference, rtol=1e-12)
    # A width-1 parameter: the gradient of every lane and step adds up.
    a = Float64(0.7)
    pbc.enable_grad(a)
    table = pbc.full(Float64, 1.0, 3) * a
    with pbc.suspend_grad():
        _replay(table, n, dL, Float64(1.0))
    assert pbc.grad(a).numpy().tolist() == pytest.approx([(1 + 8 + 15) / 0.7])


def test_forward_mode_inside_a_loop_body():
    def body(i, x, d):
        with pbc.resume_grad():
            t = Float64(x)
            pbc.enable_grad(t)
            y = pbc.sin(t) * 2.0
            pbc.set_grad(t, 1.0)
            dy = pbc.forward_to(y)            # traced into the loop's body
        return i + 1, pbc.detach(y), d + dy

    with pbc.suspend_grad():
        _, x, d = pbc.while_loop((UInt32(0), Float64(0.5, 1.0), Float64(0, 0)),
                                 lambda i, x, d: i < 3, body, mode='symbolic')
    xs, ds = np.array([0.5, 1.0]), np.zeros(2)
    for _ in range(3):
        ds, xs = ds + 2 * np.cos(xs), 2 * np.sin(xs)
    np.testing.assert_allclose(x.numpy(), xs, rtol=1e-12)
    np.testing.assert_allclose(d.numpy(), ds, rtol=1e-12)


def test_state_of_width_one_that_grows_and_gains_derivatives():
    a, w = Float(0.5), Float(1.0, 2.0, 3.0)
    pbc.enable_grad(a)
    _, acc = pbc.while_loop((UInt32(0), Float(0.0)), lambda i, acc: i < 2,
                            lambda i, acc: (i + 1, acc + w * a), mode='symbolic',
                            max_iterations=2)
    pbc.backward(acc)
    assert acc.numpy().tolist() == [1, 2, 3] and pbc.grad(a).numpy().tolist() == [12]


@pbc.syntax
def _aliased(x0, x1, mode):
    i = UInt32(0)
    while pbc.hint(i < 2, mode=mode, max_iterations=2):
        i += 1
        x1 = x0                                 # (two state variables, one array)
        if pbc.hint(i == 0, mode=mode):
            x1 = x1 * 0.5
    return x0 + 2.0 * x1


@pytest.mark.parametrize('mode', ['symbolic', 'evaluated'])
def test_the_callers_arrays_keep_their_derivatives_through_aliased_state(mode):
    x0, x1 = Float64(0.1, 0.2), Float64(1.0, 1.0)
    pbc.enable_grad(x0, x1)
    pbc.backward(_aliased(x0, x1, mode))
    assert pbc.grad(x0).numpy().tolist() == [3, 3]
    assert pbc.grad(x1).numpy().tolist() == [0, 0]


_GLOBAL_FILM = None


def _splat_into_the_global_film(i, p):
    pbc.scatter_add(_GLOBAL_FILM, p * 2.0, (i + UInt32(0, 1, 2)) % 3)
    return i + 1, p


@pytest.mark.parametrize('mode', MODES)
def test_scatter_adds_into_an_array_the_body_reaches_through_a_global(mode):
    # The array's node before the loop (made by an operation, held by the array alone) is
    # one of the loop node's sources: it must live on once the array has the loop's.
    global _GLOBAL_FILM
    x, p = Float64(1.0, 2.0, 3.0), Float64(0.5)
    pbc.enable_grad(x, p)
    _GLOBAL_FILM = x * 3.0
    pbc.while_loop((UInt32(0), p), lambda i, p: i < 2, _splat_into_the_global_film,
                   mode=mode, max_iterations=3)
    pbc.backward(pbc.sum(_GLOBAL_FILM * Float64(1.0, 2.0, 3.0)))
    assert pbc.grad(x).numpy().tolist() == [3, 6, 9]
    assert pbc.grad(p).numpy().tolist() == [2 * 2 * (1 + 2 + 3)]
    _GLOBAL_FILM = None


def test_derivatives_through_an_evaluated_loop_are_a_kernel_of_one_iterations_code():
    # Reverse mode evaluates each iteration's gradient as the traversal completes it:
    # fused instead, every kernel that the traversal launched (here, one per scatter-add
    # into the table's gradient) recomputed it through all the later iterations, a kernel
    # longer each time, each compiled anew. (Forward mode stays fused: one kernel.)
    lanes, steps = 3000, 12
    table0 = np.random.default_rng(5).uniform(0.5, 1.5, 64)
    lane = pbc.arange(UInt32, lanes)

    def run(table):
        def step(i, L):
            return i + 1, L * pbc.gather(Float64, table, (lane * 2654435761 + i * 40503) % 64)
        return pbc.while_loop((UInt32(0), Float64(1.0)), lambda i, L: i < steps, step,
                              mode='evaluated')[1]

    idx = [(np.arange(lanes, dtype=np.int64) * 2654435761 + i * 40503) % 2**32 % 64
           for i in range(steps)]
    values = [table0[k] for k in idx]
    product = np.prod(values, axis=0)
    expected = np.zeros(64)
    for k, v in zip(idx, values):
        np.add.at(expected, k, product / v)
    for mode in ('reverse', 'forward'):
        table = Float64(table0)
        pbc.enable_grad(table)
        L = run(table)
        pbc.kernel_history_clear()
        with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
            if mode == 'reverse':
                pbc.backward(L)
                got = pbc.grad(table).numpy()
            else:
                pbc.forward(table)                # (along a tangent of ones)
                got = pbc.grad(L).numpy()
                expected = product * sum(1 / v for v in values)
            kernels = pbc.kernel_history()
        np.testing.assert_allclose(got, expected, rtol=1e-10)
        assert len({k['hash'] for k in kernels}) <= 5, mode


def test_reverse_mode_through_an_evaluated_loop_frees_each_iterations_gradient():
    # Each iteration's gradient is evaluated (see above) and freed once passed on: when the
    # traversal reaches the loop's start, a custom op there sees about two of them in
    # memory, not one per iteration.
    lanes, steps = 100_000, 12
    table = Float64(np.random.default_rng(5).uniform(0.5, 1.5, 64))
    pbc.enable_grad(table)
    lane = pbc.arange(UInt32, lanes)
    seen = []

    class Watch(pbc.CustomOp):
        def eval(self, x):
            return pbc.detach(x)

        def backward(self):
            seen.append(_runtime.memory_usage()[0])
            self.set_grad_in('x', self.grad_out())

    def step(i, L):
        return i + 1, L * pbc.gather(Float64, table, (lane * 2654435761 + i * 40503) % 64)

    x = Float64(np.ones(lanes))
    pbc.enable_grad(x)
    L = pbc.while_loop((UInt32(0), pbc.custom(Watch, x)), lambda i, L: i < steps, step,
                       mode='evaluated')[1]
    pbc.eval(L)
    before = _runtime.memory_usage()[0]
    pbc.backward(L)
    assert (seen[0] - before) / (lanes * 8) < 4
    np.testing.assert_allclose(pbc.grad(x).numpy(), L.numpy(), rtol=1e-12)


def test_reverse_mode_through_an_evaluated_loop_without_scatters_stays_one_kernel():
    # A traversal that launches nothing before its end leaves the iterations' gradients
    # fused: one kernel computes each once (evaluated, they would all be held in memory).
    x0 = np.random.default_rng(2).uniform(0.5, 1.5, 1000)
    a = Float64(x0)
    pbc.enable_grad(a)
    L = pbc.while_loop((UInt32(0), Float64(1.0)), lambda i, L: i < 8,
                       lambda i, L: (i + 1, L * pbc.sin(a + i)), mode='evaluated')[1]
    pbc.eval(L)
    pbc.kernel_history_clear()
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
        pbc.backward(L)
        got = pbc.grad(a).numpy()
        kernels = pbc.kernel_history()
    factors = [np.sin(x0 + i) for i in range(8)]
    expected = np.prod(factors, axis=0) * sum(np.cos(x0 + i) / f for i, f in enumerate(factors))
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    assert len(kernels) == 1 and kernels[0]['outputs'] == 1


@pbc.syntax
def _three_loops_reading_the_outer(a):
    y = a
    v = Float64(1.0)
    i = UInt32(0)
    while pbc.hint(i < 2, max_iterations=4):
        i += 1
        j = UInt32(0)
        while pbc.hint(j < 2, max_iterations=4):
            j += 1
            k = UInt32(0)
            while pbc.hint(k < 2, max_iterations=4):
                k += 1
                v = v * y                   # (y: made by the outermost loop's body)
        y = y * 0.5
    return v


def test_reverse_mode_through_three_nested_loops():
    # (the innermost loop's derivative added y's gradient to what the middle one's gathers,
    # from inside its own body: "a value computed inside a symbolic loop body is used
    # outside of it")
    a = Float64(0.9, 1.1)
    pbc.enable_grad(a)
    pbc.backward(_three_loops_reading_the_outer(a))
    x = np.array([0.9, 1.1])
    np.testing.assert_allclose(pbc.grad(a).numpy(), x ** 7 / 2, rtol=1e-6)   # (a^8 / 16)'


@pbc.syntax
def _branch_in_the_third_loop(a):
    v = Float64(0.0)
    i = UInt32(0)
    while pbc.hint(i < 2, max_iterations=4):
        i += 1
        j = UInt32(0)
        while pbc.hint(j < 2, max_iterations=4):
            j += 1
            if a > 0:
                k = UInt32(0)
                while pbc.hint(k < 2, max_iterations=4):
                    k += 1
                    v += pbc.select(j == 1, a, a * 2)      # (j: the middle loop's state)
    return v


def test_forward_mode_through_a_branch_in_the_third_of_three_nested_loops():
    # (the outer loop's tangent traversal reached the op of the innermost loop made in the
    # middle loop's body, held alive there: its derivative read that closed body's values)
    a = Float64(0.5, 1.5)
    pbc.enable_grad(a)
    pbc.set_grad(a, 1.0)
    v = _branch_in_the_third_loop(a)
    np.testing.assert_allclose(pbc.forward_to(v).numpy(), [12, 12])   # (2 * (2 + 4))


def test_reverse_mode_through_a_branch_in_the_third_of_three_nested_loops():
    a = Float64(0.5, 1.5)
    pbc.enable_grad(a)
    pbc.backward(_branch_in_the_third_loop(a))
    np.testing.assert_allclose(pbc.grad(a).numpy(), [12, 12])


def _step(x, c):
    c[1] += x * c[0]
    return x


def _keep(x, c):
    return x


@pbc.syntax
def _nested_calls(a, v, k):
    u = [a * 0.5 - 0.25, Float64(-1.5)]
    i = UInt32(0)
    while pbc.hint(i < k % 4, max_iterations=8):
        i += 1
        j = UInt32(0)
        while pbc.hint(j < 3, max_iterations=8):
            j += 1
            if (j + k) % 3 == 0:
                pbc.switch(k % 2, (_step, _keep), v, u)
    return u


def _nested_calls_oracle(a, v, k):
    u0, u1 = a * 0.5 - 0.25, np.full_like(a, -1.5)
    du1 = np.zeros_like(a)
    for lane in range(len(a)):
        for _ in range(k[lane] % 4):
            for j in range(1, 4):
                if (j + k[lane]) % 3 == 0 and k[lane] % 2 == 0:
                    u1[lane] += v[lane] * u0[lane]
                    du1[lane] += v[lane] * 0.5
    return (u0, u1), (np.full_like(a, 0.5), du1)


@pytest.mark.parametrize('direction', ('forward', 'reverse'))
def test_a_wrong_memory_of_invariant_state_changes_no_derivative(direction):
    # Every recording of a loop here starts from a wrong guess (all its state invariant) and
    # is abandoned: the derivative nodes made in it must not reach the derivative loops,
    # whose bodies (a call inside a loop inside the loop) record it again.
    k = np.arange(9, dtype=np.uint32)
    a_np, v_np = np.linspace(0.1, 0.9, 9), np.linspace(1.0, 2.0, 9)
    want, d_want = _nested_calls_oracle(a_np, v_np, k)
    a = Float64(a_np)
    pbc.enable_grad(a)
    with guessing_all_state_invariant():
        u = _nested_calls(a, Float64(v_np), UInt32(k))
    for got, w in zip(u, want):
        assert np.allclose(got.numpy(), w)
    if direction == 'forward':
        pbc.set_grad(a, 1.0)
        with guessing_all_state_invariant():
            pbc.forward_to(*u, flags=pbc.ADFlag.ClearNone)
        for got, w in zip(u, d_want):
            assert np.allclose(pbc.grad(got).numpy(), w)
    else:
        with guessing_all_state_invariant():
            pbc.backward(u[0] + u[1])
        assert np.allclose(pbc.grad(a).numpy(), d_want[0] + d_want[1])


@pbc.syntax
def _doubled_in_place(x):
    i = UInt32(0)
    while i < 3:
        i += 1
        x *= 2
    return x


@pbc.syntax
def _sum_through_an_alias(x):
    y = x
    i, s = UInt32(0), Float64(0)
    while i < 3:
        i += 1
        x *= 2
        s = s + y
    return s


@pbc.syntax
def _entry_in_place(x):
    u = [x * 1, x * 2]
    i = UInt32(0)
    while i < 3:
        i += 1
        u[0] += u[1]
    return u[0]


@pytest.mark.parametrize('fn', (_doubled_in_place, _sum_through_an_alias, _entry_in_place))
def test_a_loop_that_changes_its_state_in_place_lets_go_of_its_nodes(fn):
    # The loop's node keeps its code (to run it again for derivatives): code that held the
    # caller's objects, into which the loop's results go, made a cycle through the AD graph
    # that no collector sees: the arrays and nodes lived on. (A traversal that clears the
    # graph's edges, the default, breaks it: not this one.)
    live = _runtime.ad_live_count()
    a = Float64([1.0, 2.0])
    pbc.enable_grad(a)
    x = Float64(a)
    y = fn(x)
    pbc.set_grad(a, 1.0)
    assert pbc.forward_to(y, flags=pbc.ADFlag.ClearNone).numpy().tolist() == {
        '_doubled_in_place': [8, 8], '_sum_through_an_alias': [14, 14],
        '_entry_in_place': [7, 7]}[fn.__name__]
    del a, x, y
    gc.collect()
    assert _runtime.ad_live_count() == live


@pytest.mark.parametrize('compress', [False, True])
def test_forward_mode_through_a_loop_after_an_evaluated_loop(compress):
    # The evaluated (or compressed) loop writes its results with scatters; their tangents
    # too. The symbolic loop after it read the tangent before the last queued write ran:
    # d/da 6 for 9 on the lanes that ran the most iterations.
    k = UInt32(range(8))
    a = Float64([0.1 * j for j in range(1, 9)])
    pbc.enable_grad(a)
    s = a + 1.0

    def body(i, b, s, k):
        b += s * 2.0
        return i + 1, b, s, k

    _, b, _, _ = pbc.while_loop((UInt32(0), Float64([1.0] * 8), s, k),
                                lambda i, b, s, k: i < k % 4, body, mode='evaluated',
                                compress=compress)
    _, b = pbc.while_loop((UInt32(0), b), lambda i, b: i < 1, lambda i, b: (i + 1, b * 1.5),
                          mode='symbolic', max_iterations=8)
    pbc.set_grad(a, 1.0)
    assert pbc.forward_to(b).numpy().tolist() == [3.0 * (j % 4) for j in range(8)]
