"""Custom differentiable operations: pbc.CustomOp / pbc.custom in both modes, against pbc's
own derivatives of the same function and NumPy; implicit inputs found while eval runs;
ops with many inputs; structures; what they free; and the errors users see."""

import gc
import weakref

import numpy as np
import pytest
from suite_backend import Array3f, Float, UInt32

import pbc
from pbc import _runtime


class Normalize(pbc.CustomOp):
    """v / |v| with hand-written derivatives (the projection onto the tangent plane)."""

    def eval(self, value):
        self.value = value
        self.inv_norm = pbc.rcp(pbc.norm(value))
        return value * self.inv_norm

    def _project(self, g):
        g = g * self.inv_norm
        return g - self.value * (pbc.dot(self.value, g) * pbc.square(self.inv_norm))

    def forward(self):
        self.set_grad_out(self._project(self.grad_in('value')))

    def backward(self):
        self.set_grad_in('value', self._project(self.grad_out()))


def _vec(rows):
    return Array3f(*[Float(np.asarray(r, np.float32)) for r in rows])


def _np(v):
    return np.array([c.numpy() for c in v])


V = [[1.0, -2.0, 0.5], [2.0, 0.5, 1.5], [3.0, 1.0, -2.0]]


def test_custom_normalize_matches_builtin_derivatives_in_both_modes():
    w = _vec([[0.3, 1.0, -2.0], [1.0, 0.0, 0.5], [-1.0, 2.0, 0.0]])
    grads = []
    for fn in (lambda v: pbc.custom(Normalize, v), pbc.normalize):
        x = _vec(V)
        pbc.enable_grad(x)
        y = fn(x)
        pbc.backward(pbc.dot(y, w))
        rev = _np(pbc.grad(x))
        x = _vec(V)
        pbc.enable_grad(x)
        y = fn(x)
        pbc.set_grad(x, w)
        fwd = _np(pbc.forward_to(y))
        grads.append((_np(y), rev, fwd))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # and the Jacobian is symmetric, so both modes agree here too
    np.testing.assert_allclose(grads[0][1], grads[0][2], rtol=1e-5, atol=1e-6)


def test_custom_op_inside_a_chain_and_its_value():
    x = Float(1.0, 2.0, 3.0)
    pbc.enable_grad(x)

    class Cube(pbc.CustomOp):
        def eval(self, a):
            self.a = a
            return a * a * a

        def backward(self):
            self.set_grad_in('a', 3 * self.a * self.a * self.grad_out())

        def forward(self):
            self.set_grad_out(3 * self.a * self.a * self.grad_in('a'))

    y = 2 * pbc.custom(Cube, x + 1) + x
    np.testing.assert_allclose(y.numpy(), 2 * (np.array([1, 2, 3]) + 1) ** 3 + [1, 2, 3])
    pbc.backward(y)
    np.testing.assert_allclose(pbc.grad(x).numpy(), 6 * (np.array([1, 2, 3]) + 1) ** 2 + 1)
    x2 = Float(1.0, 2.0, 3.0)
    pbc.enable_grad(x2)
    y2 = 2 * pbc.custom(Cube, x2 + 1) + x2
    pbc.forward(x2)
    np.testing.assert_allclose(pbc.grad(y2).numpy(), 6 * (np.array([1, 2, 3]) + 1) ** 2 + 1)


class Holder:
    pass


class ScaleByHeld(pbc.CustomOp):
    """x * holder.p, where p (carrying derivatives) is read by eval, not passed to it."""

    def __init__(self):
        self.holder = HELD

    def eval(self, x):
        self.x = x
        return x * self.holder.p

    def backward(self):
        g = self.grad_out()
        self.set_grad_in('x', g * pbc.detach(self.holder.p))
        pbc.accum_grad(self.holder.p, g * self.x)

    def forward(self):
        p = pbc.detach(self.holder.p)
        self.set_grad_out(self.grad_in('x') * p + pbc.grad(self.holder.p) * self.x)


HELD = Holder()


def test_implicit_input_receives_gradients_in_both_modes():
    HELD.p = Float(3.0)
    pbc.enable_grad(HELD.p)
    x = Float(1.0, 2.0, 4.0)
    pbc.enable_grad(x)
    y = pbc.custom(ScaleByHeld, x)
    assert pbc.grad_enabled(y)          # through p alone it would carry derivatives too
    pbc.backward(y)
    np.testing.assert_allclose(pbc.grad(x).numpy(), [3, 3, 3])
    np.testing.assert_allclose(pbc.grad(HELD.p).numpy(), [7.0])    # summed over lanes

    HELD.p = Float(3.0)
    pbc.enable_grad(HELD.p)
    y = pbc.custom(ScaleByHeld, Float(1.0, 2.0, 4.0))     # only the implicit input
    assert pbc.grad_enabled(y)
    pbc.forward(HELD.p)
    np.testing.assert_allclose(pbc.grad(y).numpy(), [1.0, 2.0, 4.0])


def test_implicit_inputs_respect_suspend_inside_eval():
    HELD.p = Float(3.0)
    pbc.enable_grad(HELD.p)

    class ReadsSuspended(pbc.CustomOp):
        def eval(self, x):
            with pbc.suspend_grad():
                return x * HELD.p

    y = pbc.custom(ReadsSuspended, Float(1.0, 2.0))
    assert not pbc.grad_enabled(y)      # the only read of p asked for no derivatives


class Weighted(pbc.CustomOp):
    """sum_k w_k * a_k over any number of inputs (a node with more than three operands)."""

    def eval(self, *terms, weights):
        self.n, self.weights = len(terms), weights
        out = 0
        for w, a in zip(weights, terms):
            out = out + w * a
        return out

    def backward(self):
        g = self.grad_out()
        self.set_grad_in('terms', tuple(w * g for w in self.weights))

    def forward(self):
        terms = self.grad_in('terms')
        self.set_grad_out(sum(w * t for w, t in zip(self.weights, terms)))


def test_many_inputs_positional_and_keyword_arguments():
    weights = [1.0, -2.0, 3.0, 0.5, 4.0, -1.5]
    xs = [Float(float(k + 1), float(2 * k)) for k in range(6)]
    pbc.enable_grad(xs)
    y = pbc.custom(Weighted, *xs, weights=weights)
    np.testing.assert_allclose(
        y.numpy(), sum(w * x.numpy() for w, x in zip(weights, xs)), rtol=1e-6)
    pbc.backward(y)
    for w, x in zip(weights, xs):
        np.testing.assert_allclose(pbc.grad(x).numpy(), [w, w])
    xs = [Float(float(k + 1), float(2 * k)) for k in range(6)]
    pbc.enable_grad(xs)
    y = pbc.custom(Weighted, *xs, weights=weights)
    for k, x in enumerate(xs):
        pbc.set_grad(x, float(k))
    pbc.forward_to(y)
    np.testing.assert_allclose(pbc.grad(y).numpy(),
                               [sum(w * k for k, w in enumerate(weights))] * 2)


def test_structured_output_and_unused_outputs():
    class PolarToXY(pbc.CustomOp):
        def eval(self, r, phi):
            self.r, self.phi = r, phi
            return {'xy': (r * pbc.cos(phi), r * pbc.sin(phi)), 'count': UInt32(7)}

        def backward(self):
            out = self.grad_out()
            gx, gy = out['xy']
            c, s = pbc.cos(self.phi), pbc.sin(self.phi)
            self.set_grad_in('r', gx * c + gy * s)
            self.set_grad_in('phi', -gx * self.r * s + gy * self.r * c)

    r, phi = Float(2.0), Float(0.5)
    pbc.enable_grad(r, phi)
    out = pbc.custom(PolarToXY, r, phi)
    assert out['count'].numpy().tolist() == [7] and not pbc.grad_enabled(out['count'])
    pbc.backward(out['xy'][1])          # x unused: its gradient is zero in grad_out()
    np.testing.assert_allclose(pbc.grad(r).numpy(), [np.sin(0.5)], rtol=1e-6)
    np.testing.assert_allclose(pbc.grad(phi).numpy(), [2 * np.cos(0.5)], rtol=1e-6)


def test_add_input_and_add_output():
    class Both(pbc.CustomOp):
        def eval(self, x):
            self.extra = self.add_input(HELD.q)
            HELD.side = self.add_output(x * 10)     # an output beside the returned one
            return x * 2

        def backward(self):
            g = self.grad_out() * 2 + pbc.grad(HELD.side) * 10
            self.set_grad_in('x', g)
            pbc.accum_grad(self.extra, pbc.sum(g))

    HELD.q = Float(5.0)
    pbc.enable_grad(HELD.q)
    x = Float(1.0, 1.0)
    pbc.enable_grad(x)
    with pbc.suspend_grad(HELD.q):      # q is an input only because eval says so
        y = pbc.custom(Both, x)
    assert pbc.grad_enabled(HELD.side)
    pbc.backward(y + HELD.side)
    np.testing.assert_allclose(pbc.grad(x).numpy(), [12, 12])
    np.testing.assert_allclose(pbc.grad(HELD.q).numpy(), [24])
    del HELD.side, HELD.q


def test_no_input_with_derivatives_gives_a_plain_result():
    y = pbc.custom(Normalize, _vec(V))
    assert not pbc.grad_enabled(y)
    np.testing.assert_allclose(_np(y), np.array(V) / np.linalg.norm(V, axis=0), rtol=1e-6)


def test_the_op_and_its_nodes_are_freed():
    before = _runtime.ad_live_count()
    x = _vec(V)
    pbc.enable_grad(x)
    y = pbc.custom(Normalize, x)
    op = weakref.ref(_hub_op(y))
    pbc.backward(y.x)
    del y
    gc.collect()
    assert op() is None
    del x
    assert _runtime.ad_live_count() == before
    x = _vec(V)
    pbc.enable_grad(x)
    y = pbc.custom(Normalize, x)        # dropped without traversal
    del x, y
    gc.collect()
    assert _runtime.ad_live_count() == before


def _hub_op(y):
    """The CustomOp object behind output y (through its node's operand)."""
    hub = _runtime.ad_sources(_runtime.ad_index(y.x))[0]
    return _runtime.ad_view(hub).payload


def test_errors_name_the_op_and_the_problem():
    with pytest.raises(TypeError, match='not a subclass of pbc.CustomOp'):
        pbc.custom(dict, Float(1.0))

    class Broken(pbc.CustomOp):
        def eval(self, x):
            raise ValueError('bad input')

    with pytest.raises(RuntimeError, match=r'pbc.custom\(<Broken>\).*bad input'):
        pbc.custom(Broken, Float(1.0))

    class NoBackward(pbc.CustomOp):
        def eval(self, x):
            return x + 1

        def backward(self):
            self.set_grad_in('y', self.grad_out())

    x = Float(1.0)
    pbc.enable_grad(x)
    with pytest.raises(KeyError, match="no argument named 'y'"):
        pbc.backward(pbc.custom(NoBackward, x))
    x = Float(1.0)
    pbc.enable_grad(x)
    y = pbc.custom(NoBackward, x)
    with pytest.raises(NotImplementedError, match=r'NoBackward.forward\(\): not implemented'):
        pbc.forward(x)
    del y

    with pytest.raises(RuntimeError, match='too many positional arguments'):
        pbc.custom(Normalize, Float(1.0), Float(2.0))


def test_derivative_code_of_a_custom_op_fuses_into_one_kernel():
    x = Float(np.linspace(1, 2, 1000).astype(np.float32))
    pbc.enable_grad(x)
    pbc.eval(x)
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
        pbc.kernel_history_clear()
        y = pbc.custom(Normalize, Array3f(x, 2 * x, x * x))
        pbc.backward(y.x + y.y)
        pbc.eval(pbc.grad(x))
        kernels = pbc.kernel_history()
    assert len(kernels) == 1            # primal and adjoint together
