"""pbc.while_loop, pbc.if_stmt and pbc.Loop against plain Python run lane by lane, in
symbolic and evaluated mode; loop optimizations; error messages."""

import dataclasses

import numpy as np
import pytest
import suite_backend
from suite_backend import PCG32, Array3f, Bool, Float, Int32, UInt32

import pbc

MODES = ('symbolic', 'evaluated')
N = 37                        # not a multiple of any vector width: masked tails


def collatz_steps(v):
    n = 0
    while v != 1:
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        n += 1
    return n


@pytest.mark.parametrize('mode', MODES)
def test_collatz(mode):
    start = np.arange(1, N + 1, dtype=np.uint32)

    def body(x, steps):
        return pbc.select(x % 2 == 0, x // 2, 3 * x + 1), steps + 1

    x, steps = pbc.while_loop((UInt32(start), UInt32(0)), lambda x, s: x != 1, body,
                              mode=mode)
    assert steps.numpy().tolist() == [collatz_steps(int(v)) for v in start]
    assert (x.numpy() == 1).all()


@pytest.mark.parametrize('mode', MODES)
def test_nested_loops(mode):
    a = np.arange(N, dtype=np.uint32) % 6

    def outer(i, acc):
        _, acc = pbc.while_loop((UInt32(0), acc), lambda j, acc: j < i,
                                lambda j, acc: (j + 1, acc + j * i), mode=mode)
        return i + 1, acc

    _, acc = pbc.while_loop((UInt32(0), UInt32(0)), lambda i, acc: i < UInt32(a), outer,
                            mode=mode)
    ref = [sum(j * i for i in range(k) for j in range(i)) for k in a]
    assert acc.numpy().tolist() == ref


@pytest.mark.parametrize('mode', MODES)
def test_lanes_that_never_enter_keep_their_values(mode):
    x = Float(np.linspace(-2, 2, N, dtype=np.float32))
    y, = pbc.while_loop((x,), lambda y: y < 0, lambda y: (y + 0.75,), mode=mode)
    ref = np.linspace(-2, 2, N, dtype=np.float32)
    for _ in range(4):
        ref = np.where(ref < 0, ref + np.float32(0.75), ref)
    assert np.array_equal(y.numpy(), ref)
    assert np.array_equal(x.numpy(), np.linspace(-2, 2, N, dtype=np.float32))  # input intact


@pytest.mark.parametrize('mode', MODES)
def test_scatter_and_print_inside_a_loop(mode, capfd):
    trips = np.array([3, 0, 1, 2], dtype=np.uint32)
    hist = UInt32(np.zeros(3, dtype=np.uint32))

    def body(i):
        pbc.scatter_add(hist, 1, i)
        pbc.print('i={i}', i=i)
        return (i + 1,)

    pbc.while_loop((UInt32(0),), lambda i: i < UInt32(trips), body, mode=mode)
    assert hist.numpy().tolist() == [3, 2, 1]
    pbc.eval()
    if mode == 'symbolic':       # one line at kernel time: each lane's iterations in turn
        assert capfd.readouterr().out == 'i=[0, 1, 2, 0, 0, 1]\n'
    else:                        # one line per iteration, of all lanes (as Dr.Jit)
        assert capfd.readouterr().out == 'i=[0, 0, 0, 0]\ni=[1, 0, 1, 1]\ni=[2, 0, 1, 2]\n'


@pytest.mark.parametrize('mode', MODES)
def test_nested_state_types(mode):
    @dataclasses.dataclass
    class Ray:
        o: Array3f
        t: Float

    class Hit:
        DRJIT_STRUCT = {'dist': Float, 'idx': UInt32}

        def __init__(self, dist, idx):
            self.dist, self.idx = dist, idx

    rng = PCG32(N)
    state = (UInt32(0), Ray(Array3f(0, 1, 2), Float(0)), {'hit': Hit(Float(0), UInt32(0))},
             [rng], 'label')

    def body(i, ray, d, rngs, name):
        r = rngs[0]
        u = r.next_float32()
        return (i + 1, Ray(ray.o + u, ray.t + 1), {'hit': Hit(d['hit'].dist + u, i)}, [r],
                name)

    i, ray, d, rngs, name = pbc.while_loop(state, lambda i, *_: i < 5, body, mode=mode)
    ref_rng, ref = PCG32(N), np.zeros(N, dtype=np.float32)
    for _ in range(5):
        ref = ref + ref_rng.next_float32().numpy()
    assert name == 'label'
    assert np.allclose(ray.o.y.numpy(), 1 + ref) and np.allclose(d['hit'].dist.numpy(), ref)
    assert ray.t.numpy().tolist() == [5] * N and d['hit'].idx.numpy().tolist() == [4] * N
    assert np.array_equal(rngs[0].state.numpy(), ref_rng.state.numpy())


def test_python_condition_runs_as_python():
    calls = []

    def body(i, x):
        calls.append(i)
        return i + 1, x * 2

    assert pbc.while_loop((0, Float(1)), lambda i, x: i < 3, body)[1].numpy().tolist() == [8]
    assert calls == [0, 1, 2]


def test_symbolic_loop_is_one_kernel_with_a_loop():
    x = UInt32(np.arange(N, dtype=np.uint32))
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory):
        pbc.kernel_history_clear()
        for k in (10, 20):
            y, _ = pbc.while_loop((x, UInt32(0)), lambda x, i, k=k: i < k,
                                  lambda x, i: ((x + 1) ^ x, i + 1))
            ref = np.arange(N, dtype=np.uint32)
            for _ in range(k):
                ref = (ref + 1) ^ ref
            assert np.array_equal(y.numpy(), ref)
        hist = pbc.kernel_history()
    assert len(hist) == 2 and hist[0]['ir_ops'] == hist[1]['ir_ops'] < 20


def test_uniform_counter_is_scalar_in_llvm_ir():
    x = UInt32(np.arange(N, dtype=np.uint32))
    y, _ = pbc.while_loop((x, UInt32(0)), lambda x, i: i < 100,
                          lambda x, i: ((x + 1) ^ x, i + 1))
    pbc.schedule(y)
    kernel, = pbc.evaluate.take_kernels()
    from pbc.backend.llvm_render import render
    ir = render(kernel, 8)
    assert 'phi i32 [ 0,' in ir                    # the counter: one scalar register
    assert 'icmp ult i32' in ir and 'reduce.or' not in ir


def test_optimize_loops_removes_invariant_and_unused_state():
    x = Float(np.arange(N, dtype=np.float32))
    before = pbc.loop_stats()['invariant_removed']

    def body(i, inv, unused, acc):
        return i + 1, inv, unused * 3 + acc, acc + inv

    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory):
        pbc.kernel_history_clear()
        i, inv, unused, acc = pbc.while_loop((UInt32(0), x, Float(1), Float(0)),
                                             lambda i, *_: i < 4, body)
        assert np.array_equal(acc.numpy(), 4 * np.arange(N, dtype=np.float32))
        rec = pbc.kernel_history()[-1]
    assert pbc.loop_stats()['invariant_removed'] == before + 1       # inv
    assert rec['loop_state_removed'] == 1             # unused (i feeds the test: kept)
    with pbc.scoped_set_flag(pbc.JitFlag.OptimizeLoops, False):
        *_, acc2 = pbc.while_loop((UInt32(0), x, Float(1), Float(0)),
                                  lambda i, *_: i < 4, body)
        assert np.array_equal(acc2.numpy(), acc.numpy())


def test_a_loop_traced_again_starts_from_the_invariant_state_found_before():
    # A second trace of the same loop code records once: the state that its first trace
    # found loop-invariant (`scale`; `y` where the Python flag leaves it alone) stays out of
    # the loop from the start. The flag, read from an enclosing scope, selects another path
    # through the body: each value has a memory of its own.
    x = Float(np.arange(N, dtype=np.float32))

    def run(bump):
        @pbc.syntax
        def f(x, scale):
            i, y = UInt32(0), Float(1)
            while i < 3:
                x = x * scale + 1
                if bump:
                    y = y + x
                i += 1
            return x, y
        return f(x, Float(2))

    traced = set()
    for bump in (False, True, False, True):
        before = pbc.loop_stats()['rerecorded']
        out, y = run(bump)
        again = pbc.loop_stats()['rerecorded'] - before
        ref, ref_y = np.arange(N, dtype=np.float32), np.ones(N, np.float32)
        for _ in range(3):
            ref = ref * 2 + 1
            ref_y = ref_y + ref if bump else ref_y
        assert np.array_equal(out.numpy(), ref)
        assert np.array_equal(np.broadcast_to(y.numpy(), (N,)), ref_y)
        # (bump: no state is invariant; without the flag in the memory's key, its traces
        # would start from the other path's guess and record twice)
        assert again == (0 if bump or bump in traced else 1)
        traced.add(bump)


def test_a_loop_whose_remembered_invariant_state_changes_records_again():
    # The memory of invariant state is a guess: a later trace whose body changes that state
    # (y * s folds away for s = 1, not for s = 2, an array the body reads) records again
    # with it as loop state, and computes the right values.
    x = Float(np.arange(N, dtype=np.float32))

    def run(s):
        def body(i, y):
            return i + 1, y * s
        return pbc.while_loop((UInt32(0), x + 1), lambda i, y: i < 3, body)[1]

    for s in (1.0, 2.0, 1.0, 2.0):
        before = pbc.loop_stats()['rerecorded']
        y = run(Float(s))
        assert np.array_equal(y.numpy(), (np.arange(N, dtype=np.float32) + 1) * s ** 3)
        if s == 2:           # (the memory said y is invariant: wrong, so recorded again)
            assert pbc.loop_stats()['rerecorded'] - before == 1


@pytest.mark.parametrize('mode', MODES)
def test_if_stmt(mode):
    x = Int32(np.arange(N, dtype=np.int32) - 18)
    hits = UInt32(np.zeros(2, dtype=np.uint32))

    def neg(v):
        pbc.scatter_add(hits, 1, 0)
        return -v, 'same'

    def pos(v):
        pbc.scatter_add(hits, 1, 1)
        return v * 2, 'same'

    y, tag = pbc.if_stmt((x,), x < 0, neg, pos, mode=mode)
    ref = np.arange(N) - 18
    assert y.numpy().tolist() == np.where(ref < 0, -ref, ref * 2).tolist() and tag == 'same'
    assert hits.numpy().tolist() == [18, N - 18]
    assert pbc.if_stmt((1,), True, lambda v: v + 1, lambda v: v - 1) == 2


@pytest.mark.parametrize('mode', MODES)
def test_loop_inside_branch_runs_only_its_lanes(mode):
    # Lanes outside the branch would never finish this loop (x = 0 is a fixed point).
    x = UInt32(np.arange(N, dtype=np.uint32))

    def collatz(v):
        return pbc.while_loop((v, UInt32(0)), lambda v, s: v != 1,
                              lambda v, s: (pbc.select(v % 2 == 0, v // 2, 3 * v + 1), s + 1),
                              mode=mode)[1]

    steps = pbc.if_stmt((x,), x > 0, collatz, lambda v: UInt32(0), mode=mode)
    assert steps.numpy().tolist() == [0] + [collatz_steps(v) for v in range(1, N)]


def test_legacy_loop_object():
    rng = PCG32(N)
    i, result = UInt32(0), Float(0)
    loop = pbc.Loop('ao', state=lambda: (rng, i, result))
    while loop(i < 10):
        result += rng.next_float32()
        i += 1
    check_ten_draws(rng, i, result)


def check_ten_draws(rng, i, result):
    """The state after ten iterations of `result += rng.next_float32(); i += 1`."""
    ref_rng, ref = PCG32(N), np.zeros(N, dtype=np.float32)
    for _ in range(10):
        ref = ref + ref_rng.next_float32().numpy()
    assert np.allclose(result.numpy(), ref) and i.numpy().tolist() == [10] * N
    assert np.array_equal(rng.state.numpy(), ref_rng.state.numpy())


def test_legacy_loop_state_in_parts():
    # Dr.Jit 0.x's other form: put() the state in parts, then init().
    rng = PCG32(N)
    i, result = UInt32(0), Float(0)
    loop = pbc.Loop('ao')
    loop.put(lambda: (rng, i))
    loop.put(lambda: (result,))
    loop.set_max_iterations(10)
    loop.set_eval_stride(1024)
    loop.init()
    with pytest.raises(RuntimeError, match='put'):
        loop.put(lambda: ())
    while loop(i < 10):
        result += rng.next_float32()
        i += 1
    check_ten_draws(rng, i, result)
    with pytest.raises(RuntimeError, match='give its state'):
        pbc.Loop('no state')(i < 3)


def test_pcg32_bounded_is_a_loop():
    rng = PCG32(N)
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory):
        pbc.kernel_history_clear()
        r = rng.next_uint32_bounded(3_000_000_000)
        r.numpy()
        assert len(pbc.kernel_history()) == 1        # rejection sampling inside the kernel
    assert (r.numpy() < 3_000_000_000).all()


# ---- errors ----------------------------------------------------------------------------------
def test_type_change_names_the_variable():
    with pytest.raises(TypeError, match="'x' changed from Float32 to Float64"):
        pbc.while_loop((Float(1), UInt32(0)), lambda x, i: i < 3,
                       lambda x, i: (suite_backend.Float64(x), i + 1), labels=('x', 'i'))


def test_python_value_changed_by_body():
    with pytest.raises(TypeError, match="'n' is int 0, not a JIT array"):
        pbc.while_loop((UInt32(0), 0), lambda i, n: i < 3, lambda i, n: (i + 1, n + 1),
                       labels=('i', 'n'))


def test_structure_change():
    with pytest.raises(TypeError, match='structure'):
        pbc.while_loop(([UInt32(0)],), lambda v: v[0] < 3, lambda v: ([v[0] + 1, v[0]],))


def test_reading_a_value_inside_a_symbolic_body():
    def body(i):
        if i[0] > 2:          # needs the value while the loop is being recorded
            pass
        return (i + 1,)

    x = UInt32(1, 2)
    with pytest.raises(RuntimeError, match='evaluated mode'):
        pbc.while_loop((x,), lambda i: i < 3, body)
    assert x.numpy().tolist() == [1, 2]
    assert pbc.while_loop((x,), lambda i: i < 3, lambda i: (i + 1,))[0].numpy().tolist() == [3, 3]


def test_leaked_body_value():
    leaked = []

    def body(i):
        leaked.append(i * 2)
        return (i + 1,)

    pbc.while_loop((UInt32(0, 1),), lambda i: i < 3, body)
    with pytest.raises(RuntimeError, match='used outside'):
        leaked[0] + 1


def test_read_after_write_in_one_body():
    buf = UInt32(np.zeros(4, dtype=np.uint32))

    def body(i):
        pbc.scatter(buf, i, i)
        return (i + pbc.gather(UInt32, buf, i),)

    with pytest.raises(RuntimeError, match='also writes'):
        pbc.while_loop((UInt32(0, 1),), lambda i: i < 3, body)
    assert buf.numpy().tolist() == [0, 0, 0, 0]          # the failed loop wrote nothing
    pbc.scatter(buf, 5, UInt32(1))
    assert buf.numpy().tolist() == [0, 5, 0, 0]


def test_bad_mode():
    with pytest.raises(ValueError, match='mode'):
        pbc.while_loop((UInt32(0),), lambda i: i < 3, lambda i: (i + 1,), mode='fast')


def test_if_stmt_mismatch():
    with pytest.raises(TypeError, match="'result\\[0\\]' changed from Float32 in one branch"):
        pbc.if_stmt((Float(1, 2),), Bool(True, False), lambda x: (x,),
                    lambda x: (UInt32(1),))


@pytest.mark.parametrize('mode', MODES)
def test_gathers_in_a_body(mode):
    table = Float(np.arange(10, dtype=np.float32) * 1.5)
    expr = Float(np.arange(10, dtype=np.float32)) * 2          # unevaluated: re-indexed
    trips = UInt32(0, 3, 5)
    _, acc, acc2 = pbc.while_loop(
        (UInt32(0), Float(0), Float(0)), lambda i, *_: i < trips,
        lambda i, acc, acc2: (i + 1, acc + pbc.gather(Float, table, i),
                              acc2 + pbc.gather(Float, expr, i * 2)), mode=mode)
    assert acc.numpy().tolist() == [0, 4.5, 15] and acc2.numpy().tolist() == [0, 12, 40]


@pytest.mark.parametrize('mode', MODES)
def test_empty_and_single_lane_loops(mode):
    empty, = pbc.while_loop((UInt32([]),), lambda x: x < 3, lambda x: (x + 1,), mode=mode)
    assert len(empty) == 0 and empty.numpy().tolist() == []
    _, p = pbc.while_loop((UInt32(0), UInt32(1)), lambda i, p: i < 10,
                          lambda i, p: (i + 1, p * 3), mode=mode)
    assert p.numpy().tolist() == [3 ** 10]


def test_three_nested_loops():
    def level(depth, k):
        if depth == 0:
            return k + 1
        return pbc.while_loop((UInt32(0), k), lambda i, k: i < depth + 1,
                              lambda i, k: (i + 1, level(depth - 1, k)))[1]

    out = pbc.while_loop((UInt32(0), UInt32(0, 100)), lambda i, k: i < UInt32(1, 2),
                         lambda i, k: (i + 1, level(2, k)))[1]
    assert out.numpy().tolist() == [6, 112]


def test_write_after_read_in_one_body():
    buf = UInt32(np.zeros(4, dtype=np.uint32))
    idx = UInt32(1, 1, 2)

    def body(i):
        v = pbc.gather(UInt32, buf, idx)
        pbc.scatter(buf, v + 1, idx)
        return (i + 1,)

    with pytest.raises(RuntimeError, match='would not see the writes'):
        pbc.while_loop((UInt32(0),), lambda i: i < 3, body)
    pbc.while_loop((UInt32(0),), lambda i: i < 3, body, mode='evaluated')
    assert buf.numpy().tolist() == [0, 3, 3, 0]


def test_if_stmt_merges_python_numbers_into_an_array():
    c = Bool(True, False, True)
    r = pbc.if_stmt((), c, lambda: 1.5, lambda: 0)
    assert type(r) is Float and r.numpy().tolist() == [1.5, 0, 1.5]
    assert pbc.if_stmt((), c, lambda: 'x', lambda: 'x') == 'x'


def live_bytes():
    """The bytes of live buffers, in host and device memory (a host array that a kernel on
    the device reads moves there: the sum stays)."""
    figures = pbc.whos(print_table=False)
    return figures['memory'] + figures['device_memory']


def test_loops_hold_no_buffers_after_they_return():
    # Every iteration of an evaluated loop makes new state buffers: nothing (such as a
    # reference cycle waiting for the garbage collector) may keep the old ones.
    import gc
    x = UInt32(np.arange(1000, dtype=np.uint32))
    gc.disable()
    try:
        for mode in MODES:
            before = live_bytes()
            y, i = pbc.while_loop((x, UInt32(0)), lambda x, i: i < 5,
                                  lambda x, i: ((x + 1) ^ x, i + 1), mode=mode)
            y.numpy()
            del y, i
            assert live_bytes() == before
    finally:
        gc.enable()


def test_legacy_loop_interrupted_by_an_exception():
    def broken():
        i = UInt32(0, 1)
        loop = pbc.Loop('broken', state=lambda: (i,))
        while loop(i < 3):
            raise KeyError('in the body')

    with pytest.raises(KeyError):
        broken()
    assert pbc._runtime.recording_depth() == 0
    assert pbc.while_loop((UInt32(0, 1),), lambda i: i < 3,
                          lambda i: (i + 1,))[0].numpy().tolist() == [3, 3]


@pytest.mark.parametrize('mode', MODES)
def test_body_changing_its_state_in_place(mode):
    # pos.x += 1 changes the vector the body got: the caller's vector takes the final value
    # (lanes that left the loop keep theirs), as in Dr.Jit. Rebinding (pos = pos + 1) leaves
    # the caller's object alone and returns a new one.
    trips = UInt32(0, 1, 3)

    def in_place(i, pos):
        pos.x += 1
        return i + 1, pos

    def rebinding(i, pos):
        return i + 1, pos + Array3f(1, 0, 0)

    start = Array3f(0)
    x = start.x
    _, pos = pbc.while_loop((UInt32(0), start), lambda i, pos: i < trips, in_place, mode=mode)
    assert pos is start and pos.x is x and x.numpy().tolist() == [0, 1, 3]

    start = Array3f(0)
    _, pos = pbc.while_loop((UInt32(0), start), lambda i, pos: i < trips, rebinding, mode=mode)
    assert pos is not start and pos.x.numpy().tolist() == [0, 1, 3]
    assert start.x.numpy().tolist() == [0]


def test_scatter_into_loop_state_is_an_error():
    def body(i, arr):
        pbc.scatter(arr, 5.0, i)
        return i + 1, arr

    with pytest.raises(RuntimeError, match='loop state'):
        pbc.while_loop((UInt32(0), Float(0, 0, 0)), lambda i, arr: i < 2, body)
    _, arr = pbc.while_loop((UInt32(0), Float(0, 0, 0)), lambda i, arr: i < 2, body,
                            mode='evaluated')
    assert arr.numpy().tolist() == [5, 5, 0]


@pytest.mark.parametrize('source', ['zeros', 'expression', 'data'])
def test_a_loop_body_that_reads_and_then_writes_an_array_is_an_error(source):
    # Its reads of later iterations would not see the writes of earlier ones: so also for
    # an array that is a literal or an expression, which the read takes as a value.
    table = {'zeros': lambda: pbc.zeros(Float, 2), 'expression': lambda: Float(1, 2) * 3.0,
             'data': lambda: Float(np.zeros(2, np.float32))}[source]()

    def body(i, y):
        y = y + pbc.gather(Float, table, UInt32(1, 0))
        pbc.scatter_add(table, Float(1.0, 2.0), UInt32(0, 1))
        return i + 1, y

    with pytest.raises(RuntimeError, match='also reads with a gather'):
        pbc.while_loop((UInt32(0), Float(0, 0)), lambda i, y: i < 3, body, mode='symbolic')
    _, y = pbc.while_loop((UInt32(0), Float(0, 0)), lambda i, y: i < 3, body,
                          mode='evaluated')
    start = {'zeros': [0, 0], 'expression': [3, 6], 'data': [0, 0]}[source]
    assert y.numpy().tolist() == [3 * start[1] + 6, 3 * start[0] + 3]


# ---- Dr.Jit's error types, labels and conditions ----------------------------------------------
@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('where', ['cond', 'body'])
def test_exceptions_in_loops_are_runtime_errors_with_the_cause(mode, where):
    def fail(*args):
        raise ZeroDivisionError('in the ' + where)

    cond = fail if where == 'cond' else (lambda i: i < 3)
    body = fail if where == 'body' else (lambda i: (i + 1,))
    x = UInt32(0, 1)
    with pytest.raises(RuntimeError, match=f'loop {where}.*ZeroDivisionError') as e:
        pbc.while_loop((x,), cond, body, mode=mode)
    assert isinstance(e.value.__cause__, ZeroDivisionError)
    assert x.numpy().tolist() == [0, 1]
    assert pbc._runtime.recording_depth() == 0 and pbc._runtime.mask_depth() == 0


@pytest.mark.parametrize('mode', MODES)
def test_exceptions_in_branches_are_runtime_errors_with_the_cause(mode):
    def fail(x):
        raise KeyError('boom')

    for fns in ((fail, lambda x: x), (lambda x: x, fail)):
        with pytest.raises(RuntimeError, match='KeyError') as e:
            pbc.if_stmt((UInt32(4),), Bool(True, False), *fns, mode=mode)
        assert isinstance(e.value.__cause__, KeyError)
    assert pbc._runtime.mask_depth() == 0


def test_state_diagnostics_are_also_runtime_errors():
    # pbc's own diagnostics keep their natural type and are RuntimeErrors, as in Dr.Jit
    for error in (TypeError, RuntimeError):
        with pytest.raises(error, match="'x' changed from"):
            pbc.while_loop((Float(1), UInt32(0)), lambda x, i: i < 3,
                           lambda x, i: (suite_backend.Float64(x), i + 1), labels=('x', 'i'))
        with pytest.raises(error, match="'result\\[0\\]' changed from Float32 in one branch"):
            pbc.if_stmt((Float(1, 2),), Bool(True, False), lambda x: (x,),
                        lambda x: (UInt32(1),))
    for mode in MODES:
        with pytest.raises(ValueError, match='incompatible size 2'):
            pbc.while_loop((UInt32(1, 2, 3), UInt32(1, 2)), lambda a, b: a < 3,
                           lambda a, b: (a + 1, b + 1), mode=mode)
        # state of another width that the body leaves alone is loop-invariant: allowed
        a, b = pbc.while_loop((UInt32(1, 2, 3), UInt32(1, 2)), lambda a, b: a < 3,
                              lambda a, b: (a + 1, b), mode=mode)
        assert a.numpy().tolist() == [3, 3, 3] and b.numpy().tolist() == [1, 2]


@pytest.mark.parametrize('mode', MODES)
def test_uninitialized_state_is_named(mode):
    with pytest.raises(RuntimeError, match="state variable 'j' of type UInt32 is uninitialized"):
        pbc.while_loop((UInt32(0), UInt32()), lambda i, j: i < 3, lambda i, j: (i + 1, j),
                       labels=('i', 'j'), mode=mode)
    with pytest.raises(RuntimeError, match="state variable 'y' of type UInt32 is uninitialized"):
        pbc.if_stmt((UInt32(4), UInt32()), Bool(True, False), lambda x, y: (x, y),
                    lambda x, y: (x, y), arg_labels=('x', 'y'), mode=mode)
    with pytest.raises(RuntimeError, match="'y' of type UInt32 is uninitialized"):
        pbc.if_stmt((UInt32(4),), Bool(True, False), lambda x: (x, x),
                    lambda x: (x, UInt32()), rv_labels=('x', 'y'), mode=mode)
    with pytest.raises(RuntimeError, match="'cond' cannot be empty"):
        pbc.if_stmt((UInt32(4),), Bool(), lambda x: x, lambda x: x, mode=mode)


@pytest.mark.parametrize('mode', MODES)
def test_if_stmt_maps_results_back_onto_arguments(mode):
    # An argument changed in place on either branch comes back as the caller's object,
    # updated; one replaced by a new object leaves the caller's object alone.
    def true_fn(x, y):
        x[0] += 1
        y[0] = y[0] + 1
        return x, y

    def false_fn(x, y):
        x[1] += 1
        y[1] = y[1] + 1
        return x, y

    x0, x1, y0, y1 = UInt32(1, 2), UInt32(3, 4), UInt32(10, 20), UInt32(30, 40)
    xi, yi = [x0, x1], [y0, y1]
    xo, yo = pbc.if_stmt((xi, yi), Bool(True, False), true_fn, false_fn,
                         arg_labels=('x', 'y'), rv_labels=('x', 'y'), mode=mode)
    assert xo is xi and xo[0] is x0 and xo[1] is x1 and yo is yi
    assert x0.numpy().tolist() == [2, 2] and x1.numpy().tolist() == [3, 5]
    assert yo[0] is not y0 and yo[0].numpy().tolist() == [11, 20]
    assert yo[1].numpy().tolist() == [30, 41] and y0.numpy().tolist() == [10, 20]


@pytest.mark.parametrize('mode', MODES)
def test_loop_maps_results_back_onto_the_state(mode):
    x, z = pbc.opaque(UInt32, 1), pbc.opaque(UInt32, 2)
    xo, zo = pbc.while_loop((x, z), lambda x, z: x < 10, lambda x, z: (x + 1, z), mode=mode)
    assert xo is not x and xo[0] == 10 and x[0] == 1 and zo is z

    def mutate(q1, q2):
        item = q2[1]
        item += 4                              # changes the array q2 holds, in place
        return q1, q2

    q1, q2 = (pbc.opaque(UInt32, 3), UInt32(4, 5)), (pbc.opaque(UInt32, 6), UInt32(7, 8))
    q1o, q2o = pbc.while_loop((q1, q2), lambda q1, q2: q2[1] < 10, mutate, mode=mode)
    assert q1o is q1 and q2o is q2 and q2o[1] is q2[1]
    assert q2[1].numpy().tolist() == [11, 12] and q2[0][0] == 6


@pytest.mark.parametrize('mode', MODES)
def test_bool_tensor_conditions(mode):
    from suite_backend import TensorXb
    x = UInt32(1, 5, 2)
    c = TensorXb(x < 3)
    r = pbc.if_stmt((x,), c, lambda x: x * 10, lambda x: x, mode=mode)
    assert r.numpy().tolist() == [10, 5, 20]
    i, = pbc.while_loop((UInt32(0, 4),), lambda i: TensorXb(i < 3), lambda i: (i + 1,),
                        mode=mode)
    assert i.numpy().tolist() == [3, 4]


@pytest.mark.parametrize('mode', MODES)
def test_compressed_loops_give_the_same_results(mode):
    # compress=True runs each evaluated iteration on just the lanes still in the loop (a
    # symbolic loop ignores it); results and side effects are those of the plain loop.
    start = np.arange(1, N + 1, dtype=np.uint32)

    def run(compress, hits):
        def body(x, steps):
            pbc.scatter_add(hits, 1, x % 5)
            return pbc.select(x % 2 == 0, x // 2, 3 * x + 1), steps + 1
        return pbc.while_loop((UInt32(start), UInt32(0)), lambda x, s: x != 1, body,
                              mode=mode, compress=compress)

    plain_hits, packed_hits = pbc.zeros(UInt32, 5), pbc.zeros(UInt32, 5)
    x, steps = run(False, plain_hits)
    cx, csteps = run(True, packed_hits)
    assert csteps.numpy().tolist() == steps.numpy().tolist() == [
        collatz_steps(int(v)) for v in start]
    assert cx.numpy().tolist() == x.numpy().tolist()
    assert packed_hits.numpy().tolist() == plain_hits.numpy().tolist()


def test_compressed_loop_inside_a_branch_and_in_place():
    # Lanes of an enclosing branch only; in-place changes reach the caller's array.
    @pbc.syntax
    def f(x, n, include):
        if x > 2:
            i = UInt32(0)
            if include:
                while pbc.hint(i < n, mode='evaluated', compress=True, include=[n]):
                    x += 1
                    i += 1
            else:
                while pbc.hint(i < n, mode='evaluated', compress=True):
                    x += 1
                    i += 1
        return x

    x = UInt32(1, 3, 5, 7)
    r = f(x, UInt32(4, 0, 2, 1), True)
    assert r.numpy().tolist() == [1, 3, 7, 8] and r is x
    # an array as wide as the loop that is not loop state cannot follow the compression
    with pytest.raises(RuntimeError, match='must be loop state'):
        f(UInt32(1, 3, 5, 7), UInt32(4, 0, 2, 1), False)


@pytest.mark.parametrize('compress', [False, True])
@pytest.mark.parametrize('in_place', [False, True])
def test_a_compressed_loop_keeps_the_objects_of_its_state(compress, in_place):
    # `y = x` before the loop: `x += 1` inside changes y too, `x = x + 1` does not; state
    # the loop leaves alone (z, the dict) is the caller's object afterwards, which a later
    # change in place reaches through every name. A compressed loop gave y and z copies
    # of their own and d a new dict (wrong values), as no other loop does.
    # (two functions: a body that binds x anywhere gives x a new object as each iteration
    # starts, docs/semantics.md)
    @pbc.syntax
    def changes(x, d, k):
        y, z = x, d['p']
        i = UInt32(0)
        while pbc.hint(i < k, mode='evaluated', compress=compress, include=[x, y, z, d, k]):
            i += 1
            x += 1
        z += 5
        return x, y, z, d

    @pbc.syntax
    def binds(x, d, k):
        y, z = x, d['p']
        i = UInt32(0)
        while pbc.hint(i < k, mode='evaluated', compress=compress, include=[x, y, z, d, k]):
            i += 1
            x = x + 1
        z += 5
        return x, y, z, d

    f = changes if in_place else binds

    k = UInt32(0, 1, 2, 3)
    x, p = UInt32(0, 10, 20, 30), UInt32(1, 2, 3, 4)
    d = {'p': p}
    rx, ry, rz, rd = f(x, d, k)
    assert rx.numpy().tolist() == [0, 11, 22, 33]
    assert ry.numpy().tolist() == ([0, 11, 22, 33] if in_place else [0, 10, 20, 30])
    assert (rx is x) == in_place and ry is x and rz is p and rd is d
    assert d['p'].numpy().tolist() == [6, 7, 8, 9]


def _bump(x, y):
    x += 1
    return x


@pytest.mark.parametrize('compress', [False, True])
def test_a_place_a_compressed_loop_binds_is_a_new_object_each_iteration(compress):
    # `o[0] = y` binds the place: the next iteration's o[0] is an object of its own, which
    # the call changes in place without changing y (a compressed loop kept them one).
    @pbc.syntax
    def f(k, y, o):
        i = UInt32(0)
        while pbc.hint(i < 3, mode='evaluated', compress=compress, include=[k, y, o]):
            i += 1
            pbc.switch(k % 2, (_bump, _bump), o[0], y, mode='evaluated')
            o[0] = y
        return y, o[0]

    y, o0 = f(UInt32(0, 1, 2, 3), UInt32(10), [UInt32(0)])
    assert y.numpy().tolist() == [10] and o0.numpy().tolist() == [10] * 4


def test_a_compressed_loop_that_binds_its_state_to_a_value_of_every_lane_names_it():
    # `m = k > 2`, k read only: m is as wide as the loop, not as the lanes still in it
    # (was a bare size error from pbc's write-back scatter). Made loop state, k follows.
    @pbc.syntax
    def f(n, k, include):
        i, m = UInt32(0), k > 9
        if include:
            while pbc.hint(i < n, mode='evaluated', compress=True, include=[n, k]):
                i += 1
                m = k > 2
        else:
            while pbc.hint(i < n, mode='evaluated', compress=True, include=[n]):
                i += 1
                m = k > 2
        return i, m

    n, k = UInt32(1, 1, 1, 1, 0), UInt32(0, 1, 2, 3, 4)
    with pytest.raises(RuntimeError, match="'m' is 5 wide after an iteration that ran on 4 "
                                           'lanes .*must be loop state'):
        f(n, k, False)
    i, m = f(n, k, True)
    assert i.numpy().tolist() == [1, 1, 1, 1, 0]
    assert m.numpy().tolist() == [False, False, False, True, False]


@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('literal', [False, True])
def test_scatters_into_arguments_write_the_callers_buffer(mode, literal):
    # A scatter is a side effect, not state: writing the branch's copy of an argument writes
    # the caller's array (also one that starts as a literal), as in Dr.Jit. An array that
    # shared the buffer before the branch keeps its values (copy-on-write).
    buf = pbc.zeros(UInt32, 2) if literal else UInt32(0, 0)
    other = UInt32(buf)

    def true_fn(buf):
        pbc.scatter_add(buf, 1, UInt32(0))
        return (buf,)

    def false_fn(buf):
        pbc.scatter_add(buf, 1, UInt32(1))
        return (buf,)

    # (a literal of another value than buf's: equal literals are one variable)
    alone = pbc.full(UInt32, 7, 2) if literal else UInt32(7, 7)
    out, = pbc.if_stmt((alone,), Bool(True, True, True, False, False), true_fn, false_fn,
                       mode=mode)
    assert out is alone and alone.numpy().tolist() == [10, 9]
    shared, = pbc.if_stmt((buf,), Bool(True, False), true_fn, false_fn, mode=mode)
    assert shared.numpy().tolist() == [1, 1] and other.numpy().tolist() == [0, 0]


@pytest.mark.parametrize('mode', MODES)
def test_arguments_changed_in_place_in_a_branch_reach_the_caller(mode):
    # An argument a branch changes in place takes its new value even when the branch does
    # not return it (as the caller's object would change under plain Python).
    @pbc.syntax
    def maybe_dec(x, mode):
        if pbc.hint(x > 1, mode=mode):
            x -= 1
        else:
            pass

    @pbc.syntax
    def ret_dec(x, mode):
        if pbc.hint(x > 1, mode=mode):
            x = x - 1
        return x

    x = pbc.arange(UInt32, 3)
    maybe_dec(x, mode)
    assert x.numpy().tolist() == [0, 1, 1]
    x = pbc.arange(UInt32, 3)
    y = ret_dec(x, mode)
    assert x.numpy().tolist() == [0, 1, 2] and y.numpy().tolist() == [0, 1, 1]


def test_non_strict_loops_and_uniform_conditions():
    # strict=False: Python values in the state may change (as the last run of the body, for
    # a symbolic loop its recording, left them)
    def body(i, runs):
        return i + 1, runs + 1

    i, runs = pbc.while_loop((UInt32(0, 2), 0), lambda i, runs: i < 5, body, strict=False,
                             mode='symbolic')
    assert i.numpy().tolist() == [5, 5] and runs >= 1
    i, runs = pbc.while_loop((UInt32(0, 2), 0), lambda i, runs: i < 5, body, strict=False,
                             mode='evaluated')
    assert runs == 5
    with pytest.raises(TypeError, match="'state\\[1\\]' is int 0"):
        pbc.while_loop((UInt32(0, 2), 0), lambda i, runs: i < 5, body)
    # a literal condition of one lane runs only its branch, as Python would
    calls = []

    def f(x):
        calls.append('f')
        return x + 1

    def g(x):
        calls.append('g')
        return x + pbc.opaque(UInt32, 2)

    for mode in MODES:
        r = pbc.if_stmt((UInt32(4),), Bool(True), f, g, mode=mode)
        assert r.state == pbc.VarState.Literal and r[0] == 5
    assert calls == ['f', 'f']


@pytest.mark.parametrize('mode', MODES)
def test_width_errors_name_the_variable(mode):
    with pytest.raises(RuntimeError, match="the size of state variable 'i' of type UInt32 "
                                           'changed from 2 to 3'):
        pbc.while_loop((UInt32(5, 10),), lambda i: i < 10, lambda i: (UInt32(10, 11, 12),),
                       labels=('i',), mode=mode)
    with pytest.raises(RuntimeError, match="processes arrays of size 3, while state variable "
                                           "'j' has an incompatible size 2"):
        pbc.while_loop((UInt32(5, 6, 7), UInt32(2, 7)), lambda i, j: i < 10,
                       lambda i, j: (i + 1, j + 1), labels=('i', 'j'), mode=mode)
    with pytest.raises(RuntimeError, match="the type of state variable 'i' changed from UInt32"):
        pbc.while_loop((UInt32(5),), lambda i: i < 10, lambda i: (None,), labels=('i',),
                       mode=mode)


@pytest.mark.parametrize('compress', [False, True])
def test_an_evaluated_loop_compiles_its_body_once_whatever_its_counter(compress):
    # A counter that every lane steps alike stays a literal, which folded into the kernels
    # would make every iteration's kernel new code: the loop keeps it in memory instead.
    # (A compressed loop's lanes are kept in memory too, or each iteration's kernel would
    # gather through all the earlier iterations' lanes.)
    # The kernels of 10 and of 20 iterations are the same few (a device's reductions of
    # the loop condition are kernels too).
    codes = {}
    for rounds in (10, 20):
        x = np.linspace(-1, 1, N, dtype=np.float32)
        mine = UInt32(7)              # (a literal of the caller's, returned as state)
        pbc.kernel_history_clear()
        with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
            n = pbc.opaque(UInt32, rounds)      # (the same code for 10 and 20)
            i, y, k = pbc.while_loop((UInt32(0), Float(x), UInt32(0)),
                                     lambda i, y, k, n=n: i < n,
                                     lambda i, y, k, mine=mine: (i + 1, pbc.sin(y + i), mine),
                                     mode='evaluated', compress=compress)
            pbc.eval(y)
            kernels = pbc.kernel_history()
        for j in range(rounds):
            x = np.sin(x + np.float32(j))
        np.testing.assert_allclose(y.numpy(), x, rtol=1e-5, atol=1e-6)
        assert set(i.numpy().tolist()) == {rounds} and set(k.numpy().tolist()) == {7}
        assert len(kernels) >= rounds and mine.state == 'literal'
        codes[rounds] = {k['hash'] for k in kernels}
    assert codes[10] == codes[20]
    assert len(codes[20]) <= 5 or suite_backend.NAME != 'llvm'   # (n, the body, the test, ...)


def test_evaluated_loop_computes_what_its_body_reads_from_outside_once():
    # The body reads `heavy`, a long computation traced before the loop: it is evaluated
    # with the first iteration, and the later iterations' kernels read it from memory.
    x = pbc.arange(Float, N) * 0.01
    heavy, ref = x, np.arange(N, dtype=np.float32) * np.float32(0.01)
    for _ in range(40):
        heavy = pbc.sin(heavy) * 1.01 + 0.1
        ref = np.sin(ref) * np.float32(1.01) + np.float32(0.1)
    small = Float(2.0) * 3.0          # (folded to a literal: nothing to evaluate)

    def body(i, acc):
        return i + 1, acc + heavy * small

    pbc.kernel_history_clear()
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
        i, acc = pbc.while_loop((UInt32(0), Float(0.0)), lambda i, acc: i < 6, body,
                                mode='evaluated')
        pbc.eval(acc)
        ops = [k['ir_ops'] for k in pbc.kernel_history()]
    np.testing.assert_allclose(acc.numpy(), 36 * ref, rtol=1e-5)
    assert len(ops) >= 6 and max(ops) > 400       # (the first holds the 40 sines)
    assert max(ops[-5:]) < 30                    # the others read `heavy` from memory


def test_loops_that_pass_a_container_to_a_call_have_memories_of_their_own(monkeypatch):
    # (the state a loop found invariant is remembered per loop code: a loop whose body
    # passes a container to a call runs through a wrapper, which is not what identifies it)
    from pbc import control
    monkeypatch.setattr(control, '_invariant_memo', {})

    def add(x, c):
        c[0] += x

    @pbc.syntax
    def f(x, k):
        u = [x * 1, x * 2]
        i = UInt32(0)
        while i < 2:
            i += 1
            j = UInt32(0)
            while j < k:
                j += 1
                pbc.switch(k % 2, (add, add), x, u)
        return u

    k = UInt32(np.arange(N, dtype=np.uint32) % 3)
    u = f(Float(1.0), k)
    assert np.array_equal(u[0].numpy(), 1 + 2 * k.numpy())
    assert len({key[0] for key in control._invariant_memo}) == 2


@pytest.mark.parametrize('mode', MODES)
def test_a_loop_sees_a_write_queued_into_its_initial_state(mode):
    # A scatter into an array is queued until something reads the array; a symbolic loop
    # read its initial state without running it first (the old value: 6 for 15).
    b = Float([1.0, 2.0, 3.0, 4.0])
    pbc.scatter(b, Float(10.0), UInt32([3]))
    i, r = pbc.while_loop((UInt32(0), b), lambda i, b: i < 1, lambda i, b: (i + 1, b * 1.5),
                          mode=mode)
    assert r.numpy().tolist() == [1.5, 3, 4.5, 15]
