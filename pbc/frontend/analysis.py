"""Which names a piece of one function's code reads and writes, which are live after each
statement (backward), and which are certainly assigned before it (forward).

Only the function's own scope counts: names that a comprehension binds are local to it, and
a nested function or class contributes the outer names it reads (as if called where it is
defined) and its own name. Writing `obj.attr = v`, `obj[i] = v`, `del obj[i]` or calling a
method `obj.m(...)` reads *and* modifies `obj`: such a name is written (it may be loop state)
but not rebound (its earlier value stays live)."""

import ast
import dataclasses

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def base_name(node):
    """`x` for x, x.a.b, x[i].a, x.m(...).a; None for other expressions."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return None


class Names(ast.NodeVisitor):
    """reads, binds (rebinds a name), mutates (modifies the object a name refers to),
    deletes and declared (global/nonlocal) names of the visited code, in order of first
    appearance (dicts used as ordered sets)."""

    def __init__(self):
        self.reads, self.binds, self.mutates, self.deletes, self.declared = {}, {}, {}, {}, {}
        # (names whose objects, or parts, are passed to a call -> whether an object is
        # passed whole, `f(x)`, not only parts of it, `f(x[0])`, `f(x.a)`)
        self.passes = {}

    @classmethod
    def of(cls, *nodes):
        v = cls()
        for n in nodes:
            if isinstance(n, list):
                for x in n:
                    v.visit(x)
            elif n is not None:
                v.visit(n)
        return v

    def written(self):
        return {**self.binds, **self.mutates}

    def visit_Name(self, node):
        target = {ast.Load: self.reads, ast.Store: self.binds, ast.Del: self.deletes}
        target[type(node.ctx)].setdefault(node.id, node)

    def _modified(self, node, ctx):
        if not isinstance(ctx, ast.Load):
            name = base_name(node.value)
            if name is not None:
                self.mutates.setdefault(name, node)
        self.generic_visit(node)

    def visit_Attribute(self, node):
        self._modified(node, node.ctx)

    def visit_Subscript(self, node):
        self._modified(node, node.ctx)

    def visit_Call(self, node):
        if isinstance(node.func, ast.Attribute):
            name = base_name(node.func.value)
            if name is not None:
                self.mutates.setdefault(name, node)
        # (the function called may store into a container it gets: `f(lst)`, `f(o.p)`)
        for arg in node.args + [k.value for k in node.keywords]:
            arg = arg.value if isinstance(arg, ast.Starred) else arg
            name = _reached(arg)
            if name is not None:
                self.passes[name] = self.passes.get(name, False) or isinstance(arg, ast.Name)
        self.generic_visit(node)

    def visit_Global(self, node):
        for n in node.names:
            self.declared.setdefault(n, node)

    visit_Nonlocal = visit_Global

    def visit_ExceptHandler(self, node):
        if node.name:
            self.binds.setdefault(node.name, node)
        self.generic_visit(node)

    def visit_alias(self, node):
        name = node.asname or node.name.split('.')[0]
        if name != '*':
            self.binds.setdefault(name, node)

    def _capture(self, node):
        name = getattr(node, 'name', None) or getattr(node, 'rest', None)
        if name:
            self.binds.setdefault(name, node)
        self.generic_visit(node)

    visit_MatchAs = visit_MatchStar = visit_MatchMapping = _capture

    def _scope(self, node):
        """A nested function, lambda or class: what runs now, plus its free reads."""
        args = node.args if not isinstance(node, ast.ClassDef) else None
        now = list(getattr(node, 'decorator_list', []))
        if isinstance(node, ast.ClassDef):
            now += node.bases + [k.value for k in node.keywords]
        else:
            now += args.defaults + [d for d in args.kw_defaults if d is not None]
            if not isinstance(node, ast.Lambda):
                now += [a.annotation for a in _all_args(args) if a.annotation]
                now += [node.returns] if node.returns else []
        for n in now:
            self.visit(n)
        inner = Names.of(node.body if isinstance(node.body, list) else [node.body])
        local = set(inner.binds)
        if args is not None:
            local |= {a.arg for a in _all_args(args)}
        local -= set(inner.declared)
        for n, where in inner.reads.items():
            if n not in local:
                self.reads.setdefault(n, where)
        for n, where in {**inner.binds, **inner.mutates}.items():
            if n not in local:         # modifies an outer object, or nonlocal/global
                self.mutates.setdefault(n, where)
        for n, whole in inner.passes.items():
            if n not in local:
                self.passes[n] = self.passes.get(n, False) or whole
        if not isinstance(node, ast.Lambda):
            self.binds.setdefault(node.name, node)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = _scope

    def _comprehension(self, node):
        inner = Names.of([g for g in node.generators],
                         *[getattr(node, f) for f in ('elt', 'key', 'value') if hasattr(node, f)])
        targets = set()
        for g in node.generators:
            targets |= set(Names.of(g.target).binds)
        for n, where in inner.reads.items():
            if n not in targets:
                self.reads.setdefault(n, where)
        for n, where in inner.binds.items():        # walrus binds in the enclosing scope
            if n not in targets:
                self.binds.setdefault(n, where)
        for n, where in inner.mutates.items():
            if n not in targets:
                self.mutates.setdefault(n, where)
        for n, whole in inner.passes.items():
            if n not in targets:
                self.passes[n] = self.passes.get(n, False) or whole

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension


def _reached(node):
    """`x` for x, x.a, x[i].b (an object reached from x without calling anything)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _all_args(args):
    out = args.posonlyargs + args.args + args.kwonlyargs
    return out + [a for a in (args.vararg, args.kwarg) if a is not None]


def param_names(fn):
    return [a.arg for a in _all_args(fn.args)]


def reads(*nodes):
    return set(Names.of(*nodes).reads)


def header(stmt):
    """The expressions a compound statement evaluates itself (not its blocks)."""
    if isinstance(stmt, (ast.If, ast.While)):
        return [stmt.test]
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.iter]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [i.context_expr for i in stmt.items]
    if isinstance(stmt, ast.Match):
        return [stmt.subject]
    return []


def blocks(stmt):
    """The statement lists nested directly in a compound statement."""
    out = [getattr(stmt, f) for f in ('body', 'orelse', 'finalbody') if hasattr(stmt, f)]
    out += [h.body for h in getattr(stmt, 'handlers', [])]
    out += [c.body for c in getattr(stmt, 'cases', [])]
    return [b for b in out if isinstance(b, list)]


def is_compound(stmt):
    return bool(blocks(stmt)) and not isinstance(stmt, SCOPES)


def killed(targets):
    """Names that an assignment to `targets` certainly rebinds."""
    out = set()
    for t in targets:
        if isinstance(t, ast.Name):
            out.add(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            out |= killed(t.elts)
        elif isinstance(t, ast.Starred):
            out |= killed([t.value])
    return out


def _included(s):
    """The names a loop's or branch's pbc.hint(include=[...]) makes its state: read where
    it starts (its runtime takes their values), whether or not its code reads them."""
    plan = getattr(s, '_pbc', None)
    return set(plan['hint'].include) if plan else set()


class Liveness:
    """live_in/live_out: id(stmt) -> names that may be read before being rebound;
    head: id(loop) -> names live where the loop tests its condition. `escape` names
    (read by nested functions, which may run later) are live at every exit. `nested`:
    per function nested in it, the names it reads or changes in place (Cells), read where
    a statement names the function (`h()`, after `s = e` and before `s = e2`: s is live
    between)."""

    def __init__(self, body, escape=(), nested=None):
        self.live_in, self.live_out, self.head = {}, {}, {}
        self.escape, self.nested = set(escape), nested or {}
        self.block(body, set(self.escape), set(), set())

    def reads(self, *nodes):
        names = reads(*nodes)
        return names.union(*(self.nested[f] for f in names if f in self.nested))

    def block(self, stmts, out, brk, cont):
        live = set(out)
        for s in reversed(stmts):
            self.live_out[id(s)] = live
            live = self.stmt(s, live, brk, cont)
            self.live_in[id(s)] = live
        return live

    def block_in(self, stmts, owner):
        """Live names at the start of `stmts` (a block of `owner`)."""
        return self.live_in[id(stmts[0])] if stmts else self.live_out[id(owner)]

    def _loop(self, node, out, body_entry):
        exit_ = self.block(node.orelse, out, set(), set())
        head = set()
        while True:
            new = body_entry(self.block(node.body, head, out, head)) | exit_
            if new == head:
                break
            head = new
        self.head[id(node)] = head
        return head

    def stmt(self, s, out, brk, cont):
        if isinstance(s, ast.If):
            return (self.reads(s.test) | _included(s) | self.block(s.body, out, brk, cont)
                    | self.block(s.orelse, out, brk, cont))
        if isinstance(s, ast.While):
            flag = getattr(s, '_pbc', {}).get('brk')       # read by the loop's runtime
            test = self.reads(s.test) | _included(s) | ({flag} if flag else set())
            return self._loop(s, out, lambda b: b | test)
        if isinstance(s, (ast.For, ast.AsyncFor)):
            kill, use = killed([s.target]), self.reads(s.target)
            return self.reads(s.iter) | self._loop(s, out, lambda b: (b - kill) | use)
        if isinstance(s, (ast.Try, getattr(ast, 'TryStar', ast.Try))):
            fin = self.block(s.finalbody, out, brk, cont)
            exc = set(fin)
            for h in s.handlers:
                h_in = self.block(h.body, fin, brk, cont) - ({h.name} if h.name else set())
                exc |= h_in | (self.reads(h.type) if h.type else set())
            after = self.block(s.orelse, fin, brk, cont)
            return self.block(s.body, after | exc, brk, cont) | exc
        if isinstance(s, (ast.With, ast.AsyncWith)):
            kill = killed([i.optional_vars for i in s.items if i.optional_vars])
            return self.reads(*header(s)) | (self.block(s.body, out, brk, cont) - kill) | \
                self.reads(*[i.optional_vars for i in s.items])
        if isinstance(s, ast.Match):
            live = self.reads(s.subject) | out
            for c in s.cases:
                live |= self.reads(c.pattern, c.guard) | (self.block(c.body, out, brk, cont)
                                                    - set(Names.of(c.pattern).binds))
            return live
        if isinstance(s, (ast.Return, ast.Raise)):
            return self.reads(s) | self.escape
        if isinstance(s, ast.Break):
            return set(brk)
        if isinstance(s, ast.Continue):
            return set(cont)
        if isinstance(s, ast.Assign):
            return (out - killed(s.targets)) | self.reads(s.value, *s.targets)
        if isinstance(s, ast.AnnAssign):
            if s.value is None:
                return set(out)
            return (out - killed([s.target])) | self.reads(s.value, s.target)
        if isinstance(s, ast.Delete):
            return (out - killed(s.targets)) | self.reads(*s.targets)
        if isinstance(s, ast.AugAssign):
            return out | self.reads(s.value, s.target) | killed([s.target])
        if isinstance(s, (ast.Import, ast.ImportFrom)):
            return out - set(Names.of(s).binds)
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return (out - {s.name}) | self.reads(s)
        return out | self.reads(s)            # AugAssign, Expr, Assert, Global, Pass, ...


class Assigned:
    """defined: id(stmt) -> names certainly bound when the statement starts."""

    ALL = None       # after return/raise/break/continue: nothing falls through

    def __init__(self, body, params):
        self.defined = {}
        self.block(body, set(params))

    def block(self, stmts, d):
        for s in stmts:
            if d is None:           # unreachable code: assume nothing
                d = set()
            self.defined[id(s)] = d
            d = self.stmt(s, set(d))
        return d

    @staticmethod
    def meet(a, b):
        return b if a is None else a if b is None else a & b

    def stmt(self, s, d):
        if isinstance(s, ast.If):
            return self.meet(self.block(s.body, d), self.block(s.orelse, d))
        if isinstance(s, ast.While):
            self.block(s.body, d)
            self.block(s.orelse, d)
            return d
        if isinstance(s, (ast.For, ast.AsyncFor)):
            self.block(s.body, d | killed([s.target]))
            self.block(s.orelse, d)
            return d
        if isinstance(s, (ast.Try, getattr(ast, 'TryStar', ast.Try))):
            self.block(s.body, d)
            self.block(s.orelse, d)
            for h in s.handlers:
                self.block(h.body, d | ({h.name} if h.name else set()))
            fin = self.block(s.finalbody, d)
            return d if fin is None else fin
        if isinstance(s, (ast.With, ast.AsyncWith)):
            return self.block(s.body, d | killed([i.optional_vars for i in s.items
                                                  if i.optional_vars]))
        if isinstance(s, ast.Match):
            for c in s.cases:
                self.block(c.body, d | set(Names.of(c.pattern).binds))
            return d
        if isinstance(s, (ast.Return, ast.Raise, ast.Break, ast.Continue)):
            return self.ALL
        if isinstance(s, ast.Delete):
            return d - killed(s.targets)
        if isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Import,
                          ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if isinstance(s, ast.AnnAssign) and s.value is None:
                return d
            return d | set(Names.of(s).binds)
        return d


def function_locals(fn):
    """Names local to function `fn`: parameters and names it binds, minus global/nonlocal."""
    v = Names.of(fn.body)
    return (set(param_names(fn)) | set(v.binds)) - set(v.declared), set(v.declared)


def escaping(fn):
    """Names that nested functions and classes defined in `fn` read: they may run after
    any statement, so these names count as read at every exit of `fn`."""
    out = set()
    for node in ast.walk(fn):
        if node is not fn and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                ast.ClassDef)):
            out |= reads(node)
    return out


def first_use_order(fn):
    """name -> sort key of its first appearance in `fn`, to list state in source order."""
    order = {a: (0, i) for i, a in enumerate(param_names(fn))}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name):
            key = (1, getattr(node, 'lineno', 1 << 30), getattr(node, 'col_offset', 0))
            if key < order.get(node.id, (2,)):
                order[node.id] = key
    return order


def bound_places(stmts):
    """The places that `stmts` bind to another object (`x = ...`, not `x op= ...`): names,
    and entries and fields ('x[0]' for `x[0] = ...`, 'x.a' for `x.a = ...`, 'x[]' for any
    other entry of x, 'x[0][]' for an entry of x[0]: see _entry)."""
    out = {}
    for stmt in stmts:
        for node in ast.walk(stmt):
            if not isinstance(node, (ast.Assign, ast.AnnAssign)):
                continue
            for t in getattr(node, 'targets', None) or [node.target]:
                for e in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]):
                    if isinstance(e, ast.Name):
                        out[e.id] = None
                    elif isinstance(e, (ast.Subscript, ast.Attribute)):
                        name = base_name(e.value)
                        if name is not None:
                            out[name + _entry(e)] = None
    return list(out)


def _entry(target):
    """The place `target` names after its base name, a segment per level: '[key]' (a
    constant key), '.field' or '[]' (any other key): '[0]' for `name[0] = ...`, '.a' for
    `name.a = ...`, '[0][]' for `name[0][m] = ...` (an entry of name[0]: name[0] itself
    stays the object it is). Through a call (`name.m()[0] = ...`): '[]'."""
    segments = []
    node = target
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute):
            segments.append('.' + node.attr)
        elif isinstance(node.slice, ast.Constant):
            segments.append(f'[{node.slice.value!r}]')
        else:
            segments.append('[]')
        node = node.value
    return ''.join(reversed(segments)) if isinstance(node, ast.Name) else '[]'


@dataclasses.dataclass
class Cells:
    """What the functions nested in a function do with its variables: `captured`, those
    they read or bind (its cells); per function defined in it (by name), itself or through
    the functions it reads: `effects`, those it binds (`nonlocal`) or changes (`x[0] = e`,
    `x.m()`), which a loop or branch that calls it writes; `rebound`, the places of them
    it binds (bound_places); `passes`, those it passes to a call (which may store into a
    container among them), and `whole`, those it passes whole (not only their parts);
    `reads`, those it reads."""
    captured: set
    effects: dict
    rebound: dict
    passes: dict
    whole: dict
    reads: dict

    @property
    def functions(self):
        """The names of the functions nested in it."""
        return self.effects.keys()


def cells(fn, local):
    """Cells of function `fn`, whose local variables are `local`."""
    captured, direct, calls, binds, passes, whole, reads = set(), {}, {}, {}, {}, {}, {}
    for node in ast.walk(fn):
        if node is fn or not isinstance(node, SCOPES):
            continue
        inner = Names.of(node.body if isinstance(node.body, list) else [node.body])
        own = set(inner.binds)
        if not isinstance(node, ast.ClassDef):
            own |= {a.arg for a in _all_args(node.args)}
        own -= set(inner.declared)
        captured |= (set(inner.reads) | set(inner.written()) | set(inner.passes)) - own
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            direct.setdefault(node.name, set()).update((set(inner.written()) - own) & local)
            passes.setdefault(node.name, set()).update((set(inner.passes) - own) & local)
            whole.setdefault(node.name, set()).update(
                ({n for n, w in inner.passes.items() if w} - own) & local)
            reads.setdefault(node.name, set()).update((set(inner.reads) - own) & local)
            calls.setdefault(node.name, set()).update(set(inner.reads) - own)
            binds.setdefault(node.name, set()).update(
                p for p in bound_places(node.body)
                if p.split('[')[0].split('.')[0] in local - own)
    return Cells(captured & local, _closed(direct, calls), _closed(binds, calls),
                 _closed(passes, calls), _closed(whole, calls), _closed(reads, calls))


def _closed(direct, calls):
    """direct[f] and that of every function f reads, to a fixed point."""
    out = {f: set(v) for f, v in direct.items()}
    grown = True
    while grown:
        grown = False
        for f, items in out.items():
            more = set().union(*[out.get(g, set()) for g in calls[f] if g != f]) - items
            if more:
                items |= more
                grown = True
    return out
