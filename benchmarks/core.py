"""Core JIT benchmarks: tracing cost, compile and cache-hit cost, a huge kernel, memory
bandwidth, transcendental throughput and the paper's unrolled-loop microbenchmark.

    python -m benchmarks core

Prints one labelled figure per line; asserts nothing.
"""

import os
import random
import resource
import shutil
import statistics
import tempfile
import time

# Every kernel this run compiles is new: give pbc a private on-disk cache (read at import).
_CACHE_DIR = tempfile.mkdtemp(prefix='pbc-bench-')
os.environ['PBC_CACHE_DIR'] = _CACHE_DIR

import numpy as np  # noqa: E402

import pbc  # noqa: E402
from benchmarks import cpu_model, median_time, row  # noqa: E402
from pbc.llvm import Float, UInt32  # noqa: E402

N_BANDWIDTH = 50_000_000
N_MATH = 10_000_000
N_LOOP = 10_000_000


# ---- helpers -----------------------------------------------------------------------------

def ms(seconds):
    return f'{seconds * 1e3:.3f}'


def last_kernel():
    return pbc.kernel_history()[-1]


def timed_eval(build):
    """Traces build(), evaluates it; returns (trace s, eval s, kernel record)."""
    t0 = time.perf_counter()
    out = build()
    t1 = time.perf_counter()
    pbc.eval(out)
    pbc.sync_thread()                    # (launches return while the kernel runs)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, last_kernel()


def random_floats(n, lo=0.0, hi=1.0, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(lo, hi, n).astype(np.float32)


def chain(x, a, b, n):
    """n rounds of x = x*a + b (2n traced ops)."""
    for _ in range(n):
        x = x * a + b
    return x


# ---- benchmarks --------------------------------------------------------------------------

def bench_tracing():
    print('Tracing (100k rounds of x = x*a + b = 200k ops, not evaluated)')
    a, b, x = (Float(random_floats(1000, seed=s)) for s in range(3))
    pbc.eval(a, b, x)
    for label, on in (('default flags', True), ('ValueNumbering+ConstantPropagation off', False)):
        with pbc.scoped_set_flag(pbc.JitFlag.ValueNumbering, on), \
                pbc.scoped_set_flag(pbc.JitFlag.ConstantPropagation, on):
            chain(x, a, b, 1000)                      # warm-up
            runs = []
            for _ in range(3):                        # best of 3: a shared machine is noisy
                t0 = time.perf_counter()
                y = chain(x, a, b, 100_000)
                runs.append(time.perf_counter() - t0)
                del y
        row(f'ns per traced op ({label}, best / median of 3)',
            f'{min(runs) / 2e5 * 1e9:.1f} / {statistics.median(runs) / 2e5 * 1e9:.1f}', 'ns')


def bench_compile():
    print('Compile and kernel caches (1000-op kernel, 1000 lanes)')
    t0 = time.perf_counter()
    pbc.eval(pbc.arange(Float, 10) * random.random())     # sets up LLVM once per process
    row('first kernel of the process (LLVM setup + compile)', ms(time.perf_counter() - t0), 'ms')
    a = Float(random_floats(1000, seed=1))
    x = Float(random_floats(1000, seed=2))
    pbc.eval(a, x)
    literal = random.random()                         # a kernel no cache has seen

    def program():
        return chain(x, a, literal, 500)

    trace_s, eval_s, k = timed_eval(program)
    row(f'kernel size (cache: {k["cache_hit"]})', k['ir_ops'], 'IR ops')
    row('fresh compile: codegen (assembly + IR rendering)', ms(k['codegen_time']), 'ms')
    row('fresh compile: backend (LLVM optimize + emit + link)', ms(k['backend_time']), 'ms')
    row('fresh compile: eval wall time', ms(eval_s), 'ms')

    def cache_hit_overhead(flush):
        overheads, traces, hits = [], [], set()
        for _ in range(7):
            if flush:
                pbc.flush_kernel_cache()
            trace_s, eval_s, k = timed_eval(program)
            overheads.append(eval_s - k['execution_time'])
            traces.append(trace_s)
            hits.add(k['cache_hit'])
        return statistics.median(overheads), statistics.median(traces), '/'.join(sorted(hits))

    over, tr, hits = cache_hit_overhead(flush=False)
    row(f're-trace of the same program ({hits} hit)', ms(tr), 'ms')
    row('memory-cache hit: eval time minus execution time', ms(over), 'ms')
    over, tr, hits = cache_hit_overhead(flush=True)
    row(f'disk-cache hit: eval minus execution ({hits} hit)', ms(over), 'ms')


def bench_huge_kernel():
    print('Huge kernel (50k rounds of x = x*a + b, 1000 lanes)')
    a = Float(random_floats(1000, seed=1))
    x = Float(random_floats(1000, seed=2))
    pbc.eval(a, x)
    trace_s, eval_s, k = timed_eval(lambda: chain(x, a, random.random(), 50_000))
    row('kernel size', k['ir_ops'], 'IR ops')
    row('trace', ms(trace_s), 'ms')
    row('codegen', ms(k['codegen_time']), 'ms')
    row('backend (LLVM)', ms(k['backend_time']), 'ms')
    row('execution', ms(k['execution_time']), 'ms')
    row('eval wall time', ms(eval_s), 'ms')


def bench_bandwidth():
    n = N_BANDWIDTH
    print(f'Memory bandwidth ({n:.0e} float32)')
    x, y = Float(random_floats(n, seed=1)), Float(random_floats(n, seed=2))
    pbc.eval(x, y)
    execs = []

    def saxpy():
        z = 2.5 * x + y
        pbc.eval(z)
        pbc.sync_thread()
        execs.append(last_kernel()['execution_time'])

    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    wall = median_time(saxpy, repeat=5, warmup=1)
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / len(execs)
    kernel = statistics.median(execs[1:])
    src, dst = random_floats(n, seed=3), np.empty(n, np.float32)
    copy = median_time(lambda: np.copyto(dst, src), repeat=5, warmup=1)
    # Like pbc, which writes each result to a new buffer (fresh pages, first-touch faults).
    fresh = median_time(lambda: np.add(src, dst, out=np.empty(n, np.float32)), repeat=5)
    pbc_gbs, np_gbs = 12 * n / kernel / 1e9, 8 * n / copy / 1e9
    row('pbc z = a*x + y, kernel execution (12 B/elem)', f'{pbc_gbs:.2f}', 'GB/s')
    row('pbc z = a*x + y, whole eval incl. trace/launch', f'{12 * n / wall / 1e9:.2f}', 'GB/s')
    row('NumPy np.copyto, single thread (8 B/elem)', f'{np_gbs:.2f}', 'GB/s')
    row('ratio pbc kernel / NumPy copy bandwidth', f'{pbc_gbs / np_gbs:.2f}', 'x')
    row('(NumPy np.add into a fresh array, 12 B/elem)', f'{12 * n / fresh / 1e9:.2f}', 'GB/s')
    row('(minor page faults per pbc eval)', f'{faults:.0f}')


def bench_transcendentals():
    n = N_MATH
    print(f'Transcendentals ({n:.0e} float32, warm eval; Gelem/s, and pbc speedup)')
    inputs = {'sin': (-10.0, 10.0), 'exp': (-20.0, 20.0), 'log': (1e-3, 1e3)}
    for name, (lo, hi) in inputs.items():
        xs = random_floats(n, lo, hi, seed=4)
        fn = getattr(pbc, name, None)
        if fn is None:
            row(f'pbc.{name}', 'missing')
            continue
        x = Float(xs)
        pbc.eval(x)
        t_pbc = median_time(lambda: (pbc.eval(fn(x)), pbc.sync_thread()),  # noqa: B023
                            repeat=5, warmup=1)
        np_fn = getattr(np, name)
        t_np = median_time(lambda: np_fn(xs), repeat=5, warmup=1)  # noqa: B023
        row(f'pbc.{name} / np.{name} / speedup',
            f'{n / t_pbc / 1e9:.3f} / {n / t_np / 1e9:.3f} / {t_np / t_pbc:.2f}x')


def bench_loop():
    n = N_LOOP
    print(f'Unrolled loop x = (x + 1) ^ x ({n:.0e} UInt32, trace + eval)')
    x0 = pbc.arange(UInt32, n)
    pbc.eval(x0)
    xs = np.arange(n, dtype=np.uint32)

    def run(k):
        x = x0
        for _ in range(k):
            x = (x + 1) ^ x
        pbc.eval(x)
        pbc.sync_thread()

    def run_np(k):
        x = xs
        for _ in range(k):
            x = (x + 1) ^ x

    for k in (1, 10, 100):
        t0 = time.perf_counter()
        run(k)
        first = time.perf_counter() - t0
        warm = median_time(lambda: run(k), repeat=5, warmup=0)  # noqa: B023
        t_np = median_time(lambda: run_np(k), repeat=3, warmup=1)  # noqa: B023
        row(f'K={k:<3} pbc first / pbc warm / NumPy',
            f'{ms(first)} / {ms(warm)} / {ms(t_np)}', 'ms')


def main():
    t0 = time.perf_counter()
    pbc.set_flag(pbc.JitFlag.KernelHistory, True)
    print(f'pbc core benchmarks on {cpu_model()}: {pbc.thread_count()} threads, '
          f'NumPy {np.__version__}, load average {os.getloadavg()[0]:.2f}, '
          f'kernel cache {pbc.config.CACHE_DIR}')
    try:
        for bench in (bench_tracing, bench_compile, bench_huge_kernel, bench_bandwidth,
                      bench_transcendentals, bench_loop):
            bench()
            pbc.kernel_history_clear()
        from benchmarks import core_compare
        core_compare.main()
    finally:
        shutil.rmtree(_CACHE_DIR, ignore_errors=True)
    print(f'total {time.perf_counter() - t0:.1f} s')
