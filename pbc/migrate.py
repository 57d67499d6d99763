"""Rewrites Dr.Jit 0.x style loops into plain Python for @pbc.syntax.

    loop = pbc.Loop('name', state=lambda: (rng, i, result))       @pbc.syntax
    while loop(i < 10):                                  ->         def f(...):
        ...                                                             while i < 10:
                                                                            ...

The Loop line goes, `while loop(cond):` becomes `while cond:`, and the enclosing function
gets `@pbc.syntax` (unless it has it, or `@pbc.kernel`). Everything else, comments and
formatting included, stays as it was. Usage:

    python -m pbc.migrate FILE...            print a unified diff
    python -m pbc.migrate --write FILE...    rewrite the files in place
"""

import argparse
import ast
import difflib
import sys


def _loop_call(node):
    """The module prefix ('pbc', 'dr', '' for a bare name) if node is a Loop(...) call."""
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    if isinstance(f, ast.Name) and f.id == 'Loop':
        return ''
    if isinstance(f, ast.Attribute) and f.attr == 'Loop':
        return ast.unparse(f.value)
    return None


def _decorated(fn):
    for d in fn.decorator_list:
        d = d.func if isinstance(d, ast.Call) else d
        name = d.attr if isinstance(d, ast.Attribute) else getattr(d, 'id', None)
        if name in ('syntax', 'kernel'):
            return True
    return False


def _owner(tree, node):
    """The innermost function whose body contains `node`."""
    best = None
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                fn.lineno <= node.lineno <= fn.end_lineno:
            if best is None or fn.lineno >= best.lineno:
                best = fn
    return best


def migrate(source, filename='<source>'):
    """(new source, [warnings]) for one file's text."""
    tree = ast.parse(source, filename)
    data = source.encode()
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(line, col):
        return starts[line - 1] + col

    edits, warnings, decorate = [], [], {}
    loops = [(node.targets[0].id, node, _loop_call(node.value), _owner(tree, node))
             for node in ast.walk(tree) if isinstance(node, ast.Assign)
             and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
             and _loop_call(node.value) is not None]
    for name, assign, prefix, owner in sorted(loops, key=lambda x: x[1].lineno):
        whiles = [w for w in ast.walk(owner or tree) if isinstance(w, ast.While)
                  and isinstance(w.test, ast.Call) and isinstance(w.test.func, ast.Name)
                  and w.test.func.id == name and len(w.test.args) == 1]
        uses = [n for n in ast.walk(owner or tree) if isinstance(n, ast.Name) and n.id == name]
        where = f'{filename}:{assign.lineno}'
        if owner is None:
            warnings.append(f'{where}: loop {name!r} is not inside a function; left as is')
            continue
        if len(whiles) != 1 or len(uses) != 2:
            warnings.append(f'{where}: loop {name!r} is used other than in one '
                            f'`while {name}(...)`; left as is')
            continue
        before = data[starts[assign.lineno - 1]:offset(assign.lineno, assign.col_offset)]
        after = data[offset(assign.end_lineno, assign.end_col_offset):
                     starts[assign.end_lineno]].strip()
        if before.strip() or not (after == b'' or after.startswith(b'#')):
            warnings.append(f'{where}: the line of loop {name!r} holds other code; left as is')
            continue
        test = whiles[0].test
        cond = ast.get_source_segment(source, test.args[0])
        edits.append((offset(test.lineno, test.col_offset),
                      offset(test.end_lineno, test.end_col_offset), cond.encode()))
        edits.append((starts[assign.lineno - 1], starts[assign.end_lineno], b''))
        if not _decorated(owner):
            decorate[id(owner)] = (owner, (prefix or 'pbc').split('.')[0])
    for owner, prefix in decorate.values():
        first = min([owner.lineno] + [d.lineno for d in owner.decorator_list])
        line = data[starts[first - 1]:starts[first]].decode()
        indent = line[:len(line) - len(line.lstrip())]
        at = starts[first - 1]
        edits.append((at, at, f'{indent}@{prefix}.syntax\n'.encode()))
    for start, end, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        data = data[:start] + text + data[end:]
    out = data.decode()
    if any(p == 'pbc' for _, p in decorate.values()) and not _imports_pbc(tree):
        out = _add_import(out, tree)
    return out, warnings


def _imports_pbc(tree):
    return any(isinstance(n, ast.Import) and any(a.name == 'pbc' and a.asname is None
                                                 for a in n.names) for n in tree.body)


def _add_import(source, tree):
    """`import pbc` after the module docstring and __future__ imports."""
    after = 0
    for node in tree.body:
        doc = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        future = isinstance(node, ast.ImportFrom) and node.module == '__future__'
        if not (doc or future):
            break
        after = node.end_lineno
    lines = source.splitlines(keepends=True)
    return ''.join(lines[:after] + ['import pbc\n'] + lines[after:])


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m pbc.migrate', description=__doc__.split(
        '\n\n')[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('files', nargs='+', metavar='FILE')
    parser.add_argument('--write', action='store_true', help='rewrite the files in place')
    args = parser.parse_args(argv)
    status = 0
    for path in args.files:
        with open(path, encoding='utf-8') as f:
            old = f.read()
        try:
            new, warnings = migrate(old, path)
        except SyntaxError as e:
            print(f'{path}: cannot parse: {e}', file=sys.stderr)
            status = 1
            continue
        for w in warnings:
            print(w, file=sys.stderr)
        if new == old:
            continue
        if args.write:
            with open(path, 'w', encoding='utf-8') as f:
                f.write(new)
            print(f'rewrote {path}', file=sys.stderr)
        else:
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(keepends=True), new.splitlines(keepends=True),
                path, path))
    return status


if __name__ == '__main__':
    sys.exit(main())
