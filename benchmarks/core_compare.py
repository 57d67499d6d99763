"""The core figures that Dr.Jit 1.5 can produce too, measured the same way by both (see
benchmarks/compare.py): tracing cost per op, per math function call and of vector code, a
memory-bound stream, the paper's unrolled loop (first call and warm), transcendental
throughput. Printed by `python -m benchmarks core`; `python -m benchmarks.core_compare
child pbc|drjit` prints one library's JSON."""

import time

from benchmarks import median_time

N_STREAM = 50_000_000
N_LOOP = 10_000_000
N_MATH = 10_000_000
TRACE_ROUNDS = 100_000          # x 2 ops
MATH_ROUNDS = 5_000             # x 4 library calls
VECTOR_ROUNDS = 5_000           # x 1 expression of 3-vectors


def measure(lib):
    import numpy as np
    rng = np.random.default_rng(0)
    out = {'trace_op': _tracing(lib, rng), 'trace_math': _tracing_math(lib, rng),
           'trace_vector': _tracing_vector(lib, rng), 'stream': _stream(lib, rng)}
    out['loop_first'], out['loop_warm'] = _loop(lib)
    for name, lo, hi in (('sin', -10.0, 10.0), ('exp', -20.0, 20.0), ('log', 1e-3, 1e3)):
        out[name] = _function(lib, getattr(lib, name), rng.uniform(lo, hi, N_MATH))
    return out


def _trace_time(step, start, rounds, per_step):
    """Seconds per traced op of `rounds` times y = step(y) from `start`, `per_step` ops
    (or calls) each: the best of 3, after one untimed pass."""
    def trace():
        y = start
        t0 = time.perf_counter()
        for _ in range(rounds):
            y = step(y)
        return (time.perf_counter() - t0) / (per_step * rounds)
    trace()
    return min(trace() for _ in range(3))


def _tracing(lib, rng):
    """Seconds per traced op of x = x*a + b."""
    a, b, x = (lib.Float(rng.uniform(0, 1, 1000).astype('float32')) for _ in range(3))
    lib.eval(a, b, x)
    return _trace_time(lambda y: y * a + b, x, TRACE_ROUNDS, 2)


def _tracing_math(lib, rng):
    """Seconds per traced call of sin, exp, log and atan2, each on the last one's result."""
    a, x = (lib.Float(rng.uniform(0.5, 1, 1000).astype('float32')) for _ in range(2))
    lib.eval(a, x)
    m = lib.m
    return _trace_time(lambda y: m.atan2(m.log(m.exp(m.sin(y))), a), x, MATH_ROUNDS, 4)


def _tracing_vector(lib, rng):
    """Seconds per traced v = normalize(cross(v, w) + v * 0.5) on 3-vectors: the kind of
    code a renderer is made of."""
    m = lib.m
    Array3f = m.llvm.Array3f
    v, w = (Array3f(*(lib.Float(rng.uniform(0.5, 1, 1000).astype('float32'))
                      for _ in range(3))) for _ in range(2))
    lib.eval(v, w)
    return _trace_time(lambda y: m.normalize(m.cross(y, w) + y * 0.5), v, VECTOR_ROUNDS, 1)


def _stream(lib, rng):
    xs, ys = (lib.Float(rng.uniform(0, 1, N_STREAM).astype('float32')) for _ in range(2))
    lib.eval(xs, ys)

    def stream():
        lib.eval(2.5 * xs + ys)
        lib.sync()
    return median_time(stream)


def _loop(lib):
    """(first call, warm) of the paper's unrolled loop, K = 100."""
    x0 = lib.arange(lib.UInt32, N_LOOP)
    lib.eval(x0)

    def loop():
        v = x0
        for _ in range(100):
            v = (v + 1) ^ v
        lib.eval(v)
        lib.sync()
    t0 = time.perf_counter()
    loop()
    return time.perf_counter() - t0, median_time(loop, warmup=0)


def _function(lib, fn, values):
    v = lib.Float(values.astype('float32'))
    lib.eval(v)

    def run():
        lib.eval(fn(v))
        lib.sync()
    return median_time(run)


ROWS = [('trace_op', 'tracing per op, x = x*a + b (best of 3)', 'ns', 1e9),
        ('trace_math', 'tracing per call of sin, exp, log, atan2 (best of 3)', 'us', 1e6),
        ('trace_vector', 'tracing normalize(cross(v, w) + v * 0.5), 3-vectors', 'us', 1e6),
        ('stream', 'stream z = 2.5 x + y, 5e7 floats, warm', 'ms', 1e3),
        ('loop_first', 'unrolled loop (x+1)^x K=100, 1e7 lanes, first call', 'ms', 1e3),
        ('loop_warm', '  same, warm', 'ms', 1e3),
        ('sin', 'sin, 1e7 floats, warm', 'ms', 1e3),
        ('exp', 'exp, 1e7 floats, warm', 'ms', 1e3),
        ('log', 'log, 1e7 floats, warm', 'ms', 1e3)]


def main():
    from benchmarks import compare
    print('Side by side with Dr.Jit 1.5 (each in a fresh process, empty kernel cache; ratio '
          '= pbc / Dr.Jit)')
    compare.print_rows(compare.side_by_side('core_compare'), ROWS)


if __name__ == '__main__':
    from benchmarks.compare import child_main
    child_main(measure)
