"""Loop benchmarks: the paper's loop microbenchmark as a symbolic loop, an unrolled trace and
NumPy, each beside Dr.Jit 1.5 doing the same (when it is installed; see
benchmarks/compare.py), and the ambient occlusion sample.

    python -m benchmarks loops

Every pbc figure is measured in a fresh process with an empty kernel cache, so its first call
traces, compiles and runs (the process's one-time LLVM setup happens before, on a small
kernel, and is not counted); warm figures are the best of a few repeated calls (memory-cache
hits: trace + launch + run). Prints one labelled figure per line; asserts nothing.
"""

import json
import os
import sys
import time

import numpy as np

from benchmarks import ROOT, cpu_model, llvm_setup, row, run_child
from benchmarks.compare import LLVM19, drjit_first_and_warm

N_LOOP = 10_000_000
KS = (1, 10, 100, 1000)
EVALUATED_MAX_K = 100     # an evaluated loop launches K kernels: 1000 of them take seconds
WARM_REPEAT = 5
AO_SIZE, AO_SPP = (1024, 1024), 64


def ms(seconds):
    return f'{seconds * 1e3:.1f}' if seconds is not None else '-'


# ---- what runs in the child processes ----------------------------------------------------

def _xor_loop(variant, k):
    """A function computing K rounds of x = (x + 1) ^ x on 10^7 UInt32: unrolled at trace time
    or a while loop (mode 'symbolic' or 'evaluated') over a counter from 0 stepped by 1."""
    import pbc
    from pbc.llvm import UInt32

    x0 = pbc.arange(UInt32, N_LOOP)
    pbc.eval(x0)                               # also sets up LLVM, outside the timings

    def unrolled():
        x = x0
        for _ in range(k):
            x = (x + 1) ^ x
        return x

    def loop():
        _, x = pbc.while_loop((UInt32(0), x0), lambda i, x: i < k,
                              lambda i, x: (i + 1, (x + 1) ^ x), labels=('i', 'x'),
                              mode=variant)
        return x

    return unrolled if variant == 'unrolled' else loop


def child_xor(variant, k):
    import pbc
    fn = _xor_loop(variant, k)
    pbc.set_flag(pbc.JitFlag.KernelHistory, True)
    pbc.kernel_history_clear()
    t0 = time.perf_counter()
    x = fn()
    t1 = time.perf_counter()
    pbc.eval(x)
    pbc.sync_thread()                          # (launches return while the kernel runs)
    t2 = time.perf_counter()
    hist = pbc.kernel_history()
    out = {
        'first': t2 - t0, 'trace': t1 - t0, 'kernels': len(hist),
        'codegen': sum(h['codegen_time'] for h in hist),
        'backend': sum(h['backend_time'] for h in hist),
        'run': sum(h['execution_time'] for h in hist),
        'ir_ops': max((h['ir_ops'] for h in hist), default=0),
        'checksum': int(np.sum(x.numpy(), dtype=np.uint64)),
    }
    pbc.set_flag(pbc.JitFlag.KernelHistory, False)
    del x
    warm = []
    for _ in range(WARM_REPEAT):
        t0 = time.perf_counter()
        pbc.eval(fn())
        pbc.sync_thread()
        warm.append(time.perf_counter() - t0)
    out['warm'] = min(warm)
    return out


def child_xor_drjit(variant, k):
    """child_xor's figures for Dr.Jit 1.5 (dr.while_loop has pbc's signature)."""
    import drjit as dr
    from drjit.llvm import UInt32
    x0 = dr.arange(UInt32, N_LOOP)
    dr.eval(x0)
    dr.sync_thread()

    def fn():
        if variant == 'unrolled':
            x = x0
            for _ in range(k):
                x = (x + 1) ^ x
            return x
        return dr.while_loop((UInt32(0), x0), lambda i, x: i < k,
                             lambda i, x: (i + 1, (x + 1) ^ x), labels=('i', 'x'),
                             mode=variant)[1]

    out, x = drjit_first_and_warm(fn, WARM_REPEAT)
    out['checksum'] = int(np.sum(x.numpy(), dtype=np.uint64))
    return out


def child_ao(mode):
    import importlib.util

    import pbc
    from pbc.llvm import Float
    sys.path.insert(0, os.path.join(ROOT, 'samples'))    # (the sample imports `renderer`)
    spec = importlib.util.spec_from_file_location(
        'ambient_occlusion', os.path.join(ROOT, 'samples', 'ambient_occlusion.py'))
    ao = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ao)
    llvm_setup(pbc, Float)
    w, h = AO_SIZE
    image, first = ao.timed_render(w, h, AO_SPP, mode)
    warm = [ao.timed_render(w, h, AO_SPP, mode)[1] for _ in range(2)]
    first['warm'] = min(t['wall'] for t in warm)
    first['mean'] = float(image.mean())
    return first


# ---- the parent --------------------------------------------------------------------------

def numpy_xor(k, repeat):
    xs = np.arange(N_LOOP, dtype=np.uint32)
    best, x = None, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        x = xs
        for _ in range(k):
            x = (x + 1) ^ x
        t = time.perf_counter() - t0
        best = t if best is None else min(best, t)
    return best, int(np.sum(x, dtype=np.uint64))


def bench_xor():
    print(f'Loop x = (x + 1) ^ x ({N_LOOP:.0e} UInt32): first call (fresh process, empty cache) '
          f'/ warm (best of {WARM_REPEAT}), ms')
    variants = ('symbolic', 'unrolled', 'evaluated')
    table = {}
    for k in KS:
        t_np, expected = numpy_xor(k, repeat=3 if k <= 100 else 1)
        for variant in variants:
            if variant == 'evaluated' and k > EVALUATED_MAX_K:
                r = {'error': f'skipped (K > {EVALUATED_MAX_K}: one kernel per iteration)'}
            else:
                r = run_child('loops', 'xor', variant, str(k))
            if 'error' not in r and r['checksum'] != expected:
                r = {'error': f'WRONG RESULT (checksum {r["checksum"]}, NumPy {expected})'}
            table[variant, k] = r
            if 'error' in r:
                row(f'K={k:<4} {variant}', r['error'][:60])
                continue
            row(f'K={k:<4} {variant:<9} first / warm', f'{ms(r["first"])} / {ms(r["warm"])}', 'ms')
            row(f'         ({r["kernels"]} kernel(s), {r["ir_ops"]} IR ops: trace / codegen / '
                f'LLVM / run)', f'{ms(r["trace"])} / {ms(r["codegen"])} / {ms(r["backend"])} / '
                f'{ms(r["run"])}', 'ms')
            d = run_child('loops', 'xor-drjit', variant, str(k)) if variant != 'evaluated' \
                or k <= EVALUATED_MAX_K else {'error': 'skipped'}
            if 'error' not in d and d['checksum'] != expected:
                d = {'error': f'WRONG RESULT (checksum {d["checksum"]}, NumPy {expected})'}
            if 'error' in d:
                row('         Dr.Jit 1.5', d['error'][:60])
                continue
            row(f'         Dr.Jit 1.5 first / warm ({d["kernels"]} kernel(s))',
                f'{ms(d["first"])} / {ms(d["warm"])}', 'ms')
            row('         ratio pbc / Dr.Jit, first / warm',
                f'{r["first"] / d["first"]:.2f} / {r["warm"] / d["warm"]:.2f}')
        row(f'K={k:<4} NumPy ({"best of 3" if k <= 100 else "one run"})', ms(t_np), 'ms')
        table['numpy', k] = {'warm': t_np}

    print('Summary, ms (first / warm; NumPy: warm)')
    print(f'  {"K":>5}  ' + ''.join(f'{v:>20}' for v in variants) + f'{"NumPy":>12}')
    for k in KS:
        cells = []
        for v in variants:
            r = table[v, k]
            cells.append(f'{"-" if "error" in r else ms(r["first"]) + " / " + ms(r["warm"]):>20}')
        print(f'  {k:>5}  ' + ''.join(cells) + f'{ms(table["numpy", k]["warm"]):>12}')
    sym = [table['symbolic', k] for k in KS]
    if all('error' not in r for r in sym):
        comp = ' / '.join(ms(r['codegen'] + r['backend']) for r in sym)
        row('symbolic loop compile time (codegen + LLVM) at K = 1/10/100/1000', comp, 'ms')
        row('symbolic first call at K = 1000 (target < 800 ms)', ms(sym[-1]['first']), 'ms')
    s, u = table.get(('symbolic', 100), {'error': 1}), table.get(('unrolled', 100), {'error': 1})
    if 'error' not in s and 'error' not in u:
        row('warm symbolic / unrolled at K = 100 (target <= 1.5)',
            f'{s["warm"] / u["warm"]:.2f}', 'x')


def bench_ao():
    w, h = AO_SIZE
    print(f'Ambient occlusion sample ({w}x{h}, {AO_SPP} shadow rays per pixel), ms')
    for mode in ('symbolic', 'evaluated'):
        r = run_child('loops', 'ao', mode)
        if 'error' in r:
            row(f'{mode} loop', r['error'][:60])
            continue
        row(f'{mode:<9} first call: trace / compile / run / wall',
            f'{ms(r["trace"])} / {ms(r["compile"])} / {ms(r["run"])} / {ms(r["wall"])}', 'ms')
        row(f'{mode:<9} warm (best of 2), wall', ms(r['warm']), 'ms')
        row(f'{mode:<9} kernels, IR ops, mean AO', f'{r["kernels"]}, {r["ir_ops"]}, '
            f'{r["mean"]:.4f}')


def main():
    t0 = time.perf_counter()
    print(f'pbc loop benchmarks on {cpu_model()}: {os.cpu_count()} CPUs, '
          f'NumPy {np.__version__}, load average {os.getloadavg()[0]:.2f}')
    os.environ.setdefault('DRJIT_LIBLLVM_PATH', LLVM19)
    bench_xor()
    bench_ao()
    print(f'total {time.perf_counter() - t0:.1f} s')


if __name__ == '__main__':
    if sys.argv[1:2] == ['child']:
        what, *args = sys.argv[2:]
        child = {'xor': child_xor, 'xor-drjit': child_xor_drjit}.get(what)
        result = child(args[0], int(args[1])) if child else child_ao(args[0])
        print(json.dumps(result))
    else:
        main()
