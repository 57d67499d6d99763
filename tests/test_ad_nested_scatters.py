"""Derivatives of scatter-adds in loops and calls nested in other loops' bodies and calls'
targets (a film that a method splats into, inside a path loop): the outermost loop or call
makes the array's new value one of its results, the nested ones reach it through their
tokens. Forward and reverse mode, symbolic and evaluated, against the full Jacobian by
central finite differences (float64)."""

import numpy as np
import pytest
from suite_backend import Float64, UInt32

import pbc

MODES = ('symbolic', 'evaluated')
LANE = UInt32(0, 1, 2)


def loop_in_loop(x, p, film, mode):
    def inner(j, y):
        pbc.scatter_add(film, y * p, (LANE + j) % 3)
        return j + 1, y * 0.5

    def outer(i, y):
        _, y = pbc.while_loop((UInt32(0), y), lambda j, y: j < 2, inner, mode=mode,
                              max_iterations=3)
        return i + 1, y + p
    return pbc.while_loop((UInt32(0), Float64(x)), lambda i, y: i < 2, outer, mode=mode,
                          max_iterations=3)[1]


def _splat(film, p):
    def target(v, k):
        pbc.scatter_add(film, v * v * p, k)
        return v * p
    return target


def call_in_loop(x, p, film, mode):
    targets = [_splat(film, p), lambda v, k: v + p]

    def body(i, y):
        return i + 1, pbc.switch(UInt32(0, 1, 0) ^ (i & 1), targets, y, (LANE + i) % 3,
                                 mode=mode)
    return pbc.while_loop((UInt32(0), Float64(x)), lambda i, y: i < 3, body, mode=mode,
                          max_iterations=4)[1]


def loop_in_call(x, p, film, mode):
    def target(v, k):
        def body(j, y):
            pbc.scatter_add(film, y * p, (k + j) % 3)
            return j + 1, y * p
        return pbc.while_loop((UInt32(0), v), lambda j, y: j < 2, body, mode=mode,
                              max_iterations=3)[1]
    return pbc.switch(UInt32(0, 1, 0), [target, lambda v, k: v * 2.0], x, 2 - LANE,
                      mode=mode)


def call_in_loop_in_loop(x, p, film, mode):
    targets = [_splat(film, p), lambda v, k: pbc.sin(v) * p]

    def inner(j, y):
        return j + 1, pbc.switch((LANE + j) % 2, targets, y, (LANE * 2 + j) % 3, mode=mode)

    def outer(i, y):
        _, y = pbc.while_loop((UInt32(0), y), lambda j, y: j < i + 1, inner, mode=mode,
                              max_iterations=3)
        return i + 1, y * 0.9
    return pbc.while_loop((UInt32(0), Float64(x)), lambda i, y: i < 2, outer, mode=mode,
                          max_iterations=3)[1]


@pbc.syntax
def returning_early(x, p, film, mode):
    # (the lanes that return stay out of the loops: their scatters write nothing)
    if pbc.hint(LANE == 1, mode=mode):
        return x * 2.0
    i = UInt32(0)
    while pbc.hint(i < 2, mode=mode, max_iterations=3):
        j = UInt32(0)
        while pbc.hint(j < i + 1, mode=mode, max_iterations=3):
            pbc.scatter_add(film, x * p, (LANE + 1) % 3)
            x = pbc.switch(LANE % 2, [_splat(film, p), lambda v, k: v * p], x, 2 - LANE,
                           mode=mode)
            j += 1
        i += 1
    return x


CASES = [loop_in_loop, call_in_loop, loop_in_call, call_in_loop_in_loop, returning_early]
X, P, FILM = np.array([0.3, -0.5, 0.8]), 0.7, np.array([1.0, 2.0, 3.0])


def run(case, mode, v):
    """(x, p, the film before, the result, the film after): v holds x (3), p (1) and the
    film before (3), which carry derivatives where some are enabled."""
    x, p, f = Float64(v[:3]), Float64(v[3]), Float64(v[4:])
    pbc.enable_grad(x, p, f)
    film = Float64(f)               # (a copy: the scatters change it in place)
    return x, p, f, case(x, p, film, mode), film


@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('case', CASES, ids=lambda c: c.__name__)
def test_scatter_adds_in_nested_loops_and_calls_differentiate(case, mode):
    v0, h = np.concatenate([X, [P], FILM]), 1e-6
    with pbc.suspend_grad():
        def outputs(v):
            *_, y, film = run(case, 'evaluated', v)
            return np.concatenate([y.numpy(), film.numpy()])
        J = np.stack([(outputs(v0 + h * e) - outputs(v0 - h * e)) / (2 * h)
                      for e in np.eye(7)], axis=1)
    w, d = np.linspace(-1, 2, 6), np.linspace(0.5, 1.5, 7)
    x, p, f, y, film = run(case, mode, v0)
    pbc.backward(pbc.sum(y * Float64(w[:3])) + pbc.sum(film * Float64(w[3:])))
    got = np.concatenate([pbc.grad(a).numpy() for a in (x, p, f)])
    np.testing.assert_allclose(got, J.T @ w, rtol=1e-6, atol=1e-9)
    x, p, f = Float64(v0[:3]), Float64(v0[3]), Float64(v0[4:])
    pbc.enable_grad(x, p, f)
    for a, t in ((x, d[:3]), (p, d[3]), (f, d[4:])):
        pbc.set_grad(a, Float64(t))
    film = Float64(f)
    y = case(x, p, film, mode)
    got = np.concatenate([t.numpy() for t in pbc.forward_to(y, film)])
    np.testing.assert_allclose(got, J @ d, rtol=1e-6, atol=1e-9)
