"""Creation, elementwise functions, vector algebra, reductions and memory operations.

Functions accept flat arrays, static vectors (applied per component) and Python scalars.
"""

import builtins
import enum
import math as _pymath

import numpy as np

from . import _runtime
from ._runtime import ArrayBase, op_binary, op_cast, op_fma, op_select, op_unary
from .tensor import Tensor
from .vector import Matrix, StaticArray, vector_type

pi = _pymath.pi
inf = float('inf')
nan = float('nan')


def componentwise(fn):
    """Lifts fn(flat, ...) to static vectors: applied per component, others broadcast."""
    def lifted(*args):
        vec = next((a for a in args if isinstance(a, StaticArray)), None)
        if vec is None:
            return fn(*args)
        n = vec.Size
        parts = [a._items if isinstance(a, StaticArray) else (a,) * n for a in args]
        items = [fn(*xs) for xs in zip(*parts)]
        return vector_type(n, type(items[0]))._from(items)
    lifted.__name__ = fn.__name__
    lifted.__doc__ = fn.__doc__
    return lifted


def _is_float(x):
    return isinstance(x, ArrayBase) and x.Type.startswith('float')


# ---- creation ------------------------------------------------------------------------------
def _flat(T):
    return T.Value if isinstance(T, type) and issubclass(T, StaticArray) else T


def full(T, value, n=1):
    """An array of type T with n lanes equal to value (a literal: no memory until needed)."""
    if isinstance(T, type) and issubclass(T, StaticArray):
        return T._from([full(T.Value, value, n) for _ in range(T.Size)])
    if isinstance(T, type) and issubclass(T, Matrix):
        return T._from([full(T.Row, value, n) for _ in range(T.Size)])
    return _runtime.literal(T, value, n)


def zeros(T, n=1):
    return full(T, 0, n)


def ones(T, n=1):
    return full(T, 1, n)


def empty(T, n=1):
    """Uninitialized memory in Dr.Jit; here zeros, which costs nothing until evaluated."""
    return zeros(T, n)


def opaque(T, value, n=1):
    """An array whose value lives in memory, so changing it does not recompile kernels."""
    out = full(T, value, n)
    make_opaque(out)
    return out


def make_opaque(*args):
    """Turns literals inside args into memory-backed variables in place (and evaluates)."""
    from .tree import leaves
    for leaf in leaves(args):
        _runtime.make_opaque(leaf)


def arange(T, start, stop=None, step=1):
    if stop is None:
        start, stop = 0, start
    n = builtins.max(0, -(-(stop - start) // step))
    idx = _runtime.counter(T, n)
    if start == 0 and step == 1:
        return T(idx)
    return fma(T(idx), step, start) if T.Type.startswith('float') else T(idx) * step + start


def linspace(T, start, stop, num, endpoint=True):
    """num evenly spaced values over [start, stop] (or [start, stop) without endpoint)."""
    idx = T(_runtime.counter(T, num))
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div > 0 else 0.0
    return fma(idx, step, start)


def meshgrid(*arrays, indexing='xy'):
    """Like NumPy's meshgrid, flattened: every combination of the inputs' lanes."""
    if indexing not in ('xy', 'ij'):
        raise ValueError("pbc.meshgrid: indexing must be 'xy' or 'ij'")
    if len(arrays) == 0:
        return ()
    sizes = [len(a) for a in arrays]
    if indexing == 'xy' and len(arrays) >= 2:
        order = [1, 0] + list(range(2, len(arrays)))
    else:
        order = list(range(len(arrays)))
    total = int(np.prod(sizes))
    UInt32 = _runtime.class_for(arrays[0], 'uint32')
    lin = UInt32(_runtime.counter(UInt32, total))
    out = [None] * len(arrays)
    # the last dimension in `order` varies fastest
    rem = lin
    for k in reversed(order):
        n = sizes[k]
        out[k] = gather(type(arrays[k]), arrays[k], rem % n)
        rem = rem // n
    return tuple(out)


# ---- elementwise ---------------------------------------------------------------------------
@componentwise
def fma(a, b, c):
    return op_fma(a, b, c)


@componentwise
def select(m, t, f):
    if hasattr(t, '_pbc_select'):         # pointer arrays (pbc.dispatch)
        return t._pbc_select(m, t, f)
    return op_select(m, t, f)


@componentwise
def minimum(a, b):
    return op_binary('min', a, b)


@componentwise
def maximum(a, b):
    return op_binary('max', a, b)


def clip(x, lo, hi):
    return minimum(maximum(x, lo), hi)


@componentwise
def sqrt(x):
    return op_unary('sqrt', x)


def rcp(x):
    return 1.0 / x


def rsqrt(x):
    return 1.0 / sqrt(x)


def _rounding(name):
    @componentwise
    def fn(x):
        return op_unary(name, x) if _is_float(x) else type(x)(x)
    fn.__name__ = name
    return fn


floor = _rounding('floor')
ceil = _rounding('ceil')
round = _rounding('round')   # noqa: A001  (half to even, as Dr.Jit)
trunc = _rounding('trunc')


@componentwise
def abs(x):  # noqa: A001
    return op_unary('abs', x) if isinstance(x, ArrayBase) else builtins.abs(x)


@componentwise
def sign(x):
    """1 for x >= 0 (including +0), -1 otherwise; NaN keeps its sign bit's answer."""
    if _is_float(x):
        return copysign(1.0, x)
    return select(x >= 0, 1, -1)


def _sign_mask(x):
    UInt = _runtime.class_for(x, 'uint32' if x.Type == 'float32' else 'uint64')
    bits = reinterpret_array(UInt, x)
    return bits, (1 << 31) if x.Type == 'float32' else (1 << 63)


@componentwise
def copysign(a, b):
    """|a| with the sign of b."""
    ref = b if isinstance(b, ArrayBase) else a
    a = type(ref)(a) if not isinstance(a, ArrayBase) else a
    b = type(a)(b) if not isinstance(b, ArrayBase) else b
    ba, m = _sign_mask(a)
    bb, _ = _sign_mask(b)
    return reinterpret_array(type(a), (ba & (m - 1)) | (bb & m))


@componentwise
def mulsign(a, b):
    """a times the sign of b (flips a's sign bit where b's is set)."""
    a = type(b)(a) if not isinstance(a, ArrayBase) else a
    b = type(a)(b) if not isinstance(b, ArrayBase) else b
    ba, m = _sign_mask(a)
    bb, _ = _sign_mask(b)
    return reinterpret_array(type(a), ba ^ (bb & m))


def lerp(a, b, t):
    return fma(b - a, t, a)


def square(x):
    return x * x


@componentwise
def isnan(x):
    return x != x if _is_float(x) else _runtime.literal(
        _runtime.class_for(x, 'bool'), False, len(x))


@componentwise
def isinf(x):
    return abs(x) == inf if _is_float(x) else _runtime.literal(
        _runtime.class_for(x, 'bool'), False, len(x))


@componentwise
def isfinite(x):
    return abs(x) < inf if _is_float(x) else _runtime.literal(
        _runtime.class_for(x, 'bool'), True, len(x))


@componentwise
def popcnt(x):
    return op_unary('popc', x)


@componentwise
def lzcnt(x):
    return op_unary('clz', x)


@componentwise
def tzcnt(x):
    return op_unary('ctz', x)


@componentwise
def mul_hi(a, b):
    return op_binary('mulhi', a, b)


def reinterpret_array(T, x):
    """Bit cast of x to the same-sized type T."""
    if isinstance(x, StaticArray):
        return T._from([reinterpret_array(T.Value, c) for c in x._items])
    return op_cast(x, T, True)


# ---- vector algebra -----------------------------------------------------------------------
def dot(a, b):
    if not isinstance(a, StaticArray):
        return a * b
    acc = a[0] * b[0]
    for i in range(1, a.Size):
        acc = fma(a[i], b[i], acc)
    return acc


def squared_norm(v):
    return dot(v, v)


def norm(v):
    return sqrt(squared_norm(v))


def normalize(v):
    return v * rsqrt(squared_norm(v))


def cross(a, b):
    if a.Size != 3 or b.Size != 3:
        raise ValueError('pbc.cross: needs 3D vectors')
    return type(a)(fma(a.y, b.z, -(a.z * b.y)), fma(a.z, b.x, -(a.x * b.z)),
                   fma(a.x, b.y, -(a.y * b.x)))


# ---- horizontal -----------------------------------------------------------------------------
def _horizontal(name):
    def fn(x):
        if isinstance(x, StaticArray):      # across components, as Dr.Jit
            op = {'sum': lambda a, b: a + b, 'prod': lambda a, b: a * b,
                  'min': minimum, 'max': maximum, 'and': lambda a, b: a & b,
                  'or': lambda a, b: a | b}[name]
            acc = x[0]
            for c in x._items[1:]:
                acc = op(acc, c)
            return acc
        if isinstance(x, Tensor):          # over all elements; a tensor of shape ()
            return type(x)(_runtime.reduce(x.array, name), shape=())
        if not isinstance(x, ArrayBase):
            return x
        return _runtime.reduce(x, name)
    fn.__name__ = name
    return fn


sum = _horizontal('sum')          # noqa: A001
prod = _horizontal('prod')
max = _horizontal('max')          # noqa: A001
min = _horizontal('min')          # noqa: A001
_all = _horizontal('and')
_any = _horizontal('or')


def all(x):  # noqa: A001
    return x if isinstance(x, bool) else _all(x)


def any(x):  # noqa: A001
    return x if isinstance(x, bool) else _any(x)


def none(x):
    return not x if isinstance(x, bool) else ~_any(x)


def mean(x):
    if isinstance(x, Tensor):
        return type(x)(mean(x.array), shape=())
    if isinstance(x, StaticArray):           # across components, as sum()
        return sum(x) / x.Size
    if not _is_float(x):
        x = _runtime.class_for(x, 'float32')(x)
    return sum(x) / len(x)


def count(mask):
    """Number of true lanes (a width-1 UInt32)."""
    return sum(_runtime.class_for(mask, 'uint32')(mask))


def prefix_sum(x, reverse=False):
    """Exclusive prefix sum (as Dr.Jit)."""
    return _runtime.prefix_sum(x, False, reverse)


def cumsum(x, reverse=False):
    """Inclusive prefix sum."""
    return _runtime.prefix_sum(x, True, reverse)


def compress(mask):
    return _runtime.compress(mask)


def width(x):
    if isinstance(x, ArrayBase):
        return len(x)
    if isinstance(x, StaticArray):
        return x.width()
    from .tree import leaves
    return builtins.max((len(leaf) for leaf in leaves(x)), default=0)


# ---- memory -------------------------------------------------------------------------------
class ReduceOp(enum.IntEnum):
    Identity = 0
    Add = 1
    Min = 2
    Max = 3
    And = 4
    Or = 5


def gather(T, source, index, active=True):
    """source[index] for each active lane (0 elsewhere). With a static vector type T and a
    flat source, reads T.Size consecutive values per index (as Dr.Jit)."""
    if hasattr(T, '_pbc_gather'):         # pointer arrays (pbc.dispatch)
        return T._pbc_gather(source, index, active)
    if isinstance(T, type) and issubclass(T, StaticArray):
        if isinstance(source, StaticArray):
            return T._from([gather(T.Value, s, index, active) for s in source._items])
        n = T.Size
        return T._from([gather(T.Value, source, index * n + k, active) for k in range(n)])
    return _runtime.gather(T, source, index, active)


def scatter(target, value, index, active=True):
    """target[index] = value for each active lane; target changes (a queued side effect)."""
    _scatter(target, value, index, active, 0)


def scatter_reduce(op, target, value, index, active=True):
    """Atomically combines value into target[index] for each active lane."""
    _scatter(target, value, index, active, int(op))


def scatter_add(target, value, index, active=True):
    _scatter(target, value, index, active, ReduceOp.Add)


def _scatter(target, value, index, active, reduce):
    if isinstance(target, StaticArray):
        parts = value._items if isinstance(value, StaticArray) else (value,) * target.Size
        for t, v in zip(target._items, parts):
            _runtime.scatter(t, v, index, active, reduce)
    elif isinstance(value, StaticArray):
        n = value.Size
        for k, v in enumerate(value._items):
            _runtime.scatter(target, v, index * n + k, active, reduce)
    else:
        _runtime.scatter(target, value, index, active, reduce)
