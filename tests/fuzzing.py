"""The settings every random-program test shares.

Runs are deterministic (derandomized, no example database), so a failure in CI fails the
same way here. Shrinking a failure re-runs programs for minutes, so it is off unless
PBC_FUZZ_SHRINK=1; the failing program is printed either way. PBC_FUZZ_SCALE=k runs k
times as many programs (long local fuzzing sessions; the suite's default keeps it short).
"""

import contextlib
import os

from hypothesis import HealthCheck, Phase, settings

from pbc import control

SCALE = float(os.environ.get('PBC_FUZZ_SCALE', '1'))

FUZZ = settings(deadline=None, derandomize=True, database=None, print_blob=False,
                report_multiple_bugs=False, suppress_health_check=list(HealthCheck),
                phases=[Phase.explicit, Phase.generate] +
                ([Phase.shrink] if os.environ.get('PBC_FUZZ_SHRINK') else []))


def examples(n):
    """n, scaled by PBC_FUZZ_SCALE (at least 1)."""
    return max(1, int(n * SCALE))


class _AllInvariant(dict):
    """A memory of loop-invariant state (pbc.control._invariant_memo) that guesses all of
    every loop's state invariant and learns nothing: every loop records again from a wrong
    guess, the path a loop takes whose code another loop, of other state, shares."""

    def get(self, key, default=None):
        return frozenset(range(len(key[2])))

    def __setitem__(self, key, value):
        pass


@contextlib.contextmanager
def guessing_all_state_invariant():
    """Runs the code inside with _AllInvariant as pbc's memory of loop-invariant state."""
    memo = control._invariant_memo
    control._invariant_memo = _AllInvariant()
    try:
        yield
    finally:
        control._invariant_memo = memo
