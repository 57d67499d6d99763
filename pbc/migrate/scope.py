"""What the rewrites need to know about names: who binds and reads them, and where. What
@pbc.syntax itself sees (written names, statements it keeps as plain Python) comes from the
frontend's own analysis, so a rewrite and the compiled code agree."""

import ast

from ..frontend import analysis, lowering

NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp,
          ast.SetComp, ast.DictComp, ast.GeneratorExp)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def owner(node):
    """The function whose own code holds `node` (None at module or class level)."""
    node = getattr(node, 'parent', None)
    while node is not None and not isinstance(node, (ast.Module, ast.ClassDef) + FUNCTIONS):
        node = getattr(node, 'parent', None)
    return node if isinstance(node, FUNCTIONS) else None


def bound(nodes):
    """Names that statements bind (or delete) in their own scope, as @pbc.syntax's analysis
    sees them."""
    found = analysis.Names.of(list(nodes))
    return set(found.binds) | set(found.deletes)


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


def declared(fn):
    """Names that `fn` or a function inside it declares global or nonlocal."""
    return {n for s in ast.walk(fn) if isinstance(s, (ast.Global, ast.Nonlocal))
            for n in s.names}


def not_movable(stmts, declared):
    """Why @pbc.syntax would keep a loop or branch of `stmts` as plain Python (the
    frontend's own test: `return`, `yield`, `await`, `global`, `del name`, ...), or None.
    `declared`: the function's global and nonlocal names."""
    found = lowering.problem(list(stmts), declared, jumps_ok=True)
    return None if found is None else found[1]


def _holder(node):
    """The name whose object an assignment target or value reaches (`a` for `a.f`, `*a`)."""
    return analysis.base_name(node.value if isinstance(node, ast.Starred) else node)


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
                        out.add(_holder(target))
                    elif _is(target, var) and isinstance(value, (ast.Name, ast.Attribute,
                                                                 ast.Subscript)):
                        out.add(_holder(value))
                    elif not _is(target, var) and _keeps(value, var):
                        out.add(_holder(target))
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                any(_is(a, var) for a in n.args + [k.value for k in n.keywords]):
            out.add(_holder(n.func.value))
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
    return set(analysis.Names.of(list(nodes)).written())


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
