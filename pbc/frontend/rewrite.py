"""Second pass: planned `while`/`if` statements become calls of the control-flow primitives,
and conditional expressions become calls that choose at run time.

    while c: body          def _pbc_cond_N(<state>): return c
                           def _pbc_body_N(<state>): body; return (<state>,)
                           (<state>,) = __pbc_ctl__.while_loop((<state>,), _pbc_cond_N,
                                                               _pbc_body_N, labels=...)

    if c: a  else: b       def _pbc_true_N(<args>): a; return (<outputs>,)
                           def _pbc_false_N(<args>): b; return (<outputs>,)
                           (<outputs>,) = __pbc_ctl__.if_stmt((<args>,), c, ...)

Loop state: the variables the body writes (or modifies through an attribute, item or
method call) that are live where the loop tests its condition: read by the condition, by
a later iteration before being written, or after the loop. Branch outputs: variables a
branch writes that are live after the `if`; branch arguments: the written ones that a
branch may read before writing them (or must return unchanged). Everything else the body
reads is an ordinary closure read.
"""

import ast

from .analysis import SCOPES, Cells, Names, bound_places, header, is_compound
from .hints import CTL, ctl
from .lowering import located


def _name(v, ctx=ast.Load):
    return ast.Name(v, ctx())


def _tuple(names, ctx=ast.Load):
    return ast.Tuple([_name(v, ctx) for v in names], ctx())


def _def(name, params, body, at):
    body = [b for b in body if not isinstance(b, ast.Pass)] or body
    args = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    fields = dict(name=name, args=args, body=body, decorator_list=[], returns=None)
    if 'type_params' in ast.FunctionDef._fields:
        fields['type_params'] = []
    return located(ast.FunctionDef(**fields), at)


class IfExps(ast.NodeTransformer):
    """`a if c else b` -> __pbc_ctl__.ifexp(c, lambda: a, lambda: b), except where moving
    `a` and `b` into lambdas would change them (':=', yield, await)."""

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if any(isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await))
               for part in (node.body, node.orelse) for n in ast.walk(part)):
            why = ast.Constant(f"its branches assign variables or contain 'yield'/'await' "
                               f'(line {node.lineno})')
            node.test = ctl('python_cond', node.test, why, node=node.test)
            return node
        lams = [located(ast.Lambda(ast.arguments(posonlyargs=[], args=[], vararg=None,
                                                 kwonlyargs=[], kw_defaults=[], kwarg=None,
                                                 defaults=[]), part), part)
                for part in (node.body, node.orelse)]
        return ctl('ifexp', node.test, *lams, node=node)

    def _skip(self, node):
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _skip


class Rewriter:
    def __init__(self, fn, live, assigned, local, order, where, declared=(), cells=None):
        self.fn, self.live, self.assigned = fn, live, assigned
        self.local, self.order, self.where = local, order, where
        self.declared = set(declared)    # the function's global/nonlocal names
        self.scopes = []            # parameters of each function being rewritten
        # (what the functions nested in it do with its variables: analysis.cells)
        self.cells = cells or Cells(set(), {}, {}, {}, {}, {})

    def function(self):
        self.fn.body = self.scoped([a.arg for a in _params(self.fn)], self.fn.body)

    def scoped(self, params, stmts):
        """Rewrites the statements of one (generated or the user's) function."""
        self.scopes.append(set(params))
        body = self.block(stmts)
        self.scopes.pop()
        return body

    def guard(self, names, stmt):
        """Statements that give each of `names` that may be unassigned before `stmt` a
        placeholder (a loop or branch takes all its variables as values), and those that
        unassign the ones still holding it afterwards, as plain Python would have left them.
        """
        unsure = [v for v in names if v not in self.scopes[-1]
                  and v not in self.assigned.defined.get(id(stmt), ())]
        before = [located(ast.Try([located(ast.Expr(_name(v)), stmt)], [located(
            ast.ExceptHandler(_name('NameError'), None, [located(ast.Assign(
                [_name(v, ast.Store)], ctl('Undefined', ast.Constant(v))), stmt)]), stmt)],
            [], []), stmt) for v in unsure]
        after = [] if len(self.scopes) > 1 else [
            located(ast.If(ctl('is_undefined', _name(v)), [located(ast.Delete(
                [_name(v, ast.Del)]), stmt)], []), stmt) for v in unsure]
        return before, after

    def sort(self, names):
        return sorted(set(names), key=lambda v: self.order.get(v, (3, v)))

    def written(self, *blocks):
        out = {}
        for b in blocks:
            names = Names.of(b)
            out.update(names.written())
            # (and what the nested functions it calls or passes on write of its variables)
            for f in names.reads:
                out.update(dict.fromkeys(sorted(self.cells.effects.get(f, ()))))
            # a loop or branch inside assigns what its pbc.hint(include=[...]) adds
            for node in (n for s in b for n in ast.walk(s)):
                plan = getattr(node, '_pbc', None)
                if plan:
                    out.update(dict.fromkeys(self.included(plan['hint'])))
        return [v for v in out if v in self.local]

    def block(self, stmts):
        out = []
        for s in stmts:
            plan = getattr(s, '_pbc', None)
            if plan and plan['kind'] == 'while':
                out += self.while_(s, plan)
            elif plan and plan['kind'] == 'if':
                out += self.if_(s, plan)
            else:
                out.append(self.plain(s))
        return out

    def plain(self, s):
        if isinstance(s, SCOPES):
            return s
        if not is_compound(s):
            return IfExps().visit(s)
        for e in header(s):
            new = IfExps().visit(e)
            for field in ('test', 'iter', 'subject'):
                if getattr(s, field, None) is e:
                    setattr(s, field, new)
        for i in getattr(s, 'items', []):
            i.context_expr = IfExps().visit(i.context_expr)
        for field in ('body', 'orelse', 'finalbody'):
            if isinstance(getattr(s, field, None), list):
                setattr(s, field, self.block(getattr(s, field)))
        for h in getattr(s, 'handlers', []) + getattr(s, 'cases', []):
            h.body = self.block(h.body)
        return s

    def generated(self, name, params, body, at):
        """A generated function (a loop's condition or body, a branch) of `params`. Those
        that are cells of the user's function (nested functions read or bind them) are the
        cells while it runs, holding its values, so that a nested function it calls sees
        them and what it binds (`nonlocal x`) is the function's; afterwards the cells hold
        what they held before (the user's function assigns the results)."""
        cells = [p for p in params if p in self.cells.captured]
        if not cells:
            return _def(name, params, body, at)
        held = [f'_pbc_cell_{p}' for p in cells]
        params = [f'_pbc_cell_{p}' if p in self.cells.captured else p for p in params]
        saved = '_pbc_cells_before'
        prologue = [located(ast.Nonlocal(cells), at),
                    located(ast.Assign([_name(saved, ast.Store)], _tuple(cells)), at),
                    located(ast.Assign([_tuple(cells, ast.Store)], _tuple(held)), at)]
        restore = located(ast.Assign([_tuple(cells, ast.Store)], _name(saved)), at)
        return _def(name, params, prologue + [located(ast.Try(body, [], [], [restore]), at)],
                    at)

    def included(self, hint):
        """The names pbc.hint(include=[...]) adds to the state: the function's local and
        global/nonlocal variables. A variable it only reads from an enclosing scope cannot be
        rebound by the statement, so its value is the same on every lane and iteration: it
        is read where it is, as any other such variable."""
        return [v for v in hint.include if v in self.local or v in self.declared]

    def reads(self, stmt, taken, *parts):
        """The function's variables that `parts` (a loop's or branch's code) only read, and
        that are certainly assigned before `stmt`: the loop or branch gets them as
        parameters too, so that one bound to the same object as a state variable (`y = x`
        before it, `y` read where `x += 1` changes it) is given that variable's working
        copy, as Python would show the change through every name."""
        found = dict(Names.of(*parts).reads)
        # (and what the nested functions it calls read of the function's variables: they
        # see them through their cells, which hold what the loop or branch shows them)
        for f in list(found):
            found.update(dict.fromkeys(sorted(self.cells.reads.get(f, ()))))
        defined = self.scopes[-1] | self.assigned.defined.get(id(stmt), set())
        # (the functions nested in the user's are read where they are: the derivatives of
        # a loop that calls one see what it reads as it was, through its closure cells,
        # pbc/ad/local.py Closures)
        return [v for v in found if v in self.local and v not in taken and v in defined
                and not v.startswith('_pbc_') and v not in self.cells.functions]

    def call(self, fn, state, targets, at, hint, labels, names, reads=(), rebinds=()):
        """The call of the runtime's `fn` for a loop or branch; `names`: Names.of its code
        as the user wrote it (the rewriting of the statements nested in it adds
        assignments and calls of its own)."""
        kw = [ast.keyword('labels', ast.Tuple([ast.Constant(v) for v in labels], ast.Load()))]
        if reads:
            kw.append(ast.keyword('reads', _tuple(reads)))
            # (the variables it only reads that it passes to a call, by position in reads:
            # the function called may store into a container among them)
            passes = set(names.passes).union(
                *[self.cells.passes.get(f, ()) for f in names.reads])
            whole = {n for n, w in names.passes.items() if w}.union(
                *[self.cells.whole.get(f, ()) for f in names.reads])
            passed = [ast.Tuple([ast.Constant(i), ast.Constant(v), ast.Constant(v in whole)],
                                ast.Load())
                      for i, v in enumerate(reads) if v in passes]
            if passed:
                kw.append(ast.keyword('passed', ast.Tuple(passed, ast.Load())))
        if rebinds:
            kw.append(ast.keyword('rebinds', ast.Tuple([ast.Constant(v) for v in rebinds],
                                                       ast.Load())))
        call = located(ast.Call(ctl(fn).func, state, kw + hint.keywords), at)
        if not targets:
            return located(ast.Expr(call), at)
        return located(ast.Assign([_tuple(targets, ast.Store)], call), at)

    def while_(self, s, plan):
        n, hint, brk = plan['n'], plan['hint'], plan['brk']
        head = self.live.head[id(s)]
        state = [v for v in self.written(s.body) if v in head] + self.included(hint)
        state = self.sort(v for v in state + ([brk] if brk else []) if v not in hint.exclude)
        before, after = self.guard(state, s)
        reads = self.reads(s, state, s.test, s.body)
        params = state + reads
        # (of the code as written: rewriting the loops and branches nested in plain
        # statements changes them in place, `y, c = while_loop(...)` binding y)
        names, rebinds = Names.of(s.test, *s.body), _rebinds(s.body, state,
                                                             self.cells.rebound)
        test = IfExps().visit(s.test)
        cond = self.generated(f'_pbc_cond_{n}', params, [located(ast.Return(test), s.test)], s)
        body = self.scoped(params, s.body) + [located(ast.Return(_tuple(state)), s)]
        body = self.generated(f'_pbc_body_{n}', params, body, s)
        args = [_tuple(state), _name(cond.name), _name(body.name)]
        return before + [cond, body, self.call('while_loop', args, state, s, hint, state,
                                               names, reads, rebinds)] + \
            [a for a in after if a.test.args[0].id in state]

    def if_(self, s, plan):
        n, hint = plan['n'], plan['hint']
        include = self.included(hint)
        written = self.written(s.body, s.orelse)
        after = self.live.live_out[id(s)]
        outputs = [v for v in written if v in after] + include
        outputs = self.sort(v for v in outputs if v not in hint.exclude)
        entry = self.live.block_in(s.body, s) | self.live.block_in(s.orelse, s)
        args = self.sort([v for v in written if v in entry] + include)
        before, after = self.guard(args, s)
        reads = self.reads(s, args, s.body, s.orelse)
        params = args + reads
        names = Names.of(*s.body, *s.orelse)       # (of the code as written: see while_)
        true, false = (self.generated(f'_pbc_{kind}_{n}', params, self.scoped(params, block)
                            + [located(ast.Return(_tuple(outputs)), s)], s)
                       for kind, block in (('true', s.body), ('false', s.orelse)))
        test = IfExps().visit(s.test)
        call_args = [_tuple(args), test, _name(true.name), _name(false.name)]
        return before + [true, false, self.call('if_stmt', call_args, outputs, s, hint,
                                                outputs, names, reads)] + \
            [a for a in after if a.test.args[0].id in outputs]


def _rebinds(body, state, rebound=None):
    """The state variables that `body` binds to another object (`x = ...`, not `x op=`),
    and their entries and fields it binds (`x[0] = ...`: 'x[0]', `x.a = ...`: 'x.a', any
    other: 'x[]'), also through the nested functions it calls (`rebound`: what each binds
    of its enclosing variables): across a loop's iterations their working copies hold the
    variable's (or entry's) value, not that of the object they had before the loop."""
    out = dict.fromkeys(bound_places(body))
    for f in Names.of(body).reads:
        out.update(dict.fromkeys((rebound or {}).get(f, ())))
    return [v for v in out if v.split('[')[0].split('.')[0] in state]


def _params(fn):
    a = fn.args
    return a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]


__all__ = ['Rewriter', 'IfExps', 'CTL']
