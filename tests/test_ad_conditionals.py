"""Derivatives of scatters inside conditionals: a branch's scatter writes only the lanes
that take it, so its derivatives must too, and the node a scatter gives the array it
writes in place carries on into the other branch and out of the conditional. Symbolic and
evaluated conditionals, forward and reverse mode, against the Jacobian by central
finite differences (float64)."""

import numpy as np
import pytest
from suite_backend import Bool, Float64, UInt32

import pbc

K = UInt32(np.arange(7))
S = Bool([True, False, True, True, False, True, False])
X = np.linspace(0.1, 0.7, 7)
W = np.linspace(-1, 2, 7)


@pbc.syntax
def _scatters(x, mode):
    acc = pbc.zeros(Float64, 7)
    if pbc.hint(S, mode=mode):
        if pbc.hint(K > 3, mode=mode):
            pbc.scatter_add(acc, x * 0.5, (K * 2 + 2) % 7)
        else:
            pbc.scatter_add(acc, x * x, UInt32(1))
        x = x * 3.0
    else:
        pbc.scatter(acc, pbc.sin(x), (K * 3 + 6) % 7)      # (a permutation: no ties)
    return x + pbc.gather(Float64, acc, (K * 5 + 1) % 7)


def _jacobian(mode, h=1e-6):
    with pbc.suspend_grad():
        return np.stack([(_scatters(Float64(X + h * e), mode).numpy()
                          - _scatters(Float64(X - h * e), mode).numpy()) / (2 * h)
                         for e in np.eye(7)], axis=1)


@pytest.mark.parametrize('mode', ['symbolic', 'evaluated'])
def test_scatters_in_branches_differentiate_only_the_lanes_that_took_them(mode):
    J = _jacobian(mode)
    x = Float64(X)
    pbc.enable_grad(x)
    pbc.backward(_scatters(x, mode) * Float64(W))
    np.testing.assert_allclose(pbc.grad(x).numpy(), J.T @ W, rtol=1e-6, atol=1e-9)
    d = np.linspace(1.0, 2.0, 7)
    x = Float64(X)
    pbc.enable_grad(x)
    pbc.set_grad(x, Float64(d))
    np.testing.assert_allclose(pbc.forward_to(_scatters(x, mode)).numpy(), J @ d, rtol=1e-6,
                               atol=1e-9)


@pbc.syntax
def _nested(x0, x1, a, n, s, k, mode):
    i = UInt32(0)
    while pbc.hint(i < n, mode=mode, max_iterations=8):
        i += 1
        if pbc.hint(k > 3, mode=mode):
            if pbc.hint(i == 1, mode=mode):
                if pbc.hint(i + k > 4, mode=mode):
                    x0 = pbc.sin(a)
                elif pbc.hint(i == 2, mode=mode):
                    if pbc.hint(s, mode=mode):
                        x1 = a
                        if pbc.hint(~s, mode=mode):
                            x1 = pbc.cos(x1) * x1
    return x0 + 2.0 * x1


def test_branches_that_scatter_nothing_keep_their_arrays_derivatives():
    # (Branches in a loop's body, whose working copies have nodes of their own: only a
    # scatter's new node is the caller's array's.)
    args = (UInt32([0, 1, 2, 3, 1, 2, 3]), S, K)
    grads = {}
    for mode in ('symbolic', 'evaluated'):
        x0, x1, a = Float64(X), Float64(X[::-1]), Float64(0.4)
        pbc.enable_grad(x0, x1, a)
        pbc.backward(_nested(x0, x1, a, *args, mode) * Float64(W))
        grads[mode] = [pbc.grad(v).numpy() for v in (x0, x1, a)]
    with pbc.suspend_grad():
        h = 1e-6
        da = (_nested(Float64(X), Float64(X[::-1]), Float64(0.4 + h), *args, 'evaluated')
              - _nested(Float64(X), Float64(X[::-1]), Float64(0.4 - h), *args, 'evaluated'))
    want = np.dot(da.numpy() / (2 * h), W)
    for mode in grads:
        np.testing.assert_allclose(grads[mode][2], [want], rtol=1e-6)
    for s, e in zip(grads['symbolic'], grads['evaluated']):
        np.testing.assert_allclose(s, e, rtol=1e-12)
