"""Random @pbc.syntax programs made of statements, and the oracle that runs them lane by lane.

A program is the source of one function

    def f(a, b, v, lst, d, o, k, acc):

over UInt32 (`kind='uint'`, exact: 32-bit wrap-around) or Float64 (`kind='float'`, smooth:
for derivatives) values: scalars `a b` (arguments) and `s t y z` (locals), a 3-vector `v`,
a list `lst` of two scalars, a dict `d` of one (`d['p']`), an object `o` with fields
`o.p o.q` (a DRJIT_STRUCT), the read-only lane index `k` and an array `acc` of LANES
entries that lanes scatter-add into. Its statements are what users write, not only
expressions:

* `place = e` and `place op= e` for every operator, where a place is a scalar name, a
  vector component (`v.x`, `v[2]`), a list or dict entry or a field; `v op= e` on the
  whole vector;
* aliases: `y = a`, `z = lst[0]`, `lst[1] = s`, `y = v.y` (a name bound to another's
  object: an in-place change through one is seen through the other);
* `if`/`elif`/`else` on lane-varying conditions, nested;
* bounded `while` loops (a counter stepped first in the body, so that `continue` is safe)
  with `break` and `continue` under conditions, nested two deep;
* early `return` from the function's top-level conditionals;
* calls (`pbc.switch` over CALLS) whose targets change an argument in place; an index
  of 3 calls nothing;
* `pbc.scatter_add(acc, e, index)`: lanes add into one another's entries (in any order:
  the sum is the same), also in loops, branches and calls' lanes.

Float64 expressions also call pbc.sin and pbc.cos.

The oracle is the same source run in plain Python once per lane (the lanes share `acc`,
read after the last), on the scalar classes below: `x op= e` changes the object x names
(as on a pbc array, and unlike a Python int), so every name, entry and field bound to it
sees the change, exactly as Python's data model says. A vector's component is an object
of its own (`v.y` is it), and storing into one (`v.y = e`) stores a copy, as pbc's and
Dr.Jit's vectors do.

`source()` is the program; `run_pbc` and `run_lanes` run it and return the lanes' values
of its result and of the caller's argument objects afterwards.
"""

import ast
import math
import random

from pbc.frontend.analysis import function_locals
from pbc.frontend.lowering import Lowerer

M32 = 0xFFFFFFFF
SCALARS = ('a', 'b', 's', 't', 'y', 'z')
COMPONENTS = ('v.x', 'v.y', 'v[2]')
ENTRIES = ('lst[0]', 'lst[1]', "d['p']", 'o.p', 'o.q')
PLACES = SCALARS + COMPONENTS + ENTRIES
LANES = 9
MAX_ITERATIONS = 8            # loops run at most 4 times per level (2 levels)


# ---- the oracle's values: one lane's scalar, a mutable object ------------------------------
def _value(x):
    return x.v if isinstance(x, _Scalar) else x


class _Scalar:
    __slots__ = ('v',)

    def __init__(self, v=0):
        self.v = self._fit(_value(v))

    def __repr__(self):
        return f'{type(self).__name__}({self.v!r})'

    def _new(self, v):
        return type(self)(v)

    def _set(self, v):
        self.v = self._fit(v)
        return self

    for _name, _fn in (('add', lambda a, b: a + b), ('sub', lambda a, b: a - b),
                       ('mul', lambda a, b: a * b), ('and', lambda a, b: a & b),
                       ('or', lambda a, b: a | b), ('xor', lambda a, b: a ^ b),
                       ('lshift', lambda a, b: a << b), ('rshift', lambda a, b: a >> b),
                       ('floordiv', lambda a, b: a // b), ('mod', lambda a, b: a % b),
                       ('truediv', lambda a, b: a / b)):
        def _make(fn):
            def op(self, o):
                return self._new(fn(self.v, _value(o)))

            def rop(self, o):
                return self._new(fn(_value(o), self.v))

            def iop(self, o):
                return self._set(fn(self.v, _value(o)))
            return op, rop, iop
        locals()[f'__{_name}__'], locals()[f'__r{_name}__'], locals()[f'__i{_name}__'] = \
            _make(_fn)
    del _name, _fn, _make

    def __neg__(self):
        return self._new(-self.v)

    def __invert__(self):
        return self._new(~self.v)

    def __lt__(self, o):
        return self.v < _value(o)

    def __le__(self, o):
        return self.v <= _value(o)

    def __gt__(self, o):
        return self.v > _value(o)

    def __ge__(self, o):
        return self.v >= _value(o)

    def __eq__(self, o):
        return self.v == _value(o)

    def __ne__(self, o):
        return self.v != _value(o)

    __hash__ = object.__hash__


class LaneU32(_Scalar):
    """One lane of a UInt32."""
    __slots__ = ()

    @staticmethod
    def _fit(v):
        return int(v) & M32


class LaneF64(_Scalar):
    """One lane of a Float64."""
    __slots__ = ()

    @staticmethod
    def _fit(v):
        return float(v)


def lane_vector(Scalar):
    class LaneVector3:
        """One lane of a 3-vector: three scalar objects; `v.y` is one of them, and storing
        into a component stores a copy."""

        def __init__(self, *c):
            object.__setattr__(self, 'c', [Scalar(x) for x in c])

        def __getitem__(self, i):
            return self.c[i]

        def __setitem__(self, i, value):
            if self.c[i] is not value:
                self.c[i] = Scalar(value)

        def __getattr__(self, name):
            if name in 'xyz' and len(name) == 1:
                return self.c['xyz'.index(name)]
            raise AttributeError(name)

        def __setattr__(self, name, value):
            self['xyz'.index(name)] = value

        def _parts(self, o):
            return o.c if isinstance(o, LaneVector3) else [o] * 3

        def _map(self, o, op):
            return LaneVector3(*[getattr(a, op)(b) for a, b in zip(self.c, self._parts(o))])

        def _inplace(self, o, op):
            # (each component object changes, to the value computed from the operands
            # before any changed: `v += v.x` adds the old x to every component)
            new = [getattr(Scalar(a), op)(b).v for a, b in zip(self.c, self._parts(o))]
            for a, x in zip(self.c, new):
                a.v = x
            return self

    for _op in ('add', 'sub', 'mul', 'and', 'or', 'xor', 'floordiv', 'mod', 'truediv',
                'lshift', 'rshift'):
        setattr(LaneVector3, f'__{_op}__',
                (lambda op: lambda self, o: self._map(o, op))(f'__{_op}__'))
        setattr(LaneVector3, f'__i{_op}__',
                (lambda op: lambda self, o: self._inplace(o, op))(f'__i{_op}__'))
    return LaneVector3


class Struct:
    """The programs' object with fields (a DRJIT_STRUCT); the class is made per type."""


def struct_type(Scalar):
    return type('Obj', (Struct,), dict(DRJIT_STRUCT={'p': Scalar, 'q': Scalar},
                                       __init__=_struct_init))


def _struct_init(self, p=None, q=None):
    self.p, self.q = p, q


class _Hint:
    """The `pbc` the oracle's programs see: hint() returns its condition, switch() calls
    the lane's target, scatter_add() adds into the entry of a list that all lanes share."""

    @staticmethod
    def hint(value, **kwargs):
        return value

    @staticmethod
    def switch(index, targets, *args):
        i = _value(index)
        return targets[i](*args) if i < len(targets) else None

    @staticmethod
    def scatter_add(target, value, index):
        target[_value(index)] += value

    @staticmethod
    def sin(x):
        return LaneF64(math.sin(_value(x)))

    @staticmethod
    def cos(x):
        return LaneF64(math.cos(_value(x)))


# The targets of the programs' calls: each changes an argument in place.
def call_add(x, y):
    x += y
    return x


def call_shift(x, y):
    x ^= y << 1
    return y


def call_back(x, y):
    y -= x
    return x


def call_damp(x, y):
    x -= y * 0.5
    x *= 0.5
    return y


def call_scale(x, y):
    y *= x * 0.5
    return x


CALLS = {'uint': (call_add, call_shift, call_back),
         'float': (call_add, call_damp, call_scale)}


def fresh(x):
    """A new object of x's value (a lane's scalar); anything else as it is."""
    return type(x)(x.v) if isinstance(x, _Scalar) else x


# ---- the oracle's program: pbc's identity rule made explicit --------------------------------
def lane_source(source):
    """The program as the oracle runs it on each lane. First pbc's own first pass
    (pbc/frontend/lowering.py: `break`, `continue` and early `return` become flags and
    branches; plain Python of the same meaning), then the one rule of docs/semantics.md
    ("In-place changes") that plain Python does not have: a place (a name, an entry, a
    field, a component) that a JIT branch or loop assigns holds a new object after it, on
    every lane, and a loop's body starts each iteration with new objects for the places it
    assigns. (A JIT statement runs all lanes at once: after it, a place assigned on some
    lanes cannot be the same object on the others.) Everything else is Python's meaning."""
    fdef = ast.parse(source).body[0]
    _, declared = function_locals(fdef)
    Lowerer('<program>', set(declared), True).function(fdef)
    fdef = _Freshen().visit(fdef)
    return ast.unparse(ast.fix_missing_locations(ast.Module([fdef], []))) + '\n'


def _assigned_places(stmts):
    """The places that `stmts` assign with `=` (not `op=`: that changes the object)."""
    out = {}
    for s in stmts:
        for node in ast.walk(s):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    for e in (t.elts if isinstance(t, ast.Tuple) else [t]):
                        out.setdefault(ast.unparse(e), e)
    return list(out)


def _refresh(places):
    """`place = fresh(place)` for each place (one not assigned yet stays so)."""
    code = '\n'.join(f'try:\n    {p} = fresh({p})\nexcept NameError:\n    pass'
                     for p in places)
    return ast.parse(code).body


class _Freshen(ast.NodeTransformer):
    def visit_If(self, node):
        self.generic_visit(node)
        plan = getattr(node, '_pbc', None)
        if not plan:
            return node
        return [node] + _refresh(_assigned_places(node.body + node.orelse))

    def visit_While(self, node):
        self.generic_visit(node)
        plan = getattr(node, '_pbc', None)
        if not plan:
            return node
        places = _assigned_places(node.body)
        if plan['brk']:               # (pbc's runtime adds the flag to the condition)
            node.test = ast.BoolOp(ast.And(), [ast.UnaryOp(ast.Not(), ast.Name(
                plan['brk'], ast.Load())), node.test])
        node.body = _refresh(places) + node.body
        return [node] + _refresh(places)


# ---- the generator -----------------------------------------------------------------------
class Program:
    """A random program (see the module's docstring) drawn from `seed`."""

    def __init__(self, seed, kind='uint', size=6, aliases=True):
        self.rng, self.kind, self.aliases = random.Random(seed), kind, aliases
        self.lines, self.loops, self.counters = [], 0, []
        self.T = 'UInt32' if kind == 'uint' else 'Float64'
        emit = self.lines.append
        emit('def f(a, b, v, lst, d, o, k, acc):')
        emit(f'    s = {self.T}({self.literal()}) + a')
        emit(f'    t = {self.T}({self.literal()})')
        # Places that may be bound to one object, as groups (union-find; never split, so
        # two places in different groups are certainly different objects).
        self.group = {p: p for p in PLACES}
        alias = [self.rng.random() < 0.5 and aliases for _ in range(2)]
        emit('    y = a' if alias[0] else f'    y = {self.T}({self.literal()})')
        emit('    z = lst[0]' if alias[1] else f'    z = s * {self.literal()}')
        if alias[0]:
            self.join('y', 'a')
        if alias[1]:
            self.join('z', 'lst[0]')
        self.block(1, size, loop_depth=0, top=True)
        emit('    return ' + self.result())

    def source(self):
        return '\n'.join(self.lines) + '\n'

    def result(self):
        return '(' + ', '.join(SCALARS) + ', v, lst, d, o)'

    # -- expressions
    def literal(self):
        if self.kind == 'uint':
            return str(self.rng.choice((0, 1, 2, 3, 5, 7, 100, 0xFFFF, 0xFFFFFFFF)))
        return f'{self.rng.uniform(-2, 2):.3f}'

    def atom(self):
        r = self.rng.random()
        if r < 0.6:
            return self.rng.choice(PLACES)
        if r < 0.75:
            return 'k' if self.kind == 'uint' else 'Float64(k)'
        return self.literal()

    def expr(self, depth=0):
        """An expression whose value is a scalar array (it reads a place or `k`)."""
        if depth > 1 or self.rng.random() < 0.35:
            a = self.atom()
            if a[0].isdigit() or a[0] == '-':       # (a literal: an array with k)
                return f'({a} + k)' if self.kind == 'uint' else f'({a} + Float64(k))'
            return a
        x, y = self.expr(depth + 1), self.expr(depth + 1)
        if self.kind == 'uint':
            op = self.rng.choice(('+', '-', '*', '&', '|', '^', '//', '%', '<<', '>>'))
            if op in ('//', '%'):
                y = f'({y} | 1)'
            elif op in ('<<', '>>'):
                y = f'({y} & 7)'
            return f'({x} {op} {y})'
        op = self.rng.choice(('+', '-', '*', '/', 'sin', 'cos'))
        if op == 'sin':
            return f'pbc.sin({x})'
        if op == 'cos':
            return f'(pbc.cos({x}) * {y})'
        if op == '/':
            return f'({x} / (1.5 + {y} * {y}))'
        if op == '*':
            return f'({x} * {y} * 0.5)'
        return f'({x} {op} {y})'

    def condition(self):
        # (each reads the lane index: a condition that is the same on every lane would run
        # as plain Python, one branch only, where the oracle's JIT rule assumes both)
        r, e = self.rng, f'({self.expr(1)} ^ k)'
        if self.kind == 'uint':
            form = r.choice([f'{e} % 3 == {r.randint(0, 2)}', f'({e} & 1) == 0',
                             f'{e} > {r.choice(PLACES)}', f'(k & {r.randint(1, 3)}) != 0'])
        else:
            # (conditions on integers only: the programs stay smooth in the floats)
            form = r.choice([f'(k & {r.randint(1, 3)}) != 0', f'k > {r.randint(1, 7)}',
                             f'(k % 3) == {r.randint(0, 2)}'] +
                            [f'({c} + k) % 3 == {r.randint(0, 2)}' for c in self.counters])
        return form

    # -- statements
    def emit(self, indent, text):
        self.lines.append('    ' * indent + text)

    def block(self, indent, size, loop_depth, top=False):
        for _ in range(self.rng.randint(1, size)):
            self.statement(indent, size, loop_depth, top)

    def statement(self, indent, size, loop_depth, top):
        r = self.rng.random()
        if r < 0.3:
            self.augmented(indent)
        elif r < 0.45:
            self.assignment(indent)
        elif r < 0.55 and self.aliases and self.alias(indent):
            pass
        elif r < 0.6:
            op = self.rng.choice(self.operators())
            self.emit(indent, f'v {op}= {self.rng.choice(PLACES + ("v",))}')
        elif r < 0.75 and indent < 5:
            self.if_(indent, size, loop_depth, top)
        elif r < 0.87 and loop_depth < 2 and indent < 5:
            self.while_(indent, size, loop_depth)
        elif r < 0.93 and loop_depth > 0:
            jump = self.rng.choice(('break', 'continue'))
            self.emit(indent, f'if {self.condition()}:')
            self.emit(indent + 1, jump)
        elif r < 0.96 and top and indent == 2:
            self.emit(indent, 'return ' + self.result())
        elif r < 0.975:
            self.call(indent)
        elif r < 0.99:
            self.scatter_add(indent)
        else:
            self.augmented(indent)

    def call(self, indent):
        """pbc.switch over CALLS (targets that change an argument in place) on two places
        that cannot be one object (a target gets each argument as an object of its own)."""
        p, q = self.rng.sample(PLACES, 2)
        if self.find(p) == self.find(q):
            return self.augmented(indent)
        self.emit(indent, f'pbc.switch({self.index()} % 4, CALLS, {p}, {q})')

    def index(self):
        """A UInt32 expression that varies with the lane (Float64 programs: of integers only,
        as their conditions)."""
        if self.kind == 'uint':
            return f'({self.expr(1)} ^ k)'
        r = self.rng
        return r.choice([f'(k * {r.randint(1, 5)} + {r.randint(0, 8)})'] +
                        [f'(k + {c})' for c in self.counters])

    def scatter_add(self, indent):
        """Adds into entries of acc; indices that more lanes (or iterations) share add up."""
        self.emit(indent, f'pbc.scatter_add(acc, {self.expr()}, {self.index()} % {LANES})')

    def operators(self):
        if self.kind == 'uint':
            return ('+', '-', '*', '&', '|', '^')
        return ('+', '-', '*')

    def augmented(self, indent):
        place = self.rng.choice(PLACES)
        if self.kind == 'uint':
            op = self.rng.choice(('+', '-', '*', '&', '|', '^', '//', '%', '<<', '>>'))
            e = self.expr()
            e = f'({e} | 1)' if op in ('//', '%') else f'({e} & 7)' if op in ('<<', '>>') \
                else e
        else:
            op = self.rng.choice(('+', '-', '*', '/'))
            e = self.expr()
            e = f'(1.5 + {e} * {e})' if op == '/' else f'({e} * 0.5)' if op == '*' else e
        self.emit(indent, f'{place} {op}= {e}')

    def find(self, p):
        while self.group[p] != p:
            p = self.group[p]
        return p

    def join(self, p, q):
        self.group[self.find(p)] = self.find(q)

    def assignment(self, indent):
        place, e = self.rng.choice(PLACES), self.expr()
        if e in PLACES:
            if self.aliases and self.alias(indent, place, e):
                return
            e = f'({e} + 0)' if self.kind == 'uint' else f'({e} + 0.0)'    # (a new object)
        self.emit(indent, f'{place} = {e}')

    def alias(self, indent, a=None, b=None):
        """`a = b`: the place a bound to b's object. Inside a loop or branch, only where a
        cannot already be bound to it: binding a place to the object it had leaves it that
        object, where the oracle's rule (lane_source) makes every place the statement
        assigns a new object."""
        if a is None:
            a, b = self.rng.sample(PLACES, 2)
        if a in COMPONENTS:       # (storing into a component copies: not an alias)
            a, b = b, a
        if a == b or (indent > 1 and self.find(a) == self.find(b)):
            return False
        self.join(a, b)
        self.emit(indent, f'{a} = {b}')
        return True

    def if_(self, indent, size, loop_depth, top):
        self.emit(indent, f'if {self.condition()}:')
        self.block(indent + 1, max(1, size // 2), loop_depth, top and indent == 1)
        if self.rng.random() < 0.3:
            self.emit(indent, f'elif {self.condition()}:')
            self.block(indent + 1, max(1, size // 2), loop_depth, top and indent == 1)
        if self.rng.random() < 0.6:
            self.emit(indent, 'else:')
            self.block(indent + 1, max(1, size // 2), loop_depth, top and indent == 1)

    def while_(self, indent, size, loop_depth):
        self.loops += 1
        c = f'c{self.loops}'
        self.counters.append(c)
        self.emit(indent, f'{c} = UInt32(0)')
        bound = self.rng.choice(('3', '(k & 3)', '(k % 4)') if self.kind == 'float' else
                                ('3', '(k & 3)', f'({self.rng.choice(PLACES)} & 3)'))
        self.emit(indent, f'while pbc.hint({c} < {bound}, max_iterations={MAX_ITERATIONS}):')
        self.emit(indent + 1, f'{c} += 1')
        self.block(indent + 1, max(1, size // 2), loop_depth + 1)
        self.counters.pop()


# ---- running it ------------------------------------------------------------------------------
def inputs(seed, kind):
    """Per lane: the values of a, b, v (3), lst (2), d['p'], o.p, o.q and acc's entry."""
    rng = random.Random(seed)
    if kind == 'uint':
        def draw():
            return rng.choice((0, 1, 2, 3, 7, 100, 12345, 0xFFFFFFFF, rng.getrandbits(32)))
    else:
        def draw():
            return round(rng.uniform(-1, 1), 3)
    return [[draw() for _ in range(LANES)] for _ in range(11)]


def flatten_result(result, Struct_):
    """The scalars of a program's result (or of its arguments), in order."""
    out = []
    for x in result:
        if isinstance(x, list):
            out += list(x)
        elif isinstance(x, dict):
            out.append(x['p'])
        elif isinstance(x, Struct_):
            out += [x.p, x.q]
        elif hasattr(x, 'x') and not isinstance(x, (int, float)) and hasattr(x, 'z'):
            out += [x[0], x[1], x[2]]
        else:
            out.append(x)
    return out


def run_lanes(source, values, kind):
    """Per lane, the program's result and arguments afterwards (each a list of Python
    numbers; acc's entry last), from plain Python on the lane's scalars."""
    Scalar = LaneU32 if kind == 'uint' else LaneF64
    Vector, Obj = lane_vector(Scalar), struct_type(Scalar)
    ns = dict(UInt32=LaneU32, Float64=LaneF64, pbc=_Hint, fresh=fresh, CALLS=CALLS[kind])
    exec(compile(lane_source(source), '<program>', 'exec'), ns)
    acc = [Scalar(x) for x in values[10]]
    out = []
    for lane in range(LANES):
        x = [Scalar(row[lane]) for row in values]
        args = (x[0], x[1], Vector(*x[2:5]), [x[5], x[6]], {'p': x[7]}, Obj(x[8], x[9]),
                LaneU32(lane), acc)
        result = ns['f'](*args)
        out.append([_value(e) for e in flatten_result(result, Struct)] +
                   [_value(e) for e in flatten_result(args[:6], Struct)])
    # (acc is complete once every lane has run)
    return [lane + [acc[i].v] for i, lane in enumerate(out)]


def pbc_struct(T):
    return type('Obj', (), dict(DRJIT_STRUCT={'p': T, 'q': T}, __init__=_struct_init))


def pbc_arguments(values, backend, kind, a=None):
    """The program's arguments as arrays of `backend` (a module of array types), with `a`
    for the first where given."""
    T = backend.UInt32 if kind == 'uint' else backend.Float64
    x = [T(row) for row in values]
    x[0] = x[0] if a is None else a
    v = backend.Array3u(*x[2:5]) if kind == 'uint' else backend.Array3f64(*x[2:5])
    k = backend.UInt32(list(range(LANES)))
    return (x[0], x[1], v, [x[5], x[6]], {'p': x[7]}, pbc_struct(T)(x[8], x[9]), k, x[10])


def pbc_outputs(result, args):
    """The arrays (or Python numbers) of the program's outputs, in run_lanes's order."""
    Obj = type(args[5])
    return flatten_result(result, Obj) + flatten_result(args[:6], Obj) + [args[7]]


def run_pbc(fn, values, backend, kind):
    """fn (the program under @pbc.syntax) on arrays of `backend`; per lane, as run_lanes."""
    args = pbc_arguments(values, backend, kind)
    columns = [list(p.numpy()) if hasattr(p, 'numpy') else [p] * LANES
               for p in pbc_outputs(fn(*args), args)]
    return [[c[lane] if len(c) > 1 else c[0] for c in columns] for lane in range(LANES)]


def same(a, b, kind):
    if kind == 'uint':
        return int(a) == int(b)
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9) or (math.isnan(a) and math.isnan(b))
