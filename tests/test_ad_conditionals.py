"""Derivatives of scatters inside conditionals: a branch's scatter writes only the lanes
that take it, so its derivatives must too, and the node a scatter gives the array it
writes in place carries on into the other branch and out of the conditional. Symbolic and
evaluated conditionals, forward and reverse mode, against the Jacobian by central
finite differences (float64)."""

import numpy as np
import pytest

import pbc
from pbc.llvm import Bool, Float64, UInt32

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
