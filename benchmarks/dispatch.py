"""Dispatch benchmark (the paper's appendix): f_i(x) = sum_{k=0..i} (-1)^k x^(2k+1)/(2k+1)!
for M targets, N = 10^6 floats with a random target per lane, the variant where target i
computes f_(i mod 5) (five distinct functions), and one where every target is as large as
a shading routine, g_i(x) = sin((i + 1.5) x) + exp((i + 0.25) x / 8) (i + 0.5): one
structure with other constants, as instances of one material with other parameters (the
series' targets share prefixes that inlining computes once). Symbolic and evaluated
dispatch (pbc.switch) next to Dr.Jit 1.5's dr.switch, when it is installed (the same work,
its SymbolicCalls flag on or off; see benchmarks/compare.py), symbolic calls also with
every target inlined (PBC_INLINE_CALLS=1), the sin + exp targets also with MergeFunctions
off ("unmerged": a subroutine per target, as their constants no longer share one through a
table), the series also with JitFlag.FlushDenormals ("flushed": its high-order terms pass
through the subnormals, which Dr.Jit's thread pool flushes to zero and pbc by default
computes, at a large cost on some Intel processors), and NumPy (one masked pass per
target).

    python -m benchmarks dispatch

Every pbc and Dr.Jit figure comes from fresh processes with an empty kernel cache
("first": trace + compile + run, after the process's one-time LLVM setup; "warm": the best
of 10 repeated calls), the best of PBC_BENCH_ROUNDS (3) rounds that alternate between the
systems. Prints one labelled figure per line; asserts nothing.
"""

import json
import os
import sys
import time

import numpy as np

from benchmarks import best_of_rounds, cpu_model, llvm_setup, row
from benchmarks.compare import LLVM19, drjit_first_and_warm

N = 1_000_000
MS = (1, 8, 64)
# Warm figures: the best of these calls (the tracing code gets fast only after a few calls,
# as Python's adaptive interpreter specializes it: sin + exp for M = 1, 130 -> 55 us).
WARM_REPEAT = 10


VARIANTS = ('full', 'mod5', 'sinexp')


def terms(i, variant):
    return (i % 5 if variant == 'mod5' else i) + 1


def series(x, n):
    """sum_{k<n} (-1)^k x^(2k+1)/(2k+1)!, term by term (works on pbc and NumPy arrays)."""
    term, total, x2 = x, x, x * x
    for k in range(1, n):
        term = term * x2 * (-1.0 / ((2 * k) * (2 * k + 1)))
        total = total + term
    return total


def targets(variant, m, lib):
    """The M target functions of a variant; `lib` (pbc, drjit or numpy) gives sin and exp."""
    def shade(i):
        return lambda v: lib.sin(v * (i + 1.5)) + lib.exp(v * ((i + 0.25) / 8)) * (i + 0.5)

    if variant == 'sinexp':
        return [shade(i) for i in range(m)]
    return [(lambda n: lambda v: series(v, n))(terms(i, variant)) for i in range(m)]


def inputs(m, n=None):
    """n (N) lanes' arguments in [-2, 2) and random targets among m."""
    n = N if n is None else n
    rng = np.random.default_rng(1)
    return (rng.uniform(-2, 2, n).astype(np.float32),
            rng.integers(0, m, n).astype(np.uint32))


def child(mode, variant, m, lib='pbc'):
    if lib == 'drjit':
        return _drjit_child(mode, variant, m)
    import pbc
    from pbc.llvm import Float, UInt32
    if lib == 'unmerged':
        pbc.set_flag(pbc.JitFlag.MergeFunctions, False)
    if lib == 'flushed':
        pbc.set_flag(pbc.JitFlag.FlushDenormals, True)
    xs, idx = inputs(m)
    x, index = Float(xs), UInt32(idx)
    llvm_setup(pbc, Float)
    funcs = targets(variant, m, pbc)

    def call():
        return pbc.switch(index, funcs, x, mode=mode)

    pbc.set_flag(pbc.JitFlag.KernelHistory, True)
    pbc.kernel_history_clear()
    t0 = time.perf_counter()
    y = call()
    pbc.eval(y)
    pbc.sync_thread()                               # (launches return while kernels run)
    first = time.perf_counter() - t0
    hist = pbc.kernel_history()
    pbc.set_flag(pbc.JitFlag.KernelHistory, False)
    out = dict(first=first, kernels=len(hist), ir_ops=sum(h['ir_ops'] for h in hist),
               compile=sum(h['codegen_time'] + h['backend_time'] for h in hist),
               checksum=float(np.sum(y.numpy(), dtype=np.float64)))
    warm = []
    for _ in range(WARM_REPEAT):
        t0 = time.perf_counter()
        pbc.eval(call())
        pbc.sync_thread()
        warm.append(time.perf_counter() - t0)
    out['warm'] = min(warm)
    return out


def _drjit_child(mode, variant, m):
    import drjit as dr
    from drjit.llvm import Float, UInt32
    xs, idx = inputs(m)
    x, index = Float(xs), UInt32(idx)
    dr.eval(dr.arange(Float, 10) * 0.5)
    dr.sync_thread()
    funcs = targets(variant, m, dr)
    dr.set_flag(dr.JitFlag.SymbolicCalls, mode == 'symbolic')

    out, y = drjit_first_and_warm(lambda: dr.switch(index, funcs, x), WARM_REPEAT)
    out['checksum'] = float(np.sum(y.numpy(), dtype=np.float64))
    return out


def numpy_dispatch(variant, m):
    xs, idx = inputs(m)
    t0 = time.perf_counter()
    out = np.zeros_like(xs)
    for i, f in enumerate(targets(variant, m, np)):
        sel = idx == i
        out[sel] = f(xs[sel])
    return time.perf_counter() - t0, float(np.sum(out, dtype=np.float64))


def main():
    t0 = time.perf_counter()
    print(f'pbc dispatch benchmarks on {cpu_model()}: {os.cpu_count()} CPUs, '
          f'NumPy {np.__version__}, load average {os.getloadavg()[0]:.2f}')
    print(f'{N:.0e} float32 lanes, random target per lane: first / warm, ms '
          '(ratio: pbc / Dr.Jit 1.5)')
    os.environ.setdefault('DRJIT_LIBLLVM_PATH', LLVM19)
    for variant in VARIANTS:
        for m in MS:
            t_np, expected = numpy_dispatch(variant, m)
            for mode in ('symbolic', 'evaluated'):
                label = f'{variant:<6} M={m:<3} {mode:<9}'
                figures = {}
                libs = [('pbc', 'pbc', None), ('drjit', 'Dr.Jit', None)]
                if mode == 'symbolic' and m > 1:
                    libs.insert(1, ('pbc', 'inline', {'PBC_INLINE_CALLS': '1'}))
                if mode == 'symbolic' and m > 1 and variant == 'sinexp':
                    libs.insert(1, ('unmerged', 'unmerged', None))
                if variant == 'full' and m > 1:
                    libs.insert(1, ('flushed', 'flushed', None))
                runs = best_of_rounds({name: ('dispatch', (mode, variant, str(m), lib), env)
                                       for lib, name, env in libs})
                for name, r in runs.items():
                    if 'error' in r:
                        row(f'{label} {name}', r['error'][:60])
                        continue
                    figures[name] = r
                    ok = abs(r['checksum'] - expected) <= 1e-3 * max(1.0, abs(expected))
                    row(f'{label} {name:<6} first / warm',
                        f'{r["first"] * 1e3:.1f} / {r["warm"] * 1e3:.1f}',
                        'ms' + ('' if ok else '  WRONG RESULT'))
                    row(f'{"":<24}({r["kernels"]} kernel(s), {r["ir_ops"]} IR ops, compile)',
                        f'{r["compile"] * 1e3:.1f}', 'ms')
                for name in ('pbc', 'flushed'):
                    if name in figures and 'Dr.Jit' in figures:
                        p, d = figures[name], figures['Dr.Jit']
                        what = 'ratio' if name == 'pbc' else 'ratio flushed'
                        row(f'{"":<24}{what} first / warm',
                            f'{p["first"] / d["first"]:.2f} / {p["warm"] / d["warm"]:.2f}')
            row(f'{variant:<6} M={m:<3} NumPy (one masked pass per target)',
                f'{t_np * 1e3:.1f}', 'ms')
    print(f'total {time.perf_counter() - t0:.1f} s')


if __name__ == '__main__':
    if sys.argv[1:2] == ['child']:
        print(json.dumps(child(sys.argv[2], sys.argv[3], int(sys.argv[4]), *sys.argv[5:])))
    else:
        main()
