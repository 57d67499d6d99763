"""pbc.alloc_local / pbc.Local: per-lane arrays read and written at JIT positions, in loops
and branches, against per-lane Python lists."""

import dataclasses

import numpy as np
import pytest
import suite_backend
from hypothesis import given, settings
from hypothesis import strategies as st
from suite_backend import PCG32, Bool, Float, UInt32

import pbc

MODES = ('symbolic', 'evaluated')


@pytest.mark.parametrize('mode', MODES)
def test_sort_each_lane_in_local_memory(mode):
    # insertion sort of n random values per lane, inside nested JIT loops
    n, lanes = 8, 50
    rng = np.random.default_rng(3)
    data = rng.integers(0, 1000, (lanes, n)).astype(np.uint32)

    @pbc.syntax
    def sort(columns, mode):
        s = pbc.alloc_local(UInt32, n)
        i = UInt32(0)
        while pbc.hint(i < n, mode=mode):
            s[i] = pbc.gather(UInt32, columns, pbc.arange(UInt32, lanes) * n + i)
            i += 1
        i = UInt32(1)
        while pbc.hint(i < n, mode=mode):
            j = UInt32(i)
            while pbc.hint((j > 0) & (s[j - 1] > s[j]), mode=mode):
                s[j - 1], s[j] = s[j], s[j - 1]
                j -= 1
            i += 1
        return [s[k] for k in range(n)]

    out = sort(UInt32(data.ravel()), mode)
    np.testing.assert_array_equal(np.stack([o.numpy() for o in out], 1), np.sort(data, 1))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 6), st.lists(st.tuples(st.integers(-1, 7), st.integers(0, 99),
                                             st.booleans()), min_size=1, max_size=12),
       st.sampled_from(MODES))
def test_random_reads_and_writes_match_python_lists(size, ops, mode):
    lanes = 5
    # per lane: a position (out of range for some), a value, a mask
    ref = [[7] * size for _ in range(lanes)]
    s = pbc.alloc_local(UInt32, size, UInt32(7))
    reads, expect = [], []
    for k, (pos, value, masked) in enumerate(ops):
        p = [(pos + lane) % (size + 2) for lane in range(lanes)]       # some out of range
        m = [not masked or lane % 2 == 0 for lane in range(lanes)]
        idx, active = UInt32(p), Bool(m)
        if k % 2:
            s.write(UInt32([value + lane for lane in range(lanes)]), idx, active)
            for lane in range(lanes):
                if m[lane] and p[lane] < size:
                    ref[lane][p[lane]] = value + lane
        else:
            reads.append(s.read(idx, active))
            expect.append([ref[lane][p[lane]] if m[lane] and p[lane] < size else 0
                           for lane in range(lanes)])
    def lanes_of(x):                      # (a value never written has width 1)
        return np.broadcast_to(x.numpy(), lanes).tolist()
    for r, e in zip(reads, expect):
        assert lanes_of(r) == e
    for k in range(size):
        assert lanes_of(s[k]) == [ref[lane][k] for lane in range(lanes)]


@pytest.mark.parametrize('mode', MODES)
def test_writes_in_branches_apply_to_their_lanes(mode):
    @pbc.syntax
    def f(i, mode):
        s = pbc.alloc_local(UInt32, 2, value=pbc.zeros(UInt32, 3))
        if pbc.hint(i > 0, mode=mode):
            s[0] = 10
        else:
            s[1] = 11
        return s[0], s[1]

    a, b = f(UInt32(0, 1, 2), mode)
    assert a.numpy().tolist() == [0, 10, 10] and b.numpy().tolist() == [11, 0, 0]


def test_copies_structs_and_errors():
    s0 = pbc.alloc_local(Float, 2)
    s0[0], s0[1] = 123, 456
    s1 = pbc.Local(s0)
    s1[0] += 100
    s0[0] += 1000
    assert (s0[0][0], s0[1][0], s1[0][0], s1[1][0]) == (1123, 456, 223, 456)
    assert len(s0) == 2 and type(s0[0]) is Float

    @dataclasses.dataclass
    class XY:
        x: Float
        y: Float

    xy = pbc.alloc_local(XY, size=2, value=pbc.zeros(XY))
    xy[1] = XY(Float(5), Float(6))
    assert xy[1].y[0] == 6 and xy[UInt32(1, 0)].x.numpy().tolist() == [5, 0]

    with pytest.raises(RuntimeError, match=r'out of bounds read \(source size=2, offset=5\)'):
        s0[5]
    with pytest.raises(RuntimeError, match=r'out of bounds write \(target size=2, offset=2\)'):
        s0[2] = 0
    with pytest.raises(TypeError, match='does not contain any Jit-tracked arrays'):
        pbc.alloc_local(int, 2, 0)


def test_pcg32_fields_keep_their_types():
    # rng.state = a UInt32 stores a UInt64 (as Dr.Jit's typed fields): the generator's
    # arithmetic stays 64-bit.
    a, b = PCG32(4), PCG32(4)
    a.state = pbc.arange(UInt32, 4) + 1234
    b.state = suite_backend.UInt64(pbc.arange(UInt32, 4) + 1234)
    assert type(a.state) is suite_backend.UInt64
    assert a.next_uint32().numpy().tolist() == b.next_uint32().numpy().tolist()
