"""Differential fuzzing of control flow: random loop/branch/call programs run through
pbc.while_loop / pbc.if_stmt / pbc.switch and through a lane-by-lane pure-Python
interpreter.

Hypothesis draws a width N (lanes; most not a multiple of the 16-lane vectors) and a program
over the variables u0 u1 (UInt32), i0 i1 (Int32), f0 f1 (Float32) and b0 (Bool), which it
reads and writes, and the read-only inputs n0 n1 (UInt32 trip counts in [0, 5]) and k (the
lane index). Statements:

* assignments of random expressions: + - * ~ - with 32-bit wraparound, & | ^, shifts by
  literal amounts, min/max, select, comparisons, casts between all four types (float -> int
  truncates and saturates, NaN gives 0), float abs and sqrt(abs(x)). Every op is exactly
  specified per lane by IEEE 754 or two's complement, so the oracle (Python ints wrapped to
  32 bits, NumPy float32 scalars) must agree bit for bit. Float assignments clamp to
  [-1e4, 1e4] (NaN-ignoring min/max also turn a NaN into a bound), which keeps values
  finite across iterations; float min/max map -0 to +0 on both sides (IEEE leaves the sign
  of min(-0, +0) open);
* scatter_add into a UInt32 histogram and scatter_reduce(Max) into an Int32 one (both
  commutative, so the order of the lanes' writes does not matter), optionally masked;
* `if` on a random Bool (if_stmt over the variables either branch writes, plus a random
  subset of read-only ones), nested;
* calls: pbc.switch on a random UInt32 & 3 over 2-3 target blocks (which take every
  variable as an argument and return the ones any of them writes; lanes whose index
  selects no target get zeros), nested in and around the other statements;
* `while` loops that terminate: a counter c starting at 0 (a width-1 literal or a full
  array) and stepped by 1 at the end of the body, the condition `c < bound` with a bound
  <= 5 (an input, a literal, or an expression of the state capped with & 3 / minimum), and
  sometimes `& <random Bool>` as an early exit; nested two deep, bodies read the counters;
* pbc.eval / pbc.schedule of some variables (no-ops for the values), where nothing records.

Each program runs with every statement symbolic, every statement evaluated, with a random
mode per statement (an evaluated loop cannot nest in a symbolic one: those stay symbolic),
with mode=None under random SymbolicLoops / SymbolicConditionals / SymbolicCalls flags,
and with JitFlag.OptimizeLoops, OptimizeCalls and MergeFunctions on and off. All runs must
match the oracle: the final variables (ints exactly, floats bit for bit) and both
histograms.

On failure the test prints the program as a standalone script. The tests at the end
are minimal reproductions of runtime bugs the fuzzer found (now fixed); AVOID_* below can
steer the generator away from such a bug while it is open.
"""

import inspect
import math

import numpy as np
import suite_backend
from conftest import VECTOR_WIDTHS, vector_width
from fuzzing import FUZZ, examples
from hypothesis import given, note, settings
from hypothesis import strategies as st
from suite_backend import Bool, Float, Int32, UInt32

import pbc

U, I, F, B = 'uint32', 'int32', 'float32', 'bool'
CLASS = {U: 'UInt32', I: 'Int32', F: 'Float', B: 'Bool'}
VARS = {U: ('u0', 'u1'), I: ('i0', 'i1'), F: ('f0', 'f1'), B: ('b0',)}
ALL_VARS = tuple(v for t in (U, I, F, B) for v in VARS[t])
TYPE_OF = {v: t for t in VARS for v in VARS[t]}
INPUTS = ('n0', 'n1', 'k')                 # UInt32, read only
HIST = 8                                   # histogram bins (indices are masked with & 7)
CLAMP = 1e4
M32 = 0xFFFFFFFF

INT_LITS = {U: (0, 1, 2, 3, 5, 7, 31, 255, 65535, 0x80000000, M32),
            I: (0, 1, -1, 2, -3, 7, 100, -2**31, 2**31 - 1)}
FLOAT_LITS = (0.0, -0.0, 0.5, 1.0, -1.0, 1.5, 2.0, -3.0, 0.1, 100.0, 1e4)
ARITH = {'add': '+', 'sub': '-', 'mul': '*'}
BITWISE = {'and': '&', 'or': '|', 'xor': '^'}
CMP = {'lt': '<', 'le': '<=', 'gt': '>', 'ge': '>=', 'eq': '==', 'ne': '!='}


# ---- helpers shared by the generated pbc programs (and printed with them) -----------------
def canon0(x):
    """+0 for either zero: IEEE min/max may return -0 or +0 for (-0, +0)."""
    return pbc.select(x == 0, 0.0, x)


def fmin(a, b):
    return canon0(pbc.fmin(a, b))


def fmax(a, b):
    return canon0(pbc.fmax(a, b))


def clamp(x):
    """Keeps float variables finite across iterations (a NaN becomes a bound)."""
    return pbc.fmin(pbc.fmax(x, -1e4), 1e4)


HELPERS = (canon0, fmin, fmax, clamp)
NAMESPACE = dict(np=np, pbc=pbc, Bool=Bool, Float=Float, Int32=Int32, UInt32=UInt32,
                 **{f.__name__: f for f in HELPERS})


# ---- lane-by-lane semantics (the oracle) --------------------------------------------------
def wrap(t, v):
    v &= M32
    return v - (1 << 32) if t == I and v >= 1 << 31 else v


def py_fminmax(a, b, fn):
    """NaN-ignoring float32 min/max; zeros become +0 (as fmin/fmax above)."""
    r = b if math.isnan(a) else a if math.isnan(b) else fn(a, b)
    return np.float32(0.0) if r == 0 else np.float32(r)


def py_clamp(v):
    """clamp() above: NaN gives -1e4 (max returns -1e4, then min keeps it); no zero ties."""
    if math.isnan(v):
        return np.float32(-CLAMP)
    return np.float32(min(max(v, np.float32(-CLAMP)), np.float32(CLAMP)))


def py_cast(src, dst, v):
    if dst == B:
        return bool(v != 0)
    if src == B:
        return np.float32(v) if dst == F else int(v)
    if dst == F:
        return np.float32(v) if src != F else v        # ints < 2**53: one rounding
    if src == F:
        if math.isnan(v):
            return 0
        lo, hi = (0, M32) if dst == U else (-2**31, 2**31 - 1)
        f = float(v)
        return lo if f <= lo else hi if f >= hi else math.trunc(f)
    return wrap(dst, v)


def ev(e, env):
    """The value of expression e in one lane (env: name -> Python int/bool, np.float32)."""
    kind, t = e[0], e[1]
    if kind == 'var':
        return env[e[2]]
    if kind == 'lit':
        return np.float32(e[2]) if t == F else e[2]
    if kind == 'bin':
        op, a, b = e[2], ev(e[3], env), ev(e[4], env)
        if t == F:
            if op in ('min', 'max'):
                return py_fminmax(a, b, min if op == 'min' else max)
            return {'add': a + b, 'sub': a - b, 'mul': a * b}[op]
        r = {'add': lambda: a + b, 'sub': lambda: a - b, 'mul': lambda: a * b,
             'and': lambda: a & b, 'or': lambda: a | b, 'xor': lambda: a ^ b,
             'min': lambda: min(a, b), 'max': lambda: max(a, b)}[op]()
        return bool(r) if t == B else wrap(t, r)
    if kind == 'cmp':
        a, b = ev(e[3], env), ev(e[4], env)
        return bool({'lt': a < b, 'le': a <= b, 'gt': a > b, 'ge': a >= b, 'eq': a == b,
                     'ne': a != b}[e[2]])
    if kind == 'sel':
        return ev(e[3], env) if ev(e[2], env) else ev(e[4], env)
    if kind == 'shl':
        return wrap(t, ev(e[2], env) << e[3])
    if kind == 'shr':
        return ev(e[2], env) >> e[3]              # arithmetic for Int32, logical for UInt32
    if kind == 'neg':
        a = ev(e[2], env)
        return -a if t == F else wrap(t, -a)
    if kind == 'inv':
        a = ev(e[2], env)
        return not a if t == B else wrap(t, ~a)
    if kind == 'abs':
        return np.abs(ev(e[2], env))
    if kind == 'sqrt':
        return np.sqrt(np.abs(ev(e[2], env)))
    if kind == 'cast':
        return py_cast(e[2][1], t, ev(e[2], env))
    if kind == 'bound':                           # a loop bound, <= 5
        a = ev(e[3], env)
        return a & 3 if e[2] == 'and3' else min(a, 4)
    raise AssertionError(kind)


def run_block(block, env, hists):
    for s in block:
        kind = s[0]
        if kind == 'assign':
            _, var, e = s
            v = ev(e, env)
            env[var] = py_clamp(v) if TYPE_OF[var] == F else v
        elif kind == 'scatter':
            _, which, val, idx, active = s
            if active is None or ev(active, env):
                h, i, v = hists[which], ev(idx, env) & (HIST - 1), ev(val, env)
                h[i] = (h[i] + v) & M32 if which == 'add' else max(h[i], v)
        elif kind == 'if':
            _, cond, then, other, _state, _mode = s
            run_block(then if ev(cond, env) else other, env, hists)
        elif kind == 'eval':
            pass
        elif kind == 'call':
            _, sel, targets, state, _mode = s
            i = ev(sel, env)
            if i < len(targets):
                local = dict(env)                 # a target sees copies of the variables
                run_block(targets[i], local, hists)
                for v in state:
                    env[v] = local[v]
            else:                                 # no target: zeros
                for v in state:
                    env[v] = {U: 0, I: 0, F: np.float32(0), B: False}[TYPE_OF[v]]
        elif kind == 'while':
            _, c, _cinit, bound, extra, body, _state, _mode = s
            saved = env.get(c)
            env[c] = 0
            while env[c] < ev(bound, env) and (extra is None or ev(extra, env)):
                run_block(body, env, hists)
                env[c] += 1
            env[c] = saved
        else:
            raise AssertionError(kind)


def oracle(prog, inputs, n):
    hists = {'add': [0] * HIST, 'max': [0] * HIST}
    outs = {v: [] for v in ALL_VARS}
    with np.errstate(all='ignore'):
        for lane in range(n):
            env = {name: (np.float32(a[lane]) if a.dtype == np.float32 else
                          bool(a[lane]) if a.dtype == np.bool_ else int(a[lane]))
                   for name, a in inputs.items()}
            run_block(prog, env, hists)
            for v in ALL_VARS:
                outs[v].append(env[v])
    return outs, hists


# ---- program generation -------------------------------------------------------------------
class Gen:
    """Draws a random program (a nested list of statement tuples)."""

    def __init__(self, draw):
        self.draw = draw
        self.loops = 0
        self.loops_in_branch = None    # loops around this point inside the outermost if

    def int(self, lo, hi):
        return self.draw(st.integers(lo, hi))

    def coin(self, num=1, den=2):
        return self.int(0, den - 1) < num

    def pick(self, seq):
        return self.draw(st.sampled_from(seq))

    def readable(self, t, counters):
        names = list(VARS[t])
        if t == U:
            names += list(INPUTS) + list(counters)
        return names

    def expr(self, t, depth, counters):
        """A random expression of type t (nesting at most `depth` more levels)."""
        if depth <= 0 or self.coin(1, 3):
            if self.coin(3, 4):
                return ('var', t, self.pick(self.readable(t, counters)))
            return self.literal(t)
        d = depth - 1
        kinds = {U: ('bin', 'bin', 'bin', 'sel', 'shift', 'neg', 'inv', 'cast'),
                 I: ('bin', 'bin', 'bin', 'sel', 'shift', 'neg', 'inv', 'cast'),
                 F: ('bin', 'bin', 'bin', 'sel', 'neg', 'abs', 'sqrt', 'cast'),
                 B: ('cmp', 'cmp', 'bin', 'sel', 'inv', 'cast')}[t]
        kind = self.pick(kinds)
        if kind == 'bin':
            ops = {U: (*ARITH, *BITWISE, 'min', 'max'), I: (*ARITH, *BITWISE, 'min', 'max'),
                   F: (*ARITH, 'min', 'max'), B: tuple(BITWISE)}[t]
            return ('bin', t, self.pick(ops), self.expr(t, d, counters),
                    self.expr(t, d, counters))
        if kind == 'cmp':
            s = self.pick((U, I, F))
            return ('cmp', B, self.pick(tuple(CMP)), self.expr(s, d, counters),
                    self.expr(s, d, counters))
        if kind == 'sel':
            return ('sel', t, self.expr(B, d, counters), self.expr(t, d, counters),
                    self.expr(t, d, counters))
        if kind == 'shift':
            return (self.pick(('shl', 'shr')), t, self.expr(t, d, counters), self.int(0, 31))
        if kind == 'cast':
            src = self.pick(tuple(x for x in (U, I, F, B) if x != t))
            return ('cast', t, self.expr(src, d, counters))
        return (kind, t, self.expr(t, d, counters))

    def literal(self, t):
        if t == B:
            return ('lit', B, self.coin())
        return ('lit', t, self.pick(FLOAT_LITS if t == F else INT_LITS[t]))

    def block(self, depth, loop_depth, counters, lo=1, hi=4):
        return [self.stmt(depth, loop_depth, counters) for _ in range(self.int(lo, hi))]

    def stmt(self, depth, loop_depth, counters):
        kinds = ['assign'] * 4 + ['eval']
        if not (AVOID_LOOP_RERUN and self.loops_in_branch):
            kinds += ['scatter'] * 2
        if depth < 3:
            kinds += ['if'] * 2 + ['call']
            if loop_depth < 2:
                kinds += ['while'] * 3
        return self.make(self.pick(kinds), depth, loop_depth, counters)

    def program(self):
        """1-5 statements, at least one of them a loop."""
        prog = self.block(0, 0, (), 0, 4)
        prog.insert(self.int(0, len(prog)), self.make('while', 0, 0, ()))
        return prog

    def make(self, kind, depth, loop_depth, counters):
        if kind == 'assign':
            var = self.pick(ALL_VARS)
            return ('assign', var, self.expr(TYPE_OF[var], self.int(0, 3), counters))
        if kind == 'eval':
            return ('eval', self.pick(('eval', 'schedule')),
                    tuple(v for v in ALL_VARS if self.coin(1, 3)))
        if kind == 'scatter':
            which = self.pick(('add', 'max'))
            val = self.expr(U if which == 'add' else I, 2, counters)
            active = self.expr(B, 1, counters) if self.coin() else None
            return ('scatter', which, val, self.expr(U, 2, counters), active)
        mode = self.pick(('symbolic', 'evaluated'))
        if kind == 'call':
            sel = ('bin', U, 'and', self.expr(U, 2, counters), ('lit', U, 3))
            targets = [self.block(depth + 1, loop_depth, counters, 0, 3)
                       for _ in range(self.int(2, 3))]
            state = self.state(set().union(*map(written, targets)))
            return ('call', sel, targets, state, mode)
        if kind == 'if':
            cond = self.expr(B, 2, counters)
            saved = self.loops_in_branch
            self.loops_in_branch = saved or 0
            then = self.block(depth + 1, loop_depth, counters, 0, 3)
            other = self.block(depth + 1, loop_depth, counters, 0, 3)
            self.loops_in_branch = saved
            state = self.state(written(then) | written(other))
            return ('if', cond, then, other, state, mode)
        c = f'c{self.loops}'
        self.loops += 1
        inner = counters + (c,)
        cinit = self.pick(('literal', 'arange1', 'array'))
        bk = self.int(0, 3)
        if bk == 0:
            bound = ('var', U, self.pick(('n0', 'n1')))
        elif bk == 1:
            bound = ('lit', U, self.int(0, 3))
        else:
            bound = ('bound', U, self.pick(('and3', 'min4')), self.expr(U, 2, inner))
        extra = self.expr(B, 2, inner) if self.coin() else None
        saved = self.loops_in_branch
        if saved is not None:
            self.loops_in_branch += 1
        body = self.block(depth + 1, loop_depth + 1, inner, 1, 4)
        self.loops_in_branch = saved
        if AVOID_NARROW_LOOP and cinit != 'array' and bound[0] != 'var' and scatters(body):
            cinit = 'array'
        return ('while', c, cinit, bound, extra, body, self.state(written(body)), mode)

    def state(self, written_vars):
        """The variables a branch/loop returns: those written, plus some only read."""
        extra = {v for v in ALL_VARS if v not in written_vars and self.coin(1, 4)}
        return tuple(v for v in ALL_VARS if v in written_vars | extra)


def written(block):
    out = set()
    for s in block:
        if s[0] == 'assign':
            out.add(s[1])
        elif s[0] == 'if':
            out |= set(s[4])
        elif s[0] == 'while':
            out |= set(s[6])
        elif s[0] == 'call':
            out |= set(s[3])
    return out


def scatters(block):
    return any(s[0] == 'scatter' or (s[0] == 'if' and (scatters(s[2]) or scatters(s[3]))) or
               (s[0] == 'while' and scatters(s[5])) or
               (s[0] == 'call' and any(map(scatters, s[2]))) for s in block)


# ---- pbc source ---------------------------------------------------------------------------
def src(e, bare=False):
    """pbc source of expression e; bare: a literal may be a Python scalar (the other operand
    of its binary op is an array)."""
    kind, t = e[0], e[1]
    if kind == 'var':
        return e[2]
    if kind == 'lit':
        v = e[2]
        r = repr(float(v)) if t == F else repr(v)
        return r if bare and t != B else f'{CLASS[t]}({r})'

    def pair(a, b):
        # Two literals would make a Python scalar expression: keep them arrays.
        both = a[0] == 'lit' and b[0] == 'lit'
        return src(a, not both), src(b, not both)
    if kind in ('bin', 'cmp'):
        op = e[2]
        a, b = pair(e[3], e[4])
        if op in ('min', 'max'):
            return f'f{op}({a}, {b})' if t == F else f'pbc.{op}imum({a}, {b})'
        return f'({a} {ARITH.get(op) or BITWISE.get(op) or CMP[op]} {b})'
    if kind == 'sel':
        return f'pbc.select({src(e[2])}, {src(e[3])}, {src(e[4])})'
    if kind in ('shl', 'shr'):
        return f'({src(e[2])} {"<<" if kind == "shl" else ">>"} {e[3]})'
    if kind == 'neg':
        return f'(-{src(e[2])})'
    if kind == 'inv':
        return f'(~{src(e[2])})'
    if kind == 'abs':
        return f'abs({src(e[2])})'
    if kind == 'sqrt':
        return f'pbc.sqrt(abs({src(e[2])}))'
    if kind == 'cast':
        return f'{CLASS[t]}({src(e[2])})'
    if kind == 'bound':
        x = src(e[3])
        return f'({x} & 3)' if e[2] == 'and3' else f'pbc.minimum({x}, 4)'
    raise AssertionError(kind)


# Switches that keep the generator away from a bug (see the regressions at the end) while
# it is open. AVOID_LOOP_RERUN: scattering loops stay out of branches outside loops, and
# everything is evaluated right after each scattering loop. AVOID_NARROW_LOOP: a loop with
# a scatter in its body gets a full-width counter.
AVOID_LOOP_RERUN = False
AVOID_NARROW_LOOP = False


class Emitter:
    """Writes a program as a pbc function using the functional control-flow API.
    mode: 'symbolic', 'evaluated', 'mixed' (each statement's own drawn mode) or 'default'
    (mode=None: the JitFlags decide)."""

    def __init__(self, mode, n):
        self.mode, self.n, self.lines, self.uid = mode, n, [], 0
        self.in_if = 0
        self.in_call = 0         # inside call targets: evaluated ones see only their lanes
        self.counters = []       # the counters of the loops around, which targets read

    def stmt_mode(self, s, in_symbolic_loop):
        """The mode to pass, and whether a loop (or call) is then symbolic."""
        if self.mode == 'default':       # (inside a symbolic body, what the flag says)
            return None, in_symbolic_loop or pbc.flag(
                pbc.JitFlag.SymbolicCalls if s[0] == 'call' else pbc.JitFlag.SymbolicLoops)
        m = s[-1] if self.mode == 'mixed' else self.mode
        m = 'symbolic' if s[0] == 'while' and in_symbolic_loop else m
        return m, m == 'symbolic'

    def block(self, block, ind, in_sym):
        for s in block:
            self.stmt(s, ind, in_sym)

    def emit(self, ind, line):
        self.lines.append('    ' * ind + line)

    def stmt(self, s, ind, in_sym):
        kind = s[0]
        if kind == 'assign':
            _, var, e = s
            x = src(e)
            self.emit(ind, f'{var} = clamp({x})' if TYPE_OF[var] == F else f'{var} = {x}')
        elif kind == 'scatter':
            _, which, val, idx, active = s
            act = '' if active is None else f', {src(active)}'
            target = 'hist' if which == 'add' else 'hmax'
            fn = 'pbc.scatter_add(' if which == 'add' else 'pbc.scatter_reduce(pbc.ReduceOp.Max, '
            # + zeros(N): every lane scatters, also where all operands are one lane wide. (In
            # a call target, its lanes do so anyway: they may be fewer than N.)
            index = f'({src(idx)} & {HIST - 1})'
            if not self.in_call:
                index += f' + pbc.zeros(UInt32, {self.n})'
            self.emit(ind, f'{fn}{target}, {src(val)}, {index}{act})')
        elif kind == 'eval':
            # A no-op for the values; pbc.eval cannot run while a loop or branch records.
            if not (in_sym or self.in_if or self.in_call):
                self.emit(ind, f'pbc.{s[1]}({", ".join(s[2])})')
        elif kind == 'if':
            _, cond, then, other, state, _ = s
            mode, _ = self.stmt_mode(s, in_sym)
            u = self.uid = self.uid + 1
            params = ', '.join(state)
            ret = f'return ({params}{"," if len(state) == 1 else ""})'
            self.in_if += 1
            for name, blk in ((f'true_{u}', then), (f'false_{u}', other)):
                self.emit(ind, f'def {name}({params}):')
                self.block(blk, ind + 1, in_sym)
                self.emit(ind + 1, ret)
            self.in_if -= 1
            lhs = f'{params}{"," if len(state) == 1 else ""} = ' if state else ''
            self.emit(ind, f'{lhs}pbc.if_stmt(({params}{"," if len(state) == 1 else ""}), '
                           f'{src(cond)}, true_{u}, false_{u}, mode={mode!r})')
        elif kind == 'while':
            _, c, cinit, bound, extra, body, state, _ = s
            mode, symbolic = self.stmt_mode(s, in_sym)
            u = self.uid = self.uid + 1
            params = ', '.join((c,) + state)
            cond = f'({c} < {src(bound)})'
            if extra is not None:
                cond = f'{cond} & {src(extra)}'
            self.emit(ind, f'def body_{u}({params}):')
            self.counters.append(c)
            self.block(body, ind + 1, in_sym or symbolic)
            self.counters.pop()
            self.emit(ind + 1, f'return ({", ".join((c + " + 1",) + state)},)')
            # (a width-1 arange is a value, 0, like the literal)
            init = {'literal': 'UInt32(0)', 'arange1': 'pbc.arange(UInt32, 1)'}.get(cinit) or (
                '(k & 0)' if self.in_call else f'pbc.zeros(UInt32, {self.n})')
            lhs = ', '.join(('_',) + state)
            self.emit(ind, f'{lhs}, = pbc.while_loop(({", ".join((init,) + state)},), '
                           f'lambda {params}: {cond}, body_{u}, mode={mode!r})')
            if AVOID_LOOP_RERUN and symbolic and scatters(body) and not in_sym:
                assert not self.in_if
                self.emit(ind, f'pbc.eval(hist, hmax, {", ".join(ALL_VARS)})')
        elif kind == 'call':
            _, sel, targets, state, _ = s
            mode, symbolic = self.stmt_mode(s, in_sym)
            u = self.uid = self.uid + 1
            args = ', '.join(ALL_VARS + INPUTS + tuple(self.counters))
            ret = ', '.join(state) + (',' if len(state) == 1 else '')
            self.in_call += 1
            for j, blk in enumerate(targets):
                self.emit(ind, f'def call_{u}_{j}({args}):')
                self.block(blk, ind + 1, in_sym or symbolic)
                self.emit(ind + 1, f'return ({ret})')
            self.in_call -= 1
            funcs = ', '.join(f'call_{u}_{j}' for j in range(len(targets)))
            self.emit(ind, f'{ret + " = " if state else ""}pbc.switch({src(sel)}, [{funcs}], '
                           f'{args}, mode={mode!r})')
        else:
            raise AssertionError(kind)


def source(prog, mode, n):
    em = Emitter(mode, n)
    em.emit(0, f'def program(hist, hmax, {", ".join(INPUTS + ALL_VARS)}):')
    em.block(prog, 1, False)
    em.emit(1, f'return {", ".join(ALL_VARS)}')
    return '\n'.join(em.lines)


# ---- inputs, running, checking ------------------------------------------------------------
def make_inputs(rng, n):
    def ints(t):
        info = np.iinfo(t)
        big = rng.integers(info.min, info.max, n, dtype=t, endpoint=True)
        small = rng.integers(-20 if t == I else 0, 20, n).astype(t)
        return np.where(rng.random(n) < 0.5, small, big)

    def floats():
        vals = np.concatenate([rng.integers(-50, 50, n) * 0.5,
                               rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n),
                               [0.0, -0.0, 1e4, -1e4, 0.1]])
        return rng.choice(vals, n).astype(np.float32)

    inp = {'n0': rng.integers(0, 6, n).astype(np.uint32),
           'n1': rng.integers(0, 6, n).astype(np.uint32),
           'k': np.arange(n, dtype=np.uint32)}
    for v in ALL_VARS:
        t = TYPE_OF[v]
        inp[v] = floats() if t == F else (rng.random(n) < 0.5) if t == B else ints(t)
    return inp


def as_array(name, a):
    return {U: UInt32, I: Int32, F: Float, B: Bool}[TYPE_OF.get(name, U)](a)


def run_pbc(prog, inputs, n, mode):
    code = source(prog, mode, n)
    ns = dict(NAMESPACE)
    exec(compile(code, f'<control fuzz, {mode}>', 'exec'), ns)
    hist, hmax = pbc.zeros(UInt32, HIST), pbc.zeros(Int32, HIST)
    outs = ns['program'](hist, hmax, *(as_array(k, inputs[k]) for k in INPUTS + ALL_VARS))
    # Outputs read one at a time: a loop that ran for one must not run (and scatter) again.
    res = {v: np.broadcast_to(o.numpy(), (n,)) for v, o in zip(ALL_VARS, outs)}
    return res, {'add': hist.numpy(), 'max': hmax.numpy()}


def reproducer(prog, inputs, mode, n, flags=()):
    args = ', '.join(f'{CLASS[TYPE_OF.get(k, U)]}(np.array({inputs[k].tolist()!r}, '
                     f"dtype='{inputs[k].dtype}'))" for k in INPUTS + ALL_VARS)
    return '\n'.join(['import numpy as np', 'import pbc',
                      f'from {suite_backend.module.__name__} import Bool, Float, Int32, UInt32', '',
                      ''] +
                     [inspect.getsource(f) for f in HELPERS] +
                     [f'pbc.set_flag(pbc.JitFlag.{f.name}, {v})' for f, v in flags] +
                     ['', source(prog, mode, n), '',
                      f'hist, hmax = pbc.zeros(UInt32, {HIST}), pbc.zeros(Int32, {HIST})',
                      f'outs = program(hist, hmax, {args})',
                      'pbc.eval(hist, hmax, *outs)',
                      'print([o.numpy().tolist() for o in outs])',
                      'print(hist.numpy().tolist(), hmax.numpy().tolist())'])


def compare(got, want, hists, want_hists, what):
    for v in ALL_VARS:
        w = np.array(want[v], dtype={U: np.uint32, I: np.int32, F: np.float32,
                                     B: np.bool_}[TYPE_OF[v]])
        g = got[v]
        assert g.dtype == w.dtype, f'{what}: {v} has dtype {g.dtype}'
        if TYPE_OF[v] == F:           # bit patterns (finite after clamp; -0 is not +0)
            g, w = g.view(np.uint32), w.view(np.uint32)
        np.testing.assert_array_equal(g, w, err_msg=f'{what}: variable {v}', strict=True)
    for h in ('add', 'max'):
        w = np.array(want_hists[h], dtype=np.uint32 if h == 'add' else np.int32)
        np.testing.assert_array_equal(hists[h], w, err_msg=f'{what}: histogram {h}')


def draw_case(data):
    n = data.draw(st.sampled_from((37, 17, 37, 16, 5, 1)))
    prog = Gen(data.draw).program()
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    inputs = make_inputs(rng, n)
    return prog, inputs, n


def check(prog, inputs, n, modes, flags=()):
    want, want_hists = oracle(prog, inputs, n)
    for mode in modes:
        with _flags(flags):
            note(f'Standalone program ({mode}, flags {flags}):\n' +
                 reproducer(prog, inputs, mode, n, flags))
            got, hists = run_pbc(prog, inputs, n, mode)
        compare(got, want, hists, want_hists, f'mode {mode}, flags {flags}')


class _flags:
    def __init__(self, flags):
        self.scopes = [pbc.scoped_set_flag(f, v) for f, v in flags]

    def __enter__(self):
        for s in self.scopes:
            s.__enter__()

    def __exit__(self, *exc):
        for s in reversed(self.scopes):
            s.__exit__(*exc)



@settings(FUZZ, max_examples=examples(60))
@given(st.data())
def test_symbolic_and_evaluated_match_python(data):
    prog, inputs, n = draw_case(data)
    check(prog, inputs, n, ('symbolic', 'evaluated'))


@settings(FUZZ, max_examples=examples(50))
@given(st.data())
def test_mixed_modes_match_python(data):
    prog, inputs, n = draw_case(data)
    check(prog, inputs, n, ('mixed',))
    # mode=None: JitFlag.SymbolicLoops / SymbolicConditionals / SymbolicCalls choose.
    loops, conds, calls = (data.draw(st.booleans()) for _ in range(3))
    check(prog, inputs, n, ('default',), ((pbc.JitFlag.SymbolicLoops, loops),
                                          (pbc.JitFlag.SymbolicConditionals, conds),
                                          (pbc.JitFlag.SymbolicCalls, calls)))


@settings(FUZZ, max_examples=examples(30))
@given(st.data())
def test_loops_conditionals_and_calls_at_every_vector_width(data):
    prog, inputs, n = draw_case(data)
    with vector_width(data.draw(st.sampled_from(VECTOR_WIDTHS))):
        check(prog, inputs, n, ('symbolic',))


@settings(FUZZ, max_examples=examples(50))
@given(st.data())
def test_optimize_loops_on_and_off_agree(data):
    prog, inputs, n = draw_case(data)
    on = (pbc.JitFlag.OptimizeLoops, True)
    off = (pbc.JitFlag.OptimizeLoops, False)
    check(prog, inputs, n, ('symbolic',), (on,))
    check(prog, inputs, n, ('symbolic',), (off,))


@settings(FUZZ, max_examples=examples(30))
@given(st.data())
def test_call_optimizations_on_and_off_agree(data):
    prog, inputs, n = draw_case(data)
    calls, merge = data.draw(st.booleans()), data.draw(st.booleans())
    check(prog, inputs, n, ('symbolic',), ((pbc.JitFlag.OptimizeCalls, calls),
                                           (pbc.JitFlag.MergeFunctions, merge)))


# ---- regressions: minimal reproductions of bugs this fuzzer found ---------------------------
def test_symbolic_loop_runs_once_when_its_outputs_are_read_later():
    hist = pbc.zeros(UInt32, 1)

    def body(c, x):
        pbc.scatter_add(hist, UInt32(1), UInt32(0))
        return c + 1, x + 1

    c, x = pbc.while_loop((UInt32(0), UInt32([0, 0, 0])), lambda c, x: c < 2, body,
                          mode='symbolic')
    pbc.eval()               # the queued scatter, and with it the loop: hist = [6]
    pbc.eval(c, x)           # the loop's outputs: must not scatter again
    assert x.numpy().tolist() == [2, 2, 2]
    assert hist.numpy().tolist() == [6]


def test_two_scattering_loops_in_one_evaluation_run_once_each():
    hist = pbc.zeros(UInt32, 1)

    def body_a(i, x):
        pbc.scatter_add(hist, UInt32(1), UInt32(0))
        return i + 1, UInt32(1)

    def body_b(j):
        pbc.scatter_add(hist, UInt32(1), UInt32(0))
        return (j + 1,)

    _, x = pbc.while_loop((pbc.zeros(UInt32, 4), pbc.zeros(UInt32, 4)), lambda i, x: i < 1,
                          body_a, mode='symbolic')
    pbc.while_loop((pbc.zeros(UInt32, 4),), lambda j: j < 1, body_b, mode='symbolic')
    pbc.eval(hist, x)
    assert x.numpy().tolist() == [1, 1, 1, 1]
    assert hist.numpy().tolist() == [8]          # 4 lanes x 2 loops


def test_scatter_in_a_narrow_symbolic_loop_runs_in_every_lane():
    def run(mode):
        hist = pbc.zeros(UInt32, 1)

        def body(c):
            pbc.scatter_add(hist, UInt32(1), pbc.zeros(UInt32, 4))
            return (c + 1,)

        pbc.while_loop((UInt32(0),), lambda c: c < 3, body, mode=mode)
        return hist.numpy().tolist()

    assert run('evaluated') == [12]
    assert run('symbolic') == [12]
