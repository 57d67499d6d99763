"""PCG32 against a reference written with plain Python integers (O'Neill's pcg32_random_r)."""

import numpy as np
import pytest
import suite_backend
from suite_backend import PCG32, UInt64

M64 = (1 << 64) - 1
MULT = 0x5851F42D4C957F2D
STATE, STREAM = 0x853C49E6748FEA9B, 0xDA3E39CB94B95BDB


class Reference:
    def __init__(self, initstate, initseq):
        self.state, self.inc = 0, ((initseq << 1) | 1) & M64
        self.next()
        self.state = (self.state + initstate) & M64
        self.next()

    def next(self):
        old = self.state
        self.state = (old * MULT + self.inc) & M64
        xorshifted = (((old >> 18) ^ old) >> 27) & 0xFFFFFFFF
        rot = old >> 59
        return ((xorshifted >> rot) | (xorshifted << ((-rot) & 31))) & 0xFFFFFFFF

    def bounded(self, bound):
        threshold = (2**32 - bound) % bound
        while True:
            r = self.next()
            if r >= threshold:
                return r % bound


def references(n, initstate=STATE, initseq=STREAM):
    return [Reference((initstate + i) & M64, (initseq + i) & M64) for i in range(n)]


def test_next_uint32_matches_reference():
    rng, refs = PCG32(37), references(37)
    for _ in range(5):
        np.testing.assert_array_equal(rng.next_uint32().numpy(), [r.next() for r in refs])


def test_known_first_values():
    # The reference's default generator (lane 0 with the default constants).
    assert Reference(STATE, STREAM).next() == PCG32(1).next_uint32()[0]


def test_seed_and_floats():
    rng = PCG32(4)
    rng.seed(UInt64(1, 2, 3, 4), UInt64(54, 54, 7, 7))
    refs = [Reference(a, b) for a, b in ((1, 54), (2, 54), (3, 7), (4, 7))]
    u = [r.next() for r in refs]
    np.testing.assert_array_equal(rng.next_float32().numpy(),
                                  np.array([(x >> 9) * 2.0**-23 for x in u], np.float32))
    u = [r.next() for r in refs]
    np.testing.assert_array_equal(rng.next_float64().numpy(), [x * 2.0**-32 for x in u])


@pytest.mark.parametrize('bound', [1, 3, 1000, 2**31 + 7])
def test_bounded_rejects_like_the_reference(bound):
    rng, refs = PCG32(50, initstate=11, initseq=99), references(50, 11, 99)
    for _ in range(3):
        np.testing.assert_array_equal(rng.next_uint32_bounded(bound).numpy(),
                                      [r.bounded(bound) for r in refs])
    # lanes advanced by different amounts, exactly as the reference
    np.testing.assert_array_equal(rng.next_uint32().numpy(), [r.next() for r in refs])


def test_skip_ahead():
    a, b = PCG32(8), PCG32(8)
    for _ in range(1000):
        a.next_uint32()
    b += 1000
    np.testing.assert_array_equal(a.next_uint32().numpy(), b.next_uint32().numpy())
    b -= 1001
    np.testing.assert_array_equal(b.next_uint32().numpy(), PCG32(8).next_uint32().numpy())


def test_masked_draws_do_not_advance():
    rng = PCG32(4)
    mask = suite_backend.Bool(True, False, True, False)
    first = rng.next_uint32(mask).numpy()
    assert first[1] == 0 and first[3] == 0
    again = rng.next_uint32().numpy()
    ref = references(4)
    ref[0].next()                    # the masked draw advanced lanes 0 and 2 only
    ref[2].next()
    np.testing.assert_array_equal(again, [r.next() for r in ref])


def test_errors():
    with pytest.raises(ValueError, match='bound'):
        PCG32(2).next_uint32_bounded(0)
