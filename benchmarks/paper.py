"""The paper's ablation on primal path tracing and on Path Replay Backpropagation: the
sample renderer's path tracer (samples/renderer/path.py) on the Cornell box, and the
gradient of its image w.r.t. every material's albedo (samples/renderer/prb.py), each from
a wavefront baseline (loops and calls evaluated: a kernel per loop iteration and per call
target, every optimization off) to the megakernel, turning on one feature of the JIT at a
time in the order of the paper's figure:

    a  wavefront baseline          e  + call optimizations (OptimizeCalls)
    b  + constant propagation      f  + value numbering
    c  + calls as subroutines      g  + loops traced into the kernel (SymbolicLoops)
    d  + subroutine deduplication  h  + loop optimizations (OptimizeLoops)
       (MergeFunctions)

For each step, in a fresh process with an empty kernel cache: the kernels launched and their
IR operations (the paper's table of kernel sizes), tracing, compile and run times of the
first render and the warm render time (the best of three), peak memory, and the call
statistics of kernel assembly (call targets, those merged, call inputs and outputs removed,
loop state removed). Prints a table per task and writes them as Markdown, with a plot of
the times when matplotlib is installed, to PBC_PAPER_OUT (default: the current directory).

    python -m benchmarks paper           # 256 x 256 pixels, 4 paths per pixel
    PBC_PAPER_SIZE=128 PBC_PAPER_SPP=2 python -m benchmarks paper
    PBC_PAPER_TASKS=prb python -m benchmarks paper     # one of the tasks: path, prb
"""

import json
import os
import sys
import time

import numpy as np

from benchmarks import ROOT, cpu_model, llvm_setup, run_child

FLAGS = ('ConstantPropagation', 'ValueNumbering', 'SymbolicLoops', 'SymbolicCalls',
         'OptimizeCalls', 'MergeFunctions', 'OptimizeLoops')
STEPS = [('a', 'wavefront baseline', ()),
         ('b', '+ constant propagation', ('ConstantPropagation',)),
         ('c', '+ calls as subroutines', ('SymbolicCalls',)),
         ('d', '+ subroutine deduplication', ('MergeFunctions',)),
         ('e', '+ call optimizations', ('OptimizeCalls',)),
         ('f', '+ value numbering', ('ValueNumbering',)),
         ('g', '+ loop tracing', ('SymbolicLoops',)),
         ('h', '+ loop optimizations', ('OptimizeLoops',))]
WARM_REPEAT = 3                # warm: the best of this many renders
TASKS = {'path': 'Primal path tracing', 'prb': 'Path Replay Backpropagation (albedo gradients)'}
STATS = ('call_targets', 'call_targets_merged', 'call_inputs_removed', 'call_outputs_removed',
         'loop_state_removed')


def flags_of(step):
    """The JIT flags turned on at a step: those of every step up to it."""
    on = set()
    for key, _, flags in STEPS:
        on.update(flags)
        if key == step:
            return on
    raise ValueError(f'no step {step!r}')


def _task(name, size, spp):
    """A function running the task once: its result (the image, or the gradients) as a
    NumPy array."""
    sys.path.insert(0, os.path.join(ROOT, 'samples'))
    from renderer import prb, scene

    import pbc
    tracer = prb.PathReplay(scene.load(os.path.join(ROOT, 'samples', 'scenes', 'cornell')))
    if name == 'path':
        return lambda: tracer.render(size, size, spp).numpy()
    albedos = [b.albedo for b in dict.fromkeys(tracer.bsdfs)]
    pbc.enable_grad(*albedos)
    adjoint = pbc.llvm.Array3f(1.0 / (3 * size * size))      # (of the image's mean)

    def run():
        pbc.clear_grad(*albedos)
        tracer.render_backward(adjoint, size, size, spp)
        grads = [pbc.grad(a) for a in albedos]
        pbc.eval(grads)
        return np.concatenate([g.numpy().ravel() for g in grads])
    return run


def child(task, step, size, spp):
    import pbc
    on = flags_of(step)
    for name in FLAGS:
        pbc.set_flag(getattr(pbc.JitFlag, name), name in on)
    run = _task(task, size, spp)
    llvm_setup(pbc, pbc.llvm.Float)
    pbc.set_flag(pbc.JitFlag.KernelHistory, True)
    pbc.kernel_history_clear()
    t0 = time.perf_counter()
    result = run()                             # (reading it waits for the kernels)
    t2 = time.perf_counter()
    hist = pbc.kernel_history()
    pbc.set_flag(pbc.JitFlag.KernelHistory, False)
    compile_time = sum(k['codegen_time'] + k['backend_time'] for k in hist)
    run_time = sum(k['execution_time'] for k in hist)
    out = dict(kernels=len(hist), ir_ops=sum(k['ir_ops'] for k in hist),
               first=t2 - t0, compile=compile_time, run=run_time,
               trace=max(t2 - t0 - compile_time - run_time, 0.0),
               peak_memory=pbc._runtime.memory_usage()[1],
               mean=float(result.mean()),
               **{s: sum(k.get(s, 0) for k in hist) for s in STATS})
    warm = []
    for _ in range(WARM_REPEAT):
        t0 = time.perf_counter()
        run()
        warm.append(time.perf_counter() - t0)
    out['warm'] = min(warm)
    return out


HEADER = ('step', 'kernels', 'IR ops', 'trace ms', 'compile ms', 'run ms', 'first ms',
          'warm ms', 'peak MiB', 'targets', 'merged', 'inputs -', 'outputs -', 'loop state -')


def main():
    t0 = time.perf_counter()
    size = int(os.environ.get('PBC_PAPER_SIZE', '256'))
    spp = int(os.environ.get('PBC_PAPER_SPP', '4'))
    tasks = os.environ.get('PBC_PAPER_TASKS', 'path,prb').split(',')
    out = os.environ.get('PBC_PAPER_OUT', '.')
    lines = []
    for task in tasks:
        title = (f'{TASKS[task]} of the Cornell box, {size}x{size} pixels, {spp} paths per '
                 f'pixel, {cpu_model()} ({os.cpu_count()} CPUs)')
        print(f"pbc: the paper's ablation: {title}")
        rows = _ablation(task, size, spp)
        lines += [title, '', '| ' + ' | '.join(HEADER) + ' |', '|' + '---|' * len(HEADER)]
        for key, label, r in rows:
            lines.append('| ' + ' | '.join([
                f'{key} {label}', str(r['kernels']), str(r['ir_ops']),
                *(f'{r[k] * 1e3:.0f}' for k in ('trace', 'compile', 'run', 'first', 'warm')),
                f'{r["peak_memory"] / 2**20:.1f}', *(str(r[s]) for s in STATS)]) + ' |')
        lines.append('')
        _plot(rows, os.path.join(out, f'paper_ablation_{task}.png'),
              f'{TASKS[task]}: from wavefront (a) to megakernel (h)')
    path = os.path.join(out, 'paper_ablation.md')
    with open(path, 'w') as f:
        f.write('\n'.join(lines))
    print(f'  tables: {path}')
    print(f'total {time.perf_counter() - t0:.1f} s')


def _ablation(task, size, spp):
    """Runs every step of the task in a child; prints a line per step, returns the rows."""
    rows = []
    for key, label, _ in STEPS:
        r = run_child('paper', task, key, str(size), str(spp))
        if 'error' in r:
            print(f'  {key} {label}: {r["error"]}')
            continue
        rows.append((key, label, r))
        print(f'  {key} {label:<28} {r["kernels"]:>6} kernels {r["ir_ops"]:>8} IR ops  '
              f'first {r["first"] * 1e3:8.0f} ms  warm {r["warm"] * 1e3:8.0f} ms  '
              f'peak {r["peak_memory"] / 2**20:7.1f} MiB', flush=True)
    if len(rows) == len(STEPS):
        a, h = rows[0][2], rows[-1][2]
        print(f'  megakernel (h) against the wavefront baseline (a), warm: '
              f'{a["warm"] / h["warm"]:.1f}x faster, '
              f'{a["peak_memory"] / max(h["peak_memory"], 1):.1f}x less peak memory')
    return rows


def _plot(rows, path, title):
    """Bars of trace, compile and run time (of the first render) and the warm render time
    per step, side by side on a log scale."""
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        print('  (matplotlib is not installed: no plot)')
        return
    fig, ax = plt.subplots(figsize=(9, 4))
    parts = ('trace', 'compile', 'run', 'warm')
    width = 0.8 / len(parts)
    for j, part in enumerate(parts):
        ax.bar([k + (j - 1.5) * width for k in range(len(rows))],
               [max(r[part] * 1e3, 0.01) for _, _, r in rows], width, label=part)
    ax.set_xticks(range(len(rows)), [f'{key}' for key, _, _ in rows])
    ax.set_yscale('log')
    ax.set_ylabel('ms')
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f'  plot: {path}')


if __name__ == '__main__':
    if sys.argv[1:2] == ['child']:
        print(json.dumps(child(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))))
    else:
        main()
