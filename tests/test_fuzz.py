"""Differential fuzzing: random programs run through pbc and through a NumPy oracle.

Hypothesis draws a program width N (1..300), a few inputs (evaluated arrays, literals,
`arange` expressions; width N or 1, full of edge values) and then 1-40 operations, each
picking its operands among the earlier nodes and Python scalars. A program is kept twice:
as pbc source code (what runs, and the reproduction printed on failure) and as a list of
NumPy closures (the oracle). Every node's final value must then agree:

* integers and Bools bit for bit;
* floats with `np.testing.assert_array_equal` semantics (NaN == NaN, -0 == 0). The oracle
  computes every float op in the op's own precision (float32 arrays round to float32 at every
  step). Only ops that IEEE 754 defines exactly are generated; where a result is legitimately
  unspecified, both sides pass it through the same canonicalising helper (defined below and
  printed with every reproduction):
  - `canon0`: minimum/maximum (and reductions, scatter_reduce min/max) may return either
    zero for (-0, +0); both become +0.
  - `canon_bits`: NaN payloads and signs are not specified by IEEE (nor by LLVM), so a
    float -> int reinterpretation turns every NaN pattern into the canonical quiet NaN;
    `qnan` does the same for float operands of bitwise ops.
  - `exact`: float sums (`sum`, prefix sums, `scatter_reduce(Add)`) run in an unspecified
    order, so their inputs are made integer-valued with |x| <= 2**15 (or +-inf/NaN): every
    partial sum is then exact and the result order-independent. `unit` maps products' inputs
    to {+-1, +-0, NaN} for the same reason.
* fma: float32 fma is computed in float64 (the product is exact) with round-to-odd
  (TwoSum error term), then rounded to float32 -- a correctly rounded fma, unlike a plain
  float64 evaluation, which can double-round. float64 fma is computed exactly with
  `fractions.Fraction` (CPython's int/int division rounds correctly).
* float min/max return the other operand for any NaN, signalling NaNs (which reinterpret
  can make) included -- np.fmin/np.fmax would give NaN for those.
* scatters: a plain scatter gets distinct indices (a permutation with some out-of-range
  lanes), so the order of its writes doesn't matter; reductions may repeat indices. Scatters
  queued on one array are fused into one kernel and interleave per SIMD packet (as in
  Dr.Jit), so the generator evaluates the target before queueing a scatter that doesn't
  commute with the ones already queued (anything after a plain scatter, or another ReduceOp).

The same kind of program also runs with constant propagation and value numbering disabled,
and with all-literal inputs (so folding computes it at trace time) against the same values
in memory (so kernels compute it). Gather indices are Int32/UInt32 (or any integer type
reduced with `%`), since pbc narrows indices to UInt32.

On failure the test prints the program as a standalone script. The regression tests at the
end are minimal reproductions of bugs this fuzzer found.
"""

import inspect
import math
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import suite_backend
from conftest import VECTOR_WIDTHS, vector_width
from fuzzing import FUZZ, examples
from hypothesis import given, note, settings
from hypothesis import strategies as st
from suite_backend import Bool, Float, Float64, Int32, Int64, UInt32, UInt64

import pbc

TYPES = ('bool', 'int32', 'uint32', 'int64', 'uint64', 'float32', 'float64')
RANK = {t: i for i, t in enumerate(TYPES)}             # promotion order
INTS = TYPES[1:5]
FLOATS = TYPES[5:]
NUMERIC = INTS + FLOATS
SIGNED = ('int32', 'int64')
CLASS = dict(zip(TYPES, ('Bool', 'Int32', 'UInt32', 'Int64', 'UInt64', 'Float', 'Float64')))
BITS = {'bool': 8, 'int32': 32, 'uint32': 32, 'int64': 64, 'uint64': 64,
        'float32': 32, 'float64': 64}
SAME_SIZE = {32: ('int32', 'uint32', 'float32'), 64: ('int64', 'uint64', 'float64')}
inf, nan = math.inf, math.nan


def promote(*types):
    return max(types, key=RANK.__getitem__)


def scalar_kind(v):
    """The weak type of a Python scalar operand, as pbc sees it."""
    return 'bool' if isinstance(v, bool) else ('int32' if isinstance(v, int) else 'float32')


# ---- canonicalising helpers: applied identically by pbc programs and by the oracle -------
def _is_float(x):
    if isinstance(x, np.ndarray):
        return x.dtype.kind == 'f'
    return hasattr(x, 'Type') and x.Type.startswith('float')


def canon0(x):
    """+0 for either zero (min/max/reductions may return -0 or +0 for mixed zeros)."""
    if not _is_float(x):
        return x
    if isinstance(x, np.ndarray):
        return np.where(x == 0, x.dtype.type(0), x)
    return pbc.select(x == 0, 0.0, x)


def exact(x):
    """Integer-valued, |x| <= 2**15, or +-inf/NaN: float sums become order-independent."""
    if not _is_float(x):
        return x
    if isinstance(x, np.ndarray):
        return np.where(np.abs(x) <= 32768, np.trunc(x), np.where(np.abs(x) < inf, 0, x))
    return pbc.select(abs(x) <= 32768.0, pbc.trunc(x), pbc.select(abs(x) < inf, 0.0, x))


def unit(x):
    """{+-1, +-0, NaN}: float products become exact and order-independent."""
    if not _is_float(x):
        return x
    if isinstance(x, np.ndarray):
        return np.where(x > 0, 1, np.where(x < 0, -1, x))
    return pbc.select(x > 0, 1.0, pbc.select(x < 0, -1.0, x))


def canon_bits(u):
    """Integer bits of a float: every NaN pattern becomes the canonical quiet NaN."""
    size = u.dtype.itemsize if isinstance(u, np.ndarray) else int(u.Type[-2:]) // 8
    if size == 4:
        mask, exp, qnan_bits = 0x7FFFFFFF, 0x7F800000, 0x7FC00000
    else:
        mask, exp, qnan_bits = 0x7FFFFFFFFFFFFFFF, 0x7FF0000000000000, 0x7FF8000000000000
    if isinstance(u, np.ndarray):
        return np.where((u & mask) > exp, u.dtype.type(qnan_bits), u)
    return pbc.select((u & mask) > exp, qnan_bits, u)


def qnan(x):
    """x with every NaN replaced by the canonical quiet NaN (for float bitwise ops)."""
    if isinstance(x, np.ndarray):
        return np.where(np.isnan(x), x.dtype.type(nan), x)
    U = UInt32 if x.Type == 'float32' else UInt64
    return pbc.reinterpret_array(type(x), canon_bits(pbc.reinterpret_array(U, x)))


HELPERS = (_is_float, canon0, exact, unit, canon_bits, qnan)
PRELUDE = '\n'.join([
    'import math', 'import numpy as np', 'import pbc', 'from numpy import nan, inf',
    f'from {suite_backend.module.__name__} import Bool, Float, Float64, Int32, Int64, UInt32, '
    'UInt64', '', ''] +
    [inspect.getsource(f) for f in HELPERS])
NAMESPACE = dict(np=np, pbc=pbc, nan=nan, inf=inf, math=math, Bool=Bool, Float=Float,
                 Float64=Float64, Int32=Int32, Int64=Int64, UInt32=UInt32, UInt64=UInt64,
                 **{f.__name__: f for f in HELPERS})


# ---- NumPy reference semantics -------------------------------------------------------------
def np_scalar(value, t):
    """A Python scalar converted to type t the way pbc makes literals (width-1 array)."""
    if t in FLOATS:
        return np.array([float(value)]).astype(t)       # via double, as pbc's scalar_bits
    if t == 'bool':
        return np.array([bool(value)])
    u = int(value) & ((1 << BITS[t]) - 1)
    return np.array([u], 'uint%d' % BITS[t]).view(t)


def float_to_int(x, t):
    """Truncating, saturating float -> int conversion; NaN gives 0."""
    info = np.iinfo(t)
    f = x.astype(np.float64)
    hi = f >= float(info.max)
    lo = f <= float(info.min)
    mid = ~(hi | lo | np.isnan(f))
    out = np.zeros(x.shape, t)
    out[hi] = info.max
    out[lo] = info.min
    out[mid] = np.trunc(f[mid]).astype(t)
    return out


def np_cast(x, src, dst):
    if src == dst:
        return x
    if dst == 'bool':
        return x != 0
    if src in FLOATS and dst in INTS:
        return float_to_int(x, dst)
    return x.astype(dst)       # int->int wraps; int->float and float->float round once


def as_unsigned(a):
    return a.view('uint%d' % (8 * a.dtype.itemsize))


def int_divmod(t, a, b):
    """C division: truncation; x/0 = x%0 = 0; INT_MIN / -1 = INT_MIN (remainder 0)."""
    a, b = np.broadcast_arrays(a, b)
    one, zero = a.dtype.type(1), a.dtype.type(0)
    by_zero = b == 0
    by_m1 = (b == a.dtype.type(-1)) if t in SIGNED else np.zeros(b.shape, bool)
    bs = np.where(by_zero | by_m1, one, b)
    q = a // bs
    r = a - q * bs
    if t in SIGNED:                      # floor -> truncation
        adj = (r != 0) & ((a < 0) != (bs < 0))
        q = np.where(adj, q + one, q)
        r = np.where(adj, r - bs, r)
        q = np.where(by_m1, -a, q)
        r = np.where(by_m1, zero, r)
    return np.where(by_zero, zero, q), np.where(by_zero, zero, r)


def ref_div(t, a, b):
    return a / b if t in FLOATS else int_divmod(t, a, b)[0]


def ref_floordiv(t, a, b):
    return np.floor(a / b) if t in FLOATS else int_divmod(t, a, b)[0]


def ref_mod(t, a, b):
    return np.fmod(a, b) if t in FLOATS else int_divmod(t, a, b)[1]


def nan_ignoring(fn):
    """min/max that return the other operand when one is NaN -- signalling NaNs included
    (np.fmin/np.fmax turn a signalling NaN into NaN, as IEEE 754-2008's minNum did)."""
    def op(a, b):
        return np.where(np.isnan(a), b, np.where(np.isnan(b), a, fn(a, b)))
    return op


FMIN, FMAX = nan_ignoring(np.minimum), nan_ignoring(np.maximum)


def ref_fmin(t, a, b):
    return canon0(FMIN(a, b)) if t in FLOATS else np.minimum(a, b)


def ref_fmax(t, a, b):
    return canon0(FMAX(a, b)) if t in FLOATS else np.maximum(a, b)


def ref_min(t, a, b):
    """NaN-propagating (IEEE 754-2019 minimum, NumPy's minimum)."""
    return canon0(np.minimum(a, b)) if t in FLOATS else np.minimum(a, b)


def ref_max(t, a, b):
    return canon0(np.maximum(a, b)) if t in FLOATS else np.maximum(a, b)


def ref_hminmax(a, fn):
    """Horizontal min/max; floats ignore NaNs (all NaN: NaN)."""
    if a.dtype.kind == 'f':
        a = a[~np.isnan(a)] if not np.isnan(a).all() else a[:1]
    return canon0(fn.reduce(a, keepdims=True))


def ref_shift(t, a, b, left):
    """Shift amounts are unsigned: >= the bit width gives 0 (or the sign for signed >>)."""
    bits = BITS[t]
    amount = as_unsigned(np.ascontiguousarray(b))
    big = amount >= bits
    s = np.where(big, 0, amount).astype(a.dtype)
    if left:
        return np.where(big, a.dtype.type(0), a << s)
    fill = (a >> (bits - 1)) if t in SIGNED else a.dtype.type(0)
    return np.where(big, fill, a >> s)


def ref_mulhi(t, a, b):
    if BITS[t] == 32:
        wide = np.int64 if t in SIGNED else np.uint64
        return ((a.astype(wide) * b.astype(wide)) >> 32).astype(t)
    a, b = np.broadcast_arrays(a, b)
    return np.array([(int(x) * int(y)) >> 64 for x, y in zip(a, b)], dtype=t)


POPCOUNT8 = np.array([bin(i).count('1') for i in range(256)], np.int64)


def popcount(a):
    """Set bits per element (np.bitwise_count needs NumPy 2)."""
    a = np.ascontiguousarray(a)
    return POPCOUNT8[a.view(np.uint8)].reshape(a.shape + (a.dtype.itemsize,)).sum(axis=-1)


def ref_popcnt(t, a):
    return popcount(a).astype(t)


def ref_lzcnt(t, a):
    v = as_unsigned(a).copy()
    s = 1
    while s < BITS[t]:
        v |= v >> s
        s *= 2
    return (BITS[t] - popcount(v)).astype(t)


def ref_tzcnt(t, a):
    u = as_unsigned(a)
    return popcount((u & (~u + 1)) - 1).astype(t)   # 0 -> all ones -> the bit width


def fma32(a, b, c):
    """Correctly rounded float32 fma: exact product in float64, sum rounded to odd."""
    a, b, c = (x.astype(np.float64) for x in np.broadcast_arrays(a, b, c))
    p = a * b
    s = p + c
    bb = s - p
    err = (p - (s - bb)) + (c - bb)                    # TwoSum: s + err == p + c exactly
    inexact = np.isfinite(s) & (err != 0)
    even = (s.view(np.uint64) & 1) == 0
    s = np.where(inexact & even, np.nextafter(s, np.where(err > 0, inf, -inf)), s)
    return s.astype(np.float32)


def fma64(a, b, c):
    out = []
    for x, y, z in zip(*np.broadcast_arrays(a, b, c)):
        x, y, z = float(x), float(y), float(z)
        if not all(map(math.isfinite, (x, y, z))):
            out.append(z if math.isfinite(x) and math.isfinite(y) else x * y + z)
            continue
        r = Fraction(x) * Fraction(y) + Fraction(z)
        if r == 0:
            out.append(x * y + z if x == 0 or y == 0 else 0.0)   # IEEE signed-zero rules
            continue
        try:
            out.append(float(r))
        except OverflowError:
            out.append(inf if r > 0 else -inf)
    return np.array(out, np.float64)


def ref_fma(t, a, b, c):
    if t == 'float32':
        return fma32(a, b, c)
    if t == 'float64':
        return fma64(a, b, c)
    return a * b + c


def ref_gather(src, idx, mask):
    """src[idx] where mask and 0 <= idx < len(src) (idx taken as UInt32), else 0."""
    idx, mask = np.broadcast_arrays(idx.astype(np.int64), mask)
    ok = mask & (idx < len(src))
    return np.where(ok, src[np.where(ok, idx, 0)], np.zeros(1, src.dtype))


def ref_prefix(t, a, inclusive, reverse):
    x = a[::-1] if reverse else a
    s = np.cumsum(x, dtype=a.dtype)
    if not inclusive:
        s = np.concatenate([np.zeros(1, a.dtype), s[:-1]])
    return canon0(s[::-1] if reverse else s)


REDUCE_OPS = {  # scatter_reduce: (ints and Bool, floats)
    'Add': (np.add, np.add), 'Min': (np.minimum, FMIN), 'Max': (np.maximum, FMAX),
    'And': (np.bitwise_and, None), 'Or': (np.bitwise_or, None)}


def ref_scatter_reduce(target, op, idx, vals):
    """target[idx[k]] = op(target[idx[k]], vals[k]) for every k (in any order)."""
    if op is np.add:
        np.add.at(target, idx, vals)
    else:
        for i, v in zip(idx, vals):
            target[i] = op(target[i:i + 1], v)[0]


# ---- the op table -----------------------------------------------------------------------------
def ignore_type(fn):
    return lambda t, a, b: fn(a, b)


# Elementwise ops: pbc source template, NumPy reference (operand type, *operands), and the
# types the promoted operand type may have. Comparisons give Bool.
BINARY = {
    'add': ('{a} + {b}', lambda t, a, b: a + b, NUMERIC),
    'sub': ('{a} - {b}', lambda t, a, b: a - b, NUMERIC),
    'mul': ('{a} * {b}', lambda t, a, b: a * b, NUMERIC),
    'div': ('{a} / {b}', ref_div, FLOATS),         # (integer arrays divide with //)
    'floordiv': ('{a} // {b}', ref_floordiv, NUMERIC),
    'mod': ('{a} % {b}', ref_mod, NUMERIC),
    'and': ('{a} & {b}', lambda t, a, b: a & b, ('bool',) + INTS),
    'or': ('{a} | {b}', lambda t, a, b: a | b, ('bool',) + INTS),
    'xor': ('{a} ^ {b}', lambda t, a, b: a ^ b, ('bool',) + INTS),
    'minimum': ('canon0(pbc.minimum({a}, {b}))', ref_min, NUMERIC),
    'maximum': ('canon0(pbc.maximum({a}, {b}))', ref_max, NUMERIC),
    'fmin': ('canon0(pbc.fmin({a}, {b}))', ref_fmin, NUMERIC),
    'fmax': ('canon0(pbc.fmax({a}, {b}))', ref_fmax, NUMERIC),
    'mul_hi': ('pbc.mul_hi({a}, {b})', ref_mulhi, INTS),
}
COMPARE = {
    'eq': ('{a} == {b}', ignore_type(np.equal), TYPES),
    'ne': ('{a} != {b}', ignore_type(np.not_equal), TYPES),
    'lt': ('{a} < {b}', ignore_type(np.less), NUMERIC),
    'le': ('{a} <= {b}', ignore_type(np.less_equal), NUMERIC),
    'gt': ('{a} > {b}', ignore_type(np.greater), NUMERIC),
    'ge': ('{a} >= {b}', ignore_type(np.greater_equal), NUMERIC),
}
UNARY = {
    'neg': ('-{a}', lambda t, a: -a, NUMERIC),
    'invert': ('~{a}', lambda t, a: ~a, ('bool',) + INTS),
    'abs': ('abs({a})', lambda t, a: np.abs(a), NUMERIC),
    'sqrt': ('pbc.sqrt({a})', lambda t, a: np.sqrt(a), FLOATS),
    'floor': ('pbc.floor({a})', lambda t, a: np.floor(a) if t in FLOATS else a, NUMERIC),
    'ceil': ('pbc.ceil({a})', lambda t, a: np.ceil(a) if t in FLOATS else a, NUMERIC),
    'round': ('pbc.round({a})', lambda t, a: np.rint(a) if t in FLOATS else a, NUMERIC),
    'trunc': ('pbc.trunc({a})', lambda t, a: np.trunc(a) if t in FLOATS else a, NUMERIC),
    'popcnt': ('pbc.popcnt({a})', ref_popcnt, INTS),
    'lzcnt': ('pbc.lzcnt({a})', ref_lzcnt, INTS),
    'tzcnt': ('pbc.tzcnt({a})', ref_tzcnt, INTS),
}
# Horizontal reductions (width-1 results): template, reference, accepted types.
HORIZONTAL = {
    'sum': ('canon0(pbc.sum(exact({a})))',
            lambda a: canon0(np.add.reduce(exact(a), dtype=a.dtype, keepdims=True)), NUMERIC),
    'prod': ('canon0(pbc.prod(unit({a})))',
             lambda a: canon0(np.multiply.reduce(unit(a), dtype=a.dtype, keepdims=True)),
             NUMERIC),
    'hmin': ('canon0(pbc.min({a}))', lambda a: ref_hminmax(a, np.minimum), TYPES),
    'hmax': ('canon0(pbc.max({a}))', lambda a: ref_hminmax(a, np.maximum), TYPES),
    'all': ('pbc.all({a})', lambda a: np.array([a.all()]), ('bool',)),
    'any': ('pbc.any({a})', lambda a: np.array([a.any()]), ('bool',)),
    'count': ('pbc.count({a})', lambda a: np.array([a.sum()], np.uint32), ('bool',)),
}

INT_LITERALS = (0, 1, -1, 2, 3, 5, 7, 8, 16, 31, 32, 33, 63, 64, 65, 100, 255, 1 << 16,
                2**31 - 1, -2**31, 2**31, 2**32 - 1, 2**32, 2**53 + 1, 2**63 - 1, -2**63,
                2**64 - 1)
FLOAT_LITERALS = (0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 0.1, 1e10, -1e-10,
                  3.4e38, 1e39, 1e-45, 1e-40, 2.0**31, 2.0**32, 2.0**63, 2.0**64, 16777217.0,
                  inf, -inf, nan)


def edge_values(t):
    if t == 'bool':
        return [False, True]
    if t in FLOATS:
        fi = np.finfo(t)
        return [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, 3.0, 0.1, inf, -inf, nan,
                float(fi.max), -float(fi.max), float(fi.tiny), float(fi.smallest_subnormal),
                -float(fi.smallest_subnormal), 8388607.5, 16777216.0, 16777218.0, 2.0**31,
                -2.0**31, 2147483520.0, 2.0**32, 2.0**63, -2.0**63, 2.0**64, 1e10, -1e-10]
    info = np.iinfo(t)
    vals = [0, 1, 2, 3, 7, 31, 32, 33, 63, 64, 65, 255, 256, 65535, 65536, 46341,
            info.max, info.max - 1, info.min, info.min + 1, info.max // 2, info.max // 2 + 1,
            2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 1]
    if t in SIGNED:
        vals += [-v for v in vals]
    return [v for v in vals if info.min <= v <= info.max]


def random_values(rng, t, n):
    """n values of type t: a mixture of edge values, small values and random bit patterns."""
    if t == 'bool':
        return rng.random(n) < rng.random()
    if t in INTS:
        info = np.iinfo(t)
        vals = rng.integers(info.min, info.max, n, dtype=t, endpoint=True)
        small = rng.integers(-40 if t in SIGNED else 0, 80, n).astype(t)
        vals = np.where(rng.random(n) < 0.5, small, vals)
    else:
        k = rng.integers(0, 4, n)
        bits = rng.integers(0, 2**63, n, dtype=np.uint64, endpoint=True)
        raw = (bits >> 32).astype(np.uint32).view(np.float32).astype(t) if t == 'float32' \
            else bits.view(np.float64)
        choices = [rng.integers(-50, 50, n).astype(t),
                   (rng.standard_normal(n) * 10.0 ** rng.integers(-5, 12, n)).astype(t),
                   raw, rng.integers(-50, 50, n).astype(t) * 0.5]
        vals = np.choose(k, choices)
        vals[np.isnan(vals)] = nan                     # canonical NaNs only
    edges = np.array(edge_values(t), dtype=t)
    pick = rng.random(n) < rng.random() * 0.6
    vals[pick] = rng.choice(edges, int(pick.sum()))
    return vals


def literal_src(v):
    if isinstance(v, float) and not math.isfinite(v):
        return 'nan' if math.isnan(v) else ('inf' if v > 0 else '-inf')
    return repr(v)


def array_src(vals, t):
    items = ', '.join(literal_src(v.item()) for v in vals)
    return f"{CLASS[t]}(np.array([{items}], dtype='{t}'))"


# ---- program generation ---------------------------------------------------------------------
class Ref:
    """An operand that refers to node i (as opposed to a Python scalar operand)."""
    __slots__ = ('i',)

    def __init__(self, i):
        self.i = i

    def __str__(self):
        return f'v{self.i}'


class Program:
    """Draws a random program; keeps its pbc source lines and its NumPy oracle steps."""

    def __init__(self, draw, width, literal_inputs=False):
        self.draw = draw
        self.N = width
        self.types = []      # per node
        self.wide = []       # per node: width N (True) or 1
        self.lines = []      # pbc source, one entry per step
        self.steps = []      # oracle closures env -> None, one per step
        self.ops = []        # op names (for coverage statistics)
        self.pending = {}    # node -> ReduceOp name (None: plain) of its queued scatters
        self.rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        for _ in range(draw(st.integers(1, 4))):
            self.gen_input(literal_inputs)
        for _ in range(draw(st.integers(1, 40))):
            for _attempt in range(8):
                name = draw(st.sampled_from(OP_CHOICES))
                if GENERATORS[name](self, name) is not False:
                    self.ops.append(name)
                    break

    # -- drawing helpers --
    def coin(self, num=1, den=2):
        return self.draw(st.integers(0, den - 1)) < num

    def choice(self, seq):
        return self.draw(st.sampled_from(seq))

    def node(self, types=TYPES):
        """A Ref to an earlier node of one of `types` (recent nodes are likelier), or None."""
        cands = [i for i, t in enumerate(self.types) if t in types]
        if not cands:
            return None
        return Ref(cands[-1 - self.draw(st.integers(0, len(cands) - 1))])

    def literal(self, kinds=('int32', 'float32', 'bool')):
        kind = self.choice(kinds)
        if kind == 'bool':
            return self.coin()
        if kind == 'int32':
            return self.choice(INT_LITERALS) if self.coin(3, 4) else \
                self.draw(st.integers(-2**63, 2**64 - 1))
        return self.choice(FLOAT_LITERALS) if self.coin(3, 4) else \
            self.draw(st.floats(allow_nan=False, width=self.choice([32, 64])))

    def operand(self, types=TYPES, like=None, lit_kinds=('int32', 'float32', 'bool')):
        """A node (of the same type as `like`, half the time) or, a quarter of the time, a
        Python scalar."""
        if lit_kinds and self.coin(1, 4):
            return self.literal(lit_kinds)
        if like is not None and self.coin():
            r = self.node((self.kind(like),))
            if r is not None and self.kind(like) in types:
                return r
        return self.node(types)

    def kind(self, x):
        return self.types[x.i] if isinstance(x, Ref) else scalar_kind(x)

    def is_wide(self, *xs):
        return any(isinstance(x, Ref) and self.wide[x.i] for x in xs)

    # -- emitting --
    def emit(self, line, step, rtype=None, wide=False):
        """Appends one step. With rtype, `line` defines node `{out}` (named v<step>); without,
        the step defines no node (its slot holds None, so nodes and steps share numbers)."""
        out = len(self.types)
        self.types.append(rtype)
        self.wide.append(wide or self.N == 1)
        self.lines.append(line.replace('{out}', f'v{out}'))
        self.steps.append(step)
        return Ref(out)

    # -- inputs --
    def gen_input(self, literal_only):
        t = self.choice(TYPES)
        wide = self.N > 1 and self.coin(3, 4)
        n = self.N if wide else 1
        kind = 'literal' if literal_only else self.choice(('data', 'data', 'literal', 'arange'))
        if kind == 'arange' and t == 'bool':
            kind = 'data'
        if kind == 'data':
            self.emit_values(random_values(self.rng, t, n), wide)
        elif kind == 'literal':
            v = random_values(self.rng, t, 1)[0].item()
            self.emit_values(np.full(n, v, dtype=t), wide,
                             f'pbc.full({CLASS[t]}, {literal_src(v)}, {n})')
        else:
            self.emit_values(np.arange(n).astype(t), wide, f'pbc.arange({CLASS[t]}, {n})')

    def emit_values(self, vals, wide, src=None):
        """A node holding known values: an evaluated array unless `src` makes it otherwise."""
        t = vals.dtype.name
        return self.emit('{out} = ' + (src or array_src(vals, t)),
                         lambda env: env.append(vals.copy()), t, wide)


def value(env, prog, x, t):
    """Oracle value of operand x converted to type t (nodes cast, scalars as literals)."""
    if isinstance(x, Ref):
        return np_cast(env[x.i], prog.types[x.i], t)
    return np_scalar(x, t)


def finish(prog, rtype, wide, result):
    """Checks the oracle result's dtype and broadcasts it to the node's width."""
    assert result.dtype == np.dtype(rtype), (result.dtype, rtype)
    return np.broadcast_to(result, (prog.N if wide else 1,)).copy()


def elementwise(prog, template, fn, vt, rtype, args):
    """Emits `out = template(args)` computed by fn(vt, *args converted to vt)."""
    wide = prog.is_wide(*args)

    def step(env):
        with np.errstate(all='ignore'):
            env.append(finish(prog, rtype, wide, fn(vt, *(value(env, prog, x, vt)
                                                          for x in args))))
    src = '{out} = ' + template.format(**dict(zip('abc', map(str_operand, args))))
    return prog.emit(src, step, rtype, wide)


def str_operand(x):
    return str(x) if isinstance(x, Ref) else literal_src(x)


def gen_binary(prog, name):
    table = COMPARE if name in COMPARE else BINARY
    template, fn, allowed = table[name]
    a = prog.node()
    b = prog.operand(like=a)
    if b is None:
        return False
    if prog.coin():
        a, b = b, a               # the scalar (or the other node) goes first
    vt = promote(prog.kind(a), prog.kind(b))
    if vt not in allowed:
        return False
    if name == 'and' and vt != 'bool' and 'bool' in (prog.kind(a), prog.kind(b)):
        return False              # a mask operand selects: gen_mask_op draws these
    elementwise(prog, template, fn, vt, 'bool' if name in COMPARE else vt, (a, b))


def gen_shift(prog, name):
    left = name == 'shl'
    amount_types = ('bool',) + INTS
    if prog.coin(1, 5):           # Python int shifted by an array: the types promote
        a, b = prog.literal(('int32',)), prog.node(amount_types)
        if b is None:
            return False
        vt = promote('int32', prog.kind(b))
    else:                         # the shifted array's type wins
        a = prog.node(INTS)
        b = prog.operand(amount_types, like=a, lit_kinds=('int32',))
        if a is None or b is None:
            return False
        vt = prog.kind(a)
    elementwise(prog, '{a} << {b}' if left else '{a} >> {b}',
                lambda t, x, y: ref_shift(t, x, y, left), vt, vt, (a, b))


def gen_unary(prog, name):
    template, fn, allowed = UNARY[name]
    a = prog.node(allowed)
    if a is None:
        return False
    t = prog.kind(a)
    elementwise(prog, template, fn, t, t, (a,))


def gen_float_bitwise(prog, name):
    """Bitwise ops on float arrays (on their bits; NaN operands canonicalised first)."""
    a = prog.node(FLOATS)
    if a is None:
        return False
    vt = prog.kind(a)
    b = prog.literal(('float32',)) if prog.coin(1, 4) else prog.node((vt,))
    op = {'fand': '&', 'for': '|', 'fxor': '^'}[name]
    fn = {'fand': np.bitwise_and, 'for': np.bitwise_or, 'fxor': np.bitwise_xor}[name]

    def bits(t, x, y):
        u = 'uint%d' % BITS[t]
        return fn(qnan(x).view(u), qnan(y).view(u)).view(t)
    fa, fb = (f'qnan({x})' if isinstance(x, Ref) else '{%s}' % k for k, x in zip('ab', (a, b)))
    elementwise(prog, f'{fa} {op} {fb}', bits, vt, vt, (a, b))


def gen_mask_op(prog, name):
    """`x & mask` with a Bool mask (an array or a Python bool) and a number array keeps x
    where the mask is set and gives 0 elsewhere (either order)."""
    x = prog.node(FLOATS + INTS)
    m = prog.node(('bool',)) if prog.coin(3, 4) else prog.coin()
    if x is None or m is None:
        return False
    t = prog.kind(x)
    wide = prog.is_wide(x, m)

    def step(env):
        mask = env[m.i] if isinstance(m, Ref) else np.array([m])
        env.append(finish(prog, t, wide, np.where(mask, env[x.i], np.zeros(1, t))))
    ms = str(m) if isinstance(m, Ref) else literal_src(m)
    prog.emit(f'{{out}} = {x} & {ms}' if prog.coin() else f'{{out}} = {ms} & {x}', step, t,
              wide)


def gen_cast(prog, name):
    a = prog.node()
    dst = prog.choice(TYPES)
    src = prog.kind(a)
    elementwise(prog, f'{CLASS[dst]}({{a}})', lambda t, x: np_cast(x, src, dst), src, dst, (a,))


def gen_reinterpret(prog, name):
    a = prog.node(SAME_SIZE[32] + SAME_SIZE[64])
    if a is None:
        return False
    src = prog.kind(a)
    dst = prog.choice(SAME_SIZE[BITS[src]])
    template = f'pbc.reinterpret_array({CLASS[dst]}, {{a}})'
    if src in FLOATS and dst not in FLOATS:
        template = f'canon_bits({template})'

    def fn(t, x):
        r = x.view(dst)
        return canon_bits(r) if src in FLOATS and dst not in FLOATS else r
    elementwise(prog, template, fn, src, dst, (a,))


def gen_select(prog, name):
    m = prog.node(('bool',)) if prog.coin(7, 8) else prog.coin()
    t = prog.operand()
    f = prog.operand(like=t)
    if m is None or t is None or f is None or not any(isinstance(x, Ref) for x in (m, t, f)):
        return False
    vt = promote(prog.kind(t), prog.kind(f))
    wide = prog.is_wide(m, t, f)

    def step(env):
        mask = value(env, prog, m, 'bool')
        env.append(finish(prog, vt, wide, np.where(mask, value(env, prog, t, vt),
                                                   value(env, prog, f, vt))))
    prog.emit(f'{{out}} = pbc.select({str_operand(m)}, {str_operand(t)}, {str_operand(f)})',
              step, vt, wide)


def gen_fma(prog, name):
    args = [prog.operand(NUMERIC) for _ in range(3)]
    if None in args or not any(isinstance(x, Ref) for x in args):
        return False
    vt = promote(*map(prog.kind, args))
    if vt == 'bool':
        return False
    elementwise(prog, 'pbc.fma({a}, {b}, {c})', ref_fma, vt, vt, tuple(args))


def gen_pow(prog, name):
    """`x ** k` for a Python int k: repeated squaring (exact for integer arrays; for float
    arrays only |k| <= 2 is generated, where the result is one IEEE operation: 1, x, x*x,
    1/x). A negative k divides 1.0 by the power, which makes integer arrays Float."""
    a = prog.node(NUMERIC)
    if a is None:
        return False
    t = prog.kind(a)
    k = prog.choice((0, 1, 2, -1) if t in FLOATS else (0, 1, 2, 3, 4, 5, -1))
    rt = promote(t, 'float32') if k < 0 else t

    def fn(vt, x):
        result, base, n = None, x, abs(k)
        while n:
            if n & 1:
                result = base if result is None else result * base
            n >>= 1
            if n:
                base = base * base
        if result is None:
            result = np.ones_like(x)     # x**0 is 1, even for NaN (IEEE pow)
        if k < 0:
            return np_scalar(1.0, rt) / np_cast(result, t, rt)
        return result
    elementwise(prog, f'{{a}} ** {k}', fn, t, rt, (a,))


def mod_index(prog, idx, n):
    """Often folds an index into [-(n+1), n+1] with `%` (a node of its own)."""
    if prog.coin(2, 3) or prog.kind(idx) not in ('int32', 'uint32'):
        t = prog.kind(idx)
        return elementwise(prog, '{a} % {b}', ref_mod, t, t, (idx, n + 2))
    return idx


def mask_operand(prog):
    r = prog.choice(('node', 'node', 'none', 'literal'))
    if r == 'node':
        return prog.node(('bool',))
    return prog.coin(3, 4) if r == 'literal' else None


def width_of(prog, x):
    return prog.N if prog.wide[x.i] else 1


def gen_gather(prog, name):
    src = prog.node()
    idx = prog.node(INTS)
    if idx is None:
        return False
    idx = mod_index(prog, idx, width_of(prog, src))
    mask = mask_operand(prog)
    t = prog.kind(src)
    wide = prog.is_wide(idx, mask)
    extra = '' if mask is None else f', {str_operand(mask)}'

    def step(env):
        i = value(env, prog, idx, 'uint32')
        m = np.array([True]) if mask is None else value(env, prog, mask, 'bool')
        env.append(finish(prog, t, wide, ref_gather(env[src.i], i, m)))
    prog.emit(f'{{out}} = pbc.gather({CLASS[t]}, {src}, {idx}{extra})', step, t, wide)


def scatter_value(prog, t, exact_float=False):
    """A value operand that converts to t without narrowing (or a fitting Python scalar)."""
    if prog.coin(1, 5):
        if t == 'bool':
            return prog.coin()
        if t in INTS:
            return prog.literal(('int32',))
        return float(prog.choice((0, 1, -3, 7, 1000))) if exact_float else prog.literal()
    return prog.node(TYPES[:RANK[t] + 1])


def gen_scatter(prog, name):
    """pbc.scatter / scatter_reduce, either in place (the node changes for later readers)
    or into a copy `T(x)` (copy-on-write: x keeps its value). Plain scatters get distinct
    indices (a permutation), so the result does not depend on the order of writes."""
    reduce = None if name == 'scatter' else name.split('_')[1]
    target = prog.node(TYPES if reduce in (None, 'And', 'Or') else NUMERIC)
    if target is None:
        return False
    t = prog.kind(target)
    if reduce in ('And', 'Or') and t in FLOATS:
        return False
    m_width = width_of(prog, target)
    val = scatter_value(prog, t, exact_float=reduce == 'Add')
    mask = mask_operand(prog)
    if val is None:
        return False
    if reduce is None:
        n = prog.N if prog.is_wide(val, mask) or prog.coin() else 1
        perm = prog.rng.permutation(max(m_width, n) + int(prog.rng.integers(0, 3)))[:n]
        idx = prog.emit_values(perm.astype(prog.choice(('uint32', 'int32'))), n > 1)
    else:
        idx = prog.node(INTS)
        if idx is None:
            return False
        idx = mod_index(prog, idx, m_width)
    float_reduce = reduce is not None and t in FLOATS
    in_place = not float_reduce and prog.coin()
    vs = str_operand(val)
    if float_reduce and reduce == 'Add':
        vs = f'exact({CLASS[t]}({vs}))' if isinstance(val, Ref) else vs
    args = f'{vs}, {idx}' + ('' if mask is None else f', {str_operand(mask)}')
    if in_place:
        dest, lines = str(target), []
        # Scatters queued on one target run fused in one kernel, SIMD packet by packet, so
        # a later scatter is not ordered after an earlier one's writes from later lanes
        # (as in Dr.Jit). Only commuting reductions (the same ReduceOp) may share a kernel.
        if prog.pending.get(target.i, reduce) != reduce or (reduce is None and
                                                             target.i in prog.pending):
            lines.append(f'pbc.eval({target})')
        prog.pending[target.i] = reduce
    else:
        dest = '{out}'
        copy = f'exact({target})' if float_reduce and reduce == 'Add' else \
            f'{CLASS[t]}({target})'
        lines = [f'{{out}} = {copy}']
    if reduce is None:
        lines.append(f'pbc.scatter({dest}, {args})')
    else:
        lines.append(f'pbc.scatter_reduce(pbc.ReduceOp.{reduce}, {dest}, {args})')
    if float_reduce:
        lines.append('{out} = canon0({out})')

    def step(env):
        with np.errstate(all='ignore'):
            tv = env[target.i].copy()
            if float_reduce and reduce == 'Add':
                tv = exact(tv)
            v = value(env, prog, val, t)
            if float_reduce and reduce == 'Add':
                v = exact(v)
            i = value(env, prog, idx, 'uint32').astype(np.int64)
            m = np.array([True]) if mask is None else value(env, prog, mask, 'bool')
            v, i, m = np.broadcast_arrays(v, i, m)
            sel = m & (i < len(tv))
            if reduce is None:
                tv[i[sel]] = v[sel]
            else:
                ref_scatter_reduce(tv, REDUCE_OPS[reduce][t in FLOATS], i[sel], v[sel])
            tv = canon0(tv) if float_reduce else tv
        if in_place:
            env[target.i] = tv
            env.append(None)         # this step defines no node
        else:
            env.append(tv)
    out = prog.emit('\n'.join(lines), step, None if in_place else t, prog.wide[target.i])
    if not in_place and not float_reduce:
        prog.pending[out.i] = reduce


def gen_horizontal(prog, name):
    template, fn, allowed = HORIZONTAL[name]
    a = prog.node(allowed)
    if a is None:
        return False
    t = prog.kind(a)
    rt = 'uint32' if name == 'count' else ('bool' if name in ('all', 'any') else t)

    def step(env):
        with np.errstate(all='ignore'):
            env.append(finish(prog, rt, False, fn(env[a.i])))
    prog.emit('{out} = ' + template.format(a=a), step, rt, False)


def gen_prefix(prog, name):
    a = prog.node(NUMERIC)
    if a is None:
        return False
    t = prog.kind(a)
    inclusive = name == 'cumsum'
    reverse = prog.coin()
    call = f'pbc.{name}(exact({a})' + (', reverse=True)' if reverse else ')')

    def step(env):
        with np.errstate(all='ignore'):
            env.append(ref_prefix(t, exact(env[a.i]), inclusive, reverse))
    prog.emit(f'{{out}} = canon0({call})', step, t, prog.wide[a.i])


def gen_compress(prog, name):
    """Stream compaction: out[:k] = x[mask] (via compress + gather + scatter), 0 after."""
    x, m = prog.node(), prog.node(('bool',))
    if m is None:
        return False
    t = prog.kind(x)
    lines = [f'_idx = pbc.compress({m})', f'{{out}} = pbc.zeros({CLASS[t]}, {prog.N})',
             f'pbc.scatter({{out}}, pbc.gather({CLASS[t]}, {x}, _idx), '
             'pbc.arange(UInt32, len(_idx)))']

    def step(env):
        idx = np.flatnonzero(env[m.i]).astype(np.int64)
        out = np.zeros(prog.N, t)
        out[:len(idx)] = ref_gather(env[x.i], idx, np.array([True]))
        env.append(out)
    out = prog.emit('\n'.join(lines), step, t, True)
    prog.pending[out.i] = None


def gen_eval(prog, name):
    """Forces evaluation (kernel boundaries) of one or two nodes; changes no value."""
    xs = [prog.node(), prog.node()][:1 + prog.coin()]
    fn = 'eval' if prog.coin(3, 4) else 'schedule'
    prog.emit(f'pbc.{fn}({", ".join(map(str, xs))})', lambda env: env.append(None))


GENERATORS = {
    **{k: gen_binary for k in (*BINARY, *COMPARE)},
    **{k: gen_unary for k in UNARY},
    **{k: gen_horizontal for k in HORIZONTAL},
    'shl': gen_shift, 'shr': gen_shift,
    'fand': gen_float_bitwise, 'for': gen_float_bitwise, 'fxor': gen_float_bitwise,
    'mask_op': gen_mask_op, 'cast': gen_cast, 'reinterpret': gen_reinterpret,
    'select': gen_select, 'fma': gen_fma, 'pow': gen_pow, 'gather': gen_gather,
    'scatter': gen_scatter,
    **{f'scatter_{r}': gen_scatter for r in REDUCE_OPS},
    'prefix_sum': gen_prefix, 'cumsum': gen_prefix, 'compress': gen_compress,
    'eval': gen_eval,
}
# Ops that need evaluated operands (one more kernel each) are drawn less often.
HEAVY = {*HORIZONTAL, 'scatter', *(f'scatter_{r}' for r in REDUCE_OPS), 'prefix_sum',
         'cumsum', 'compress'}
OP_CHOICES = tuple(k for k in GENERATORS for _ in range(1 if k in HEAVY else 3))
WIDTHS = st.one_of(st.sampled_from((1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 255, 300)),
                   st.integers(1, 300))


# ---- running and checking -----------------------------------------------------------------
def reference(prog):
    env = []
    with np.errstate(all='ignore'):
        for step in prog.steps:
            step(env)
    return env


def source_line(line, opaque):
    """opaque: literal inputs become memory-backed arrays holding the same values."""
    return line.replace('pbc.full(', 'pbc.opaque(') if opaque else line


def source(prog, opaque=False):
    return '\n'.join(source_line(line, opaque) for line in prog.lines)


def run_pbc(prog, opaque=False, read_each=False):
    """Runs the program's pbc source; returns (type, NumPy copy) of every node's final value."""
    ns = dict(NAMESPACE)
    nodes = []
    for i, (line, rtype) in enumerate(zip(prog.lines, prog.types)):
        exec(compile(source_line(line, opaque), f'<fuzz step {i}>', 'exec'), ns)
        if rtype is not None:
            assert not any(ns[f'v{i}'] is ns[k] for k in nodes), f'{line}: aliases a node'
            nodes.append(f'v{i}')
    if not read_each:
        pbc.eval(*(ns[k] for k in nodes))
    return {k: (type(ns[k]).Type, ns[k].numpy()) for k in nodes}


def check(prog, **kwargs):
    note('Standalone pbc program:\n' + PRELUDE + '\n' + source(prog, kwargs.get('opaque', False)))
    expected = reference(prog)
    actual = run_pbc(prog, **kwargs)
    for i, t in enumerate(prog.types):
        if t is None:
            continue
        name = f'v{i}'
        got_type, got = actual[name]
        want = expected[i]
        where = f'{name} (type {t}, width {len(want)})'
        assert got_type == t, f'{where}: pbc gave type {got_type}'
        assert got.shape == want.shape, f'{where}: pbc gave width {got.shape[0]}'
        np.testing.assert_array_equal(got, want, err_msg=where, strict=True)


def draw_program(data, literal_inputs=False):
    return Program(data.draw, data.draw(WIDTHS), literal_inputs)



@settings(FUZZ, max_examples=examples(400))
@given(st.data())
def test_random_programs(data):
    prog = draw_program(data)
    check(prog, read_each=data.draw(st.integers(0, 3)) == 0)


@settings(FUZZ, max_examples=examples(80))
@given(st.data())
def test_random_programs_at_every_vector_width(data):
    prog = draw_program(data)
    with vector_width(data.draw(st.sampled_from(VECTOR_WIDTHS))):
        check(prog)


@settings(FUZZ, max_examples=examples(120))
@given(st.data())
def test_random_programs_without_folding_or_value_numbering(data):
    prog = draw_program(data)
    with pbc.scoped_set_flag(pbc.JitFlag.ConstantPropagation, False), \
            pbc.scoped_set_flag(pbc.JitFlag.ValueNumbering, False):
        check(prog)


@settings(FUZZ, max_examples=examples(120))
@given(st.data())
def test_constant_folding_matches_kernels(data):
    prog = draw_program(data, literal_inputs=True)
    check(prog)                  # inputs are literals: most ops fold at trace time
    check(prog, opaque=True)     # the same values in memory: kernels compute everything


@settings(FUZZ, max_examples=examples(200))
@given(st.data())
def test_constant_folding_matches_kernels_with_flushed_subnormals(data):
    """Under JitFlag.FlushDenormals, ops folded while tracing and the same ops in kernels
    give the same values, up to what docs/semantics.md leaves unspecified: NaN payloads,
    the sign of zero, and whether an identity of its operand (x * 1, x - 0, ...) flushes a
    subnormal operand. So floats compare with subnormals as zero, and a program that
    reinterprets float bits as integers (where an unflushed subnormal would show) only in
    its float results."""
    prog = draw_program(data, literal_inputs=True)
    note('Standalone pbc program:\n' + PRELUDE + '\n' + source(prog, False))
    with pbc.scoped_set_flag(pbc.JitFlag.FlushDenormals, True):
        folded = run_pbc(prog)
        computed = run_pbc(prog, opaque=True)
    bits_seen = 'reinterpret' in prog.ops
    for name, (t, got) in folded.items():
        other_type, other = computed[name]
        assert other_type == t
        if t.startswith('float'):
            tiny = np.finfo(got.dtype).tiny
            got, other = (np.where(np.abs(v) < tiny, 0, v) for v in (got, other))
        elif bits_seen:
            continue
        np.testing.assert_array_equal(got, other, err_msg=name)


# ---- regressions: minimal reproductions of bugs this fuzzer found -----------------------------
def test_shift_by_the_bit_width_feeding_a_division_does_not_trap():
    """An LLVM shift by >= the bit width is poison; fused into the zero-guarded division it
    let LLVM divide by zero (SIGFPE kills the interpreter, hence the subprocess)."""
    code = ('import numpy as np, pbc\nfrom pbc.llvm import UInt32\n'
            'x = UInt32(np.arange(8, dtype=np.uint32) + 30)\n'
            'print((x // (0xFFFFFFFF >> x)).numpy().tolist())')
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get('PYTHONPATH', '')]))
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=env,
                       cwd=root, timeout=300)
    assert r.returncode == 0, f'exit code {r.returncode}\n{r.stderr[-3000:]}'
    assert r.stdout.split('\n')[0] == '[10, 31, 0, 0, 0, 0, 0, 0]'


def test_gather_from_a_literal_reads_zero_out_of_range():
    src = pbc.full(Int64, -96, 5)
    assert pbc.gather(Int64, src, Int32([0, 7, -1])).numpy().tolist() == [-96, 0, 0]


def test_one_eval_of_several_widths_reads_the_right_buffers():
    a = Float([1.0, 2.0, 3.0])
    b = Float([10.0])
    w1 = b * 2.0 + 1.0           # width 1
    w3 = a + w1                  # width 3, needs w1: its kernel ran just before
    pbc.eval(w1, w3)
    assert w3.numpy().tolist() == [22.0, 23.0, 24.0]


def test_symbolic_gather_from_an_expression_with_a_wide_literal():
    src = pbc.full(Float, 2.0, 5) + Float([1.0, 2.0, 3.0, 4.0, 5.0])
    assert pbc.gather(Float, src, UInt32([3])).numpy().tolist() == [6.0]
    assert pbc.gather(Float, src, UInt32([0, 4])).numpy().tolist() == [3.0, 7.0]


def test_empty_operands_do_not_broadcast_like_width_one():
    t = pbc.zeros(Int32, 4)
    pbc.scatter(t, 7, pbc.arange(UInt32, 0))          # no index: nothing is written
    assert t.numpy().tolist() == [0, 0, 0, 0]
    assert len(pbc.gather(Int32, Int32([5, 6]), UInt32(np.array([], np.uint32)))) == 0


def test_simplifications_keep_the_sign_of_zero():
    x = Float([-0.0])
    assert (1.0 / (x - (-0.0))).numpy().tolist() == [inf]       # -0 - -0 = +0
    assert (1.0 / pbc.fma(x, 2.0, 0.0)).numpy().tolist() == [inf]   # -0 + +0 = +0
