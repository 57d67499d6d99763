"""Creation, elementwise functions, vector algebra, reductions and memory operations.

Functions accept flat arrays, static vectors (applied per component) and Python scalars.
"""

import builtins
import enum
import math as _pymath

import numpy as np

from . import _runtime
from ._runtime import ArrayBase, op_binary, op_cast, op_fma, op_select, op_unary
from .ad import function as ad_function
from .tensor import Tensor
from .vector import Matrix, StaticArray, inverse, static_shape, vector_type

pi = _pymath.pi
inf = float('inf')
nan = float('nan')
# Dr.Jit's named constants: the doubles nearest to their values (Python floats, so they adopt
# the other operand's precision).
e = 2.718281828459045
two_pi = 6.283185307179586
four_pi = 12.566370614359172
inv_pi = 0.3183098861837907
inv_two_pi = 0.15915494309189535
inv_four_pi = 0.07957747154594767
sqrt_pi = 1.772453850905516
sqrt_two = 1.4142135623730951
sqrt_two_pi = 2.5066282746310007
sqrt_four_pi = 3.544907701811032
inv_sqrt_pi = 0.5641895835477563
inv_sqrt_two = 0.7071067811865476
inv_sqrt_two_pi = 0.3989422804014327
inv_sqrt_four_pi = 0.28209479177387814
log_two = 0.6931471805599453
inv_log_two = 1.4426950408889634


_NUMBERS = frozenset((int, float, bool))


def componentwise(fn, floating=False):
    """Lifts fn(flat arrays and Python numbers, ...) to every argument kind Dr.Jit accepts:
    static vectors and matrices (per component; other arguments broadcast), tensors (per
    element, keeping the shape), and Python numbers and sequences alone (computed as width-1
    arrays and returned as Python numbers, per element of a sequence; with `floating`, all
    numbers are computed in double precision)."""
    def lifted(*args):
        # Fast path, the one traced code takes most: flat arrays (and Python numbers).
        flat = False
        for a in args:
            if isinstance(a, ArrayBase):
                flat = True
            elif type(a) not in _NUMBERS:
                break
        else:
            if flat:
                return fn(*args)
        for a in args:
            if isinstance(a, Tensor):
                from .tensor import elementwise
                return elementwise(lifted, args)
        vec = next((a for a in args if isinstance(a, (StaticArray, Matrix))), None)
        if vec is not None:
            n = len(vec)
            parts = [a._pbc_children() if isinstance(a, (StaticArray, Matrix)) else (a,) * n
                     for a in args]
            items = [lifted(*xs) for xs in zip(*parts)]
            return _like(vec, items)
        if builtins.any(isinstance(a, ArrayBase) for a in args):
            return fn(*args)
        seq = next((a for a in args if isinstance(a, (list, tuple))), None)
        if seq is not None:
            parts = [a if isinstance(a, (list, tuple)) else (a,) * len(seq) for a in args]
            return type(seq)(lifted(*xs) for xs in zip(*parts))
        return _python_value(fn(*(_python_array(a, floating) for a in args)))
    lifted.__name__ = fn.__name__
    lifted.__qualname__ = fn.__qualname__
    lifted.__doc__ = fn.__doc__
    return lifted


def _like(x, items):
    """A vector or matrix like x around `items` (of another type where the items are)."""
    if isinstance(x, Matrix) and builtins.all(type(i) is x.Row for i in items):
        return type(x)._from(items)
    return vector_type(len(items), type(items[0]))._from(items)


def _python_array(x, floating=False):
    """A Python number as a width-1 array of its weak type (floats in double precision,
    integers in 32 bits where they fit); other values as they are."""
    from . import llvm
    if floating and isinstance(x, (bool, int, float, np.bool_, np.integer, np.floating)):
        return llvm.Float64(float(x))
    if isinstance(x, (bool, np.bool_)):
        return llvm.Bool(bool(x))
    if isinstance(x, (int, np.integer)):
        x = int(x)              # the narrowest of Int32, UInt32, Int64, UInt64 that holds it
        return (llvm.Int32 if -2**31 <= x < 2**31 else llvm.UInt32 if 0 <= x < 2**32 else
                llvm.Int64 if -2**63 <= x < 2**63 else llvm.UInt64)(x)
    if isinstance(x, (float, np.floating)):
        return llvm.Float64(float(x))
    return x


def _python_value(r):
    if isinstance(r, ArrayBase):
        return r[0]
    if isinstance(r, tuple):
        return tuple(_python_value(v) for v in r)
    return r


def _is_float(x):
    return isinstance(x, ArrayBase) and x.Type.startswith('float')


# ---- creation ------------------------------------------------------------------------------
def _flat(T):
    return T.Value if isinstance(T, type) and issubclass(T, StaticArray) else T


def _is_tensor_type(T):
    return isinstance(T, type) and issubclass(T, Tensor)


def _width_of(T, shape):
    """The lane count that `shape` (an int, or a tuple as pbc.shape() gives: static sizes,
    then lanes) asks of non-tensor type T."""
    if isinstance(shape, (tuple, list)):
        static, _ = static_shape(T)
        if shape and len(shape) == len(static) + 1 and list(shape[:-1]) != static:
            raise RuntimeError(f'pbc.full(): the provided "shape" and "dtype" parameters are '
                               f'incompatible. ({tuple(shape)} for {T.__name__})')
        return shape[-1] if shape else 1
    return shape


def _fields_of(T):
    """{name: type} of a DRJIT_STRUCT class or a dataclass (None for other types)."""
    import dataclasses
    if isinstance(T, type) and hasattr(T, 'DRJIT_STRUCT'):
        return dict(T.DRJIT_STRUCT)
    if isinstance(T, type) and dataclasses.is_dataclass(T):
        return {f.name: f.type for f in dataclasses.fields(T)}
    return None


def _tensor_shape(shape):
    return tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)


def full(T, value, shape=1):
    """An array of type T with `shape` lanes (or a tensor of that shape: an int or a tuple)
    equal to value (a literal: no memory until needed)."""
    if _is_tensor_type(T):
        shape = _tensor_shape(shape)
        return T._new(_runtime.literal(T.Array, value, int(np.prod(shape))), shape)
    if T in (bool, int, float):
        return T(value)
    fields = _fields_of(T)
    if fields is not None:              # a struct of arrays: each field filled
        out = T.__new__(T)
        for name, F in fields.items():
            object.__setattr__(out, name, full(F, value, shape))
        return out
    n = _width_of(T, shape)
    if isinstance(T, type) and issubclass(T, StaticArray):
        if isinstance(value, (list, tuple)):           # one value per component
            if len(value) != T.Size:
                raise RuntimeError(f'pbc.full(): {T.__name__} needs {T.Size} values, got '
                                   f'{len(value)}')
            return T._from([full(T.Value, v, n) for v in value])
        return T._from([full(T.Value, value, n) for _ in range(T.Size)])
    if isinstance(T, type) and issubclass(T, Matrix):
        return T._from([full(T.Row, value, n) for _ in range(T.Size)])
    return _runtime.literal(T, value, n)


def identity(T, size=1):
    """The identity matrix of type T, `size` lanes wide (a 1 for other types)."""
    if isinstance(T, type) and issubclass(T, Matrix):
        n = T.Size
        return T._from([T.Row._from([full(T.Row.Value, 1.0 if i == j else 0.0, size)
                                      for j in range(n)]) for i in range(n)])
    return full(T, 1, size)


def zeros(T, shape=1):
    return full(T, 0, shape)


def ones(T, shape=1):
    return full(T, 1, shape)


def empty(T, shape=1):
    """Uninitialized memory in Dr.Jit; here zeros, which costs nothing until evaluated."""
    return zeros(T, shape)


def zeros_like(x):
    """Zeros of x's type and shape."""
    return zeros(type(x), _shape_of(x))


def ones_like(x):
    """Ones of x's type and shape."""
    return ones(type(x), _shape_of(x))


def empty_like(x):
    """An array of x's type and shape (zeros here, see empty)."""
    return empty(type(x), _shape_of(x))


def _shape_of(x):
    from .traits import shape
    return shape(x)


def opaque(T, value, shape=1):
    """An array whose value lives in memory, so changing it does not recompile kernels."""
    out = full(T, value, shape)
    make_opaque(out)
    return out


def make_opaque(*args):
    """Turns literals inside args into memory-backed variables in place (and evaluates)."""
    from .tree import leaves
    for leaf in leaves(args):
        _runtime.make_opaque(leaf)


def arange(T, start, stop=None, step=1):
    """start, start + step, ... up to stop (excluded); a 1-D tensor for a tensor type T."""
    if _is_tensor_type(T):
        r = arange(T.Array, start, stop, step)
        return T._new(r, (len(r),))
    if stop is None:
        start, stop = 0, start
    n = builtins.max(0, -(-(stop - start) // step))
    idx = _runtime.counter(T, n)
    if start == 0 and step == 1:
        return T(idx)
    return fma(T(idx), step, start) if T.Type.startswith('float') else T(idx) * step + start


def linspace(T, start, stop, num, endpoint=True):
    """num evenly spaced values over [start, stop] (or [start, stop) without endpoint); a
    1-D tensor for a tensor type T."""
    if _is_tensor_type(T):
        return T._new(linspace(T.Array, start, stop, num, endpoint), (num,))
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
    if len(arrays) == 1:              # (as Dr.Jit: the array itself, not a 1-tuple)
        return type(arrays[0])(arrays[0])
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
    """The smaller of a and b; NaN if either is NaN (Dr.Jit's and NumPy's minimum)."""
    return op_binary('minimum' if _float_operands(a, b) else 'min', a, b)


@componentwise
def maximum(a, b):
    """The larger of a and b; NaN if either is NaN (Dr.Jit's and NumPy's maximum)."""
    return op_binary('maximum' if _float_operands(a, b) else 'max', a, b)


@componentwise
def fmin(a, b):
    """The smaller of a and b, ignoring a NaN (IEEE minNum, NumPy's fmin)."""
    return op_binary('min', a, b)


@componentwise
def fmax(a, b):
    """The larger of a and b, ignoring a NaN (IEEE maxNum, NumPy's fmax)."""
    return op_binary('max', a, b)


def _float_operands(a, b):
    return builtins.any(isinstance(x, float) or (isinstance(x, ArrayBase) and _is_float(x))
                        for x in (a, b))


def clip(x, lo, hi):
    return minimum(maximum(x, lo), hi)


def sqrt(x):
    return op_unary('sqrt', x)


sqrt = componentwise(sqrt, floating=True)     # sqrt(2) is a Python float, as in Dr.Jit


def rcp(x):
    """1 / x; for a matrix, its inverse (as Dr.Jit's rcp)."""
    if isinstance(x, Matrix):
        return inverse(x)
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


def _promoted(a, b):
    """a and b as arrays of their common type."""
    T = type(op_binary('add', a, b)) if not (isinstance(a, ArrayBase) and isinstance(
        b, ArrayBase) and type(a) is type(b)) else type(a)
    return (a if type(a) is T else T(a)), (b if type(b) is T else T(b))


@componentwise
def copysign(a, b):
    """|a| with the sign of b (integers: -|a| where b < 0)."""
    a, b = _promoted(a, b)
    if not _is_float(a):
        return select(b < 0, -abs(a), abs(a))
    return _copysign(a, b)


@ad_function.differentiable('copysign')
def _copysign(a, b):
    ba, m = _sign_mask(a)
    bb, _ = _sign_mask(b)
    return reinterpret_array(type(a), (ba & (m - 1)) | (bb & m))


@componentwise
def mulsign(a, b):
    """a times the sign of b (floats: a's sign bit flipped where b's is set)."""
    a, b = _promoted(a, b)
    if not _is_float(a):
        return select(b < 0, -a, a)
    return _mulsign(a, b)


@ad_function.differentiable('mulsign')
def _mulsign(a, b):
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
def subgroup_any(mask):
    """True in each lane whose subgroup has `mask` True in one of its active lanes. A
    subgroup is a set of lanes that the backend runs together (one SIMD vector of the LLVM
    backend, a CUDA warp); which lanes share one is up to the backend, and
    every lane is in its own, so the result is True wherever `mask` is. Within a loop,
    an `if` or a call, the active lanes are those that run it. For choices that change
    how fast code runs but not what it computes: putting work off until most lanes of a
    vector need it, say, as the renderer's ray traversal does with its leaf tests."""
    if mask.Type != 'bool':
        raise TypeError(f'pbc.subgroup_any: expects a Bool array, not {type(mask).__name__}')
    top = _runtime.mask_top(type(mask))
    return op_unary('subgroup_any', mask if top is None else mask & top)


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
    """The dot product: over the components of static vectors (per lane), over the lanes
    of flat arrays (a width-1 array, as Dr.Jit), over the entries of Python sequences."""
    if type(a) is type(b) and isinstance(a, StaticArray):      # (the common case, in C)
        r = _runtime.vector_dot(a, b)
        if r is not None:
            return r
    vec = a if isinstance(a, StaticArray) else b if isinstance(b, StaticArray) else None
    if vec is not None:
        from .vector import _components
        pa, pb = _components(a, vec.Size), _components(b, vec.Size)
        acc = pa[0] * pb[0]
        for x, y in zip(pa[1:], pb[1:]):
            acc = fma(x, y, acc)
        return acc
    if isinstance(a, ArrayBase) or isinstance(b, ArrayBase):
        from .reductions import sum as _sum
        return _sum(a * b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            raise ValueError(f'pbc.dot(): sequences of lengths {len(a)} and {len(b)}')
        return builtins.sum(x * y for x, y in zip(a, b))
    return a * b


def squared_norm(v):
    return dot(v, v)


def norm(v):
    return sqrt(squared_norm(v))


def normalize(v):
    return v * rsqrt(squared_norm(v))


def cross(a, b):
    if a.Size != 3 or b.Size != 3:
        raise ValueError('pbc.cross: needs 3D vectors')
    if type(a) is type(b):
        r = _runtime.vector_cross(a, b)
        if r is not None:
            return r
    (ax, ay, az), (bx, by, bz) = a, b
    return type(a)._from([fma(ay, bz, -(az * by)), fma(az, bx, -(ax * bz)),
                          fma(ax, by, -(ay * bx))])


# ---- horizontal (the reductions are in reductions.py) -------------------------------
def _prefix_sum(x, inclusive, reverse):
    if _runtime.ad_tracked((x,)):
        return ad_function.apply('prefix_sum', lambda v: _runtime.prefix_sum(
            v, inclusive, reverse), (x,), (inclusive, reverse), False)
    return _runtime.prefix_sum(x, inclusive, reverse)


def prefix_sum(x, reverse=False):
    """Exclusive prefix sum (as Dr.Jit)."""
    return _prefix_sum(x, False, reverse)


def cumsum(x, reverse=False):
    """Inclusive prefix sum."""
    return _prefix_sum(x, True, reverse)


def compress(mask):
    return _runtime.compress(mask)


def width(x):
    """The number of lanes of the JIT arrays in x (any nesting of containers): their common
    width, where width-1 arrays broadcast; 1 when x holds none (as Dr.Jit)."""
    if isinstance(x, ArrayBase):
        return len(x)
    from .tree import leaves
    w = None
    for leaf in leaves(x):
        n = len(leaf)
        if w is None or w == 1:
            w = n
        elif n != w and n != 1:
            raise RuntimeError(f'pbc.width(): ragged arrays of widths {w} and {n}')
    return 1 if w is None else w


# ---- memory -------------------------------------------------------------------------------
class ReduceOp(enum.IntEnum):
    """How scatter_reduce and reduce combine values (Dr.Jit's members and values; they are
    also the runtime's reduction codes)."""
    Identity = 0
    Add = 1
    Mul = 2
    Min = 3
    Max = 4
    And = 5
    Or = 6


class ReduceMode(enum.IntEnum):
    """Dr.Jit's strategies for atomic scatter-reductions and gathers. They change only how
    Dr.Jit's kernels run, never the result, and pbc has one strategy (an atomic operation
    per active lane): every mode is accepted and gives the same result."""
    Auto = 0
    Direct = 1
    Local = 2
    NoConflicts = 3
    Permute = 4
    Expand = 5


def _check_mode(mode):
    if not isinstance(mode, ReduceMode):
        raise TypeError(f'pbc: mode must be a pbc.ReduceMode, not {mode!r}')


def gather(T, source, index, active=True, mode=ReduceMode.Auto, shape=None):
    """source[index] for each active lane (0 elsewhere). With a static vector type T and a
    flat source, reads T.Size consecutive values per index (as Dr.Jit)."""
    _check_mode(mode)
    if shape is not None:
        raise TypeError('pbc.gather(): shape= (tensor gathers) is not supported')
    if hasattr(T, '_pbc_gather'):         # pointer arrays (pbc.dispatch)
        return T._pbc_gather(source, index, active)
    if isinstance(T, type) and issubclass(T, StaticArray):
        if isinstance(source, StaticArray):
            return T._from([gather(T.Value, s, index, active) for s in source._items])
        n = T.Size
        return T._from([gather(T.Value, source, index * n + k, active) for k in range(n)])
    return _runtime.gather(T, source, index, active)


def scatter(target, value, index, active=True, mode=ReduceMode.Auto):
    """target[index] = value for each active lane; target changes (a queued side effect)."""
    _check_mode(mode)
    _scatter(target, value, index, active, 0)


def scatter_reduce(op, target, value, index, active=True, mode=ReduceMode.Auto):
    """Atomically combines value into target[index] for each active lane (op: a ReduceOp
    other than Identity)."""
    _check_mode(mode)
    op = ReduceOp(op)
    if op == ReduceOp.Identity:
        raise ValueError('pbc.scatter_reduce(): ReduceOp.Identity combines nothing (use '
                         'pbc.scatter)')
    _scatter(target, value, index, active, int(op))


def scatter_add(target, value, index, active=True, mode=ReduceMode.Auto):
    """Atomically adds value to target[index] for each active lane."""
    scatter_reduce(ReduceOp.Add, target, value, index, active, mode)


def broadcast_lanes(a, width):
    """A new array of flat array a's values, `width` lanes wide (a width-1 `a` repeated)."""
    if len(a) == width:
        return type(a)(a)
    return gather(type(a), a, _runtime.literal(_runtime.class_for(a, 'uint32'), 0, width))


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
