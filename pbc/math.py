"""Transcendental functions composed of traced primitive ops (fma, select, round, bit casts),
so that they fuse into the surrounding kernel and every backend gets them.

Each function takes Float (float32) or Float64 arrays, with separate coefficients per
precision; integer arrays are converted to Float, static vectors are handled per component,
and Python scalars are traced as Float64 literals, which constant-fold to a Python float.
Every lane evaluates all branches, which `select` then blends, as SIMD code must.

Sources of the approximations (coefficients copied, code written afresh):
  * Cephes, S. L. Moshier (https://www.netlib.org/cephes): single precision sinf, cosf, tanf,
    asinf, atanf, expf, exp2f, logf, log2f, sinhf, tanhf, erff; double precision sin, cos,
    tan, atan, sinh, tanh and erf (ndtr.c).
  * fdlibm, Sun Microsystems (e_asin.c, e_log.c): float64 asin/acos and log's polynomial.
  * Cody-Waite argument reduction with constants split into 2-3 parts. With an FMA the first
    step x - k*C1 is exact even for a full-precision C1: the result is a multiple of
    ulp(C1) below 2 (Muller et al., Handbook of Floating-Point Arithmetic, ch. 11).
Accuracy, in ulps against NumPy, is measured in tests/test_math_accuracy.py and stated in
each docstring as "float32 / float64".
"""

import builtins
import functools
import math as _pymath

from . import _runtime
from ._runtime import ArrayBase, class_for, op_binary, plain_float_arrays
from .ad import function as ad_function
from .routines import (
    abs,
    componentwise,
    floor,
    fma,
    full,
    mulsign,
    reinterpret_array,
    round,
    select,
    sqrt,
)
from .vector import StaticArray, vector_type

__all__ = ['sin', 'cos', 'tan', 'sincos', 'asin', 'acos', 'atan', 'atan2', 'exp', 'exp2',
           'log', 'log2', 'power', 'sinh', 'cosh', 'tanh', 'erf']

_h = float.fromhex
inf, nan = float('inf'), float('nan')


class _F32:
    """float32 constants. Multi-part constants (hi, lo, ...) are exact float32 numbers whose
    sum is the real constant to 2-3x the working precision. A coefficient tuple is a
    polynomial, highest degree first; a pair of tuples is a rational function P/Q."""
    uint, int, mant, bias, mant_mask = 'uint32', 'int32', 23, 127, (1 << 23) - 1
    sqrth_bits, one_bits = 0x3F3504F3, 0x3F800000            # sqrt(1/2), 1.0
    min_normal, sub_scale, sub_shift = 2.0 ** -126, 2.0 ** 25, 25
    pio2 = (_h('0x1.921fb6p+0'), -_h('0x1.777a5cp-25'), -_h('0x1.ee59dap-50'))
    pio4 = (_h('0x1.921fb6p-1'), -_h('0x1.777a5cp-26'))
    pi = (_h('0x1.921fb6p+1'), -_h('0x1.777a5cp-24'))
    two_over_pi = (_h('0x1.45f306p-1'), _h('0x1.b93910p-26'))
    ln2 = (_h('0x1.62e430p-1'), -_h('0x1.05c610p-29'))
    log2e = _h('0x1.715476p+0')
    # Past this |x|, q*pi/2 no longer pins down the quadrant (see _reduce_pio2).
    trig_max = 2.0 ** 23
    sin = (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1)                 # |r| < pi/4
    cos = (2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2)
    tan = (9.38540185543e-3, 3.11992232697e-3, 2.44301354525e-2, 5.34112807005e-2,
           1.33387994085e-1, 3.33331568548e-1)
    asin = (4.2163199048e-2, 2.4181311049e-2, 4.5470025998e-2, 7.4953002686e-2,
            1.6666752422e-1)                                                    # |w| <= 1/2
    atan_split = 0.41421356237309503                                           # tan(pi/8)
    atan = (8.05374449538e-2, -1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1)
    # exp: e^r = 1 + r + r^2 P(r) on |r| <= ln(2)/2. The clamps sit just past overflow and
    # underflow, leaving room for cosh's 2^-1 and within twice the exponent range (_scale).
    exp = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
           1.6666665459e-1, 5.0000001201e-1)
    exp_lo, exp_hi = -104.0, 89.5
    exp2 = (1.535336188319500e-4, 1.339887440266574e-3, 9.618437357674640e-3,
            5.550332471162809e-2, 2.402264791363012e-1, 6.931472028550421e-1)
    log = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
           1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
           3.3333331174e-1)
    log2e_m1 = 0.44269504088896340736
    sinh = (2.03721912945e-4, 8.33028376239e-3, 1.66667160211e-1)              # |x| <= 1
    tanh = (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1,
            -3.33332819422e-1)                                                  # |x| < 0.625
    # erf = x T(x^2) on |x| < 1, else 1 - exp(-x^2)/x P(1/x^2), R for x >= 2; 1 beyond 3.9
    erf = (7.853861353153693e-5, -8.010193625184903e-4, 5.188327685732524e-3,
           -2.685381193529856e-2, 1.128358514861418e-1, -3.761262582423300e-1,
           1.128379165726710e+0)
    erfc_p = (2.326819970068386e-2, -1.387039388740657e-1, 3.687424674597105e-1,
              -5.824733027278666e-1, 6.210004621745983e-1, -4.944515323274145e-1,
              3.404879937665872e-1, -2.741127028184656e-1, 5.638259427386472e-1)
    erfc_r = (-1.047766399936249e+1, 1.297719955372516e+1, -7.495518717768503e+0,
              2.921019019210786e+0, -1.015265279202700e+0, 4.218463358204948e-1,
              -2.820767439740514e-1, 5.641895067754075e-1)
    erf_max = 4.0


class _F64:
    """float64 constants (see _F32)."""
    uint, int, mant, bias, mant_mask = 'uint64', 'int64', 52, 1023, (1 << 52) - 1
    sqrth_bits, one_bits = 0x3FE6A09E667F3BCD, 0x3FF0000000000000
    min_normal, sub_scale, sub_shift = 2.0 ** -1022, 2.0 ** 54, 54
    pio2 = (_h('0x1.921fb54442d18p+0'), _h('0x1.1a62633145c07p-54'),
            -_h('0x1.f1976b7ed8fbcp-110'))
    pio4 = (_h('0x1.921fb54442d18p-1'), _h('0x1.1a62633145c07p-55'))
    pi = (_h('0x1.921fb54442d18p+1'), _h('0x1.1a62633145c07p-53'))
    two_over_pi = (_h('0x1.45f306dc9c883p-1'), -_h('0x1.6b01ec5417056p-55'))
    ln2 = (_h('0x1.62e42fefa39efp-1'), _h('0x1.abc9e3b39803fp-56'))
    log2e = _h('0x1.71547652b82fep+0')
    log2e_lo = _h('0x1.777d0ffda0d24p-56')
    trig_max = 2.0 ** 52
    sin = (1.58962301576546568060e-10, -2.50507477628578072866e-8,
           2.75573136213857245213e-6, -1.98412698295895385996e-4,
           8.33333333332211858878e-3, -1.66666666666666307295e-1)
    cos = (-1.13585365213876817300e-11, 2.08757008419747316778e-9,
           -2.75573141792967388112e-7, 2.48015872888517045348e-5,
           -1.38888888888730564116e-3, 4.16666666666665929218e-2)
    tan = ((-1.30936939181383777646e4, 1.15351664838587416140e6, -1.79565251976484877988e7),
           (1.0, 1.36812963470692954678e4, -1.32089234440210967447e6,
            2.50083801823357915839e7, -5.38695755929454629881e7))
    asin = ((3.47933107596021167570e-05, 7.91534994289814532176e-04,
             -4.00555345006794114027e-02, 2.01212532134862925881e-01,
             -3.25565818622400915405e-01, 1.66666666666666657415e-01),
            (7.70381505559019352791e-02, -6.88283971605453293030e-01,
             2.02094576023350569471e+00, -2.40339491173441421878e+00, 1.0))
    atan_split = 0.66
    atan = ((-8.750608600031904122785e-1, -1.615753718733365076637e1,
             -7.500855792314704667340e1, -1.228866684490136173410e2,
             -6.485021904942025371773e1),
            (1.0, 2.485846490142306297962e1, 1.650270098316988542046e2,
             4.328810604912902668951e2, 4.853903996359136964868e2,
             1.945506571482613964425e2))
    # exp: the Taylor series 1/13!, ..., 1/3!, 1/2 (truncation below 2^-57 on |r| <= ln2/2)
    exp = tuple(1 / _pymath.factorial(n) for n in range(13, 1, -1))
    exp_lo, exp_hi = -746.0, 711.0
    # log(1+f) = 2s + s R(s^2), s = f/(2+f), R's absolute error < 2^-58.45 (fdlibm)
    log = (1.479819860511658591e-01, 1.531383769920937332e-01, 1.818357216161805012e-01,
           2.222219843214978396e-01, 2.857142874366239149e-01, 3.999999999940941908e-01,
           6.666666666666735130e-01)
    sinh = ((-7.89474443963537015605e-1, -1.63725857525983828727e2,
             -1.15614435765005216044e4, -3.51754964808151394800e5),
            (1.0, -2.77711081420602794433e2, 3.61578279834431989373e4,
             -2.11052978884890840399e6))
    tanh = ((-9.64399179425052238628e-1, -9.92877231001918586564e1,
             -1.61468768441708447952e3),
            (1.0, 1.12811678491632931402e2, 2.23548839060100448583e3,
             4.84406305325125486048e3))
    # erf = x T(x^2)/U(x^2) on |x| < 1, else 1 - exp(-x^2) P(x)/Q(x); 1 beyond 5.9
    erf = ((9.60497373987051638749e0, 9.00260197203842689217e1, 2.23200534594684319226e3,
            7.00332514112805075473e3, 5.55923013010394962768e4),
           (1.0, 3.35617141647503099647e1, 5.21357949780152679795e2,
            4.59432382970980127987e3, 2.26290000613890934246e4, 4.92673942608635921086e4))
    erfc = ((2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0,
             4.86371970985681366614e1, 1.96520832956077098242e2, 5.26445194995477358631e2,
             9.34528527171957607540e2, 1.02755188689515710272e3, 5.57535335369399327526e2),
            (1.0, 1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2,
             9.75708501743205489753e2, 1.82390916687909736289e3, 2.24633760818710981792e3,
             1.65666309194161350182e3, 5.57535340817727675546e2))
    erf_max = 6.0


_K = {'float32': _F32, 'float64': _F64}


# ---- building blocks ---------------------------------------------------------------------
def _poly(x, *c):
    """Horner's rule with fma; coefficients from the highest degree down (Cephes' polevl)."""
    acc = fma(x, c[0], c[1])
    for ci in c[2:]:
        acc = fma(acc, x, ci)
    return acc


def _approx(x, c):
    """The polynomial c, or the rational function c[0]/c[1], at x."""
    return _poly(x, *c[0]) / _poly(x, *c[1]) if isinstance(c[0], tuple) else _poly(x, *c)


def _odd(x, c):
    """x + x^3 c(x^2): the usual form of an odd function's approximation near 0."""
    z = x * x
    return fma(x * z, _approx(z, c), x)


def _int(x):
    return class_for(x, _K[x.Type].int)


def _signbit(x):
    """True where x's sign bit is set (also for -0 and negative NaNs)."""
    return reinterpret_array(_int(x), x) < 0


def _scale(p, n):
    """p * 2**n for an integer-valued float n up to twice the exponent range, with a single
    rounding for p near 1: p times 2**(n >> 1) stays normal, so overflow, underflow and
    subnormal results round as IEEE says (the op `ldexp`, docs/semantics.md)."""
    return op_binary('ldexp', p, n)


def _clamp(x, lo, hi):
    """Like clip, but NaN passes through (minimum/maximum would replace it)."""
    return select(x > hi, hi, select(x < lo, lo, x))


def _frexp(x):
    """(e, f): x = 2**e (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)), e a float; for finite x > 0
    including subnormals (the callers mask other inputs). Adding 1.0 - sqrt(1/2) to the bits
    before splitting centres the mantissa without a compare (as in musl's logf)."""
    k = _K[x.Type]
    T, UInt = type(x), class_for(x, k.uint)
    tiny = x < k.min_normal
    x = select(tiny, x * k.sub_scale, x)
    bits = reinterpret_array(UInt, x) + (k.one_bits - k.sqrth_bits)
    e = T(bits >> k.mant) - k.bias
    e = select(tiny, e - k.sub_shift, e)
    m = reinterpret_array(T, (bits & k.mant_mask) + k.sqrth_bits)
    return e, m - 1.0                                   # exact (Sterbenz)


def _log_special(x, r):
    """The IEEE results of log-like functions: -inf at +-0, inf at inf, NaN for x < 0, NaN."""
    r = select(x == inf, inf, r)
    r = select(x == 0, -inf, r)
    return select(x >= 0, r, nan)


TRACED = {}             # name -> the TracedFunction of each _float_fn


def _float_fn(fn, rule=None):
    """Lifts fn(float arrays of one type) to static vectors, integer arrays (as Float), mixed
    precisions (promoted to Float64) and Python scalars (constant-folded Float64 literals).
    Its derivative is the analytic rule `rule` (default: its name) of pbc/ad/rules.py, not
    that of the approximation fn computes (rule=False: fn sees to its derivatives itself)."""
    name, doc = fn.__name__, fn.__doc__
    traced = TRACED[name] = _runtime.TracedFunction(fn)     # recorded once, replayed after
    inner = traced if rule is False else ad_function.differentiable(rule or name)(traced)

    def lifted(*args):
        arrays = [a for a in args if isinstance(a, ArrayBase)]
        wide = builtins.any(a.Type == 'float64' for a in arrays)
        T = class_for(arrays[0], 'float64' if wide else 'float32')
        return inner(*(a if type(a) is T else T(a) for a in args))
    lifted.__name__, lifted.__doc__ = name, doc
    general = componentwise(lifted, floating=True)

    def call(*args):
        # (the common call, on float arrays of one class without derivatives, needs none of
        # the lifting: a third of sin's tracing time)
        if plain_float_arrays(args):
            return traced(*args)
        return general(*args)
    call.__name__, call.__qualname__, call.__doc__ = name, name, doc
    return call


# ---- trigonometric -----------------------------------------------------------------------
def _reduce_pio2(x, exact=False):
    """(r, q): |x| = q pi/2 + r with |r| <= pi/4 (a little more unless `exact`), q an integer
    array whose low bits are those of the quadrant. Three-part Cody-Waite reduction with
    fma; accurate up to 2^20 (float32) and 2^45 (float64), degrading slowly beyond. Past
    trig_max the quadrant is unknown: r = 0, and q = 0 (float32 needs q < 2^23 for the bit
    trick below)."""
    k = _K[x.Type]
    ax = abs(x)
    p = ax * k.two_over_pi[0]
    q = round(p)
    if exact:
        # p is off by up to ulp(p)/2 (1/32 at 2^20 in float32), which can leave |r| > pi/4
        # where the tan polynomial is poor (sin and cos stay within 2 ulp: float32 checked
        # exhaustively on [2^-3, 2^20]): correct q with the low part of |x| 2/pi
        q = q + round((p - q) + fma(ax, k.two_over_pi[0], -p) + ax * k.two_over_pi[1])
    r = fma(q, -k.pio2[0], ax)
    r = fma(q, -k.pio2[1], r)
    r = fma(q, -k.pio2[2], r)
    ok = ax <= k.trig_max
    q = reinterpret_array(_int(x), select(ok, q, 0.0) + 2.0 ** k.mant)   # q < 2^mant
    return select(ok, r, ax * 0.0), q                           # ax * 0: NaN for inf


def _sincos(x, want_sin=True, want_cos=True):
    k = _K[x.Type]
    r, q = _reduce_pio2(x)
    z = r * r
    s = fma(r * z, _poly(z, *k.sin), r)                     # r + r^3 P(r^2)
    c = fma(z, fma(z, _poly(z, *k.cos), -0.5), 1.0)         # 1 - r^2/2 + r^4 Q(r^2)
    odd = (q & 1) != 0
    out = []
    if want_sin:        # sin(q pi/2 + r) = s, c, -s, -c for q mod 4 = 0..3; sin is odd
        v = select(odd, c, s)
        out.append(mulsign(select((q & 2) != 0, -v, v), x))
    if want_cos:        # cos(q pi/2 + r) = c, -s, -c, s
        v = select(odd, s, c)
        out.append(select(((q + 1) & 2) != 0, -v, v))
    return out


@_float_fn
def sin(x):
    """Sine; 2 / 1 ulp for |x| <= 2^20 / 2^45 (float32 / float64). Beyond 2^23 / 2^52, where
    neighbouring floats lie more than ~pi apart, the result is 0."""
    return _sincos(x, want_cos=False)[0]


@_float_fn
def cos(x):
    """Cosine; 2 / 1 ulp, with the ranges of sin (beyond them, 1)."""
    return _sincos(x, want_sin=False)[0]


@functools.partial(_float_fn, rule=False)
def _sincos_flat(x):
    if _runtime.ad_tracked((x,)):
        return sin(x), cos(x)          # (each with its own derivative rule)
    return tuple(_sincos(x))


def sincos(x):
    """(sin(x), cos(x)), sharing one argument reduction."""
    if isinstance(x, StaticArray):
        pairs = [_sincos_flat(c) for c in x._items]
        T = vector_type(x.Size, type(pairs[0][0]))
        return T._from([p[0] for p in pairs]), T._from([p[1] for p in pairs])
    return _sincos_flat(x)


@_float_fn
def tan(x):
    """Tangent; 3 / 2 ulp with the ranges of sin (beyond them, 0). tan(q pi/2 + r) is t or
    -1/t for t = tan(r), so the relative accuracy holds next to the poles too."""
    r, q = _reduce_pio2(x, exact=True)
    t = _odd(r, _K[x.Type].tan)
    return mulsign(select((q & 1) != 0, -1.0 / t, t), x)


# ---- inverse trigonometric ---------------------------------------------------------------
def _asin_parts(x):
    """(big, p): asin|x| is pi/2 - 2p where big (|x| > 1/2), else p; p = asin(w) with
    w = sqrt((1 - |x|)/2) or |x|, both <= 1/2, using asin(a) = pi/2 - 2 asin(sqrt((1-a)/2))."""
    a = abs(x)
    big = a > 0.5
    z = select(big, 0.5 - 0.5 * a, a * a)      # exact (Sterbenz); < 0 for |x| > 1, so ...
    w = select(big, sqrt(z), a)               # ... NaN from the sqrt
    return big, fma(w * z, _approx(z, _K[x.Type].asin), w)


@_float_fn
def asin(x):
    """Arc sine; 2 / 2 ulp; NaN outside [-1, 1]."""
    k = _K[x.Type]
    big, p = _asin_parts(x)
    return mulsign(select(big, fma(p, -2.0, k.pio2[0]) + k.pio2[1], p), x)


@_float_fn
def acos(x):
    """Arc cosine; 1 / 1 ulp: pi/2 - asin(x), or near |x| = 1 from w = sqrt((1-|x|)/2):
    2 asin(w) for x > 0, pi - 2 asin(w) for x < 0."""
    k = _K[x.Type]
    big, p = _asin_parts(x)
    near_one = select(x < 0, fma(p, -2.0, k.pi[0]) + k.pi[1], 2.0 * p)
    return select(big, near_one, (k.pio2[0] - mulsign(p, x)) + k.pio2[1])


def _atan_unit(t):
    """atan(t) for 0 <= t <= 1 (or NaN), using atan(t) = pi/4 + atan((t-1)/(t+1)) above the
    kernel's interval."""
    k = _K[t.Type]
    big = t > k.atan_split
    p = _odd(select(big, (t - 1.0) / (t + 1.0), t), k.atan)
    return select(big, k.pio4[0] + (p + k.pio4[1]), p)


@_float_fn
def atan(x):
    """Arc tangent; 2 / 2 ulp: atan|x| = pi/2 - atan(1/|x|) for |x| > 1."""
    k = _K[x.Type]
    a = abs(x)
    inv = a > 1.0
    b = _atan_unit(select(inv, 1.0 / a, a))
    return mulsign(select(inv, (k.pio2[0] - b) + k.pio2[1], b), x)


@_float_fn
def atan2(y, x):
    """Angle of the point (x, y) in [-pi, pi]; 3 / 2 ulp, with the signed zeros and infinities
    of IEEE 754 (C99 Annex F). atan of min/max of |x|, |y|, then octant fix-ups."""
    k = _K[x.Type]
    ax, ay = abs(x), abs(y)
    swap = ay > ax
    t = select(swap, ax, ay) / select(swap, ay, ax)         # NaN if either input is NaN
    t = select(ax == ay, 1.0, t)                            # inf / inf
    t = select((ax == 0) & (ay == 0), 0.0, t)               # 0 / 0
    b = _atan_unit(t)
    b = select(swap, (k.pio2[0] - b) + k.pio2[1], b)
    b = select(_signbit(x), (k.pi[0] - b) + k.pi[1], b)
    return mulsign(b, y)


# ---- exponential and logarithm -----------------------------------------------------------
def _exp_kernel(r):
    """e^r = 1 + (r + r^2 P(r)) for |r| <= ln(2)/2: only the last two additions round at the
    scale of the result."""
    return 1.0 + fma(r * r, _poly(r, *_K[r.Type].exp), r)


def _exp(x, shift=0):
    """exp(x) * 2**shift (shift: 0, or -1 for sinh/cosh, which must not overflow early)."""
    k = _K[x.Type]
    x = _clamp(x, k.exp_lo, k.exp_hi)
    n = round(x * k.log2e)
    r = fma(n, -k.ln2[0], x)                            # exact (see the module docstring)
    r = fma(n, -k.ln2[1], r)
    return _scale(_exp_kernel(r), n + shift if shift else n)


def _exp2_64(hi, lo=0.0):
    """2**(hi + lo) in float64 for a double-double exponent (|lo| <= ulp(hi))."""
    k = _F64
    hi = _clamp(hi, -1080.0, 1030.0)
    n = round(hi)
    f = (hi - n) + lo                                   # hi - n is exact
    u = f * k.ln2[0]                                    # u + u_lo = f ln 2 to ~2^-100
    u_lo = fma(f, k.ln2[0], -u) + f * k.ln2[1]
    p = _exp_kernel(u)
    return _scale(fma(p, u_lo, p), n)


@_float_fn
def exp(x):
    """e**x; 1 / 1 ulp. Overflows to inf, underflows through the subnormals to 0."""
    return _exp(x)


@_float_fn
def exp2(x):
    """2**x; 1 / 1 ulp, exact at integers."""
    if x.Type == 'float64':
        return _exp2_64(x)
    x = _clamp(x, -151.0, 129.0)
    n = round(x)
    f = x - n
    return _scale(fma(f, _poly(f, *_F32.exp2), 1.0), n)


def _log_dd64(x):
    """(e, hi, lo): log(x) = e ln 2 + hi + lo to ~2^-58 relative (finite x > 0). With s kept
    as a double-double, only the <= 1% correction s R(s^2) carries rounding errors."""
    e, f = _frexp(x)
    d = 2.0 + f
    d_lo = (2.0 - d) + f                                # d + d_lo = 2 + f exactly
    rd = 1.0 / d
    s = f * rd
    s_lo = (fma(-s, d, f) - s * d_lo) * rd              # s + s_lo = f/(2+f) to ~2^-104
    z = s * s
    R = z * _poly(z, *_F64.log)
    hi = 2.0 * s
    lo = fma(s, R, s_lo * fma(R, 3.0, 2.0))             # 2 s_lo + s R + s_lo (s R)'(s)
    h = hi + lo                                         # renormalize
    return e, h, (hi - h) + lo


def _log2_dd64(x):
    """(hi, lo): log2(x) = hi + lo (finite x > 0)."""
    k = _F64
    e, h, l = _log_dd64(x)
    p = h * k.log2e
    p_lo = fma(h, k.log2e, -p) + fma(l, k.log2e, h * k.log2e_lo)
    hi = e + p                                          # Fast2Sum: |p| <= 1/2 <= |e|, or e = 0
    return hi, ((e - hi) + p) + p_lo


def _log32_parts(x):
    """(e, f, w): log(x) = e ln 2 + f + w with w = -f^2/2 + f^3 P(f)."""
    e, f = _frexp(x)
    z = f * f
    return e, f, fma(z, -0.5, f * z * _poly(f, *_F32.log))


@_float_fn
def log(x):
    """Natural logarithm; 1 / 1 ulp; -inf at 0, NaN for x < 0."""
    k = _K[x.Type]
    if x.Type == 'float32':
        e, f, w = _log32_parts(x)
        r = fma(e, k.ln2[0], f + fma(e, k.ln2[1], w))
    else:
        e, hi, lo = _log_dd64(x)
        r = fma(e, k.ln2[0], hi) + fma(e, k.ln2[1], lo)
    return _log_special(x, r)


@_float_fn
def log2(x):
    """Base-2 logarithm; 1 / 1 ulp, exact at powers of two."""
    if x.Type == 'float32':
        # e + (f + w) log2(e), with log2(e) = 1 + A so that f's product is not rounded
        e, f, w = _log32_parts(x)
        A = _F32.log2e_m1
        r = (fma(f, A, fma(w, A, w)) + f) + e
    else:
        hi, lo = _log2_dd64(x)
        r = hi + lo
    return _log_special(x, r)


# ---- power -------------------------------------------------------------------------------
def _power_int(x, n):
    """x**n by repeated squaring (Python int n)."""
    if n == 0:
        return full(type(x), 1, len(x)) if isinstance(x, ArrayBase) else x ** 0
    result, base, m = None, x, builtins.abs(n)
    while m:
        if m & 1:
            result = base if result is None else result * base
        m >>= 1
        if m:
            base = base * base
    if result is x and isinstance(x, ArrayBase):
        result = type(x)(x)      # x**1: a new array, never the operand (scatters copy)
    return 1.0 / result if n < 0 else result


@functools.partial(_float_fn, rule='power')
def _power_real(x, y):
    """2**(y log2|x|) in double-double precision, float32 going through float64, plus the
    special cases of IEEE 754 pow."""
    if x.Type == 'float32':
        Float64 = class_for(x, 'float64')
        return type(x)(_power_real(Float64(x), Float64(y)))
    ax = abs(x)
    hi, lo = _log2_dd64(ax)
    hi = _log_special(ax, hi)                               # -inf at 0, inf at inf
    z = y * hi
    z_lo = select(abs(z) < 1100.0, fma(y, hi, -z) + y * lo, 0.0)    # else inf/0 (or NaN)
    z = select(hi == 0, 0.0, z)                             # |x| = 1: 1, even for y = +-inf
    r = _exp2_64(z, z_lo)
    y_int = floor(y) == y                                   # also for +-inf
    y_odd = y_int & (floor(0.5 * y) != 0.5 * y)
    r = select(y_odd & _signbit(x), -r, r)                  # (-x)**odd, also for -0, -inf
    r = select((x < 0) & (x != -inf) & ~y_int, nan, r)      # negative ** fraction
    return select(y == 0, 1.0, r)                           # even for x = NaN


@componentwise
def power(x, y):
    """x ** y. Python int exponents use repeated squaring: for integer arrays (exact), and for
    float arrays while |y| <= 4 (<= 3 ulp). Other exponents take 2**(y log2|x|) with log2 as
    a double-double: float32 results (computed in float64) are correctly rounded in practice;
    float64 is within 1 ulp while |y log2 x| < 32, as log2's ~2^-58 relative error grows
    with it to 3 ulp at 128 and 14 ulp near overflow (x close to 1, huge y). IEEE 754 special
    cases: x**0 = 1**y = 1 even for NaN, negative ** non-integer = NaN, signed 0 and inf."""
    if isinstance(y, float) and y.is_integer() and builtins.abs(y) <= 1024:
        y = int(y)
    if isinstance(y, int) and not isinstance(y, bool):
        exact = isinstance(x, int) or (isinstance(x, ArrayBase) and
                                       not x.Type.startswith('float'))
        if exact or builtins.abs(y) <= 4:
            return _power_int(x, y)
    return _power_real(x, y)


# ---- hyperbolic and error function -------------------------------------------------------
@_float_fn
def sinh(x):
    """Hyperbolic sine; 2 / 2 ulp: x + x^3 P(x^2) on |x| <= 1, else e/2 - 1/(2e) with
    e/2 = exp(|x|) 2^-1 computed without overflowing early."""
    a = abs(x)
    h = _exp(a, -1)
    return mulsign(select(a <= 1.0, _odd(a, _K[x.Type].sinh), h - 0.25 / h), x)


@_float_fn
def cosh(x):
    """Hyperbolic cosine; 1 / 2 ulp: e/2 + 1/(2e)."""
    h = _exp(abs(x), -1)
    return h + 0.25 / h


@_float_fn
def tanh(x):
    """Hyperbolic tangent; 1 / 2 ulp: x + x^3 P(x^2) on |x| < 0.625, else
    1 - 2/(exp(2|x|) + 1)."""
    a = abs(x)
    big = 1.0 - 2.0 / (_exp(2.0 * a) + 1.0)
    return mulsign(select(a < 0.625, _odd(a, _K[x.Type].tanh), big), x)


@_float_fn
def erf(x):
    """Error function; 2 / 3 ulp: x P(x^2) near 0, 1 - exp(-x^2) Q(|x|) from |x| = 1 on."""
    k = _K[x.Type]
    a = _clamp(abs(x), 0.0, k.erf_max)
    if x.Type == 'float32':
        q = 1.0 / a
        y = q * q
        tail = q * select(a < 2.0, _poly(y, *k.erfc_p), _poly(y, *k.erfc_r))
    else:
        tail = _approx(a, k.erfc)
    big = 1.0 - _exp(-(a * a)) * tail
    return select(a < 1.0, x * _approx(x * x, k.erf), mulsign(big, x))
