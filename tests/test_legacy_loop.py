"""pbc.Loop (Dr.Jit 0.x's loop object) and in-place changes: its state, arrays outside it,
branches around it and derivatives through it (pbc/legacy_loop.py)."""

import numpy as np
import pytest
from suite_backend import Array3f, Float, UInt32

import pbc
from pbc.errors import StateError


def test_state_changed_in_place_and_through_an_alias(mode):
    i, x, v = UInt32(0, 1, 2), Float(1, 2, 3), Array3f(1, 2, 3)
    alias = x
    loop = pbc.Loop('a', state=lambda: (i, x, v))
    while loop(i < 3):
        x += i
        v.y *= 2
        i += 1
    assert x.numpy().tolist() == [4, 5, 5] and alias is x
    assert v.y.numpy().tolist() == [16, 8, 4]        # (width 1: as wide as the loop after it)
    assert i.numpy().tolist() == [3, 3, 3]


def test_an_array_outside_the_state_changed_in_place(mode):
    i, x, y = UInt32(0, 1, 2), Float(1, 2, 3), Float(5, 5, 5)
    loop = pbc.Loop('a', state=lambda: (i, x))
    if mode == 'evaluated':
        while loop(i < 3):
            x += 1
            y += 1
            i += 1
        assert y.numpy().tolist() == [8, 7, 6] and x.numpy().tolist() == [4, 4, 4]
        return
    # (a symbolic loop has recorded its state when it sees the change: every variable keeps
    # its value from before the loop)
    with pytest.raises(StateError, match='not part of the loop state'):
        while loop(i < 3):
            x += 1
            y += 1
            i += 1
    assert pbc._runtime.recording_depth() == 0
    assert (i.numpy().tolist(), x.numpy().tolist(), y.numpy().tolist()) == \
        ([0, 1, 2], [1, 2, 3], [5, 5, 5])


def test_a_state_variable_bound_to_an_array_from_outside_is_an_error(mode):
    i, x, y = UInt32(0, 1, 2), Float(1, 2, 3), Float(5, 6, 7)
    state = [i, x]
    loop = pbc.Loop('a', state=lambda: tuple(state))
    with pytest.raises(StateError, match='array from before the loop'):
        while loop(state[0] < 3):
            state[0] += 1
            state[1] = y
    assert (i.numpy().tolist(), x.numpy().tolist(), y.numpy().tolist()) == \
        ([0, 1, 2], [1, 2, 3], [5, 6, 7])


def test_side_effects_of_an_iteration_stay_on_its_lanes(mode):
    i, acc = UInt32(0, 1, 2), Float(0, 0, 0)
    loop = pbc.Loop('a', state=lambda: (i,))
    while loop(i < 3):
        pbc.scatter_add(acc, Float(1), UInt32(0, 1, 2))
        i += 1
    assert acc.numpy().tolist() == [3, 2, 1]


def test_a_loop_in_a_branch_changes_the_state_on_the_branchs_lanes(mode):
    # (the loop runs in a helper: the branch does not see its variables change in place)
    def helper(st):
        i = UInt32(0)
        loop = pbc.Loop('a', state=lambda: (i, st[0]))
        while loop(i < 3):
            st[0] += 1
            i += 1

    @pbc.syntax
    def f(x, m):
        st = [x]
        if m > 0:
            helper(st)
        return x

    x = Float(1, 2, 3)
    assert f(x, UInt32(1, 0, 1)).numpy().tolist() == [4, 2, 6]


def test_an_exception_in_the_body_leaves_the_state_as_it_was(mode):
    i, x = UInt32(0, 1), Float(1, 2)

    def broken(i, x):
        loop = pbc.Loop('broken', state=lambda: (i, x))
        while loop(i < 3):
            x += 1
            raise KeyError('in the body')

    with pytest.raises(KeyError):
        broken(i, x)
    assert pbc._runtime.recording_depth() == 0
    assert (i.numpy().tolist(), x.numpy().tolist()) == ([0, 1], [1, 2])
    assert pbc.while_loop((UInt32(0, 1),), lambda i: i < 3,
                          lambda i: (i + 1,))[0].numpy().tolist() == [3, 3]


@pytest.mark.parametrize('direction', ('forward', 'backward'))
def test_derivatives_of_state_and_of_arrays_outside_it(direction):
    # (a state that carries derivatives: the loop runs evaluated, whatever the flag says)
    x = Float(1, 2, 3)
    pbc.enable_grad(x)
    r, q, i = x * 0 + 1, x * 1, UInt32(0)
    loop = pbc.Loop('a', state=lambda: (i, r))
    while loop(i < UInt32(1, 2, 3)):
        r *= x                                  # r = x ** trips
        q += x * x                              # outside the state: q = x + trips x^2
        i += 1
    if direction == 'forward':
        pbc.set_grad(x, 1.0)
        pbc.forward_to(r, q)
        dr, dq = pbc.grad(r), pbc.grad(q)
    else:
        pbc.backward(r)
        dr = pbc.grad(x)
        pbc.clear_grad(x)
        pbc.backward(q)
        dq = pbc.grad(x)
    xs, n = np.array([1, 2, 3.0]), np.array([1, 2, 3.0])
    assert np.allclose(r.numpy(), xs ** n) and np.allclose(q.numpy(), xs + n * xs * xs)
    assert np.allclose(dr.numpy(), n * xs ** (n - 1))
    assert np.allclose(dq.numpy(), 1 + 2 * n * xs)


def test_a_state_variable_changed_in_place_then_rebound(mode):
    # Python: the caller's object takes the in-place change (an evaluated loop: on each
    # iteration's lanes); a symbolic loop, which records one body for all iterations, gives
    # it back its value from before the loop, as @pbc.syntax loops do (semantics.md, rule 4)
    i, x = UInt32(0, 1, 3), Float(1, 2, 3)
    first = x
    loop = pbc.Loop('a', state=lambda: (i, x))
    while loop(i < 3):
        x *= 2
        x = x + 1
        i += 1
    assert x.numpy().tolist() == [15, 11, 3]
    assert first.numpy().tolist() == ([2, 4, 3] if mode == 'evaluated' else [1, 2, 3])


def test_an_alias_of_the_state_changed_in_place(mode):
    i, x = UInt32(0, 1, 2), Float(1, 2, 3)
    y = x
    loop = pbc.Loop('a', state=lambda: (i, x))
    while loop(i < 3):
        y += 1
        i += 1
    assert x.numpy().tolist() == [4, 4, 4] and y is x


def test_a_state_naming_one_array_twice(mode):
    i, x = UInt32(0, 1, 3), Float(1, 2, 3)
    lst = [x]
    loop = pbc.Loop('a', state=lambda: (i, x, lst))
    while loop(i < 3):
        lst[0] += 1
        x *= 2
        i += 1
    assert x.numpy().tolist() == [22, 14, 3] and lst[0] is x


def test_rebinding_one_of_two_names_of_a_state_array(mode):
    i, x = UInt32(0, 1, 3), Float(1, 2, 3)
    y = x
    loop = pbc.Loop('a', state=lambda: (i, x, y))
    if mode == 'evaluated':                     # (Python's meaning, lane by lane)
        while loop(i < 3):
            x = x + 1
            i += 1
        assert x.numpy().tolist() == [4, 4, 3] and y.numpy().tolist() == [1, 2, 3]
        return
    with pytest.raises(StateError, match='several state variables that name one array'):
        while loop(i < 3):
            x = x + 1
            i += 1
    assert (i.numpy().tolist(), y.numpy().tolist()) == ([0, 1, 3], [1, 2, 3])


def test_a_loop_whose_body_raises_in_a_branch_leaves_nothing_behind(mode):
    # (the branch ends the loop as the error leaves it: no mask or recording stays, and
    # later code runs on every lane)
    @pbc.syntax
    def f(x, k):
        if k > 1:
            i = UInt32(0)
            loop = pbc.Loop('a', state=lambda: (i, x))
            while loop(i < 3):
                x += 1
                i += 1
                raise KeyError('in the body')
        return x

    x = Float(1, 2, 3, 4)
    with pytest.raises(Exception, match='in the body'):
        f(x, UInt32(0, 1, 2, 3))
    assert pbc._runtime.recording_depth() == 0
    assert pbc._runtime.mask_top(type(x > 0)) is None
    assert x.numpy().tolist() == [1, 2, 3, 4]
    acc = Float(0, 0, 0, 0)
    pbc.scatter_add(acc, Float(1), UInt32(0, 1, 2, 3))
    assert acc.numpy().tolist() == [1, 1, 1, 1]


def test_state_of_one_lane_grows_to_the_loops_width(mode):
    i, x = UInt32(0), Float(1, 2, 3)
    loop = pbc.Loop('a', state=lambda: (i, x))
    while loop(i < 2):
        x += 1
        i += 1
    assert i.numpy().tolist() == [2, 2, 2] and x.numpy().tolist() == [3, 4, 5]


def test_derivatives_read_in_a_symbolic_loop_are_an_error_that_says_what_to_do():
    x = Float(1, 2, 3)
    pbc.enable_grad(x)
    r, i = Float(1), UInt32(0)
    loop = pbc.Loop('a', state=lambda: (i, r))
    with pytest.raises(NotImplementedError, match='SymbolicLoops off'):
        while loop(i < 3):
            r *= x
            i += 1
    del loop
    assert (i.numpy().tolist(), r.numpy().tolist()) == ([0], [1])
    with pbc.scoped_set_flag(pbc.JitFlag.SymbolicLoops, False):
        loop = pbc.Loop('a', state=lambda: (i, r))
        while loop(i < 3):
            r *= x
            i += 1
    pbc.backward(r)
    assert r.numpy().tolist() == [1, 8, 27] and pbc.grad(x).numpy().tolist() == [3, 12, 27]
