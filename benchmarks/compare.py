"""Side-by-side figures: one measurement, written once against a small namespace (`Lib`),
run by pbc and by Dr.Jit 1.5 when it is installed, each in a fresh process with an empty
kernel cache, printed with their ratio. pbc itself never imports Dr.Jit.

Dr.Jit needs libLLVM >= 15: `apt-get install libllvm19`; DRJIT_LIBLLVM_PATH defaults to
LLVM 19's library here. A module using this defines `measure(lib) -> {key: seconds or
number}` and calls `child_main(measure)` under `if __name__ == '__main__'`.
"""

import json
import os
import sys

from benchmarks import ROOT, best_of_rounds, row

LLVM19 = '/usr/lib/x86_64-linux-gnu/libLLVM.so.19.1'
LIBS = ('pbc', 'drjit')


class Lib:
    """What a measurement may use: array types, creation, evaluation, synchronization,
    and a count of the kernels a function launches."""
    name = ''

    def count_kernels(self, fn):
        raise NotImplementedError


class Pbc(Lib):
    name = 'pbc'

    def __init__(self, ad=False):
        import pbc
        from pbc import llvm
        self.m, self.Float, self.UInt32 = pbc, llvm.Float, llvm.UInt32
        self.eval, self.sync = pbc.eval, pbc.sync_thread
        self.arange, self.sin, self.exp, self.log = pbc.arange, pbc.sin, pbc.exp, pbc.log
        self.enable_grad, self.backward, self.grad = pbc.enable_grad, pbc.backward, pbc.grad

    def count_kernels(self, fn):
        pbc = self.m
        pbc.kernel_history_clear()
        with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
            fn()
            return len(pbc.kernel_history())


class Drjit(Lib):
    name = 'drjit 1.5'

    def __init__(self, ad=False):
        import drjit as dr
        m = __import__('drjit.llvm.ad' if ad else 'drjit.llvm', fromlist=['Float'])
        self.m, self.Float, self.UInt32 = dr, m.Float, m.UInt32
        self.eval, self.sync = dr.eval, dr.sync_thread     # (launches are asynchronous)
        self.arange, self.sin, self.exp, self.log = dr.arange, dr.sin, dr.exp, dr.log
        self.enable_grad, self.backward, self.grad = dr.enable_grad, dr.backward, dr.grad

    def count_kernels(self, fn):
        dr = self.m
        dr.kernel_history()                  # clears it
        with dr.scoped_set_flag(dr.JitFlag.KernelHistory, True):
            fn()
            return sum(1 for k in dr.kernel_history() if k['type'] == dr.KernelType.JIT)


def drjit_first_and_warm(compute, repeat):
    """Dr.Jit's figures for evaluating compute()'s result: the first call (seconds), the
    kernels it launched, their compile time (seconds) and IR operations, the best of
    `repeat` warm calls, and the result of the first call."""
    import time

    import drjit as dr

    def run():
        result = compute()
        dr.eval(result)
        dr.sync_thread()                     # (launches are asynchronous)
        return result
    dr.set_flag(dr.JitFlag.KernelHistory, True)
    dr.kernel_history()                      # clears it
    t0 = time.perf_counter()
    result = run()
    first = time.perf_counter() - t0
    hist = [h for h in dr.kernel_history() if h['type'] == dr.KernelType.JIT]
    dr.set_flag(dr.JitFlag.KernelHistory, False)
    warm = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()
        warm.append(time.perf_counter() - t0)
    return dict(first=first, kernels=len(hist), ir_ops=sum(h['operation_count'] for h in hist),
                compile=sum(h['codegen_time'] + h['backend_time'] for h in hist) / 1e3,  # (ms)
                warm=min(warm)), result


def child_main(measure, ad=False):
    """`python -m benchmarks.MODULE child LIB`: prints measure(LIB)'s figures as JSON."""
    name = sys.argv[2] if len(sys.argv) > 2 else 'pbc'
    lib = (Pbc if name == 'pbc' else Drjit)(ad=ad)
    print(json.dumps(measure(lib)))


def side_by_side(module):
    """{'pbc': figures, 'drjit 1.5': figures or {'error': why}}, the best of alternating
    fresh processes (Dr.Jit's with DRJIT_LIBLLVM_PATH set if it was not)."""
    os.environ.setdefault('DRJIT_LIBLLVM_PATH', LLVM19)
    return best_of_rounds({'pbc': (module, ('pbc',), None),
                           'drjit 1.5': (module, ('drjit',), None)})


def print_rows(results, rows):
    """rows: (key, label, unit, scale) per figure; prints pbc's, Dr.Jit's and their ratio
    (pbc / Dr.Jit: below 1 is pbc faster, for times)."""
    p, d = results['pbc'], results['drjit 1.5']
    if 'error' in p:
        row('pbc failed', p['error'][:60])
        return
    if 'error' in d:
        row('Dr.Jit 1.5 not available', d['error'][:60])
    print(f'  {"":<60} {"pbc":>10} {"Dr.Jit":>10} {"ratio":>7}')
    for key, label, unit, scale in rows:
        a, b = p.get(key), d.get(key)
        fa = f'{a * scale:.1f}' if a is not None else '-'
        fb = f'{b * scale:.1f}' if b is not None else '-'
        ratio = f'{a / b:.2f}' if a is not None and b else '-'
        print(f'  {label + (f" ({unit})" if unit else ""):<60} {fa:>10} {fb:>10} {ratio:>7}')


__all__ = ['Drjit', 'LIBS', 'Lib', 'Pbc', 'ROOT', 'child_main', 'drjit_first_and_warm',
           'print_rows', 'side_by_side']
