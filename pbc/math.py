"""Transcendental functions built from traced primitive ops (so every backend gets them)."""

from .routines import componentwise, select


@componentwise
def power(x, y):
    """x ** y. Integer exponents use repeated squaring (exact for integer arrays)."""
    if isinstance(y, int) or (isinstance(y, float) and y.is_integer() and abs(y) <= 1024):
        n = int(y)
        result, base, k = None, x, abs(n)
        while k:
            if k & 1:
                result = base if result is None else result * base
            k >>= 1
            if k:
                base = base * base
        if result is None:
            result = x * 0 + 1
        return 1.0 / result if n < 0 else result
    raise NotImplementedError('pbc.power: non-integer exponents need exp2/log2')


__all__ = ['power', 'select']
