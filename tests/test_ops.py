"""Every elementwise op on every type it supports, against NumPy, on random inputs that
include the edge values; the same op on literals (folded at trace time) must agree bit for
bit with the compiled kernel."""

import numpy as np
import pytest
import suite_backend
from oracle import (
    DTYPES,
    FLOATS,
    INTS,
    TYPES,
    as_numpy,
    assert_same,
    cast,
    flat,
    int_div,
    int_mod,
    lzcnt,
    mul_hi,
    popcnt,
    sample,
    shl,
    shr,
    tzcnt,
)

import pbc

N = 67          # not a multiple of any vector width: exercises the masked tail
ALL = ('bool',) + INTS + FLOATS


def folded(fn, *columns):
    """fn applied lane by lane to width-1 literals: constant folding computes every result."""
    out = []
    for row in zip(*columns):
        args = [TYPES[c.dtype.name if c.dtype != np.bool_ else 'bool'](v.item())
                for c, v in zip(columns, row)]
        r = fn(*args)
        assert r.state == 'literal', 'expected the op to fold to a literal'
        out.append(r[0])
    return out


def uniform(fn, *columns, rows=6):
    """fn applied to width-1 arrays in memory, a few lanes: kernels of uniform (scalar)
    registers, the code loop counters use."""
    out = []
    for row in list(zip(*columns))[:rows]:
        args = [flat(c.dtype.name if c.dtype != np.bool_ else 'bool', np.array([v]))
                for c, v in zip(columns, row)]
        out.append(as_numpy(fn(*args))[0])
    return out


def check(fn, ref, *columns, fold=True):
    arrays = [flat(c.dtype.name if c.dtype != np.bool_ else 'bool', c) for c in columns]
    expected = ref(*columns)
    result = as_numpy(fn(*arrays))
    assert_same(result, expected, 'kernel')
    if fold:
        assert_same(np.array(folded(fn, *columns), dtype=result.dtype), expected, 'folded')
    scalar = uniform(fn, *columns)
    assert_same(np.array(scalar, dtype=result.dtype), expected[:len(scalar)], 'uniform')


UNARY = {
    'neg': (lambda x: -x, lambda a: np.negative(a), INTS + FLOATS),
    'invert': (lambda x: ~x, lambda a: np.invert(a), ('bool',) + INTS),
    'abs': (lambda x: abs(x), lambda a: np.abs(a), INTS + FLOATS),
    'sqrt': (pbc.sqrt, np.sqrt, FLOATS),
    'floor': (pbc.floor, np.floor, FLOATS),
    'ceil': (pbc.ceil, np.ceil, FLOATS),
    'round': (pbc.round, np.rint, FLOATS),
    'trunc': (pbc.trunc, np.trunc, FLOATS),
    'popcnt': (pbc.popcnt, popcnt, INTS),
    'lzcnt': (pbc.lzcnt, lzcnt, INTS),
    'tzcnt': (pbc.tzcnt, tzcnt, INTS),
}


@pytest.mark.parametrize('name', UNARY)
def test_unary(name):
    fn, ref, types = UNARY[name]
    rng = np.random.default_rng(1)
    for t in types:
        with np.errstate(all='ignore'):
            check(fn, ref, sample(t, N, rng))


def _fdiv(a, b):
    with np.errstate(all='ignore'):
        return np.divide(a, b)


def _ffloordiv(a, b):
    with np.errstate(all='ignore'):
        return np.floor(np.divide(a, b))


def _fmod(a, b):
    with np.errstate(all='ignore'):
        return np.fmod(a, b)


def _wrap(op):
    def fn(a, b):
        with np.errstate(all='ignore'):
            return op(a, b)
    return fn


BINARY = {
    'add': (lambda x, y: x + y, {t: _wrap(np.add) for t in INTS + FLOATS}),
    'sub': (lambda x, y: x - y, {t: _wrap(np.subtract) for t in INTS + FLOATS}),
    'mul': (lambda x, y: x * y, {t: _wrap(np.multiply) for t in INTS + FLOATS}),
    'truediv': (lambda x, y: x / y, {t: _fdiv for t in FLOATS}),   # ints: TypeError
    'floordiv': (lambda x, y: x // y, {**{t: int_div for t in INTS},
                                       **{t: _ffloordiv for t in FLOATS}}),
    'mod': (lambda x, y: x % y, {**{t: int_mod for t in INTS}, **{t: _fmod for t in FLOATS}}),
    'minimum': (pbc.minimum, {t: np.minimum for t in INTS + FLOATS}),    # NaN propagates
    'maximum': (pbc.maximum, {t: np.maximum for t in INTS + FLOATS}),
    'fmin': (pbc.fmin, {t: np.fmin for t in INTS + FLOATS}),             # NaN is ignored
    'fmax': (pbc.fmax, {t: np.fmax for t in INTS + FLOATS}),
    'and': (lambda x, y: x & y, {t: np.bitwise_and for t in ('bool',) + INTS}),
    'or': (lambda x, y: x | y, {t: np.bitwise_or for t in ('bool',) + INTS}),
    'xor': (lambda x, y: x ^ y, {t: np.bitwise_xor for t in ('bool',) + INTS}),
    'shl': (lambda x, y: x << y, {t: shl for t in INTS}),
    'shr': (lambda x, y: x >> y, {t: shr for t in INTS}),
    'mul_hi': (pbc.mul_hi, {t: mul_hi for t in INTS}),
    'eq': (lambda x, y: x == y, {t: np.equal for t in ALL}),
    'ne': (lambda x, y: x != y, {t: np.not_equal for t in ALL}),
    'lt': (lambda x, y: x < y, {t: np.less for t in INTS + FLOATS}),
    'le': (lambda x, y: x <= y, {t: np.less_equal for t in INTS + FLOATS}),
    'gt': (lambda x, y: x > y, {t: np.greater for t in INTS + FLOATS}),
    'ge': (lambda x, y: x >= y, {t: np.greater_equal for t in INTS + FLOATS}),
}


@pytest.mark.parametrize('name', BINARY)
def test_binary(name):
    fn, refs = BINARY[name]
    rng = np.random.default_rng(2)
    for t, ref in refs.items():
        a = sample(t, N, rng)
        b = sample(t, N, rng)
        check(fn, ref, a, rng.permutation(b))
        # every edge value against every other, through the kernel
        e = sample(t, 24, rng)[:24]
        aa, bb = np.repeat(e, len(e)), np.tile(e, len(e))
        check(fn, ref, aa, bb, fold=False)


def test_float_bitwise_and_mask():
    x = suite_backend.Float([1.5, -2.0, 3.0])
    m = suite_backend.Bool([True, False, True])
    assert_same(as_numpy(x & m), np.array([1.5, 0, 3.0], dtype=np.float32))


@pytest.mark.parametrize('t', INTS + FLOATS)
def test_fma_select(t):
    rng = np.random.default_rng(3)
    a, b, c = (sample(t, N, rng) for _ in range(3))
    if t in FLOATS:
        # a correctly rounded reference: float32 fma via float64 is exact here because the
        # product of two float32 values is exact in float64 and the inputs are tame.
        a, b, c = (np.where(np.isfinite(v) & (np.abs(v) < 1e6), v, 1.5).astype(t)
                   for v in (a, b, c))
        if t == 'float32':
            ref = lambda x, y, z: (x.astype(np.float64) * y + z).astype(np.float32)  # noqa
        else:
            ref = lambda x, y, z: np.array([float(np.longdouble(p) * q + r)  # noqa
                                            for p, q, r in zip(x, y, z)])
    else:
        ref = lambda x, y, z: x * y + z  # noqa: E731
    with np.errstate(all='ignore'):
        check(pbc.fma, ref, a, b, c)
    m = rng.random(N) < 0.5
    check(pbc.select, lambda mm, x, y: np.where(mm, x, y), m, a, b)


@pytest.mark.parametrize('src', ALL)
def test_casts(src):
    rng = np.random.default_rng(4)
    a = sample(src, N, rng)
    for dst in ALL:
        check(lambda x, d=dst: TYPES[d](x), lambda v, d=dst: cast(v, d), a)


@pytest.mark.parametrize('src', INTS + FLOATS)
def test_reinterpret(src):
    rng = np.random.default_rng(5)
    a = sample(src, N, rng)
    for dst in INTS + FLOATS:
        if DTYPES[dst].itemsize == DTYPES[src].itemsize:
            check(lambda x, d=dst: pbc.reinterpret_array(TYPES[d], x),
                  lambda v, d=dst: v.view(DTYPES[d]), a)


def test_promotion():
    from suite_backend import Bool, Float, Float64, Int, UInt
    assert type(UInt(1, 2) + Int(1, 2)) is UInt
    assert type(Int(1, 2) + Float(1, 2)) is Float
    assert type(Float(1, 2) + Float64(1, 2)) is Float64
    assert type(Int(1, 2) + 1.5) is Float
    assert type(UInt(1, 2) + 1) is UInt
    assert type(Float(1) < 2) is Bool
    assert as_numpy(Int(-7) // 2)[0] == -3 and as_numpy(Int(-7) % 2)[0] == -1
    assert as_numpy(UInt(5) - 6)[0] == 2**32 - 1


def test_copysign_mulsign_sign():
    from suite_backend import Float
    a = np.array([1.0, -2.0, 0.0, -0.0, np.inf, 3.5], dtype=np.float32)
    b = np.array([-1.0, 1.0, -0.0, 2.0, -5.0, -0.0], dtype=np.float32)
    assert_same(pbc.copysign(Float(a), Float(b)).numpy(), np.copysign(a, b))
    assert_same(pbc.mulsign(Float(a), Float(b)).numpy(), a * np.where(np.signbit(b), -1, 1)
                .astype(np.float32))
    assert_same(pbc.sign(Float(a)).numpy(), np.where(np.signbit(a), -1, 1).astype(np.float32))


def test_out_of_range_shifts_and_casts_never_reach_a_division():
    """Shifts by >= the bit width and out-of-range casts are poison in LLVM; the optimizer
    must not use that to hoist a division by them past the zero-divisor guard (SIGFPE)."""
    from suite_backend import Float, Int32, UInt32
    x = UInt32(np.arange(8, dtype=np.uint32) + 30)
    assert (x // (0xFFFFFFFF >> x)).numpy().tolist() == [10, 31, 0, 0, 0, 0, 0, 0]
    assert (x % (0xFFFFFFFF << x)).numpy().tolist() == [30, 31, 0, 0, 0, 0, 0, 0]
    f = Float(3e9, -3e9, np.nan, 5.5)
    assert (Int32(100) // Int32(f)).numpy().tolist() == [0, 0, 0, 20]
    assert (UInt32(100) // UInt32(f)).numpy().tolist() == [0, 0, 0, 20]


def test_python_ints_round_once_to_float32():
    from suite_backend import Float
    v = 2**60 + 2**36 + 1            # via double it would round twice, to 2**60
    assert Float(v)[0] == 2.0**60 + 2**37 and (Float(1.0) * v)[0] == 2.0**60 + 2**37
    assert Float(-v)[0] == -(2.0**60 + 2**37) and Float(2**200)[0] == np.inf


@pytest.mark.parametrize('t', INTS)
def test_shifts_by_literal_amounts(t):
    # A literal amount below the bit width compiles to a bare shift, others to the guarded
    # form (0, or the sign for arithmetic right shifts): both as NumPy says.
    rng = np.random.default_rng(5)
    a = sample(t, N, rng)
    n = np.dtype(t).itemsize * 8
    for amount in (0, 1, n - 1, n, n + 5, 2 ** 31 + 1):
        k = np.full(N, amount, dtype=np.uint64).astype(t)
        x = flat(t, a)
        assert_same(as_numpy(x << int(k[0])), shl(a, k), f'{t} << {amount}')
        assert_same(as_numpy(x >> int(k[0])), shr(a, k), f'{t} >> {amount}')


def test_flush_denormals_flushes_float_arithmetic_everywhere():
    """JitFlag.FlushDenormals (off by default): float arithmetic takes subnormal operands as
    zero and flushes subnormal results to zero, in kernels, in constant folding, in
    reductions and for float64 too; moves and sign operations (negation, select, gathers)
    keep subnormals as they are. (Identities such as x * 1 may keep them too: unspecified.)"""
    from suite_backend import Bool, Float, Float64, UInt32
    s32 = np.finfo(np.float32).smallest_subnormal * np.float32(3)
    s64 = np.finfo(np.float64).smallest_subnormal * 3
    x = Float(np.array([s32, 1.0, -s32], np.float32))
    d = Float64(np.array([s64, 1.0]))
    tiny = Float(np.full(4, s32, np.float32))
    assert not pbc.flag(pbc.JitFlag.FlushDenormals)
    ieee = (x * 1.5).numpy()
    assert ieee[0] == s32 * np.float32(1.5) and pbc.sum(tiny)[0] == 4 * s32
    cancel = np.zeros(40_000, np.float32)      # two blocks' sums, normal, cancel to a subnormal
    cancel[3], cancel[30_000] = 1.5e-38, -1.4e-38
    assert pbc.sum(Float(cancel))[0] == np.float32(1.5e-38) - np.float32(1.4e-38) != 0
    with pbc.scoped_set_flag(pbc.JitFlag.FlushDenormals, True):
        for got in ((x * 1.5).numpy(), (x + 0.0).numpy() * 1.5, (x * x).numpy() * 1.5):
            np.testing.assert_array_equal(got, [0, 1.5, 0])
        assert np.signbit((x * 1.5).numpy()[2])                 # (the sign stays)
        np.testing.assert_array_equal((d * 2).numpy(), [0, 2])
        assert (Float(s32) * 1.5)[0] == 0                        # folded while tracing
        assert (Float(1e-30) * 1e-10)[0] == 0                    # a subnormal result
        assert (pbc.opaque(Float, 1e-30) * 1e-10)[0] == 0       # ... computed in a kernel
        assert pbc.sum(tiny)[0] == 0
        # (block results that cancel into the subnormals, combined after the blocks ran)
        assert pbc.sum(Float(cancel))[0] == 0 and pbc.prefix_sum(Float(cancel))[-1] == 0
        np.testing.assert_array_equal((-x).numpy(), [-s32, -1, s32])
        np.testing.assert_array_equal(pbc.select(Bool(True, False, True), x, 2.0).numpy(),
                                      [s32, 2, -s32])
        np.testing.assert_array_equal(pbc.gather(Float, x, pbc.arange(UInt32, 3)).numpy(),
                                      x.numpy())
    np.testing.assert_array_equal((x * 1.5).numpy(), ieee)      # IEEE again
