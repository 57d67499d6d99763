"""Dr.Jit 0.x recorded loops become plain `while` statements under @pbc.syntax.

    loop = dr.Loop('name', lambda: (rng, i, result))    @dr.syntax
    loop.set_max_iterations(16)                   ->    def f(...):
    while loop(i < n):                                      while dr.hint(i < n, max_iterations=16):
        ...                                                     ...

The Loop object's lines go (with its `put`, `init`, `set_max_iterations` and
`set_eval_stride` calls), `while loop(cond)` loses the call, and the enclosing function gets
@pbc.syntax. The state lambda is not needed: @pbc.syntax finds the state from the code. The
rewrite is refused where that could change what the program computes (see `_refusal`).
"""

import ast

from . import scope
from .source import Overlap

METHODS = ('put', 'init', 'set_max_iterations', 'set_eval_stride')


class Loops:
    def __init__(self, source, names, syntax):
        self.source, self.names, self.syntax = source, names, syntax
        self.removed = []           # the Loop(...) constructor names of rewritten loops

    def run(self):
        for node in ast.walk(self.source.tree):
            if self._creates_loop(node):
                self._loop(node)

    def _creates_loop(self, node):
        return isinstance(node, ast.Assign) and len(node.targets) == 1 and \
            isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Call) and \
            self.names.resolve(node.value.func) in ('pbc.Loop', 'pbc.llvm.Loop')

    def _loop(self, assign):
        src = self.source
        name = assign.targets[0].id
        parts = _parts(assign, name, self._creates_loop)
        reason = parts if isinstance(parts, str) else self._refusal(assign, name, *parts)
        if reason:
            src.report(assign, f'Loop {name!r} left as is: {reason}')
            return
        fn, loop, setup, state = parts
        saved = list(src.edits)
        try:
            for stmt in [assign] + [call.parent for _, call in setup]:
                src.replace(*src.lines(stmt), '')
            test = loop.test
            (a, b), (c, d) = src.span(test), src.span(test.args[0])
            limits = [call.args[0] for kind, call in setup if kind == 'set_max_iterations']
            hints = [f'max_iterations={src.text(limits[-1])}'] if limits else []
            include = scope.hidden_state(
                state, scope.passed(loop.body + [loop.test], self.names.is_pbc),
                scope.writes(loop.body))
            hints += [f'include=[{", ".join(include)}]'] if include else []
            if hints:
                src.replace(a, c, f'{self.syntax(fn)}.hint(')
                src.replace(d, b, f', {", ".join(hints)})')
            else:
                src.replace(a, c, '')
                src.replace(d, b, '')
                self.syntax(fn)
        except Overlap as e:
            src.edits = saved
            src.report(assign, f'Loop {name!r} left as is: {e}')
            return
        self.removed.append(assign.value.func)

    def _refusal(self, assign, name, fn, loop, setup, state):
        """Why rewriting this loop could change the program, or None."""
        src = self.source
        for stmt in [assign] + [call.parent for _, call in setup]:
            if not src.alone_on_lines(stmt):
                return f'line {stmt.lineno} holds other code too'
        if isinstance(fn, ast.AsyncFunctionDef):
            return '@pbc.syntax does not take async functions'
        declared = scope.declared(fn)
        blocked = scope.not_movable(loop.body + loop.orelse, declared)
        if blocked:
            return f'@pbc.syntax would keep it as a Python loop: {blocked}'
        if any(isinstance(n, ast.NamedExpr) for n in ast.walk(loop.test)):
            return "its condition contains ':=', which keeps @pbc.syntax from compiling it"
        if declared & set(state):
            return f'state variable {sorted(declared & set(state))[0]!r} is global or nonlocal'
        outside = {n.id for n in scope.names(fn) if not scope.inside(n, loop)}
        for var in sorted(scope.bound(loop.body) - set(state) - {name}):
            if var in outside:
                return (f'the body assigns {var!r}, which is not in its state but is used '
                        'outside the loop: @pbc.syntax would make it loop state')
        read = {n.id for n in scope.names(loop) if isinstance(n.ctx, ast.Load)}
        for var in state:
            shared = (scope.holders(fn, var) - set(self.names.bound)) & read
            if shared:
                return (f'state variable {var!r} may be the same object as {min(shared)!r}, '
                        'which the loop reads: Loop changed both, @pbc.syntax changes only '
                        f'{var!r}')
        return None


def _parts(assign, name, creates_loop):
    """(function, while statement, [(method, call)], state names) of a Loop, or why it
    cannot be rewritten. A function may create several loops under one name, one after the
    other: each owns the uses up to the next."""
    fn = scope.owner(assign)
    if fn is None:
        return '@pbc.syntax rewrites functions, and this Loop is not inside one'
    uses = [n for n in scope.names(fn) if n.id == name]
    rebound = [n for n in uses if isinstance(n.ctx, ast.Store) and n is not assign.targets[0]]
    for n in rebound:
        if not creates_loop(n.parent) or scope.owner(n) is not fn:
            return f'{name!r} is assigned something else too (line {n.lineno})'
    end = min([n.lineno for n in rebound if n.lineno > assign.lineno], default=float('inf'))
    loops, setup = [], []
    for use in uses:
        if use in rebound or use is assign.targets[0] or \
                not assign.lineno <= use.lineno < end:
            continue
        p = use.parent
        if isinstance(p, ast.Call) and p.func is use and isinstance(p.parent, ast.While) \
                and p.parent.test is p and len(p.args) == 1 and not p.keywords and \
                not isinstance(p.args[0], ast.Starred):
            loops.append(p.parent)
        elif isinstance(p, ast.Attribute) and p.attr in METHODS and \
                isinstance(p.parent, ast.Call) and p.parent.func is p and \
                isinstance(p.parent.parent, ast.Expr) and scope.owner(p) is fn:
            setup.append((p.attr, p.parent))
        else:
            return (f'{name!r} is used other than in `while {name}(...)` and its '
                    f'{"/".join(METHODS)} calls (line {use.lineno})')
    if len(loops) != 1:
        return f'{name!r} drives {len(loops)} while statements, not one'
    loop = loops[0]
    if scope.owner(loop) is not fn or loop.lineno < assign.lineno or \
            any(call.lineno > loop.lineno or call.lineno < assign.lineno for _, call in setup):
        return f'{name!r} is set up after its loop starts, or in another function'
    lambdas = [_state_arg(assign.value)] + [c.args[0] if c.args else None
                                            for kind, c in setup if kind == 'put']
    state = []
    for lam in lambdas:
        if lam is None:
            continue
        names = _state_names(lam)
        if isinstance(names, str):
            return names
        state += names
    return fn, loop, setup, state


def _state_arg(call):
    for k in call.keywords:
        if k.arg == 'state':
            return k.value
    return call.args[1] if len(call.args) > 1 else None


def _state_names(lam):
    """The variables a state lambda lists, or why they are not plain variables."""
    if not isinstance(lam, ast.Lambda) or lam.args.args or lam.args.vararg or \
            lam.args.kwonlyargs or lam.args.kwarg or lam.args.posonlyargs:
        return 'its state is not given as lambda: (var, ...)'
    body = lam.body
    items = body.elts if isinstance(body, (ast.Tuple, ast.List)) else [body]
    out = []
    for item in items:
        if isinstance(item, ast.Name):
            out.append(item.id)
        elif any(isinstance(n, ast.Call) for n in ast.walk(item)):
            return (f'its state lambda calls a function ({ast.unparse(item)}), which may have '
                    'side effects')
        else:
            return (f'its state lists {ast.unparse(item)}, not a local variable: @pbc.syntax '
                    'finds state among local variables')
    return out
