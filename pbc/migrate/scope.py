"""What the rewrites need to know about names: who binds and reads them, and where."""

import ast

NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp,
          ast.SetComp, ast.DictComp, ast.GeneratorExp)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Statements that keep @pbc.syntax from turning a loop body into a function.
NOT_MOVABLE = {ast.Return: 'return', ast.Yield: 'yield', ast.YieldFrom: 'yield from',
               ast.Await: 'await', ast.Global: 'global', ast.Nonlocal: 'nonlocal'}


def owner(node):
    """The function whose own code holds `node` (None at module or class level)."""
    node = getattr(node, 'parent', None)
    while node is not None and not isinstance(node, (ast.Module, ast.ClassDef) + FUNCTIONS):
        node = getattr(node, 'parent', None)
    return node if isinstance(node, FUNCTIONS) else None


def own_nodes(node):
    """The nodes of `node` outside nested scopes (a nested def's name and defaults are in)."""
    todo = list(ast.iter_child_nodes(node))
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, NESTED):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                todo += n.decorator_list
            continue
        todo += ast.iter_child_nodes(n)


def bound(nodes):
    """Names that statements bind in their own scope."""
    out = set()
    for stmt in nodes:
        for n in [stmt, *own_nodes(stmt)]:
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                out.add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(n.name)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                out |= {(a.asname or a.name).split('.')[0] for a in n.names}
    return out


def names(node):
    """Every Name node under `node`, nested scopes included (closures read at call time)."""
    return [n for n in ast.walk(node) if isinstance(n, ast.Name)]


def inside(node, outer):
    """Whether `node` lies within `outer`."""
    while node is not None:
        if node is outer:
            return True
        node = getattr(node, 'parent', None)
    return False


def not_movable(stmts):
    """The first statement kind in `stmts` that @pbc.syntax cannot move into a function."""
    for stmt in stmts:
        for n in [stmt, *own_nodes(stmt)]:
            if type(n) in NOT_MOVABLE:
                return NOT_MOVABLE[type(n)], n.lineno
    return None


def base_name(node):
    """`a` for `a`, `a.b`, `a[i]`, `a.b[i].c`; None otherwise."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def holders(fn, var):
    """Names in `fn` that may hold the object `var` is bound to, besides `var`: `a = var`,
    `var = a`, `a.f = var`, `a[i] = var`, `a.append(var)`, `a = [var, ...]`, `a = Ray(var)`
    (a constructor keeps its arguments)."""
    out = set()
    for n in ast.walk(fn):
        if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None:
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for t in targets:
                for target, value in _pairs(t, n.value):
                    if _is(value, var) and not _is(target, var):
                        out.add(base_name(target))
                    elif _is(target, var) and isinstance(value, (ast.Name, ast.Attribute,
                                                                 ast.Subscript)):
                        out.add(base_name(value))
                    elif not _is(target, var) and _keeps(value, var):
                        out.add(base_name(target))
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                any(_is(a, var) for a in n.args + [k.value for k in n.keywords]):
            out.add(base_name(n.func.value))
    return out - {None, var}


def _pairs(target, value):
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
            and len(target.elts) == len(value.elts):
        return list(zip(target.elts, value.elts))
    return [(target, value)]


def _is(node, var):
    return isinstance(node, ast.Name) and node.id == var


def _keeps(value, var):
    """Whether the object built by `value` may hold `var` itself."""
    if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
        return any(_is(e, var) or _keeps(e, var) for e in value.elts)
    if isinstance(value, ast.Dict):
        return any(_is(e, var) for e in value.values)
    if isinstance(value, ast.Call):
        f = value.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, 'id', '')
        return name[:1].isupper() and any(_is(a, var) for a in value.args +
                                          [k.value for k in value.keywords])
    return False


def writes(nodes):
    """Names @pbc.syntax counts as written by `nodes` (docs/control_flow.md): bound, or
    changed through `v.attr = ...`, `v[i] = ...`, `del v[i]` or a method call `v.m(...)`."""
    out = bound(nodes)
    for stmt in nodes:
        for n in [stmt, *own_nodes(stmt)]:
            if isinstance(n, (ast.Attribute, ast.Subscript)) and \
                    isinstance(n.ctx, (ast.Store, ast.Del)) or \
                    isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
                out.add(base_name(n.func.value if isinstance(n, ast.Call) else n.value))
    return out - {None}


def passed(nodes, pure):
    """Names handed bare to calls in `nodes` (which may change them in place), except to
    calls `pure(func)` says leave their arguments alone."""
    out = set()
    for node in nodes:
        for n in ast.walk(node):
            if isinstance(n, ast.Call) and not pure(n.func):
                out |= {a.id for a in n.args + [k.value for k in n.keywords]
                        if isinstance(a, ast.Name)}
    return out


def hidden_state(variables, calls, written):
    """State variables @pbc.syntax would not see: passed to a call (`calls`), which may
    change them in place and which Dr.Jit's explicit state carried through the loop or
    branch, but not `written` otherwise. They go to pbc.hint(include=[...])."""
    return [v for v in variables if v in calls and v not in written]
