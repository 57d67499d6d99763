"""PCG32: O'Neill's permuted congruential generator, one independent stream per lane,
bit-identical with the reference `pcg32_random_r` (and with Dr.Jit's PCG32)."""

from .control import while_loop
from .routines import arange, select

DEFAULT_STATE = 0x853C49E6748FEA9B
DEFAULT_STREAM = 0xDA3E39CB94B95BDB
MULT = 0x5851F42D4C957F2D
MASK64 = (1 << 64) - 1


class PCG32Base:
    """Subclasses bind the backend's array types (UInt32, UInt64, Float32, Float64)."""
    UInt32 = UInt64 = Float32 = Float64 = Bool = None
    DRJIT_STRUCT = {}       # {'state': UInt64, 'inc': UInt64}, set per backend

    def __init__(self, size=1, initstate=DEFAULT_STATE, initseq=DEFAULT_STREAM):
        # Lane i is seeded with (initstate + i, initseq + i), as Dr.Jit.
        lane = self.UInt64(arange(self.UInt32, size))
        self.seed(lane + initstate, lane + initseq)

    def __setattr__(self, name, value):
        # The fields keep their types (rng.state = UInt32(...) stores a UInt64), as the
        # fields of Dr.Jit's PCG32 do.
        T = type(self).DRJIT_STRUCT.get(name)
        if T is not None and type(value) is not T:
            value = T(value)
        object.__setattr__(self, name, value)

    def _set(self, name, value):
        """The field `name` takes `value` in place: a draw changes the generator's arrays
        themselves, so that every name bound to them, and the caller of a function that
        draws (a loop body's, a branch's, a call target's), sees the new state (as the
        fields of Dr.Jit's PCG32 do, which its draws assign)."""
        field = self.__dict__.get(name)
        if field is None:
            setattr(self, name, value)          # (a new generator)
        else:
            field._assign(type(field)(value))

    def seed(self, initstate=DEFAULT_STATE, initseq=DEFAULT_STREAM):
        """O'Neill's pcg32_srandom_r: state 0, inc = 2*initseq + 1, step, add initstate, step."""
        U = self.UInt64
        self._set('state', U(0))
        self._set('inc', (U(initseq) << 1) | 1)
        self.next_uint32()
        self._set('state', self.state + U(initstate))
        self.next_uint32()

    def next_uint32(self, mask=True):
        """The next 32 random bits of every lane (lanes where `mask` is False do not advance
        and give 0)."""
        old = type(self.state)(self.state)      # (the state changes in place below)
        new = old * MULT + self.inc
        self._set('state', new if mask is True else select(mask, new, old))
        xorshifted = self.UInt32(((old >> 18) ^ old) >> 27)
        rot = self.UInt32(old >> 59)
        out = (xorshifted >> rot) | (xorshifted << ((0 - rot) & 31))
        return out if mask is True else select(mask, out, 0)

    def next_float32(self, mask=True):
        """Uniform in [0, 1): the top 23 bits of a draw, times 2**-23."""
        return self.Float32(self.next_uint32(mask) >> 9) * (2.0 ** -23)

    def next_float64(self, mask=True):
        """Uniform in [0, 1): one 32-bit draw times 2**-32 (as Dr.Jit)."""
        return self.Float64(self.next_uint32(mask)) * (2.0 ** -32)

    def next_uint32_bounded(self, bound, mask=True):
        """Uniform in [0, bound) without modulo bias: draws are rejected below
        2**32 mod bound, so lanes advance by different amounts (as the reference). The
        rejection loop is a loop in the kernel (or a sequence of kernels, as while_loop
        decides)."""
        if not 0 < bound < 2**32:
            raise ValueError('PCG32.next_uint32_bounded: bound must be in [1, 2**32)')
        threshold = (2**32 - bound) % bound

        def body(rng, result, pending):
            r = rng.next_uint32(pending)
            accept = pending & (r >= threshold)
            return rng, select(accept, r % bound, result), pending & ~accept

        rng, result, _ = while_loop((self, self.UInt32(0), self.Bool(True) & mask),
                                    lambda rng, result, pending: pending, body,
                                    labels=('rng', 'result', 'pending'))
        self._set('state', rng.state)
        return result

    def __iadd__(self, delta):
        """Skips ahead `delta` draws in O(log delta) (O'Neill's pcg32_advance)."""
        delta = int(delta) & MASK64
        mult, plus = self.UInt64(MULT), self.inc
        acc_mult, acc_plus = self.UInt64(1), self.UInt64(0)
        while delta:
            if delta & 1:
                acc_mult = acc_mult * mult
                acc_plus = acc_plus * mult + plus
            plus = (mult + 1) * plus
            mult = mult * mult
            delta >>= 1
        self._set('state', acc_mult * self.state + acc_plus)
        return self

    def __isub__(self, delta):
        return self.__iadd__(-int(delta))

    def _pbc_children(self):
        return [self.state, self.inc]

    def _pbc_rebuild(self, children):
        out = object.__new__(type(self))
        out.state, out.inc = children
        return out

    def _pbc_assign(self, children):
        self.state, self.inc = children

    def __repr__(self):
        return f'{type(self).__name__}[state={self.state}, inc={self.inc}]'


def make_pcg32(flat, module_name):
    return type('PCG32', (PCG32Base,), dict(
        UInt32=flat['UInt32'], UInt64=flat['UInt64'], Float32=flat['Float32'],
        Float64=flat['Float64'], Bool=flat['Bool'], __module__=module_name,
        DRJIT_STRUCT={'state': flat['UInt64'], 'inc': flat['UInt64']},
        __qualname__='PCG32'))
