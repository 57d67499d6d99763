"""Accuracy of pbc's transcendental functions (pbc/math.py) in ulps.

Oracle: NumPy in float64, rounded to float32, for Float; for Float64, NumPy in long double
(x87 80-bit, 64-bit mantissa) where the platform has it, else float64 (then every float64
bound gets +1 ulp for the oracle's own error). Each function and precision gets 10^5 random
inputs over its meaningful domain plus a set of edge values (0, -0, +-inf, nan, subnormals,
huge); edge values must agree in class (nan, +-inf, sign of zero) and within the same bound.
Bounds are the measured maxima (stated per function below), rounded up by at most 1 ulp.
"""

import math

import numpy as np
import pytest
from suite_backend import Array3f, Float, Float64, Int32

import pbc

N = 100_000
LD = np.longdouble if np.finfo(np.longdouble).nmant >= 63 else np.float64
ORACLE_SLACK = 0 if LD is not np.float64 else 1
TYPES = {np.float32: Float, np.float64: Float64}


def ulp_distance(a, b):
    """|a - b| in ulps of their (common) type, counting representable numbers in between:
    bit patterns are mapped to a monotonic integer line (negatives mirrored below zero), so
    -0 and +0 are 0 apart and the distance across zero is the sum. NaN vs NaN is 0, NaN vs
    anything else is infinite."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype
    it = np.int32 if a.dtype == np.float32 else np.int64

    def line(v):
        i = v.view(it).astype(np.int64)
        return np.where(i < 0, np.int64(np.iinfo(it).min) - i, i)

    la, lb = line(a), line(b)
    same = (la >= 0) == (lb >= 0)          # no int64 overflow in la - lb
    with np.errstate(over='ignore'):
        d = np.where(same, np.abs(la - lb).astype(np.float64),
                     np.abs(la).astype(np.float64) + np.abs(lb).astype(np.float64))
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    d[nan_a & nan_b] = 0
    d[nan_a != nan_b] = np.inf
    return d


def reference(fn, x, dtype, *more):
    """fn(x, *more) in the oracle's precision, rounded to dtype."""
    wide = np.float64 if dtype == np.float32 else LD
    with np.errstate(all='ignore'):
        return fn(x.astype(wide), *(m.astype(wide) for m in more)).astype(dtype)


def erf_np(x):
    return np.vectorize(math.erf, otypes=[x.dtype])(x)


def uniform(lo, hi):
    return lambda rng, n: rng.uniform(lo, hi, n)


def log_uniform(lo, hi, signed=False):
    """Magnitudes spread evenly over the binades of [lo, hi] (optionally random signs)."""
    def draw(rng, n):
        x = np.exp(rng.uniform(np.log(lo), np.log(hi), n))
        return x * rng.choice([-1.0, 1.0], n) if signed else x
    return draw


F32_MAX, F64_MAX = float(np.finfo(np.float32).max), float(np.finfo(np.float64).max)
F32_SUB, F64_SUB = 2.0 ** -149, 2.0 ** -1074

# (name, NumPy reference, {dtype: [(sampler, max ulp), ...]}). The bounds are the maxima
# measured over many seeds; float32 sin/cos/tan were also checked exhaustively on
# [2^-3, 2^20] (2, 2 and 3 ulp).
TRIG_F32 = [(uniform(-8192, 8192), 2), (log_uniform(1e-6, 2**20, True), 2)]
TRIG_F64 = [(uniform(-8192, 8192), 1), (log_uniform(1e-6, 2**45, True), 1)]
CASES = [
    # Cody-Waite reduction (with an exact quadrant for tan): accurate to 2^20 (float32) and 2^45
    # (float64), where Cephes stops at 8192 and 2^30.
    ('sin', np.sin, {np.float32: TRIG_F32, np.float64: TRIG_F64}),
    ('cos', np.cos, {np.float32: TRIG_F32, np.float64: TRIG_F64}),
    # relative accuracy holds next to the poles as well, thanks to the accurate reduction
    ('tan', np.tan, {np.float32: [(s, 3) for s, _ in TRIG_F32],
                     np.float64: [(s, 2) for s, _ in TRIG_F64]}),
    ('asin', np.arcsin, {np.float32: [(uniform(-1, 1), 2), (log_uniform(1e-30, 1, True), 2)],
                         np.float64: [(uniform(-1, 1), 2), (log_uniform(1e-300, 1, True), 2)]}),
    ('acos', np.arccos, {np.float32: [(uniform(-1, 1), 1), (log_uniform(1e-30, 1, True), 1)],
                         np.float64: [(uniform(-1, 1), 1), (log_uniform(1e-300, 1, True), 1)]}),
    ('atan', np.arctan, {np.float32: [(uniform(-4, 4), 2), (log_uniform(1e-30, 1e30, True), 2)],
                         np.float64: [(uniform(-4, 4), 2), (log_uniform(1e-300, 1e300, True), 2)]}),
    # exp/exp2 over the whole finite range, subnormal results included
    ('exp', np.exp, {np.float32: [(uniform(-104, 89), 1), (uniform(-1, 1), 1)],
                     np.float64: [(uniform(-746, 710), 1), (uniform(-1, 1), 1)]}),
    ('exp2', np.exp2, {np.float32: [(uniform(-150, 128), 1), (uniform(-1, 1), 1)],
                       np.float64: [(uniform(-1075, 1024), 1), (uniform(-1, 1), 1)]}),
    # log/log2 on every positive binade (subnormals included), and around 1, where the result
    # is small and accuracy in ulps of the result is hardest
    ('log', np.log, {np.float32: [(log_uniform(F32_SUB, F32_MAX), 1), (uniform(0.5, 2), 1)],
                     np.float64: [(log_uniform(F64_SUB, F64_MAX), 1), (uniform(0.5, 2), 1)]}),
    ('log2', np.log2, {np.float32: [(log_uniform(F32_SUB, F32_MAX), 1), (uniform(0.5, 2), 1)],
                       np.float64: [(log_uniform(F64_SUB, F64_MAX), 1), (uniform(0.5, 2), 1)]}),
    ('sinh', np.sinh, {np.float32: [(uniform(-89.4, 89.4), 2), (uniform(-2, 2), 2)],
                       np.float64: [(uniform(-710, 710), 2), (uniform(-2, 2), 2)]}),
    ('cosh', np.cosh, {np.float32: [(uniform(-89.4, 89.4), 1), (uniform(-2, 2), 1)],
                       np.float64: [(uniform(-710, 710), 2), (uniform(-2, 2), 2)]}),
    ('tanh', np.tanh, {np.float32: [(uniform(-10, 10), 1), (uniform(-1, 1), 1)],
                       np.float64: [(uniform(-20, 20), 2), (uniform(-1, 1), 2)]}),
    # erf's oracle is CPython's math.erf (libm, within 1 ulp); against mpmath pbc's float64
    # erf is within 3 ulp
    ('erf', erf_np, {np.float32: [(uniform(-5, 5), 2), (log_uniform(1e-30, 1, True), 2)],
                     np.float64: [(uniform(-7, 7), 4), (log_uniform(1e-300, 1, True), 4)]}),
]


def _edge_values(dtype):
    fi = np.finfo(dtype)
    v = [0.0, 1.0, 0.5, 2.0, 3.0, 1e-3, 10.0, 100.0, 1e10, 1e30, np.inf,
         float(fi.max), float(fi.tiny), float(fi.smallest_subnormal), float(fi.tiny) / 3,
         88.5, 89.5, 103.5, 104.5, 127.5, 128.5, 149.5, 150.5]
    if dtype == np.float64:
        v += [1e300, 709.5, 710.5, 745.5, 1023.5, 1024.5, 1074.5, 1075.5]
    v = np.array(v, dtype)
    return np.concatenate([v, -v, np.array([np.nan], dtype)])


def _near_pio2_multiples(dtype, rng, n=2000):
    """The floats nearest to k pi/2: sin/cos/tan of them are tiny or huge, so their reduced
    argument is tiny and the reduction's relative accuracy is what is tested."""
    kmax = 2 ** 20 / 1.6 if dtype == np.float32 else 2 ** 45 / 1.6
    k = np.floor(np.exp(rng.uniform(0, np.log(kmax), n)))
    return (k.astype(LD) * LD('1.570796326794896619231321691639751442')).astype(dtype)


def _check(name, got, want, bound, x):
    d = ulp_distance(got, want)
    i = int(np.argmax(d))
    assert d[i] <= bound, (f'{name}: {d[i]:.0f} ulp > {bound} at x={x[i]!r}: '
                           f'got {got[i]!r}, want {want[i]!r}')
    zero = (got == 0) & (want == 0) & (np.signbit(got) != np.signbit(want))
    assert not zero.any(), f'{name}: sign of zero wrong at x={x[zero][0]!r}'


@pytest.mark.parametrize('dtype', [np.float32, np.float64], ids=['f32', 'f64'])
@pytest.mark.parametrize('name,ref,domains', CASES, ids=[c[0] for c in CASES])
def test_unary_accuracy(name, ref, domains, dtype):
    rng = np.random.default_rng(sum(map(ord, name)))
    fn, T = getattr(pbc, name), TYPES[dtype]
    slack = ORACLE_SLACK if dtype == np.float64 else 0
    for sampler, bound in domains[dtype]:
        x = sampler(rng, N).astype(dtype)
        _check(name, fn(T(x)).numpy(), reference(ref, x, dtype), bound + slack, x)
    if name not in ('sin', 'cos', 'tan'):          # see test_trig_reduction
        x = _edge_values(dtype)
        bound = max(b for _, b in domains[dtype]) + slack
        _check(name, fn(T(x)).numpy(), reference(ref, x, dtype), bound, x)


@pytest.mark.parametrize('dtype', [np.float32, np.float64], ids=['f32', 'f64'])
@pytest.mark.parametrize('name,ref', [('sin', np.sin), ('cos', np.cos), ('tan', np.tan)])
def test_trig_reduction(name, ref, dtype):
    """Near multiples of pi/2 and at the special values. Past 2^23 (float32) and 2^52
    (float64), where the quadrant is unknown, sin/tan give +-0 and cos gives 1."""
    rng = np.random.default_rng(7)
    fn, T = getattr(pbc, name), TYPES[dtype]
    x = _near_pio2_multiples(dtype, rng)
    bound = (3 if name == 'tan' else 2) + ORACLE_SLACK
    _check(name, fn(T(x)).numpy(), reference(ref, x, dtype), bound, x)
    fi = np.finfo(dtype)
    small = np.array([0.0, -0.0, 1e-30, -1e-30, fi.tiny, -fi.smallest_subnormal, np.inf,
                      -np.inf, np.nan], dtype)
    _check(name, fn(T(small)).numpy(), reference(ref, small, dtype), 1, small)
    huge = np.array([fi.max, -fi.max, 1e30], dtype)
    got = fn(T(huge)).numpy()
    assert np.all(got == (1.0 if name == 'cos' else 0.0))


def test_sincos():
    x = np.linspace(-100, 100, 1001, dtype=np.float32)
    s, c = pbc.sincos(Float(x))
    assert np.array_equal(s.numpy(), pbc.sin(Float(x)).numpy())
    assert np.array_equal(c.numpy(), pbc.cos(Float(x)).numpy())
    s, c = pbc.sincos(1.0)
    assert s == pytest.approx(math.sin(1.0), rel=1e-15)
    assert c == pytest.approx(math.cos(1.0), rel=1e-15)


ATAN2_SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, np.inf, -np.inf, np.nan, 1e-40, -1e30]


@pytest.mark.parametrize('dtype', [np.float32, np.float64], ids=['f32', 'f64'])
def test_atan2(dtype):
    rng = np.random.default_rng(3)
    T = TYPES[dtype]
    # all four quadrants, ratios from tiny to huge
    r = np.exp(rng.uniform(-20, 20, N))
    t = rng.uniform(-np.pi, np.pi, N)
    y, x = (r * np.sin(t)).astype(dtype), (r * np.cos(t)).astype(dtype)
    want = reference(np.arctan2, y, dtype, x)
    bound = 3 if dtype == np.float32 else 2 + ORACLE_SLACK
    _check('atan2', pbc.atan2(T(y), T(x)).numpy(), want, bound, y)
    # IEEE 754 special cases: NaN, infinities and signed zeros must match exactly
    v = np.array(ATAN2_SPECIAL, dtype)
    Y, X = (a.ravel() for a in np.meshgrid(v, v))
    want = reference(np.arctan2, Y, dtype, X)
    _check('atan2', pbc.atan2(T(Y), T(X)).numpy(), want, 1, Y)


@pytest.mark.parametrize('dtype', [np.float32, np.float64], ids=['f32', 'f64'])
def test_power_accuracy(dtype):
    """General exponents: 2^(y log2|x|) with a double-double log2, so float32 (evaluated in
    float64) is correctly rounded in practice, and float64 is within 1 ulp while |y log2 x|
    < 32; the error grows with |y log2 x| (log2's relative error is ~2^-58): the last case
    reaches |y log2 x| = 250, where it is 5 ulp."""
    rng = np.random.default_rng(5)
    T = TYPES[dtype]
    cases = [((1e-3, 10), (-10, 10), 1, 1), ((0.5, 2), (-60, 60), 1, 2),
             ((1e-30, 1e30), (-3, 3), 1, 1), ((0.5, 2), (-500, 500), 1, 5)]
    for (xl, xh), (yl, yh), b32, b64 in cases:
        x = log_uniform(xl, xh)(rng, N).astype(dtype)
        y = rng.uniform(yl, yh, N).astype(dtype)
        want = reference(np.power, x, dtype, y)
        bound = b32 if dtype == np.float32 else b64 + ORACLE_SLACK
        _check('power', pbc.power(T(x), T(y)).numpy(), want, bound, x)
    # negative bases with integer exponents (odd and even)
    x = rng.uniform(-10, 0, N).astype(dtype)
    y = rng.integers(-30, 31, N).astype(dtype)
    want = reference(np.power, x, dtype, y)
    _check('power', pbc.power(T(x), T(y)).numpy(), want, 2 + ORACLE_SLACK, x)


POWER_SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 2.5, -2.5, np.inf,
                 -np.inf, np.nan, 1e-40, 1e30, -1e30]


@pytest.mark.parametrize('dtype', [np.float32, np.float64], ids=['f32', 'f64'])
def test_power_special_cases(dtype):
    """IEEE 754 pow: x**0 = 1 and 1**y = 1 (even for NaN), (-1)**+-inf = 1, negative **
    non-integer = NaN, signed zeros and infinities for +-0 and +-inf bases."""
    T = TYPES[dtype]
    v = np.array(POWER_SPECIAL, dtype)
    X, Y = (a.ravel() for a in np.meshgrid(v, v))
    want = reference(np.power, X, dtype, Y)
    _check('power', pbc.power(T(X), T(Y)).numpy(), want, 1, X)


def test_power_integer_exponents():
    x = np.arange(-6, 7, dtype=np.int32)
    for n in range(0, 12):
        assert np.array_equal(pbc.power(Int32(x), n).numpy(), x ** n)
    assert np.array_equal((Int32(x) ** 3).numpy(), x ** 3)
    f = np.linspace(-3, 3, 1001, dtype=np.float32)
    for n in range(-4, 5):   # repeated squaring
        with np.errstate(all='ignore'):
            want = (f.astype(np.float64) ** n).astype(np.float32)
        _check(f'power n={n}', pbc.power(Float(f), n).numpy(), want, 3, f)
    for n in (5, -5, 9, 25, -40, 2.0 ** 20):  # beyond |n| = 4: the accurate general path
        with np.errstate(all='ignore'):
            want = (f.astype(np.float64) ** n).astype(np.float32)
        _check(f'power n={n}', pbc.power(Float(f), n).numpy(), want, 1, f)
    assert np.array_equal(pbc.power(Float(f), 0).numpy(), np.ones_like(f))
    assert pbc.power(Float([np.nan]), 0).numpy()[0] == 1.0
    assert np.allclose((Float(f) ** 2).numpy(), f * f)
    assert np.allclose((2.0 ** Float(f)).numpy(), 2.0 ** f.astype(np.float64), rtol=1e-7)
    assert np.allclose((Float(np.abs(f)) ** 0.5).numpy(), np.sqrt(np.abs(f)), rtol=1e-7)


def test_python_scalars_and_mixed_types():
    assert pbc.power(2, 10) == 1024 and pbc.power(2, -1) == 0.5
    assert pbc.power(2.0, 0.5) == pytest.approx(math.sqrt(2.0), rel=2.3e-16)   # 1 ulp
    assert pbc.power(-8.0, 1 / 3) != pbc.power(-8.0, 1 / 3)           # NaN
    for name in ('sin', 'cos', 'tan', 'atan', 'exp', 'log', 'sinh', 'cosh', 'tanh', 'erf'):
        got = getattr(pbc, name)(0.75)
        assert isinstance(got, float)
        assert got == pytest.approx(getattr(math, name)(0.75), rel=4e-16), name
    assert pbc.exp(1000.0) == math.inf and pbc.log(0.0) == -math.inf
    assert math.isnan(pbc.log(-1.0)) and math.isnan(pbc.asin(2.0))
    assert pbc.sqrt(2) == math.sqrt(2) and pbc.rsqrt(4) == 0.5 and math.isnan(pbc.sqrt(-1))
    assert pbc.atan2(1, -1) == pytest.approx(3 * math.pi / 4, rel=1e-15)
    # a Python scalar adopts the array's type; Float with Float64 promotes; ints become Float
    x = Float(0.5, 1.5)
    assert type(pbc.atan2(x, 2.0)) is Float and type(pbc.atan2(1.0, x)) is Float
    assert type(pbc.atan2(x, Float64(2.0))) is Float64
    assert type(pbc.power(x, Float64(2.5))) is Float64
    assert type(pbc.exp(Int32(1, 2))) is Float
    assert np.allclose(pbc.exp(Int32(1, 2)).numpy(), np.exp([1.0, 2.0]), rtol=1e-7)


def test_static_vectors():
    v = Array3f([0.1, 0.2], [1.0, 2.0], [3.0, -4.0])
    for name in ('sin', 'exp', 'atan', 'erf', 'tanh'):
        r = getattr(pbc, name)(v)
        assert isinstance(r, Array3f), name
        for i in range(3):
            assert np.array_equal(r[i].numpy(), getattr(pbc, name)(v[i]).numpy()), name
    s, c = pbc.sincos(v)
    assert isinstance(s, Array3f) and isinstance(c, Array3f)
    assert np.array_equal(c.y.numpy(), pbc.cos(v.y).numpy())
    a = pbc.atan2(v, 1.0)
    assert isinstance(a, Array3f)
    assert np.array_equal(a.z.numpy(), pbc.atan(v.z).numpy())
    p = pbc.power(v, 2)
    assert np.allclose(p.z.numpy(), [9.0, 16.0])
    p = pbc.power(pbc.abs(v), 0.5)
    assert np.allclose(p.y.numpy(), np.sqrt([1.0, 2.0]), rtol=1e-7)


@pytest.mark.parametrize('scalef', [True, False], ids=['scalef', 'two_steps'])
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_ldexp_rounds_once(dtype, scalef, monkeypatch):
    # The scaling behind exp, exp2, sinh, ...: a 2^n rounded once for integer-valued n up to
    # twice the exponent range, wherever a 2^(n >> 1) is normal (here a in [1, 2) and the
    # IEEE specials), whether the target scales in one instruction (AVX-512) or in two
    # steps, and in constant folding alike. NumPy's ldexp is the oracle.
    from pbc import _runtime
    from pbc.backend import llvm_jit
    backend = llvm_jit.backend()
    if scalef and not backend.scalef:
        pytest.skip('the host has no AVX-512')
    monkeypatch.setattr(backend, 'scalef', scalef)
    pbc.flush_kernel_cache()                  # (kernels of the same trace, rendered the other way)
    T = Float if dtype == 'float32' else Float64
    lim = 252 if dtype == 'float32' else 2044
    rng = np.random.default_rng(5)
    n = np.arange(-lim, lim + 1).astype(dtype)
    a = rng.uniform(1, 2, n.size).astype(dtype)
    a[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, -1.5]
    with np.errstate(over='ignore'):
        want = np.ldexp(a, n.astype(np.int32))
        wants = {k: np.ldexp(a, k) for k in (-lim, -150, 0, 129, lim)}
    got = _runtime.op_binary('ldexp', T(a), T(n)).numpy()
    # (bit for bit, but a NaN's payload is unspecified: a GPU's NaN is 0x7fffffff)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(f'u{a.itemsize}'),
                                  want[~nan].view(f'u{a.itemsize}'))
    # One exponent for every lane (computed once per kernel), and literals (folded).
    for k, want in wants.items():
        got = _runtime.op_binary('ldexp', T(a), T(np.full(1, k, dtype))).numpy()
        np.testing.assert_array_equal(got, want)
        folded = _runtime.op_binary('ldexp', T(a[7]), T(float(k)))
        assert folded.state == pbc.VarState.Literal
        np.testing.assert_array_equal(folded.numpy(), want[7:8])
    pbc.flush_kernel_cache()
