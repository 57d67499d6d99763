"""Asynchronous launches: eval() returns while the kernel runs; everything that reads or
writes memory from the host waits for it, and memory freed meanwhile is not reused."""

import functools
import os
import warnings

import numpy as np
import pytest
import suite_backend
from suite_backend import Float, UInt32

import pbc
from pbc import _runtime

N = 1 << 20
ROUNDS = 1000         # a kernel of some tens of milliseconds
A, C = 1664525, 1013904223
START = np.random.default_rng(3).integers(0, 2**32, N, dtype=np.uint32)


def slow(x, rounds=ROUNDS):
    """A symbolic loop of `rounds` steps of a hash over x (UInt32): every lane ends with
    a value of its own."""
    i = UInt32(0)
    i, x = pbc.while_loop((i, x), lambda i, x: i < rounds,
                          lambda i, x: (i + 1, (x ^ (x >> 13)) * A + C))
    return x


def reference(x, rounds=ROUNDS):
    x = np.array(x, dtype=np.uint32)
    for _ in range(rounds):
        x = (x ^ (x >> np.uint32(13))) * np.uint32(A) + np.uint32(C)
    return x


@functools.cache
def expected_of_start():
    return reference(START)


@pytest.fixture
def launched():
    """A kernel launched and (almost surely) still running, and what it must compute."""
    expected = expected_of_start()
    y = slow(UInt32(START))
    pbc.eval(y)
    return y, expected


@pytest.mark.llvm_only      # (the CPU thread pool; the stream's order: test_cuda.py)
def test_eval_returns_while_the_kernel_runs_and_reads_wait(launched):
    y, expected = launched
    assert _runtime.launch_running()
    assert np.array_equal(y.numpy(), expected)
    assert not _runtime.launch_running()


@pytest.mark.parametrize('read', ['item', 'numpy', 'reduce', 'export', 'partition',
                                  'gather', 'scatter', 'print'])
def test_every_host_access_waits_for_the_kernel(launched, read, capsys):
    y, expected = launched
    if read == 'item':
        assert y[N - 1] == expected[-1]
    elif read == 'numpy':
        assert np.array_equal(y.numpy(), expected)
    elif read == 'reduce':
        assert int(pbc.max(y)[0]) == int(expected.max())
    elif read == 'export':                      # a zero-copy view of the buffer
        assert np.array_equal(np.asarray(y), expected)
    elif read == 'partition':
        lanes = _runtime.partition(y & 3, [0, 1, 2, 3])
        for k in range(4):
            assert np.array_equal(lanes[k].numpy(), np.flatnonzero((expected & 3) == k))
    elif read == 'gather':                      # a kernel reading it: runs after it
        z = pbc.gather(UInt32, y, UInt32(N - 1, 0)) ^ 1
        assert z.numpy().tolist() == [int(expected[-1]) ^ 1, int(expected[0]) ^ 1]
    elif read == 'scatter':                     # copy-on-write of a shared buffer
        alias = UInt32(y)
        pbc.scatter(y, UInt32(7), UInt32(0))
        assert np.array_equal(alias.numpy(), expected)
        assert y[0] == 7 and y[1] == expected[1]
    else:
        pbc.print(y[N - 1])
        assert capsys.readouterr().out.strip() == str(expected[-1])


@pytest.mark.llvm_only          # (host buffers; the device pool's order is tested in test_cuda.py)
def test_memory_freed_while_a_kernel_runs_is_not_reused():
    # The kernel reads `x`; its buffer is freed while it runs (nothing else holds it), and a
    # new array of the same size is made and filled: it must not get that buffer yet.
    start = np.arange(N, dtype=np.uint32)
    x = UInt32(start)
    pbc.eval(x)
    address = _runtime.data_address(x)
    y = slow(x)
    pbc.eval(y)
    assert _runtime.launch_running()
    in_use = pbc.whos(print_table=False)['memory']
    del x
    assert pbc.whos(print_table=False)['memory'] == in_use      # (not given back yet)
    other = UInt32(np.full(N, 12345, dtype=np.uint32))
    assert _runtime.data_address(other) != address
    assert np.array_equal(y.numpy(), reference(start))         # (waits: x is free now)
    assert np.all(other.numpy() == 12345)
    z = UInt32(np.zeros(N, dtype=np.uint32))                    # (reuses the newest free)
    assert _runtime.data_address(z) == address


def test_the_next_launch_runs_after_the_one_in_flight(launched):
    # Kernels run in launch order: the second reads what the first writes.
    y, expected = launched
    z = y * 3 + 1
    pbc.eval(z)
    w = slow(z, 10)
    pbc.eval(w)
    assert np.array_equal(w.numpy(), reference(expected * np.uint32(3) + np.uint32(1), 10))


def test_sync_thread_and_launch_blocking_wait(launched):
    y, expected = launched
    pbc.sync_thread()
    assert not _runtime.launch_running()
    with pbc.scoped_set_flag(pbc.JitFlag.LaunchBlocking, True):
        z = slow(y, 50)
        pbc.eval(z)
        assert not _runtime.launch_running()
    assert np.array_equal(z.numpy(), reference(expected, 50))


def test_one_thread_launches_synchronously():
    old = _runtime.thread_count()
    _runtime.set_thread_count(1)
    try:
        y = slow(UInt32(np.arange(N, dtype=np.uint32)), 20)
        pbc.eval(y)
        assert not _runtime.launch_running()
        assert np.array_equal(y.numpy(), reference(np.arange(N), 20))
    finally:
        _runtime.set_thread_count(old)


@pytest.mark.skipif(not hasattr(os, 'fork'), reason='needs os.fork')
def test_fork_while_a_kernel_runs_gives_the_child_its_result(launched):
    y, expected = launched
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)   # (fork with threads running)
        pid = os.fork()
    if pid == 0:                                  # the child: its pool starts afresh
        ok = False
        try:
            ok = np.array_equal(y.numpy(), expected) and \
                int(pbc.sum(Float(1.0, 2.0, 3.0))[0]) == 6
        except RuntimeError as e:                 # (CUDA cannot run in a forked child)
            ok = suite_backend.NAME == 'cuda' and "'spawn'" in str(e)
        finally:
            os._exit(0 if ok else 1)              # (never back into the test session)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert np.array_equal(y.numpy(), expected)


def test_a_repeated_evaluated_call_launches_each_target_as_it_is_traced():
    # The second call finds the targets' kernels compiled: each launches once traced, and
    # the next target is traced while it runs.
    rng = np.random.default_rng(7)
    xs = rng.integers(0, 2**32, N, dtype=np.uint32)
    keys = rng.integers(0, 4, N).astype(np.uint32)
    x, index = UInt32(xs), UInt32(keys)
    targets = [lambda v, k=k: slow(v, 10 * (k + 1)) + k for k in range(4)]
    expected = np.zeros(N, dtype=np.uint32)
    for k in range(4):
        expected[keys == k] = reference(xs[keys == k], 10 * (k + 1)) + np.uint32(k)
    for _ in range(3):
        y = pbc.switch(index, targets, x, mode='evaluated')
        pbc.eval(y)
        assert np.array_equal(y.numpy(), expected)


def test_two_python_threads_launching_get_their_own_results():
    # A thread waiting for a launch releases the GIL: the other may trace, launch (finishing
    # the first one's kernel) and free memory meanwhile.
    import threading
    results, errors = {}, []

    def work(seed):
        try:
            rng = np.random.default_rng(seed)
            for _ in range(5):
                start = rng.integers(0, 2**32, 1 << 16, dtype=np.uint32)
                y = slow(UInt32(start), 50)
                pbc.eval(y)
                z = (y ^ 5).numpy()
                results.setdefault(seed, []).append(
                    np.array_equal(z, reference(start, 50) ^ np.uint32(5)))
        except Exception as e:          # (reported by the main thread)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results == {1: [True] * 5, 2: [True] * 5}
