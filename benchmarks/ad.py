"""Automatic differentiation benchmarks, beside Dr.Jit 1.5 (drjit.llvm.ad) when it is
installed (run in a child process; pbc never imports it):

  * reverse-mode gradient of a 100-op elementwise function of two inputs on 10^7 floats:
    primal alone vs primal + gradients (traced, fused and run), and kernels launched;
  * tracing cost per op with gradients enabled and disabled.

    python -m benchmarks ad

Dr.Jit needs libLLVM >= 15: `apt-get install libllvm19` and
DRJIT_LIBLLVM_PATH=/usr/lib/x86_64-linux-gnu/libLLVM.so.19.1 (the default tried here).
Prints one labelled figure per line; asserts nothing.
"""

import json
import os
import statistics
import subprocess
import sys
import time

N = 10_000_000
TRACE_ROUNDS = 20_000          # x 5 ops
LLVM19 = '/usr/lib/x86_64-linux-gnu/libLLVM.so.19.1'


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


class _Pbc:
    def __init__(self):
        import pbc
        from pbc.llvm import Float
        self.pbc, self.Float = pbc, Float
        self.enable_grad, self.backward, self.grad = pbc.enable_grad, pbc.backward, pbc.grad
        self.eval, self.sync = pbc.eval, pbc.sync_thread

    def count_kernels(self, fn):
        self.pbc.kernel_history_clear()
        with self.pbc.scoped_set_flag(self.pbc.JitFlag.KernelHistory, True):
            fn()
            return len(self.pbc.kernel_history())


class _Drjit:
    def __init__(self):
        import drjit as dr
        from drjit.llvm.ad import Float
        self.dr, self.Float = dr, Float
        self.enable_grad, self.backward, self.grad = dr.enable_grad, dr.backward, dr.grad
        self.eval, self.sync = dr.eval, dr.sync_thread    # (launches are asynchronous)

    def count_kernels(self, fn):
        dr = self.dr
        dr.kernel_history()                  # clears it
        with dr.scoped_set_flag(dr.JitFlag.KernelHistory, True):
            fn()
            return sum(1 for k in dr.kernel_history()
                       if k['type'] == dr.KernelType.JIT)


def _drjit_figures():
    env = dict(os.environ)
    env.setdefault('DRJIT_LIBLLVM_PATH', LLVM19)
    res = subprocess.run([sys.executable, '-m', 'benchmarks.ad', 'child', 'drjit'],
                         env=env, capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if res.returncode != 0:
        lines = (res.stderr.strip() or res.stdout.strip() or '?').splitlines()
        return {'error': lines[-1]}
    return json.loads(res.stdout.strip().splitlines()[-1])


def _cpu():
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return '?'


def main():
    from benchmarks import row
    print(f'AD benchmarks on {_cpu()} ({os.cpu_count()} cores)')
    results = {'pbc': measure(_Pbc())}
    results['drjit 1.5'] = _drjit_figures()
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


if __name__ == '__main__':
    if sys.argv[1:3] == ['child', 'drjit']:
        print(json.dumps(measure(_Drjit())))
    else:
        main()
