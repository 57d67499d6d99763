"""Random @pbc.syntax programs made of statements, and the oracle that runs them lane by lane:
the one generator of the random-program tests of control flow, in-place changes and their
derivatives (test_inplace_fuzz.py, test_control_fuzz.py).

A program is the source of one function

    def f(a, b, v, lst, d, o, k, acc):

over values of one kind (KINDS): UInt32 ('uint'), Int32 ('int'), UInt64 ('uint64') and
Int64 ('int64'), exact with wrap-around and C's division; Float ('float32'), exact: every
operation rounds to float32; Float64 ('float'), smooth, for derivatives. Its places:
scalars `a b` (arguments) and `s t y z` (locals), a 3-vector `v`, a list `lst` of two
scalars, a dict `d` of one (`d['p']`), an object `o` with fields `o.p o.q` (a DRJIT_STRUCT,
or in half the programs a dataclass); besides them a Bool `m`, the read-only lane index
`k` (UInt32) and an array `acc` (one entry per lane) that lanes scatter-add into. Its
statements are what users write, not only expressions:

* `place = e` and `place op= e` for every operator (`x **= 2` too), where a place is a
  scalar name, a vector component (`v.x`, `v[2]`), a list or dict entry or a field; `v op=
  e` on the whole vector; masked stores `place[c] = e`, `place[c] op= e`, `v[c] = e` (in
  place, on the lanes where c holds); `m = c`, `m &= c`, `m |= c`, `m ^= c` on the Bool;
  several places at once: `p = q = e`, `p, q = e1, e2` and the swap `p, q = q, p`;
* expressions of the kind's operators, pbc.select, conditional expressions `x if c else
  y` (lane by lane), and pbc.minimum/maximum (exact kinds) or pbc.sin/cos (Float64);
* aliases: `y = a`, `z = lst[0]`, `lst[1] = s`, `y = v.y` (a name bound to another's
  object: an in-place change through one is seen through the other), and the target of a
  Python loop `for q in (p1, p2): q op= e`;
* `o.bump(e)`: a method of `o` that changes its field `q` in place (`self.q += x`), where
  the code of the region that calls it does not show the change;
* `if`/`elif`/`else` on lane-varying conditions (of `m` too), nested;
* bounded `while` loops (a counter stepped first in the body, so that `continue` is safe)
  with `break` and `continue` under conditions, nested up to three deep; a quarter of
  them `for c in range(bound)` over a JIT bound (a JIT loop too); Python loops `for _ in
  range(2)` around blocks (unrolled: each region in them recorded twice);
* a tenth of the loops a `pbc.Loop` (Dr.Jit 0.x's loop object) whose state is every place,
  its body changing them in place only (nested loops and conditionals too) and its
  regions symbolic as the flags say (in Float64 programs, only where no region encloses
  it: derivatives need it evaluated);
* early `return` from the function's top-level conditionals;
* calls (`pbc.switch`) whose targets change an argument in place: over CALLS, and in
  half the programs over three targets of their own (`Target`: statements, conditionals,
  loops and calls over CALLS and over the targets before them, symbolic or plain (g2
  calls g1 and g0, g1 calls g0: calls nest four deep), on the arguments, a local and the
  entries of a list `c` they store into, the program's `u`), which they also call as
  plain functions, on any places (one object twice, too); an index past the targets
  calls nothing (a result assigned from it is zero there);
* in half of the programs with targets, classes B0, B1(B0), B2(B0) whose method `g` is
  one of the targets plus a field of the instance, called through a pointer array
  `p.g(...)` or `pbc.dispatch(p, call_g, ...)` (each lane its instance's, or none: null)
  that regions draw again from a table (`p = pbc.gather(Ptr[B0], ptab, i)`);
* in a fifth of the programs, functions nested in the program that regions call: `h()`,
  which changes its variables in place, binds them (`nonlocal s`) and stores into its
  containers, and `r(x)`, also a target of symbolic calls (`pbc.switch(i, (r, r), p)`),
  which changes x and the program's scalars in place and binds scalars no other place
  shares an object with;
* in a third of the programs, draws from a PCG32 generator `rng` (also in the targets);
* in a third, local memory `loc = pbc.alloc_local(T, 2, ...)` (two entries per lane):
  stores at per-lane positions, entries changed through a read and a store
  (`loc[i] op= e`), reads in expressions;
* in two fifths of the float programs, a matrix `mx` (Matrix3f, Matrix3f64) whose entries
  `mx[0][1] mx[1][2] mx[2][0]` are places, as a vector's components, and which `mx @=
  Matrix3f(e)`, `mx[c] = e`, `mx[1] op= v` and `mx[0, 2] op= e` change in place;
* in a third, a tensor `tn` of one entry per lane (TensorXu, TensorXi, TensorXf or
  TensorXf64): changed in place (`tn op= e`) or bound to a new tensor, its entries read
  (`tn.array`), in every region;
* `pbc.scatter_add(acc, e, index)`: lanes add into one another's entries (in any order:
  the sum is the same but for float rounding), also in loops, branches and calls' lanes;
* `pbc.eval(x)` and `pbc.schedule(x)` where nothing records.

With `modes=True`, each loop, conditional and call gets a mode of its own (symbolic,
evaluated, or none: the flags decide), evaluated only outside symbolic code; half the
loops evaluated by request run compressed (`compress=True`, each iteration on just the
lanes still in the loop, with every place they may read made state by `include`).

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
import dataclasses
import functools
import math
import random
import zlib

import numpy as np

import pbc
from pbc.frontend.analysis import function_locals
from pbc.frontend.lowering import Lowerer

M32 = 0xFFFFFFFF
M64 = (1 << 64) - 1
SCALARS = ('a', 'b', 's', 't', 'y', 'z')
COMPONENTS = ('v.x', 'v.y', 'v[2]')
ENTRIES = ('lst[0]', 'lst[1]', "d['p']", 'o.p', 'o.q')
PLACES = SCALARS + COMPONENTS + ENTRIES
MATRIX = ('mx[0][1]', 'mx[1][2]', 'mx[2][0]')    # (entries of a matrix: components)
CELL = ('c[0]', 'c[1]')       # a target's container argument: the program's `u`, only
LANES = 9
MAX_ITERATIONS = 8            # loops run at most 4 times per level (2 levels)
TENSORS = {'UInt32': 'TensorXu', 'Int32': 'TensorXi', 'Float': 'TensorXf',
           'Float64': 'TensorXf64'}


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

    def __getitem__(self, mask):
        return type(self)(self.v)       # (x[c] op= e: a copy, stored back where c holds)

    def __setitem__(self, mask, value):
        if mask:
            self.v = self._fit(_value(value))

    @property
    def array(self):
        """(a tensor's entries: a lane's tensor is its one scalar)"""
        return self

    for _name, _fn in (('add', lambda a, b: a + b), ('sub', lambda a, b: a - b),
                       ('mul', lambda a, b: a * b), ('and', lambda a, b: a & b),
                       ('or', lambda a, b: a | b), ('xor', lambda a, b: a ^ b),
                       ('lshift', lambda a, b: a << b), ('rshift', lambda a, b: a >> b),
                       ('floordiv', lambda a, b: a // b), ('mod', lambda a, b: a % b),
                       ('truediv', lambda a, b: a / b)):
        def _make(fn):
            # (an operand that is a Python number is one of this type first, as pbc's
            # literals are: a float32 program's 1.1 is float32(1.1))
            def op(self, o):
                return self._new(fn(self.v, self._fit(_value(o))))

            def rop(self, o):
                return self._new(fn(self._fit(_value(o)), self.v))

            def iop(self, o):
                return self._set(fn(self.v, self._fit(_value(o))))
            return op, rop, iop
        locals()[f'__{_name}__'], locals()[f'__r{_name}__'], locals()[f'__i{_name}__'] = \
            _make(_fn)
    del _name, _fn, _make

    def _power(self, n):
        # (pbc's x ** n for a Python int n >= 1: repeated squaring, each product rounded
        # or wrapped as the type's)
        result, base = None, self.v
        while n:
            if n & 1:
                result = base if result is None else self._fit(result * base)
            n >>= 1
            if n:
                base = self._fit(base * base)
        return result

    def __pow__(self, n):
        return self._new(self._power(n))

    def __ipow__(self, n):
        return self._set(self._power(n))

    def __neg__(self):
        return self._new(-self.v)

    def __invert__(self):
        return self._new(~self.v)

    def __lt__(self, o):
        return self.v < self._fit(_value(o))

    def __le__(self, o):
        return self.v <= self._fit(_value(o))

    def __gt__(self, o):
        return self.v > self._fit(_value(o))

    def __ge__(self, o):
        return self.v >= self._fit(_value(o))

    def __eq__(self, o):
        return self.v == self._fit(_value(o))

    def __ne__(self, o):
        return self.v != self._fit(_value(o))

    __hash__ = object.__hash__


class LaneU32(_Scalar):
    """One lane of a UInt32."""
    __slots__ = ()

    @staticmethod
    def _fit(v):
        return int(v) & M32


class LaneI32(_Scalar):
    """One lane of an Int32: two's complement wrap-around, and C's division (truncating;
    the programs never divide by 0)."""
    __slots__ = ()

    @staticmethod
    def _fit(v):
        v = int(v) & M32
        return v - (1 << 32) if v >> 31 else v

    @staticmethod
    def _c_div(a, b):
        q = abs(a) // abs(b)
        return q if (a < 0) == (b < 0) else -q

    def __floordiv__(self, o):
        return self._new(self._c_div(self.v, self._fit(_value(o))))

    def __ifloordiv__(self, o):
        return self._set(self._c_div(self.v, self._fit(_value(o))))

    def __mod__(self, o):
        b = self._fit(_value(o))
        return self._new(self.v - self._c_div(self.v, b) * b)

    def __imod__(self, o):
        b = self._fit(_value(o))
        return self._set(self.v - self._c_div(self.v, b) * b)


class LaneU64(_Scalar):
    """One lane of a UInt64."""
    __slots__ = ()

    @staticmethod
    def _fit(v):
        return int(v) & M64


class LaneI64(LaneI32):
    """One lane of an Int64 (as LaneI32, on 64 bits)."""
    __slots__ = ()

    @staticmethod
    def _fit(v):
        v = int(v) & M64
        return v - (1 << 64) if v >> 63 else v


class LaneF32(_Scalar):
    """One lane of a Float (float32): each operation rounds to float32 (exact for + - * /,
    which float64 computes exactly enough to round once)."""
    __slots__ = ()

    @staticmethod
    def _fit(v):
        with np.errstate(over='ignore'):        # (past float32's range: inf, as pbc's)
            return float(np.float32(v))


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
            if isinstance(i, bool):         # (v[c] op= e: a copy, stored back where c holds)
                return LaneVector3(*self.c)
            return self.c[i]

        def __setitem__(self, i, value):
            if isinstance(i, bool):         # (a masked store: each component in place)
                if i:
                    for a, x in zip(self.c, self._parts(value)):
                        a.v = Scalar(x).v
            elif self.c[i] is not value:
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
                'lshift', 'rshift', 'pow'):
        setattr(LaneVector3, f'__{_op}__',
                (lambda op: lambda self, o: self._map(o, op))(f'__{_op}__'))
        setattr(LaneVector3, f'__i{_op}__',
                (lambda op: lambda self, o: self._inplace(o, op))(f'__i{_op}__'))
    return LaneVector3


class LaneLocal:
    """One lane of local memory: a read is a new object, a store stores a copy."""

    def __init__(self, size, value):
        self.entries = [fresh(value) for _ in range(size)]

    def __getitem__(self, i):
        return fresh(self.entries[_value(i)])

    def __setitem__(self, i, value):
        self.entries[_value(i)] = fresh(value)


class LaneMatrix:
    """One lane of a 3x3 matrix: three rows, each a 3-vector (`mx[0]` is one, `mx[0][1]` a
    component of it)."""

    def __init__(self, Vector, entries):
        if len(entries) == 1:           # (a scalar times the identity, as pbc's)
            entries = [entries[0] if i % 4 == 0 else 0.0 for i in range(9)]
        self.Vector = Vector
        self.rows = [Vector(*entries[3 * i:3 * i + 3]) for i in range(3)]

    def __getitem__(self, i):
        if isinstance(i, tuple):
            return self.rows[i[0]][i[1]]
        if isinstance(i, bool):         # (mx[c] = e read back, lane_source: a copy)
            return LaneMatrix(self.Vector, [x for row in self.rows for x in row.c])
        return self.rows[i]

    def __setitem__(self, i, value):
        if isinstance(i, bool):         # (a masked store: every entry, in place)
            parts = value.rows if isinstance(value, LaneMatrix) else [value] * 3
            for row, part in zip(self.rows, parts):
                row[i] = part
        elif isinstance(i, tuple):
            self.rows[i[0]][i[1]] = value
        elif self.rows[i] is not value:     # (`mx[1] += v` changed the row itself)
            self.rows[i] = self.Vector(*value.c)        # (a copy)

    def __imatmul__(self, o):
        # (each entry object changes, to the product's entry computed from the entries
        # before any changed; each sum in float64, of products exact there, rounded once:
        # pbc's fma chain on a float32 matrix times a scalar's identity (`mx @= Matrix3f(e)`,
        # the programs' only product) rounds just the one product that is not a zero)
        new = [[sum(self.rows[i][k].v * o.rows[k][j].v for k in range(3)) for j in range(3)]
               for i in range(3)]
        for row, values in zip(self.rows, new):
            for entry, x in zip(row.c, values):
                entry.v = type(entry)(x).v
        return self


class LanePCG32:
    """One lane's stream of PCG32 (pbc's lane `lane` of PCG32(n), seeded with the default
    state and stream plus the lane's index): a mutable object, as the generator is."""

    MULT, STATE, STREAM = 0x5851F42D4C957F2D, 0x853C49E6748FEA9B, 0xDA3E39CB94B95BDB

    def __init__(self, lane):
        self.state, self.inc = 0, (((self.STREAM + lane) << 1) | 1) & M64
        self._step()
        self.state = (self.state + self.STATE + lane) & M64
        self._step()

    def _step(self):
        old = self.state
        self.state = (old * self.MULT + self.inc) & M64
        return old

    def next_uint32(self):
        old = self._step()
        bits, rot = (((old >> 18) ^ old) >> 27) & M32, old >> 59
        return LaneU32((bits >> rot) | (bits << ((-rot) & 31)))

    def next_float32(self):
        return LaneF32((self.next_uint32().v >> 9) * 2.0 ** -23)

    def next_float64(self):
        return LaneF64(self.next_uint32().v * 2.0 ** -32)


class Struct:
    """The programs' object with fields (a DRJIT_STRUCT); the class is made per type."""


def struct_type(Scalar):
    return type('Obj', (Struct,), dict(DRJIT_STRUCT={'p': Scalar, 'q': Scalar},
                                       __init__=_struct_init, bump=_struct_bump))


def _struct_init(self, p=None, q=None):
    self.p, self.q = p, q


def _struct_bump(self, x):
    """`o.bump(e)`: a method that changes a field in place, out of sight of the caller's
    code (a region must see it all the same)."""
    self.q += x


class _LanePtr:
    """The oracle's Ptr[Base]: `Ptr[B](objs)` is the list of instances (None: null), of
    which pbc.gather picks the lane's (a _LaneTarget)."""

    def __class_getitem__(cls, base):
        return list


class _LaneTarget:
    """A lane's pointer: a method call runs its instance's method (the result a new
    object, as a call's), or, null, none: zeros."""

    def __init__(self, obj):
        self.obj = obj

    def __getattr__(self, name):
        def method(*args, mode=None):
            if self.obj is None:
                return type(args[0])(0)
            return fresh(getattr(self.obj, name)(*args))
        return method


class _Hint:
    """The `pbc` the oracle's programs see: hint() returns its condition, switch() calls
    the lane's target, scatter_add() adds into the entry of a list that all lanes share,
    gather() picks the lane's pointer."""

    Object = object

    @staticmethod
    def hint(value, **kwargs):
        return value

    @staticmethod
    def syntax(fn):
        return fn

    @staticmethod
    def dispatch(ptr, fn, *args, mode=None):
        if ptr.obj is None:
            return type(args[0])(0)
        return fresh(fn(ptr.obj, *args))

    @staticmethod
    def alloc_local(_, size, value):
        return LaneLocal(size, value)

    @staticmethod
    def Loop(name, state):
        return lambda cond: bool(cond)          # (a pbc.Loop: a plain loop on the lane)

    @staticmethod
    def switch(index, targets, *args, mode=None):
        i = _value(index)
        if i < len(targets):
            return fresh(targets[i](*args))     # (a call's result is a new object)
        return type(args[0])(0)         # (no target: zeros, as pbc's)

    @staticmethod
    def scatter_add(target, value, index):
        if _value(index) < len(target):     # (pbc's scatters drop an index out of range:
            target[_value(index)] += value  # `j`, a loop's counter, with fewer lanes)

    @staticmethod
    def gather(_, table, index):
        return _LaneTarget(table[_value(index)])

    @staticmethod
    def eval(*args):
        pass

    schedule = eval

    @staticmethod
    def minimum(x, y):
        return type(x)(min(_value(x), _value(y)))

    @staticmethod
    def maximum(x, y):
        return type(x)(max(_value(x), _value(y)))

    @staticmethod
    def select(c, x, y):
        return type(x)(_value(x) if c else _value(y))

    @staticmethod
    def sin(x):
        return LaneF64(math.sin(_in_range(_value(x))))

    @staticmethod
    def cos(x):
        return LaneF64(math.cos(_in_range(_value(x))))


class _LaneCtl:
    """The helpers of pbc's first pass (pbc/frontend/lowering.py) that the oracle's program
    calls: a range with a lane's value as a bound is a JIT loop, as in pbc."""

    @staticmethod
    def is_python_range(args):
        return not any(isinstance(a, _Scalar) for a in args)

    @staticmethod
    def jit_range(args):
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (tuple(args) + (1,))[:3]
        return type(stop)(start), stop, step

    @staticmethod
    def range_test(i, stop, step):
        return i < stop if step > 0 else i > stop

    @staticmethod
    def python_cond(c, reason):
        return c


class OutOfRange(Exception):
    """A program that takes sin or cos of a value past TRIG_RANGE, where pbc's accuracy ends
    (pbc/math.py: the Cody-Waite reduction, accurate to 2^45, knows no quadrant past 2^52):
    values that the programs' loops grew without bound, which the oracle does not model."""


TRIG_RANGE = 2.0 ** 40


def _in_range(x):
    if abs(x) > TRIG_RANGE:
        raise OutOfRange(f'sin or cos of {x}')
    return x


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


CALLS = {'uint': (call_add, call_shift, call_back), 'int': (call_add, call_shift, call_back),
         'uint64': (call_add, call_shift, call_back), 'int64': (call_add, call_shift, call_back),
         'float32': (call_add, call_damp, call_scale), 'float': (call_add, call_damp, call_scale)}


@dataclasses.dataclass(frozen=True)
class Kind:
    """What programs of one kind are written over."""
    T: str                    # the array type of its values
    vector: str               # that of the 3-vector v
    lane: type                # the oracle's scalar
    integer: bool
    exact: bool               # (the oracle's values are pbc's bit for bit; else: within
    #                           rounding, and the programs are smooth: derivatives)
    literals: tuple = ()

    @property
    def of_k(self):
        """The lane index as a value of this type."""
        return 'k' if self.T == 'UInt32' else f'{self.T}(k)'


KINDS = {
    'uint': Kind('UInt32', 'Array3u', LaneU32, True, True,
                 (0, 1, 2, 3, 5, 7, 100, 0xFFFF, 0xFFFFFFFF)),
    'int': Kind('Int32', 'Array3i', LaneI32, True, True,
                (0, 1, -1, 2, -3, 7, 100, -2**31, 2**31 - 1)),
    'uint64': Kind('UInt64', 'Array3u64', LaneU64, True, True,
                   (0, 1, 2, 3, 7, 100, 0xFFFFFFFF, 2**32, 2**64 - 1)),
    'int64': Kind('Int64', 'Array3i64', LaneI64, True, True,
                  (0, 1, -1, 2, -3, 7, 100, 2**32, -2**63, 2**63 - 1)),
    'float32': Kind('Float', 'Array3f', LaneF32, False, True),
    'float': Kind('Float64', 'Array3f64', LaneF64, False, False),
}


def fresh(x):
    """A new object of x's value (a lane's scalar); anything else as it is."""
    return type(x)(x.v) if isinstance(x, _Scalar) else x


def _ifexp(c, x, y):
    """`x() if c else y()` as pbc computes it for a JIT condition c: a new object, unless
    x and y give one (the programs' expressions have no side effects: both may run)."""
    a, b = x(), y()
    return (a if c else b) if a is b else fresh(a if c else b)


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
    fdefs = ast.parse(source).body
    for i, fdef in enumerate(fdefs):
        if not isinstance(fdef, ast.FunctionDef):        # (the classes of method calls)
            continue
        fdef.decorator_list = []
        _, declared = function_locals(fdef)
        Lowerer('<program>', set(declared), True).function(fdef)
        # (a function nested in the program binds places of its, where regions call it)
        nested = {d.name: _assigned_places(d.body) for d in fdef.body
                  if isinstance(d, ast.FunctionDef)}
        fdefs[i] = _Freshen(nested).visit(fdef)
    return ast.unparse(ast.fix_missing_locations(ast.Module(fdefs, []))) + '\n'


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
    def __init__(self, nested):
        self.nested = nested        # name -> the places that nested function binds

    def places(self, stmts):
        """The places `stmts` bind, themselves or through the nested functions they call
        or pass to a call (as pbc's frontend counts them: where the code names one)."""
        out = dict.fromkeys(_assigned_places(stmts))
        for node in (n for s in stmts for n in ast.walk(s)):
            if isinstance(node, ast.Name):
                out.update(dict.fromkeys(self.nested.get(node.id, ())))
        return list(out)

    def visit_IfExp(self, node):
        # (`x if c else y` on a lane's condition: pbc's ifexp is a conditional, whose value
        # is a new object unless both operands are one (rule 3): _ifexp)
        self.generic_visit(node)
        args = ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                             defaults=[])
        return ast.Call(ast.Name('_ifexp', ast.Load()), [node.test] + [
            ast.Lambda(args, e) for e in (node.body, node.orelse)], [])

    def visit_If(self, node):
        self.generic_visit(node)
        plan = getattr(node, '_pbc', None)
        if not plan:
            return node
        return [node] + _refresh(self.places(node.body + node.orelse))

    def visit_While(self, node):
        self.generic_visit(node)
        plan = getattr(node, '_pbc', None)
        if not plan:
            return node
        places = self.places(node.body)
        if plan['brk']:               # (pbc's runtime adds the flag to the condition)
            node.test = ast.BoolOp(ast.And(), [ast.UnaryOp(ast.Not(), ast.Name(
                plan['brk'], ast.Load())), node.test])
        node.body = _refresh(places) + node.body
        return [node] + _refresh(places)


# ---- the generator -----------------------------------------------------------------------
class Program:
    """A random program (see the module's docstring) drawn from `seed`."""

    def __init__(self, seed, kind='uint', size=6, aliases=True, modes=False, calls=True):
        self.rng, self.kind, self.aliases = random.Random(seed), kind, aliases
        self.lines, self.loops, self.counters = [], 0, []
        self.places, self.whole = PLACES, ('v',)      # (whole: the vector, as one place)
        self.tensor = self.matrix = self.local = self.j = False
        self.targets, self.deep = None, 2       # (deep: loops nest freely up to this depth)
        self.pcg = self.rng.random() < 0.3      # (a generator `rng` that statements draw from)
        # (modes: each loop, conditional and call gets a mode of its own, symbolic or
        # evaluated, or none (the flags decide); inside symbolic code, not evaluated)
        self.modes, self.symbolic = modes, False
        self.in_place_only, self.jumps = False, True    # (see legacy_loop)
        # (in a `for _ in range(2)`: no swaps there, whose second run binds the places back
        # to the objects they had, which rule 3 keeps and the oracle's syntactic rule does
        # not; see multiple)
        self.unrolled = False
        self.returned = self.plain = False      # (plain: in h or r, code @pbc.syntax leaves)
        self.K = KINDS[kind]
        self.T = self.K.T
        emit = self.lines.append
        if calls and self.rng.random() < 0.5:
            # (each target may call those defined before it: calls nest four deep, the
            # program's into g2, g2's into g1, g1's into g0, g0's into CALLS)
            self.targets = []
            for i in range(3):
                self.targets.append(Target(self.rng, kind, aliases, modes, f'g{i}', size,
                                           self.pcg, inner=tuple(self.targets)))
                self.lines += self.targets[-1].lines
        # (half of those also as methods of classes, called through a pointer array `p`)
        self.ptr = bool(self.targets) and self.rng.random() < 0.5
        if self.ptr:
            self.classes()
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
        if self.targets:
            # (the targets' container argument: a list only they store into, of objects
            # nothing else is bound to)
            emit(f'    u = [{self.T}({self.literal()}) + a, {self.T}({self.literal()})]')
        self.has_m = False
        self.emit(1, f'm = {self.condition()}')
        self.has_m = True
        # (an index `j` in 0..7, in half the programs: acc's entries are added at it, and
        # statements change it in place afterwards, which the additions' derivatives must
        # not see)
        self.j = self.rng.random() < 0.5
        if self.j:
            self.emit(1, 'j = k & 7')
        if self.pcg:
            self.emit(1, 'rng = PCG32(len(acc))')
        # (a tensor `tn` of one entry per lane, in a third of the programs)
        self.tensor = self.rng.random() < 0.3 and self.T in TENSORS
        if self.tensor:
            self.emit(1, f'tn = {TENSORS[self.T]}(a + {self.literal()})')
        # (local memory `loc` of two entries, in a third of the programs)
        self.local = self.rng.random() < 0.3
        if self.local:
            self.emit(1, f'loc = pbc.alloc_local({self.T}, 2, {self.T}({self.literal()}) + b)')
        # (a matrix `mx` in float programs, its entries places as a vector's components)
        self.matrix = not self.K.integer and self.rng.random() < 0.4
        if self.matrix:
            entries = ', '.join(f'({self.expr()} + 0.0)' for _ in range(9))
            self.emit(1, f'mx = Matrix3f{"64" * (self.T == "Float64")}({entries})')
            self.places = self.places + MATRIX
            self.group.update({p: p for p in MATRIX})
        self.nested = aliases and self.rng.random() < 0.4
        if self.nested:
            self.define_h()
        self.r_names = self.define_r() if self.nested and self.rng.random() < 0.5 else None
        if self.ptr:
            fields = ', '.join(f'B{i}({self.T}({self.literal()}))' for i in range(3))
            self.emit(1, f'ptab = Ptr[B0]([{fields}, None])')
            self.point(1)
        self.block(1, size, loop_depth=0, top=True)
        emit('    return ' + self.result())

    def define_h(self):
        """`def h():` nested in the program, which the program calls in any region:
        statements that rebind its variables (`nonlocal s`), store into its containers'
        entries and fields, or change their objects in place, where the code of the loop
        or branch that calls it does not show it."""
        lines, self.lines, self.plain = self.lines, [], True
        for _ in range(self.rng.randint(1, 2)):
            if self.rng.random() < 0.5:
                self.augmented(2)
            else:
                place, e = self.rng.choice(PLACES), self.expr()
                self.emit(2, f'{place} = ' + (f'({e} + 0)' if self.K.integer else
                                              f'({e} + 0.0)' if e in PLACES else e))
        body, self.lines, self.plain = self.lines, lines, False
        names = sorted({line.split()[0] for line in body} & set(SCALARS))
        self.emit(1, 'def h():')
        if names:
            self.emit(2, 'nonlocal ' + ', '.join(names))
        self.lines += body

    def define_r(self):
        """`def r(x):` nested in the program, a target of its calls (`pbc.switch(i, (r, r),
        p)`) and called as a plain function: over its argument and the program's scalars,
        which it changes in place or binds to other objects (`nonlocal s`). It binds only
        local scalars no other place shares an object with (nor will): a call's targets bind a
        variable on their lanes, where it is a new object after the call on every lane (as
        after a branch), and plain Python keeps the old one on the others."""
        # (locals: the caller sees the objects of a and b, its arguments, afterwards)
        free = [p for p in ('s', 't', 'y', 'z')
                if all(self.find(q) != self.find(p) for q in PLACES if q != p)]
        bound = self.rng.sample(free, min(len(free), self.rng.randint(1, 2)))
        lines, self.lines, self.plain = self.lines, [], True
        places, self.places = self.places, SCALARS + ('x',)
        for _ in range(self.rng.randint(1, 3)):
            if self.rng.random() < 0.5 or not bound:
                self.augmented(2)
            else:
                e = self.expr()
                self.emit(2, f'{self.rng.choice(bound + ["x"])} = ' +
                          (f'({e} + 0)' if self.K.integer else f'({e} + 0.0)'))
        e = self.expr()
        self.emit(2, 'return ' + (f'({e} + 0)' if self.K.integer else f'({e} + 0.0)'))
        body, self.lines, self.places, self.plain = self.lines, lines, places, False
        names = sorted({line.split()[0] for line in body} & set(SCALARS))
        self.emit(1, 'def r(x):')
        if names:
            self.emit(2, 'nonlocal ' + ', '.join(names))
        self.lines += body
        return bound

    def classes(self):
        """Classes B0, B1(B0), B2(B0) whose method g(x, y, k, c) is a target of the
        program's plus the instance's field w (read only: a target cannot change its
        instance)."""
        args = 'x, y, k, c' + (', rng' if self.pcg else '')
        ops = ('+', '-', '*', '^') if self.K.integer else ('+', '-')
        emit = self.lines.append
        emit('class B0(pbc.Object):')
        emit('    def __init__(self, w):')
        emit('        self.w = w')
        for i, g in enumerate(self.targets):
            if i:
                emit(f'class B{i}(B0):')
            emit(f'    def g(self, {args}):')
            emit(f'        return {g.name}({args}) {self.rng.choice(ops)} self.w')
        emit(f'def call_g(self, {args}):')
        emit(f'    return self.g({args})')

    def point(self, indent):
        """p: each lane's pointer into ptab (B0, B1, B2 or null), drawn again in regions."""
        self.emit(indent, f'p = pbc.gather(Ptr[B0], ptab, {self.index()} % 4)')

    def method_call(self, indent):
        """p.g(...) on two places (maybe one object): each lane calls its instance's
        method, or none (null); the result assigned to a place, or not."""
        p, q = self.rng.sample(self.places, 2)
        if self.rng.random() < 0.1:
            p = q
        args = f'{p}, {q}, k, u' + (', rng' if self.pcg else '') + self.mode()[0]
        # (or through pbc.dispatch, with a function that calls the instance's method)
        call = f'pbc.dispatch(p, call_g, {args})' if self.rng.random() < 0.3 else f'p.g({args})'
        self.emit(indent, (f'{self.rng.choice(self.places)} = ' if self.rng.random() < 0.5
                           else '') + call)

    def call_r(self, indent):
        """A call of r: through pbc.switch (lanes whose index is 2 call nothing) or
        plain; its result assigned to a place, or not. The switch is symbolic: r reads the
        program's variables, which hold a value per lane, and an evaluated call's targets
        run on their lanes only, which cannot read those (pbc raises an error that says
        so)."""
        p = self.rng.choice(self.places)
        call = f"pbc.switch({self.index()} % 3, (r, r), {p}, mode='symbolic')" \
            if self.rng.random() < 0.7 else f'r({p})'
        self.emit(indent, (f'{self.rng.choice(self.places)} = ' if self.rng.random() < 0.5
                           else '') + call)

    def source(self):
        return '\n'.join(self.lines) + '\n'

    def result(self):
        return '(' + ', '.join(SCALARS) + ', m, v, lst, d, o' + \
            (', u' if self.targets else '') + (', tn' if self.tensor else '') + \
            (', mx' if self.matrix else '') + \
            (', loc[UInt32(0)], loc[UInt32(1)]' if self.local else '') + \
            (', j)' if self.j else ')')

    # -- expressions
    def literal(self):
        if self.K.integer:
            return str(self.rng.choice(self.K.literals))
        return f'{self.rng.uniform(-2, 2):.3f}'

    def atom(self):
        r = self.rng.random()
        if r < 0.05 and self.tensor:
            return 'tn.array'               # (the tensor's entries: a flat array)
        if r < 0.1 and self.local:
            return self.rng.choice(('loc[k & 1]', 'loc[(k >> 1) & 1]'))
        if r < 0.6:
            return self.rng.choice(self.places)
        if r < 0.75:
            return self.K.of_k
        return self.literal()

    def expr(self, depth=0):
        """An expression whose value is a scalar array (it reads a place or `k`)."""
        if depth > 1 or self.rng.random() < 0.35:
            a = self.atom()
            if a[0].isdigit() or a[0] == '-':       # (a literal: an array with k)
                return f'({a} + {self.K.of_k})'
            return a
        x, y = self.expr(depth + 1), self.expr(depth + 1)
        r = self.rng.random()
        if r < 0.1:
            return f'pbc.select({self.condition()}, {x}, {y})'
        if r < 0.15 and not self.plain:
            # (lane by lane; not in h and r, plain Python: @pbc.syntax rewrites the
            # program's own code, as Dr.Jit's without recursive=True. Of two operands
            # that may be one object the value is that object, an alias the groups would
            # not know of: one of them made a new object)
            if self.one_object(x, y):
                y = self.new_object(y)
            return f'({x} if {self.condition()} else {y})'
        if r < 0.25 and self.K.exact:      # (not smooth: not in programs differentiated)
            return f'pbc.{self.rng.choice(("minimum", "maximum"))}({x}, {y})'
        if self.K.integer:
            op = self.rng.choice(('+', '-', '*', '&', '|', '^', '//', '%', '<<', '>>'))
            if op in ('//', '%'):
                y = f'({y} | 1)'
            elif op in ('<<', '>>'):
                y = f'({y} & 7)'
            return f'({x} {op} {y})'
        op = self.rng.choice(('+', '-', '*', '/') + (() if self.K.exact else ('sin', 'cos')))
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
        # as plain Python, one branch only, where the oracle's JIT rule assumes both; m,
        # a Bool, does too)
        r = self.rng
        if self.has_m and r.random() < 0.1:
            return r.choice(['m', f'(m {r.choice("&|^")} ({self._condition()}))'])
        return self._condition()

    def _condition(self):
        r = self.rng
        if self.K.integer:
            e = f'({self.expr(1)} ^ {self.K.of_k})'
            form = r.choice([f'{e} % 3 == {r.randint(0, 2)}', f'({e} & 1) == 0',
                             f'{e} > {r.choice(self.places)}', f'(k & {r.randint(1, 3)}) != 0'])
        elif self.K.exact:
            form = r.choice([f'({self.expr(1)} + {self.K.of_k}) > {r.choice(self.places)}',
                             f'{self.expr(1)} < {self.expr(1)}', f'(k & {r.randint(1, 3)}) != 0'])
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
        if self.in_place_only:
            return self.in_place_statement(indent, size, loop_depth)
        if self.tensor and self.rng.random() < 0.05:
            return self.tensor_statement(indent)
        if self.local and self.rng.random() < 0.05:
            return self.local_statement(indent)
        if self.j and self.rng.random() < 0.04:
            return self.index_statement(indent)
        if self.rng.random() < 0.04:
            return self.masked(indent)
        if self.matrix and self.rng.random() < 0.04:
            return self.matrix_statement(indent)
        if self.targets and self.rng.random() < 0.03:
            return self.call(indent)
        if getattr(self, 'ptr', False) and self.rng.random() < 0.02:
            return self.point(indent)
        if getattr(self, 'nested', False) and self.rng.random() < 0.05:
            return self.emit(indent, 'h()')
        if getattr(self, 'r_names', None) is not None and self.rng.random() < 0.05:
            return self.call_r(indent)
        if self.pcg and self.rng.random() < 0.05:
            return self.draw(indent)
        if self.rng.random() < 0.04:
            return self.multiple(indent)
        if self.rng.random() < 0.03:
            return self.for_alias(indent)
        if 'o.q' in self.places and not self.plain and self.rng.random() < 0.03:
            return self.emit(indent, f'o.bump({self.expr()})')
        if indent < 5 and self.rng.random() < 0.02:
            return self.static_for(indent, size, loop_depth, top)
        r = self.rng.random()
        if r < 0.3:
            self.augmented(indent)
        elif r < 0.45:
            self.assignment(indent)
        elif r < 0.55 and self.aliases and self.alias(indent):
            pass
        elif r < 0.6 and self.whole:
            op = self.rng.choice(self.operators())
            self.emit(indent, f'v {op}= {self.rng.choice(self.places + self.whole)}')
        elif r < 0.75 and indent < 5:
            self.if_(indent, size, loop_depth, top)
        elif r < 0.87 and indent < 5 and (loop_depth < self.deep or loop_depth == self.deep
                                          and self.rng.random() < 0.3):
            self.while_(indent, size, loop_depth)
        elif r < 0.93 and loop_depth > 0 and self.jumps:
            jump = self.rng.choice(('break', 'continue'))
            self.emit(indent, f'if {self.hinted(self.condition())[0]}:')
            self.emit(indent + 1, jump)
        elif r < 0.96 and top and indent == 2:
            self.emit(indent, 'return ' + self.result())
            self.returned = True      # (the code after it runs in a branch: see while_)
        elif r < 0.975:
            self.call(indent)
        elif r < 0.985 and self.whole:
            self.scatter_add(indent)
        elif r < 0.993 and self.has_m:
            op = self.rng.choice(('', '&', '|', '^'))
            self.emit(indent, f'm {op}= {self.condition()}')
        elif indent == 1 and self.whole:
            # (evaluation where nothing records: the values stay)
            self.emit(indent, f'pbc.{self.rng.choice(("eval", "schedule"))}'
                              f'({self.rng.choice(PLACES + ("v", "m"))})')
        else:
            self.augmented(indent)

    def call(self, indent):
        """pbc.switch on two places (maybe one object): over CALLS (targets that change an
        argument in place), or over the program's own targets (their result assigned to a
        place, or not); with classes, also a method call through `p`."""
        if getattr(self, 'ptr', False) and self.rng.random() < 0.3:
            return self.method_call(indent)
        if self.targets and self.rng.random() < 0.25:
            # (a plain Python call of one of them: its arguments may be one object, and
            # the loops in it meet other objects than at other calls)
            g = self.rng.choice(self.targets).name
            args = f'{self.rng.choice(self.places)}, {self.rng.choice(self.places)}, k, u' + \
                (', rng' if self.pcg else '')
            self.emit(indent, (f'{self.rng.choice(self.places)} = ' if self.rng.random() < 0.5
                               else '') + f'{g}({args})')
            return
        # (two places that may be one object, or one place twice: one object in the target)
        p, q = self.rng.sample(self.places, 2)
        if self.rng.random() < 0.1:
            p = q
        if not self.targets or self.rng.random() < 0.3:
            self.emit(indent, f'pbc.switch({self.index()} % 4, CALLS, {p}, {q}'
                              f'{self.mode()[0]})')
            return
        names = ', '.join(g.name for g in self.targets)
        call = f'pbc.switch({self.index()} % 4, ({names}), {p}, {q}, k, u' + \
            (', rng' if self.pcg else '') + f'{self.mode()[0]})'
        if self.rng.random() < 0.5:
            self.emit(indent, call)
            return
        # (the result is a new object: the targets return expressions, not arguments)
        self.emit(indent, f'{self.rng.choice(self.places)} = {call}')

    def draw(self, indent, in_place=False):
        """A place changed by (or bound to) a value drawn from the generator: the draw
        advances it on the lanes that run the statement."""
        draw = {'uint': 'rng.next_uint32()', 'int': 'Int32(rng.next_uint32() & 65535)',
                'uint64': 'UInt64(rng.next_uint32())',
                'int64': 'Int64(rng.next_uint32() & 65535)',
                'float32': 'rng.next_float32()', 'float': self.rng.choice(
                    ('Float64(rng.next_float32())', 'rng.next_float64()'))}[self.kind]
        place = self.rng.choice(self.places)
        if self.rng.random() < 0.3 and not in_place:
            self.emit(indent, f'{place} = {draw}')
        else:
            self.emit(indent, f'{place} {self.rng.choice(self.operators())}= {draw}')

    def index(self):
        """A UInt32 expression that varies with the lane (float programs: of integers only,
        as their conditions)."""
        if self.K.integer:
            e = f'({self.expr(1)} ^ {self.K.of_k})'
            return e if self.T == 'UInt32' else f'UInt32{e}'
        r = self.rng
        return r.choice([f'(k * {r.randint(1, 5)} + {r.randint(0, 8)})'] +
                        [f'(k + {c})' for c in self.counters])

    def scatter_add(self, indent):
        """Adds into entries of acc; indices that more lanes (or iterations) share add up.
        In loops, the index is also the counter of one (1 to 4: within acc), which the next
        iteration changes in place: the derivative of the addition must read it as it was."""
        index = f'{self.index()} % len(acc)'
        r = self.rng.random()
        if self.j and r < 0.4:
            index = 'j'
        elif self.counters and r < 0.6:
            index = self.rng.choice(self.counters)
        self.emit(indent, f'pbc.scatter_add(acc, {self.expr()}, {index})')

    def operators(self):
        if self.K.integer:
            return ('+', '-', '*', '&', '|', '^')
        return ('+', '-', '*')

    def augmented(self, indent, place=None):
        place = place or self.rng.choice(self.places)
        self.emit(indent, '{} {}= {}'.format(place, *self.operation()))

    def masked(self, indent):
        """A masked store into a place or the vector (`x[c] = e`, `v[c] op= e`): the object
        changes in place on the lanes where c holds."""
        place = self.rng.choice(self.places + self.whole)
        at = f'{place}[{self.condition()}]'
        if self.rng.random() < 0.5:
            self.emit(indent, f'{at} = {self.expr()}')
        else:
            self.augmented(indent, at)

    def matrix_statement(self, indent):
        """A statement that changes the matrix in place (its entry objects change, as for
        `v op= e`): `mx @= M(e)` (times a scalar's identity matrix), the masked store
        `mx[c] = e` (every entry, where c holds), a row changed by the vector `mx[1] op= v`,
        or an entry through a pair `mx[0, 2] op= e`."""
        r, op = self.rng.random(), self.rng.choice(self.operators())
        if r < 0.3:
            self.emit(indent, f'mx @= Matrix3f{"64" * (self.T == "Float64")}'
                              f'({self.expr()} * 0.5)')
        elif r < 0.5:
            self.emit(indent, f'mx[{self.condition()}] = {self.expr()}')
        elif r < 0.75:
            self.emit(indent, f'mx[{self.rng.randrange(3)}] {op}= ' +
                      ('(v * 0.5)' if op == '*' else 'v'))
        else:
            self.augmented(indent, f'mx[{self.rng.randrange(3)}, {self.rng.randrange(3)}]')

    def operation(self):
        """(op, e) of an augmented assignment `place op= e`."""
        if self.rng.random() < 0.05:
            return '**', self.rng.choice(('2', '3'))
        if self.K.integer:
            op = self.rng.choice(('+', '-', '*', '&', '|', '^', '//', '%', '<<', '>>'))
            e = self.expr()
            e = f'({e} | 1)' if op in ('//', '%') else f'({e} & 7)' if op in ('<<', '>>') \
                else e
        else:
            op = self.rng.choice(('+', '-', '*', '/'))
            e = self.expr()
            e = f'(1.5 + {e} * {e})' if op == '/' else f'({e} * 0.5)' if op == '*' else e
        return op, e

    def find(self, p):
        while self.group[p] != p:
            p = self.group[p]
        return p

    def join(self, p, q):
        self.group[self.find(p)] = self.find(q)

    def assignment(self, indent):
        place, e = self.rng.choice(self.places), self.expr()
        if e in self.places:
            if self.aliases and self.alias(indent, place, e):
                return
            e = f'({e} + 0)' if self.K.integer else f'({e} + 0.0)'    # (a new object)
        elif place in CELL and e == 'k':
            e = '(k + 0)'         # (c's entries stay objects of their own: Target.alias)
        self.emit(indent, f'{place} = {e}')

    def multiple(self, indent):
        """An assignment of several places at once: `p = q = e` (both bound to one new
        object, where neither is a component, which stores a copy), `p, q = e1, e2`, or the
        swap `p, q = q, p` (each bound to the other's object, where alias() would bind
        either)."""
        p, q = self.rng.sample(self.places, 2)
        r = self.rng.random()
        shared = not {p, q} & set(COMPONENTS + MATRIX)
        if r < 0.4 and not (shared and not self.may_alias(1, p, q)):
            self.emit(indent, f'{p} = {q} = {self.new_object(self.expr())}')
            if shared:
                self.join(p, q)
        elif r < 0.7 or not self.aliases or self.unrolled or not self.may_alias(indent, p, q):
            self.emit(indent, f'{p}, {q} = {self.new_object(self.expr())}, '
                              f'{self.new_object(self.expr())}')
        else:
            self.emit(indent, f'{p}, {q} = {q}, {p}')
            self.join(p, q)

    def one_object(self, x, y):
        """Whether expressions x and y may give one object (places of one group, or k)."""
        if x == y:
            return x in self.places or x == 'k'
        return x in self.places and y in self.places and self.find(x) == self.find(y)

    def new_object(self, e):
        """e, or where e names an object (a place, k) an expression of its value."""
        if e not in self.places and e != 'k':
            return e
        return f'({e} + 0)' if self.K.integer else f'({e} + 0.0)'

    def may_alias(self, indent, a, b):
        """Whether a may be bound to b's object (alias, `a = b`) or each to the other's (a
        swap): not inside a region where they may be one already, nor where either is a
        name r binds (see define_r) or an entry of c (see Target.alias)."""
        if a == b or (indent > 1 and self.find(a) == self.find(b)):
            return False
        return not ({a, b} & (set(getattr(self, 'r_names', None) or ()) | set(CELL)))

    def for_alias(self, indent):
        """`for q in (p1, p2): q op= e`: a Python loop whose target names each place's
        object in turn (p1 and p2 may be one object), changed in place through it: the
        region sees the change of an object under a name it did not write."""
        self.emit(indent, 'for q in ({}, {}):'.format(*self.rng.sample(self.places, 2)))
        self.augmented(indent + 1, 'q')

    def static_for(self, indent, size, loop_depth, top):
        """`for _ in range(2):` (a Python loop: its body runs twice, each region in it
        recorded twice), its block without a `break` or `continue` of its own."""
        self.emit(indent, 'for _ in range(2):')
        jumps, self.jumps = self.jumps, False
        unrolled, self.unrolled = self.unrolled, True
        self.block(indent + 1, max(1, size // 2), loop_depth, False)
        self.jumps, self.unrolled = jumps, unrolled

    def alias(self, indent, a=None, b=None):
        """`a = b`: the place a bound to b's object. Inside a loop or branch, only where a
        cannot already be bound to it: binding a place to the object it had leaves it that
        object, where the oracle's rule (lane_source) makes every place the statement
        assigns a new object."""
        if a is None:
            a, b = self.rng.sample(self.places, 2)
        if a in COMPONENTS + MATRIX:      # (storing into a component copies: not an alias)
            a, b = b, a
        if not self.may_alias(indent, a, b):
            return False
        self.join(a, b)
        self.emit(indent, f'{a} = {b}')
        return True

    def mode(self):
        """`, mode=...` for the next region (a loop, conditional or call), and whether it
        is symbolic (with none given: as the flags say, symbolic by default)."""
        if not self.modes:
            return '', True
        m = self.rng.choice(('symbolic', None) if self.symbolic else
                            ('symbolic', 'evaluated', None))
        return ('' if m is None else f', mode={m!r}'), m != 'evaluated'

    def region(self, indent, size, loop_depth, top, symbolic):
        """The block of a region, symbolic or not."""
        outer, self.symbolic = self.symbolic, self.symbolic or symbolic
        self.block(indent, size, loop_depth, top)
        self.symbolic = outer

    def hinted(self, cond):
        """cond, as the condition of an `if` (with a mode where programs have them)."""
        mode, symbolic = self.mode()
        return (f'pbc.hint({cond}{mode})' if mode else cond), symbolic

    def if_(self, indent, size, loop_depth, top):
        size, top = max(1, size // 2), top and indent == 1
        test, symbolic = self.hinted(self.condition())
        self.emit(indent, f'if {test}:')
        self.region(indent + 1, size, loop_depth, top, symbolic)
        # (an elif is an if in the else branch: inside this conditional)
        outer, self.symbolic = self.symbolic, self.symbolic or symbolic
        if self.rng.random() < 0.3:
            test, inner = self.hinted(self.condition())
            self.emit(indent, f'elif {test}:')
            self.region(indent + 1, size, loop_depth, top, inner)
            self.symbolic = self.symbolic or inner
        if self.rng.random() < 0.6:
            self.emit(indent, 'else:')
            self.region(indent + 1, size, loop_depth, top, False)
        self.symbolic = outer

    def while_(self, indent, size, loop_depth):
        # (a pbc.Loop in a tenth of the loops; in float programs, which are differentiated,
        # only outside every region, and before any early return, after which the code runs
        # in a branch: derivatives need an evaluated pbc.Loop (in symbolic code, a symbolic
        # one, which cannot carry them))
        if self.rng.random() < 0.1 and (self.K.exact or indent == 1 and not self.returned
                                        and type(self) is Program):
            return self.legacy_loop(indent, size, loop_depth)
        self.loops += 1
        c = f'c{self.loops}'
        self.counters.append(c)
        self.emit(indent, f'{c} = UInt32(0)')
        place = f'UInt32({self.rng.choice(self.places)} & 3)' if self.T != 'UInt32' else \
            f'({self.rng.choice(self.places)} & 3)'
        bound = self.rng.choice(('3', '(k & 3)', '(k % 4)') if not self.K.integer else
                                ('3', '(k & 3)', place))
        mode, symbolic = self.mode()
        if 'evaluated' in mode and self.rng.random() < 0.5:
            # (each iteration on just the lanes still in the loop: what it reads as wide as
            # the loop must be loop state, which `include` makes it)
            read = SCALARS + ('v', 'lst', 'd', 'o', 'k', 'm') + ('rng',) * self.pcg + \
                ('u',) * bool(self.targets) + ('p',) * self.ptr + ('tn',) * self.tensor + \
                ('mx',) * self.matrix + ('loc',) * self.local + ('j',) * self.j + \
                tuple(self.counters[:-1])
            mode += f", compress=True, include=[{', '.join(read)}]"
        if self.rng.random() < 0.25:
            # (a for loop over a JIT range: a JIT loop, its counter the loop variable,
            # bound anew each iteration: 0, 1, ... where a while loop's counts from 1)
            bound = 'UInt32(3)' if bound == '3' else bound
            self.emit(indent, f'for {c} in pbc.hint(range({bound}), '
                              f'max_iterations={MAX_ITERATIONS}{mode}):')
        else:
            self.emit(indent, f'while pbc.hint({c} < {bound}, '
                              f'max_iterations={MAX_ITERATIONS}{mode}):')
            self.emit(indent + 1, f'{c} += 1')
        jumps, self.jumps = self.jumps, True
        self.region(indent + 1, max(1, size // 2), loop_depth + 1, False, symbolic)
        self.jumps = jumps
        self.counters.pop()

    def legacy_loop(self, indent, size, loop_depth):
        """A pbc.Loop (Dr.Jit 0.x's loop object) over every place, bounded as while_'s
        loops. Its body changes places in place only (docs/semantics.md, rule 8: a symbolic
        pbc.Loop cannot follow a body that rebinds a state variable that other names share)
        and has no `break` or `continue` of its own (it is a Python loop)."""
        self.loops += 1
        c = f'c{self.loops}'
        self.emit(indent, f'{c} = UInt32(0)')
        state = ', '.join((c,) + self.state_names() + tuple(self.counters))
        self.counters.append(c)
        self.emit(indent, f"loop{self.loops} = pbc.Loop('l{self.loops}', "
                          f'state=lambda: ({state}))')
        bound = self.rng.choice(('3', '(k & 3)', '(k % 4)'))
        self.emit(indent, f'while loop{self.loops}({c} < {bound}):')
        self.emit(indent + 1, f'{c} += 1')
        jumps, only, self.jumps, self.in_place_only = self.jumps, self.in_place_only, False, True
        # (symbolic as the flags say: regions in it get no mode 'evaluated')
        self.region(indent + 1, max(1, size // 2), loop_depth + 1, False, True)
        self.jumps, self.in_place_only = jumps, only
        self.counters.pop()

    def state_names(self):
        """The names of every place and generator (a pbc.Loop's state)."""
        return ('a', 'b', 's', 't', 'y', 'z', 'v', 'lst', 'd', 'o', 'm') + \
            ('rng',) * self.pcg + ('u',) * bool(self.targets) + ('p',) * self.ptr + \
            ('tn',) * self.tensor + ('mx',) * self.matrix + ('loc',) * self.local + \
            ('j',) * self.j

    def index_statement(self, indent, in_place=False):
        """The index j changed in place (it stays in 0..7), right after an addition into
        acc at it or not, or bound to a new value."""
        if self.rng.random() < 0.4:
            self.emit(indent, f'pbc.scatter_add(acc, {self.expr()}, j)')
        if in_place or self.rng.random() < 0.7:
            self.emit(indent, f'j ^= {self.rng.choice((1, 2, 4, 5))}')
        else:
            self.emit(indent, f'j = ({self.index()}) & 7')

    def local_statement(self, indent):
        """A store into local memory, or an entry changed through a read and a store."""
        at = f'loc[{self.index()} % 2]'
        if self.rng.random() < 0.5:
            self.emit(indent, f'{at} = {self.expr()}')
        else:
            self.augmented(indent, at)

    def tensor_statement(self, indent, in_place=False):
        """`tn op= e` (the tensor changed in place), or `tn` bound to a new tensor (of one
        entry per lane: `e` may be of width 1, `t = T(3)`, which would make a tensor of
        shape (1,), whose in-place change by a lane's value in a symbolic loop cannot
        broadcast)."""
        if in_place or self.rng.random() < 0.7:
            self.augmented(indent, 'tn')
        else:
            self.emit(indent, f'tn = {TENSORS[self.T]}({self.expr()} + {self.K.of_k} * 0)')

    def in_place_statement(self, indent, size, loop_depth):
        """A statement of a pbc.Loop's body, at any depth: it binds no place."""
        r = self.rng.random()
        if self.tensor and r < 0.05:
            self.tensor_statement(indent, in_place=True)
        elif self.local and r < 0.1:
            self.local_statement(indent)
        elif self.j and r < 0.13:
            self.index_statement(indent, in_place=True)
        elif r < 0.17:
            self.masked(indent)
        elif self.matrix and r < 0.2:
            self.matrix_statement(indent)
        elif r < 0.4:
            self.augmented(indent)
        elif r < 0.45 and self.whole:
            op = self.rng.choice(self.operators())
            self.emit(indent, f'v {op}= {self.rng.choice(self.places + self.whole)}')
        elif r < 0.6 and indent < 6:
            self.if_(indent, size, loop_depth, False)
        elif r < 0.7 and indent < 6 and loop_depth <= self.deep:
            self.while_(indent, size, loop_depth)
        elif r < 0.75 and loop_depth > 0 and self.jumps:
            self.emit(indent, f'if {self.hinted(self.condition())[0]}:')
            self.emit(indent + 1, self.rng.choice(('break', 'continue')))
        elif r < 0.82:
            p, q = self.rng.sample(self.places, 2)
            self.emit(indent, f'pbc.switch({self.index()} % 4, CALLS, {p}, {q}'
                              f'{self.mode()[0]})')
        elif r < 0.87 and self.whole:
            self.scatter_add(indent)
        elif r < 0.92 and self.has_m:
            self.emit(indent, f'm {self.rng.choice("&|^")}= {self.condition()}')
        elif r < 0.96 and self.pcg:
            self.draw(indent, in_place=True)
        else:
            self.augmented(indent)


class Target(Program):
    """A call target of a program, `@pbc.syntax def name(x, y, k)`: statements over its
    arguments x and y (which it may change in place: then the caller's objects change)
    and a local w (or an alias of one of them), with conditionals, loops (two deep, inside
    those of the call) and calls over CALLS; it returns a new object. Its regions are never
    evaluated by request: a symbolic call records it."""

    def __init__(self, rng, kind, aliases, modes, name, size, pcg, inner=()):
        self.rng, self.kind, self.aliases, self.name, self.pcg = rng, kind, aliases, name, pcg
        self.inner = inner
        self.lines, self.loops, self.counters = [], 0, []
        self.places, self.whole, self.targets, self.deep = ('x', 'y', 'w') + CELL, (), None, 1
        self.modes, self.symbolic, self.has_m = modes, True, False
        self.in_place_only, self.jumps, self.tensor, self.matrix = False, True, False, False
        self.returned = self.local = self.j = self.plain = self.unrolled = False
        self.K = KINDS[kind]
        self.T = self.K.T
        self.group = {p: p for p in self.places}
        # (a plain call may pass one object as both: where a region binds x to y, it may
        # bind x to the object it has, which the oracle's rule for regions does not know)
        self.join('x', 'y')
        self.lines += ['@pbc.syntax', f'def {name}(x, y, k, c{", rng" if pcg else ""}):']
        if aliases and self.rng.random() < 0.3:
            self.alias(1, 'w', self.rng.choice(('x', 'y')))
        else:
            self.emit(1, f'w = {self.T}({self.literal()}) + y')
        self.block(1, max(1, size // 2), loop_depth=0)
        e = self.expr()
        self.emit(1, 'return ' + (f'({e} + 0)' if e in self.places else e))

    def state_names(self):
        return ('x', 'y', 'w', 'c') + ('rng',) * self.pcg

    def call(self, indent):
        """As Program.call (over CALLS), or a call of the targets defined before this one
        (`inner`): through pbc.switch (an index past them calls nothing) or plain, on two of
        x, y, w (maybe one object) and c; its result assigned to a place, or not. (Never
        c's entries as arguments: the callee may store into c, after which, on the lanes
        that do not call it, plain Python keeps the entry's object and pbc a new one.)"""
        if not self.inner or self.rng.random() < 0.5:
            return super().call(indent)
        p, q = self.rng.sample(('x', 'y', 'w'), 2)
        if self.rng.random() < 0.1:
            p = q
        args = f'{p}, {q}, k, c' + (', rng' if self.pcg else '')
        if self.rng.random() < 0.3:
            call = f'{self.rng.choice(self.inner).name}({args})'
        else:
            names = ''.join(f'{g.name}, ' for g in self.inner)
            call = f'pbc.switch({self.index()} % {len(self.inner) + 1}, ({names}), {args}' \
                   f'{self.mode()[0]})'
        self.emit(indent, (f'{self.rng.choice(self.places)} = ' if self.rng.random() < 0.5
                           else '') + call)

    def alias(self, indent, a=None, b=None):
        """As Program.alias, never of c's entries: they stay objects of their own (what a
        call stores into them is a new object in the caller's container on every lane, as
        after a branch, where plain Python keeps the old one on the lanes that do not call
        the target: only objects no other place is bound to look the same either way)."""
        if a is None:
            a, b = self.rng.sample(('x', 'y', 'w'), 2)
        if a in CELL or b in CELL:
            return False
        return super().alias(indent, a, b)


# ---- running it ------------------------------------------------------------------------------
def inputs(seed, kind, lanes=LANES):
    """Per lane: the values of a, b, v (3), lst (2), d['p'], o.p, o.q and acc's entry."""
    rng = random.Random(seed)
    if kind == 'uint':
        def draw():
            return rng.choice((0, 1, 2, 3, 7, 100, 12345, 0xFFFFFFFF, rng.getrandbits(32)))
    elif kind == 'int':
        def draw():
            return rng.choice((0, 1, -1, 2, 7, -100, 12345, 2**31 - 1, -2**31,
                               rng.getrandbits(32) - 2**31))
    elif kind == 'uint64':
        def draw():
            return rng.choice((0, 1, 2, 3, 7, 100, 0xFFFFFFFF, 2**64 - 1, rng.getrandbits(64)))
    elif kind == 'int64':
        def draw():
            return rng.choice((0, 1, -1, 2, 7, -100, 2**31, 2**63 - 1, -2**63,
                               rng.getrandbits(64) - 2**63))
    else:
        def draw():
            return round(rng.uniform(-1, 1), 3)
    return [[draw() for _ in range(lanes)] for _ in range(11)]


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
        elif isinstance(x, LaneMatrix) or pbc.is_matrix_v(x):
            out += [x[i][j] for i in range(3) for j in range(3)]
        elif hasattr(x, 'x') and not isinstance(x, (int, float)) and hasattr(x, 'z'):
            out += [x[0], x[1], x[2]]
        else:
            out.append(x)
    return out


@functools.lru_cache(maxsize=4)
def _lane_code(source):
    """The code of the lane-by-lane program (the finite differences run it many times)."""
    return compile(lane_source(source), '<program>', 'exec')


def run_lanes(source, values, kind):
    """Per lane, the program's result and arguments afterwards (each a list of Python
    numbers; acc's entry last), from plain Python on the lane's scalars."""
    Scalar = KINDS[kind].lane
    Vector, Obj = lane_vector(Scalar), struct_type(Scalar)
    ns = dict(UInt32=LaneU32, Int32=LaneI32, Float=LaneF32, Float64=LaneF64, pbc=_Hint,
              UInt64=LaneU64, Int64=LaneI64,
              fresh=fresh, CALLS=CALLS[kind], Ptr=_LanePtr, TensorXu=LaneU32,
              __pbc_ctl__=_LaneCtl, _ifexp=_ifexp,
              TensorXi=LaneI32, TensorXf=LaneF32, TensorXf64=LaneF64,
              Matrix3f=lambda *e: LaneMatrix(Vector, e),
              Matrix3f64=lambda *e: LaneMatrix(Vector, e))
    exec(_lane_code(source), ns)
    acc = [Scalar(x) for x in values[10]]
    out = []
    for lane in range(len(values[0])):
        ns['PCG32'] = lambda size, lane=lane: LanePCG32(lane)      # (the lane's stream)
        x = [Scalar(row[lane]) for row in values]
        args = (x[0], x[1], Vector(*x[2:5]), [x[5], x[6]], {'p': x[7]}, Obj(x[8], x[9]),
                LaneU32(lane), acc)
        result = ns['f'](*args)
        out.append([_value(e) for e in flatten_result(result, Struct)] +
                   [_value(e) for e in flatten_result(args[:6], Struct)])
    # (acc is complete once every lane has run)
    return [lane + [acc[i].v] for i, lane in enumerate(out)]


def pbc_struct(T, dataclass=False):
    """The class of the argument o: a DRJIT_STRUCT, or a dataclass (pbc follows both)."""
    if dataclass:
        return dataclasses.make_dataclass('Obj', [('p', T), ('q', T)],
                                          namespace={'bump': _struct_bump})
    return type('Obj', (), dict(DRJIT_STRUCT={'p': T, 'q': T}, __init__=_struct_init,
                                bump=_struct_bump))


def pbc_arguments(values, backend, kind, a=None, dataclass=False):
    """The program's arguments as arrays of `backend` (a module of array types), with `a`
    for the first where given (o a dataclass's instance, with `dataclass`)."""
    T = getattr(backend, KINDS[kind].T)
    x = [T(row) for row in values]
    x[0] = x[0] if a is None else a
    v = getattr(backend, KINDS[kind].vector)(*x[2:5])
    k = backend.UInt32(list(range(len(values[0]))))
    return (x[0], x[1], v, [x[5], x[6]], {'p': x[7]}, pbc_struct(T, dataclass)(x[8], x[9]), k,
            x[10])


def pbc_outputs(result, args):
    """The arrays (or Python numbers) of the program's outputs, in run_lanes's order."""
    Obj = type(args[5])
    return [x.array if pbc.is_tensor_v(x) else x
            for x in flatten_result(result, Obj)] + flatten_result(args[:6], Obj) + [args[7]]


def run_pbc(fn, values, backend, kind):
    """fn (the program under @pbc.syntax) on arrays of `backend`; per lane, as run_lanes."""
    args = pbc_arguments(values, backend, kind, dataclass=fn.dataclass)
    lanes = len(values[0])
    columns = [list(p.numpy()) if hasattr(p, 'numpy') else [p] * lanes
               for p in pbc_outputs(fn(*args), args)]
    return [[c[lane] if len(c) > 1 else c[0] for c in columns] for lane in range(lanes)]


def compile_program(source, path, kind, backend):
    """The program under @pbc.syntax, over the array types of `backend` (a module), as a
    function of a file (for @pbc.syntax to read its source); `fn.dataclass`: whether its
    argument o is a dataclass's instance (for half the programs) or a DRJIT_STRUCT's."""
    with open(path, 'w') as f:
        f.write(source)
    ns = dict(UInt32=backend.UInt32, Int32=backend.Int32, Float=backend.Float,
              Float64=backend.Float64, PCG32=backend.PCG32, pbc=pbc, CALLS=CALLS[kind],
              UInt64=backend.UInt64, Int64=backend.Int64,
              Ptr=backend.Ptr, Matrix3f=backend.Matrix3f, Matrix3f64=backend.Matrix3f64,
              **{t: getattr(backend, t) for t in TENSORS.values()})
    exec(compile(source, path, 'exec'), ns)
    fn = pbc.syntax(ns['f'])
    fn.dataclass = zlib.crc32(source.encode()) % 2 == 1
    return fn


def mismatch(want, got, kind):
    """None, or where the lanes' values `got` (run_pbc) are not `want` (run_lanes)."""
    for lane, (w, g) in enumerate(zip(want, got)):
        for i, (x, y) in enumerate(zip(w, g)):
            if not same(x, y, kind, summed=i == len(w) - 1):      # (acc's entry)
                return f'lane {lane}, value {i}: plain Python {x}, pbc {y}'
    return None


def same(a, b, kind, summed=False):
    """Whether the oracle's value a is pbc's b (an integer or float of NumPy's). `summed`:
    a sum of the lanes' scatter-adds (acc), which pbc adds in another order: float sums
    agree within rounding only."""
    if KINDS[kind].integer:
        return int(a) == int(b)
    if math.isnan(a) and math.isnan(b):
        return True
    if KINDS[kind].exact and not summed:
        return float(a) == float(b)
    tol = 1e-5 if KINDS[kind].T == 'Float' else 1e-9
    return math.isclose(a, b, rel_tol=tol, abs_tol=tol)
