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
    """pbc's arrays of `backend`: 'llvm' (the CPU) or 'cuda' (pbc.cuda's types)."""
    name = 'pbc'

    def __init__(self, ad=False, backend='llvm'):
        import importlib

        import pbc
        types = importlib.import_module(f'pbc.{backend}')
        self.backend = backend
        self.m, self.Float, self.UInt32 = pbc, types.Float, types.UInt32
        self.eval, self.sync = pbc.eval, pbc.sync_thread
        self.arange, self.sin, self.exp, self.log = pbc.arange, pbc.sin, pbc.exp, pbc.log
        self.enable_grad, self.backward, self.grad = pbc.enable_grad, pbc.backward, pbc.grad
        self.clear_grad = pbc.clear_grad

    def kernel_history(self, fn):
        """(fn(), [(compile seconds, IR ops) of each kernel it launched])."""
        pbc = self.m
        pbc.kernel_history_clear()
        with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
            result = fn()
            hist = pbc.kernel_history()
        return result, [(h['codegen_time'] + h['backend_time'], h['ir_ops']) for h in hist]

    def count_kernels(self, fn):
        return len(self.kernel_history(fn)[1])

    def switch(self, index, funcs, *args, mode='symbolic'):
        return self.m.switch(index, funcs, *args, mode=mode)


class Drjit(Lib):
    """Dr.Jit's arrays of `backend` ('llvm' or 'cuda'): drjit.BACKEND, or drjit.BACKEND.ad
    with `ad`."""
    name = 'drjit 1.5'

    def __init__(self, ad=False, backend='llvm'):
        import drjit as dr
        m = __import__(f'drjit.{backend}.ad' if ad else f'drjit.{backend}', fromlist=['Float'])
        self.backend = backend
        self.m, self.Float, self.UInt32 = dr, m.Float, m.UInt32
        self.eval, self.sync = dr.eval, dr.sync_thread     # (launches are asynchronous)
        self.arange, self.sin, self.exp, self.log = dr.arange, dr.sin, dr.exp, dr.log
        self.enable_grad, self.backward, self.grad = dr.enable_grad, dr.backward, dr.grad
        self.clear_grad = dr.clear_grad

    def kernel_history(self, fn):
        """(fn(), [(compile seconds, IR ops) of each kernel it launched]); Dr.Jit's times
        are in ms, and its history also lists copies and reductions, which are no kernels
        of its compiler's."""
        dr = self.m
        dr.kernel_history()                  # clears it
        with dr.scoped_set_flag(dr.JitFlag.KernelHistory, True):
            result = fn()
            hist = dr.kernel_history()
        return result, [((h['codegen_time'] + h['backend_time']) / 1e3, h['operation_count'])
                        for h in hist if h['type'] == dr.KernelType.JIT]

    def count_kernels(self, fn):
        return len(self.kernel_history(fn)[1])

    def switch(self, index, funcs, *args, mode='symbolic'):
        # (Dr.Jit's dr.switch takes no mode: its SymbolicCalls flag chooses)
        dr = self.m
        with dr.scoped_set_flag(dr.JitFlag.SymbolicCalls, mode == 'symbolic'):
            return dr.switch(index, funcs, *args)


def first_and_warm(lib, compute, repeat, statistic=min):
    """Figures for evaluating compute()'s result with `lib` (a Lib): the first call
    (seconds, synchronized), the kernels it launched, their compile time (seconds) and IR
    operations, `statistic` (min: the best) of `repeat` warm calls; and the first call's
    result."""
    import time

    def run():
        result = compute()
        lib.eval(result)
        lib.sync()                           # (launches are asynchronous)
        return result
    t0 = time.perf_counter()
    result, hist = lib.kernel_history(run)
    first = time.perf_counter() - t0
    warm = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()
        warm.append(time.perf_counter() - t0)
    return dict(first=first, kernels=len(hist), ir_ops=sum(ops for _, ops in hist),
                compile=sum(t for t, _ in hist), warm=statistic(warm)), result


def drjit_first_and_warm(compute, repeat):
    """first_and_warm's figures for Dr.Jit's LLVM backend (with the best warm call)."""
    return first_and_warm(Drjit(), compute, repeat)


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
           'first_and_warm', 'print_rows', 'side_by_side']
