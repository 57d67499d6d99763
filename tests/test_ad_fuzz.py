"""Forward against reverse mode on the differential fuzzer's random programs (test_fuzz.py):
with derivatives enabled on a program's float inputs x, random tangents v on them and
random weights w on its float results y, forward mode gives <J v, w> and reverse mode
<v, J^T w>; the two must agree up to rounding (which scales with the largest tangent or
adjoint of any node: float32 sums of large terms can cancel). Each mode runs a fresh copy
of the program, so neither sees what the other left in the graph.

The fuzzer's inputs are full of edge values; here float inputs hold moderate random values
instead (a derivative at inf or NaN says nothing), while everything else the program does
(casts, gathers, scatters, reductions, prefix sums, evaluations in between) is kept. Where
the program itself makes non-finite partial derivatives (a division by 0, fmod by 0), the
modes may legitimately differ: forward mode multiplies a NaN partial by a tangent a select
zeroed, reverse mode has the select mask the NaN gradient. Only finite sums are compared;
`event` statistics (pytest --hypothesis-show-statistics) show how many were.
"""

import re

import numpy as np
from fuzzing import FUZZ, examples
from hypothesis import event, given, note, settings
from hypothesis import strategies as st
from test_fuzz import CLASS, FLOATS, NAMESPACE, PRELUDE, WIDTHS, Program

import pbc

INPUT = re.compile(r'v(\d+) = (pbc\.(full|arange|opaque)\(|[A-Z]\w*\()')


def draw(data):
    prog = Program(data.draw, data.draw(WIDTHS))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    inputs = []
    for i, line in enumerate(prog.lines):
        if not INPUT.match(line):
            break                                    # the inputs come first
        t = prog.types[i]
        if t in FLOATS:
            n = prog.N if prog.wide[i] else 1
            vals = ', '.join(repr(float(x)) for x in rng.uniform(-3, 3, n))
            prog.lines[i] = f"v{i} = {CLASS[t]}(np.array([{vals}], dtype='{t}'))"
            inputs.append(i)
    return prog, inputs, rng


def run(prog, inputs):
    """Executes the program with derivatives enabled on its float inputs; returns (input
    handles sharing their original nodes, the float results that carry derivatives)."""
    ns = dict(NAMESPACE)
    handles = {}
    for i, line in enumerate(prog.lines):
        exec(compile(line, f'<fuzz step {i}>', 'exec'), ns)
        if i in inputs:
            pbc.enable_grad(ns[f'v{i}'])
            x = ns[f'v{i}']
            handles[i] = type(x)(x)        # (a scatter may rebind v_i to a new node)
    results = {i: ns[f'v{i}'] for i, t in enumerate(prog.types)
               if t in FLOATS and pbc.grad_enabled(ns[f'v{i}'])}
    return handles, results


def weights(rng, n):
    return rng.uniform(0.5, 1.5, n) * rng.choice([-1.0, 1.0], n)


@settings(FUZZ, max_examples=examples(300))
@given(st.data())
@np.errstate(all='ignore')           # (sums of non-finite terms)
def test_forward_and_reverse_mode_agree_on_random_programs(data):
    prog, inputs, rng = draw(data)
    note('Program:\n' + PRELUDE + '\n' + '\n'.join(prog.lines))
    if not inputs:
        event('no float input')
        return
    v = {i: weights(rng, prog.N if prog.wide[i] else 1) for i in inputs}

    handles, results = run(prog, inputs)
    if not results:
        event('no result with derivatives')
        return
    w = {k: weights(rng, len(y)) for k, y in results.items()}
    for i, x in handles.items():
        pbc.set_grad(x, type(x)(v[i].astype(x.Type)))
    tangents = pbc.forward_to(*results.values(), flags=pbc.ADFlag.ClearNone)
    if len(results) == 1:
        tangents = (tangents,)
    jv = [np.asarray(t.numpy(), np.float64) for t in tangents]
    terms_fwd = [t * w[k] for t, k in zip(jv, results)]

    handles, results = run(prog, inputs)
    for k, y in results.items():
        pbc.accum_grad(y, type(y)(w[k].astype(y.Type)))
    grads = pbc.backward_to(*handles.values(), flags=pbc.ADFlag.ClearNone)
    if len(handles) == 1:
        grads = (grads,)
    terms_rev = [np.asarray(g.numpy(), np.float64) * v[i] for g, i in zip(grads, handles)]
    adjoints = [np.asarray(pbc.grad(y).numpy(), np.float64) for y in results.values()]

    fwd = sum(float(np.sum(t)) for t in terms_fwd)
    rev = sum(float(np.sum(t)) for t in terms_rev)
    note(f'<Jv, w> = {fwd}, <v, J^T w> = {rev}')
    finite = bool(np.isfinite(fwd) and np.isfinite(rev))
    event(f'finite: {finite}')
    if not finite:
        return
    # Rounding: sums inside either mode may cancel terms as large as the largest tangent
    # (or adjoint) of any node, times the weights they meet. Past 1e6 (programs that turn
    # bit patterns into floats, huge literals), the error of such a cancellation is then
    # multiplied by later partials as large: nothing is left to compare.
    largest_t = max(float(np.max(np.abs(t), initial=0)) for t in jv)
    largest_g = max(float(np.max(np.abs(g), initial=0)) for g in adjoints)
    if max(largest_t, largest_g) > 1e6:
        event('derivatives too large to compare')
        return
    scale = (largest_t * sum(float(np.sum(np.abs(x))) for x in w.values())
             + largest_g * sum(float(np.sum(np.abs(x))) for x in v.values()))
    assert abs(fwd - rev) <= 1e-4 * scale + 1e-6, (fwd, rev, scale)
