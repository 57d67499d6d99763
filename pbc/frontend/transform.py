"""@pbc.syntax: read a function's source, rewrite it (lowering.py, then rewrite.py), and
compile the result into a function that shares the original's globals and closure cells.

The rewritten `def` is compiled inside a factory whose parameters are the original's free
variables plus `__pbc_ctl__` (the run-time helpers), so those names compile as closure
variables; the new function then gets the original cells, matched by name. Globals stay
the original module's dictionary, and nothing is added to it. Methods are compiled inside
a class of the same name, so that `__private` names are mangled as before. Line numbers
and the file name are the original ones, so tracebacks and errors point at the user's code.
"""

import __future__

import ast
import inspect
import textwrap
import types

from . import runtime_helpers
from .analysis import (
    Assigned,
    Liveness,
    cells,
    escaping,
    first_use_order,
    function_locals,
    param_names,
)
from .errors import Located, SourceUnavailableError, SyntaxError_
from .hints import CTL
from .lowering import Lowerer
from .rewrite import Rewriter

FUTURE_FLAGS = 0
for _name in __future__.all_feature_names:
    FUTURE_FLAGS |= getattr(__future__, _name).compiler_flag
FACTORY = '__pbc_factory__'
RESERVED = ('_pbc_', CTL)


def syntax(fn=None, *, print_code=False, recursive=False):
    """Rewrites the `while` loops, `if` statements, conditional expressions and (for JIT
    bounds) `for i in range(...)` loops of `fn` into pbc.while_loop / pbc.if_stmt calls.
    Use as `@pbc.syntax` or `@pbc.syntax(print_code=True, recursive=True)`."""
    if fn is None:
        return lambda f: syntax(f, print_code=print_code, recursive=recursive)
    if isinstance(fn, (staticmethod, classmethod)):
        return type(fn)(syntax(fn.__func__, print_code=print_code, recursive=recursive))
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f'@pbc.syntax applies to functions, not {type(fn).__name__}')
    if hasattr(fn, '__wrapped__'):
        raise TypeError(f'@pbc.syntax: {fn.__qualname__!r} is wrapped by another decorator; '
                        'put @pbc.syntax directly above the def (innermost)')
    fdef, filename = parse(fn)
    where = Located(filename)
    check_reserved(fdef, where)
    if enclosing_class(fn.__qualname__):
        explicit_super(fdef)
    process(fdef, fn, where, recursive)
    if print_code:
        print(ast.unparse(fdef))
    return build(fn, fdef, filename)


kernel = syntax


def parse(fn):
    """The function's `def` node, with the file's line numbers, and the file name."""
    if fn.__name__ == '<lambda>':
        raise SourceUnavailableError(fn, 'it is a lambda, which has no statements to rewrite')
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise SourceUnavailableError(fn, str(e) or type(e).__name__) from None
    src = ''.join(lines)
    offset = first - 1
    try:
        tree = ast.parse(textwrap.dedent(src))
    except SyntaxError:             # e.g. a string literal's lines defeat dedent
        try:
            tree = ast.parse('if 1:\n' + src).body[0]
            offset -= 1
        except SyntaxError as e:
            raise SourceUnavailableError(fn, f'its source does not parse ({e})') from None
    node = tree.body[0] if tree.body else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name != fn.__name__:
        raise SourceUnavailableError(fn, 'the source found for it is not its def statement')
    ast.increment_lineno(node, offset)
    node.decorator_list = []
    return node, fn.__code__.co_filename


def check_reserved(fdef, where):
    for node in ast.walk(fdef):
        name = node.id if isinstance(node, ast.Name) else \
            node.arg if isinstance(node, ast.arg) else None
        if name and name.startswith(RESERVED):
            where.error(node, f"the name '{name}' is reserved for code that @pbc.syntax "
                        'generates (names starting with _pbc_)')


def explicit_super(fdef):
    """`super()` -> `super(__class__, self)`: the zero-argument form finds its arguments in
    the calling frame, which inside a generated loop body or branch is the wrong one."""
    params = fdef.args.posonlyargs + fdef.args.args
    if not params:
        return
    for node in ast.walk(fdef):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == 'super' and not node.args and not node.keywords:
            node.args = [ast.copy_location(ast.Name(v, ast.Load()), node)
                         for v in ('__class__', params[0].arg)]


def nested_defs(node):
    """Function definitions directly inside `node` (through classes, not functions)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield child
        elif not isinstance(child, ast.Lambda):
            yield from nested_defs(child)


def process(fdef, fn, where, recursive, outer_locals=()):
    local, declared = function_locals(fdef)
    if recursive:
        for inner in list(nested_defs(fdef)):
            process(inner, fn, where, True, set(outer_locals) | local)
    builtin_range = 'range' not in local and 'range' not in outer_locals \
        and 'range' not in fn.__globals__
    Lowerer(where.filename, set(declared), builtin_range).function(fdef)
    local, _ = function_locals(fdef)              # now with the generated names
    nested = cells(fdef, local)
    # (what a nested function changes in place, `nonlocal z; z += e`, it reads too)
    live = Liveness(fdef.body, escaping(fdef),
                    {f: nested.reads.get(f, set()) | nested.effects[f] for f in nested.functions})
    assigned = Assigned(fdef.body, param_names(fdef))
    Rewriter(fdef, live, assigned, local, first_use_order(fdef), where,
             set(declared), nested).function()
    ast.fix_missing_locations(fdef)


def enclosing_class(qualname):
    parts = qualname.split('.')
    return parts[-2] if len(parts) >= 2 and parts[-2] != '<locals>' else None


def build(fn, fdef, filename):
    code = fn.__code__
    free = [v for v in code.co_freevars if v != '__class__']
    inner = fdef
    cls = enclosing_class(fn.__qualname__)
    if cls:
        inner = ast.ClassDef(name=cls, bases=[], keywords=[], body=[fdef], decorator_list=[])
        if 'type_params' in ast.ClassDef._fields:
            inner.type_params = []
    args = ast.arguments(posonlyargs=[], args=[ast.arg(v) for v in [CTL] + free],
                         vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    body = [inner]
    if not cls and fdef.name not in free:   # `def` binds its name in the factory: keep
        body.insert(0, ast.Global([fdef.name]))     # the function's own name global
    factory = ast.FunctionDef(name=FACTORY, args=args, body=body, decorator_list=[],
                              returns=None)
    if 'type_params' in ast.FunctionDef._fields:
        factory.type_params = []
    module = ast.Module(body=[factory], type_ignores=[])
    ast.copy_location(inner, fdef)
    ast.copy_location(factory, fdef)
    ast.fix_missing_locations(module)
    try:
        compiled = compile(module, filename, 'exec', flags=code.co_flags & FUTURE_FLAGS,
                           dont_inherit=True)
    except SyntaxError as e:        # a bug in the rewrite: show what was compiled
        raise SyntaxError_(f'the rewritten function does not compile ({e.msg}):\n\n'
                           f'{ast.unparse(fdef)}', filename, e.lineno) from e
    new_code = find_code(compiled, fdef.name)
    if hasattr(new_code, 'co_qualname'):
        new_code = new_code.replace(co_qualname=fn.__qualname__)
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    cells[CTL] = types.CellType(runtime_helpers)
    closure = tuple(cells.get(v) or types.CellType() for v in new_code.co_freevars)
    new = types.FunctionType(new_code, fn.__globals__, fn.__name__, fn.__defaults__,
                             closure or None)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__annotations__ = dict(getattr(fn, '__annotations__', {}))
    new.__dict__.update(fn.__dict__)
    for attr in ('__module__', '__qualname__', '__doc__'):
        setattr(new, attr, getattr(fn, attr))
    new.__wrapped__ = fn
    new._pbc_source = ast.unparse(fdef)
    return new


def find_code(code, name):
    """The first code object called `name` below `code`, breadth first."""
    queue = [code]
    while queue:
        c = queue.pop(0)
        if c is not code and c.co_name == name:
            return c
        queue += [k for k in c.co_consts if isinstance(k, types.CodeType)]
    raise RuntimeError(f'@pbc.syntax: compiled code for {name!r} not found')


