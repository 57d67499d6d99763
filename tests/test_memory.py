"""Gathers, scatters (plain and atomic), horizontal reductions, scans and compress."""

import numpy as np
import pytest
from oracle import FLOATS, INTS, TYPES, flat, sample
from suite_backend import Array3f, Bool, Float, Float64, Int32, UInt32

import pbc

ReduceOp = pbc.ReduceOp


@pytest.mark.parametrize('t', ('bool',) + INTS + FLOATS)
def test_gather_every_type(t):
    rng = np.random.default_rng(10)
    src = sample(t, 100, rng)
    idx = rng.integers(0, 130, 257).astype(np.uint32)      # some out of range: read 0
    mask = rng.random(257) < 0.7
    g = pbc.gather(TYPES[t], flat(t, src), UInt32(idx), Bool(mask))
    ok = mask & (idx < 100)
    expected = np.where(ok, src[np.minimum(idx, 99)], np.zeros(1, src.dtype))
    np.testing.assert_array_equal(g.numpy(), expected)


@pytest.mark.parametrize('t', ('bool',) + INTS + FLOATS)
def test_scatter_every_type(t):
    rng = np.random.default_rng(11)
    target = sample(t, 100, rng)
    idx = rng.permutation(120)[:90].astype(np.uint32)      # distinct, some out of range
    values = sample(t, 90, rng)
    mask = rng.random(90) < 0.8
    x = flat(t, target)
    pbc.scatter(x, flat(t, values), UInt32(idx), Bool(mask))
    expected = target.copy()
    ok = mask & (idx < 100)
    expected[idx[ok]] = values[ok]
    np.testing.assert_array_equal(x.numpy(), expected)


REDUCTIONS = [(op, t) for op in ('Add', 'Mul', 'Min', 'Max') for t in INTS + FLOATS] + \
             [(op, t) for op in ('And', 'Or') for t in INTS + ('bool',)]


@pytest.mark.parametrize('op,t', REDUCTIONS)
def test_scatter_reduce_contended(op, t):
    """Many lanes on several threads hit few slots: atomics must make every update count."""
    rng = np.random.default_rng(12)
    n, slots = 300_000, 7
    idx = rng.integers(0, slots, n).astype(np.uint32)
    if op == 'Mul' and t in FLOATS:    # exact products in any order: powers of two in range
        values = rng.choice(np.array([1, -1, 2, 0.5], t), n, p=[0.996, 0.002, 0.001, 0.001])
    elif t in FLOATS:
        values = rng.integers(-8, 8, n).astype(t)          # exact sums in any order
    elif t == 'bool':
        values = rng.random(n) < 0.999
    else:
        values = rng.integers(0, 1000, n).astype(t)
    init = {'Add': 0, 'Mul': 1, 'Min': 10**6, 'Max': 0, 'And': -1, 'Or': 0}[op]
    dtype = np.dtype(t if t != 'bool' else np.bool_)
    start = np.full(slots, init if t != 'bool' else op == 'And').astype(dtype)
    target = flat(t, start)
    pbc.scatter_reduce(getattr(ReduceOp, op), target, flat(t, values), UInt32(idx))
    ufunc = {'Add': np.add, 'Mul': np.multiply, 'Min': np.minimum, 'Max': np.maximum,
             'And': np.bitwise_and, 'Or': np.bitwise_or}[op]
    expected = start.copy()
    ufunc.at(expected, idx, values)
    np.testing.assert_array_equal(target.numpy(), expected)


@pytest.mark.parametrize('t', ('int32', 'uint32', 'int64', 'float32', 'float64'))
@pytest.mark.parametrize('slot', [1, 9])
def test_scatter_add_of_every_lane_into_one_entry(t, slot):
    # A literal index: each vector adds its active lanes' sum at once (the gradient of a
    # width-1 parameter); masked lanes, and an index out of range, add nothing.
    rng = np.random.default_rng(4)
    n = 100_003
    values = rng.integers(-8, 8, n).astype(t) if t != 'uint32' else \
        rng.integers(0, 8, n).astype(t)
    active = rng.random(n) < 0.7
    target = flat(t, np.zeros(3, dtype=t))
    pbc.scatter_reduce(ReduceOp.Add, target, flat(t, values), slot, Bool(active))
    expected = np.zeros(3, dtype=t)
    if slot < 3:
        expected[slot] = values[active].sum(dtype=t)
    np.testing.assert_array_equal(target.numpy(), expected)


def test_gather_from_literals_and_expressions_masks_like_memory():
    idx, mask = UInt32(0, 2, 3, 9), Bool(True, True, False, True)
    for src in (pbc.full(Float, 7.0, 4), pbc.arange(Float, 4) * 2 + 7):
        g = pbc.gather(Float, src, idx, mask)
        expected = np.array([7, 11 if src.state != 'literal' else 7, 0, 0], dtype=np.float32)
        np.testing.assert_array_equal(g.numpy(), expected)


def test_scatter_is_a_side_effect_seen_by_later_reads():
    x = pbc.zeros(Float, 5)
    pbc.scatter(x, 1.0, UInt32(1, 3))
    y = x * 2                       # reading a dirty target runs the scatter first
    np.testing.assert_array_equal(y.numpy(), [0, 2, 0, 2, 0])
    pbc.scatter_add(x, Float(1, 1, 1), UInt32(0, 0, 4))
    np.testing.assert_array_equal(x.numpy(), [2, 1, 0, 1, 1])


def test_scatter_copies_shared_targets():
    a = Float(1, 2, 3)
    b = Float(a)                     # shares a's variable
    g = pbc.gather(Float, a, UInt32(0, 1, 2))   # a pending read of a
    pbc.scatter(a, 9.0, UInt32(0))
    np.testing.assert_array_equal(a.numpy(), [9, 2, 3])
    np.testing.assert_array_equal(b.numpy(), [1, 2, 3])
    np.testing.assert_array_equal(g.numpy(), [1, 2, 3])


def test_results_never_alias_their_operands():
    """Ops that return their input's variable (abs of unsigned, +x, x * 1, floor of an int, x**1)
    still give a new array: a scatter into the result leaves the operand alone."""
    x = UInt32(1, 2, 3)
    for y in (abs(x), +x, x * 1, pbc.floor(x), x + 0, x ** 1):
        assert y is not x
        pbc.scatter(y, 9, UInt32(0))
        assert x.numpy().tolist() == [1, 2, 3] and y.numpy().tolist() == [9, 2, 3]


def test_setitem_and_masked_update():
    x = Float(0, 0, 0, 0)
    x[2] = 5.0
    m = pbc.arange(UInt32, 4) < 2
    x[m] += 1.0
    np.testing.assert_array_equal(x.numpy(), [1, 1, 5, 0])
    with pytest.raises(IndexError):
        x[4] = 1.0


def test_vector_gather_scatter():
    flat_src = Float(np.arange(12, dtype=np.float32))
    v = pbc.gather(Array3f, flat_src, UInt32(0, 3))
    np.testing.assert_array_equal(v.numpy(), [[0, 9], [1, 10], [2, 11]])
    target = pbc.zeros(Float, 6)
    pbc.scatter(target, Array3f(1, 2, 3), UInt32(1))
    np.testing.assert_array_equal(target.numpy(), [0, 0, 0, 1, 2, 3])


def test_debug_mode_bounds_checks_write_nothing():
    x = Float(1, 2, 3)
    with pbc.scoped_set_flag(pbc.JitFlag.Debug, True):
        with pytest.raises(IndexError, match=r'scatter: index 7 \(lane 1\).*size 3'):
            pbc.scatter(x, Float(5, 6), UInt32(0, 7))
        with pytest.raises(IndexError, match=r'gather: index 3 .*size 3'):
            pbc.gather(Float, x, UInt32(0, 3))
        pbc.scatter(x, 4.0, UInt32(0, 7), Bool(True, False))     # masked lane: fine
    np.testing.assert_array_equal(x.numpy(), [4, 2, 3])


@pytest.mark.parametrize('t', INTS + FLOATS)
def test_reductions(t):
    rng = np.random.default_rng(13)
    for n in (1, 15, 1000, 100_003):
        v = rng.integers(-50, 50, n).astype(t) if t in FLOATS else sample(t, max(n, 40),
                                                                          rng)[:n]
        a = flat(t, v)
        with np.errstate(all='ignore'):
            assert pbc.sum(a)[0] == v.sum(dtype=v.dtype)
            assert pbc.min(a)[0] == v.min() and pbc.max(a)[0] == v.max()
            if t in INTS:
                assert pbc.prod(a)[0] == np.prod(v, dtype=v.dtype)
        assert len(pbc.sum(a)) == 1 and type(pbc.sum(a)) is TYPES[t]


def test_float_sum_accuracy_and_mean():
    rng = np.random.default_rng(14)
    v = rng.random(1_000_000).astype(np.float32)
    exact = v.astype(np.float64).sum()
    assert abs(pbc.sum(Float(v))[0] - exact) <= np.spacing(np.float32(exact))
    assert abs(pbc.mean(Float(v))[0] - v.mean()) < 1e-6
    assert pbc.sum(Float64(v))[0] == pytest.approx(v.astype(np.float64).sum(), rel=1e-12)


def test_bool_reductions_and_count():
    m = Bool(np.arange(1000) % 3 == 0)
    assert pbc.count(m)[0] == 334
    assert pbc.any(m)[0] and not pbc.all(m)[0] and not pbc.none(m)[0]
    assert pbc.all(Bool(True, True))[0] and pbc.none(Bool(False, False))[0]
    assert pbc.all(pbc.full(Bool, True, 10**6))[0]
    # many blocks of the parallel passes, and a set lane only at the very end
    rng = np.random.default_rng(5)
    for n in (16383, 16384, 16385, 100_003):
        v = rng.random(n) < 0.3
        m = Bool(v)
        assert pbc.count(m)[0] == v.sum() and type(pbc.count(m)) is UInt32
        assert pbc.any(m)[0] == v.any() and pbc.all(m)[0] == v.all()
        last = np.zeros(n, bool)
        last[-1] = True
        assert pbc.any(Bool(last))[0] and not pbc.all(Bool(last))[0]
        assert pbc.count(Bool(last))[0] == 1 and pbc.count(Bool(~last))[0] == n - 1
    assert pbc.count(Bool([]))[0] == 0


@pytest.mark.parametrize('t', INTS + FLOATS)
def test_prefix_sums(t):
    rng = np.random.default_rng(15)
    for n in (0, 1, 17, 50_000):
        v = rng.integers(0, 100, n).astype(t)
        a = flat(t, v)
        inc = np.cumsum(v, dtype=v.dtype)
        np.testing.assert_array_equal(pbc.cumsum(a).numpy(), inc)
        np.testing.assert_array_equal(pbc.prefix_sum(a).numpy(), inc - v)
        rev = np.cumsum(v[::-1], dtype=v.dtype)[::-1]
        np.testing.assert_array_equal(pbc.prefix_sum(a, reverse=True).numpy(), rev - v)


def test_compress():
    rng = np.random.default_rng(16)
    for n in (0, 5, 100_000):
        m = rng.random(n) < 0.3
        np.testing.assert_array_equal(pbc.compress(Bool(m)).numpy(), np.flatnonzero(m))
    assert len(pbc.compress(pbc.full(Bool, False, 100))) == 0


def test_reductions_of_expressions_and_literals():
    a = pbc.arange(Int32, 100)
    assert pbc.sum(a * 2)[0] == 9900
    assert pbc.sum(pbc.full(Float, 0.5, 10))[0] == 5.0
    assert pbc.max(Int32(3))[0] == 3


def test_empty_operands_give_empty_results():
    """Width 0 is a width: combined with width-1 operands it stays 0 (not 1)."""
    empty = pbc.arange(UInt32, 0)
    assert len(empty + 1) == 0 and len(pbc.select(True, empty, 1)) == 0
    x = pbc.zeros(Float, 2)
    src = Float(np.nan, np.nan)
    idx = pbc.compress(Bool(False, False))
    pbc.scatter(x, pbc.gather(Float, src, idx), pbc.arange(UInt32, len(idx)))
    np.testing.assert_array_equal(x.numpy(), [0, 0])


def test_scatters_into_one_array_keep_program_order():
    """Queued scatters run fused packet by packet; a plain scatter must still land after
    the ones before it (same-op atomic reductions commute and stay fused)."""
    perm = np.random.default_rng(1).permutation(64).astype(np.uint32)
    t = pbc.zeros(Int32, 64)
    pbc.scatter(t, 1, UInt32(perm[::-1].copy()))
    pbc.scatter(t, 2, UInt32(perm))
    assert set(t.numpy().tolist()) == {2}
    a = pbc.zeros(Int32, 4)
    pbc.kernel_history_clear()
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
        pbc.scatter_add(a, 1, UInt32(0, 0))
        pbc.scatter_add(a, 1, UInt32(0, 1))
        pbc.scatter_reduce(pbc.ReduceOp.Max, a, 5, UInt32(3))
        assert a.numpy().tolist() == [3, 1, 0, 5]
        assert len(pbc.kernel_history()) == 2       # the two additions ran fused


def test_wide_indices_are_bounds_checked_not_wrapped():
    from suite_backend import Int64, UInt64
    src = Float(1, 2, 3)
    np.testing.assert_array_equal(pbc.gather(Float, src, Int64(2**32, 1, -1)).numpy(),
                                  [0, 2, 0])
    t = Float(0, 0, 0)
    pbc.scatter(t, 5.0, UInt64(2**32 + 1, 2))
    np.testing.assert_array_equal(t.numpy(), [0, 0, 5])


def test_indices_past_2_31_reach_the_top_of_large_buffers():
    # Kernels address a buffer with signed 32-bit indices, biased by 2^31 elements: the top
    # half of a buffer of more than 2^31 elements must be read and written where it is.
    n = (1 << 31) + 40                         # (a 2 GB mask)
    mask = pbc.zeros(Bool, n)
    top = 1 << 31
    pbc.scatter(mask, True, UInt32(5, top + 3, top - 1, 0xFFFFFFFF))
    got = pbc.gather(Bool, mask, UInt32(5, 6, top + 3, top + 2, top - 1, 0xFFFFFFFF, n - 1))
    np.testing.assert_array_equal(got.numpy(), [1, 0, 1, 0, 1, 0, 0])
    del mask


def test_reduce_modes_and_ops():
    # Every ReduceMode gives the same result (they are Dr.Jit's performance strategies).
    for mode in pbc.ReduceMode:
        t = pbc.zeros(UInt32, 2)
        pbc.scatter_add(t, 1, UInt32(0, 0, 1), mode=mode)
        pbc.scatter(t, 5, [1], mode=mode)                 # a Python list of indices
        assert t.numpy().tolist() == [2, 5]
        assert pbc.gather(UInt32, t, [1, 0], mode=mode).numpy().tolist() == [5, 2]
    with pytest.raises(TypeError, match='ReduceMode'):
        pbc.scatter_add(t, 1, UInt32(0), mode='fast')
    with pytest.raises(ValueError, match='Identity'):
        pbc.scatter_reduce(pbc.ReduceOp.Identity, t, 1, UInt32(0))
    # pbc.reduce(op, ...) is the reduction named by a ReduceOp
    x = Float(1.5, -2, 4)
    assert pbc.reduce(pbc.ReduceOp.Mul, x)[0] == -12 and pbc.reduce(pbc.ReduceOp.Add, x)[0] == 3.5
    assert pbc.reduce(pbc.ReduceOp.Min, x)[0] == -2 and pbc.reduce(pbc.ReduceOp.Max, x)[0] == 4
    assert pbc.reduce(pbc.ReduceOp.Or, UInt32(1, 2, 8))[0] == 11
    assert pbc.reduce(pbc.ReduceOp.And, UInt32(3, 7))[0] == 3
    assert pbc.reduce(pbc.ReduceOp.Add, [1, 2, 3]) == 6


def test_detail_reduction_helpers():
    from suite_backend import Array3f, Float64, Int32
    D = pbc.detail
    for T in (Float, Float64, Int32, UInt32):
        for op in (pbc.ReduceOp.Add, pbc.ReduceOp.Mul, pbc.ReduceOp.Min, pbc.ReduceOp.Max):
            assert D.can_scatter_reduce(T, op)
            # the identity leaves any value alone
            x = T(np.array([3, 250, 7], dtype=T.Type))
            ident = D.reduce_identity(T, op)
            t = pbc.full(T, ident[0], 3)
            pbc.scatter_reduce(op, t, x, UInt32(0, 1, 2))
            assert t.numpy().tolist() == x.numpy().tolist()
    assert D.can_scatter_reduce(Bool, pbc.ReduceOp.Or) and not D.can_scatter_reduce(
        Float, pbc.ReduceOp.And) and not D.can_scatter_reduce(Array3f, pbc.ReduceOp.Identity)
    assert D.reduce_identity(UInt32, pbc.ReduceOp.And)[0] == 2**32 - 1
    assert D.reduce_identity(Int32, pbc.ReduceOp.Min)[0] == 2**31 - 1
    assert len(D.llvm_version()) == 3 and D.llvm_version()[0] >= 14
    D.check_compatibility({'a': (Float(1), 2)}, {'a': (Float(5), 2)}, True, 'result')
    with pytest.raises(RuntimeError, match="inconsistent dictionary keys for field 'result'"):
        D.check_compatibility({'a': Float(1)}, {'b': Float(1)}, True, 'result')
    with pytest.raises(RuntimeError, match='inconsistent types'):
        D.check_compatibility((Float(1),), (UInt32(1),), True, 'result')
