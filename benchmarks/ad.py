"""Automatic differentiation benchmarks, beside Dr.Jit 1.5 (drjit.llvm.ad) when it is
installed (run in a child process; pbc never imports it):

  * reverse-mode gradient of a 100-op elementwise function of two inputs on 10^7 floats:
    primal alone vs primal + gradients (traced, fused and run), and kernels launched;
  * tracing cost per op with gradients enabled and disabled;
  * the dispatch benchmark's series (benchmarks/dispatch.py) at M = 64 on 10^6 lanes, each
    target scaled by a parameter of its own, differentiated in reverse mode w.r.t. the 64
    parameters: symbolic and evaluated calls, first call (fresh process) and warm, beside
    Dr.Jit 1.5's dr.switch doing the same (when installed);
  * a Path Replay Backpropagation toy: 10^6 lanes, 16 steps, each multiplying the lane's
    value by a texel of a differentiable 1024-texel table (or by a method of one of 4
    materials, each scaling a texel of a texture of its own); the tables' gradients
    computed as PRB does (a replay loop calling backward_from inside, one kernel) and
    through the evaluated loop (the wavefront: a kernel per step, every step's values
    kept): time (best of 3 after a first call) and peak memory, each in a fresh process,
    beside Dr.Jit 1.5 doing the same (when installed).

    python -m benchmarks ad

Dr.Jit runs as benchmarks/compare.py says (libLLVM >= 15 needed).
Prints one labelled figure per line; asserts nothing.
"""

import os
import statistics
import time

N = 10_000_000
TRACE_ROUNDS = 20_000          # x 5 ops


def function(a, b):
    """100 elementwise ops (20 rounds of mul, add, mul, add, div); |y| stays below 1."""
    y = a
    for _ in range(20):
        y = y * a + b
        y = y / (1.0 + y * y)
    return y


def measure(lib):
    """Figures for one library: `lib` is a namespace with Float, enable_grad, backward,
    grad, eval, history() (kernels launched by the last call of run())."""
    import numpy as np
    rng = np.random.default_rng(0)
    a0, b0 = rng.uniform(0, 1, N).astype(np.float32), rng.uniform(0, 1, N).astype(np.float32)

    def inputs(grad):
        a, b = lib.Float(a0), lib.Float(b0)
        lib.eval(a, b)
        if grad:
            lib.enable_grad(a, b)
        return a, b

    def primal():
        a, b = inputs(False)
        t0 = time.perf_counter()
        lib.eval(function(a, b))
        lib.sync()
        return time.perf_counter() - t0

    def gradient():
        a, b = inputs(True)
        t0 = time.perf_counter()
        _grad_eval(lib, a, b)
        return time.perf_counter() - t0

    def best(fn, repeat=5):
        fn()                                 # compiles
        return statistics.median(fn() for _ in range(repeat))

    t_primal = best(primal)
    t_grad = best(gradient)
    a, b = inputs(True)
    n_kernels = lib.count_kernels(lambda: _grad_eval(lib, a, b))

    def trace(grad):
        a, b = lib.Float(a0[:1000]), lib.Float(b0[:1000])
        lib.eval(a, b)
        if grad:
            lib.enable_grad(a, b)
        t0 = time.perf_counter()
        y = a
        for _ in range(TRACE_ROUNDS):
            y = y * a + b
            y = y / (1.0 + y * y)
        t = time.perf_counter() - t0
        del y
        return t / (TRACE_ROUNDS * 5)

    trace(False)
    off = statistics.median(trace(False) for _ in range(5))
    on = statistics.median(trace(True) for _ in range(5))
    return dict(primal=t_primal, grad=t_grad, kernels=n_kernels, trace_off=off, trace_on=on)


def _grad_eval(lib, a, b):
    y = function(a, b)
    lib.backward(y)
    lib.eval(y, lib.grad(a), lib.grad(b))
    lib.sync()


DISPATCH_M = 64


def dispatch_child(lib, mode):
    """The reverse-mode gradient of the dispatch series w.r.t. a parameter per target; lib
    'pbc', 'flushed' (pbc with JitFlag.FlushDenormals: the series' high-order terms are
    subnormal, which Dr.Jit's thread pool flushes to zero) or 'drjit'."""
    from benchmarks import llvm_setup
    from benchmarks.dispatch import WARM_REPEAT, inputs, series, terms
    if lib == 'drjit':
        import drjit as m
        from drjit.llvm.ad import Float, UInt32
        m.set_flag(m.JitFlag.SymbolicCalls, mode == 'symbolic')
    else:
        import pbc as m
        from pbc.llvm import Float, UInt32
        m.set_flag(m.JitFlag.FlushDenormals, lib == 'flushed')
    xs, idx = inputs(DISPATCH_M)
    x, index = Float(xs), UInt32(idx)
    llvm_setup(m, Float)
    params = [Float(0.5 + i / 128) for i in range(DISPATCH_M)]
    m.enable_grad(*params)
    funcs = [(lambda n, c: lambda v: series(v, n) * c)(terms(i, 'full'), params[i])
             for i in range(DISPATCH_M)]

    def run():
        for c in params:
            m.clear_grad(c)
        t0 = time.perf_counter()
        if lib == 'drjit':
            y = m.switch(index, funcs, x)
        else:
            y = m.switch(index, funcs, x, mode=mode)
        m.backward(y)
        grads = [m.grad(c) for c in params]
        m.eval(grads)
        m.sync_thread()
        return time.perf_counter() - t0, grads

    first, grads = run()
    warm = min(run()[0] for _ in range(WARM_REPEAT))
    return dict(first=first, warm=warm,
                checksum=float(sum(float(g.numpy()[0]) for g in grads)))


def dispatch_rows():
    from benchmarks import best_of_rounds, row
    from benchmarks.compare import LLVM19
    os.environ.setdefault('DRJIT_LIBLLVM_PATH', LLVM19)
    print(f'Dispatch series, M = {DISPATCH_M}, 10^6 lanes: reverse-mode gradient w.r.t. a '
          'parameter per target, first / warm (ms)')
    names = {'pbc': 'pbc', 'flushed': 'pbc flushed', 'drjit': 'Dr.Jit 1.5'}
    for mode in ('symbolic', 'evaluated'):
        r = best_of_rounds({lib: ('ad', ('dispatch', lib, mode), None) for lib in names})
        for lib, f in r.items():
            row(f'  {mode:<9} {names[lib]}', f['error'][:60] if 'error' in f else
                f"{f['first'] * 1e3:.1f} / {f['warm'] * 1e3:.1f}")
        d = r['drjit']
        for lib in ('pbc', 'flushed'):
            p = r[lib]
            if 'error' not in p and 'error' not in d:
                row(f'  {mode:<9} ratio {names[lib]} / Dr.Jit (target <= 1)',
                    f"{p['first'] / d['first']:.2f} / {p['warm'] / d['warm']:.2f}")
        if 'error' not in r['pbc'] and 'error' not in d:
            row(f'  {mode:<9} same gradients (sum)',
                f"{r['pbc']['checksum']:.6g} / {d['checksum']:.6g}")


PRB_LANES, PRB_STEPS, PRB_TEXELS, PRB_MATERIALS = 1_000_000, 16, 1024, 4


def prb_child(lib, variant, kind):
    """(figures, the tables' gradients as NumPy arrays) of the PRB toy for `lib` ('pbc' or
    'drjit'), run the `variant` way ('megakernel' or 'wavefront'); `kind` 'method': each
    step evaluates a material's method (a call over PRB_MATERIALS materials, each scaling
    a texel of its own differentiable texture: pbc.Object instances in pbc, a dr.switch
    over the materials' functions in Dr.Jit, whose dispatch takes only C++ classes);
    'texture': each step reads a texel of one differentiable texture, no call."""
    import numpy as np

    from benchmarks import compare
    mode = 'symbolic' if variant == 'megakernel' else 'evaluated'
    if lib == 'drjit':
        import drjit as m
        from drjit.llvm.ad import Float, UInt32
        m.set_flag(m.JitFlag.SymbolicCalls, mode == 'symbolic')
    else:
        import pbc as m
        from pbc.llvm import Float, Ptr, UInt32

    def texel_index(i, lane):
        return (lane * 2654435761 + i * 40503) % PRB_TEXELS

    rng = np.random.default_rng(3)
    count = PRB_MATERIALS if kind == 'method' else 1
    params = [Float(rng.uniform(0.9, 1.1, PRB_TEXELS).astype(np.float32))
              for _ in range(count)]
    m.enable_grad(*params)
    scales = [0.95 + 0.05 * k for k in range(count)]
    lane = m.arange(UInt32, PRB_LANES)
    material = (lane * 40503) % count if kind == 'method' else None
    if kind == 'texture':
        def value(i):
            return m.gather(Float, params[0], texel_index(i, lane))
    elif lib == 'drjit':
        def material_function(texels, scale):
            return lambda i, lane: m.gather(Float, texels, texel_index(i, lane)) * scale

        funcs = [material_function(t, s) for t, s in zip(params, scales)]

        def value(i):
            return m.switch(material, funcs, i, lane)
    else:
        class Material(m.Object):
            def __init__(self, texels, scale):
                super().__init__()
                self.texels, self.scale = texels, scale

            def eval(self, i, lane):
                return m.gather(Float, self.texels, texel_index(i, lane)) * self.scale

        ptrs = m.gather(Ptr[Material], Ptr[Material](
            [Material(t, s) for t, s in zip(params, scales)]), material)

        def value(i):
            return ptrs.eval(i, lane, mode=mode)
    m.eval(lane, material, *params)

    # (explicit while_loop calls, not @syntax: Dr.Jit's rewrite loses the closure's names)
    def primal():
        def step(i, L):
            return i + 1, L * value(i)
        return m.while_loop((UInt32(0), Float(1.0)), lambda i, L: i < PRB_STEPS, step,
                            mode=mode)[1]

    def replay(L):
        def step(i):
            with m.resume_grad():
                t = value(i)
                m.backward_from(L * t / m.detach(t))
            return (i + 1,)
        m.while_loop((UInt32(0),), lambda i: i < PRB_STEPS, step, mode='symbolic')

    def run():
        for t in params:
            m.clear_grad(t)
        t0 = time.perf_counter()
        if variant == 'megakernel':
            with m.suspend_grad():
                replay(primal())
        else:
            m.backward(primal())
        g = [m.grad(t) for t in params]
        m.eval(g)
        m.sync_thread()
        return time.perf_counter() - t0, g

    calls = []
    kernels = (compare.Drjit if lib == 'drjit' else compare.Pbc)(ad=True).count_kernels(
        lambda: calls.append(run()))
    (first, g), = calls
    warm = min(run()[0] for _ in range(3))
    gradients = [t.numpy() for t in g]
    return dict(first=first, warm=warm, kernels=kernels,
                peak=m._runtime.memory_usage()[1] if lib == 'pbc' else None,
                checksum=sum(float(np.sum(t, dtype=np.float64)) for t in gradients)), gradients


def prb_rows():
    from benchmarks import best_of_rounds, row
    from benchmarks.compare import LLVM19
    os.environ.setdefault('DRJIT_LIBLLVM_PATH', LLVM19)
    names = {'pbc': 'pbc', 'drjit': 'Dr.Jit 1.5'}
    for kind, what in (('method', f'a method of {PRB_MATERIALS} materials per step'),
                       ('texture', 'a texel per step, no call')):
        print(f'Path Replay Backpropagation toy, {what}: {PRB_LANES:.0e} lanes, '
              f'{PRB_STEPS} steps, {PRB_TEXELS} texels')
        r = best_of_rounds({(lib, v): ('ad', ('prb', lib, v, kind), None)
                            for lib in names for v in ('megakernel', 'wavefront')})
        for (lib, v), f in r.items():
            label = f'  {names[lib]} {v}'
            if 'error' in f:
                row(label, f['error'][:60])
                continue
            row(f'{label}: first / warm (ms)', f"{f['first'] * 1e3:.1f} / {f['warm'] * 1e3:.1f}")
            peak = f"{f['peak'] / 2**20:.1f}" if f['peak'] is not None else '-'
            row(f'{label}: kernels, peak memory (MiB)', f"{f['kernels']}, {peak}")
        for lib, name in names.items():
            mk, w = r[(lib, 'megakernel')], r[(lib, 'wavefront')]
            if 'error' in mk or 'error' in w:
                continue
            row(f'  {name}: same gradient (sum over the textures)',
                f"{mk['checksum']:.6g} / {w['checksum']:.6g}")
            row(f'  {name}: wavefront / megakernel, warm time' +
                (' (target >= 10)' if lib == 'pbc' else ''), f"{w['warm'] / mk['warm']:.1f}")
            if lib == 'pbc':
                row('  pbc: wavefront / megakernel, peak memory', f"{w['peak'] / mk['peak']:.1f}")
        d = r[('drjit', 'megakernel')]
        if 'error' not in d:
            row('  megakernel, warm: pbc / Dr.Jit',
                f"{r[('pbc', 'megakernel')]['warm'] / d['warm']:.2f}")


def main():
    from benchmarks import compare, cpu_model, row
    print(f'AD benchmarks on {cpu_model()} ({os.cpu_count()} cores)')
    results = compare.side_by_side('ad')      # each in a fresh process
    for name, r in results.items():
        print(f'{name}:')
        if 'error' in r:
            row('not available', r['error'][:60])
            continue
        row('100-op function of 2 inputs, 10^7 floats: primal (ms)', f"{r['primal'] * 1e3:.1f}")
        row('  primal + reverse-mode gradient (ms)', f"{r['grad'] * 1e3:.1f}")
        row('  ratio (target <= 2.5)', f"{r['grad'] / r['primal']:.2f}")
        row('  kernels launched for primal + gradient (target 1)', r['kernels'])
        row('tracing per op, gradients disabled (ns)', f"{r['trace_off'] * 1e9:.0f}")
        row('tracing per op, gradients enabled (ns)', f"{r['trace_on'] * 1e9:.0f}")
        row('  ratio (target <= 2.5)', f"{r['trace_on'] / r['trace_off']:.2f}")
    dispatch_rows()
    prb_rows()


if __name__ == '__main__':
    import json
    import sys
    if sys.argv[2:3] == ['prb']:
        print(json.dumps(prb_child(*sys.argv[3:6])[0]))
    elif sys.argv[2:3] == ['dispatch']:
        print(json.dumps(dispatch_child(sys.argv[3], sys.argv[4])))
    else:
        from benchmarks.compare import child_main
        child_main(measure, ad=True)
