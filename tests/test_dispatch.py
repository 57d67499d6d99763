"""pbc.Object, Ptr arrays, pbc.dispatch and pbc.switch against a per-lane Python reference,
in symbolic and evaluated mode."""

import importlib
import re

import numpy as np
import pytest
import suite_backend
from hypothesis import given, settings
from hypothesis import strategies as st
from suite_backend import Array3f, Bool, Float, Ptr, UInt32

import pbc
from pbc import _runtime

MODES = ('symbolic', 'evaluated')


class Shape(pbc.Object):
    def eval(self, x):
        raise NotImplementedError


class Scale(Shape):
    def __init__(self, k):
        self.k = k

    def eval(self, x):
        return x * self.k, Array3f(self.k, 0, 1)

    def ref(self, x):
        return np.float32(x) * np.float32(self.k), (self.k, 0, 1)


class Poly(Shape):
    def __init__(self, a, b, c):
        self.a, self.b, self.c = a, b, c

    def eval(self, x):
        return (x * self.a + self.b) * x + self.c, Array3f(x, x * 2, self.c)

    def ref(self, x):
        x = np.float32(x)
        v = (x * np.float32(self.a) + np.float32(self.b)) * x + np.float32(self.c)
        return v, (x, x * np.float32(2), self.c)


SHAPES = [Scale(2), Poly(1, -2, 0.5), Scale(-1.5), Poly(0, 3, 1), Scale(0.25)]


def reference(objs, xs, mask=None):
    out, vec = [], []
    for k, (o, x) in enumerate(zip(objs, xs)):
        if o is None or (mask is not None and not mask[k]):
            out.append(0)
            vec.append((0, 0, 0))
        else:
            v, w = o.ref(x)
            out.append(v)
            vec.append(w)
    return np.array(out, dtype=np.float32), np.array(vec, dtype=np.float32).T


def compiled(fn, optimize):
    """fn()'s arrays (run with OptimizeCalls on or off) as lists, the one Kernel that
    computes them, and its kernel_history() record."""
    with pbc.scoped_set_flag(pbc.JitFlag.OptimizeCalls, optimize), \
            pbc.scoped_set_flag(pbc.JitFlag.KernelHistory):
        pbc.kernel_history_clear()
        out = fn()
        pbc.schedule(out)
        kernel, = pbc.evaluate.take_kernels()
        pbc.eval(out)
        return [o.numpy().tolist() for o in out], kernel, pbc.kernel_history()[-1]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(-1, len(SHAPES) - 1), min_size=1, max_size=40),
       st.sampled_from(MODES))
def test_random_pointer_patterns(picks, mode):
    objs = [None if p < 0 else SHAPES[p] for p in picks]
    xs = np.linspace(-2, 2, len(picks), dtype=np.float32)
    ptrs = Ptr[Shape](objs)
    v, w = pbc.dispatch(ptrs, lambda o, x: o.eval(x), Float(xs), mode=mode)
    ref_v, ref_w = reference(objs, xs)
    np.testing.assert_allclose(v.numpy(), ref_v, rtol=1e-6)
    np.testing.assert_allclose(w.numpy(), ref_w, rtol=1e-6)


@pytest.mark.parametrize('mode', MODES)
def test_method_call_syntax_and_masks(mode):
    objs = [SHAPES[k % 5] if k % 7 else None for k in range(37)]
    xs = np.arange(37, dtype=np.float32) / 8
    ptrs = Ptr[Shape](objs)
    x = Float(xs)
    keep = Bool(np.arange(37) % 3 != 0)
    with pbc.scoped_set_flag(pbc.JitFlag.SymbolicCalls, mode == 'symbolic'):
        v, _ = pbc.if_stmt((x,), keep, lambda x: ptrs.eval(x), lambda x: (Float(0), Array3f(0)))
    ref_v, _ = reference(objs, xs, np.arange(37) % 3 != 0)
    np.testing.assert_allclose(v.numpy(), ref_v, rtol=1e-6)


@pytest.mark.parametrize('mode', MODES)
def test_dispatch_in_a_loop_and_scatter_in_a_callee(mode):
    hits = UInt32(np.zeros(len(SHAPES) + 1, dtype=np.uint32))

    class Counter(pbc.Object):
        def __init__(self, slot):
            self.slot = slot

        def bump(self, x):
            pbc.scatter_add(hits, 1, UInt32(self.slot))
            return x + self.slot

    counters = [Counter(k) for k in range(1, 4)]
    objs = [counters[k % 3] for k in range(10)]
    ptrs = Ptr[Counter](objs)
    i, acc = pbc.while_loop((UInt32(0), Float(0)), lambda i, acc: i < 3,
                            lambda i, acc: (i + 1, ptrs.bump(acc)), mode=mode)
    assert acc.numpy().tolist() == [3.0 * o.slot for o in objs]
    assert hits.numpy().tolist()[1:4] == [3 * sum(o is c for o in objs) for c in counters]


@pbc.syntax
def _pointers_drawn_again_in_a_loop(k, n, mode):
    table = Ptr[Shape]([SHAPES[0], SHAPES[1], None, SHAPES[3]])
    p = pbc.gather(Ptr[Shape], table, k % 4)
    i = UInt32(0)
    while pbc.hint(i < n, mode=mode):
        i += 1
        p = pbc.gather(Ptr[Shape], table, (k + i) % 4)      # (table: only passed)
    return p.eval(Float(k))[0]


@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('per_lane', [False, True])
def test_a_loop_draws_pointers_from_a_table_it_only_reads(mode, per_lane):
    # The table, a pointer array passed to a call, was taken for a container the call may
    # store into: loop state, of another width (SizeError).
    k = UInt32(range(9))
    n = [j % 3 if per_lane else 2 for j in range(9)]
    got = _pointers_drawn_again_in_a_loop(k, UInt32(n) if per_lane else UInt32(2), mode)
    table = [SHAPES[0], SHAPES[1], None, SHAPES[3]]
    want, _ = reference([table[(j + n[j]) % 4] for j in range(9)], range(9))
    got = got.numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize('mode', MODES)
def test_switch(mode):
    idx = UInt32(0, 1, 2, 7, 1, 0)
    x = Float(1, 2, 3, 4, 5, 6)
    r = pbc.switch(idx, [lambda x: x + 1, lambda x: x * 10, lambda x: -x], x, mode=mode)
    assert r.numpy().tolist() == [2, 20, -3, 0, 50, 7]


@pytest.mark.parametrize('mode', MODES)
def test_nested_dispatch(mode):
    class Outer(pbc.Object):
        def __init__(self, inner):
            self.inner = inner

        def run(self, x):
            return Ptr[Shape]([self.inner] * 1).eval(x)[0] + 1

    outers = [Outer(SHAPES[0]), Outer(SHAPES[1])]
    objs = [outers[k % 2] for k in range(6)]
    xs = np.arange(6, dtype=np.float32)
    r = pbc.dispatch(Ptr[Outer](objs), lambda o, x: o.run(x), Float(xs), mode=mode)
    ref = [o.inner.ref(x)[0] + 1 for o, x in zip(objs, xs)]
    np.testing.assert_allclose(r.numpy(), ref, rtol=1e-6)


def test_pointer_arrays():
    a, b = SHAPES[0], SHAPES[1]
    p = Ptr[Shape]([a, None, b])
    assert (p == a).numpy().tolist() == [True, False, False]
    assert (p != None).numpy().tolist() == [True, False, True]  # noqa: E711
    q = pbc.gather(Ptr[Shape], p, UInt32(2, 0))
    assert (q == b).numpy().tolist() == [True, False]
    s = pbc.select(Bool(True, False, True), p, Ptr[Shape](b))
    assert (s == b).numpy().tolist() == [False, True, True]
    with pytest.raises(TypeError, match='not a Shape'):
        Ptr[Shape]([object()])


def test_recursive_dispatch_is_an_error():
    class Loopy(pbc.Object):
        def f(self, x):
            return Ptr[Loopy](self).f(x)

    loopy = Loopy()
    with pytest.raises(RuntimeError, match='calls itself'):
        Ptr[Loopy]([loopy]).f(Float(1))
    assert pbc._runtime.mask_depth() == 0
    del loopy
    with pytest.raises(RuntimeError, match='no live instance'):
        Ptr[Loopy]([None]).f(Float(1))


def test_deleted_instances_are_unregistered():
    class Temp(pbc.Object):
        def f(self, x):
            return x + 1

    t = Temp()
    ident = t.pbc_id
    assert pbc.dispatch.__module__ and pbc.dispatch(Ptr[Temp]([t]), Temp.f, Float(1)) \
        .numpy().tolist() == [2]
    del t
    from pbc.dispatch import instance
    assert instance(ident) is None
    u = Temp()                    # ids of deleted instances are reused: tables stay small
    assert u.pbc_id == ident and instance(ident) is u


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 9), max_size=3000),
       st.lists(st.sampled_from([0, 1, 2, 3, 7, 9, 12, 2 ** 31, 2 ** 32 - 1]), unique=True,
                max_size=6))
def test_partition_matches_numpy(values, keys):
    sel = np.array(values, dtype=np.uint32)
    groups = pbc._runtime.partition(UInt32(sel), keys)
    assert len(groups) == len(keys)
    for key, lanes in zip(keys, groups):
        assert lanes.numpy().tolist() == np.flatnonzero(sel == key).tolist()


@pytest.mark.parametrize('m', [1, 64, 300])      # (up to 256 keys: counted on the stack)
def test_partition_of_many_blocks_matches_numpy(m):
    sel = np.random.default_rng(m).integers(0, m + 2, 100_003).astype(np.uint32)
    keys = list(range(m))[::-1]                        # (unsorted; m and m + 1 match none)
    groups = pbc._runtime.partition(UInt32(sel), keys)
    for key, lanes in zip(keys, groups):
        assert np.array_equal(lanes.numpy(), np.flatnonzero(sel == key))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 70), st.integers(0, 2 ** 32 - 71), st.data())
def test_partition_of_consecutive_keys_matches_numpy(m, base, data):
    # (up to 16 consecutive keys take the vector passes, more the scalar passes without a
    # table; lanes of other keys are skipped)
    n = data.draw(st.sampled_from([1, 15, 16, 17, 100, 4096 * 4 + 3, 70_001]))
    rng = np.random.default_rng(m * 7919 + n)
    sel = (base + rng.integers(-2, m + 2, n)).astype(np.uint32)
    keys = [base + k for k in rng.permutation(m)]
    for simd in (True, False):
        old = pbc._runtime.set_partition_simd(simd)
        try:
            groups = pbc._runtime.partition(UInt32(sel), keys)
        finally:
            pbc._runtime.set_partition_simd(old)
        for key, lanes in zip(keys, groups):
            assert np.array_equal(lanes.numpy(), np.flatnonzero(sel == key))


@pytest.mark.parametrize('simd', [True, False])
def test_partition_and_compress_on_one_thread(simd):
    # One thread runs the blocks one by one, as several would: the passes keep counts per
    # block (they once got the whole range in one call and read others' counts unset).
    rng = np.random.default_rng(5)
    sel = rng.integers(0, 10, 200_003).astype(np.uint32)
    threads = pbc._runtime.thread_count()
    old = pbc._runtime.set_partition_simd(simd)
    pbc._runtime.set_thread_count(1)
    try:
        for _ in range(3):
            garbage = [np.full(k, -1, np.int64) for k in range(1, 300)]   # (reused memory)
            del garbage
            groups = pbc._runtime.partition(UInt32(sel), list(range(8)))
            for key, lanes in zip(range(8), groups):
                assert np.array_equal(lanes.numpy(), np.flatnonzero(sel == key))
            assert np.array_equal(pbc.compress(Bool(sel % 3 == 0)).numpy(),
                                  np.flatnonzero(sel % 3 == 0))
    finally:
        pbc._runtime.set_thread_count(threads)
        pbc._runtime.set_partition_simd(old)


@pytest.mark.parametrize('offset', [1, 7, 2 ** 32 - 3])
def test_partition_of_an_offset_selector_matches_numpy(offset):
    # (x + c of evaluated x is read as x against keys - c: keys wrap around like the lanes)
    x = np.random.default_rng(offset).integers(0, 6, 40_000).astype(np.uint32)
    xs = UInt32(x)
    pbc.eval(xs)
    sel = xs + offset
    keys = [(k + offset) % 2 ** 32 for k in (4, 0, 2, 5, 9)]
    pbc.kernel_history_clear()
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
        groups = pbc._runtime.partition(sel, keys)
        assert pbc.kernel_history() == []
    expected = x + np.uint32(offset)
    for key, lanes in zip(keys, groups):
        assert np.array_equal(lanes.numpy(), np.flatnonzero(expected == key))
    assert np.array_equal(xs.numpy(), x)


@pytest.mark.parametrize('n', [1, 5, 70_000])
def test_partition_where_every_lane_selects_one_key(n):
    groups = pbc._runtime.partition(UInt32(np.full(n, 3, np.uint32)), [1, 3, 8])
    assert [len(g) for g in groups] == [0, n, 0]
    assert np.array_equal(groups[1].numpy(), np.arange(n))


@pytest.mark.parametrize('mode', MODES)
def test_methods_of_subclasses_and_python_results(mode):
    class Base(pbc.Object):
        pass

    class A(Base):
        def kind(self, x):
            return x * 2, 1                 # a Python number: an Int32 per lane

    class B(Base):
        def kind(self, x):
            return x + 1, 2

    class C(Base):                          # no 'kind': its lanes give zeros
        pass

    objs = [A(), B(), C()]
    ptrs = Ptr[Base]([objs[k % 3] for k in range(7)] + [None])
    with pbc.scoped_set_flag(pbc.JitFlag.SymbolicCalls, mode == 'symbolic'):
        v, k = ptrs.kind(Float(np.arange(8, dtype=np.float32)))
    assert k.numpy().tolist() == [1, 2, 0, 1, 2, 0, 1, 0]
    assert v.numpy().tolist() == [0, 2, 0, 6, 5, 0, 12, 0]


def test_targets_with_the_same_code_are_merged():
    # Instances whose code is the same (same instructions on the same values: here, equal
    # attributes) run one copy of it (MergeFunctions): the kernel does not grow with them.
    class Same(pbc.Object):
        def __init__(self, k):
            self.k = k

        def f(self, x):
            return x * self.k + 1

    def kernel(count, merge=True):
        objs = [Same(k % 2 + 2) for k in range(count)]
        ptrs = Ptr[Same]([objs[k % count] for k in range(40)])
        x = Float(np.arange(40, dtype=np.float32))
        with pbc.scoped_set_flag(pbc.JitFlag.MergeFunctions, merge):
            y = ptrs.f(x)
            pbc.schedule(y)
            k, = pbc.evaluate.take_kernels()
            assert y.numpy().tolist() == [(k % count % 2 + 2) * k + 1 for k in range(40)]
        return k

    k4, k30, k30_all = kernel(4), kernel(30), kernel(30, merge=False)
    # (the two values of k: one code too, reading k from a table by key)
    assert len(set(k30.calls[0].code)) == 1 and len(set(k30_all.calls[0].code)) == 30
    assert k4.ir_ops == k30.ir_ops < k30_all.ir_ops and k30.tabled_literals == 1


SHAPED = {   # target structures: (pbc form, NumPy form) of f(x, a, b) with constants a, b
    'affine': (lambda x, a, b: x * a + b, lambda x, a, b: x * a + b),
    'select': (lambda x, a, b: pbc.select(x > a, x - b, x * b),
               lambda x, a, b: np.where(x > a, x - b, x * b)),
    'sin': (lambda x, a, b: pbc.sin(x * a) + b, lambda x, a, b: np.sin(x * a) + b),
}


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(sorted(SHAPED)),
                          st.sampled_from([0.5, -1.25, 0.75, 3.0]),       # (none that
                          st.sampled_from([0.25, 1.5, -7.5])), min_size=1, max_size=9),  # fold)
       st.lists(st.integers(-1, 8), min_size=1, max_size=60),
       st.sampled_from(['float32', 'float64']))
def test_targets_differing_in_constants_share_code(shapes, picks, tname):
    # Targets of one structure whose constants differ run one code, which reads each
    # lane's constants from a table by its key; the results are each target's own.
    T = suite_backend.Float if tname == 'float32' else suite_backend.Float64
    dtype = np.float32 if tname == 'float32' else np.float64
    index = np.array([p if 0 <= p < len(shapes) else 99 for p in picks], dtype=np.uint32)
    xs = np.linspace(-3, 3, len(picks)).astype(dtype)
    funcs = [lambda x, s=s, a=a, b=b: SHAPED[s][0](x, a, b) for s, a, b in shapes]
    want = np.zeros_like(xs)
    for k, (s, a, b) in enumerate(shapes):
        lanes = index == k
        want[lanes] = SHAPED[s][1](xs[lanes], dtype(a), dtype(b))
    pbc.kernel_history_clear()
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
        got = pbc.switch(UInt32(index), funcs, T(xs)).numpy()
        h = pbc.kernel_history()[-1]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    if h['call_targets']:                # (no call left where all targets compute alike)
        assert h['call_targets'] - h['call_targets_merged'] == len({s for s, _, _ in shapes})


@pytest.mark.parametrize('tname, constants', [
    ('int32', (-3, 5, -7)), ('uint32', (3, 2 ** 32 - 5, 7)), ('int64', (-3, 5, -(2 ** 40))),
    ('uint64', (2 ** 63 + 9, 5, 12))])
def test_integer_constants_in_tables(tname, constants):
    # (the tables hold each type's bits: negative and above-2^31 values included)
    T = getattr(suite_backend, {'int32': 'Int', 'uint32': 'UInt32', 'int64': 'Int64',
                           'uint64': 'UInt64'}[tname])
    dtype = getattr(np, tname)
    bits = 8 * np.dtype(dtype).itemsize
    index = np.array([0, 1, 2, 1, 0], dtype=np.uint32)
    xs = np.arange(1, 6, dtype=dtype)
    pbc.kernel_history_clear()
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
        y = pbc.switch(UInt32(index), [lambda v, k=k: v * k + k for k in constants], T(xs))
        got = y.numpy()
        assert pbc.kernel_history()[-1]['call_literals_tabled'] == 2
    unsigned = np.uint32 if bits == 32 else np.uint64
    ks = np.array([c % 2 ** bits for c in constants], unsigned).view(dtype)[index]
    with np.errstate(over='ignore'):
        assert got.tolist() == (xs * ks + ks).tolist()


def test_literal_tables_need_small_keys_and_stay_out_of_nested_calls(monkeypatch):
    kernel_module = importlib.import_module('pbc.kernel')   # (pbc.kernel: the decorator)
    x, index = Float(1, 2, 3, 4), UInt32(0, 1, 2, 1)
    funcs = [lambda v, k=k: v * k + 1 for k in (2.0, 3.0, 4.0)]

    def codes():
        out = pbc.switch(index, funcs, x)
        pbc.schedule(out)
        k, = pbc.evaluate.take_kernels()
        assert out.numpy().tolist() == [3, 7, 13, 13]
        return len(set(k.calls[0].code)), k.tabled_literals

    assert codes() == (1, 1)
    divided = pbc.switch(index, [lambda v, k=k: v / k for k in (2.0, 4.0, 8.0)], x)
    pbc.schedule(divided)
    k, = pbc.evaluate.take_kernels()                 # (divisors keep their literals)
    assert len(set(k.calls[0].code)) == 3 and divided.numpy().tolist() == [0.5, 0.5, 0.375, 1]
    with pbc.scoped_set_flag(pbc.JitFlag.MergeFunctions, False):
        assert codes() == (3, 0)
    monkeypatch.setattr(kernel_module, 'KEY_TABLE_LIMIT', 2)     # (switch keys: 1, 2, 3)
    assert codes() == (3, 0)
    monkeypatch.undo()
    # Outer targets that contain calls keep their constants; the inner calls table theirs.
    inner = [lambda v, k=k: v + k for k in (10.0, 20.0)]
    outer = [lambda v, c=c: pbc.switch(index % 2, inner, v * c) for c in (1.0, -1.0)]
    y = pbc.switch(UInt32(0, 1, 1, 0), outer, x)
    pbc.schedule(y)
    k, = pbc.evaluate.take_kernels()
    assert y.numpy().tolist() == [11, 18, 7, 24]
    assert [len(set(c.code)) for c in k.calls] == [1, 1, 2] and k.tabled_literals == 2


@pytest.mark.parametrize('mode', ['symbolic', 'evaluated'])
def test_constants_in_tables_inside_loops(mode):
    # (the tables' pointers come first in the kernel; the gathers by key, in the loop body)
    n = 50
    keys = np.arange(n) % 3
    x0 = np.linspace(0, 1, n).astype(np.float32)
    funcs = [lambda v, k=k: v * k + 0.5 * k for k in (0.5, 0.25, 0.125)]
    pbc.kernel_history_clear()
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
        _, x = pbc.while_loop((UInt32(0), Float(x0)), lambda i, x: i < 4,
                              lambda i, x: (i + 1, pbc.switch(UInt32(keys), funcs, x)),
                              mode=mode)
        got = x.numpy()
        # (the kernels that call: a device's reductions of the loop test are kernels too)
        calling = [k for k in pbc.kernel_history() if k['call_targets']]
        assert calling and {k['call_literals_tabled'] for k in calling} == {2}
    ks = np.array([0.5, 0.25, 0.125], np.float32)[keys]
    want = x0
    for _ in range(4):
        want = want * ks + np.float32(0.5) * ks
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_kernels_differing_in_constants_share_compiled_code():
    # The constants live in the launch's tables, not in the code: a second call with other
    # constants reuses the compiled kernel, and each sees its own tables.
    x, index = Float(1, 2, 3), UInt32(0, 1, 0)
    pbc.kernel_history_clear()
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
        a = pbc.switch(index, [lambda v, k=k: v * k - 0.5 for k in (1.5, 2.5)], x)
        pbc.eval(a)
        b = pbc.switch(index, [lambda v, k=k: v * k - 0.5 for k in (-3.0, 7.0)], x)
        pbc.eval(b)
        first, second = pbc.kernel_history()
    assert first['hash'] == second['hash'] and second['cache_hit'] == 'memory'
    assert a.numpy().tolist() == [1.0, 4.5, 4.0] and b.numpy().tolist() == [-3.5, 13.5, -9.5]


@pytest.mark.parametrize('mode', MODES)
def test_loop_inside_a_target(mode):
    class Doubler(pbc.Object):
        def __init__(self, n):
            self.n = n

        def f(self, x):
            return pbc.while_loop((UInt32(0), x), lambda i, x: i < self.n,
                                  lambda i, x: (i + 1, x * 2))[1]

    objs = [Doubler(1), Doubler(3), Doubler(0)]
    ptrs = Ptr[Doubler]([objs[k % 3] for k in range(7)])
    r = pbc.dispatch(ptrs, lambda o, x: o.f(x), Float(np.arange(7, dtype=np.float32)),
                     mode=mode)
    assert r.numpy().tolist() == [k * 2 ** [1, 3, 0][k % 3] for k in range(7)]


def test_symbolic_call_runs_targets_by_branching():
    # One switch over the targets present among a vector's lanes, not every target for
    # every lane: the IR has a switch and a function per (distinct) target.
    idx = UInt32(np.arange(40, dtype=np.uint32) % 3)
    y = pbc.switch(idx, [lambda x: x + 1, lambda x: x * 3, lambda x: x + 1], Float(1))
    pbc.schedule(y)
    kernel, = pbc.evaluate.take_kernels()
    from pbc.backend.llvm_render import render
    ir = render(kernel, 8)
    # Targets 0 and 2 are merged: a table turns keys into codes, and one pass of the
    # switch runs the shared code for the lanes of both keys.
    assert '@C0.codes = private unnamed_addr constant [4 x i32] [i32 0, i32 1, i32 2, i32 1]' in ir
    assert 'switch i32 %C0.key, label %C0.merge [ i32 1, label %C0.t0 i32 2, label %C0.t1 ]' in ir
    assert ir.count('define internal') == 2 and 'call fastcc { <8 x float> } @C0.f1' in ir
    assert y.numpy().tolist() == [[2, 3, 2][k % 3] for k in range(40)]


@pytest.mark.parametrize('m, shared', [(3, False), (5, False), (16, False), (40, True),
                                       (17, False), (40, False)])
def test_vectors_run_their_targets_in_either_order(m, shared):
    # With ORDERED_CODES distinct codes, a vector runs its targets' codes smallest first,
    # with fewer or more, the first lane's first; with `shared` (i mod 5), 40 targets have
    # 5 codes.
    # Indices past the targets, masked lanes and lanes of one target in a row all occur.
    from pbc.backend.llvm_render import ORDERED_CODES
    rng = np.random.default_rng(m)
    n = 3000
    idx = rng.integers(0, m + 3, n).astype(np.uint32)
    idx[1000:1100] = 2
    active = rng.random(n) < 0.9
    x = rng.uniform(-1, 1, n).astype(np.float32)
    steps = [(k % 5 if shared else k) + 1 for k in range(m)]

    def halve(v, n):                           # (code of its own for each n)
        for _ in range(n):
            v = v * 0.5 + 1.0
        return v

    funcs = [(lambda k: lambda v, active: halve(v, k))(n) for n in steps]   # (active: True)
    y = pbc.switch(UInt32(idx), funcs, Float(x), Bool(active), mode='symbolic')
    pbc.schedule(y)
    kernel, = pbc.evaluate.take_kernels()
    assert len(set(kernel.calls[0].code)) == len(set(steps))
    assert (len(set(steps)) in ORDERED_CODES) == (3 < m <= 16 or shared)
    y = pbc.switch(UInt32(idx), funcs, Float(x), Bool(active), mode='symbolic')
    expected = np.zeros(n, np.float32)
    for k, steps_k in enumerate(steps):
        lanes = (idx == k) & active
        expected[lanes] = halve(x[lanes], steps_k)
    assert np.array_equal(y.numpy(), expected)


@pytest.mark.parametrize('merged', [False, True])
def test_a_call_of_one_code_runs_it_without_a_loop(merged):
    # One target (or several of one code) keeps its computed outputs in the call, which
    # runs the code once for the lanes that call it: no loop picks them, nothing is copied
    # out of the call. Lanes past the targets, masked-off lanes and lanes past the end of
    # the last vector (n is no multiple of the width) give zeros and write nothing.
    n = 1003
    rng = np.random.default_rng(3)
    idx = rng.integers(0, 4 if merged else 2, n).astype(np.uint32)
    active = rng.random(n) < 0.8
    x = rng.uniform(0, 2, n).astype(np.float32)
    hits = UInt32(np.zeros(n, np.uint32))

    def target(v, active):
        pbc.scatter_add(hits, UInt32(1), pbc.arange(UInt32, n), active)
        return pbc.sqrt(v) * 3 + 1

    funcs = [target] * (3 if merged else 1)
    y = pbc.switch(UInt32(idx), funcs, Float(x), Bool(active), mode='symbolic')
    pbc.schedule(y)
    kernel, = pbc.evaluate.take_kernels()
    call, = kernel.calls
    assert len(set(call.code)) == 1 and sum(i.op == 'sqrt' for i in kernel.instrs) == 1
    from pbc.backend.llvm_render import render
    ir = render(kernel, 16)
    assert '%C0.head' not in ir and 'switch' not in ir
    hits = UInt32(np.zeros(n, np.uint32))
    y = pbc.switch(UInt32(idx), funcs, Float(x), Bool(active), mode='symbolic')
    calls = active & (idx < len(funcs))
    assert np.array_equal(y.numpy(), np.where(calls, np.sqrt(x) * 3 + 1, 0).astype(np.float32))
    assert np.array_equal(hits.numpy(), calls.astype(np.uint32))


def test_a_call_of_one_code_in_a_loop_skips_vectors_without_callers():
    # Inside a loop lanes finish at different iterations: the code is branched around for
    # vectors where no lane calls it, and lanes that finished neither change nor write.
    n = 1000
    steps = np.random.default_rng(4).integers(0, 40, n).astype(np.uint32)
    hits = UInt32(np.zeros(n, np.uint32))
    lane = pbc.arange(UInt32, n)

    def target(v, active):
        pbc.scatter_add(hits, UInt32(1), lane, active)
        return v * 0.5 + 1

    def body(i, v):
        return i + 1, pbc.switch(UInt32(0), [target], v, Bool(True))

    limit = UInt32(steps)
    i, v = pbc.while_loop((UInt32(0), Float(np.zeros(n, np.float32))),
                          lambda i, v: i < limit, body)
    pbc.schedule(v)
    kernel, = pbc.evaluate.take_kernels()
    from pbc.backend.llvm_render import render
    assert 'br i1 %C0.any, label %C0.t0, label %C0.merge' in render(kernel, 16)
    i, v = pbc.while_loop((UInt32(0), Float(np.zeros(n, np.float32))),
                          lambda i, v: i < limit, body)
    expected = np.zeros(n, np.float32)
    for k in range(n):
        for _ in range(steps[k]):
            expected[k] = expected[k] * np.float32(0.5) + np.float32(1)
    assert np.array_equal(v.numpy(), expected) and np.array_equal(hits.numpy(), steps)


def _subroutines(ir):
    """{function name: (number of caller values it takes, its attribute group)}."""
    out = {}
    for line in ir.split('\n'):
        m = re.match(r'define internal fastcc .* (@C\d+\.f\d+)\((.*)\) (#\d) \{', line)
        if m:
            params = m.group(2).split(', ')[3:]       # after %params, %active and the mask
            out[m.group(1)] = (len(params), m.group(3))
    return out


def test_pointer_tables_are_built_once_and_passed_to_the_targets():
    # Targets that gather from their instance's arrays read them through per-lane pointer
    # tables (addresses and sizes of every instance's buffer): the kernel's entry builds
    # them once, and each target's function takes them as parameters.
    class Texture(pbc.Object):
        def __init__(self, values):
            self.values = Float(values)

        def lookup(self, i):
            return pbc.gather(Float, self.values, i)

    class Scaled(Texture):
        def lookup(self, i):
            return pbc.gather(Float, self.values, i) * 2

    objs = [Texture([1, 2, 3]), Scaled([4, 5, 6]), Texture([7, 8, 9])]
    ptrs = Ptr[Texture]([objs[k % 3] for k in range(12)])
    i = UInt32(np.arange(12, dtype=np.uint32) % 3)
    y = ptrs.lookup(i)
    pbc.schedule(y)
    kernel, = pbc.evaluate.take_kernels()
    from pbc.backend.llvm_render import render
    ir = render(kernel, 8)
    assert ir.count(' = alloca [3 x ptr]') == 1 and ir.count(' = alloca [3 x i64]') == 1
    functions = [line for line in ir.splitlines() if line.startswith('define internal')]
    assert len(functions) == 2 and all('.tab, ptr %lp' in f for f in functions)
    want = [[1, 2, 3], [8, 10, 12], [7, 8, 9]]
    assert y.numpy().tolist() == [want[k % 3][k % 3] for k in range(12)]


def test_call_inputs_are_the_subroutine_parameters():
    # Assembly lists what each target reads from its caller: operands, outputs passed
    # through unchanged, and what a nested call's targets read. They are its subroutine's
    # parameters, each once.
    n = 24
    base = Float(np.arange(n, dtype=np.float32))
    a, b, c = base * 2, base + 5, pbc.sqrt(base)
    idx = UInt32(np.arange(n, dtype=np.uint32) % 2)
    inner = UInt32(np.arange(n, dtype=np.uint32) // 3 % 2)

    def t0(x):
        return x + a + a, b                                   # reads x and a; passes b

    def t1(x):
        y = pbc.switch(inner, [lambda v: v * c, lambda v: v - c], x)
        return y, b * 2

    y, z = pbc.switch(idx, [t0, t1], base + 1)
    pbc.schedule(y, z)
    kernel, = pbc.evaluate.take_kernels()
    from pbc.backend.llvm_render import render
    funcs = _subroutines(render(kernel, 8))
    # The nested call is numbered first: its targets take v and c. The outer ones take x,
    # a and b, and x, the nested call's keys and lanes, c and b * 2 (traced outside the
    # call: it does not depend on it).
    assert {name: count for name, (count, _) in funcs.items()} == {
        '@C0.f0': 2, '@C0.f1': 2, '@C1.f0': 3, '@C1.f1': 5}
    xs, bs, cs = np.arange(n) + 1.0, np.arange(n) + 5.0, np.sqrt(np.arange(n))
    ks = np.arange(n)
    inner_y = np.where(ks // 3 % 2 == 0, xs * cs, xs - cs)
    np.testing.assert_allclose(y.numpy(), np.where(ks % 2 == 0, xs + 4 * ks, inner_y),
                               rtol=1e-6)
    np.testing.assert_allclose(z.numpy(), np.where(ks % 2 == 0, bs, 2 * bs))


def test_large_targets_stay_subroutines(monkeypatch):
    # Targets with more code than a call costs are real subroutines (LLVM may not inline
    # them: one huge kernel compiles slowly and runs slower); small targets are inlined, and
    # all of them with PBC_INLINE_CALLS=1.
    from pbc.backend.llvm_render import INLINE_SIZE, render

    def body(terms):
        def f(x):
            for k in range(terms):
                x = pbc.fma(x, 0.5, 0.01 * k)
            return x
        return f

    xs = np.linspace(0, 1, 32, dtype=np.float32)
    terms = [1, 2, INLINE_SIZE + 1]
    keys = np.arange(32) % 3
    y = pbc.switch(UInt32(keys.astype(np.uint32)), [body(t) for t in terms], Float(xs))
    pbc.schedule(y)
    kernel, = pbc.evaluate.take_kernels()
    groups = _subroutines(render(kernel, 8)).values()        # #2: alwaysinline, #1: noinline
    assert [g for _, g in groups] == ['#2', '#2', '#1']
    monkeypatch.setattr(pbc.config, 'INLINE_CALLS', True)
    assert [g for _, g in _subroutines(render(kernel, 8)).values()] == ['#2', '#2', '#2']
    monkeypatch.setattr(pbc.config, 'INLINE_CALLS', False)
    # Targets that repeat most of each other's code (here: prefixes of one chain), enough
    # of it to pay for O2's compile time, are all inlined, and the kernel optimized with
    # O2, which computes the shared part once.
    from pbc.backend.llvm_jit import _short_pipeline
    for terms, shared in ([40, 50, 60], False), ([200, 250, 300], True):
        y = pbc.switch(UInt32(keys.astype(np.uint32)), [body(t) for t in terms], Float(xs))
        pbc.schedule(y)
        kernel, = pbc.evaluate.take_kernels()
        call, = kernel.calls
        # (and each target's argument)
        assert (call.size, call.distinct) == (sum(terms) + 3, max(terms) + 1)
        inlined = ['#2' if shared else '#1'] * 3
        assert [g for _, g in _subroutines(render(kernel, 8)).values()] == inlined
        assert _short_pipeline(kernel) != shared
        expected = xs.astype(np.float64)
        for k in range(max(terms)):
            step = np.array([k < terms[key] for key in keys])
            expected = np.where(step, expected * 0.5 + 0.01 * k, expected)
        np.testing.assert_allclose(y.numpy(), expected, rtol=1e-5)


def test_call_optimizations():
    # An output nobody reads is removed with its code; an output all targets compute alike
    # (from values outside the call) comes out of the call; a literal argument folds inside
    # the targets.
    offset = Float(np.arange(20, dtype=np.float32)) + 1

    class Part(pbc.Object):
        def __init__(self, k):
            self.k = k

        def f(self, x, scale):
            return x * self.k * scale, pbc.sqrt(x) + self.k, offset * 1.0

    objs = [Part(2), Part(3)]
    ptrs = Ptr[Part]([objs[k % 2] for k in range(20)])
    x = Float(np.arange(20, dtype=np.float32))

    def run():
        a, _unused, same = ptrs.f(x, 2.0)
        return a, same

    (a, same), kernel, rec = compiled(run, True)
    assert a == [k * (k % 2 + 2) * 2 for k in range(20)]
    assert same == [k + 1 for k in range(20)]
    assert rec['call_outputs_removed'] == 2 and rec['call_targets'] == 2
    assert not kernel.uses('sqrt')                     # the unused output's code is gone
    assert sum(r >= 0 for r in kernel.calls[0].results) == 1     # one output left
    (a2, same2), kernel2, rec2 = compiled(run, False)
    assert (a2, same2) == (a, same) and rec2['call_outputs_removed'] == 0
    assert kernel2.uses('sqrt')


def test_instances_of_a_class_share_code_through_closure_data():
    # Attributes that are JIT arrays are read per lane from a table (closure data), so
    # instances that differ only in their values run one copy of the code.
    class Lens(pbc.Object):
        def __init__(self, k):
            self.k = Float(k)

        def f(self, x):
            return x * self.k + 1

    objs = [Lens(k) for k in range(12)]
    ptrs = Ptr[Lens]([objs[k % 12] for k in range(50)])
    x = Float(np.arange(50, dtype=np.float32))
    # (OptimizeCalls would compute this pure method outside the call: test_devirtualization)
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory), \
            pbc.scoped_set_flag(pbc.JitFlag.OptimizeCalls, False):
        pbc.kernel_history_clear()
        y = ptrs.f(x)
        assert y.numpy().tolist() == [k * (k % 12) + 1 for k in range(50)]
        rec = pbc.kernel_history()[-1]
    assert rec['call_targets'] == 12 and rec['call_targets_merged'] == 11
    assert all(type(o.k) is Float and o.k.numpy().tolist() == [k] for k, o in enumerate(objs))


def test_devirtualization():
    # An output that every target computes alike from the arguments, outside values and
    # literals is computed outside the call (zero on lanes that call nothing); the others
    # stay in the call. When every output is alike, no call is left at all.
    class Base(pbc.Object):
        pass

    class A(Base):
        def f(self, x, y):
            return x * 2 + y, x - 1, pbc.sqrt(x)

    class B(Base):
        def f(self, x, y):
            return y + x * 2, x + 1, pbc.sqrt(x)

    objs = [A(), B(), None]
    ptrs = Ptr[Base]([objs[k % 3] for k in range(30)])
    x, y = Float(np.arange(30, dtype=np.float32)), Float(1)

    def sqrts(kernel):
        return sum(i.op == 'sqrt' for i in kernel.instrs)

    (alike, other, root), kernel, rec = compiled(lambda: ptrs.f(x, y), True)
    ref = [(k * 2 + 1, k - 1, np.sqrt(np.float32(k))) if k % 3 == 0 else
           (k * 2 + 1, k + 1, np.sqrt(np.float32(k))) if k % 3 == 1 else (0, 0, 0)
           for k in range(30)]
    assert alike == [r[0] for r in ref] and other == [r[1] for r in ref]
    np.testing.assert_allclose(root, [r[2] for r in ref], rtol=1e-7)
    assert rec['call_outputs'] == 3 and rec['call_outputs_removed'] == 2
    outs2, kernel2, rec2 = compiled(lambda: ptrs.f(x, y), False)
    assert outs2 == [alike, other, root] and rec2['call_outputs_removed'] == 0
    assert (sqrts(kernel), sqrts(kernel2)) == (1, 2)    # once outside, not in each target

    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory):
        pbc.kernel_history_clear()
        z = pbc.dispatch(ptrs, lambda o, x: (o.f(x, y)[2], x), x)
        pbc.eval(z)
        assert pbc.kernel_history()[-1]['call_targets'] == 0       # no call left
    assert z[1].numpy().tolist() == [k if k % 3 != 2 else 0 for k in range(30)]


def test_devirtualization_with_side_effects():
    # Targets that write memory keep computed outputs inside the call (moved after it, they
    # could see memory the targets wrote); an output that is an argument still comes out.
    log = UInt32(np.zeros(4, dtype=np.uint32))

    class Counter(pbc.Object):
        def __init__(self, slot):
            self.slot = slot

        def f(self, x):
            pbc.scatter_reduce(pbc.ReduceOp.Add, log, UInt32(1), UInt32(self.slot))
            return x, x + 1

    objs = [Counter(0), Counter(3)]
    ptrs = Ptr[Counter]([objs[k % 2] for k in range(10)])
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory):
        pbc.kernel_history_clear()
        same, plus = ptrs.f(Float(np.arange(10, dtype=np.float32)))
        pbc.eval(same, plus)
        rec = pbc.kernel_history()[-1]
    assert same.numpy().tolist() == list(range(10))
    assert plus.numpy().tolist() == list(range(1, 11))
    assert log.numpy().tolist() == [5, 0, 0, 5]
    assert rec['call_outputs'] == 2 and rec['call_outputs_removed'] == 1


class Affine(pbc.Object):
    def __init__(self, a, b):
        self.a, self.b = Float(a), Float(b)      # closure data

    def eval(self, x):
        return pbc.fma(x, self.a, self.b)


AFFINE = [Affine(k * 0.5, 1 - k) for k in range(6)]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(-1, len(AFFINE) - 1), min_size=1, max_size=45),
       st.sampled_from(MODES), st.booleans(), st.booleans())
def test_random_patterns_with_closure_data(picks, mode, merge, optimize):
    objs = [None if p < 0 else AFFINE[p] for p in picks]
    xs = np.linspace(-3, 3, len(picks), dtype=np.float32)
    with pbc.scoped_set_flag(pbc.JitFlag.MergeFunctions, merge), \
            pbc.scoped_set_flag(pbc.JitFlag.OptimizeCalls, optimize):
        y = pbc.dispatch(Ptr[Affine](objs), lambda o, x: o.eval(x),
                         Float(xs), mode=mode)
        got = y.numpy()
    ref = [0 if o is None else np.float32(x) * np.float32(o.a.numpy()[0])
           + np.float32(o.b.numpy()[0]) for o, x in zip(objs, xs)]
    np.testing.assert_allclose(got, np.array(ref, dtype=np.float32), rtol=1e-6, atol=1e-6)


class Mesh(pbc.Object):
    """Array attributes of different lengths (closure data by pointer) and a width-1 one."""

    def __init__(self, n, k):
        self.vertices = Float(np.arange(3 * n, dtype=np.float32) * (k + 1))   # n Array3f
        self.weight = Float(k + 0.5)

    def eval(self, i):
        p = pbc.gather(Array3f, self.vertices, i)
        return (p.x + p.y * 2 + p.z) * self.weight

    def ref(self, i):
        v = self.vertices.numpy()
        if 3 * i + 2 >= len(v):
            return np.float32(0)
        p = v[3 * i:3 * i + 3]
        return (p[0] + p[1] * np.float32(2) + p[2]) * self.weight.numpy()[0]


MESHES = [Mesh(n, k) for k, n in enumerate([4, 7, 1, 4, 12, 3])]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, len(MESHES) - 1), st.integers(0, 13)), min_size=1,
                max_size=45), st.sampled_from(MODES), st.booleans())
def test_random_patterns_with_array_attributes(picks, mode, optimize):
    # Gathers from array attributes go through a pointer per lane to the lane's own
    # instance's array (bounds checked against its own size), in a call or, devirtualized,
    # outside it.
    objs = [None if p < 0 else MESHES[p] for p, _ in picks]
    with pbc.scoped_set_flag(pbc.JitFlag.OptimizeCalls, optimize):
        y = pbc.dispatch(Ptr[Mesh](objs), lambda o, i: o.eval(i),
                         UInt32(np.array([i for _, i in picks], dtype=np.uint32)), mode=mode)
    ref = [0 if o is None else o.ref(i) for o, (_, i) in zip(objs, picks)]
    np.testing.assert_allclose(y.numpy(), np.array(ref, dtype=np.float32), rtol=1e-6)


@pytest.mark.parametrize('optimize', [False, True])
def test_array_attributes_share_one_subroutine(optimize):
    # Six meshes, one subroutine. With OptimizeCalls, even that goes: every target computes
    # its output alike from the closure data (a pointer and a value per lane), so the
    # gathers run outside any call.
    ptrs = Ptr[Mesh]([MESHES[k % 6] for k in range(64)])
    before = [m.vertices.numpy().copy() for m in MESHES]
    (y,), kernel, rec = compiled(lambda: (ptrs.eval(UInt32(np.arange(64, dtype=np.uint32) % 5)),),
                                 optimize)
    if optimize:
        assert rec['call_targets'] == 0 and kernel.uses('lane_ptr') and not kernel.calls
    else:
        assert rec['call_targets'] == 6 and rec['call_targets_merged'] == 5
    assert all(np.array_equal(b, m.vertices.numpy()) for b, m in zip(before, MESHES))
    assert y == [MESHES[k % 6].ref(k % 5) for k in range(64)]


@pytest.mark.parametrize('mode', MODES)
def test_array_attributes_in_loops_nested_calls_and_scatters(mode):
    # An outer target's array attribute read inside a loop and inside a nested call; a
    # scatter into an instance's own array still reaches that array.
    class Inner(pbc.Object):
        def __init__(self, k):
            self.k = k

        def f(self, mesh, i):
            return mesh.eval(i) * self.k

    class Outer(pbc.Object):
        def __init__(self, n, k):
            self.mesh = Mesh(n, k)
            self.hits = UInt32(np.zeros(2, dtype=np.uint32))

        def g(self, inner, i):
            def body(j, acc):
                return j + 1, acc + pbc.gather(Float, self.mesh.vertices, i + j)
            _, acc = pbc.while_loop((UInt32(0), Float(0)), lambda j, acc: j < 2, body)
            pbc.scatter_reduce(pbc.ReduceOp.Add, self.hits, UInt32(1), UInt32(0))
            mesh = self.mesh
            return acc + pbc.dispatch(inner, lambda o, i: o.f(mesh, i), i)

    outers = [Outer(3, 1), Outer(5, 2)]
    inners = [Inner(1), Inner(-2)]
    buffers = [_runtime.device_address(o.hits) for o in outers]     # (where kernels write)
    n = 24
    po = Ptr[Outer]([outers[k % 2] if k % 5 else None for k in range(n)])
    pi = Ptr[Inner]([inners[k // 3 % 2] for k in range(n)])
    idx = np.arange(n, dtype=np.uint32) % 6
    y = pbc.dispatch(po, lambda o, inner, i: o.g(inner, i), pi, UInt32(idx), mode=mode)
    ref = []
    for k in range(n):
        if k % 5 == 0:
            ref.append(0)
            continue
        o, inner, i = outers[k % 2], inners[k // 3 % 2], int(idx[k])
        v = o.mesh.vertices.numpy()
        acc = sum(v[i + j] if i + j < len(v) else 0 for j in range(2))
        ref.append(acc + o.mesh.ref(i) * inner.k)
    np.testing.assert_allclose(y.numpy(), np.array(ref, dtype=np.float32), rtol=1e-6)
    calls = [sum(1 for k in range(n) if k % 5 and k % 2 == j) for j in range(2)]
    assert [o.hits.numpy().tolist() for o in outers] == [[c, 0] for c in calls]
    # written in place: nothing the call made held the arrays (which would force a copy)
    assert [_runtime.var_info(o.hits.index)[6]
            for o in outers] == buffers


def test_closure_data_of_some_classes_only():
    # Closure data is per attribute, for the targets that have it: the six instances of A
    # (other values, other arrays) run one copy of their code next to B's. An output
    # nobody reads does not keep otherwise equal targets apart.
    class Base(pbc.Object):
        pass

    class A(Base):
        def __init__(self, k):
            self.k = Float(k)
            self.table = Float(np.arange(k + 2, dtype=np.float32) * 10)

        def f(self, x, i):
            return x * self.k + pbc.gather(Float, self.table, i), x + self.k

    class B(Base):
        def __init__(self):
            self.k = UInt32(7)                  # the same name, another type

        def f(self, x, i):
            return x - Float(self.k), x * 0

    objs = [A(k) for k in range(6)] + [B()]
    n = 70
    ptrs = Ptr[Base]([objs[k % 7] for k in range(n)])
    x = Float(np.arange(n, dtype=np.float32))
    i = UInt32(np.arange(n, dtype=np.uint32) % 4)
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory):
        pbc.kernel_history_clear()
        y, unused = ptrs.f(x, i)
        del unused
        pbc.eval(y)
        rec = pbc.kernel_history()[-1]
    assert rec['call_targets'] == 7 and rec['call_targets_merged'] == 5
    ref = [k - 7 if k % 7 == 6 else
           k * (k % 7) + (10 * (k % 4) if k % 4 < k % 7 + 2 else 0) for k in range(n)]
    assert y.numpy().tolist() == ref


def test_literal_arguments_fold_inside_the_targets():
    # A JIT literal argument is not passed in: the targets use it as the literal it is, so
    # x * one folds to x and x * zero to 0 in their code (and min(x, 5) stays).
    class Base(pbc.Object):
        pass

    class A(Base):
        def f(self, x, one, zero):
            return pbc.minimum(x * one, 5.0) + x * zero

    class B(Base):
        def f(self, x, one, zero):
            return pbc.maximum(x * one, 5.0) + x * zero

    objs = [A(), B()]
    ptrs = Ptr[Base]([objs[k % 2] for k in range(16)])
    x = Float(np.arange(16, dtype=np.float32))

    (y,), _, rec = compiled(lambda: (ptrs.f(x, Float(1), Float(0)),), True)
    (y2,), _, rec2 = compiled(lambda: (ptrs.f(x, Float(1), Float(0)),), False)
    assert y == y2 == [min(k, 5) if k % 2 == 0 else max(k, 5) for k in range(16)]
    # three arguments per target; with folding only x is passed in
    assert rec['call_inputs'] == 6 and rec['call_inputs_removed'] == 4
    assert rec2['call_inputs_removed'] == 0 and rec2['ir_ops'] > rec['ir_ops']


@pytest.mark.parametrize('optimize', [True, False])
def test_one_target_returning_its_argument(optimize):
    idx = UInt32(np.array([0, 1, 0, 5], dtype=np.uint32))
    x = Float(np.array([1, 2, 3, 4], dtype=np.float32))
    with pbc.scoped_set_flag(pbc.JitFlag.OptimizeCalls, optimize):
        y, z = pbc.switch(idx, [lambda v: (v, v * 2)], x)
        assert y.numpy().tolist() == [1, 0, 3, 0] and z.numpy().tolist() == [2, 0, 6, 0]


@pytest.mark.parametrize('optimize', [True, False])
def test_alike_outputs_are_zero_where_nothing_is_called(optimize):
    # Lanes pointing to an instance without the method call nothing: an output moved out
    # of the call must still be zero there.
    class Base(pbc.Object):
        pass

    class With(Base):
        def __init__(self, k):
            self.k = k

        def m(self, x):
            return x + 1, x * self.k

    class Without(Base):
        pass

    objs = [With(2), Without(), With(3), None]
    ptrs = Ptr[Base]([objs[k % 4] for k in range(12)])
    x = Float(np.arange(12, dtype=np.float32))
    with pbc.scoped_set_flag(pbc.JitFlag.OptimizeCalls, optimize):
        a, b = ptrs.m(x)
        assert a.numpy().tolist() == [k + 1 if k % 4 in (0, 2) else 0 for k in range(12)]
        assert b.numpy().tolist() == [k * [2, 0, 3, 0][k % 4] for k in range(12)]


@pytest.mark.parametrize('mode', MODES)
def test_sparse_keys_without_tables(monkeypatch, mode):
    # Above a bound on instance ids, lanes find their targets' shared code, closure slots
    # and whether they call anything by comparing keys rather than reading tables.
    import importlib
    monkeypatch.setattr(importlib.import_module('pbc.backend.llvm_render'), 'CODE_TABLE_KEYS', 0)
    monkeypatch.setattr(importlib.import_module('pbc.dispatch'), 'TABLE_IDS', 0)

    class Base(pbc.Object):
        pass

    class Twice(Base):
        def f(self, x):
            return pbc.while_loop((UInt32(0), x), lambda i, v: i < 1,
                                  lambda i, v: (i + 1, v * 2))[1], x + 1

    class Other(Base):
        pass

    objs = [Twice(), Other(), Twice(), None]
    ptrs = Ptr[Base]([objs[k % 4] for k in range(12)])
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory), \
            pbc.scoped_set_flag(pbc.JitFlag.SymbolicCalls, mode == 'symbolic'):
        pbc.kernel_history_clear()
        y, z = ptrs.f(Float(np.arange(12, dtype=np.float32)))
        pbc.eval(y, z)
        assert y.numpy().tolist() == [2 * k if k % 4 in (0, 2) else 0 for k in range(12)]
        assert z.numpy().tolist() == [k + 1 if k % 4 in (0, 2) else 0 for k in range(12)]
        if mode == 'symbolic':
            assert pbc.kernel_history()[-1]['call_targets_merged'] == 1


class Texture:
    """A plain object held by instances: its JIT arrays are closure data too."""

    def __init__(self, values, scale):
        self.data, self.scale = Float(values), Float(scale)

    def eval(self, i):
        return pbc.gather(Float, self.data, i) * self.scale


class Textured(pbc.Object):
    def __init__(self, texture):
        self.texture = texture

    def eval(self, i):
        return self.texture.eval(i) + 1


@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('optimize', [False, True])
def test_closure_data_of_held_objects(mode, optimize):
    shared = Texture(np.arange(3, dtype=np.float32) * 7, 0.5)
    objs = [Textured(Texture(np.arange(n, dtype=np.float32) * (n + 1), n)) for n in (2, 5, 4)]
    objs.append(Textured(shared))
    objs.append(Textured(shared))                     # two instances hold the same texture
    n = 40
    ptrs = Ptr[Textured]([objs[k % 5] if k % 6 else None for k in range(n)])
    idx = np.arange(n, dtype=np.uint32) % 5
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory), \
            pbc.scoped_set_flag(pbc.JitFlag.OptimizeCalls, optimize), \
            pbc.scoped_set_flag(pbc.JitFlag.SymbolicCalls, mode == 'symbolic'):
        pbc.kernel_history_clear()
        y = ptrs.eval(UInt32(idx))
        pbc.eval(y)
        rec = pbc.kernel_history()[-1]
    ref = []
    for k in range(n):
        if k % 6 == 0:
            ref.append(0)
            continue
        tex, i = objs[k % 5].texture, idx[k]
        d = tex.data.numpy()
        ref.append((d[i] if i < len(d) else 0) * tex.scale.numpy()[0] + 1)
    np.testing.assert_allclose(y.numpy(), np.array(ref, dtype=np.float32), rtol=1e-6)
    if mode == 'symbolic':             # five instances, one subroutine (or, devirtualized, none)
        assert (rec['call_targets'], rec['call_targets_merged']) == ((0, 0) if optimize
                                                                     else (5, 4))
    assert type(shared.scale) is Float and shared.scale.numpy().tolist() == [0.5]


def test_reading_closure_data_as_a_python_value_is_an_error():
    # Inside a symbolic call an attribute's value differs per lane (closure data): reading
    # it as one Python value raises, naming the way out, instead of returning some lane's.
    class Base(pbc.Object):
        pass

    class Level(Base):
        def __init__(self, n):
            self.n = UInt32(n)

        def f(self, x):
            return x * float(self.n.numpy()[0])

    objs = [Level(2), Level(3)]
    ptrs = Ptr[Base]([objs[k % 2] for k in range(8)])
    x = Float(np.arange(8, dtype=np.float32))
    with pytest.raises(RuntimeError, match='symbolic call .* evaluated'):
        ptrs.f(x)
    y = pbc.dispatch(ptrs, lambda o, v: o.f(v), x, mode='evaluated')
    assert y.numpy().tolist() == [k * (k % 2 + 2) for k in range(8)]
    assert [o.n.numpy().tolist() for o in objs] == [[2], [3]]     # attributes restored


@pytest.mark.parametrize('mode', MODES)
def test_dispatch_in_plain_python_control_flow(mode):
    # Method calls on pointer arrays inside @pbc.syntax loops and branches.
    @pbc.syntax
    def bounce(ptrs, x, n):
        i = UInt32(0)
        acc = Float(0)
        while i < n:
            if x > 0.5:
                v, _ = ptrs.eval(x)
                acc += v
            else:
                acc -= 1
            x = x * 0.75
            i += 1
        return acc

    objs = [SHAPES[k % 5] if k % 4 else None for k in range(21)]
    xs = np.linspace(0, 3, 21, dtype=np.float32)
    with pbc.scoped_set_flag(pbc.JitFlag.SymbolicCalls, mode == 'symbolic'), \
            pbc.scoped_set_flag(pbc.JitFlag.SymbolicLoops, mode == 'symbolic'), \
            pbc.scoped_set_flag(pbc.JitFlag.SymbolicConditionals, mode == 'symbolic'):
        got = bounce(Ptr[Shape](objs), Float(xs), UInt32(3)).numpy()
    ref = []
    for o, x in zip(objs, xs):
        acc, x = np.float32(0), np.float32(x)
        for _ in range(3):
            if x > 0.5:
                acc += 0 if o is None else o.ref(x)[0]
            else:
                acc -= 1
            x = x * np.float32(0.75)
        ref.append(acc)
    np.testing.assert_allclose(got, np.array(ref, dtype=np.float32), rtol=1e-5)


@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('optimize', [False, True])
def test_scatters_into_array_attributes(mode, optimize):
    # Scatters into an instance's own array go through a pointer per lane too: instances
    # with arrays of different sizes share one subroutine, each array gets its own lanes'
    # writes (in place), and an index past an array's end writes nothing.
    class Bins(pbc.Object):
        def __init__(self, n, k):
            self.hist = UInt32(np.zeros(n, dtype=np.uint32))
            self.last = Float(np.full(n, -1, dtype=np.float32))
            self.k = Float(k)

        def record(self, i, x):
            pbc.scatter_reduce(pbc.ReduceOp.Add, self.hist, UInt32(1), i)
            pbc.scatter(self.last, x * self.k, i)
            return x + 1

    objs = [Bins(n, k) for k, n in enumerate([3, 5, 4])]
    n = 30
    sel = [objs[k % 3] if k % 7 else None for k in range(n)]
    idx = np.arange(n, dtype=np.uint32) % 6
    xs = np.arange(n, dtype=np.float32)
    buffers = [_runtime.device_address(o.hist) for o in objs]       # (where kernels write)
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory), \
            pbc.scoped_set_flag(pbc.JitFlag.OptimizeCalls, optimize), \
            pbc.scoped_set_flag(pbc.JitFlag.SymbolicCalls, mode == 'symbolic'):
        pbc.kernel_history_clear()
        y = Ptr[Bins](sel).record(UInt32(idx), Float(xs))
        pbc.eval(y)
        rec = pbc.kernel_history()[-1]
    assert y.numpy().tolist() == [x + 1 if o is not None else 0 for o, x in zip(sel, xs)]
    for j, o in enumerate(objs):
        size = len(o.hist)
        hist = np.zeros(size, dtype=np.uint32)
        written = [{-1.0} for _ in range(size)]   # (lanes writing one slot leave one of
        for k in range(n):                        # their values, unspecified which)
            if sel[k] is o and idx[k] < size:
                hist[idx[k]] += 1
                written[idx[k]] = written[idx[k]] - {-1.0} | {float(xs[k] * j)}
        assert o.hist.numpy().tolist() == hist.tolist()
        assert all(v in w for v, w in zip(o.last.numpy().tolist(), written))
    if mode == 'symbolic':
        assert rec['call_targets'] == 3 and rec['call_targets_merged'] == 2
        assert [_runtime.var_info(o.hist.index)[6] for o in objs] == buffers


# ---- regressions found by tests/test_control_fuzz.py's calls ---------------------------------
def test_bool_outputs_moved_out_of_a_call_stay_bool():
    idx = UInt32(np.array([0, 1, 2, 1], dtype=np.uint32))
    b = Bool(np.array([True, True, False, True]))
    r = pbc.switch(idx, [lambda v: v, lambda v: v], b)
    assert type(r) is Bool and r.numpy().tolist() == [True, True, False, True][:2] + [False, True]


def test_multi_line_ops_inside_loops_inside_targets():
    # x << n is several LLVM lines; its value, used in a loop in the target, is the
    # target's own (not a parameter of its function).
    idx = UInt32(np.arange(8, dtype=np.uint32) % 2)
    x = UInt32(np.arange(8, dtype=np.uint32))

    def shifted(v):
        s = v << 9
        return pbc.while_loop((UInt32(0), v), lambda i, a: i < 2, lambda i, a: (i + 1, a + s))[1]

    r = pbc.switch(idx, [shifted, lambda v: v + 1], x)
    assert r.numpy().tolist() == [k + 2 * (k << 9) if k % 2 == 0 else k + 1 for k in range(8)]


def test_gathering_a_symbolic_loops_output_in_an_evaluated_call():
    n = 16
    u0 = UInt32(np.arange(n, dtype=np.uint32))
    _, u1 = pbc.while_loop((pbc.zeros(UInt32, n), u0 * 3), lambda c, u: c < 2,
                           lambda c, u: (c + 1, u0 - u), mode='symbolic')
    a, b = pbc.switch(u1 & 3, [lambda p, q: (p, q), lambda p, q: (p, UInt32(1))], u0, u1,
                      mode='evaluated')
    ref_u1 = [(k - (k - 3 * k)) & 0xFFFFFFFF for k in range(n)]
    assert b.numpy().tolist() == [v if v & 3 == 0 else 1 if v & 3 == 1 else 0 for v in ref_u1]


def test_calls_without_outputs_or_needed_results():
    idx = UInt32(np.arange(8, dtype=np.uint32) % 3)
    x = Float(np.arange(8, dtype=np.float32))
    assert pbc.switch(idx, [lambda v: (), lambda v: ()], x) == ()

    def body(i, acc, unused):
        return i + 1, acc + 1, pbc.switch(idx, [lambda v: v + 1, lambda v: v * 2], unused)

    _, acc, _ = pbc.while_loop((UInt32(0), x, x), lambda i, a, u: i < 3, body)
    assert acc.numpy().tolist() == [k + 3 for k in range(8)]


def test_loops_left_to_the_flag_inside_symbolic_calls_are_symbolic():
    idx = UInt32(np.arange(6, dtype=np.uint32) % 2)
    x = UInt32(np.arange(6, dtype=np.uint32))

    def count(v):
        return pbc.while_loop((UInt32(0), v), lambda i, a: i < 3, lambda i, a: (i + 1, a + 1))[1]

    with pbc.scoped_set_flag(pbc.JitFlag.SymbolicLoops, False):
        r = pbc.switch(idx, [count, lambda v: v], x)
    assert r.numpy().tolist() == [k + 3 if k % 2 == 0 else k for k in range(6)]


def test_evaluated_targets_reading_wide_captured_arrays_get_a_clear_error():
    idx = UInt32(np.arange(8, dtype=np.uint32) % 2)
    x = Float(np.arange(8, dtype=np.float32))
    captured = x * 10
    with pytest.raises(RuntimeError, match='pass arrays as wide as the call'):
        pbc.switch(idx, [lambda v: v + captured, lambda v: v], x, mode='evaluated')
    r = pbc.switch(idx, [lambda v: v + captured, lambda v: v], x)       # symbolic: fine
    assert r.numpy().tolist() == [11 * k if k % 2 == 0 else k for k in range(8)]


# ---- Dr.Jit's calling conventions ------------------------------------------------------------
@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('as_keyword', [False, True])
def test_switch_mask_turns_lanes_off(mode, as_keyword):
    # A trailing Bool argument (or active=) is the call's mask: masked lanes run nothing
    # (no side effects) and give zeros; the targets get True in its place.
    hits = pbc.zeros(UInt32, 4)
    seen = []

    def count(x, lane, active):
        seen.append(active)
        pbc.scatter_add(hits, 1, lane)
        return x + 1

    def double(x, lane, active):
        seen.append(active)
        return x * 2

    index = UInt32(0, 0, 1, 1)
    x, lane = Float(1, 2, 3, 4), pbc.arange(UInt32, 4)
    mask = Bool(True, False, True, False)
    if as_keyword:
        r = pbc.switch(index, [count, double], x, lane, active=mask, mode=mode)
    else:
        r = pbc.switch(index, [count, double], x, lane, mask, mode=mode)
    assert r.numpy().tolist() == [2, 0, 6, 0]
    assert hits.numpy().tolist() == [1, 0, 0, 0]
    assert all(isinstance(a, Bool) and a.state == 'literal' and a[0] for a in seen)


def test_switch_with_a_python_index_calls_one_target():
    targets = [lambda x, active=True: x + 1, lambda x, active=True: x * 10]
    assert pbc.switch(0, targets, 5) == 6 and pbc.switch(1, targets, x=5) == 50
    assert pbc.switch(1, targets, active=True, x=5) == 50
    assert pbc.switch(1, targets, 5, False) is None
    assert pbc.switch(1, targets, x=5, active=False) is None


@pytest.mark.parametrize('mode', MODES)
def test_switch_keyword_arguments_and_names(mode):
    def f0(a, b):
        return dict(sum=a['key'] + b[0], swapped=(b[1], b[0]))

    def f1(a, b):
        return dict(sum=a['key'] * 3, swapped=b)

    r = pbc.switch(index=UInt32(0, 1, 0), targets=(f0, f1), b=(Float(10), Float(1, 2, 3)),
                   a={'key': Float(4, 5, 6)}, mode=mode)
    assert r['sum'].numpy().tolist() == [14, 15, 16]
    assert r['swapped'][0].numpy().tolist() == [1, 10, 3]
    assert r['swapped'][1].numpy().tolist() == [10, 2, 10]


@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('optimize', [True, False])
def test_targets_changing_their_arguments_in_place_change_the_callers(mode, optimize):
    def f(k):
        def target(x):
            x += k                   # the caller's object, on this target's lanes
            return x
        return target

    x = UInt32(1, 2, 3, 4)
    alias = x
    with pbc.scoped_set_flag(pbc.JitFlag.OptimizeCalls, optimize):
        r = pbc.switch(UInt32(0, 1, 2, 7), [f(10), f(100), f(1000)], x, mode=mode)
        lit = pbc.switch(UInt32(0, 1, 2), [f(10), f(100), f(1000)], UInt32(5), mode=mode)
    assert r.numpy().tolist() == [11, 102, 1003, 0]
    assert alias.numpy().tolist() == [11, 102, 1003, 4]     # (lane 3 calls nothing)
    assert lit.numpy().tolist() == [15, 105, 1005]


def test_an_evaluated_call_that_every_lane_makes_needs_no_gathers(capsys):
    # The target runs on the arguments as they are (copies of their objects, an in-place
    # change of which the caller's objects take) and its results are the call's, widened.
    def target(v):
        v += 1
        return v, 2.5, Float(7), v

    x = Float(1, 2, 3)
    with pbc.scoped_set_flag(pbc.JitFlag.PrintIR, True):
        r = pbc.switch(UInt32(1, 1, 1), [lambda v: (v, 0.0, Float(0), v), target], x,
                       mode='evaluated')
    ir = capsys.readouterr().out
    assert 'gather' not in ir and 'scatter' not in ir
    assert x.numpy().tolist() == [2, 3, 4] and r[0] is not r[3]
    assert [a.numpy().tolist() for a in r] == [[2, 3, 4], [2.5] * 3, [7] * 3, [2, 3, 4]]
    with pytest.raises(RuntimeError, match='width 2 for a call of width 3'):
        pbc.switch(UInt32(0, 0, 0), [lambda v: Float(1, 2)], x, mode='evaluated')


def test_targets_of_an_evaluated_call_run_in_few_evaluations(monkeypatch):
    # Each target writes its own lanes of the result: its scatter queues up behind those
    # of the targets before it instead of running them first. Targets whose kernels no
    # cache holds yet run in one evaluation, a kernel each, compiled together; where lane
    # counts repeat, in rounds (one kernel of two targets would be reused by no other
    # call), unless they repeat all over. Where the first target's kernel is compiled, each
    # target launches as soon as it is traced.
    x = pbc.arange(Float, 30)
    evaluate = importlib.import_module('pbc.evaluate')
    launches = []
    launch = evaluate._launch
    monkeypatch.setattr(evaluate, '_launch', lambda batch, bits: (
        launches.append(len(batch)) if batch else None, launch(batch, bits))[1])

    def kernel_sizes(keys, m, cold):
        index = UInt32(np.array(keys, dtype=np.uint32))
        pbc.eval(index, x)
        if cold:
            pbc.flush_kernel_cache()
        pbc.kernel_history_clear()
        launches.clear()
        with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
            r = pbc.switch(index, [lambda v, k=k: v * k + k for k in range(1, m + 1)], x,
                           mode='evaluated')
            sizes = sorted(h['size'] for h in pbc.kernel_history())
        k = np.array(keys) + 1.0
        assert r.numpy().tolist() == (np.arange(30) * k + k).tolist()
        return sizes, len(launches)

    assert kernel_sizes(np.repeat([0, 1, 2], [12, 10, 8]), 3, True) == ([8, 10, 12], 1)
    assert kernel_sizes(np.repeat([0, 1, 2], [12, 10, 8]), 3, False) == ([8, 10, 12], 3)
    assert kernel_sizes(np.arange(30) % 3, 3, True) == ([10, 10, 10], 3)     # (3 rounds)
    assert kernel_sizes(np.arange(30) % 6, 6, True) == ([5], 1)              # (all in one)
    assert kernel_sizes(np.arange(30) % 6, 6, False) == ([5], 1)   # (that one's compiled)


def test_disjoint_scatters_queue_up_and_plain_ones_keep_their_order():
    out = pbc.zeros(Float, 6)
    pbc.eval(out)
    pbc.kernel_history_clear()
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
        _runtime.scatter(out, Float(1, 2), UInt32(0, 1), True, 0, True)
        _runtime.scatter(out, Float(3, 4, 5), UInt32(2, 3, 4), True, 0, True)
        assert pbc.kernel_history() == []
        pbc.scatter(out, Float(9, 8), UInt32(4, 5))      # over a queued write: runs it first
        assert len(pbc.kernel_history()) == 2
    assert out.numpy().tolist() == [1, 2, 3, 4, 9, 8]


@pytest.mark.parametrize('mode', MODES)
def test_errors_in_targets_are_runtime_errors_with_the_cause(mode):
    def bad(x):
        raise KeyError('inside the target')

    with pytest.raises(RuntimeError, match='KeyError') as e:
        pbc.switch(UInt32(0, 1), [lambda x: x, bad], Float(1, 2), mode=mode)
    assert isinstance(e.value.__cause__, KeyError)
    assert pbc._runtime.mask_depth() == 0 and pbc._runtime.recording_depth() == 0


def test_pointer_arrays_keep_their_instances_alive():
    import gc

    class Disk(pbc.Object):
        pass

    class Circle(Disk):
        def __init__(self, r):
            self.r = r

        def eval(self, x):
            return x * self.r

    ptrs = Ptr[Disk]([Circle(2.0), None, Circle(-1.0)])       # temporaries
    gc.collect()
    assert ptrs.eval(Float(1, 2, 3)).numpy().tolist() == [2, 0, -3]
    picked = pbc.gather(Ptr[Disk], ptrs, UInt32(2, 0))           # keeps them too
    del ptrs
    gc.collect()
    assert picked.eval(Float(1, 2)).numpy().tolist() == [-1, 4]


@pytest.mark.parametrize('mode', MODES)
def test_method_calls_take_a_mask(mode):
    ptrs = Ptr[Shape]([SHAPES[0], SHAPES[1], SHAPES[0]])
    x = Float(1, 2, 3)
    mask = Bool(True, True, False)
    with pbc.scoped_set_flag(pbc.JitFlag.SymbolicCalls, mode == 'symbolic'):
        a = ptrs.eval(x, active=mask)
        b = ptrs.eval(x, mask)
    want, _ = reference([SHAPES[0], SHAPES[1], SHAPES[0]], [1, 2, 3], [True, True, False])
    for r in (a, b):
        np.testing.assert_allclose(r[0].numpy(), want)


@pytest.mark.parametrize('covered', [True, False])
def test_evaluated_results_are_written_in_full(covered):
    # Targets that cover every lane scatter into results that are not zeroed first (their
    # memory may come from the buffer cache with old values in it); otherwise the lanes
    # that call nothing read zero. Results of several leaves, Python numbers among them.
    n = 3001
    for _ in range(2):                              # (garbage in freed buffers of size n)
        pbc.eval(Float(np.full(n, 7.5, np.float32)) * 2, UInt32(np.full(n, 9, np.uint32)) + 1)
    idx = np.random.default_rng(2).integers(0, 3 if covered else 4, n).astype(np.uint32)
    x = np.arange(n, dtype=np.float32)
    targets = [lambda v: (v + 1, 2), lambda v: (v * 3, 5), lambda v: (v - 4, 7)]
    a, b = pbc.switch(UInt32(idx), targets, Float(x), mode='evaluated')
    calls = idx < 3
    fa = [x + 1, x * 3, x - 4]
    want_a = np.select([idx == k for k in range(3)], fa, 0).astype(np.float32)
    want_b = np.select([idx == k for k in range(3)], [2, 5, 7], 0)
    assert np.array_equal(a.numpy(), want_a) and np.array_equal(b.numpy(), want_b)
    assert calls.all() == covered


def test_evaluated_targets_reading_arrays_of_the_call_width_get_a_hint():
    # An evaluated target runs on its own lanes only: an array of the call's width read
    # from an enclosing scope does not fit them, and the error says why.
    wide = Float(1, 2, 3, 4)
    with pytest.raises(RuntimeError, match=r'each target runs on just the 2 lanes that call '
                                           r'it: pass arrays as wide as the call \(4\)'):
        pbc.switch(UInt32(0, 1, 0, 1), [lambda a: a + wide, lambda a: a], Float(0, 1, 2, 3),
                   mode='evaluated')


@pytest.mark.parametrize('mode', MODES)
def test_call_arguments_and_results_are_checked(mode):
    targets = [lambda a: a, lambda a: a * 2]
    with pytest.raises(ValueError, match=r'incompatible sizes \(encountered arrays of length 4'):
        pbc.switch(UInt32(0, 0, 1, 1), targets, Float(), mode=mode)
    with pytest.raises(RuntimeError, match='length 4 and 3'):
        pbc.switch(UInt32(0, 0, 1, 1), targets, Float(1, 2, 3), mode=mode)
    if mode == 'symbolic':
        with pytest.raises(RuntimeError, match="field 'result' is uninitialized"):
            pbc.switch(UInt32(0, 1), [lambda a: a, lambda a: Float()], Float(1, 2))
    with pytest.raises(RuntimeError, match=r"inconsistent dictionary keys for field 'result'"):
        pbc.switch(UInt32(0, 1), [lambda a: dict(a=a), lambda a: dict(b=a)], Float(1, 2),
                   mode=mode)


@pytest.mark.parametrize('optimize', [True, False])
def test_a_single_target_is_a_call_too(optimize, capfd):
    # One target is still a symbolic call (its outputs then move out of it): reading a
    # value or reducing over lanes inside it raises, as in any call, rather than seeing
    # the lanes that do not call it; its prints show only the lanes that call it.
    x, index = Float(1, 2, 3, 4), UInt32(0, 1, 0, 1)
    with pbc.scoped_set_flag(pbc.JitFlag.OptimizeCalls, optimize):
        for body in (lambda v: v - pbc.sum(v), lambda v: v + float(v[0])):
            with pytest.raises(RuntimeError, match='symbolic call'):
                pbc.switch(index, [body], x)
        r = pbc.switch(index, [lambda v: (pbc.print('v={v}', v=v), v * 2)[1]], x)
        assert r.numpy().tolist() == [2, 0, 6, 0]
    assert capfd.readouterr().out.strip() == 'v=[1, 3]'


@pytest.mark.parametrize('mode', MODES)
def test_a_call_sees_a_write_queued_into_its_argument(mode):
    # (a symbolic call read the argument without running the queued scatter: 12 for 30)
    t = Float([1.0, 2.0, 3.0, 4.0])
    pbc.scatter(t, Float(10.0), UInt32([3]))
    r = pbc.switch(UInt32([0, 0, 1, 1]), [lambda x: x * 2, lambda x: x * 3], t, mode=mode)
    assert r.numpy().tolist() == [2, 4, 9, 30]
