"""First pass: plain-Python rewrites that prepare a function for the symbolic forms.

- `return` inside `if` statements, and `break`/`continue` inside a `while` body, become
  assignments (`_pbc_retval = v`, `_pbc_brk_N = True`), and the statements that follow
  them move into the other branch ("continuation passing"). The result is still ordinary
  Python with the same behaviour, but every path now ends at the end of its block, which
  is what a traced branch or loop body needs. Only `break` needs a flag; it is loop state
  that ends the loop for the lanes that took it.
- `for i in range(...)` becomes a run-time choice between the plain Python loop (all
  arguments are Python ints) and a `while` loop over a JIT counter.
- Each `while`/`if` that can become a symbolic loop or branch gets a plan (`node._pbc`)
  for the rewriter. One that cannot (its body contains `return`, `yield`, `del x`, ...)
  stays plain Python; its condition is wrapped in a check that raises a clear error if it
  is ever a JIT value. With an explicit `pbc.hint(mode='symbolic'|'evaluated')` that is
  an error right away (but in the plain Python copy of a `for` over a range, which runs
  only where the bounds are Python ints: an error then).
"""

import ast
import copy

from . import hints
from .analysis import SCOPES, blocks
from .errors import Located

LOOPS = (ast.While, ast.For, ast.AsyncFor)
JUMPS = (ast.Break, ast.Continue)
RETVAL = '_pbc_retval'
BREAK = '_pbc_brk_'


def located(new, old):
    """`new` placed on the first line of `old` (all of it: Python 3.11 reports a call of
    a method at the line where the method's name ends)."""
    end = old.end_col_offset if old.end_lineno == old.lineno else old.col_offset + 1
    for part in (getattr(old, f, None) for f in ('test', 'iter', 'target', 'value')):
        if isinstance(part, ast.AST) and part.end_lineno == old.lineno:
            end = max(end, part.end_col_offset)
    new.lineno, new.col_offset = old.lineno, old.col_offset
    new.end_lineno, new.end_col_offset = old.lineno, end
    return ast.fix_missing_locations(new)


def assign(name, value, at):
    return located(ast.Assign([ast.Name(name, ast.Store())], value), at)


def jumps(stmts, kinds):
    """The jump statements of `kinds` in `stmts` that leave it; a break/continue inside
    a nested loop's body belongs to that loop (its `else` block does not)."""
    out = []
    for s in stmts:
        if isinstance(s, kinds):
            out.append(s)
        elif isinstance(s, SCOPES):
            continue
        elif isinstance(s, LOOPS) and ast.Return not in kinds:
            out += jumps(s.orelse, kinds)
        else:
            for b in blocks(s):
                out += jumps(b, kinds)
    return out


def if_only(stmts, kinds):
    """Whether every such jump is reached through `if` statements only."""
    for s in stmts:
        if isinstance(s, ast.If):
            if not (if_only(s.body, kinds) and if_only(s.orelse, kinds)):
                return False
        elif not isinstance(s, kinds) and jumps([s], kinds):
            return False
    return True


def cps(stmts, tail, kinds, handle):
    """`stmts` followed by `tail`, where each jump of `kinds` is replaced by handle(jump)
    and whatever would run after an `if` that contains a jump moves into its branches."""
    out = []
    for i, s in enumerate(stmts):
        if isinstance(s, kinds):
            return out + handle(s)
        if isinstance(s, ast.If) and jumps([s], kinds):
            rest = cps(stmts[i + 1:], tail, kinds, handle)
            s.body = cps(s.body, rest, kinds, handle) or [located(ast.Pass(), s)]
            s.orelse = cps(s.orelse, rest, kinds, handle)
            return out + [s]
        out.append(s)
    return out + copy.deepcopy(tail)


def walk(node, in_loop=False):
    """(node, inside a nested loop body) for the code of `node`, nested scopes skipped."""
    for field, value in ast.iter_fields(node):
        items = value if isinstance(value, list) else [value]
        for child in items:
            if not isinstance(child, ast.AST) or isinstance(child, SCOPES):
                continue
            inner = in_loop or (isinstance(node, LOOPS) and field == 'body')
            yield child, inner
            yield from walk(child, inner)


def problem(stmts, declared, jumps_ok):
    """(node, why) for the first construct that cannot move into a traced function."""
    holder = ast.Module(body=stmts, type_ignores=[])
    for node, in_loop in walk(holder):
        why = None
        if isinstance(node, ast.Return):
            why = "it contains 'return'"
        elif isinstance(node, JUMPS) and not in_loop and not jumps_ok:
            why = f"its '{type(node).__name__.lower()}' leaves it for a loop outside it"
        elif isinstance(node, (ast.Yield, ast.YieldFrom)):
            why = "it contains 'yield'"
        elif isinstance(node, (ast.Await, ast.AsyncFor, ast.AsyncWith)):
            why = "it contains 'await'/'async'"
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            why = f"it contains a '{type(node).__name__.lower()}' statement"
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) \
                and node.id in declared:
            why = f"it assigns the global/nonlocal variable '{node.id}'"
        elif isinstance(node, ast.Delete) and any(isinstance(t, ast.Name) for t in node.targets):
            why = "it deletes a variable ('del')"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == 'super' and not node.args:
            why = 'it calls super() without arguments'
        if why:
            return node, f'{why} (line {node.lineno})'
    return None


class Lowerer(Located):
    def __init__(self, filename, declared, range_is_builtin):
        super().__init__(filename)
        self.declared, self.range_is_builtin = declared, range_is_builtin
        self.count = 0
        self.loops = []             # enclosing loops that stay plain Python

    def fresh(self):
        self.count += 1
        return self.count

    # ---- function level ----------------------------------------------------------------
    def function(self, fn):
        self.returns(fn)
        fn.body = self.block(fn.body)

    def returns(self, fn):
        """Early returns inside `if` statements become `_pbc_retval = v`."""
        found = jumps(fn.body, (ast.Return,))
        if not any(not isinstance(s, ast.Return) and jumps([s], (ast.Return,))
                   for s in fn.body):
            return                      # only top-level returns: nothing to do
        # A generator's return is different; a global statement cannot be duplicated.
        odd = any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Global, ast.Nonlocal))
                  for n, _ in walk(ast.Module(body=fn.body, type_ignores=[])))
        if odd or not found or not if_only(fn.body, (ast.Return,)):
            return                      # ifs with a return then stay plain Python
        at = found[0]

        def handle(r):
            return [assign(RETVAL, r.value or ast.Constant(None), r)]

        fn.body = cps(fn.body, [assign(RETVAL, ast.Constant(None), at)], (ast.Return,),
                      handle) + [located(ast.Return(ast.Name(RETVAL, ast.Load())), at)]

    # ---- statements ----------------------------------------------------------------------
    def block(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, ast.While):
                out += self.while_(s)
            elif isinstance(s, ast.For):
                out += self.for_(s)
            elif isinstance(s, ast.If):
                out.append(self.if_(s))
            else:
                out.append(self.inner(s))
        return out

    def inner(self, s):
        """Lowers the blocks nested in a statement that itself stays as it is."""
        if isinstance(s, SCOPES):
            return s
        if isinstance(s, LOOPS):
            self.loops.append(s)
            s.body = self.block(s.body)
            self.loops.pop()
        for field in ('body', 'orelse', 'finalbody'):
            if isinstance(getattr(s, field, None), list) and not (field == 'body' and
                                                                  isinstance(s, LOOPS)):
                setattr(s, field, self.block(getattr(s, field)))
        for h in getattr(s, 'handlers', []):
            h.body = self.block(h.body)
        for c in getattr(s, 'cases', []):
            c.body = self.block(c.body)
        return s

    def plain(self, s, hint, found, kind, deferred=False):
        """Keeps `s` as Python; a JIT condition will raise an error that says why (with
        an explicit mode, right away, unless `deferred`: `s` is in the plain Python copy of
        a `for` loop over a range, which runs only where no bound is a JIT value)."""
        node, why = found
        if hint.explicit and not deferred:
            self.error(node, f"this {kind} has pbc.hint(mode={hint.mode!r}) but cannot be "
                       f'turned into a symbolic {kind}: {why}')
        reason = ast.Constant(why)
        if isinstance(s, ast.For):
            s.iter = hints.ctl('python_range', reason, *s.iter.args, node=s.iter)
        else:
            s.test = hints.ctl('python_cond', s.test, reason, node=s.test)
        return self.inner(s)

    def if_(self, s):
        s.test, hint = hints.parse(s.test, 'if', self)
        if hint.scalar:
            return self.inner(s)
        found = problem(s.body + s.orelse, self.declared, jumps_ok=False)
        in_range = False
        if found and isinstance(found[0], JUMPS) and self.loops:
            loop = self.loops[-1]
            why = f'{found[1]}, the Python loop at line {loop.lineno}'
            in_range = getattr(loop, '_pbc_range', False)
            if in_range:
                why += ('; with a JIT bound, e.g. range(pbc.llvm.UInt32(n)), that loop '
                        'becomes a JIT loop')
            found = found[0], why
        if found:
            return self.plain(s, hint, found, 'if statement', deferred=in_range)
        s._pbc = dict(kind='if', n=self.fresh(), hint=hint)
        return self.inner(s)

    def loop_problem(self, body, test=None):
        found = problem(body, self.declared, jumps_ok=True)
        if not found and not if_only(body, JUMPS):
            node = jumps(body, JUMPS)[0]
            found = node, ("it has a 'break' or 'continue' inside a 'try', 'with' or 'match' "
                           f'(line {node.lineno})')
        walrus = [n for n in ast.walk(test) if isinstance(n, ast.NamedExpr)] if test else []
        if not found and walrus:
            found = walrus[0], f"its condition assigns a variable (':=', line {test.lineno})"
        return found

    def while_(self, s, hint=None, n=None):
        if hint is None:
            s.test, hint = hints.parse(s.test, 'while', self)
        if hint.scalar:
            return [self.inner(s)]
        found = self.loop_problem(s.body, s.test)
        if found:
            return [self.plain(s, hint, found, 'loop')]
        n = n or self.fresh()
        brk = BREAK + str(n) if jumps(s.body, (ast.Break,)) else None

        def handle(j):
            return [assign(brk, ast.Constant(True), j)] if isinstance(j, ast.Break) else []

        body = cps(s.body, [], JUMPS, handle) if jumps(s.body, JUMPS) else s.body
        s.body = self.block(body or [located(ast.Pass(), s)])
        s._pbc = dict(kind='while', n=n, hint=hint, brk=brk)
        pre = [assign(brk, ast.Constant(False), s)] if brk else []
        post, s.orelse = s.orelse, []
        if post and brk:
            test = hints.ctl('lnot', ast.Name(brk, ast.Load()), node=post[0])
            post = [located(ast.If(test, post, []), post[0])]
        return pre + [s] + self.block(post)

    def for_(self, s):
        it, hint = s.iter, hints.Hint()
        if hints.is_hint_call(it):
            it, hint = hints.parse(it, 'while', self)
        if not (self.range_is_builtin and isinstance(s.target, ast.Name)
                and isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                and it.func.id == 'range' and 1 <= len(it.args) <= 3 and not it.keywords
                and not any(isinstance(a, ast.Starred) for a in it.args)):
            return [self.inner(s)]
        s.iter = it
        if hint.scalar:
            return [self.inner(s)]
        found = self.loop_problem(s.body)
        if not found and s.target.id in self.declared:
            found = s, f"its variable '{s.target.id}' is global/nonlocal (line {s.lineno})"
        if found:
            return [self.plain(s, hint, found, 'loop')]
        n = self.fresh()
        args, i, stop, step = (f'_pbc_{v}_{n}' for v in ('range', 'i', 'stop', 'step'))

        def name(v, ctx=ast.Load):
            return ast.Name(v, ctx())

        plain = located(ast.For(s.target, ast.Call(name('range'), [ast.Starred(name(args),
                                ast.Load())], []), copy.deepcopy(s.body),
                                copy.deepcopy(s.orelse)), s)
        plain._pbc_range = True
        setup = assign(args, ast.Tuple(it.args, ast.Load()), s)
        counter = located(ast.Assign([ast.Tuple([name(v, ast.Store) for v in (i, stop, step)],
                                                ast.Store())],
                                     hints.ctl('jit_range', name(args))), s)
        # (i = i + step, not i += step: that would change the object the loop variable
        # is bound to, in place)
        step_stmts = [assign(s.target.id, name(i), s),
                      assign(i, ast.BinOp(name(i), ast.Add(), name(step)), s)]
        loop = located(ast.While(hints.ctl('range_test', name(i), name(stop), name(step)),
                                 step_stmts + s.body, s.orelse), s)
        if any(k.arg == 'compress' for k in hint.keywords):
            # (a compressed loop's iterations see just their lanes of what is state: the
            # bound and step are, as the counter)
            hint.include += [stop, step]
        jit = [counter] + self.while_(loop, hint, n)
        choose = located(ast.If(hints.ctl('is_python_range', name(args)),
                                [self.inner(plain)], jit), s)
        return [setup, choose]
