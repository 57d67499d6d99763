"""Dr.Jit 1.x's functional forms become plain statements under @pbc.syntax.

    x, i = dr.while_loop((x, i),                        while i < n:
                         lambda x, i: i < n,      ->        x, i = x * 2, i + 1
                         lambda x, i: (x * 2, i + 1))

    y = dr.if_stmt((x,), x > 0,                         if x > 0:
                   lambda x: dr.sqrt(x),          ->        y = dr.sqrt(x)
                   lambda x: -x)                        else:
                                                            y = -x

A function argument may be a lambda, or a function defined just for it in the same block
(used nowhere else): its statements are inlined, its final `return` becomes the assignment.
Lambda parameters named otherwise than the state are renamed. The rewrite is refused where
that could change the meaning of a name (see `_Function`).
"""

import ast

from . import scope
from .source import Overlap

# Keywords of while_loop / if_stmt that become pbc.hint(...) arguments; labels are names
# of state variables or results, which the statements' own names replace.
HINT = {'label', 'mode', 'max_iterations', 'compress', 'strict'}
DROP = {'labels', 'arg_labels', 'rv_labels'}


class Refused(Exception):
    pass


class Functional:
    def __init__(self, source, names, syntax, inlined):
        self.source, self.names, self.syntax = source, names, syntax
        self.inlined = inlined          # local function -> the function it was inlined into

    def run(self):
        calls = [n for n in ast.walk(self.source.tree) if isinstance(n, ast.Call) and
                 self.names.resolve(n.func) in ('pbc.while_loop', 'pbc.if_stmt')]
        # Inner first: a statement inside a function that an outer one inlines is then
        # already rewritten in the text the outer one takes.
        for call in sorted(calls, key=lambda c: -_depth(c)):
            kind = self.names.resolve(call.func)[4:]
            saved = list(self.source.edits)
            try:
                self._rewrite(kind, call)
            except (Refused, Overlap) as e:
                self.source.edits = saved
                self.source.report(call, f'{kind}(...) left as is: {e}')

    def _rewrite(self, kind, call):
        stmt = call.parent
        if not (isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1):
            raise Refused('its result is not assigned to variables')
        fn = scope.owner(stmt)
        if fn is None or isinstance(fn, ast.AsyncFunctionDef):
            raise Refused('@pbc.syntax rewrites (non-async) functions, and this is not in one')
        if not self.source.alone_on_lines(stmt):
            raise Refused(f'line {stmt.lineno} holds other code too')
        names = ('state', 'cond', 'body') if kind == 'while_loop' else \
            ('args', 'cond', 'true_fn', 'false_fn')
        args, hints = _arguments(call, names)
        variables = _variables(args[names[0]], 'state' if kind == 'while_loop' else 'args')
        targets = _variables(stmt.targets[0], 'assignment target', single=kind == 'if_stmt')
        indent = self.source.indent(stmt.lineno)
        inner = indent + ('\t' if indent.startswith('\t') else '    ')     # the file's style
        hint = [f'{k}={self.source.text(v)}' for k, v in hints.items()]
        if kind == 'while_loop':
            if targets != variables:
                raise Refused('its result is assigned to other variables than its state')
            cond = _Function(self, args['cond'], variables, fn, stmt, expression=True)
            body = _Function(self, args['body'], variables, fn, stmt)
            test = cond.expression()
            code = [body.statements(targets, inner)]
            parts = [cond, body]
        else:
            true = _Function(self, args['true_fn'], variables, fn, stmt)
            false = _Function(self, args['false_fn'], variables, fn, stmt)
            test = self.source.text(args['cond'])
            code = [true.statements(targets, inner), false.statements(targets, inner)]
            parts = [true, false]
        include = scope.hidden_state(
            variables, set().union(*(p.passed(self.names.is_pbc) for p in parts)),
            set().union(*(p.written for p in parts)))
        hint += [f'include=[{", ".join(include)}]'] if include else []
        test = f'{self.syntax(fn)}.hint({test}, {", ".join(hint)})' if hint else test
        keyword = 'while' if kind == 'while_loop' else 'if'
        lines = [f'{indent}{keyword} {test}:'] + code[0]
        if len(code) > 1 and code[1] != [inner + 'pass']:
            lines += [indent + 'else:'] + code[1]
        for p in parts:
            if p.definition is not None:
                start, end = self.source.lines(p.definition)
                self.source.replace(start, self.source.skip_blank_lines(end), '')
                self.inlined[p.definition] = fn
        start, end = self.source.lines(stmt)
        nl = self.source.newline
        self.source.replace(start, end, nl.join(lines) + nl)
        self.syntax(fn)


def _depth(node):
    depth = 0
    while node is not None:
        node, depth = getattr(node, 'parent', None), depth + 1
    return depth


def _arguments(call, names):
    if any(isinstance(a, ast.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords):
        raise Refused('it passes *args or **kwargs')
    args = dict(zip(names, call.args))
    hints = {}
    for k in call.keywords:
        if k.arg in names:
            args[k.arg] = k.value
        elif k.arg in HINT:
            hints[k.arg] = k.value
        elif k.arg not in DROP:
            raise Refused(f'it passes {k.arg}=, which has no statement form')
    if len(call.args) > len(names) or set(args) != set(names):
        raise Refused('it does not pass exactly the arguments ' + ', '.join(names))
    return args, hints


def _variables(node, what, single=False):
    """The names of a tuple of plain variables (or one variable, where `single`)."""
    if single and isinstance(node, ast.Name):
        return node.id
    if not isinstance(node, (ast.Tuple, ast.List)) or \
            not all(isinstance(e, ast.Name) for e in node.elts):
        raise Refused(f'its {what} is not a tuple of plain variables')
    out = [e.id for e in node.elts]
    if len(set(out)) != len(out):
        raise Refused(f'its {what} names a variable twice')
    return out


class _Function:
    """A lambda or a local function passed to while_loop / if_stmt, as the code it runs on
    the statement's variables."""

    def __init__(self, owner, node, variables, fn, stmt, expression=False):
        self.source, self.owner = owner.source, owner
        self.variables, self.definition = variables, None
        self.written = set()        # the variables its statement form assigns or changes
        if isinstance(node, ast.Name):
            node = self._definition(node, fn, stmt)
        if not isinstance(node, (ast.Lambda, ast.FunctionDef)):
            raise Refused(f'{ast.unparse(node)} is not a lambda or a local function')
        a = node.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs or \
                len(a.args) != len(variables):
            raise Refused(f'the function at line {node.lineno} does not take exactly the '
                          f'{len(variables)} variables as plain parameters')
        self.node, self.params = node, [p.arg for p in a.args]
        inner = [n for n in ast.walk(node) if n is not node and isinstance(n, scope.NESTED)]
        if isinstance(node, ast.Lambda):
            if any(isinstance(n, ast.NamedExpr) for n in ast.walk(node.body)):
                raise Refused("a lambda contains ':='")
            free = {n.id for n in scope.names(node.body)} - set(self.params)
            if free & set(variables):
                raise Refused(f'the lambda at line {node.lineno} reads '
                              f'{min(free & set(variables))!r} from outside, which the '
                              'statement form would confuse with its variable')
            rebinds = {a.arg for n in inner if isinstance(n, ast.Lambda) for a in n.args.args}
            if rebinds & set(self.params) and self.params != variables:
                raise Refused('a nested lambda reuses a parameter name')
        else:
            if self.params != variables:
                raise Refused(f'the parameters of {node.name!r} are not named as the variables')
            if expression:
                if len(node.body) != 1 or not isinstance(node.body[0], ast.Return) or \
                        node.body[0].value is None:
                    raise Refused(f'{node.name!r} is not a single return statement')
            elif not isinstance(node.body[-1], ast.Return) or node.body[-1].value is None:
                raise Refused(f'{node.name!r} does not end in a return statement')
            else:
                blocked = scope.not_movable(node.body[:-1], scope.declared(fn))
                if blocked:
                    raise Refused(f'{node.name!r} cannot be inlined into a statement that '
                                  f'@pbc.syntax compiles: {blocked}')

    def _definition(self, name, fn, stmt):
        """The function definition `name` refers to: defined in the same block as `stmt`,
        before it, and used nowhere else; its local names unused elsewhere in `fn`."""
        block = next((b for b in (getattr(stmt.parent, f, None) for f in
                                  ('body', 'orelse', 'finalbody'))
                      if isinstance(b, list) and stmt in b), [])
        defs = [s for s in block if isinstance(s, ast.FunctionDef) and s.name == name.id
                and s.lineno < stmt.lineno]
        if stmt not in block or not defs:
            raise Refused(f'{name.id!r} is not a function defined before it in the same block')
        d = defs[-1]
        uses = [n for n in scope.names(fn) if n.id == name.id]
        if len(uses) != 1 or d.decorator_list or \
                sum(isinstance(s, ast.FunctionDef) and s.name == name.id
                    for s in ast.walk(fn)) != 1:
            raise Refused(f'{name.id!r} is used or defined more than once, or decorated')
        local = scope.bound(d.body) - set(p.arg for p in d.args.args)
        elsewhere = {n.id for n in scope.names(fn) if not scope.inside(n, d)} | \
            scope.bound([s for s in block if s is not d])
        if local & elsewhere:
            raise Refused(f'inlining {name.id!r} would mix its variable '
                          f'{min(local & elsewhere)!r} with the one outside')
        if not self.source.alone_on_lines(d) or d.body[0].lineno == d.lineno:
            raise Refused(f'the lines of {name.id!r} hold other code too')
        if any(isinstance(n, ast.Constant) and isinstance(n.value, str) and
               n.lineno != n.end_lineno for n in ast.walk(d)):
            raise Refused(f'{name.id!r} holds a string of several lines, which indenting '
                          'would change')
        self.definition = d
        return d

    # ---- the code -----------------------------------------------------------------------
    def _expr(self, node):
        """Source of an expression of the lambda, its parameters renamed to the variables."""
        renames = {p: v for p, v in zip(self.params, self.variables) if p != v}
        if renames:
            for n in scope.names(node):
                if n.id in renames and isinstance(n.ctx, ast.Load):
                    self.source.replace_node(n, renames[n.id])
        return self.source.text(node)

    def passed(self, pure):
        """The variables the function hands bare to calls (see scope.hidden_state)."""
        renames = dict(zip(self.params, self.variables))
        return {renames.get(n, n) for n in scope.passed([self.node], pure)}

    def expression(self):
        node = self.node.body if isinstance(self.node, ast.Lambda) else self.node.body[0].value
        return self._expr(node)

    def statements(self, targets, indent):
        """Lines of the function's code at `indent`, ending in `targets = <its result>`."""
        lines = []
        if isinstance(self.node, ast.FunctionDef):
            body, result = self.node.body[:-1], self.node.body[-1].value
            if body:
                start = self.source.lines(body[0])[0]
                end = self.source.lines(self.node.body[-1])[0]
                lines = _reindent(self.source.render(start, end),
                                  self.source.indent(body[0].lineno), indent)
        else:
            result = self.node.body
        assigned, code = _assign(targets, result, self._expr, indent)
        self.written = assigned | (scope.writes(body) if isinstance(self.node, ast.FunctionDef)
                                   else set())
        return lines if lines and code == [indent + 'pass'] else lines + code


def _assign(targets, value, text, indent):
    """`targets = value` as lines, leaving out parts that assign a variable to itself:
    (the variables assigned, the lines)."""
    if isinstance(targets, str):
        targets, values = [targets], [value]
    elif isinstance(value, ast.Tuple) and len(value.elts) == len(targets) and \
            not any(isinstance(e, ast.Starred) for e in value.elts):
        values = value.elts
    else:
        comma = ',' if len(targets) == 1 else ''
        return set(targets), [f'{indent}{", ".join(targets)}{comma} = {text(value)}']
    pairs = [(t, text(v)) for t, v in zip(targets, values)]
    pairs = [(t, v) for t, v in pairs if t != v]
    if not pairs:
        return set(), [indent + 'pass']
    return {t for t, _ in pairs}, [f'{indent}{", ".join(t for t, _ in pairs)} = '
                                   f'{", ".join(v for _, v in pairs)}']


def _reindent(text, old, new):
    out = []
    for line in text.splitlines():     # (line breaks are the caller's)
        if line.strip() and not line.startswith(old):
            raise Refused('a line of the inlined function is indented less than its body')
        out.append(new + line[len(old):] if line.strip() else '')
    return out
