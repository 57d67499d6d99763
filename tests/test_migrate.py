"""python -m pbc.migrate: Dr.Jit code (0.x and 1.x) -> pbc, with the same results."""

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import pbc
from pbc.migrate import migrate
from pbc.migrate.names import CALLS, FLAGS, RENAMES, printf_format

CORPUS = Path(__file__).parent / 'migrate_corpus'
PROGRAMS = sorted(p.name[:-len('_drjit.py')] for p in CORPUS.glob('*_drjit.py'))


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def same(a, b):
    """Equal results: arrays lane for lane (bit for bit), containers element by element."""
    if isinstance(a, type):
        assert a is b
    elif isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
    elif pbc.is_array_v(a):
        assert type(a) is type(b)
        np.testing.assert_array_equal(np.asarray(a.numpy()), np.asarray(b.numpy()))
    else:
        assert a == b


def clean(text, filename='m.py'):
    """Migrate text that must migrate without reports."""
    new, reports = migrate(textwrap.dedent(text), filename)
    assert reports == []
    return new


def refused(text, filename='m.py'):
    """Migrate text whose interesting part is left as is: (new text, report strings)."""
    new, reports = migrate(textwrap.dedent(text), filename)
    assert reports
    return new, [str(r) for r in reports]


# ---- the corpus: Dr.Jit programs, migrated and run, equal pbc programs -------------------
@pytest.mark.parametrize('name', PROGRAMS)
def test_corpus_program_runs_as_the_pbc_version(name, tmp_path):
    old = (CORPUS / f'{name}_drjit.py').read_text()
    new, reports = migrate(old, f'{name}_drjit.py')
    assert reports == []
    assert 'drjit' not in new.replace('_drjit.py', '')
    (tmp_path / f'{name}_migrated.py').write_text(new)
    migrated = load(tmp_path / f'{name}_migrated.py', f'{name}_migrated')
    direct = load(CORPUS / f'{name}_pbc.py', f'{name}_direct')
    same(migrated.run(), direct.run())


@pytest.mark.parametrize('name', PROGRAMS)
def test_corpus_migration_is_idempotent(name):
    once = migrate((CORPUS / f'{name}_drjit.py').read_text()).source
    assert migrate(once) == (once, [])
    direct = (CORPUS / f'{name}_pbc.py').read_text()
    assert migrate(direct) == (direct, [])           # idiomatic pbc is left alone


# ---- imports and names -------------------------------------------------------------------
def test_imports_keep_their_aliases_and_drop_ad():
    new = clean('''\
        import drjit as dr
        import drjit.llvm.ad as ad
        from drjit.llvm.ad import Float as F, UInt32
        from drjit import llvm
        x = dr.llvm.ad.Float(1) + ad.Float(2) + llvm.ad.Float(3) + F(4)
        ''')
    assert new == textwrap.dedent('''\
        import pbc as dr
        import pbc.llvm as ad
        from pbc.llvm import Float as F, UInt32
        from pbc import llvm
        x = dr.llvm.Float(1) + ad.Float(2) + llvm.Float(3) + F(4)
        ''')


def test_plain_import_renames_the_module_everywhere():
    new = clean('''\
        import drjit  # the module
        import drjit.llvm

        def f(x: drjit.llvm.Float):
            return drjit.sqrt(x)
        ''')
    assert new == textwrap.dedent('''\
        import pbc  # the module
        import pbc.llvm

        def f(x: pbc.llvm.Float):
            return pbc.sqrt(x)
        ''')


@pytest.mark.parametrize('old,new', sorted(RENAMES.items()))
def test_renamed_function(old, new):
    assert hasattr(pbc, new) and not hasattr(pbc, old)
    assert clean(f'import drjit as dr\ny = dr.{old}\n') == f'import pbc as dr\ny = dr.{new}\n'
    assert clean(f'from drjit import {old}\ny = {old}(1)\n') == \
        f'from pbc import {new}\ny = {new}(1)\n'
    assert clean(f'from drjit import {old} as f\ny = f(1)\n') == \
        f'from pbc import {new} as f\ny = f(1)\n'


def test_names_pbc_has_are_kept():
    src = 'import drjit as dr\nt = dr.bool_array_t(x), dr.JitFlag.SymbolicLoops\n'
    assert clean(src) == src.replace('drjit', 'pbc')


@pytest.mark.parametrize('old,new', sorted(FLAGS.items()))
def test_renamed_flag(old, new):
    assert hasattr(pbc.JitFlag, new)
    assert clean(f'import drjit as dr\ndr.set_flag(dr.JitFlag.{old}, False)\n') == \
        f'import pbc as dr\ndr.set_flag(dr.JitFlag.{new}, False)\n'
    assert clean(f'from drjit import JitFlag\nf = JitFlag.{old}\n') == \
        f'from pbc import JitFlag\nf = JitFlag.{new}\n'


CALL_CASES = {
    'eq': ('dr.eq(a, b)', 'a == b'),
    'neq': ('dr.neq(a + 1, b)', 'a + 1 != b'),
    'printf_async': ('dr.printf_async("%f\\n", x)', 'dr.print("{:f}", x)'),
    'cot': ('dr.cot(x)', 'dr.rcp(dr.tan(x))'),
    'sec': ('dr.sec(x)', 'dr.rcp(dr.cos(x))'),
    'csc': ('dr.csc(x)', 'dr.rcp(dr.sin(x))'),
    **{f'{r}_nested': (f'dr.{r}_nested(x)', f'dr.{r}(x, axis=None)')
       for r in ('all', 'any', 'none', 'sum', 'prod', 'min', 'max', 'mean')},
}


def test_every_call_rewrite_has_a_case():
    assert set(CALL_CASES) == set(CALLS)


@pytest.mark.parametrize('name', sorted(CALL_CASES))
def test_call_rewrite(name):
    old, new = CALL_CASES[name]
    assert clean(f'import drjit as dr\ny = {old}\n') == f'import pbc as dr\ny = {new}\n'


def test_traverse_loses_dr_jit_0x_type_argument():
    new = clean('import drjit as dr\n'
                'dr.traverse(Float, dr.ADMode.Backward, dr.ADFlag.ClearNone)\n'
                'dr.traverse(dr.ADMode.Forward, dr.ADFlag.ClearNone)\n')
    assert new == ('import pbc as dr\ndr.traverse(dr.ADMode.Backward, dr.ADFlag.ClearNone)\n'
                   'dr.traverse(dr.ADMode.Forward, dr.ADFlag.ClearNone)\n')


def test_comparison_operands_are_parenthesized_where_needed():
    new = clean('import drjit as dr\nm = dr.eq(a == b, c) | dr.neq(x, y)\nf(dr.eq(p, q))\n')
    assert new == 'import pbc as dr\nm = ((a == b) == c) | (x != y)\nf(p == q)\n'


@pytest.mark.parametrize('fmt,expected', [
    ('%d items\n', ('{} items', None)),
    ('%i/%u: %5.2f%%\n', ('{}/{}: {:5.2f}%', None)),
    ('%x %-4d %+e {set}', ('{:x} {:<4d} {:+e} {{set}}', "''")),
    ('%s %08.3f\n', ('{} {:08.3f}', None)),
    ('%p\n', None),
])
def test_printf_format(fmt, expected):
    assert printf_format(fmt) == expected


def test_migrated_printf_prints_the_same_text(capfd):
    from pbc.llvm import Float, UInt32
    new = clean('import drjit as dr\n'
                "dr.printf_async('n=%u x=%.2f\\n', n, x)\n")
    assert new == "import pbc as dr\ndr.print('n={} x={:.2f}', n, x)\n"
    exec(new, {'n': UInt32(7), 'x': Float(0.5)})
    assert capfd.readouterr().out == 'n=[7] x=[0.50]\n'


def test_names_pbc_lacks_are_reported():
    new, reports = refused('''\
        import drjit as dr
        from drjit.scalar import Float
        from drjit import shuffle, printf_async
        y = dr.safe_sqrt(x) + dr.JitFlag.VCallInline + dr.scalar.Float(1)
        import drjit.nn
        ''')
    assert 'from drjit.scalar import Float' in new
    assert reports == [
        'm.py:2: pbc has no module pbc.scalar (for drjit.scalar); left as is',
        'm.py:3: pbc has no pbc.shuffle',
        'm.py:3: printf_async imported by name: only calls of the form '
        'dr.printf_async(...) are rewritten; left as is',
        'm.py:4: pbc has no module pbc.scalar; left as is',
        'm.py:4: pbc has no pbc.safe_sqrt',
        'm.py:4: pbc has no pbc.JitFlag.VCallInline',
        'm.py:5: pbc has no counterpart of module drjit.nn; left as is',
    ]


def test_cuda_modules_become_pbc_cuda():
    new = clean('''\
        import drjit as dr
        import drjit.cuda.ad as cuda
        from drjit.cuda.ad import Float, UInt32
        x = dr.cuda.ad.Float(1) + cuda.Float(2)
        ''')
    assert new == textwrap.dedent('''\
        import pbc as dr
        import pbc.cuda as cuda
        from pbc.cuda import Float, UInt32
        x = dr.cuda.Float(1) + cuda.Float(2)
        ''')


# ---- Dr.Jit 0.x Loop objects -------------------------------------------------------------
OLD = textwrap.dedent('''\
    """A module in the paper's style."""
    import pbc
    from pbc.llvm import Float, UInt32


    class Sim:
        @staticmethod
        def run(n):
            i, x = UInt32(0), Float(1)
            loop = pbc.Loop('sim', state=lambda: (i, x))  # state listed by hand
            while loop(i < n):
                x = x * 2  # doubles
                i += 1
            return x


    def count(n, step):
        i = UInt32(0)
        loop = pbc.Loop('count', lambda: (i,))
        while loop(i < n):
            i += step
        return i
    ''')

NEW = textwrap.dedent('''\
    """A module in the paper's style."""
    import pbc
    from pbc.llvm import Float, UInt32


    class Sim:
        @staticmethod
        @pbc.syntax
        def run(n):
            i, x = UInt32(0), Float(1)
            while i < n:
                x = x * 2  # doubles
                i += 1
            return x


    @pbc.syntax
    def count(n, step):
        i = UInt32(0)
        while i < n:
            i += step
        return i
    ''')


def test_loop_rewrite():
    assert migrate(OLD) == (NEW, [])
    assert migrate(NEW) == (NEW, [])


def test_loop_rewrite_gives_the_loop_objects_results(tmp_path):
    from pbc.llvm import UInt32
    (tmp_path / 'old_loops.py').write_text(OLD)
    (tmp_path / 'new_loops.py').write_text(NEW)
    old, new = load(tmp_path / 'old_loops.py', 'old_loops'), load(tmp_path / 'new_loops.py',
                                                                   'new_loops')
    n = UInt32(0, 1, 5, 7)
    np.testing.assert_array_equal(new.Sim.run(n).numpy(), [1, 2, 32, 128])
    same(old.Sim.run(n), new.Sim.run(n))
    same(old.count(n, 2), new.count(n, 2))


def test_loop_with_max_iterations_gets_a_hint_and_an_import():
    new = clean('''\
        """Doc."""
        from drjit.llvm import Loop, UInt32


        def f(i):
            loop = Loop('f', state=lambda: (i,))
            loop.set_max_iterations(8)
            loop.set_eval_stride(1024)
            while loop(i < 3):
                i += 1
            return i
        ''')
    assert new == textwrap.dedent('''\
        """Doc."""
        import pbc
        from pbc.llvm import UInt32


        @pbc.syntax
        def f(i):
            while pbc.hint(i < 3, max_iterations=8):
                i += 1
            return i
        ''')


LOOP_REFUSALS = {
    'at module level': ('''\
        i = UInt32(0)
        loop = Loop('m', lambda: (i,))
        while loop(i < 3):
            i += 1
        ''', 'm.py:5: Loop \'loop\' left as is: @pbc.syntax rewrites functions, and this Loop is '
             'not inside one'),
    'name reused': ('''\
        def f(i):
            loop = Loop('f', lambda: (i,))
            while loop(i < 3):
                i += 1
            loop = None
        ''', "m.py:5: Loop 'loop' left as is: 'loop' is assigned something else too (line 8)"),
    'escapes': ('''\
        def f(i):
            loop = Loop('f', lambda: (i,))
            while loop(i < 3):
                i += 1
            return loop
        ''', "m.py:5: Loop 'loop' left as is: 'loop' is used other than in `while loop(...)` and "
             'its put/init/set_max_iterations/set_eval_stride calls (line 8)'),
    'state with side effects': ('''\
        def f(i):
            loop = Loop('f', lambda: (i, log(i)))
            while loop(i < 3):
                i += 1
        ''', "m.py:5: Loop 'loop' left as is: its state lambda calls a function (log(i)), which "
             'may have side effects'),
    'state not a variable': ('''\
        def f(self):
            loop = Loop('f', lambda: (self.i,))
            while loop(self.i < 3):
                self.i += 1
        ''', "m.py:5: Loop 'loop' left as is: its state lists self.i, not a local variable: "
             '@pbc.syntax finds state among local variables'),
    'aliased': ('''\
        def f(x):
            y = x
            loop = Loop('f', lambda: (x,))
            while loop(x < 3):
                x = x + y
            return x
        ''', "m.py:6: Loop 'loop' left as is: state variable 'x' may be the same object as 'y', "
             'which the loop reads: Loop changed both, @pbc.syntax changes only \'x\''),
    'aliased through a struct': ('''\
        def f(o, d):
            ray = Ray3f(o, d)
            loop = Loop('f', lambda: (o,))
            while loop(o.x < 3):
                o = o + ray.d
            return o
        ''', "m.py:6: Loop 'loop' left as is: state variable 'o' may be the same object as 'ray', "
             "which the loop reads: Loop changed both, @pbc.syntax changes only 'o'"),
    'variable outside the state': ('''\
        def f(i):
            t = 0
            loop = Loop('f', lambda: (i,))
            while loop(i < 3):
                t = i * 2
                i += 1
            return t
        ''', "m.py:6: Loop 'loop' left as is: the body assigns 't', which is not in its state but "
             'is used outside the loop: @pbc.syntax would make it loop state'),
    'return in the body': ('''\
        def f(i):
            loop = Loop('f', lambda: (i,))
            while loop(i < 3):
                i += 1
                return i
        ''', "m.py:5: Loop 'loop' left as is: @pbc.syntax would keep it as a Python loop: it "
             "contains 'return' (line 8)"),
    'two statements on a line': ('''\
        def f(i):
            loop = Loop('f', lambda: (i,)); j = 1
            while loop(i < 3):
                i += j
        ''', "m.py:5: Loop 'loop' left as is: line 5 holds other code too"),
}


@pytest.mark.parametrize('case', sorted(LOOP_REFUSALS))
def test_loop_refusal(case):
    text, report = LOOP_REFUSALS[case]
    src = 'import drjit as dr\nfrom drjit.llvm import Loop, UInt32\n\n' + textwrap.dedent(text)
    new, reports = migrate(src, 'm.py')
    assert [str(r) for r in reports] == [report]
    assert new == src.replace('drjit', 'pbc').replace('import pbc as dr', 'import pbc as dr')


def test_one_name_for_several_loops():
    new = clean('''\
        from drjit.llvm import Loop, UInt32

        def f(i, j):
            loop = Loop('a', lambda: (i,))
            while loop(i < 3):
                i += 1
            loop = Loop('b', lambda: (j,))
            while loop(j < i):
                j += 2
            return j
        ''')
    assert new == textwrap.dedent('''\
        import pbc
        from pbc.llvm import UInt32

        @pbc.syntax
        def f(i, j):
            while i < 3:
                i += 1
            while j < i:
                j += 2
            return j
        ''')


def test_parameter_state_rebound_in_the_body_is_rewritten():
    # Dr.Jit 0.x left the caller's object holding the loop's internal variable: no correct
    # program reads it afterwards, so rebinding a parameter changes nothing observable.
    new = clean('''\
        from drjit.llvm import Loop, UInt32

        def trace(o, i):
            loop = Loop('t', lambda: (o, i))
            while loop(i < 10):
                o = o * 2
                i += 1
            return o
        ''')
    assert 'while i < 10:' in new and '@pbc.syntax\ndef trace' in new


# ---- Dr.Jit 1.x functional forms ---------------------------------------------------------
FUNCTIONAL_REFUSALS = {
    'result unused': ('dr.while_loop((x,), lambda x: x < 3, lambda x: (x + 1,))',
                      'its result is not assigned to variables'),
    'other targets': ('y, = dr.while_loop((x,), lambda x: x < 3, lambda x: (x + 1,))',
                      'its result is assigned to other variables than its state'),
    'outer read of a state name': ('x, i = dr.while_loop((x, i), lambda a, b: b < x, '
                                   'lambda a, b: (a, b + 1))',
                                   "the lambda at line 5 reads 'x' from outside, which the "
                                   'statement form would confuse with its variable'),
    'arity': ('y = dr.if_stmt((x,), x > 0, lambda: 1, lambda x: x)',
              'the function at line 5 does not take exactly the 1 variables as plain parameters'),
    'not a function': ('x, = dr.while_loop((x,), cond, step)',
                       "'cond' is not a function defined before it in the same block"),
    'walrus': ('x, = dr.while_loop((x,), lambda x: (y := x) < 3, lambda x: (x + 1,))',
               "a lambda contains ':='"),
    'unknown keyword': ('x, = dr.while_loop((x,), lambda x: x < 3, lambda x: (x + 1,), '
                        'extra=1)', 'it passes extra=, which has no statement form'),
    'expression state': ('x, = dr.while_loop((x + 1,), lambda x: x < 3, lambda x: (x + 1,))',
                         'its state is not a tuple of plain variables'),
}


@pytest.mark.parametrize('case', sorted(FUNCTIONAL_REFUSALS))
def test_functional_refusal(case):
    stmt, reason = FUNCTIONAL_REFUSALS[case]
    src = f'import drjit as dr\n\n\ndef f(x, i):\n    {stmt}\n    return x\n'
    new, reports = migrate(src, 'm.py')
    kind = 'while_loop' if 'while_loop' in stmt else 'if_stmt'
    assert [str(r) for r in reports] == [f'm.py:5: {kind}(...) left as is: {reason}']
    assert new == src.replace('import drjit', 'import pbc')


def test_local_functions_are_inlined_only_when_private():
    new, reports = refused('''\
        import drjit as dr

        def f(x, i):
            def body(x, i):
                t = x * 2
                return t, i + 1
            x, i = dr.while_loop((x, i), lambda x, i: i < 3, body)
            t = 0
            return x, t

        def g(x):
            def step(x):
                return (x + 1,)
            x, = dr.while_loop((x,), lambda x: x < 3, step)
            return step(x)
        ''')
    assert reports == [
        "m.py:7: while_loop(...) left as is: inlining 'body' would mix its variable 't' with "
        'the one outside',
        "m.py:14: while_loop(...) left as is: 'step' is used or defined more than once, or "
        'decorated',
    ]
    assert '@pbc.syntax' not in new and '@dr.syntax' not in new


def test_local_function_in_an_else_block():
    new = clean('''\
        import drjit as dr

        def f(x, flag):
            if flag:
                pass
            else:
                def body(x):
                    return (x * 2,)
                x, = dr.while_loop((x,), lambda x: x < 9, body)
            return x
        ''')
    assert '    else:\n        while x < 9:\n            x = x * 2\n    return x\n' in new


def test_if_stmt_with_hints_and_one_sided_result():
    new = clean('''\
        import drjit as dr

        def f(x, y):
            x, y = dr.if_stmt((x, y), x > y, lambda x, y: (y, x), lambda x, y: (x, y),
                              mode='evaluated', label='swap')
            return x, y
        ''')
    assert new == textwrap.dedent('''\
        import pbc as dr

        @dr.syntax
        def f(x, y):
            if dr.hint(x > y, mode='evaluated', label='swap'):
                x, y = y, x
            return x, y
        ''')


def test_nested_functional_forms_are_rewritten_in_one_run():
    src = textwrap.dedent('''\
        import drjit as dr

        def f(x, i):
            def body(x, i):
                x, = dr.while_loop((x,), lambda x: x < 10, lambda x: (x * 2,))
                return x, i + 1
            x, i = dr.while_loop((x, i), lambda x, i: i < 3, body)
            return x
        ''')
    once = clean(src)
    assert once == textwrap.dedent('''\
        import pbc as dr

        @dr.syntax
        def f(x, i):
            while i < 3:
                while x < 10:
                    x = x * 2
                i = i + 1
            return x
        ''')
    assert migrate(once) == (once, [])


def test_tab_indented_file_keeps_its_tabs():
    new = clean('import drjit as dr\n\ndef f(x):\n\tdef body(x):\n\t\tx = x * 2\n'
                '\t\treturn (x,)\n\tx, = dr.while_loop((x,), lambda x: x < 9, body)\n'
                '\treturn x\n')
    assert new == ('import pbc as dr\n\n@dr.syntax\ndef f(x):\n\twhile x < 9:\n'
                   '\t\tx = x * 2\n\treturn x\n')


# ---- safety of the edits -----------------------------------------------------------------
def test_text_outside_the_rewrites_survives_byte_for_byte():
    src = ('# -*- coding: utf-8 -*-\r\n"""Résumé."""\r\nimport drjit   as  dr  # spaced\r\n'
           'from drjit.llvm import (Float,\r\n    Loop)  # wrapped\r\n\r\n\r\n'
           'def f(x):\r\n    i = 0\t# tab\r\n    loop = Loop("l", lambda: (x,))\r\n'
           '    while loop(x < 3):   # cond\r\n        x += 1\r\n    return x\r\n')
    new = clean(src)
    assert new == ('# -*- coding: utf-8 -*-\r\n"""Résumé."""\r\nimport pbc   as  dr  # spaced\r\n'
                   'from pbc.llvm import (Float)  # wrapped\r\n\r\n\r\n'
                   '@dr.syntax\r\ndef f(x):\r\n    i = 0\t# tab\r\n'
                   '    while x < 3:   # cond\r\n        x += 1\r\n    return x\r\n')


# ---- the command line --------------------------------------------------------------------
def run_tool(*args, cwd=None):
    return subprocess.run([sys.executable, '-m', 'pbc.migrate', *map(str, args)],
                          capture_output=True, text=True, cwd=cwd)


def test_command_line_diff_write_check(tmp_path):
    path = tmp_path / 'code.py'
    path.write_text(OLD)
    diff = run_tool(path)
    assert diff.returncode == 0 and path.read_text() == OLD
    assert '+    @pbc.syntax' in diff.stdout and '-        while loop(i < n):' in diff.stdout
    check = run_tool('--check', path)
    assert check.returncode == 1 and f'would rewrite {path}' in check.stderr
    assert run_tool('--write', path).returncode == 0 and path.read_text() == NEW
    again = run_tool('--check', path)
    assert again.returncode == 0 and again.stdout == ''


def test_command_line_directories_reports_and_errors(tmp_path):
    (tmp_path / 'pkg' / 'sub').mkdir(parents=True)
    (tmp_path / '.hidden').mkdir()
    (tmp_path / 'pkg' / 'a.py').write_text('import drjit as dr\n')
    (tmp_path / 'pkg' / 'sub' / 'b.py').write_text('from drjit.scalar import Float\n')
    (tmp_path / '.hidden' / 'c.py').write_text('import drjit as dr\n')
    (tmp_path / 'pkg' / 'notes.txt').write_text('import drjit\n')
    out = run_tool('--write', tmp_path)
    assert out.returncode == 0
    assert (tmp_path / 'pkg' / 'a.py').read_text() == 'import pbc as dr\n'
    assert (tmp_path / '.hidden' / 'c.py').read_text() == 'import drjit as dr\n'
    assert f'{tmp_path / "pkg" / "sub" / "b.py"}:1: pbc has no module pbc.scalar' in out.stderr
    (tmp_path / 'bad.py').write_text('def (:\n')
    bad = run_tool('--check', tmp_path / 'bad.py')
    assert bad.returncode == 2 and 'cannot migrate' in bad.stderr


# ---- state that only a call changes ------------------------------------------------------
HIDDEN = textwrap.dedent('''\
    import pbc
    from pbc.llvm import PCG32, Float, UInt32


    def draw(r):
        return r.next_float32()


    def legacy(n):
        rng, i, acc = PCG32(4), UInt32(0), Float(0)
        loop = pbc.Loop('l', lambda: (rng, i, acc))
        while loop(i < n):
            acc += draw(rng)
            i += 1
        return acc


    def functional(n):
        rng, i, acc = PCG32(4), UInt32(0), Float(0)
        rng, i, acc = pbc.while_loop((rng, i, acc), lambda r, i, a: i < n,
                                     lambda r, i, a: (r, i + 1, a + draw(r)))
        return acc
    ''')


def test_state_changed_only_through_a_call_is_included(tmp_path):
    from pbc.llvm import UInt32
    new = clean(HIDDEN)
    assert new.count('while pbc.hint(i < n, include=[rng]):') == 2
    (tmp_path / 'hidden_old.py').write_text(HIDDEN)
    (tmp_path / 'hidden_new.py').write_text(new)
    old, new = load(tmp_path / 'hidden_old.py', 'hidden_old'), load(tmp_path / 'hidden_new.py',
                                                                     'hidden_new')
    n = UInt32(0, 1, 2, 5)
    same(old.legacy(n), new.legacy(n))
    same(old.functional(n), new.functional(n))
    same(new.legacy(n), new.functional(n))


def test_refused_loop_keeps_running_with_dr_jit_0x_semantics(tmp_path):
    # y is x's object, so under Loop it is the loop's variable too and the body doubles x;
    # as a @pbc.syntax loop y would keep x's first value. The tool refuses, and the file,
    # its imports migrated, still runs the Loop.
    src = textwrap.dedent('''\
        from drjit.llvm import Loop, UInt32


        def f(x):
            y = x
            loop = Loop('f')
            loop.put(lambda: (x,))
            loop.set_max_iterations(8)
            loop.init()
            while loop(x < 10):
                x = x + y
            return x
        ''')
    new, reports = migrate(src, 'm.py')
    assert [r.line for r in reports] == [6] and "'y'" in reports[0].message
    assert new == src.replace('drjit', 'pbc')
    (tmp_path / 'refused_loop.py').write_text(new)
    from pbc.llvm import UInt32
    out = load(tmp_path / 'refused_loop.py', 'refused_loop').f(UInt32(1, 3, 12))
    assert out.numpy().tolist() == [16, 12, 12]
