"""Migrates Dr.Jit code (0.x and 1.x) to pbc: `python -m pbc.migrate PATH...`.

Three passes over one file's syntax tree, each making token-level edits (source.py), so
text outside the rewritten statements stays byte for byte:
  - names.py: `drjit` imports and names become pbc's, Dr.Jit 0.x names today's;
  - loops.py: Dr.Jit 0.x `Loop` objects become `while` statements under @pbc.syntax;
  - lambdas.py: `while_loop` / `if_stmt` with lambdas become `while` / `if` statements.
What cannot be rewritten safely is left as it is and reported with file:line and the reason
(docs/migration.md).
"""

import ast
from typing import NamedTuple

from .lambdas import Functional
from .loops import Loops
from .names import Names
from .source import Report, Source

__all__ = ['migrate', 'Migration', 'Report']


class Migration(NamedTuple):
    source: str                  # the migrated text
    reports: list                # [Report]: what was left as is, and why


def migrate(text, filename='<source>'):
    """The migrated text of one file and the reports about it. Raises SyntaxError for text
    that is not Python."""
    source = Source(text, filename)
    names = Names(source)
    names.run()
    decorate = _Decorations(source, names)
    loops = Loops(source, names, decorate)
    loops.run()
    Functional(source, names, decorate, decorate.inlined).run()
    _drop_unused_loop_imports(source, names, loops.removed)
    decorate.apply()
    return Migration(source.result(), sorted(source.reports, key=lambda r: r.line))


class _Decorations:
    """Adds @pbc.syntax to the functions whose statements were rewritten, and `import pbc`
    where the file has no name for pbc. Called as `syntax(fn)`, it returns that name."""

    def __init__(self, source, names):
        self.source, self.names = source, names
        self.functions = {}
        self.inlined = {}
        self.alias = names.module_alias()

    def __call__(self, fn):
        self.functions[id(fn)] = fn
        return self.alias or 'pbc'

    def apply(self):
        src = self.source
        targets = {}
        for fn in self.functions.values():
            while fn in self.inlined:
                fn = self.inlined[fn]
            targets[id(fn)] = fn
        for fn in targets.values():
            if not _decorated(fn):
                line = fn.lineno            # the `def` line, below any other decorator
                src.insert(src.starts[line - 1],
                           f'{src.indent(line)}@{self.alias or "pbc"}.syntax{src.newline}')
        if targets and self.alias is None:
            src.insert(_import_position(src), 'import pbc' + src.newline)


def _decorated(fn):
    for d in fn.decorator_list:
        d = d.func if isinstance(d, ast.Call) else d
        name = d.attr if isinstance(d, ast.Attribute) else getattr(d, 'id', None)
        if name in ('syntax', 'kernel'):
            return True
    return False


def _import_position(src):
    """After the module docstring and `from __future__` imports."""
    line = 0
    for node in src.tree.body:
        doc = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and \
            isinstance(node.value.value, str)
        future = isinstance(node, ast.ImportFrom) and node.module == '__future__'
        if not (doc or future):
            break
        line = node.end_lineno
    return src.starts[line]


def _drop_unused_loop_imports(src, names, removed):
    """`Loop` leaves a `from ... import` once no code uses it any more."""
    gone = {id(n) for n in removed}
    for node, alias in names.imports:
        name = alias.asname or alias.name
        if alias.name != 'Loop' or not removed:
            continue
        if any(isinstance(n, ast.Name) and n.id == name and id(n) not in gone
               for n in ast.walk(src.tree)):
            continue
        if len(node.names) == 1:
            if src.alone_on_lines(node):
                src.replace(*src.lines(node), '')
            continue
        i = node.names.index(alias)
        if i + 1 < len(node.names):
            nxt = node.names[i + 1]
            src.replace(src.at(alias.lineno, alias.col_offset),
                        src.at(nxt.lineno, nxt.col_offset), '')
        else:
            prev = node.names[i - 1]
            src.replace(src.at(prev.end_lineno, prev.end_col_offset),
                        src.at(alias.end_lineno, alias.end_col_offset), '')
