"""The trace graph: value numbering, folding and simplification at creation, kernel fusion,
symbolic gathers, reference counting and memory."""

import gc
import os
import subprocess
import sys

import numpy as np
import pytest
import suite_backend
from suite_backend import Array3f, Bool, Float, Int32, UInt32

import pbc
from pbc import _runtime


@pytest.fixture
def history():
    pbc.kernel_history_clear()
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
        yield pbc.kernel_history
    pbc.kernel_history_clear()


def test_value_numbering_reuses_nodes():
    a = Float(1, 2, 3)
    x, y = a * 2 + 1, a * 2 + 1
    assert x.index == y.index
    assert pbc.linspace(Float, -1, 1, 10).index == pbc.linspace(Float, -1, 1, 10).index
    with pbc.scoped_set_flag(pbc.JitFlag.ValueNumbering, False):
        assert (a * 2).index != (a * 2).index


def test_value_numbering_of_nodes_kept_by_their_newest_operand():
    # The first numbered node anchored on an operand (its newest) is kept by that operand,
    # not by the map; a second one moves it there. Equal nodes must be found either way,
    # and a kept node that was freed or evaluated must not be.
    a, b = Float(1, 2, 3), Float(4, 5, 6)
    x = a * b                               # b's first user: kept by b
    assert (a * b).index == x.index         # found there (and now in the map)
    assert (a + b).index == (a + b).index   # b's later users: through the map
    assert (a * b).index == x.index
    c = a - 1.5
    y = b * c                               # kept by c, though it comes second
    del y                                   # freed: c's record of it is stale
    z = b * c
    assert (b * c).index == z.index and (c * b).index != z.index
    assert z.numpy().tolist() == [-2.0, 2.5, 9.0]
    d = b * 3.0
    w = d + a                               # kept by d, then evaluated
    pbc.eval(w)
    v = d + a                               # an expression again, not the evaluated node
    assert v.index != w.index and v.state == 'unevaluated'
    assert v.numpy().tolist() == w.numpy().tolist() == [13.0, 17.0, 21.0]


def test_constant_folding_and_simplification():
    assert (Float(2) * 3 + 1).state == 'literal'
    assert (Float(2) * 3 + 1)[0] == 7
    a = Float(1, 2, 3)
    assert (a * 1).index == a.index
    assert (a + -0.0).index == a.index and (a - 0).index == a.index
    assert (a + 0).index != a.index           # -0 + 0 = +0: not an identity for floats
    neg = -a
    assert (-neg).index == a.index
    assert pbc.fma(a, a, -0.0).index == (a * a).index
    assert pbc.fma(a, a, 0.0).index != (a * a).index     # -0 + +0 = +0
    j = Int32(1, 2)
    assert pbc.fma(j, 3, 0).index == (j * 3).index
    assert pbc.select(Bool(True), a, a * 2).index == a.index
    assert pbc.select(Bool(False), a * 2, a).index == a.index
    i = Int32(1, 2, 3)
    assert (i * 0).state == 'literal' and (i & -1).index == i.index
    assert (i + 0).index == i.index
    with pbc.scoped_set_flag(pbc.JitFlag.ConstantPropagation, False):
        assert (Float(2) * 3).state == 'unevaluated'
        assert (a * 1).index != a.index
        assert (Float(2) * 3)[0] == 6


def test_float_rules_that_are_not_exact_stay():
    a = Float(np.inf, 1.0, np.nan)
    z = a * 0          # inf * 0 = nan: may not fold to 0 for floats
    assert z.state != 'literal'
    assert np.isnan(z.numpy()[0]) and z.numpy()[1] == 0


def test_chain_fuses_into_one_kernel(history):
    a = pbc.arange(Float, 1000)
    x = a
    for _ in range(50):
        x = x * a + 1.5
    pbc.eval(x)
    h = history()
    assert len(h) == 1
    assert h[0]['ir_ops'] >= 100 and h[0]['size'] == 1000
    ref = np.arange(1000, dtype=np.float32)
    r = ref.copy()
    with np.errstate(over='ignore'):              # the chain overflows to inf, as in pbc
        for _ in range(50):
            r = r * ref + np.float32(1.5)
    np.testing.assert_array_equal(x.numpy(), r)


def test_value_numbering_shrinks_ir(history):
    def program():
        a = pbc.arange(Float, 64)
        return (a * 2 + 1) * (a * 2 + 1) + (a * 2 + 1)
    pbc.eval(program())
    with pbc.scoped_set_flag(pbc.JitFlag.ValueNumbering, False):
        pbc.eval(program())
    on, off = history()[-2:]
    assert on['ir_ops'] < off['ir_ops']


def test_eval_of_many_variables_is_one_kernel(history):
    a = pbc.arange(Float, 100)
    x, y, z = a + 1, a * 2, a - 3
    pbc.eval(x, y, z)
    assert len(history()) == 1
    assert x.state == y.state == z.state == 'evaluated'


def test_symbolic_gather_clones_expression(history):
    x = pbc.linspace(Float, -1, 1, 8)
    idx = UInt32(7, 0, 3)
    g = pbc.gather(Float, x, idx)
    assert x.state == 'unevaluated'          # the source was not materialized
    np.testing.assert_allclose(g.numpy(), np.linspace(-1, 1, 8)[[7, 0, 3]], rtol=1e-6)
    assert len(history()) == 1
    out_of_range = pbc.gather(Float, x, UInt32(8, 100), Bool(True, True))
    np.testing.assert_array_equal(out_of_range.numpy(), [0, 0])


def test_meshgrid_matches_numpy():
    x, y = pbc.meshgrid(pbc.arange(Float, 3), pbc.arange(Float, 2))
    X, Y = np.meshgrid(np.arange(3), np.arange(2))
    np.testing.assert_array_equal(x.numpy(), X.ravel())
    np.testing.assert_array_equal(y.numpy(), Y.ravel())
    a, b = pbc.meshgrid(pbc.arange(Float, 3), pbc.arange(Float, 2), indexing='ij')
    A, B = np.meshgrid(np.arange(3), np.arange(2), indexing='ij')
    np.testing.assert_array_equal(a.numpy(), A.ravel())
    np.testing.assert_array_equal(b.numpy(), B.ravel())


def test_temporaries_are_released():
    gc.collect()
    start = pbc.whos(print_table=False)['variables']
    a = pbc.arange(Float, 10)
    x = a
    for i in range(1_000_000):
        x = x + a if i % 2 else x * a
    del x, a
    assert pbc.whos(print_table=False)['variables'] == start


def _resident_bytes():
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * 4096


@pytest.mark.llvm_only          # (host memory mappings)
def test_large_array_memory_is_returned():
    before = pbc.whos(print_table=False)['memory']
    rss = _resident_bytes()
    x = pbc.arange(Float, 100_000_000) * 2
    pbc.eval(x)
    pbc.sync_thread()                   # (the kernel touches the pages as it runs)
    assert pbc.whos(print_table=False)['memory'] >= before + 4 * 10**8
    assert _resident_bytes() >= rss + 3 * 10**8
    del x
    assert pbc.whos(print_table=False)['memory'] == before
    assert _resident_bytes() < rss + 10**8          # given back to the OS, not cached


def test_freed_buffers_are_reused():
    # (the host's buffer cache, or the device's pool)
    cached = 'cached_memory' if suite_backend.NAME == 'llvm' else 'device_cached_memory'
    x = pbc.arange(Float, 1_000_000) + 1
    pbc.eval(x)
    address = pbc._runtime.data_address(x)
    del x
    assert pbc.whos(print_table=False)[cached] >= 4 * 10**6
    y = pbc.arange(Float, 1_000_000) + 2
    pbc.eval(y)
    assert pbc._runtime.data_address(y) == address
    pbc.flush_malloc_cache()
    assert pbc.whos(print_table=False)[cached] == 0


@pytest.mark.llvm_only          # (host memory mappings)
def test_large_buffers_take_whole_huge_pages():
    huge = 2 << 20
    x = pbc.arange(Float, 1_000_000) + 1           # 3.8 MiB: two whole huge pages
    pbc.eval(x)
    address = pbc._runtime.data_address(x)
    assert address % huge == 0
    del x
    y = pbc.arange(Float, 1_040_000) + 2           # another size within the same 4 MiB
    pbc.eval(y)
    assert pbc._runtime.data_address(y) == address
    np.testing.assert_array_equal(y.numpy()[-2:], [1_040_000, 1_040_001])
    del y
    rss = _resident_bytes()
    pbc.flush_malloc_cache()                       # (mapped memory: unmapped at once)
    assert _resident_bytes() <= rss - 3 * 10**6


GROWTH_SCRIPT = '''
import numpy as np
import pbc
from pbc.llvm import Float
x = pbc.arange(Float, 7)
n = 20_000            # 40k live variables: the tables (4096 variables, 8192 slots) double 4x
ys = [x * float(i) + 1.0 for i in range(n)]
again = [x * float(i) + 1.0 for i in range(n)]
assert all(a.index == b.index for a, b in zip(ys, again))     # each still numbered
assert len({y.index for y in ys}) == n
picked = ys[::997]
pbc.eval(picked)
for i, y in zip(range(0, n, 997), picked):
    np.testing.assert_array_equal(y.numpy(), np.arange(7, dtype=np.float32) * i + 1)
print('OK')
'''


def test_value_numbering_survives_the_trace_tables_growing():
    # In a fresh process, where the tables (the variables, the value-numbering table)
    # start small: growing moves them, and every value keeps its number and its data.
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env['PYTHONPATH'] = root + os.pathsep + env.get('PYTHONPATH', '')
    res = subprocess.run([sys.executable, '-c', GROWTH_SCRIPT], env=env, capture_output=True,
                         text=True, timeout=120)
    assert res.stdout.strip() == 'OK', res.stderr[-2000:]


def test_deep_trace_does_not_recurse():
    a = Float(1.0, 2.0)
    x = a
    for _ in range(200_000):
        x = x + 1.0
    np.testing.assert_array_equal(x.numpy(), [200_001, 200_002])
    y = a
    for _ in range(300_000):          # a deep chain dropped at once
        y = y * 1.0001
    del y


def test_graphviz_and_whos(capsys):
    a = Float(1, 2) * 2 + 1
    dot = pbc.graphviz(a)
    assert dot.startswith('digraph') and 'mul' in dot and 'literal' in dot
    info = pbc.whos()
    assert info['variables'] >= 1
    assert 'variables' in capsys.readouterr().out


def test_vector_ops_fuse(history):
    v = Array3f(pbc.arange(Float, 5), 1, 2)
    n = pbc.normalize(pbc.cross(v, Array3f(0, 0, 1)) + v)
    pbc.eval(n)
    assert len(history()) == 1
    ref_v = np.stack([np.arange(5), np.ones(5), 2 * np.ones(5)]).astype(np.float32)
    c = np.cross(ref_v.T, [0, 0, 1]).T + ref_v
    np.testing.assert_allclose(n.numpy(), c / np.linalg.norm(c, axis=0), rtol=1e-6)


def test_groups_sharing_nodes_in_one_eval():
    """Running one group turns nodes that a later group shares into memory: the later group
    must be keyed and assembled from the graph as it is then (also on cache hits)."""
    for value in (3.0, 5.0, 3.0):
        u = pbc.opaque(Float, value) * 2              # width 1
        x = pbc.arange(Float, 10) + u                 # width 10, contains u's expression
        pbc.eval(u, x)
        assert u.numpy().tolist() == [2 * value]
        np.testing.assert_array_equal(x.numpy(), np.arange(10) + 2 * value)


def test_flat_array_classes_may_not_override_operators():
    # Registered classes get the runtime's C operator slots directly (CPython would give a
    # Python subclass generic slots that look each operator up by name on every call), so
    # a class that overrides one is refused rather than silently bypassed.
    class Overriding(_runtime.ArrayBase):
        __slots__ = ()

        def __add__(self, o):
            return 0

    with pytest.raises(TypeError, match='overrides __add__'):
        _runtime.register_class(0, _runtime.TYPE_NAMES.index('float32'), Overriding)
    x = Float([1, 2]) + Float([3, 4])
    assert type(x) is Float and x.numpy().tolist() == [4, 6]


def test_flatten_and_build_agree_with_the_general_walk():
    # flatten() takes a shortcut through plain tuples, lists and dicts (a call's arguments)
    # and plans build() once: both must give leaves()'s order and the same structure back.
    from dataclasses import dataclass

    from pbc.tree import flatten, leaves

    @dataclass
    class Pair:
        a: object
        b: object

    a, b, c, d = Float(1), Float(2), UInt32(3), Float(4)
    cyclic = [a]
    cyclic.append(cyclic)
    for obj in [((a, b), {}), (a, 2.0, 'x', None, [b, {'k': c}]), [[[[[a]]]], b],
                (Pair(a, (b, c)), d), {'p': Pair([a], 1), 'q': (b,)}, a, ()]:
        arrays, build = flatten(obj)
        assert [x.index for x in arrays] == [x.index for x in leaves(obj)]
        new = [type(x)(x) + 1 for x in arrays]
        for _ in range(2):                      # (the plan is made once, used twice)
            rebuilt = build(new)
            assert [x.index for x in flatten(rebuilt)[0]] == [x.index for x in new]
            assert type(rebuilt) is type(obj)
    with pytest.raises(RuntimeError, match='contains itself'):
        flatten(cyclic)
