"""The PTX renderer: every op on every type it supports renders to PTX that ptxas accepts.

Kernels are traced through the public API and captured at assembly, without running.
Whether they compute the right values needs a GPU; here ptxas checks the text.
"""

import numpy as np
from suite_backend import Bool, Float32, Float64, Int32, Int64, Ptr, UInt32, UInt64

import pbc
from pbc import _runtime
from pbc.backend import ptx_render
from pbc.evaluate import take_kernels
from pbc.kernel import Instr, Kernel, Param
from pbc.ops import ARITY, COMPARISONS, TYPE_NAMES

TYPES = {'bool': Bool, 'int32': Int32, 'uint32': UInt32, 'int64': Int64, 'uint64': UInt64,
         'float32': Float32, 'float64': Float64}
FLOATS = ('float32', 'float64')
N = 16


def capture(*arrays):
    """The Kernels that evaluating `arrays` (plus queued side effects) would launch; nothing
    runs, and the arrays stay unevaluated."""
    pbc.schedule(*arrays)
    return take_kernels('cuda')


def data(t, rng, n=N):
    """An evaluated (memory-backed) array, so that ops on it are not folded away."""
    if t == 'bool':
        v = rng.random(n) < 0.5
    elif t in FLOATS:
        v = rng.standard_normal(n).astype(t)
    else:
        v = rng.integers(0, 100, n).astype(t)
    return TYPES[t](v)


def op_cases(rng):
    """(name, thunk returning the arrays to evaluate) for every op x type."""
    cases = []

    def add(name, fn):
        cases.append((name, fn))

    for t in TYPES:
        T = TYPES[t]
        a, b, c = data(t, rng), data(t, rng), data(t, rng)
        m = data('bool', rng)
        one = T(np.ones(1, dtype=bool if t == 'bool' else t))   # a width-1 buffer: load1
        kind = 'b' if t == 'bool' else ('f' if t in FLOATS else 'i')
        add(f'{t}_load1', lambda a=a, b=b, c=c, one=one: pbc.select(a == one, b, c))
        add(f'{t}_literal', lambda T=T, t=t: pbc.select(data('bool', rng), T(1 if t != 'bool'
                                                                              else True), T(0)))
        add(f'{t}_select', lambda a=a, b=b, m=m: pbc.select(m, a, b))
        for op in ('eq', 'ne'):
            add(f'{t}_{op}', lambda a=a, b=b, op=op: getattr(a, f'__{op}__')(b))
        if kind in 'bi':
            add(f'{t}_not', lambda a=a: ~a)
        if kind == 'b':
            add(f'{t}_subgroup_any', lambda a=a: pbc.subgroup_any(a))
        for op in ('and', 'or', 'xor'):
            add(f'{t}_{op}', lambda a=a, b=b, op=op: getattr(a, f'__{op}__')(b))
        if kind in 'fi':
            add(f'{t}_neg', lambda a=a: -a)
            add(f'{t}_abs', lambda a=a: abs(a))
            for op in ('add', 'sub', 'mul', 'floordiv', 'mod', 'lt', 'le', 'gt', 'ge'):
                add(f'{t}_{op}', lambda a=a, b=b, op=op: getattr(a, f'__{op}__')(b))
            add(f'{t}_min', lambda a=a, b=b: pbc.minimum(a, b))
            add(f'{t}_max', lambda a=a, b=b: pbc.maximum(a, b))
            add(f'{t}_fmin', lambda a=a, b=b: pbc.fmin(a, b))
            add(f'{t}_fmax', lambda a=a, b=b: pbc.fmax(a, b))
            add(f'{t}_fma', lambda a=a, b=b, c=c: pbc.fma(a, b, c))
        if kind == 'f':
            for fn in ('sqrt', 'floor', 'ceil', 'round', 'trunc'):
                add(f'{t}_{fn}', lambda a=a, fn=fn: getattr(pbc, fn)(a))
            add(f'{t}_ldexp', lambda a=a, b=b: _runtime.op_binary('ldexp', a, pbc.round(b)))
        if kind == 'i':
            for fn in ('popcnt', 'lzcnt', 'tzcnt'):
                add(f'{t}_{fn}', lambda a=a, fn=fn: getattr(pbc, fn)(a))
            add(f'{t}_shl', lambda a=a, b=b: a << b)
            add(f'{t}_shr', lambda a=a, b=b: a >> b)
            add(f'{t}_mulhi', lambda a=a, b=b: pbc.mul_hi(a, b))
            add(f'{t}_counter', lambda T=T: T(pbc.arange(UInt32, N)) + 1)
        for d in TYPES:
            if d != t:
                add(f'{t}_cast_{d}', lambda a=a, d=d: TYPES[d](a))
                if ptx_render.BITS[d] == ptx_render.BITS[t]:
                    add(f'{t}_bitcast_{d}', lambda a=a, d=d: pbc.reinterpret_array(TYPES[d], a))
        fmt = 'a={} b={:x}' if kind == 'i' else 'a={} b={}'
        add(f'{t}_print', lambda a=a, b=b, m=m, fmt=fmt: pbc.print(
            fmt, a, b, active=m, mode='symbolic') or ())
        # memory: gathers with a mask, scatters with every reduction the type allows
        src = data(t, rng, 5)
        # A loop with state of this type: per-lane trip counts, and inside a branch (whose
        # mask the loop test takes in) a loop with a uniform counter.
        trips = UInt32(rng.integers(0, 4, N).astype(np.uint32))
        add(f'{t}_loop', lambda a=a, b=b, m=m, trips=trips: pbc.while_loop(
            (UInt32(0), a), lambda i, x: i < trips,
            lambda i, x: (i + 1, pbc.select(m, b, x)))[1])
        add(f'{t}_loop_in_if', lambda a=a, b=b, m=m: pbc.if_stmt(
            (a,), m, lambda x: pbc.while_loop((UInt32(0), x), lambda i, y: i < 3,
                                              lambda i, y: (i + 1, pbc.select(m, b, y)))[1],
            lambda x: x))
        # A call of two targets with results of this type (and one target merged).
        which = UInt32(rng.integers(0, 4, N).astype(np.uint32))
        add(f'{t}_call', lambda a=a, b=b, m=m, which=which: pbc.switch(
            which, [lambda x: x, lambda x: pbc.select(m, b, x), lambda x: x], a))
        if t == 'uint32':            # a side effect in a target: masked by its lanes
            def counted(x, a=a):
                pbc.scatter_add(pbc.zeros(UInt32, 4), 1, x % 4)
                return x
            add(f'{t}_call_scatter', lambda a=a, which=which: pbc.switch(
                which, [counted, lambda x: x + 1], a))
        idx = UInt32(rng.integers(0, 8, N).astype(np.uint32))
        add(f'{t}_gather', lambda T=T, src=src, idx=idx, m=m: pbc.gather(T, src, idx, m))

        # Gathers from array attributes of call targets: through a pointer per lane.
        class Holder(pbc.Object):
            def __init__(self, values):
                self.values = values

            def get(self, i, T=T):
                return pbc.gather(T, self.values, i)

        holders = [Holder(data(t, rng, 5)), Holder(data(t, rng, 3))]
        ptrs = Ptr[Holder]([holders[k % 2] if k % 3 else None for k in range(N)])
        add(f'{t}_lane_ptr', lambda ptrs=ptrs, idx=idx, holders=holders: ptrs.get(idx))
        reductions = {'b': ('none', 'and', 'or'),
                      'i': ('none', 'add', 'mul', 'min', 'max', 'and', 'or'),
                      'f': ('none', 'add', 'mul', 'min', 'max')}[kind]
        for red in reductions:
            def scatter(t=t, a=a, idx=idx, m=m, red=red):
                target = data(t, rng, 5)
                if red == 'none':
                    pbc.scatter(target, a, idx, m)
                else:
                    pbc.scatter_reduce(getattr(pbc.ReduceOp, red.capitalize()), target, a,
                                       idx, m)
                return ()
            add(f'{t}_scatter_{red}', scatter)
    return cases


def test_table_covers_every_op():
    assert set(ptx_render.TEMPLATES) | set(ptx_render.SPECIAL) == set(ARITY)
    assert not set(ptx_render.TEMPLATES) & set(ptx_render.SPECIAL)


def test_every_op_and_type_assembles(ptxas):
    rng = np.random.default_rng(0)
    entries = []
    for name, fn in op_cases(rng):
        kernels = capture(fn())      # empty where the op folds away (abs of an unsigned)
        entries += [(f'{name}_{j}', k) for j, k in enumerate(kernels)]
    # The API does not order Bools, but the table (as LLVM's) handles them: build by hand.
    for op in ('lt', 'le', 'gt', 'ge'):
        k = Kernel('cuda', instrs=[Instr('load', 'bool', slot=0), Instr('load', 'bool', slot=1),
                                   Instr(op, 'bool', (0, 1)),
                                   Instr('store', 'void', (2,), slot=2)],
                   params=[Param('in', 'bool'), Param('in', 'bool'), Param('out', 'bool')])
        entries.append((f'bool_{op}', k))
    # Every op, and every (op, operand kind) that has a template, occurs in some kernel.
    instrs = [(k, i) for _, k in entries for i in k.instrs]
    assert {i.op for _, i in instrs} == set(ARITY)
    covered = {(i.op, ptx_render.KIND[k.instrs[i.args[0]].type if i.op in COMPARISONS
                                      else i.type])
               for k, i in instrs if i.op in ptx_render.TEMPLATES}
    templates = {(op, kind) for op, table in ptx_render.TEMPLATES.items() for kind in table}
    assert templates <= covered, templates - covered
    casts = {(TYPE_NAMES[i.extra], i.type) for _, i in instrs if i.op == 'cast'}
    assert len(casts) == 7 * 6
    texts = ptxas(entries)
    assert sum(t.count('.entry') for t in texts) == len(entries)


def test_kernels_that_flush_subnormals_assemble_with_ftz(ptxas):
    """With JitFlag.FlushDenormals, float32 arithmetic, comparisons and conversions carry
    .ftz (float64 has none in PTX), sign operations stay bit operations, and every op's
    kernel assembles."""
    rng = np.random.default_rng(0)
    with pbc.scoped_set_flag(pbc.JitFlag.FlushDenormals, True):
        entries = [(f'{name}_{j}', k) for name, fn in op_cases(rng)
                   for j, k in enumerate(capture(fn()))]
        a, b = data('float32', rng), data('float32', rng)
        d = data('float64', rng)
        flushed = ptx_render.render(capture(pbc.fma(a, b, a) * b + pbc.sqrt(a) / b)[0])
        compared = ptx_render.render(capture(a < b)[0])
        wide = ptx_render.render(capture(d * d + 1.0)[0])
        converted = ptx_render.render(capture(Float64(a) + d, Float32(d) * a)[0])
        negated = ptx_render.render(capture(-a)[0])
    assert all(entry[1].flush_denormals for entry in entries)
    for op in ('fma.rn.ftz.f32', 'mul.rn.ftz.f32', 'sqrt.rn.ftz.f32', 'div.rn.ftz.f32',
               'add.rn.ftz.f32'):
        assert op in flushed, op
    assert 'setp.lt.ftz.f32' in compared and '.ftz' not in wide
    assert 'cvt.ftz.f64.f32' in converted and 'cvt.rn.ftz.f32.f64' in converted
    assert '.ftz' not in negated
    texts = ptxas(entries)
    assert sum(t.count('.entry') for t in texts) == len(entries)


def test_render_is_a_module(ptxas):
    k = capture(data('float32', np.random.default_rng(1)) * 2.0)[0]
    text = ptx_render.render(k)
    assert text.startswith('.version') and '.target sm_70' in text
    assert '.visible .entry kernel(.param .u64 params, .param .u64 size)' in text
    assert ptx_render.render(k) == text       # pure: same kernel, same text
    ptxas([('kernel', k)])


def test_tricky_ops_use_exact_constructs():
    """The constructs that carry the LLVM backend's semantics (see ptx_render's comments)."""
    rng = np.random.default_rng(2)
    a, b = data('float32', rng), data('float32', rng)
    d = data('float64', rng)
    i = UInt32(np.arange(N, dtype=np.uint32))

    def text(*arrays):
        return ptx_render.render(capture(*arrays)[0])

    assert 'rem.u64' in text(a % b)
    cast = text(Int64(d))
    assert 'cvt.rzi.s64.f64' in cast and 'setp.nan.f64' in cast
    assert 'setp.neu.f32' in text(a != b) and 'setp.neu.f32' in text(Bool(a))
    assert 'min.f32' in text(pbc.minimum(a, b)) and 'fma.rn.f32' in text(pbc.fma(a, b, a))
    assert 'add.rn.f32' in text(a + b) and '.ftz' not in text(a * b + pbc.sqrt(a) / b)
    target = data('float32', rng, 5)
    pbc.scatter_reduce(pbc.ReduceOp.Max, target, a, i)
    assert 'atom.global.cas.b32' in text()
    pbc.scatter_add(target, a, i)
    assert 'red.global.add.f32' in text()
    pbc.scatter_reduce(pbc.ReduceOp.Mul, target, a, i)
    product = text()
    assert 'mul.rn.f32' in product and 'atom.global.cas.b32' in product
    counts = data('int64', rng, 5)
    pbc.scatter_reduce(pbc.ReduceOp.Mul, counts, data('int64', rng), i)
    product = text()
    assert 'mul.lo.s64' in product and 'atom.global.cas.b64' in product
    flags = data('bool', rng, 5)
    pbc.scatter_reduce(pbc.ReduceOp.And, flags, data('bool', rng), i)
    bool_and = text()
    assert 'st.global.u8' in bool_and and 'atom.' not in bool_and and 'red.global' not in bool_and


def test_literal_constants():
    assert ptx_render.constant('float32', 0x3F800000) == '0f3F800000'
    assert ptx_render.constant('float64', 0x7FF8000000000000) == '0d7FF8000000000000'
    assert ptx_render.constant('int32', -1) == '0xFFFFFFFF'
    assert ptx_render.constant('bool', 1) == '1'


def test_recorder_sees_llvm_kernels(recorded_kernels):
    """conftest records what the CPU backend compiles (checked as PTX by test_zz_*)."""
    before = len(recorded_kernels)
    cpu = pbc.llvm                        # (what the CPU backend compiles, on any suite's)
    x = cpu.Float64(np.linspace(-3, 3, 37))
    y = pbc.select(x > 0, pbc.sqrt(abs(x)) % 0.7, cpu.Float64(cpu.Int32(x * 1e3)) / 3)
    pbc.eval(y)
    assert len(recorded_kernels) > before
    k = list(recorded_kernels.values())[-1]
    assert {'mod', 'cast', 'select', 'store'} <= {i.op for i in k.instrs}


def test_call_targets_are_functions_called_indirectly(ptxas, ptx_functions_checked):
    """Each distinct target is a .func; a thread calls its lane's target through a function
    pointer (with the list of targets). Nested calls, loops, prints and scatters inside."""
    rng = np.random.default_rng(3)
    counts = UInt32(np.zeros(4, dtype=np.uint32))

    class Leaf(pbc.Object):
        def __init__(self, k):
            self.k = k

        def f(self, x):
            pbc.scatter_add(counts, 1, UInt32(self.k))
            return x + self.k, x > self.k

    class Node(pbc.Object):
        def __init__(self, k):
            self.k = k

        def g(self, leaf, x):
            n = pbc.while_loop((UInt32(0), x), lambda i, y: i < self.k,
                               lambda i, y: (i + 1, y * 2))[1]
            pbc.print('node {}', n)
            value, flag = pbc.dispatch(leaf, lambda o, v: o.f(v), n)
            return pbc.select(flag, value, -value)

    leaves, nodes = [Leaf(1), Leaf(2)], [Node(1), Node(3)]
    pl = Ptr[Leaf]([leaves[k % 2] for k in range(N)])
    pn = Ptr[Node]([nodes[k % 3 % 2] if k % 3 else None for k in range(N)])
    y = pbc.dispatch(pn, lambda o, leaf, x: o.g(leaf, x), pl, data('float32', rng))
    kernels = capture(y)
    text = ptx_render.render(kernels[0])
    # Two nodes, and in each of them a call of the two leaves, which differ only in the
    # constant k: one code that reads k from a table by key. 4 functions, 3 call sites.
    assert text.count('\n.func ') == 4 and text.count('.calltargets') == 3
    assert 'call (C2_ret), %C2_fp' in text
    ptx_functions_checked(text)
    ptxas([('kernel', k) for k in kernels])


def test_call_targets_receive_values_computed_between_calls(ptxas, ptx_functions_checked):
    # The second call's targets read a value computed after the first call.
    idx = UInt32(np.arange(N, dtype=np.uint32) % 2)
    x = data('float32', np.random.default_rng(4))
    y1 = pbc.switch(idx, [lambda v: v + 1, lambda v: v * 2], x)
    z = pbc.sqrt(y1) * 3
    y2 = pbc.switch(idx, [lambda v: v + z, lambda v: v * z], x)
    kernels = capture(y2)
    text = ptx_render.render(kernels[0])
    ptx_functions_checked(text)
    ptxas([('kernel', k) for k in kernels])
