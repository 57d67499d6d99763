"""NumPy reference semantics of pbc's elementwise ops (the test oracle) and input data."""

import numpy as np
from suite_backend import Bool, Float32, Float64, Int32, Int64, UInt32, UInt64

import pbc

TYPES = {'bool': Bool, 'int32': Int32, 'uint32': UInt32, 'int64': Int64, 'uint64': UInt64,
         'float32': Float32, 'float64': Float64}
DTYPES = {k: np.dtype(k if k != 'bool' else np.bool_) for k in TYPES}
INTS = ('int32', 'uint32', 'int64', 'uint64')
FLOATS = ('float32', 'float64')


def edge_values(t):
    """Values where implementations tend to differ."""
    if t == 'bool':
        return np.array([False, True], dtype=np.bool_)
    if t in FLOATS:
        f = np.finfo(t)
        return np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, np.inf, -np.inf,
                         np.nan, f.max, -f.max, f.tiny, f.tiny / 4, 1e-3, 3.0e9, -3.0e9,
                         1e19, -1e19, 123456.789], dtype=t)
    i = np.iinfo(t)
    vals = [0, 1, 2, 3, 7, 31, 32, 33, 63, 64, i.max, i.max - 1, i.min, i.min + 1]
    if i.min < 0:
        vals += [-1, -2, -7, -31, -33]
    return np.array(vals, dtype=t)


def random_values(t, n, rng):
    if t == 'bool':
        return rng.random(n) < 0.5
    if t in FLOATS:
        mag = 10.0 ** rng.uniform(-3, 3, n)
        return (mag * rng.choice([-1, 1], n)).astype(t)
    i = np.iinfo(t)
    big = rng.integers(i.min, i.max, n, dtype=t, endpoint=True)
    small = rng.integers(-40 if i.min < 0 else 0, 40, n).astype(t)
    return np.where(rng.random(n) < 0.5, big, small)


def sample(t, n, rng):
    """Random values with every edge value included (n >= len(edges))."""
    e = edge_values(t)
    return np.concatenate([e, random_values(t, n - len(e), rng)])


def bits(t):
    return DTYPES[t].itemsize * 8


# ---- integer semantics ---------------------------------------------------------------------
def _int_divmod(a, b):
    with np.errstate(all='ignore'):
        t = a.dtype
        zero = b == 0
        b1 = np.where(zero, 1, b).astype(t)
        if np.issubdtype(t, np.signedinteger):
            minus1 = b1 == -1
            b2 = np.where(minus1, 1, b1).astype(t)
            q = np.floor_divide(a, b2)
            r = a - q * b2
            fix = (r != 0) & ((a < 0) != (b2 < 0))
            q = np.where(fix, q + 1, q).astype(t)
            r = (a - q * b2).astype(t)
            q = np.where(minus1, np.negative(a), q).astype(t)
            r = np.where(minus1, 0, r).astype(t)
        else:
            q, r = np.divmod(a, b1)
        return np.where(zero, 0, q).astype(t), np.where(zero, 0, r).astype(t)


def int_div(a, b):
    return _int_divmod(a, b)[0]


def int_mod(a, b):
    return _int_divmod(a, b)[1]


def shl(a, b):
    n = bits(a.dtype.name)
    big = b.astype(np.uint64) >= n
    s = np.where(big, 0, b).astype(a.dtype)
    with np.errstate(all='ignore'):
        return np.where(big, 0, np.left_shift(a, s)).astype(a.dtype)


def shr(a, b):
    t = a.dtype
    n = bits(t.name)
    big = b.astype(np.uint64) >= n
    s = np.where(big, n - 1 if np.issubdtype(t, np.signedinteger) else 0, b).astype(t)
    r = np.right_shift(a, s)
    if not np.issubdtype(t, np.signedinteger):
        r = np.where(big, 0, r)
    return r.astype(t)


def mul_hi(a, b):
    n = bits(a.dtype.name)
    out = [((int(x) * int(y)) >> n) & ((1 << n) - 1) for x, y in zip(a, b)]
    u = np.array(out, dtype=np.uint64 if n == 64 else np.uint32)
    return u.view(a.dtype) if np.issubdtype(a.dtype, np.signedinteger) else u


def popcnt(a):
    n = bits(a.dtype.name)
    return np.array([bin(int(x) & ((1 << n) - 1)).count('1') for x in a], dtype=a.dtype)


def lzcnt(a):
    n = bits(a.dtype.name)
    return np.array([n - (int(x) & ((1 << n) - 1)).bit_length() for x in a], dtype=a.dtype)


def tzcnt(a):
    n = bits(a.dtype.name)
    out = []
    for x in a:
        v = int(x) & ((1 << n) - 1)
        out.append(n if v == 0 else (v & -v).bit_length() - 1)
    return np.array(out, dtype=a.dtype)


# ---- conversions ---------------------------------------------------------------------------
def cast(a, t):
    """pbc's conversions: float->int truncates and saturates (NaN -> 0), ints wrap."""
    src = a.dtype
    dst = DTYPES[t]
    if t == 'bool':
        return a != 0
    if np.issubdtype(src, np.floating) and np.issubdtype(dst, np.integer):
        i = np.iinfo(dst)
        out = []
        for x in a.astype(np.float64):
            if np.isnan(x):
                out.append(0)
            elif x <= i.min:
                out.append(i.min)
            elif x >= i.max:
                out.append(i.max)
            else:
                out.append(int(x))
        return np.array(out, dtype=dst)
    with np.errstate(all='ignore'):
        return a.astype(dst)


def flat(t, values):
    """A pbc array of type name t holding values (evaluated memory)."""
    return TYPES[t](np.asarray(values, dtype=DTYPES[t]))


def as_numpy(x):
    return np.asarray(x.numpy())


def assert_same(actual, expected, what=''):
    """Bit-exact for integers and booleans; value-exact with NaN == NaN and -0 == 0 for
    floats (the order of signed zeros out of min/max is unspecified)."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.dtype == expected.dtype, f'{what}: dtype {actual.dtype} != {expected.dtype}'
    np.testing.assert_array_equal(actual, expected, err_msg=what)


__all__ = ['pbc', 'TYPES', 'DTYPES', 'INTS', 'FLOATS', 'sample', 'edge_values', 'cast',
           'flat', 'as_numpy', 'assert_same', 'int_div', 'int_mod', 'shl', 'shr', 'mul_hi',
           'popcnt', 'lzcnt', 'tzcnt', 'bits', 'random_values']
