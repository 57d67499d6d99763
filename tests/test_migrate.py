"""python -m pbc.migrate: pbc.Loop code -> plain @pbc.syntax Python, with the same results."""

import importlib.util
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pbc
from pbc.frontend import syntax
from pbc.migrate import migrate

OLD = textwrap.dedent('''\
    """A module in the paper's style."""
    import pbc
    from pbc.llvm import Float, UInt32


    class Sim:
        def run(self, n):
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
        @pbc.syntax
        def run(self, n):
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


def load(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rewrite():
    new, warnings = migrate(OLD)
    assert new == NEW and warnings == []
    assert migrate(NEW) == (NEW, [])          # already migrated: unchanged


@pytest.fixture
def modules(tmp_path, monkeypatch):
    if not hasattr(pbc, 'syntax'):        # until pbc/__init__.py exports it
        monkeypatch.setattr(pbc, 'syntax', syntax, raising=False)
    (tmp_path / 'old_style.py').write_text(OLD)
    (tmp_path / 'new_style.py').write_text(NEW)
    return load(tmp_path / 'old_style.py'), load(tmp_path / 'new_style.py')


def test_migrated_code_runs_lane_by_lane(modules):
    from pbc.llvm import UInt32
    _, new = modules
    n = UInt32(0, 1, 5, 7)
    np.testing.assert_array_equal(new.Sim().run(n).numpy(), [1, 2, 32, 128])
    np.testing.assert_array_equal(new.count(n, 2).numpy(), [0, 2, 6, 8])


def test_same_results_as_the_loop_object(modules):
    from pbc.llvm import UInt32
    old, new = modules
    n = UInt32(0, 1, 5, 7)
    np.testing.assert_array_equal(old.Sim().run(n).numpy(), new.Sim().run(n).numpy())
    np.testing.assert_array_equal(old.count(n, 2).numpy(), new.count(n, 2).numpy())


def test_bare_loop_name_gets_an_import_and_odd_uses_are_left_alone():
    src = textwrap.dedent('''\
        from pbc import Loop


        def f(i):
            loop = Loop('f', state=lambda: (i,))
            while loop(i < 3):
                i += 1
            return i


        def g(i):
            loop = Loop('g', state=lambda: (i,))
            loop.extra = 1
            while loop(i < 3):
                i += 1
            return i
        ''')
    new, warnings = migrate(src, 'm.py')
    assert new.startswith('import pbc\nfrom pbc import Loop\n')
    assert '@pbc.syntax\ndef f(i):\n    while i < 3:' in new
    assert "loop = Loop('g'" in new and '@pbc.syntax\ndef g' not in new
    assert warnings == ["m.py:12: loop 'loop' is used other than in one `while loop(...)`; "
                        'left as is']


def test_command_line(tmp_path):
    path = tmp_path / 'code.py'
    path.write_text(OLD)
    run = [sys.executable, '-m', 'pbc.migrate']
    diff = subprocess.run(run + [str(path)], capture_output=True, text=True, check=True)
    assert '+    @pbc.syntax' in diff.stdout and '-        while loop(i < n):' in diff.stdout
    assert path.read_text() == OLD
    subprocess.run(run + ['--write', str(path)], capture_output=True, check=True)
    assert path.read_text() == NEW
