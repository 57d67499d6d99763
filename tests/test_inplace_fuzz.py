"""Random programs of statements (tests/programs.py) against plain Python, lane by lane.

Each program runs under @pbc.syntax with its loops, conditionals and calls symbolic, evaluated
and symbolic while another array carries derivatives (the derivative machinery's paths), that
also with every loop recorded first from a wrong guess of its invariant state;
its result and the caller's arguments afterwards must equal those of the same program run
once per lane in plain Python (`programs.run_lanes`). UInt32, Int32 and Float programs
must agree exactly; Float64 programs within rounding, and so must the values and the
derivatives with respect to the argument `a` of runs that differentiate, forward and
reverse mode (loops given max_iterations): against the Jacobian that central finite
differences of the lane-by-lane oracle give.

A Float64 program whose oracle moves past the tolerance when its sin and cos round the
other way (a chaotic one) is out of the oracle's range. A failure prints the program.
PBC_FUZZ_SCALE=k runs k times as many programs; each has a time limit (a hang is a
failure). `python tests/test_inplace_fuzz.py FIRST COUNT [KIND
...]` (kinds of programs.KINDS; uint by default) runs seeds FIRST.. outside pytest and
prints a line per failing seed (the large runs of the closing notes).
"""

import contextlib
import os
import resource
import signal
import sys
import tempfile

import inplace_found
import numpy as np
import programs
import pytest
import suite_backend
from fuzzing import FUZZ, examples, guessing_all_state_invariant
from hypothesis import given, note, settings
from hypothesis import strategies as st

import pbc

# Per program: seconds of CPU time (a loop that never ends spins), and of wall-clock time
# (one that waits); CPU time, as a busy machine stretches the wall-clock time of a slow
# program (a Float64 program with derivatives through loops three deep and a call takes
# 11 s of CPU: it ran past 60 s beside four other processes on two cores).
TIME_LIMIT = 60
WALL_LIMIT = 600
MEMORY_LIMIT = 8 << 30                # bytes of address space, for `main`
MODES = ('symbolic', 'evaluated')
H = 1e-6                              # finite-difference step


# Seeds whose programs the oracle does not model (programs.OutOfRange), or whose
# derivatives' finite differences swing with the step down to 1e-9.
SKIPPED = []


class Hang(Exception):
    pass


def _alarm(*_):
    raise Hang(f'the program ran longer than {WALL_LIMIT} s')


def _spun(*_):
    raise Hang(f'the program took more than {TIME_LIMIT} s of CPU time')


def flags(mode):
    sym = mode == 'symbolic'
    return (pbc.scoped_set_flag(pbc.JitFlag.SymbolicLoops, sym),
            pbc.scoped_set_flag(pbc.JitFlag.SymbolicConditionals, sym),
            pbc.scoped_set_flag(pbc.JitFlag.SymbolicCalls, sym))


def run_mode(fn, values, kind, mode):
    """The program's lanes, its loops, conditionals and calls symbolic or evaluated; mode
    'tracked': symbolic while some array carries derivatives (loops and calls then run
    through their derivative machinery, pbc/ad/, even for UInt32 programs); 'guessed':
    tracked, each loop recorded first from the guess that all its state is loop-invariant
    (which a memory of another loop of the same code may give)."""
    a, b, c = flags(mode if mode in MODES else 'symbolic')
    tracked = suite_backend.Float64(1.0)
    if mode not in MODES:
        pbc.enable_grad(tracked)
    guess = guessing_all_state_invariant() if mode == 'guessed' else contextlib.nullcontext()
    with a, b, c, guess:
        return programs.run_pbc(fn, values, suite_backend.module, kind)


def derivatives(fn, values, mode):
    """(values, forward, reverse): per lane, the outputs, d(outputs)/da and
    d(sum_j w_j outputs_j)/da (the values from the run that differentiates in forward
    mode: the loops and calls whose state carries derivatives take other paths)."""
    Float64 = suite_backend.Float64
    lanes = len(values[0])
    a, b, c = flags(mode if mode in MODES else 'symbolic')
    guess = guessing_all_state_invariant() if mode == 'guessed' else contextlib.nullcontext()
    with a, b, c, guess:
        # forward: the tangent 1 on a
        a0 = Float64(values[0])
        pbc.enable_grad(a0)
        parts = _outputs(fn, Float64(a0), values)
        pbc.set_grad(a0, 1.0)
        tracked = [p for p in parts if pbc.grad_enabled(p)]
        if tracked:
            pbc.forward_to(*tracked, flags=pbc.ADFlag.ClearNone)   # (an output may be a itself)
        forward = [pbc.grad(p).numpy() if pbc.grad_enabled(p) else np.zeros(lanes)
                   for p in parts]
        primal = np.array([np.broadcast_to(p.numpy(), lanes) for p in parts]).T
        # reverse: weights w_j on the outputs
        a0 = Float64(values[0])
        pbc.enable_grad(a0)
        parts = _outputs(fn, Float64(a0), values)
        w = WEIGHTS[:len(parts)]
        loss = sum((p * float(wj) for p, wj in zip(parts, w) if pbc.grad_enabled(p)),
                   Float64(0.0))
        pbc.backward(loss)
        g = pbc.grad(a0)
        reverse = g.numpy() if g is not None else np.zeros(lanes)
    return primal, np.array([np.broadcast_to(f, lanes) for f in forward]).T, \
        np.broadcast_to(reverse, lanes)


WEIGHTS = np.random.default_rng(5).uniform(0.5, 1.5, 64)


def _outputs(fn, a, values):
    """The program's outputs (result, then the arguments afterwards) on `a` for argument a."""
    Float64 = suite_backend.Float64
    args = programs.pbc_arguments(values, suite_backend.module, 'float', a, fn.dataclass)
    return [p if isinstance(p, Float64) else Float64(p)
            for p in programs.pbc_outputs(fn(*args), args)]


def finite_differences(source, values, h=H):
    """d(outputs)/da by central differences (step h) of the lane-by-lane oracle: per lane
    m, output j and lane l of a, J[m, j, l] (lanes scatter-add into acc: an output reads
    others' a)."""
    out = []
    for lane in range(programs.LANES):
        up, down = ([list(values[0])] + values[1:] for _ in range(2))
        up[0][lane] += h
        down[0][lane] -= h
        hi, lo = (np.array(programs.run_lanes(source, v, 'float')) for v in (up, down))
        out.append((hi - lo) / (2 * h))
    return np.stack(out, axis=-1)


def wanted(J, outputs):
    """What `derivatives` must give, from the Jacobian J (finite_differences): forward mode
    (tangent 1 on every lane of a) per lane and output, reverse mode per lane of a."""
    return J.sum(axis=2), np.einsum('mjl,j->l', J[:, :outputs], WEIGHTS[:outputs])


def program_source(seed, kind):
    """Program `seed` of `kind` as the large runs draw it (a third with a mode of their own
    for each loop, conditional and call)."""
    return programs.Program(seed, kind, modes=seed % 3 == 0).source()


def check(seed, kind, directory, source=None):
    """None, or why program `seed` of `kind` (or `source`, run on the inputs of `seed`)
    fails."""
    source = source or program_source(seed, kind)
    values = programs.inputs(seed, kind)
    try:
        want = programs.run_lanes(source, values, kind)
    except programs.OutOfRange:
        SKIPPED.append(seed)
        return None
    fn = programs.compile_program(source, os.path.join(directory, f'program_{kind}_{seed}.py'),
                                  kind, suite_backend.module)
    for mode in MODES + ('tracked', 'guessed'):
        why = programs.mismatch(want, run_mode(fn, values, kind, mode), kind)
        if why and kind == 'float' and _chaotic(source, values, want):
            SKIPPED.append(seed)
            return None
        if why:
            return f'{mode}: {why}'
    if kind == 'float':
        try:
            J = finite_differences(source, values)
        except programs.OutOfRange:         # (a step took an argument past the range)
            SKIPPED.append(seed)
            return None
        if np.all(np.isfinite(J)) and np.abs(J).max() < 1e6:
            # (a quarter also with each loop, and each of its derivative loops, recorded
            # first from a wrong guess of its invariant state)
            for mode in MODES + (('guessed',) if seed % 4 == 0 else ()):
                primal, forward, reverse = derivatives(fn, values, mode)
                why = programs.mismatch(want, primal, kind)
                if why:
                    return f'{mode}, differentiated: {why}'
                why = _derivatives_differ(forward, reverse, J)
                # (the differences' own error grows with the curvature, and their rounding
                # with large values that cancel: a program may need steps from 1e-5 down to
                # 1e-9 to tell)
                previous = J
                for h in (H * 10, H / 10, H / 100, H / 1000):
                    if why:
                        try:
                            previous, J = J, finite_differences(source, values, h)
                        except programs.OutOfRange:
                            SKIPPED.append(seed)
                            return None
                        why = _derivatives_differ(forward, reverse, J)
                if why and _derivatives_differ(*wanted(previous, forward.shape[1]), J):
                    # (the differences had not settled at the smallest steps: a lane near
                    # a singularity, where they swing with the step, 11 at 1e-4 and 1e6
                    # at 1e-9; nothing to compare with)
                    SKIPPED.append(seed)
                    return None
                if why:
                    return f'{mode}, {why}'
    return None


def _chaotic(source, values, want):
    """Whether the oracle's own values move past the tolerance when its sin and cos round
    the other way (times 1 -+ 2^-53): a program that amplifies a last-bit difference
    (x *= cos(x) * 4, repeated) has no value to compare with at that tolerance."""
    cos, sin = programs.math.cos, programs.math.sin
    try:
        for e in (2.0 ** -53, -2.0 ** -53):
            programs.math.cos = lambda x, e=e: cos(x) * (1 + e)
            programs.math.sin = lambda x, e=e: sin(x) * (1 + e)
            programs._lane_code.cache_clear()
            try:
                moved = programs.run_lanes(source, values, 'float')
            except programs.OutOfRange:
                return True
            if programs.mismatch(want, moved, 'float'):
                return True
        return False
    finally:
        programs.math.cos, programs.math.sin = cos, sin
        programs._lane_code.cache_clear()


def _derivatives_differ(forward, reverse, J):
    """None, or where forward and reverse mode (`derivatives`) are not the Jacobian J."""
    fd, want_r = wanted(J, forward.shape[1])
    bad = np.argwhere(np.abs(forward - fd) > 1e-5 * (1 + np.abs(fd)))
    if len(bad):
        lane, i = bad[0]
        return (f'forward mode: lane {lane}, output {i}: d/da {forward[lane, i]}, finite '
                f'differences {fd[lane, i]}')
    bad = np.argwhere(np.abs(reverse - want_r) > 1e-5 * (1 + np.abs(want_r)))
    if len(bad):
        lane = bad[0][0]
        return f'reverse mode: lane {lane}: gradient {reverse[lane]}, finite differences ' \
            f'{want_r[lane]}'
    return None


def checked(seed, kind, directory, source=None):
    previous = signal.signal(signal.SIGALRM, _alarm), signal.signal(signal.SIGPROF, _spun)
    signal.alarm(WALL_LIMIT)
    signal.setitimer(signal.ITIMER_PROF, TIME_LIMIT)
    try:
        return check(seed, kind, directory, source)
    finally:
        signal.alarm(0)
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGALRM, previous[0])
        signal.signal(signal.SIGPROF, previous[1])


def outcome(seed, kind, directory, source=None):
    """`checked`, with an exception pbc raised as its failure: an internal error is one."""
    try:
        return checked(seed, kind, directory, source)
    except Exception as e:          # noqa: BLE001
        return f'{type(e).__name__}: {e}'


def fuzz(seed, kind, directory):
    source = programs.Program(seed, kind).source()
    note(source)
    why = checked(seed, kind, str(directory))
    assert why is None, f'{why}\n\n{source}'


@settings(FUZZ, max_examples=examples(40))
@given(st.integers(0, 2**32 - 1))
def test_uint_programs(tmp_path_factory, seed):
    fuzz(seed, 'uint', tmp_path_factory.getbasetemp())


@settings(FUZZ, max_examples=examples(24))
@given(st.integers(0, 2**32 - 1), st.sampled_from(('int', 'float32', 'uint64', 'int64')))
def test_programs_of_the_other_kinds(tmp_path_factory, seed, kind):
    fuzz(seed, kind, tmp_path_factory.getbasetemp())


@settings(FUZZ, max_examples=examples(15))
@given(st.integers(0, 2**32 - 1))
def test_float_programs_and_their_derivatives(tmp_path_factory, seed):
    fuzz(seed, 'float', tmp_path_factory.getbasetemp())


@pytest.mark.parametrize('seed, kind', [(seed, 'uint') for seed in sorted(inplace_found.FOUND)]
                         + [(seed, 'float') for seed in sorted(inplace_found.FOUND_FLOAT)])
def test_programs_found_before(tmp_path, seed, kind):
    found = inplace_found.FOUND if kind == 'uint' else inplace_found.FOUND_FLOAT
    why = check(seed, kind, str(tmp_path), found[seed])
    assert why is None, f'{why}\n\n{found[seed]}'


def test_the_oracle_follows_pythons_data_model():
    # (a check of the checker: in-place forms change the object, `=` rebinds the name)
    source = ('def f(a, b, v, lst, d, o, k, acc):\n'
              '    s = t = y = z = a\n'
              '    y += 1\n'
              '    lst[0] = b\n'
              '    b *= 2\n'
              '    v.y += a\n'
              '    z = z + 1\n'
              '    return (a, b, s, t, y, z, v, lst, d, o)\n')
    values = [[3] * 9, [5] * 9, [1] * 9, [1] * 9, [1] * 9, [7] * 9] + [[0] * 9] * 5
    out = programs.run_lanes(source, values, 'uint')[0]
    assert out[:6] == [4, 10, 4, 4, 4, 5]          # a b s t y z: one object, then z
    assert out[6:10] == [1, 5, 1, 10]              # v (v.y += a: 1 + 4), lst[0] is b


def main(argv):
    first, count = int(argv[0]), int(argv[1])
    kinds = argv[2:] or ['uint']
    bad = 0
    # (a program whose trace blows up is a failure of its own, not the end of the run)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    with tempfile.TemporaryDirectory() as directory:
        for seed in range(first, first + count):
            print(f'seed {seed}', file=sys.stderr, flush=True)
            for kind in kinds:
                why = outcome(seed, kind, directory)
                if why:
                    bad += 1
                    print(f'seed {seed} {kind}: {why}', flush=True)
    print(f'{count * len(kinds)} programs, {bad} failed, {len(SKIPPED)} out of the '
          f'oracle\'s range (sin or cos of |x| > 2^40, values that a last-bit change of sin '
          f'or cos moves, or derivatives whose finite differences do not settle: '
          f'{SKIPPED[:5]})')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
