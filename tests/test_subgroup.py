"""pbc.subgroup_any: a vote among the active lanes that run together. Which lanes share a
subgroup is the backend's choice; what every backend guarantees is tested here (a lane
votes in its own subgroup, lanes that do not run the code do not vote), and the LLVM
backend's grouping, aligned vectors of at least 4 lanes, where it is known."""

import numpy as np
import pytest
from suite_backend import Bool, Float, UInt32

import pbc

N = 128


def lanes():
    return pbc.arange(UInt32, N)


@pytest.mark.parametrize('seed', range(4))
def test_a_vote_is_true_where_the_mask_is_and_only_near_a_true_lane(seed):
    mask = np.random.default_rng(seed).random(N) < 0.05
    got = pbc.subgroup_any(Bool(mask)).numpy()
    assert np.all(got[mask])
    # LLVM: the lanes of one vector (4 to 32 of them, from a multiple of that)
    assert any(np.array_equal(got, np.repeat(mask.reshape(-1, w).any(axis=1), w))
               for w in (4, 8, 16, 32))


def test_a_vote_of_no_lane_is_false_and_literals_fold():
    assert not pbc.subgroup_any(Bool(np.zeros(N, bool))).numpy().any()
    assert pbc.subgroup_any(True) is True and pbc.subgroup_any(False) is False
    assert pbc.subgroup_any(Bool(True)).numpy().all()


def test_only_the_lanes_of_a_branch_vote_in_it():
    i = lanes()

    @pbc.syntax
    def f(i):
        v = Bool(False)
        if i >= 2:                        # lane 0, the only True one, is not in the branch
            v = pbc.subgroup_any(i == 0)
        return v

    assert not f(i).numpy().any()


@pytest.mark.parametrize('mode', ['symbolic', 'evaluated'])
def test_lanes_that_left_a_loop_do_not_vote_in_it(mode):
    # Lane 0 runs one iteration and votes True in it; the others run three and vote False.
    # Each counts the iterations in which its subgroup's vote was True: 1 at most (a lane
    # that left the loop keeps no vote), and 1 for lanes that share lane 0's subgroup.
    i = lanes()

    @pbc.syntax
    def f(i, mode):
        trips = pbc.select(i == 0, UInt32(1), UInt32(3))
        step, count = UInt32(0), UInt32(0)
        while pbc.hint(step < trips, mode=mode):
            count += UInt32(pbc.subgroup_any(i == 0))
            step += 1
        return count

    got = f(i, mode).numpy()
    assert got[0] == 1 and got.max() == 1
    if mode == 'symbolic':                  # (one kernel: lanes 0-3 share a vector)
        assert np.all(got[:4] == 1)


def test_a_vote_needs_a_bool():
    with pytest.raises(TypeError, match='subgroup_any: expects a Bool'):
        pbc.subgroup_any(Float(1, 2))
