"""Gathers of neighbouring elements loaded as one packet per lane (pbc/backend/
llvm_packets.py): the same values as element-by-element gathers, NumPy as the oracle, with
the packets on and off, for indices near the buffer's end and beyond, masked lanes, index
arithmetic that wraps around 2^32, and inside symbolic loops."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from suite_backend import (
    Array2f64,
    Array2u64,
    Array4f,
    Array4i,
    Bool,
    Float,
    Float64,
    Int32,
    UInt32,
    UInt64,
)

import pbc
from pbc.backend import llvm_jit
from pbc.backend.llvm_render import render

TYPES = {Float: np.float32, Int32: np.int32, UInt32: np.uint32, Float64: np.float64,
         UInt64: np.uint64}


@pytest.fixture(params=[True, False], ids=['packets', 'gathers'])
def packets(request):
    """The backend with packet loads on (on every host, also where it leaves them off)
    and off."""
    be = llvm_jit.backend()
    saved = be.packets
    be.flush_memory_cache()
    be.packets = request.param
    yield request.param
    be.flush_memory_cache()
    be.packets = saved


def reference(source, index, mask, k):
    """source[index + k] (uint32 arithmetic) where mask holds and the index is in range."""
    j = (index.astype(np.uint64) + k) % 2**32
    ok = mask & (j < len(source))
    return np.where(ok, source[np.minimum(j, max(len(source) - 1, 0)).astype(np.int64)]
                    if len(source) else 0, 0).astype(source.dtype)


def values(T, size, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-2**20, 2**20, size)
    return (x * 0.37 if TYPES[T] in (np.float32, np.float64) else x).astype(TYPES[T])


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # (it stays set)
@given(T=st.sampled_from(list(TYPES)), size=st.integers(0, 70), lanes=st.integers(1, 90),
       stride=st.sampled_from([1, 2, 4, 8, 16, 3]), shift=st.booleans(),
       offsets=st.sets(st.integers(0, 11), min_size=1, max_size=6),
       seed=st.integers(0, 2**31), near_top=st.booleans())
def test_neighbouring_gathers_read_what_numpy_reads(packets, T, size, lanes, stride, shift,
                                                    offsets, seed, near_top):
    # Gathers at i * stride + k (or i << log2(stride)), for k within the stride or beyond
    # it: i * stride + k then wraps around 2^32 for some i near the top.
    rng = np.random.default_rng(seed)
    source = values(T, size, seed)
    index = rng.integers(0, size // stride + 3, lanes).astype(np.uint32)
    if near_top:
        index[::3] = 2**32 // stride - rng.integers(0, 3, len(index[::3]))
    mask = rng.random(lanes) < 0.8
    src, i, m = T(source), UInt32(index), Bool(mask)
    pbc.eval(src, i, m)
    if shift and stride & (stride - 1) == 0:
        i = i << (stride.bit_length() - 1)
    else:
        i = i * stride
    got = [pbc.gather(T, src, i + k if k else i, m) for k in sorted(offsets)]
    pbc.eval(got)
    scaled = (index.astype(np.uint64) * stride) % 2**32
    for k, g in zip(sorted(offsets), got):
        assert np.array_equal(g.numpy(), reference(source, scaled, mask, k)), k


@pytest.mark.parametrize('V', [Array4f, Array4i, Array2f64, Array2u64])
def test_vector_gathers_in_a_loop(packets, V):
    # Each lane walks a chain through a table of records (a BVH traversal's pattern): its
    # next index is read from the record it is at.
    n = 257
    rng = np.random.default_rng(5)
    width = V.Size
    table = rng.integers(0, n, (n, width)).astype(TYPES[V.Value])   # (exact as floats)
    start = rng.integers(0, n + 3, 1000).astype(np.uint32)
    source = V.Value(table.ravel())
    pbc.eval(source)

    @pbc.syntax
    def walk(i, source):
        total = V.Value(0)
        step = UInt32(0)
        while step < 7:
            rec = pbc.gather(V, source, i)
            total += rec[width - 1]
            i = UInt32(rec[0]) % (n + 2)      # (sometimes out of range: reads 0)
            step += 1
        return total

    got = walk(UInt32(start), source).numpy()
    i, total = start.astype(np.int64), np.zeros(1000, TYPES[V.Value])
    for _ in range(7):
        rec = np.where((i < n)[:, None], table[np.minimum(i, n - 1)], 0)
        total = total + rec[:, width - 1]
        i = rec[:, 0].astype(np.int64) % (n + 2)
    assert np.array_equal(got, total)


def test_the_packet_is_one_load_per_lane():
    source = pbc.arange(Float, 400)
    pbc.eval(source)
    i = pbc.arange(UInt32, 100) * 3
    pbc.schedule(pbc.gather(Array4f, source, i))
    k, = pbc.evaluate.take_kernels()
    ir = render(k, 16, packets=True)
    assert ir.count('load <4 x float>') == 16 and 'masked.gather' not in ir
    assert 'masked.gather' in render(k, 16) and 'load <4 x float>' not in render(k, 16)


def test_a_scatter_between_neighbouring_gathers_is_seen(packets):
    # (the packet is loaded where its first gather is: never before a scatter that the
    # later gathers must see)
    src = pbc.arange(Float, 64)
    pbc.eval(src)
    i = pbc.arange(UInt32, 16)
    first = pbc.gather(Float, src, i * 4)
    pbc.scatter(src, Float(-1), i * 4 + 1)
    second = pbc.gather(Float, src, i * 4 + 1)
    pbc.eval(first, second)
    assert np.array_equal(first.numpy(), np.arange(0, 64, 4)) and np.all(second.numpy() == -1)


@pytest.mark.parametrize('size', [64, 65, 66, 67])
def test_records_at_a_buffers_end_whether_it_holds_whole_records_or_not(packets, size):
    # Where the buffer's size is a multiple of the records' (64), a record that starts in
    # bounds lies in bounds whole, and its fields need no test of their own (the branch
    # of llvm_packets' Packet.block); elsewhere the last record straddles the end. Fields
    # past the end read 0 either way.
    source = np.arange(1, size + 1, dtype=np.float32)
    index = np.arange(20, dtype=np.uint32)
    mask = index % 7 != 3
    got = pbc.gather(Array4f, Float(source), UInt32(index), Bool(mask))
    for k in range(4):
        assert np.array_equal(got[k].numpy(), reference(source, index * 4, mask, k)), k


def test_whole_records_take_one_bounds_test():
    source = pbc.arange(Float, 400)
    pbc.eval(source)
    pbc.schedule(pbc.gather(Array4f, source, pbc.arange(UInt32, 100)))
    k, = pbc.evaluate.take_kernels()
    ir = render(k, 16, packets=True)
    # (the branch on the size, and per field a test on the other path only)
    assert ir.count('.whole:') == 1 and ir.count('icmp ugt') == 1 + 4
