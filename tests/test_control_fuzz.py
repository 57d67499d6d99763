"""Random programs of statements (tests/programs.py, the generator every random-program test
of control flow shares) under the settings that change how pbc compiles them: a mode of its
own for each loop, conditional and call (symbolic, evaluated, or none: the flags decide,
drawn at random); lane counts that are not multiples of the vector width, at every vector
width; JitFlag.OptimizeLoops, OptimizeCalls and MergeFunctions on and off. Programs of
every kind (UInt32, Int32, Float, Float64) must give the values of the same program run
lane by lane in plain Python (programs.run_lanes): exactly, but for Float64 (within
rounding) and the sums that lanes scatter-add.

The tests at the end are minimal reproductions of runtime bugs that random programs found
(now fixed).
"""

import contextlib

import programs
import suite_backend
from conftest import VECTOR_WIDTHS, vector_width
from fuzzing import FUZZ, examples
from hypothesis import given, note, settings
from hypothesis import strategies as st
from suite_backend import UInt32

import pbc

KIND = st.sampled_from(sorted(programs.KINDS))
SEED = st.integers(0, 2**32 - 1)
LANES = st.sampled_from((1, 5, 16, 17, 37))


def check(directory, seed, kind, flags=(), lanes=programs.LANES, modes=False):
    """Program `seed` of `kind` on `lanes` lanes, with the JitFlags `flags` ((flag, value)
    each) set, against the oracle."""
    source = programs.Program(seed, kind, modes=modes).source()
    note(source)
    values = programs.inputs(seed, kind, lanes)
    want = programs.run_lanes(source, values, kind)
    fn = programs.compile_program(source, str(directory / f'program_{kind}_{seed}.py'), kind,
                                  suite_backend.module)
    with contextlib.ExitStack() as stack:
        for f, v in flags:
            stack.enter_context(pbc.scoped_set_flag(f, v))
        got = programs.run_pbc(fn, values, suite_backend.module, kind)
    why = programs.mismatch(want, got, kind)
    assert why is None, f'flags {flags}: {why}\n\n{source}'


@settings(FUZZ, max_examples=examples(80))
@given(SEED, KIND, st.booleans(), st.booleans(), st.booleans())
def test_modes_of_each_region_and_of_the_flags_match_python(tmp_path_factory, seed, kind,
                                                            loops, conditionals, calls):
    check(tmp_path_factory.getbasetemp(), seed, kind,
          ((pbc.JitFlag.SymbolicLoops, loops), (pbc.JitFlag.SymbolicConditionals, conditionals),
           (pbc.JitFlag.SymbolicCalls, calls)), modes=True)


@settings(FUZZ, max_examples=examples(50))
@given(SEED, KIND, LANES, st.sampled_from(VECTOR_WIDTHS))
def test_every_lane_count_at_every_vector_width(tmp_path_factory, seed, kind, lanes, width):
    with vector_width(width):
        check(tmp_path_factory.getbasetemp(), seed, kind, lanes=lanes)


@settings(FUZZ, max_examples=examples(40))
@given(SEED, KIND, st.booleans())
def test_optimize_loops_on_and_off(tmp_path_factory, seed, kind, on):
    check(tmp_path_factory.getbasetemp(), seed, kind, ((pbc.JitFlag.OptimizeLoops, on),))


@settings(FUZZ, max_examples=examples(40))
@given(SEED, KIND, st.booleans(), st.booleans())
def test_call_optimizations_on_and_off(tmp_path_factory, seed, kind, calls, merge):
    check(tmp_path_factory.getbasetemp(), seed, kind,
          ((pbc.JitFlag.OptimizeCalls, calls), (pbc.JitFlag.MergeFunctions, merge)))


# ---- regressions: minimal reproductions of bugs this fuzzer found ---------------------------
def test_symbolic_loop_runs_once_when_its_outputs_are_read_later():
    hist = pbc.zeros(UInt32, 1)

    def body(c, x):
        pbc.scatter_add(hist, UInt32(1), UInt32(0))
        return c + 1, x + 1

    c, x = pbc.while_loop((UInt32(0), UInt32([0, 0, 0])), lambda c, x: c < 2, body,
                          mode='symbolic')
    pbc.eval()               # the queued scatter, and with it the loop: hist = [6]
    pbc.eval(c, x)           # the loop's outputs: must not scatter again
    assert x.numpy().tolist() == [2, 2, 2]
    assert hist.numpy().tolist() == [6]


def test_two_scattering_loops_in_one_evaluation_run_once_each():
    hist = pbc.zeros(UInt32, 1)

    def body_a(i, x):
        pbc.scatter_add(hist, UInt32(1), UInt32(0))
        return i + 1, UInt32(1)

    def body_b(j):
        pbc.scatter_add(hist, UInt32(1), UInt32(0))
        return (j + 1,)

    _, x = pbc.while_loop((pbc.zeros(UInt32, 4), pbc.zeros(UInt32, 4)), lambda i, x: i < 1,
                          body_a, mode='symbolic')
    pbc.while_loop((pbc.zeros(UInt32, 4),), lambda j: j < 1, body_b, mode='symbolic')
    pbc.eval(hist, x)
    assert x.numpy().tolist() == [1, 1, 1, 1]
    assert hist.numpy().tolist() == [8]          # 4 lanes x 2 loops


def test_scatter_in_a_narrow_symbolic_loop_runs_in_every_lane():
    def run(mode):
        hist = pbc.zeros(UInt32, 1)

        def body(c):
            pbc.scatter_add(hist, UInt32(1), pbc.zeros(UInt32, 4))
            return (c + 1,)

        pbc.while_loop((UInt32(0),), lambda c: c < 3, body, mode=mode)
        return hist.numpy().tolist()

    assert run('evaluated') == [12]
    assert run('symbolic') == [12]
