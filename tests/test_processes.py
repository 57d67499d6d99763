"""Work spread over forked processes (pbc.backend.processes): the same results as a plain
loop, whatever the children do."""

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbc.backend import processes

pytestmark = pytest.mark.skipif(not processes.available(), reason='forks on Linux only')


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0, 100), max_size=40), st.integers(1, 6))
def test_balanced_shares_cover_every_item_once_and_evenly(weights, k):
    shares = processes.balanced(weights, k)
    assert len(shares) == k
    assert sorted(i for share in shares for i in share) == list(range(len(weights)))
    loads = [sum(weights[i] for i in share) for share in shares]
    # (greedy, heaviest first: no share exceeds the lightest by more than one item)
    assert max(loads) - min(loads) <= max(weights, default=0) + 1e-9


@pytest.mark.parametrize('count', [0, 1, 2, 7, 30])
@pytest.mark.parametrize('workers', [1, 2, 3])
def test_results_match_a_plain_loop(count, workers):
    items = [(k, 'x' * k) for k in range(count)]
    parent = os.getpid()

    def work(item):
        return item[0] ** 2, item[1].upper(), os.getpid() != parent   # (bytes pickle too)
    results = processes.run(work, items, [k + 1 for k in range(count)], workers)
    assert [r[:2] for r in results] == [(k * k, 'X' * k) for k in range(count)]
    if workers > 1 and count >= workers:
        assert any(r[2] for r in results)          # some came from a child


def test_a_failing_item_raises_its_own_error_here():
    parent = os.getpid()

    def work(k):
        if k == 5:
            raise KeyError(f'item {k}')
        return k

    with pytest.raises(KeyError, match='item 5'):
        processes.run(work, list(range(10)), [1] * 10, 3)
    assert os.getpid() == parent


def test_items_of_a_child_that_dies_are_computed_here():
    parent = os.getpid()

    def work(k):
        if os.getpid() != parent and k % 2:
            os._exit(3)                                # the child dies mid-share
        return -k

    assert processes.run(work, list(range(12)), [1] * 12, 2) == [-k for k in range(12)]


def test_without_forks_or_files_the_work_is_done_here(monkeypatch):
    def no_fork():
        raise OSError('no more processes')

    monkeypatch.setattr(os, 'fork', no_fork)
    assert processes.run(lambda k: k + 1, [1, 2, 3], [1, 1, 1], 3) == [2, 3, 4]
    monkeypatch.undo()

    def no_file():
        raise OSError('read-only file system')

    monkeypatch.setattr(processes.tempfile, 'TemporaryFile', no_file)
    assert processes.run(lambda k: k * 2, [1, 2, 3], [1, 1, 1], 2) == [2, 4, 6]


def test_children_reaped_by_the_system_still_deliver():
    import signal
    old = signal.signal(signal.SIGCHLD, signal.SIG_IGN)   # (children reaped at exit)
    try:
        assert processes.run(lambda k: -k, list(range(8)), [1] * 8, 2) == [-k for k in range(8)]
    finally:
        signal.signal(signal.SIGCHLD, old)
