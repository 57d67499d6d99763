"""GPU benchmarks: the core figures on pbc.cuda beside Dr.Jit 1.5's drjit.cuda, in one run.

    python -m benchmarks gpu [--quick] [--json PATH] [--rounds N] [--timeout SECONDS]

Figures (each library in a fresh process of its own per figure, empty kernel caches, the
CUDA driver's PTX cache included; "first" = trace + compile + run of the first call,
after the process's one-time device setup on a small kernel; "warm" = the best of
repeated calls, each synchronized):

  * stream: z = 2.5 x + y on float32 (12 bytes per element): first call, warm (median),
    and queued (evaluations launched back to back, one synchronization: the device's
    rate, host overhead hidden) with its bandwidth;
  * loop: the paper's loop microbenchmark, K rounds of x = (x + 1) ^ x on UInt32 lanes as
    one symbolic while loop (benchmarks/loops.py);
  * dispatch: benchmarks/dispatch.py's series over M = 64 targets, a random target per lane,
    symbolic calls (pbc.switch; Dr.Jit's dr.switch with its SymbolicCalls flag);
  * ad: benchmarks/ad.py's 100-op function of two inputs, primal + reverse-mode gradient;
  * ao: samples/ambient_occlusion.py's render() on pbc.cuda (pbc only: the sample is
    written against pbc, and Dr.Jit has no copy of it).

Every child checks its result (a prefix of lanes against NumPy, or a mean): a wrong one is
printed as such. A library that cannot run (no GPU, no driver, Dr.Jit not installed) gets
a line saying why, and the suite goes on. --quick: tiny sizes, a dry run (on a machine
without a GPU, with tests/standin_site on PYTHONPATH, through the stand-in driver).
--json PATH writes every figure (docs/benchmarks.md describes the layout). Sized to fit
a minute and a half with room to spare: 13 s on an H200 with one round, process starts
and compiles included.
"""

import argparse
import importlib.metadata
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

from benchmarks import ROOT, best_of_rounds, cpu_model, row

LIBS = {'pbc': 'pbc.cuda', 'drjit': 'drjit.cuda'}
CHECK_LANES = 4096        # lanes whose result a child checks against NumPy
SIZES = {
    # stream: floats; loop: (lanes, K); dispatch: (lanes, M); ad: floats; ao: (w, h, spp)
    'full': dict(stream=1 << 26, loop=(10_000_000, 1000), dispatch=(1 << 22, 64),
                 ad=1 << 24, ao=(1024, 1024, 16)),
    'quick': dict(stream=1 << 12, loop=(1 << 10, 1000), dispatch=(1 << 10, 64),
                  ad=1 << 12, ao=(32, 24, 2)),
}
REPEAT = {'stream': 20, 'loop': 10, 'dispatch': 10, 'ad': 10, 'ao': 3}
AO_MODE = 'symbolic'


class Unavailable(Exception):
    """The library cannot run on the GPU here; the message says why."""


# ---- what runs in the child processes ----------------------------------------------------

def open_lib(name, ad=False):
    """The Lib (benchmarks/compare.py) of `name` on CUDA, its device set up (a small
    kernel: first-call figures leave out the process's one-time driver and context
    setup); Unavailable if it cannot run here."""
    from benchmarks.compare import Drjit, Pbc
    if name == 'pbc':
        from pbc.backend import cuda_jit
        try:
            cuda_jit.backend()
        except cuda_jit.CUDAUnavailable as e:
            raise Unavailable(str(e)) from None
        lib = Pbc(ad=ad, backend='cuda')
    else:
        try:
            import drjit as dr
        except ImportError as e:
            raise Unavailable(f'Dr.Jit is not installed ({e})') from None
        if not dr.has_backend(dr.JitBackend.CUDA):
            raise Unavailable('Dr.Jit finds no CUDA driver or device')
        lib = Drjit(ad=ad, backend='cuda')
    lib.eval(lib.arange(lib.Float, 10) * 0.5)
    lib.sync()
    return lib


def measure_stream(lib, n):
    from benchmarks.compare import first_and_warm
    # (inputs made on the device: no host-side generation and upload of 10^8 values)
    x = lib.arange(lib.Float, n) * (1.0 / n)
    y = 1.0 - x
    lib.eval(x, y)
    lib.sync()

    def stream():
        return 2.5 * x + y
    out, z = first_and_warm(lib, stream, REPEAT['stream'], statistic=statistics.median)
    t0 = time.perf_counter()
    for _ in range(REPEAT['stream']):
        lib.eval(stream())
    lib.sync()
    out['queued'] = (time.perf_counter() - t0) / REPEAT['stream']
    # z = 1 + 1.5 x, x the lane / n: its mean is 1 + 0.75 (n - 1) / n
    mean = float(np.mean(z.numpy(), dtype=np.float64))
    out['ok'] = abs(mean - (1 + 0.75 * (n - 1) / n)) < 1e-4
    return out


def measure_loop(lib, n, k):
    from benchmarks.compare import first_and_warm
    x0 = lib.arange(lib.UInt32, n)
    lib.eval(x0)
    lib.sync()
    m = lib.m

    def loop():
        return m.while_loop((lib.UInt32(0), x0), lambda i, x: i < k,
                            lambda i, x: (i + 1, (x + 1) ^ x), labels=('i', 'x'),
                            mode='symbolic')[1]
    out, x = first_and_warm(lib, loop, REPEAT['loop'])
    expected = np.arange(min(n, CHECK_LANES), dtype=np.uint32)
    for _ in range(k):
        expected = (expected + np.uint32(1)) ^ expected
    out['ok'] = bool(np.array_equal(x.numpy()[:len(expected)], expected))
    return out


def measure_dispatch(lib, n, m):
    from benchmarks.compare import first_and_warm
    from benchmarks.dispatch import inputs, series, targets, terms
    xs, idx = inputs(m, n)
    x, index = lib.Float(xs), lib.UInt32(idx)
    lib.eval(x, index)
    lib.sync()
    funcs = targets('full', m, lib.m)
    out, y = first_and_warm(lib, lambda: lib.switch(index, funcs, x, mode='symbolic'),
                            REPEAT['dispatch'])
    xs, idx = xs[:CHECK_LANES], idx[:CHECK_LANES]
    expected = np.zeros_like(xs)
    for i in range(m):
        sel = idx == i
        expected[sel] = series(xs[sel], terms(i, 'full'))
    out['ok'] = bool(np.allclose(y.numpy()[:len(xs)], expected, rtol=1e-4, atol=1e-5))
    return out


def _ad_expected(a, b):
    """benchmarks/ad.py's function and its partial derivatives by a and b, in float64."""
    y, ya, yb = a, np.ones_like(a), np.zeros_like(a)
    for _ in range(20):
        y, ya, yb = y * a + b, ya * a + y, yb * a + 1
        d = 1 + y * y
        f = (1 - y * y) / (d * d)         # d/dy of y / (1 + y^2)
        y, ya, yb = y / d, ya * f, yb * f
    return y, ya, yb


def measure_ad(lib, n):
    from benchmarks.ad import function
    from benchmarks.compare import first_and_warm
    rng = np.random.default_rng(0)
    a0, b0 = (rng.uniform(0, 1, n).astype(np.float32) for _ in range(2))
    a, b = lib.Float(a0), lib.Float(b0)
    lib.eval(a, b)
    lib.enable_grad(a, b)

    def gradient():
        lib.clear_grad(a)
        lib.clear_grad(b)
        y = function(a, b)
        lib.backward(y)
        return y, lib.grad(a), lib.grad(b)
    out, got = first_and_warm(lib, gradient, REPEAT['ad'])
    k = min(n, CHECK_LANES)
    expected = _ad_expected(a0[:k].astype(np.float64), b0[:k].astype(np.float64))
    out['ok'] = all(np.allclose(g.numpy()[:k], e, rtol=1e-3, atol=1e-5)
                    for g, e in zip(got, expected))
    return out


def measure_ao(lib, w, h, spp):
    """samples/ambient_occlusion.py's render() on `lib`'s backend (its `backend` argument:
    the sample builds its arrays through samples/renderer/jit.py), checked against the
    CPU's image."""
    import importlib.util

    from benchmarks.compare import first_and_warm
    samples = os.path.join(ROOT, 'samples')
    sys.path.insert(0, samples)                 # (the sample imports the renderer package)
    spec = importlib.util.spec_from_file_location(
        'ambient_occlusion', os.path.join(samples, 'ambient_occlusion.py'))
    ao = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ao)
    out, image = first_and_warm(
        lib, lambda: ao.render(w, h, spp, AO_MODE, backend=lib.backend), REPEAT['ao'])
    if type(image) is not lib.Float:       # (a sample that ignored `backend`)
        raise RuntimeError(f'the sample rendered a {type(image).__module__}.'
                           f'{type(image).__name__}, not {lib.backend}\'s Float')
    values = image.numpy()
    out['mean'] = float(np.mean(values, dtype=np.float64))
    # The same small image on the CPU (pbc.llvm) too: the same random streams, so the
    # images may differ only where the backends' rounding flips a shadow ray's hit
    small = [ao.render(64, 48, spp, AO_MODE, backend=b).numpy() for b in (lib.backend, 'llvm')]
    out['llvm_diff'] = float(np.mean(np.abs(small[0] - small[1]), dtype=np.float64))
    out['ok'] = bool(np.all((values >= 0) & (values <= 1)) and 0 < out['mean'] < 1
                     and out['llvm_diff'] < 0.02)
    return out


MEASURES = {'stream': (measure_stream, False), 'loop': (measure_loop, False),
            'dispatch': (measure_dispatch, False), 'ad': (measure_ad, True),
            'ao': (measure_ao, False)}


def child(figure, name, size):
    """One figure of one library ('pbc' or 'drjit'), as a dict; {'available': False,
    'error': why} where the library cannot run here."""
    measure, ad = MEASURES[figure]
    try:
        lib = open_lib(name, ad=ad)
    except Unavailable as e:
        return {'available': False, 'error': f'not available: {e}'}
    args = SIZES[size][figure]
    return measure(lib, *(args if isinstance(args, tuple) else (args,)))


def loaded_libcuda():
    """The path of the libcuda this process loaded (None if none): Dr.Jit looks for
    libcuda.so, or libcuda.so.* in /usr/lib only, and a machine may have the driver
    elsewhere, found by the loader as libcuda.so.1 (as pbc opens it)."""
    try:
        with open('/proc/self/maps') as f:
            for line in f:
                path = line.split()[-1]
                if os.path.basename(path).startswith('libcuda.so'):
                    return path
    except OSError:
        pass
    return None


def child_info():
    """The GPU pbc.cuda runs on, from the driver: {'gpu', 'driver', 'compute_capability',
    'memory_gib', 'libcuda'}, or {'error': why}."""
    from pbc.backend import cuda_jit
    try:
        be = cuda_jit.backend()
    except cuda_jit.CUDAUnavailable as e:
        return {'error': f'not available: {e}'}
    d = be.driver
    with be.active():
        total = d.memory_info()[1]
    version = d.version()
    return {'gpu': d.device_name(be.device),
            'driver': f'CUDA {version // 1000}.{version % 1000 // 10}',
            'compute_capability': '%d.%d' % d.compute_capability(be.device),
            'memory_gib': round(total / 2**30, 1), 'libcuda': loaded_libcuda()}


# ---- the parent --------------------------------------------------------------------------

# figure -> [(key, label, unit, format of key's value times scale)]: what print_figure shows
FIRST_WARM = [('first', 'first call', 'ms', 1e3, '.2f'),
              ('warm', 'warm, best', 'ms', 1e3, '.2f'),
              ('compile', 'compile, first call', 'ms', 1e3, '.2f'),
              ('kernels', 'kernels launched, first call', '', 1, 'd')]
ROWS = {
    'stream': [('first', 'first call', 'ms', 1e3, '.2f'),
               ('warm', 'warm, median', 'ms', 1e3, '.2f'),
               ('queued', 'queued, per evaluation', 'ms', 1e3, '.3f'),
               ('gbps', 'bandwidth, queued (12 B per element)', 'GB/s', 1, '.1f')],
    'loop': FIRST_WARM, 'dispatch': FIRST_WARM, 'ad': FIRST_WARM,
    'ao': FIRST_WARM + [('mean', 'mean ambient occlusion', '', 1, '.4f')],
}


def number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def titles(s):
    n, (lanes, k), (dn, m), an, (w, h, spp) = (s['stream'], s['loop'], s['dispatch'],
                                                s['ad'], s['ao'])
    return {'stream': f'stream z = 2.5 x + y, {n} float32',
            'loop': f'symbolic loop x = (x + 1) ^ x, K = {k}, {lanes} UInt32 lanes',
            'dispatch': f'dispatch, M = {m} targets (series), {dn} lanes, symbolic',
            'ad': f'100-op function, primal + reverse-mode gradient, {an} floats',
            'ao': f'ambient occlusion sample, {w}x{h}, {spp} spp, {AO_MODE} loop'}


def print_figure(title, results, rows):
    """One figure: a line per library that gave no figures (why), then pbc.cuda's and
    drjit.cuda's figures and their ratio (pbc / Dr.Jit: below 1 is pbc faster, for
    times)."""
    print(title)
    for lib in LIBS.values():
        r = results[lib]
        if 'error' in r:
            print(f'  {lib}: {r["error"] if "available" in r else "failed: " + r["error"]}')
        elif not r.get('ok', True):
            print(f'  {lib}: WRONG RESULT (its figures follow)')
    if all('error' in r for r in results.values()):
        return
    p, d = (results[lib] for lib in LIBS.values())
    print(f'  {"":<48} {"pbc.cuda":>12} {"drjit.cuda":>12} {"ratio":>7}')
    for key, label, unit, scale, fmt in rows:
        a, b = p.get(key), d.get(key)
        fa = format(a * scale, fmt) if number(a) else '-'
        fb = format(b * scale, fmt) if number(b) else '-'
        ratio = f'{a / b:.2f}' if number(a) and number(b) and b else '-'
        print(f'  {label + (f" ({unit})" if unit else ""):<48} {fa:>12} {fb:>12} {ratio:>7}')


def ratios(results, rows):
    """{key: pbc's figure / Dr.Jit's} where both have it."""
    p, d = (results[lib] for lib in LIBS.values())
    return {key: p[key] / d[key] for key, *_ in rows
            if number(p.get(key)) and number(d.get(key)) and d[key]}


def version(package):
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return 'not installed'


def header_lines(size, timeout):
    """The machine and the versions: {'gpu', 'driver', 'compute_capability', 'memory_gib',
    'libcuda', 'cpu', 'cpus', 'python', 'pbc', 'drjit', 'numpy'} ('gpu' None and 'gpu_error' why,
    where pbc.cuda cannot run), printed as the suite's first lines. The GPU is named by
    the driver in a child process: this one stays off the device."""
    import pbc
    info = best_of_rounds({'info': ('gpu', ('info',), None)}, rounds=1, timeout=timeout)['info']
    if 'error' in info:
        info = {'gpu': None, 'gpu_error': info['error']}
    header = dict(info, cpu=cpu_model(), cpus=os.cpu_count(), python=platform.python_version(),
                  pbc=pbc.__version__, drjit=version('drjit'), numpy=np.__version__)
    print(f'pbc GPU benchmarks ({size} sizes): pbc.cuda beside drjit.cuda, each in fresh '
          'processes (empty kernel caches); ratio = pbc / Dr.Jit')
    if header['gpu'] is None:
        print(f'  GPU: pbc.cuda {header["gpu_error"]}')
    else:
        print(f'  GPU: {header["gpu"]} (compute capability {header["compute_capability"]}, '
              f'{header["memory_gib"]} GiB), driver {header["driver"]}')
    print(f'  CPU: {header["cpu"]} ({header["cpus"]} CPUs); Python {header["python"]}, '
          f'pbc {header["pbc"]}, drjit {header["drjit"]}, NumPy {header["numpy"]}')
    return header


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m benchmarks gpu',
                                     description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='tiny sizes (a dry run)')
    parser.add_argument('--json', metavar='PATH', help='write every figure to PATH')
    parser.add_argument('--rounds', type=int, default=1,
                        help='fresh processes per figure and library, the best kept (1)')
    parser.add_argument('--timeout', type=float, default=60,
                        help='seconds one process may take (60)')
    args = parser.parse_args(argv)
    size = 'quick' if args.quick else 'full'
    t_start = time.perf_counter()
    report = {'suite': 'gpu', 'size': size, 'sizes': SIZES[size], 'rounds': args.rounds,
              'header': header_lines(size, args.timeout), 'figures': {}, 'ratios': {},
              'seconds': {}}
    # (a CUDA_CACHE_PATH set on the machine would keep the driver's compiled PTX across
    # processes, beside the fresh HOME that run_child gives each)
    env = {'pbc': {'CUDA_CACHE_DISABLE': '1'}, 'drjit': {'CUDA_CACHE_DISABLE': '1'}}
    libcuda = report['header'].get('libcuda')
    if libcuda and 'DRJIT_LIBCUDA_PATH' not in os.environ:
        env['drjit']['DRJIT_LIBCUDA_PATH'] = libcuda       # (the driver pbc found)
    for figure, title in titles(SIZES[size]).items():
        t0 = time.perf_counter()
        libs = ('pbc',) if figure == 'ao' else tuple(LIBS)
        results = best_of_rounds({LIBS[lib]: ('gpu', (figure, lib, size), env[lib])
                                  for lib in libs}, rounds=args.rounds, timeout=args.timeout)
        if figure == 'ao':
            results['drjit.cuda'] = {'available': False, 'error': 'not available: the '
                                     'sample is written against pbc (no Dr.Jit version)'}
        results = {lib: results[lib] for lib in LIBS.values()}
        if figure == 'stream':
            # (here, from the best queued time of the rounds)
            for r in results.values():
                if 'queued' in r:
                    r['gbps'] = 12 * SIZES[size]['stream'] / r['queued'] / 1e9
        print_figure(title, results, ROWS[figure])
        report['seconds'][figure] = time.perf_counter() - t0
        row('  (time for this figure, process starts included)',
            f'{report["seconds"][figure]:.1f}', 's')
        report['figures'][figure] = results
        report['ratios'][figure] = ratios(results, ROWS[figure])
    report['seconds']['total'] = time.perf_counter() - t_start
    print(f'total {report["seconds"]["total"]:.1f} s')
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(report, f, indent=1)
        print(f'figures written to {args.json}')
    return 0


if __name__ == '__main__':
    if sys.argv[1:2] == ['child']:
        what = sys.argv[2]
        print(json.dumps(child_info() if what == 'info' else child(what, *sys.argv[3:5])))
    else:
        sys.exit(main(sys.argv[1:]))
