"""Automatic differentiation: every rule against central finite differences (float64) on
inputs drawn by hypothesis, forward against reverse mode on random programs, gathers and
scatters, the API over nested structures, scopes, and that the graph frees itself."""

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from suite_backend import Array3f64, Bool, Float, Float64, UInt32

import pbc
from pbc import _runtime

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def values(lo, hi, n=6, avoid=()):
    """n float64 values in [lo, hi], each at least 1e-3 away from the points in `avoid`
    (where the function is not differentiable)."""
    x = st.floats(lo, hi, allow_nan=False, allow_infinity=False)
    x = x.filter(lambda v: all(abs(v - p) > 1e-3 for p in avoid))
    return st.lists(x, min_size=n, max_size=n)


def fd(fn, xs, k):
    """Central finite difference of elementwise fn in argument k (a step per lane, relative
    to its size)."""
    h = 1e-6 * np.maximum(np.abs(np.asarray(xs[k], dtype=np.float64)), 1e-2)

    def at(d):
        args = [Float64(x) for x in xs]
        args[k] = Float64(np.asarray(xs[k]) + d)
        return np.asarray(fn(*args).numpy(), dtype=np.float64)
    return (at(h) - at(-h)) / (2 * h)


def check_elementwise(fn, xs, rtol=2e-5, atol=1e-6):
    """Reverse and forward mode derivatives of elementwise fn(*xs) in every argument match
    finite differences."""
    for k in range(len(xs)):
        expect = fd(fn, xs, k)
        args = [Float64(x) for x in xs]
        pbc.enable_grad(args[k])
        y = fn(*args)
        pbc.backward(y)
        np.testing.assert_allclose(pbc.grad(args[k]).numpy(), expect, rtol=rtol, atol=atol,
                                   err_msg=f'reverse mode, argument {k}')
        args = [Float64(x) for x in xs]
        pbc.enable_grad(args[k])
        y = fn(*args)
        pbc.forward(args[k])
        np.testing.assert_allclose(pbc.grad(y).numpy(), expect, rtol=rtol, atol=atol,
                                   err_msg=f'forward mode, argument {k}')


UNARY = {
    'neg': (lambda x: -x, values(-10, 10)),
    'abs': (abs, values(-10, 10, avoid=(0,))),
    'sqrt': (pbc.sqrt, values(1e-3, 100)),
    'sqrt near 0': (pbc.sqrt, values(1e-4, 1e-2)),
    'rcp': (pbc.rcp, values(0.1, 10)),
    'rsqrt': (pbc.rsqrt, values(0.1, 10)),
    'floor': (pbc.floor, values(-5, 5, avoid=range(-5, 6))),
    'ceil': (pbc.ceil, values(-5, 5, avoid=range(-5, 6))),
    'round': (pbc.round, values(-5, 5, avoid=[k + 0.5 for k in range(-6, 6)])),
    'trunc': (pbc.trunc, values(-5, 5, avoid=range(-5, 6))),
    'square': (pbc.square, values(-10, 10)),
    'sin': (pbc.sin, values(-10, 10)),
    'sin, large': (pbc.sin, values(-1e4, 1e4)),
    'cos': (pbc.cos, values(-10, 10)),
    'cos, large': (pbc.cos, values(-1e4, 1e4)),
    'tan': (pbc.tan, values(-1.4, 1.4)),
    'asin': (pbc.asin, values(-0.95, 0.95)),
    'acos': (pbc.acos, values(-0.95, 0.95)),
    'atan': (pbc.atan, values(-50, 50)),
    'exp': (pbc.exp, values(-20, 20)),
    'exp2': (pbc.exp2, values(-20, 20)),
    'log': (pbc.log, values(1e-3, 1e3)),
    'log near 0': (pbc.log, values(1e-5, 1e-3)),
    'log2': (pbc.log2, values(1e-3, 1e3)),
    'sinh': (pbc.sinh, values(-10, 10)),
    'cosh': (pbc.cosh, values(-10, 10)),
    'tanh': (pbc.tanh, values(-5, 5)),
    'erf': (pbc.erf, values(-3, 3)),
    'power, real exponent': (lambda x: pbc.power(x, 2.7), values(0.1, 10)),
    'power, integer exponent': (lambda x: x ** 3, values(-5, 5)),
    'sign': (pbc.sign, values(-5, 5, avoid=(0,))),
    'float32 round trip': (lambda x: Float64(Float(x)) * 1.0, values(-2, 2)),
    'sincos': (lambda x: pbc.sincos(x)[0] * pbc.sincos(x)[1], values(-3, 3)),
}


@pytest.mark.parametrize('name', sorted(UNARY))
def test_unary_rule_matches_finite_differences(name):
    fn, xs = UNARY[name]
    rtol = 1e-4 if name == 'float32 round trip' else 2e-5

    @SETTINGS
    @given(xs)
    def run(x):
        if name == 'float32 round trip':     # float32 rounding steps: compare exactly 1
            a = Float64(x)
            pbc.enable_grad(a)
            pbc.backward(fn(a))
            np.testing.assert_array_equal(pbc.grad(a).numpy(), 1.0)
            return
        check_elementwise(fn, [x], rtol=rtol, atol=1e-6 * (1 + 1e4 * ('large' in name)))
    run()


def _apart(a, b):
    return all(abs(x - y) > 1e-3 for x, y in zip(a, b))


BINARY = {
    'add': (lambda a, b: a + b, -10, 10),
    'sub': (lambda a, b: a - b, -10, 10),
    'mul': (lambda a, b: a * b, -10, 10),
    'div': (lambda a, b: a / b, 0.5, 10),
    'mod': (lambda a, b: a % b, 0.5, 10),
    'min': (pbc.minimum, -10, 10),
    'max': (pbc.maximum, -10, 10),
    'fmin': (pbc.fmin, -10, 10),
    'fmax': (pbc.fmax, -10, 10),
    'atan2': (pbc.atan2, -10, 10),
    'power': (pbc.power, 0.5, 4),
    'copysign': (pbc.copysign, -10, 10),
    'mulsign': (pbc.mulsign, -10, 10),
    'select': (lambda a, b: pbc.select(a < b, a * a, b * 3.0), -5, 5),
    'lerp': (lambda a, b: pbc.lerp(a, b, 0.25), -5, 5),
}


@pytest.mark.parametrize('name', sorted(BINARY))
def test_binary_rule_matches_finite_differences(name):
    fn, lo, hi = BINARY[name]
    away = (0,) if name in ('copysign', 'mulsign', 'atan2') else ()

    @SETTINGS
    @given(values(lo, hi, avoid=away), values(lo, hi, avoid=away))
    def run(a, b):
        if not _apart(a, b):                 # min/max/select: not at ties
            return
        if name == 'mod' and not _apart([x / y for x, y in zip(a, b)],
                                         [round(x / y) for x, y in zip(a, b)]):
            return                           # fmod jumps where a / b is an integer
        check_elementwise(fn, [a, b])
    run()


@SETTINGS
@given(values(-5, 5), values(-5, 5), values(-5, 5))
def test_fma_matches_finite_differences(a, b, c):
    check_elementwise(pbc.fma, [a, b, c])


def test_bit_operations_on_values_with_derivatives_are_errors():
    x = Float(1.0, 2.0)
    pbc.enable_grad(x)
    for fn in (lambda: x & Float(3.0), lambda: x | x, lambda: x ^ 1.0):
        with pytest.raises(TypeError, match="has no derivative.*pbc.detach"):
            fn()
    y = x & (x > 1.5)                    # with a mask it is a select, and differentiable
    pbc.backward(y)
    assert pbc.grad(x).numpy().tolist() == [0, 1]
    assert (pbc.detach(x) ^ Float(0.0)).numpy().tolist() == [1, 2]


def test_both_branches_of_select_and_min_max_receive_gradients():
    a, b = Float64([1, 5]), Float64([3, 2])
    pbc.enable_grad(a, b)
    pbc.backward(pbc.minimum(a, b) * 10 + pbc.maximum(a, b))
    assert pbc.grad(a).numpy().tolist() == [10, 1]
    assert pbc.grad(b).numpy().tolist() == [1, 10]


def test_zero_gradients_stay_zero_through_infinite_or_nan_partials():
    # As in Dr.Jit, a zero gradient (or tangent) times an infinite or NaN partial is 0:
    # the branch select does not take at lane 0 contributes nothing there, in both modes.
    for backward in (True, False):
        x = Float64([0.0, 4.0])
        pbc.enable_grad(x)
        y = pbc.select(x > 0, pbc.sqrt(x), 0.0)
        if backward:
            pbc.backward(y)
            g = pbc.grad(x)
        else:
            pbc.set_grad(x, 1.0)
            g = pbc.forward_to(y)
        assert g.numpy().tolist() == [0.0, 0.25]
    # A NaN partial on the branch not taken stays out; where it is taken, it shows.
    x = Float64(np.arange(4.0))
    pbc.enable_grad(x)
    pbc.backward(pbc.select(x < 2, x, x * (Float64(0.0) / 0.0)))
    g = pbc.grad(x).numpy()
    assert g[:2].tolist() == [1, 1] and np.isnan(g[2:]).all()
    # where the gradient is not zero, the infinite partial shows
    x = Float64([0.0])
    pbc.enable_grad(x)
    pbc.backward(pbc.sqrt(x))
    assert math.isinf(pbc.grad(x).numpy()[0])


def test_mixed_precision_gradients_take_each_input_type():
    a, b = Float64([1.5, -2.0]), Float([3.0, 0.25])
    pbc.enable_grad(a, b)
    y = Float(a) * b                      # a is rounded to float32: the cast passes 1
    pbc.backward(y)
    assert type(pbc.grad(a)) is Float64 and pbc.grad(a).numpy().tolist() == [3.0, 0.25]
    assert type(pbc.grad(b)) is Float and pbc.grad(b).numpy().tolist() == [1.5, -2.0]
    c = b * a                             # promoted to float64
    pbc.backward(c)                       # (gradients of inputs accumulate)
    assert pbc.grad(b).numpy().tolist() == [3.0, -4.0]


# ---- non-elementwise rules: gradient of sum(w * f(x)) against finite differences ---------
def fd_gradient(loss, x, h=1e-6):
    out = np.empty(len(x))
    for i in range(len(x)):
        xp, xm = np.array(x, dtype=np.float64), np.array(x, dtype=np.float64)
        xp[i] += h
        xm[i] -= h
        out[i] = (loss(Float64(xp)) - loss(Float64(xm))) / (2 * h)
    return out


HORIZONTAL = {
    'sum': lambda x: pbc.sum(x),
    'prod': lambda x: pbc.prod(x),
    'max': lambda x: pbc.max(x),
    'min': lambda x: pbc.min(x),
    'mean': lambda x: pbc.mean(x),
    'dot': lambda x: pbc.dot(x, x * 2.0 + 1.0),
    'norm': lambda x: pbc.norm(Array3f64(x, x * x, 1.0)),
    'prefix_sum': lambda x: pbc.prefix_sum(x),
    'cumsum': lambda x: pbc.cumsum(x),
    'prefix_sum reversed': lambda x: pbc.prefix_sum(x, reverse=True),
    'gather': lambda x: pbc.gather(Float64, x, UInt32([0, 2, 2, 4, 1])),
    'masked gather': lambda x: pbc.gather(Float64, x, UInt32([0, 2, 2, 4, 1]),
                                          Bool([True, False, True, True, False])),
    'slice': lambda x: x[1:4],
}


@pytest.mark.parametrize('name', sorted(HORIZONTAL))
def test_horizontal_rule_matches_finite_differences(name):
    fn = HORIZONTAL[name]

    @SETTINGS
    @given(values(0.5, 3, n=5, avoid=()), st.integers(0, 2**31))
    def run(x, seed):
        if name in ('max', 'min') and len(set(np.round(x, 3))) < len(x):
            return                                   # ties: not differentiable
        def weights(n):
            return Float64(np.random.default_rng(seed).uniform(-1, 1, n))

        def loss(v):
            y = fn(v)
            if hasattr(y, 'x'):
                y = y.x
            return pbc.sum(y * weights(len(y))).item()
        expect = fd_gradient(loss, x)
        a = Float64(x)
        pbc.enable_grad(a)
        y = fn(a)
        pbc.backward(pbc.sum(y * weights(len(y))))
        np.testing.assert_allclose(pbc.grad(a).numpy(), expect, rtol=1e-5, atol=1e-6)
        b = Float64(x)                               # forward: one direction at a time
        for i in range(len(x)):
            b = Float64(x)
            pbc.enable_grad(b)
            pbc.set_grad(b, Float64(np.eye(len(x))[i]))
            y = pbc.sum(fn(b) * weights(len(fn(Float64(x)))))
            pbc.forward_to(y)
            assert abs(pbc.grad(y).item() - expect[i]) < 1e-5 * (1 + abs(expect[i]))
    run()


def test_gather_with_duplicate_indices_accumulates():
    src = Float([1, 2, 3, 4])
    pbc.enable_grad(src)
    out = pbc.gather(Float, src, UInt32([3, 0, 3, 3]))
    pbc.backward(out)
    assert pbc.grad(src).numpy().tolist() == [1, 0, 0, 3]


def test_masked_gather_gives_no_gradient_on_masked_lanes():
    src = Float([1, 2, 3])
    pbc.enable_grad(src)
    out = pbc.gather(Float, src, UInt32([0, 1, 2]), Bool([True, False, True]))
    pbc.backward(out * 5.0)
    assert pbc.grad(src).numpy().tolist() == [5, 0, 5]


def test_scatter_cuts_the_gradient_of_overwritten_entries():
    target = Float([1, 2, 3, 4])
    value = Float([10, 20])
    pbc.enable_grad(target, value)
    t = target * 1.0
    pbc.scatter(t, value * 3.0, UInt32([1, 3]))
    pbc.backward(t * Float([1, 2, 3, 4]))
    assert pbc.grad(target).numpy().tolist() == [1, 0, 3, 0]
    assert pbc.grad(value).numpy().tolist() == [6, 12]


def test_scatter_add_passes_gradients_to_both():
    target = Float([1, 2, 3])
    value = Float([1, 1, 1, 1])
    pbc.enable_grad(target, value)
    t = target * 2.0
    pbc.scatter_add(t, value, UInt32([0, 0, 2, 1]))
    pbc.backward(t * Float([1, 10, 100]))
    assert pbc.grad(target).numpy().tolist() == [2, 20, 200]
    assert pbc.grad(value).numpy().tolist() == [1, 1, 100, 10]
    pbc.enable_grad(target)
    t = target * 1.0
    pbc.forward(target)
    with pytest.raises(NotImplementedError, match='not differentiable'):
        pbc.scatter_reduce(pbc.ReduceOp.Mul, t, value, UInt32([0, 0, 2, 1]))


def test_scalar_broadcast_input_gets_the_sum():
    p = Float(2.0)
    pbc.enable_grad(p)
    y = p * Float([1, 2, 3])
    pbc.backward(y)
    assert len(pbc.grad(p)) == 1 and pbc.grad(p).item() == 6


# ---- forward vs reverse consistency on random programs ----------------------------------
OPS = [
    lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b,
    lambda a, b: a / (1.5 + b * b), lambda a, b: pbc.sin(a) * b,
    lambda a, b: pbc.exp(-a * a) + b, lambda a, b: pbc.sqrt(1.0 + a * a) - b,
    lambda a, b: pbc.select(a > b, a, b * 0.5), lambda a, b: pbc.fma(a, b, a),
    lambda a, b: pbc.atan2(a, 2.0 + b * b), lambda a, b: pbc.tanh(a + b),
    lambda a, b: pbc.maximum(a, b) * pbc.minimum(a, b),
]


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, len(OPS) - 1), st.integers(0, 100),
                          st.integers(0, 100)), min_size=1, max_size=25),
       st.integers(0, 2**31))
def test_forward_and_reverse_mode_agree_on_random_programs(program, seed):
    """<J v, w> = <v, J^T w> for random compositions of differentiable ops."""
    rng = np.random.default_rng(seed)
    x0 = [rng.uniform(-2, 2, 7) for _ in range(3)]
    v = [rng.uniform(-1, 1, 7) for _ in range(3)]
    w = rng.uniform(-1, 1, 7)

    def run(xs):
        nodes = list(xs)
        for op, i, j in program:
            nodes.append(OPS[op](nodes[i % len(nodes)], nodes[j % len(nodes)]))
        return nodes[-1]

    xs = [Float64(x) for x in x0]
    pbc.enable_grad(xs)
    y = run(xs)
    for x, d in zip(xs, v):
        pbc.set_grad(x, Float64(d))
    jv = pbc.forward_to(y)
    xs = [Float64(x) for x in x0]
    pbc.enable_grad(xs)
    y = run(xs)
    pbc.set_grad(y, Float64(w))
    jtw = pbc.backward_to(*xs)
    lhs = float(np.dot(jv.numpy(), w))
    rhs = float(sum(np.dot(g.numpy(), d) for g, d in zip(jtw, v)))
    assert math.isclose(lhs, rhs, rel_tol=1e-9, abs_tol=1e-9)


# ---- the API -----------------------------------------------------------------------------
def test_api_over_nested_structures_and_non_differentiable_values():
    v = Array3f64(1, 2, 3)
    d = {'a': Float64([1, 2]), 'b': [Float64(3), UInt32(1)], 'c': 5}
    pbc.enable_grad(v, d)
    assert pbc.grad_enabled(v) and pbc.grad_enabled(d) and pbc.grad_enabled(d['a'])
    assert not pbc.grad_enabled(d['b'][1]) and not pbc.grad_enabled(Float(1))
    loss = pbc.sum(v * v) + pbc.sum(d['a']) * d['b'][0]
    pbc.backward(loss)
    g = pbc.grad(d)
    assert g['a'].numpy().tolist() == [3, 3] and g['b'][0].item() == 3 and g['c'] == 5
    assert pbc.grad(v).numpy().ravel().tolist() == [2, 4, 6]
    pbc.set_grad(v, Array3f64(7, 8, 9))
    pbc.accum_grad(v, 1.0)
    assert pbc.grad(v).numpy().ravel().tolist() == [8, 9, 10]
    pbc.clear_grad(v)
    assert pbc.grad(v).numpy().ravel().tolist() == [0, 0, 0]
    pbc.disable_grad(d)
    assert not pbc.grad_enabled(d)
    assert pbc.grad(2.5) == 0


def test_backward_without_derivatives_is_an_error_unless_allowed():
    with pytest.raises(RuntimeError, match='enable_grad'):
        pbc.backward(Float(1, 2))
    pbc.backward(Float(1, 2), flags=pbc.ADFlag.Default | pbc.ADFlag.AllowNoGrad)


def test_detach_keeps_the_value_and_drops_the_derivatives():
    x = Float([1, 2])
    pbc.enable_grad(x)
    y = pbc.detach(x) * x
    pbc.backward(y)
    assert pbc.grad(x).numpy().tolist() == [1, 2]
    assert not pbc.grad_enabled(pbc.detach(x))


def test_flags_keep_or_clear_the_graph_and_interior_gradients():
    x = Float([1, 2])
    pbc.enable_grad(x)
    y = x * x
    z = y * 3.0
    pbc.backward(z, flags=pbc.ADFlag.ClearNone)
    assert pbc.grad(x).numpy().tolist() == [6, 12]
    assert pbc.grad(y).numpy().tolist() == [3, 3]        # interior kept
    pbc.clear_grad(x, y, z)
    pbc.backward(z)                                      # the graph is still there
    assert pbc.grad(x).numpy().tolist() == [6, 12]
    assert pbc.grad(y).numpy().tolist() == [0, 0]        # interior cleared (default)
    pbc.clear_grad(x)
    pbc.backward(z)                                      # edges cleared: nothing reaches x
    assert pbc.grad(x).numpy().tolist() == [0, 0]


def test_backward_from_keeps_a_gradient_already_set():
    x = Float([1, 2])
    pbc.enable_grad(x)
    y = x * 2.0
    pbc.set_grad(y, Float([10, 100]))
    pbc.backward_from(y)
    assert pbc.grad(x).numpy().tolist() == [20, 200]


def test_in_place_operators_carry_derivatives():
    x = Float([1, 2])
    pbc.enable_grad(x)
    y = Float(x)
    y *= x
    y += 1.0
    y[Bool([True, False])] = y * 3.0
    pbc.backward(y)
    assert pbc.grad(x).numpy().tolist() == [6, 4]


def test_tensors_keep_their_shapes():
    from suite_backend import TensorXf64
    t = TensorXf64(np.arange(6.0).reshape(2, 3))
    pbc.enable_grad(t)
    loss = pbc.sum(t * t)
    pbc.backward(loss)
    g = pbc.grad(t)
    assert type(g) is TensorXf64 and g.shape == (2, 3)
    np.testing.assert_array_equal(g.numpy(), 2 * np.arange(6.0).reshape(2, 3))


# ---- scopes and tape surgery (the paper's listings) -------------------------------------
def test_suspend_and_resume_follow_the_set_semantics():
    a, b = Float([1, 2]), Float([3, 4])
    pbc.enable_grad(a, b)
    with pbc.suspend_grad():                       # Omega = {}
        assert not pbc.grad_enabled(a) and not pbc.grad_enabled(a * b)
        with pbc.resume_grad():                    # Omega = everything
            assert pbc.grad_enabled(a * b)
        with pbc.resume_grad(b):                   # Omega = {b}
            y = a * b                              # only the dependence on b is tracked
            z = y * y                              # (what is computed from b is tracked too)
            assert pbc.grad_enabled(y) and pbc.grad_enabled(z) and not pbc.grad_enabled(a)
        with pbc.resume_grad():
            pbc.backward(y)
    assert pbc.grad(a).numpy().tolist() == [0, 0]
    assert pbc.grad(b).numpy().tolist() == [1, 2]
    with pbc.suspend_grad(a):                      # Omega = everything but a
        assert not pbc.grad_enabled(a) and pbc.grad_enabled(b)
        with pbc.resume_grad(a):
            assert pbc.grad_enabled(a)
    with pbc.suspend_grad(when=False):
        assert pbc.grad_enabled(a)
    assert pbc.grad_enabled(a)


def test_replace_grad_tape_surgery():
    # Lr *= replace_grad(1, bsdf_value_diff / bsdf_value): the value of Lr is unchanged,
    # its derivative is that of the attached BSDF value relative to its detached value.
    albedo = Float([0.5, 0.8])
    pbc.enable_grad(albedo)
    bsdf_value = pbc.detach(albedo) * 0.3          # detached sampling weight
    bsdf_value_diff = albedo * 0.3                 # the same value, attached
    Lr = Float([2.0, 4.0])
    Lr *= pbc.replace_grad(1, bsdf_value_diff / pbc.detach(bsdf_value))
    np.testing.assert_allclose(Lr.numpy(), [2, 4])
    pbc.backward(Lr)
    np.testing.assert_allclose(pbc.grad(albedo).numpy(), [2 / 0.5, 4 / 0.8], rtol=1e-6)
    x, y = Float([1, 2]), Float([3, 4])
    pbc.enable_grad(x, y)
    r = pbc.replace_grad(x, y * 2.0)
    assert r.numpy().tolist() == [1, 2]
    pbc.backward(r)
    assert pbc.grad(y).numpy().tolist() == [2, 2] and pbc.grad(x).numpy().tolist() == [0, 0]


def test_isolate_grad_postpones_edges_leaving_the_scope():
    x = Float([1, 2])
    pbc.enable_grad(x)
    y = x * 3.0                                    # before the boundary
    with pbc.isolate_grad():
        z = y * y
        pbc.backward(z)
        assert pbc.grad(y).numpy().tolist() == [6, 12]      # reached, not crossed
        assert pbc.grad(x).numpy().tolist() == [0, 0]
    assert pbc.grad(x).numpy().tolist() == [18, 36]         # continued at the exit


# ---- kernels and memory -----------------------------------------------------------------
def test_gradient_of_a_long_elementwise_function_fuses():
    a, b = Float(np.linspace(0.1, 1, 1000)), Float(np.linspace(1, 2, 1000))
    pbc.eval(a, b)
    pbc.enable_grad(a, b)
    y = a
    for k in range(100):
        y = (y * b + 0.5 * a) if k % 2 else pbc.sin(y) - b
    pbc.backward(y)
    ga, gb = pbc.grad(a), pbc.grad(b)
    pbc.kernel_history_clear()
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
        pbc.eval(y, ga, gb)
        assert len(pbc.kernel_history()) == 1       # primal and adjoint: one kernel


def test_a_100000_op_chain_differentiates_without_recursion():
    x = Float(1.0)
    pbc.enable_grad(x)
    y = x
    for _ in range(100000):
        y = y + 1.0
    pbc.backward(y)
    assert pbc.grad(x).item() == 1.0


def test_nodes_are_freed_when_nothing_reaches_them():
    base = _runtime.ad_live_count()
    x = Float([1, 2, 3])
    pbc.enable_grad(x)
    y = pbc.exp(x) * x
    assert _runtime.ad_live_count() > base
    pbc.backward(y)
    del y, x
    assert _runtime.ad_live_count() == base


def test_untracked_code_makes_no_nodes():
    base = _runtime.ad_live_count()
    a = Float([1, 2])
    b = pbc.sin(a) * a + pbc.sum(a)
    assert _runtime.ad_live_count() == base and not pbc.grad_enabled(b)


# ---- control flow ------------------------------------------------------------------------
@pbc.syntax
def _power_loop(x, mode):
    i = UInt32(0)
    y = Float(x)
    while pbc.hint(i < 3, mode=mode):
        y = y * x
        i += 1
    return y


@pbc.syntax
def _branchy(x):
    y = Float(x)
    if x > 1.5:
        y = y * x * x
    else:
        y = y + 1.0
    return y


def test_evaluated_loops_and_conditionals_differentiate():
    x = Float([1.0, 2.0])
    pbc.enable_grad(x)
    pbc.backward(_power_loop(x, 'evaluated'))
    assert pbc.grad(x).numpy().tolist() == [4, 32]
    pbc.clear_grad(x)
    pbc.backward(_branchy(x))
    assert pbc.grad(x).numpy().tolist() == [1, 12]


def test_width_one_seeds_and_tangents_stand_for_every_lane():
    # A gradient of width 1 on a wide node is a broadcast: reverse mode sums it over the
    # lanes into a width-1 input, forward mode gathers it lane by lane.
    a = Float64(1.5)
    pbc.enable_grad(a)
    y = a - Float64(np.arange(5.0))
    pbc.accum_grad(y, 1.0)
    assert pbc.backward_to(a).numpy().tolist() == [5]
    a = Float64(1.5)
    pbc.enable_grad(a)
    y = a - Float64(np.arange(5.0))
    z = pbc.gather(Float64, y, UInt32(4, 0, 3))
    pbc.set_grad(a, 1.0)
    assert pbc.forward_to(z).numpy().tolist() == [1, 1, 1]


def test_checkpoints_derivative_code_reads_evaluated_intermediates():
    # An evaluated intermediate is data: the adjoint kernel reads it (one load) instead of
    # recomputing the history before it (here: a chain of exponentials, each a polynomial
    # whose value the derivative needs).
    x0 = np.linspace(0.1, 1.0, 1000)
    grads, ops = [], []
    for checkpoint in (False, True):
        x = Float64(x0)
        pbc.enable_grad(x)
        h, hs = x, []
        for _ in range(8):
            e = pbc.exp(h)
            hs.append(e)
            h = e * 0.3
        if checkpoint:
            pbc.eval(*hs)
        with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
            pbc.kernel_history_clear()
            pbc.backward(h)
            grads.append(pbc.grad(x).numpy())
            ops.append(sum(k['ir_ops'] for k in pbc.kernel_history()))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)
    assert ops[1] < 0.5 * ops[0], ops


def test_clear_flags_follow_where_the_traversal_started():
    # ClearInterior clears what a traversal passed through, not where it started: the
    # tangents set on inputs survive forward_to, the gradients set on outputs survive
    # backward_to, so one seeding serves several targets.
    a, b = Float(1.0), Float(2.0)
    pbc.enable_grad(a, b)
    pbc.set_grad(a, 1.0)
    pbc.set_grad(b, 10.0)
    s = a + b
    p, q = s * a, s * b
    assert pbc.forward_to(p, flags=pbc.ADFlag.ClearInterior).numpy().tolist() == [14]
    assert pbc.forward_to(q, flags=pbc.ADFlag.ClearInterior).numpy().tolist() == [52]
    assert pbc.grad(a).numpy().tolist() == [1] and pbc.grad(s).numpy().tolist() == [0]
    a, b = Float(1.0), Float(2.0)
    pbc.enable_grad(a, b)
    s = a * b
    p, q = s * 3.0, s * 5.0
    pbc.set_grad(p, 1.0)
    pbc.set_grad(q, 1.0)
    assert pbc.backward_to(a, flags=pbc.ADFlag.ClearInterior).numpy().tolist() == [16]
    assert pbc.backward_to(b, flags=pbc.ADFlag.ClearInterior).numpy().tolist() == [8]
    assert pbc.grad(p).numpy().tolist() == [1]
    # Default also clears where it started
    pbc.backward_to(a)
    assert pbc.grad(p).numpy().tolist() == [0]


def test_isolated_forward_traversals_keep_older_tangents():
    a = Float(1.0)
    pbc.enable_grad(a)
    pbc.set_grad(a, 2.0)
    with pbc.isolate_grad():
        assert pbc.forward_to(a * 2.0).numpy().tolist() == [4]
        assert pbc.forward_to(a * 3.0).numpy().tolist() == [6]   # a's tangent is kept


def test_suspended_scopes_ignore_enable_grad_and_detach_copies():
    a = Float(1.0, 2.0)
    pbc.enable_grad(a)
    with pbc.suspend_grad():
        e = Float(3.0)
        pbc.enable_grad(e)
        copy, same = Float(a), a * 1.0          # (a * 1 simplifies to a's variable)
        assert not pbc.grad_enabled(e, copy, same)
    assert not pbc.grad_enabled(e, copy, same) and pbc.grad_enabled(a)


def test_seeding_a_vector_of_one_variable_seeds_each_component():
    a = Float(2.0)
    pbc.enable_grad(a)
    pbc.backward_from(Array3f64(a, a, a) * 1.0)
    assert pbc.grad(a).numpy().tolist() == [3]


def test_abs_has_derivative_zero_at_zero():
    x = Float64([-2.0, 0.0, 3.0])
    pbc.enable_grad(x)
    pbc.backward(abs(x))
    assert pbc.grad(x).numpy().tolist() == [-1, 0, 1]


def test_gradient_of_the_wrong_width_and_cyclic_structures_are_errors():
    x = Float(1.0, 2.0, 3.0)
    pbc.enable_grad(x)
    with pytest.raises(RuntimeError, match='gradient of size 2 into AD variable of size 3'):
        pbc.set_grad(x, Float(1.0, 2.0))
    cyclic = [Float(1.0)]
    cyclic.append(cyclic)
    with pytest.raises(RuntimeError, match='contains itself') as e:
        pbc.enable_grad(cyclic)
    assert isinstance(e.value.__cause__, RecursionError)


def test_enqueue_and_traverse_are_the_primitives_of_the_to_and_from_functions():
    for modes in ((pbc.ADMode.Backward, pbc.ADMode.Forward),
                  (pbc.ADMode.Forward, pbc.ADMode.Backward)):
        x = Float64(1.0, 2.0)
        pbc.enable_grad(x)
        y = x * x * 3.0
        if modes[1] == pbc.ADMode.Forward:      # enqueue y upstream, carry tangents forward
            x.grad = 1.0
            pbc.enqueue(modes[0], y)
            pbc.traverse(modes[1])
            assert y.grad.numpy().tolist() == [6, 12]
        else:                                   # enqueue x downstream, carry gradients back
            y.grad = 1.0
            pbc.enqueue(modes[0], x)
            pbc.traverse(modes[1])
            assert x.grad.numpy().tolist() == [6, 12]
    with pytest.raises(ValueError, match='ADMode.Forward or ADMode.Backward'):
        pbc.enqueue(pbc.ADMode.Primal, x)


def test_grad_attribute_of_arrays_vectors_matrices_and_tensors():
    from suite_backend import Matrix2f, TensorXf
    for x in (Float(1.0, 2.0), Array3f64(1, 2, 3), Matrix2f(1, 2, 3, 4),
              TensorXf(np.ones((2, 2), np.float32))):
        pbc.enable_grad(x)
        x.grad = 2.0
        assert type(x.grad) is type(x)
        assert np.all(np.asarray(pbc.ravel(x.grad).numpy()) == 2.0)


@pytest.mark.parametrize('op', ['Min', 'Max'])
def test_scatter_reduce_min_max_send_derivatives_to_what_won(op):
    reduce = getattr(pbc.ReduceOp, op)
    index = UInt32(0, 0, 1, 1, 2)
    x0, v0 = np.array([2.0, 4.0, 6.0]), np.array([1.0, 3.0, 5.0, 4.5, 9.0])
    pick = np.minimum if op == 'Min' else np.maximum
    want = x0.copy()
    for i, v in zip(index.numpy(), v0):
        want[i] = pick(want[i], v)
    # reverse: the gradient of each entry goes to the target or the value lane that won
    x, v = Float64(x0), Float64(v0)
    pbc.enable_grad(x, v)
    out = Float64(x)
    pbc.scatter_reduce(reduce, out, v, index)
    assert out.numpy().tolist() == want.tolist()
    out.grad = Float64(1.0, 10.0, 100.0)
    gx, gv = pbc.backward_to(x, v)
    wins_x = x0 == want
    wins_v = v0 == want[index.numpy()]
    assert gx.numpy().tolist() == np.where(wins_x, [1.0, 10.0, 100.0], 0).tolist()
    assert gv.numpy().tolist() == np.where(wins_v, np.array([1.0, 10.0, 100.0])[
        index.numpy()], 0).tolist()
    # forward: the same selection of tangents
    x, v = Float64(x0), Float64(v0)
    pbc.enable_grad(x, v)
    x.grad, v.grad = Float64(0.5, 0.25, 0.125), Float64(1.0, 2.0, 3.0, 4.0, 5.0)
    out = Float64(x)
    pbc.scatter_reduce(reduce, out, v, index)
    t = pbc.forward_to(out).numpy()
    expect = np.where(wins_x, [0.5, 0.25, 0.125], 0.0)
    np.add.at(expect, index.numpy(), np.where(wins_v, [1.0, 2.0, 3.0, 4.0, 5.0], 0.0))
    assert t.tolist() == expect.tolist()


def test_scatter_reduce_ties_share_the_gradient():
    x = Float64(4.0)
    v = Float64(4.0, 4.0)
    pbc.enable_grad(x, v)
    out = Float64(x)
    pbc.scatter_reduce(pbc.ReduceOp.Min, out, v, UInt32(0, 0))
    out.grad = 3.0
    gx, gv = pbc.backward_to(x, v)
    assert gx.numpy().tolist() == [1] and gv.numpy().tolist() == [1, 1]
    out = Float64(x)
    with pytest.raises(NotImplementedError, match='add, min and max are'):
        pbc.scatter_reduce(pbc.ReduceOp.Mul, out, v, UInt32(0, 0))


def test_gradients_of_suspended_variables_read_zero_and_ignore_writes():
    a = Float(1.0)
    pbc.enable_grad(a)
    pbc.set_grad(a, 5.0)
    with pbc.suspend_grad(a):
        assert pbc.grad(a).numpy().tolist() == [0]
        pbc.accum_grad(a, 1.0)
    assert pbc.grad(a).numpy().tolist() == [5]


def test_the_example_of_every_function_in_the_docs_prints_what_it_says(capsys):
    text = (Path(__file__).parent.parent / 'docs' / 'autodiff.md').read_text()
    block = text.split('Every function, by example')[1].split('```python\n')[1]
    block = block.split('```')[0]
    exec(compile(block, 'docs/autodiff.md', 'exec'), {})
    printed = capsys.readouterr().out.splitlines()
    said = [line.split('# ')[-1] for line in block.splitlines() if line.startswith('print(')]
    assert printed == said



@pbc.syntax
def _backward_inside_branches(which, mode):
    k = pbc.arange(UInt32, 5)
    x = pbc.arange(Float, 5)
    pbc.enable_grad(x)
    y = x * 2
    if pbc.hint(k < 2, mode=mode):
        if which & 1:                   # (a Python condition: this branch or not)
            pbc.backward_from(y * 2)
    else:
        if which & 2:
            pbc.backward_from(y * 3)
    return x


@pytest.mark.parametrize('mode', ['symbolic', 'evaluated'])
@pytest.mark.parametrize('which', [1, 2, 3])
def test_backward_from_inside_branches_reaches_what_came_before_on_their_lanes(mode, which):
    # (each branch's gradient on its lanes; both reach x, through y, made before the
    # conditional: the first traversal must not clear the edge the second needs)
    g = pbc.grad(_backward_inside_branches(which, mode)).numpy().tolist()
    assert g == [4 * (which & 1)] * 2 + [6 * (which >> 1)] * 3


@pytest.mark.parametrize('mode', ['symbolic', 'evaluated'])
def test_backward_inside_each_iteration_reaches_what_came_before_once(mode):
    # (each iteration's traversal stops at y, made before the loop; y's gradient, both
    # iterations', goes on to x after the loop, through an edge the first would have
    # cleared)
    x = pbc.opaque(Float, 0, 3)
    pbc.enable_grad(x)
    y = pbc.gather(Float, x, UInt32(2, 1, 0))

    def body(i):
        with pbc.resume_grad():
            pbc.backward(2 * pbc.gather(Float, y, UInt32(0, 1, 2)))
        return (i + 1,)

    pbc.while_loop((pbc.zeros(UInt32, 3),), lambda i: i < 2, body, mode=mode)
    assert pbc.grad(x).numpy().tolist() == [4, 4, 4]
