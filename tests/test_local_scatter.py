"""The runtime's scatter_add_local (docs/semantics.md): additions into the copy of a target
that belongs to the thread running the lane, without atomics; the copies' sum is the sum
of every lane's additions. Derivatives use it (rules.Spread); so these tests call the
runtime directly, against NumPy, on as many threads as the machine has and on more."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from suite_backend import Bool, Float, Float64, Int32, UInt32, UInt64

import pbc
from pbc import _runtime

TYPES = {'float32': Float, 'float64': Float64, 'int32': Int32, 'uint64': UInt64}


def _copies_sum(buffer, size):
    return buffer.numpy().reshape(-1, size).sum(axis=0)


def _local_sum(T, values, index, mask, size, copies=None):
    """The copies' sum after scatter_add_local of values at index (where mask)."""
    buffer = T(np.zeros(size * (copies or _runtime.thread_count()), dtype=T.Type))
    _runtime.scatter_add_local(buffer, T(values), index, mask, size)
    return buffer


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(TYPES)), st.integers(1, 5000), st.integers(1, 40),
       st.integers(0, 2**31 - 1), st.booleans())
def test_the_copies_add_up_to_every_lane(tname, n, size, seed, one_entry):
    rng = np.random.default_rng(seed)
    T = TYPES[tname]
    values = rng.integers(0 if tname == 'uint64' else -50, 50, n).astype(T.Type)
    index = np.zeros(n, np.uint32) if one_entry else rng.integers(0, size + 3, n)
    mask = rng.random(n) < 0.8
    buffer = _local_sum(T, values, UInt32(0) if one_entry else UInt32(index), Bool(mask),
                        size)
    keep = mask & (index < size)
    want = np.bincount(index[keep], weights=values[keep].astype(np.float64), minlength=size)
    np.testing.assert_array_equal(_copies_sum(buffer, size), want[:size])


@pytest.mark.llvm_only          # (CPU threads' copies)
@pytest.mark.parametrize('later', [1, 4])
def test_a_kernel_runs_on_no_more_threads_than_its_target_has_copies(later):
    # Traced with some number of threads (the target's copies), evaluated with `later`
    # threads: a thread without a copy of its own would add into none, or into another's.
    before = _runtime.thread_count()
    try:
        for copies in (2, 1):
            pbc.set_thread_count(copies)
            n = 1 << 18
            buffer = Float(np.zeros(copies * 5, np.float32))
            _runtime.scatter_add_local(buffer, Float(1.0), pbc.arange(UInt32, n) % 5, True, 5)
            pbc.set_thread_count(later)
            np.testing.assert_array_equal(_copies_sum(buffer, 5),
                                          np.bincount(np.arange(n) % 5))
    finally:
        pbc.set_thread_count(before)


def test_inside_a_symbolic_loop():
    n, size = 10_000, 7
    buffer = Float64(np.zeros(size * _runtime.thread_count()))

    def body(i, x):
        _runtime.scatter_add_local(buffer, x, (i + pbc.arange(UInt32, n)) % size, True, size)
        return i + 1, x * 0.5

    pbc.while_loop((UInt32(0), Float64(1.0)), lambda i, x: i < 3, body, mode='symbolic')
    lanes = np.arange(n)
    want = sum(np.bincount((lanes + i) % size, minlength=size) * 0.5 ** i for i in range(3))
    np.testing.assert_allclose(_copies_sum(buffer, size), want, rtol=1e-12)


def test_a_target_that_holds_no_whole_copies_is_an_error():
    with pytest.raises(ValueError, match='does not hold copies of 4'):
        _runtime.scatter_add_local(Float(np.zeros(6, np.float32)), Float(1.0), UInt32(0),
                                   True, 4)


@pytest.mark.parametrize('T', [Float, Float64])
def test_lanes_that_add_nothing_leave_every_entry_as_it_was(T):
    # Masked-off and out-of-range lanes must not touch any entry, not even turn a -0.0
    # into +0.0 (they add the neutral element, -0.0, into entry 0 of their copy).
    size, n = 3, 1000
    copies = _runtime.thread_count()
    buffer = T(np.full(size * copies, -0.0, T.Type))
    index = UInt32(np.where(np.arange(n) % 2 == 0, 0, size + 1).astype(np.uint32))
    _runtime.scatter_add_local(buffer, T(np.ones(n, T.Type)), index, Bool(np.zeros(n, bool)),
                               size)
    _runtime.scatter_add_local(buffer, T(np.ones(n, T.Type)), UInt32(size + 1), True, size)
    assert np.all(np.signbit(buffer.numpy()))
