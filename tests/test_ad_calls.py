"""Derivatives through symbolic calls (pbc.switch, method dispatch): forward and reverse
mode against evaluated calls and central finite differences (float64), with arrays the
targets read from outside (a parameter, a table they gather from), inside symbolic loops,
and with derivatives propagated inside a target (Path Replay Backpropagation in a
method)."""

import gc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from suite_backend import Float64, Ptr, UInt32

import pbc

SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
MODES = ('symbolic', 'evaluated')


def _targets(a, table):
    return [lambda v, w: v * 2.0 + pbc.sin(w),
            lambda v, w: v * w * a,
            lambda v, w: pbc.exp(v * 0.5) * pbc.gather(Float64, table, UInt32(1)) + w,
            lambda v, w: v]


def _run(mode, x, w, a, table, index):
    return pbc.switch(index, _targets(a, table), x, w, mode=mode)


lanes = st.lists(st.floats(-1, 1, allow_nan=False), min_size=6, max_size=6)


@SETTINGS
@given(lanes, lanes, st.floats(0.2, 1.5), st.lists(st.integers(0, 4), min_size=6, max_size=6))
def test_calls_differentiate_alike_symbolic_evaluated_and_by_finite_differences(
        x, w, a, index):
    index = UInt32(index)                # (4: no target, zeros)
    weights = Float64(np.linspace(-1, 2, 6))
    grads, tangents = {}, {}
    for mode in MODES:
        xs, ws, av, table = Float64(x), Float64(w), Float64(a), Float64(0.5, 2.0, 3.0)
        pbc.enable_grad(xs, ws, av, table)
        pbc.backward(_run(mode, xs, ws, av, table, index) * weights)
        grads[mode] = [pbc.grad(v).numpy() for v in (xs, ws, av, table)]
        xs, ws, av, table = Float64(x), Float64(w), Float64(a), Float64(0.5, 2.0, 3.0)
        pbc.enable_grad(xs, ws, av, table)
        pbc.set_grad(xs, 1.0)
        pbc.set_grad(av, 0.5)
        pbc.set_grad(table, Float64(0, 1, 0))
        tangents[mode] = pbc.forward_to(_run(mode, xs, ws, av, table, index)).numpy()
    for s, e in zip(grads['symbolic'], grads['evaluated']):
        np.testing.assert_allclose(s, e, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(tangents['symbolic'], tangents['evaluated'], rtol=1e-12)
    h = 1e-6
    with pbc.suspend_grad():
        def f(d):
            return _run('evaluated', Float64(np.array(x) + d), Float64(w), Float64(a + d / 2),
                        Float64(0.5, 2.0 + d, 3.0), index).numpy()
        fd = (f(h) - f(-h)) / (2 * h)
    np.testing.assert_allclose(tangents['symbolic'], fd, rtol=1e-5, atol=1e-7)


class Shape(pbc.Object):
    def __init__(self, k):
        super().__init__()
        self.k = Float64(k)            # (an attribute without derivatives: closure data)

    def radiance(self, p):
        return pbc.sin(p * self.k) + p * p


class Glass(Shape):
    def radiance(self, p):
        return p * self.k


def test_method_dispatch_differentiates_through_its_arguments():
    shapes = [Shape(1.5), Shape(0.5), Glass(2.0)]
    ptrs = Ptr[Shape]([shapes[i] for i in (0, 1, 2, 0, 2)])
    out = {}
    for mode in MODES:
        p = Float64(0.1, 0.2, 0.3, 0.4, 0.5)
        pbc.enable_grad(p)
        pbc.backward(ptrs.radiance(p, mode=mode))
        out[mode] = pbc.grad(p).numpy()
    np.testing.assert_allclose(out['symbolic'], out['evaluated'], rtol=1e-12)
    p = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    k = np.array([1.5, 0.5, 2.0, 1.5, 2.0])
    want = np.where([1, 1, 0, 1, 0], np.cos(p * k) * k + 2 * p, k)
    np.testing.assert_allclose(out['symbolic'], want, rtol=1e-12)


@pbc.syntax
def _bounce(x, a, index, mode):
    i = UInt32(0)
    while pbc.hint(i < 3, mode=mode, max_iterations=3):
        x = pbc.switch(index, [lambda v: v * a, lambda v: pbc.sin(v) + a], x, mode=mode)
        i += 1
    return x


@pytest.mark.parametrize('reverse', [False, True])
def test_calls_inside_symbolic_loops(reverse):
    out = {}
    for mode in MODES:
        x, a = Float64(0.3, 0.6, 0.9), Float64(0.8)
        pbc.enable_grad(x, a)
        y = _bounce(x, a, UInt32(0, 1, 0), mode)
        if reverse:
            pbc.backward(y)
            out[mode] = [pbc.grad(x).numpy(), pbc.grad(a).numpy()]
        else:
            pbc.set_grad(a, 1.0)
            out[mode] = [pbc.forward_to(y).numpy()]
    for s, e in zip(out['symbolic'], out['evaluated']):
        np.testing.assert_allclose(s, e, rtol=1e-12)


class Lambert(pbc.Object):
    def __init__(self, texels):
        super().__init__()
        self.texels = texels           # (a table the method gathers from)

    def replay(self, u, dL):
        with pbc.resume_grad():
            t = pbc.gather(Float64, self.texels, UInt32(u * 3.0))
            pbc.backward_from(dL * t)
        return u


def test_derivatives_propagated_inside_a_method():
    texels = Float64(0.2, 0.5, 0.9)
    pbc.enable_grad(texels)
    ptrs = Ptr[Lambert]([Lambert(texels)] * 4)
    u, dL = Float64(0.1, 0.5, 0.9, 0.4), Float64(1.0, 2.0, 3.0, 4.0)
    with pbc.suspend_grad(texels):
        ptrs.replay(u, dL, mode='symbolic')
    assert pbc.grad(texels).numpy().tolist() == [1, 6, 3]


def test_the_derivative_call_folds_zero_tangents():
    # Where only x carries a tangent, w's is a literal zero, which the targets fold: the
    # derivative call passes one input fewer and has less code.
    stats = {}
    for both in (False, True):
        x, w = Float64(0.1, 0.2, 0.3), Float64(1.0, 2.0, 3.0)
        pbc.enable_grad(x, w)
        y = pbc.switch(UInt32(0, 1, 0), [lambda v, u: v * u, lambda v, u: pbc.sin(v * u)],
                       x, w, mode='symbolic')
        pbc.set_grad(x, 1.0)
        if both:
            pbc.set_grad(w, 1.0)
        with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
            pbc.kernel_history_clear()
            d = pbc.forward_to(y)
            pbc.eval(d)
            (stats[both],) = pbc.kernel_history()          # (one kernel)
        want = [1.0, 2.0 * np.cos(0.4), 3.0] if not both else \
            [1.0 + 0.1, (2.0 + 0.2) * np.cos(0.4), 3.0 + 0.3]
        np.testing.assert_allclose(d.numpy(), want, rtol=1e-12)
    assert stats[False]['call_targets'] == stats[True]['call_targets'] == 2
    assert stats[False]['call_inputs_removed'] == stats[True]['call_inputs_removed'] + 1
    assert stats[False]['ir_ops'] < stats[True]['ir_ops']


def _splatting(x, p, film, index, mode):
    # Targets that scatter-add into an array from outside (a film, as a renderer's sensor
    # would): values of their argument and of a parameter, and the parameter as it is.
    def sharp(v):
        pbc.scatter_add(film, v * v * p, UInt32(v > 0.0))
        return v * p

    def flat(v):
        pbc.scatter_add(film, p, UInt32(2), v < 0.5)
        return pbc.sin(v)

    def quiet(v):
        return v + p

    film = Float64(film)            # (a copy: the scatters change it in place)
    y = pbc.switch(index, [sharp, flat, quiet], x, mode=mode)
    return y, film


SPLAT_INDEX = [0, 1, 1, 0, 2, 0]


@pytest.mark.parametrize('mode', MODES)
def test_scatter_adds_in_call_targets_differentiate(mode):
    x0 = np.array([0.3, -0.4, 0.9, -0.7, 0.2, 0.6])
    p0, film0 = 1.3, np.array([0.5, -1.0, 2.0])
    index = UInt32(SPLAT_INDEX)

    def inputs(dx=0.0, dp=0.0, dfilm=0.0):
        x, p, film = Float64(x0 + dx), Float64(p0 + dp), Float64(film0 + dfilm)
        pbc.enable_grad(x, p, film)
        return x, p, film

    wy, wf = Float64(np.linspace(-1, 1, 6)), Float64(0.7, -0.3, 1.1)
    x, p, film = inputs()
    y, out = _splatting(x, p, film, index, mode)
    pbc.backward(pbc.sum(y * wy) + pbc.sum(out * wf))
    grads = [pbc.grad(v).numpy() for v in (x, p, film)]

    dx, dp, dfilm = np.linspace(0.5, -0.5, 6), 0.4, np.array([1.0, 2.0, -1.0])
    x, p, film = inputs()
    pbc.set_grad(x, Float64(dx))
    pbc.set_grad(p, dp)
    pbc.set_grad(film, Float64(dfilm))
    y, out = _splatting(x, p, film, index, mode)
    tangents = [t.numpy() for t in pbc.forward_to(y, out)]

    h = 1e-6
    with pbc.suspend_grad():
        def f(t):
            y, out = _splatting(*inputs(t * dx, t * dp, t * dfilm)[:3], index, 'evaluated')
            return y.numpy(), out.numpy()
        (y1, f1), (y0, f0) = f(h), f(-h)
    np.testing.assert_allclose(tangents[0], (y1 - y0) / (2 * h), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(tangents[1], (f1 - f0) / (2 * h), rtol=1e-7, atol=1e-9)
    # Reverse mode agrees with forward mode: <J^T w, d> = <w, J d>.
    lhs = grads[0] @ dx + grads[1][0] * dp + grads[2] @ dfilm
    rhs = wy.numpy() @ tangents[0] + wf.numpy() @ tangents[1]
    np.testing.assert_allclose(lhs, rhs, rtol=1e-12)
    # And by hand: the film's gradient passes through, x's and p's as the targets say.
    np.testing.assert_allclose(grads[2], wf.numpy())
    sharp = np.array(SPLAT_INDEX) == 0
    entry = (x0 > 0).astype(int)
    gx = np.where(sharp, wy.numpy() * p0 + wf.numpy()[entry] * 2 * x0 * p0,
                  np.where(np.array(SPLAT_INDEX) == 1, wy.numpy() * np.cos(x0), wy.numpy()))
    np.testing.assert_allclose(grads[0], gx, rtol=1e-12)
    flat = (np.array(SPLAT_INDEX) == 1) & (x0 < 0.5)
    gp = (np.sum(wy.numpy()[sharp] * x0[sharp]) + np.sum(wy.numpy()[np.array(SPLAT_INDEX) == 2])
          + np.sum(wf.numpy()[entry[sharp]] * x0[sharp] ** 2) + wf.numpy()[2] * flat.sum())
    np.testing.assert_allclose(grads[1], [gp], rtol=1e-12)


class Splat(pbc.Object):
    """A method that splats into a film (held by the instance) at the instance's entry."""

    def __init__(self, entry, scale, film):
        super().__init__()
        self.entry, self.scale, self.film = entry, Float64(scale), film

    def shade(self, v):
        pbc.scatter_add(self.film, v * v * self.scale, UInt32(self.entry))
        return v * self.scale


@pytest.mark.parametrize('mode', MODES)
def test_scatter_adds_in_methods_differentiate(mode):
    # Methods of instances with a differentiable attribute each, splatting into a film
    # that they hold: derivatives w.r.t. the argument and the attributes, by hand.
    film = Float64(np.zeros(3))
    a, b = Splat(0, 1.5, film), Splat(2, 0.5, film)
    x = Float64(0.3, 0.6, 0.9)
    pbc.enable_grad(x, a.scale, b.scale)
    y = Ptr[Splat]([a, b, a]).shade(x, mode=mode)
    w = np.array([1.0, 2.0, 3.0])
    pbc.backward(pbc.sum(y) + pbc.sum(film * Float64(w)))
    np.testing.assert_allclose(film.numpy(), [1.5 * (0.09 + 0.81), 0, 0.5 * 0.36])
    np.testing.assert_allclose(pbc.grad(x).numpy(), [1.5 + w[0] * 2 * 1.5 * 0.3,
                                                    0.5 + w[2] * 2 * 0.5 * 0.6,
                                                    1.5 + w[0] * 2 * 1.5 * 0.9], rtol=1e-12)
    np.testing.assert_allclose(pbc.grad(a.scale).numpy(), [0.3 + 0.9 + w[0] * (0.09 + 0.81)],
                               rtol=1e-12)
    np.testing.assert_allclose(pbc.grad(b.scale).numpy(), [0.6 + w[2] * 0.36], rtol=1e-12)


def test_derivative_calls_see_what_the_targets_read_as_it_was():
    # The derivative call runs the targets again, later: an array they read, changed in
    # place after the call, is shown to them as it was.
    x, s = Float64(1.0, 2.0, 3.0), Float64(2.0)
    pbc.enable_grad(x)
    y = pbc.switch(UInt32(0, 1, 0), [lambda v: v * v * s, lambda v: v + s], x,
                   mode='symbolic')
    s += 1.0
    pbc.set_grad(x, 1.0)
    assert pbc.forward_to(y).numpy().tolist() == [4, 1, 12]
    assert s.numpy().tolist() == [3]


@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('reverse', [False, True])
def test_derivative_calls_do_not_repeat_the_targets_side_effects(mode, reverse):
    # A derivative call runs the targets again: the scatters they made (a count of the
    # lanes that called each) happened once, with the call itself.
    calls, c = UInt32(0, 0), Float64(2.0)
    pbc.enable_grad(c)

    def target(k, scale):
        def run(v):
            pbc.scatter_add(calls, UInt32(1), UInt32(k))
            return v * c * scale
        return run

    x = pbc.arange(Float64, 5)
    y = pbc.switch(UInt32(0, 1, 1, 0, 1), [target(0, 1.0), target(1, 3.0)], x, mode=mode)
    if reverse:
        pbc.backward(pbc.sum(y))
        assert pbc.grad(c).numpy().tolist() == [0 + 3 + 3 * 2 + 3 + 3 * 4]
    else:
        pbc.set_grad(c, 1.0)
        assert pbc.forward_to(y).numpy().tolist() == [0, 3, 6, 3, 12]
    assert calls.numpy().tolist() == [2, 3]


class Diffuse(pbc.Object):
    def __init__(self, albedo, texels=None):
        super().__init__()
        self.albedo = Float64(albedo)
        if texels is not None:
            self.texels = texels

    def shade(self, x):
        return self.albedo * pbc.sin(x) + self.albedo * self.albedo


def test_attributes_of_instances_differentiate_in_symbolic_calls():
    # Width-1 attributes are read from a table of the instances' values (closure data):
    # the table carries their derivatives, in both modes and both directions.
    grads, tangents = {}, {}
    for mode in MODES:
        mats = [Diffuse(0.5), Diffuse(0.25), Diffuse(0.8)]
        pbc.enable_grad(*[m.albedo for m in mats])
        ptrs = Ptr[Diffuse]([mats[i] for i in (0, 1, 2, 0, 1)])
        x = Float64(0.1, 0.2, 0.3, 0.4, 0.5)
        pbc.backward(ptrs.shade(x, mode=mode) * Float64(1, 2, 3, 4, 5))
        grads[mode] = [pbc.grad(m.albedo).numpy()[0] for m in mats]
        pbc.set_grad(mats[1].albedo, 1.0)
        tangents[mode] = pbc.forward_to(ptrs.shade(x, mode=mode)).numpy()
    np.testing.assert_allclose(grads['symbolic'], grads['evaluated'], rtol=1e-12)
    np.testing.assert_allclose(tangents['symbolic'], tangents['evaluated'], rtol=1e-12)
    x = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    w, a = np.arange(1, 6), np.array([0.5, 0.25, 0.8, 0.5, 0.25])
    want = [np.sum(((np.sin(x) + 2 * a) * w)[k]) for k in ([0, 3], [1, 4], [2])]
    np.testing.assert_allclose(grads['symbolic'], want, rtol=1e-12)


class Texture:
    """A plain object a material holds (its array is an attribute two levels down)."""

    def __init__(self, texels):
        self.texels = texels


class Textured(pbc.Object):
    def __init__(self, albedo, texels, bump):
        super().__init__()
        self.albedo, self.texels, self.bump = albedo, texels, Texture(bump)

    def shade(self, x, u):
        i = UInt32(u * len(self.texels))
        t = pbc.gather(Float64, self.texels, i)
        b = pbc.gather(Float64, self.bump.texels, UInt32(u * len(self.bump.texels)))
        return self.albedo * t * pbc.sin(x + b)


class Mirror(Textured):
    def shade(self, x, u):
        return pbc.gather(Float64, self.texels, UInt32(u * len(self.texels))) * x * x


def _scene(d=0.0):
    """Materials whose albedos and texture arrays (two share one, each holds a bump
    texture) are the parameters, each moved by d along a direction of its own."""
    shared = Float64(np.array([0.3, 0.7, 0.2]) + d * np.array([1.0, -2.0, 0.5]))
    params = [Float64(0.5 + d), Float64(np.linspace(0.1, 0.9, 5) + d * np.arange(5)),
              Float64(0.25 - d), shared, Float64(1.5 + 2 * d),
              Float64(np.array([0.0, 0.4, -0.3, 0.8]) + d * np.array([3.0, 1.0, 0.0, -1.0]))]
    mats = [Textured(params[0], params[1], params[5]), Textured(params[2], shared, params[5]),
            Mirror(params[4], shared, shared)]
    return params, mats


def _shade(mats, x, mode):
    ptrs = Ptr[Textured]([mats[k] for k in (0, 1, 2, 0, 2, 1, 1)])
    u = Float64(0.05, 0.3, 0.5, 0.95, 0.7, 0.99, 0.4)
    return ptrs.shade(x, u, mode=mode)


X = [0.1, -0.4, 0.7, 1.2, 0.3, -0.8, 0.5]
WEIGHTS = Float64(1.0, -2.0, 0.5, 3.0, 1.5, -1.0, 2.0)


def test_array_attributes_of_instances_differentiate_in_symbolic_calls():
    # Gathers from the instances' texture arrays inside the method are implicit inputs:
    # reverse mode scatter-adds into their gradients, forward mode gathers their tangents,
    # in symbolic calls as in evaluated ones, and as finite differences say.
    directions = [(q - p).numpy() for p, q in zip(_scene(0.0)[0], _scene(1.0)[0])]
    grads, tangents = {}, {}
    for mode in MODES:
        params, mats = _scene()
        x = Float64(X)
        pbc.enable_grad(x, *params)
        pbc.backward(_shade(mats, x, mode) * WEIGHTS)
        grads[mode] = [pbc.grad(p).numpy() for p in [x] + params]
        params, mats = _scene()
        pbc.enable_grad(*params)
        for p, v in zip(params, directions):
            pbc.set_grad(p, Float64(v))
        tangents[mode] = pbc.forward_to(_shade(mats, Float64(X), mode)).numpy()
    for s, e in zip(grads['symbolic'], grads['evaluated']):
        np.testing.assert_allclose(s, e, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(tangents['symbolic'], tangents['evaluated'], rtol=1e-12)
    h = 1e-6
    with pbc.suspend_grad():
        def f(d):
            return _shade(_scene(d)[1], Float64(X), 'evaluated').numpy()
        fd = (f(h) - f(-h)) / (2 * h)
    np.testing.assert_allclose(tangents['symbolic'], fd, rtol=1e-6, atol=1e-8)
    # (reverse mode against the same directional derivative of the weighted sum)
    along = sum(np.dot(g, v) for g, v in zip(grads['symbolic'][1:], directions))
    np.testing.assert_allclose(along, np.dot(fd, WEIGHTS.numpy()), rtol=1e-6)


class Albedo(pbc.Object):
    def __init__(self, texels):
        super().__init__()
        self.texels = texels

    def eval(self, u):
        return pbc.gather(Float64, self.texels, UInt32(u * len(self.texels)))

    def replay(self, u, dL):
        with pbc.resume_grad():
            pbc.backward_from(dL * self.eval(u))
        return u


@pbc.syntax
def _path(ptrs, u, mode):
    i, L = UInt32(0), Float64(1.0)
    while pbc.hint(i < 4, mode=mode, max_iterations=4):
        L = L * ptrs.eval(u, mode=mode)
        u = u * 0.7 + 0.13
        i += 1
    return L


@pbc.syntax
def _replay_path(ptrs, u, mode):
    i = UInt32(0)
    while pbc.hint(i < 4, mode=mode):
        ptrs.replay(u, Float64(1.0), mode=mode)
        u = u * 0.7 + 0.13
        i += 1
    return u


def test_texture_attributes_in_loops_and_replayed_inside_a_method():
    # Reverse mode through a symbolic loop of calls reading each instance's own texture,
    # and Path Replay Backpropagation inside the method (one kernel, symbolically).
    u = Float64(0.1, 0.5, 0.8, 0.3)
    out = {}
    for mode in MODES:
        texels = [Float64(0.5, 0.9, 0.7), Float64(0.2, 0.4)]
        pbc.enable_grad(*texels)
        mats = [Albedo(t) for t in texels]
        ptrs = Ptr[Albedo]([mats[k] for k in (0, 1, 1, 0)])
        pbc.backward(_path(ptrs, u, mode))
        out[mode, 'loop'] = [pbc.grad(t).numpy() for t in texels]
        texels = [Float64(0.5, 0.9, 0.7), Float64(0.2, 0.4)]
        pbc.enable_grad(*texels)
        mats = [Albedo(t) for t in texels]
        ptrs = Ptr[Albedo]([mats[k] for k in (0, 1, 1, 0)])
        with pbc.suspend_grad(), pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
            pbc.kernel_history_clear()
            _replay_path(ptrs, u, mode)
            pbc.eval(*[pbc.grad(t) for t in texels])
            # (of the lanes' width: others may sum a gradient's copies per thread)
            out[mode, 'kernels'] = sum(k['size'] == 4 for k in pbc.kernel_history())
        out[mode, 'replay'] = [pbc.grad(t).numpy() for t in texels]
    for what in ('loop', 'replay'):
        for s, e in zip(out['symbolic', what], out['evaluated', what]):
            np.testing.assert_allclose(s, e, rtol=1e-12)
    # (each lane visits 4 texels; counted by hand from u, u * 0.7 + 0.13, ...)
    assert [g.tolist() for g in out['symbolic', 'replay']] == [[5, 3, 0], [3, 5]]
    assert out['symbolic', 'kernels'] == 1 < out['evaluated', 'kernels']


def test_symbolic_loops_inside_call_targets():
    def target(v):
        return pbc.while_loop((UInt32(0), v), lambda i, y: i < 3,
                              lambda i, y: (i + 1, pbc.sin(y) * 1.1), mode='symbolic',
                              max_iterations=3)[1]

    def run(mode):
        x = Float64(0.1, 0.2, 0.3)
        pbc.enable_grad(x)
        return x, pbc.switch(UInt32(0, 1, 0), [target, lambda v: v * 2.0], x, mode=mode)

    tangents = {}
    for mode in MODES:
        x, y = run(mode)
        pbc.set_grad(x, 1.0)
        tangents[mode] = pbc.forward_to(y).numpy()
    np.testing.assert_allclose(tangents['symbolic'], tangents['evaluated'], rtol=1e-12)
    for mode in MODES:
        x, y = run(mode)
        pbc.backward(y)
        np.testing.assert_allclose(pbc.grad(x).numpy(), tangents['evaluated'], rtol=1e-12)


class Power(pbc.Object):
    """A method with a symbolic loop: x^3 w^3 by repeated multiplication."""

    def __init__(self, w):
        super().__init__()
        self.w = Float64(w)

    @pbc.syntax
    def f(self, x):
        i, y = UInt32(0), Float64(1.0)
        while pbc.hint(i < 3, max_iterations=3):
            y = y * x * self.w
            i += 1
        return y


class Twice(Power):
    def f(self, x):
        return x * 2.0 * self.w


def test_reverse_mode_through_a_loop_in_a_method():
    # (the loop's derivative is code of the target's derivative: its states kept in the
    # lanes, the argument's gradient its loop state, the attribute's through a sink)
    x0 = np.array([0.3, 0.5, 0.7, 0.9])
    for mode in MODES:
        power, twice = Power(1.5), Twice(0.5)
        x = Float64(x0)
        pbc.enable_grad(x, power.w, twice.w)
        ptrs = Ptr[Power]([power, twice, power, power])
        pbc.backward(ptrs.f(x, mode=mode) * Float64(1, 2, 3, 4))
        on = np.array([1, 0, 1, 1], bool)
        w = np.arange(1, 5)
        np.testing.assert_allclose(pbc.grad(x).numpy(),
                                   np.where(on, 3 * x0 ** 2 * 1.5 ** 3, 1.0) * w, rtol=1e-12)
        np.testing.assert_allclose(pbc.grad(power.w).numpy(),
                                   [np.sum((3 * 1.5 ** 2 * x0 ** 3 * w)[on])], rtol=1e-12)
        np.testing.assert_allclose(pbc.grad(twice.w).numpy(), [2 * 0.5 * 2], rtol=1e-12)


@pbc.syntax
def _target_reads_an_outer_loop_variable(a, k):
    s = Float64(1.0) + a
    t = Float64(0.0)

    def r(x):
        return x * s

    i = UInt32(0)
    while pbc.hint(i < (k % 4), max_iterations=8):
        i += 1
        s *= 1.5                        # (s: a variable of the outer loop)
        j = UInt32(0)
        while pbc.hint(j < 2, max_iterations=8):
            j += 1
            t += pbc.switch(k % 2, (r, r), Float64(1.0), mode='symbolic')
    return t


@pbc.syntax
def _target_reads_a_loop_variable(a, k):
    s = Float64(1.0) + a
    t = Float64(0.0)

    def r(x):
        return x * s

    i = UInt32(0)
    while pbc.hint(i < (k % 4), max_iterations=8):
        i += 1
        s *= 1.5                        # (s: a loop variable the target reads)
        t += pbc.switch(k % 2, (r, r), Float64(1.0), mode='symbolic')
    return t


@pytest.mark.parametrize('reverse', [False, True])
@pytest.mark.parametrize(('program', 'calls'), [(_target_reads_a_loop_variable, 1),
                                                (_target_reads_an_outer_loop_variable, 2)])
def test_derivatives_of_a_call_whose_target_reads_a_loop_variable(program, calls, reverse):
    # (the call takes s as an argument: its gradient leaves the derivative call as a result;
    # also s of an outer loop, read by a call in an inner one: only variables of the
    # innermost loop were, and reverse mode raised an error from inside pbc, "a value
    # computed inside a symbolic loop body is used outside")
    a = Float64(0.1, 0.2, 0.3, 0.4)
    pbc.enable_grad(a)
    t = program(a, UInt32(0, 1, 2, 3))
    if reverse:
        pbc.backward(t)
        g = pbc.grad(a)
    else:
        pbc.forward(a)
        g = pbc.grad(t)
    want = [calls * sum(1.5 ** j for j in range(1, n + 1)) for n in range(4)]
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-12)


@pbc.syntax
def _target_reads_a_loop_variable_in_a_dict(a, k):
    box = {'s': Float64(1.0) + a}
    t = Float64(0.0)

    def r(x):
        return x * box['s']

    i = UInt32(0)
    while pbc.hint(i < (k % 4), max_iterations=8):
        i += 1
        box['s'] = box['s'] * 1.5
        t += pbc.switch(k % 2, (r, r), Float64(1.0), mode='symbolic')
    return t


def test_reverse_mode_through_a_call_reading_a_loop_variable_in_a_container():
    # (an entry of a container from an enclosing scope: the call takes the array as an
    # argument too; it raised NotImplementedError, 'pass that array to the call as an
    # argument')
    a = Float64(0.1, 0.2, 0.3, 0.4)
    pbc.enable_grad(a)
    t = _target_reads_a_loop_variable_in_a_dict(a, UInt32(0, 1, 2, 3))
    pbc.backward(t)
    want = [sum(1.5 ** j for j in range(1, n + 1)) for n in range(4)]
    np.testing.assert_allclose(pbc.grad(a).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(t.numpy(), (1 + a.numpy()) * want, rtol=1e-12)


@pbc.syntax
def _target_reads_its_argument_through_a_dict(a, k):
    box = {'s': Float64(1.0) + a}
    t = Float64(0.0)

    def r(x):
        return x * box['s']             # (x is box['s'], passed)

    i = UInt32(0)
    while pbc.hint(i < (k % 4), max_iterations=8):
        i += 1
        box['s'] = box['s'] * 1.5
        t += pbc.switch(k % 2, (r, r), box['s'], mode='symbolic')
    return t


def test_reverse_mode_through_a_call_reading_its_argument_in_a_container_says_what_to_do():
    a = Float64(0.1, 0.2, 0.3, 0.4)
    pbc.enable_grad(a)
    t = _target_reads_its_argument_through_a_dict(a, UInt32(0, 1, 2, 3))
    with pytest.raises(RuntimeError, match='read it through the argument, not through the '
                                           'container'):
        pbc.backward(t)


def _doubles(x):
    x *= 2


def _leaves(x):
    pass


def test_a_call_that_changes_its_argument_in_place_lets_go_of_its_nodes():
    # (the call's node keeps its recording function, which knew the caller's arguments:
    # by id, not holding them, as they come to hold the call's results: a cycle through
    # the AD graph that no collector sees would keep the arrays and nodes alive)

    from pbc import _runtime
    live = _runtime.ad_live_count()
    x = Float64([1.0, 2.0])
    pbc.enable_grad(x)
    y = Float64(x)
    pbc.switch(UInt32([0, 1]), (_doubles, _leaves), y)
    pbc.set_grad(x, 1.0)
    assert pbc.forward_to(y, flags=pbc.ADFlag.ClearNone).numpy().tolist() == [2, 1]
    del x, y
    gc.collect()
    assert _runtime.ad_live_count() == live
