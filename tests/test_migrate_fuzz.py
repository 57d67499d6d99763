"""python -m pbc.migrate on random Dr.Jit-style programs: the migrated program computes,
bit for bit, what the original computes when run under pbc as it is (pbc runs `Loop`,
`while_loop` and `if_stmt` themselves, so the original is its own oracle)."""

import importlib.util

import fuzzing
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pbc.llvm import Float, UInt32
from pbc.migrate import migrate

FUZZ = settings(fuzzing.FUZZ, max_examples=fuzzing.examples(25))

UNARY = ('dr.sin({})', 'dr.abs({})', '-{}', 'dr.sqrt(dr.abs({}))')
BINARY = ('({} + {})', '({} - {})', '({} * {})', 'dr.minimum({}, {})',
          'dr.select({0} < {1}, {0}, {1})')


@st.composite
def expressions(draw, var, depth=3):
    """A Float expression of `var`, the read-only `y` and constants."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from([var, var, 'y', '0.5', '1.25']))
    if draw(st.booleans()):
        return draw(st.sampled_from(UNARY)).format(draw(expressions(var, depth - 1)))
    a, b = draw(expressions(var, depth - 1)), draw(expressions(var, depth - 1))
    return draw(st.sampled_from(BINARY)).format(a, b)


@st.composite
def programs(draw):
    """Dr.Jit source of f(x, y, n) -> tuple, in one of the forms the tool rewrites."""
    form = draw(st.sampled_from(['Loop', 'lambdas', 'local function']))
    p, q = draw(st.sampled_from([('x', 'k'), ('a', 'b'), ('k', 'x')]))    # lambda params
    guard = draw(st.sampled_from(['', ' & ({} < 4.0)', ' & (dr.abs({}) > 0.1)']))
    lines = ['import drjit as dr', 'from drjit.llvm import Float, Loop, UInt32', '', '',
             'def f(x, y, n):', '    k = UInt32(0)']
    if form == 'Loop':
        lines += ["    loop = Loop('f', lambda: (x, k))",
                  f'    while loop((k < n){guard.format("x")}):',
                  f'        x = x * 0.5 + {draw(expressions("x"))}',   # not an alias of y
                  '        k += 1']
    elif form == 'lambdas':
        lines += [f'    x, k = dr.while_loop((x, k), lambda {p}, {q}: ({q} < n){guard.format(p)},',
                  f'                         lambda {p}, {q}: ({draw(expressions(p))}, {q} + 1))']
    else:
        lines += ['    def body(x, k):',
                  f'        t = {draw(expressions("x"))}',
                  f'        x = t * 0.5 + {draw(expressions("x", 1))}',
                  '        return x, k + 1',
                  f'    x, k = dr.while_loop((x, k), lambda {p}, {q}: ({q} < n){guard.format(p)}, '
                  'body)']
    if draw(st.booleans()):
        lines += [f'    z = dr.if_stmt((x,), x > y, lambda {p}: {draw(expressions(p))},',
                  f'                   lambda {p}: {draw(expressions(p))})',
                  '    return x, k, z']
    else:
        lines += ['    return x, k']
    return '\n'.join(lines) + '\n'


def load(path, name, text):
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


@FUZZ
@given(programs(), st.integers(0, 2**32 - 1))
def test_migrated_program_computes_what_the_original_does(tmp_path_factory, source, seed):
    new, reports = migrate(source, 'prog.py')
    assert reports == [], source
    assert migrate(new) == (new, []), source                # idempotent
    as_is = source.replace('import drjit as', 'import pbc as').replace('drjit.llvm', 'pbc.llvm')
    tmp = tmp_path_factory.mktemp('fuzz')
    original, migrated = load(tmp / 'a.py', 'fuzz_a', as_is), load(tmp / 'b.py', 'fuzz_b', new)
    rng = np.random.default_rng(seed)
    xs, ys = rng.uniform(-2, 2, 13).astype(np.float32), rng.uniform(-2, 2, 13).astype(np.float32)
    ns = rng.integers(0, 6, 13).astype(np.uint32)
    want, got = (outcome(fn, Float(xs), Float(ys), UInt32(ns)) for fn in (original, migrated))
    assert type(want) is type(got), f'{source}\n---\n{new}\n{want!r} / {got!r}'
    if isinstance(want, tuple):
        assert len(want) == len(got)
        for a, b in zip(want, got):
            np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=f'{source}\n---\n{new}')


def outcome(fn, *args):
    """The results, or the exception (a program the original rejects, such as one that
    turns state into a Python number, must be rejected alike)."""
    try:
        return fn(*args)
    except Exception as e:              # noqa: BLE001  (compared by type)
        return e
