"""What the call and loop optimizations remove (the paper's Figure "measure_vcall_loop_opt"):
subroutines, call inputs, call outputs and loop state, in a path-tracer-shaped kernel.

    python -m benchmarks callopt

The workload: a symbolic bounce loop over 2^18 lanes; each bounce dispatches to the lane's
material (18 instances of 3 classes: width-1 JIT attributes as closure data, textures as
arrays by pointer), which returns a direction, a weight, a pdf, an emitted radiance, a lobe
flag, a roughness and a shading cosine that every material computes alike. The loop reads
some of them, passes a literal argument, and carries a state variable that nothing reads
after it. Prints, per configuration (each in a fresh process with an empty kernel cache),
the kernel_history() counts (total and removed) with the IR size, compile and run times;
asserts nothing.
"""

import json
import os
import sys
import time

import numpy as np

import pbc
from benchmarks import cpu_model, row, run_child
from pbc.llvm import Array3f, Float, Ptr, UInt32

N = 1 << 18
BOUNCES = 4


def shading_cosine(wi):
    """The same for every material: computed once outside the call (devirtualized)."""
    return pbc.abs(wi.z) * 0.5 + 0.5


class Material(pbc.Object):
    def sample(self, wi, u, roughness):
        raise NotImplementedError


class Diffuse(Material):
    def __init__(self, albedo):
        self.albedo = Float(albedo)                   # closure data (one value)

    def sample(self, wi, u, roughness):
        phi = u * 6.2831855
        d = Array3f(pbc.cos(phi), pbc.sin(phi), pbc.sqrt(1 - u))
        return dict(wo=d, weight=Array3f(self.albedo), pdf=d.z * 0.31830987,
                    emitted=Array3f(0), lobe=UInt32(1), roughness=roughness + wi.z * 0,
                    cosine=shading_cosine(wi))


class Textured(Material):
    def __init__(self, k, size):
        self.texture = Float(np.linspace(0.2, 0.9, size) * (k + 1) / 8)   # by pointer

    def sample(self, wi, u, roughness):
        t = pbc.gather(Float, self.texture, UInt32(u * 15.99))
        d = Array3f(-wi.x, -wi.y, wi.z)
        return dict(wo=d, weight=Array3f(t, t, t * 0.5), pdf=Float(1),
                    emitted=Array3f(t * 0.1), lobe=UInt32(2), roughness=roughness * t,
                    cosine=shading_cosine(wi))


class Light(Material):
    def __init__(self, power):
        self.power = Float(power)

    def sample(self, wi, u, roughness):
        return dict(wo=wi, weight=Array3f(0), pdf=Float(0), emitted=Array3f(self.power),
                    lobe=UInt32(0), roughness=roughness, cosine=shading_cosine(wi))


MATERIALS = ([Diffuse(0.1 + 0.05 * k) for k in range(12)]
             + [Textured(k, 16 + k) for k in range(4)] + [Light(2.0), Light(4.0)])


def render(ptrs, u0):
    def cond(depth, throughput, radiance, wi, u, bounce_log):
        return depth < BOUNCES

    def body(depth, throughput, radiance, wi, u, bounce_log):
        s = ptrs.sample(wi, u, 0.5)                 # a literal argument
        radiance = radiance + throughput * s['emitted']
        throughput = throughput * s['weight'] * s['cosine']
        u = pbc.fma(u, 0.618034, 0.1)
        u = u - pbc.floor(u)
        return depth + 1, throughput, radiance, s['wo'], u, bounce_log + s['lobe']

    state = (UInt32(0), Array3f(1), Array3f(0), Array3f(0, 0, 1), u0, UInt32(0))
    return pbc.while_loop(state, cond, body)[2]


CONFIGS = {
    'all optimizations': {},
    'no OptimizeCalls': {pbc.JitFlag.OptimizeCalls: False},
    'no MergeFunctions': {pbc.JitFlag.MergeFunctions: False},
    'no OptimizeLoops': {pbc.JitFlag.OptimizeLoops: False},
    'none': {pbc.JitFlag.OptimizeCalls: False, pbc.JitFlag.MergeFunctions: False,
             pbc.JitFlag.OptimizeLoops: False},
}


def child(name):
    flags = CONFIGS[name]
    rng = np.random.default_rng(5)
    ptrs = Ptr[Material]([MATERIALS[k] for k in rng.integers(0, len(MATERIALS), N)])
    u0 = Float(rng.random(N, dtype=np.float32))
    for f, v in flags.items():
        pbc.set_flag(f, v)
    pbc.set_flag(pbc.JitFlag.KernelHistory, True)
    image = render(ptrs, u0)
    pbc.eval(image)
    rec = pbc.kernel_history()[-1]
    t0 = time.perf_counter()
    pbc.eval(render(ptrs, u0))                      # warm: the kernel comes from the cache
    warm = time.perf_counter() - t0
    return dict(rec, warm=warm, checksum=float(np.sum(image.numpy(), dtype=np.float64)))


def main():
    t0 = time.perf_counter()
    print(f'pbc call/loop optimization counts on {cpu_model()}: {os.cpu_count()} CPUs, {N} lanes, '
          f'{len(MATERIALS)} material instances, {BOUNCES} bounces')
    sums = set()
    for name in CONFIGS:
        rec = run_child('callopt', name)
        print(name)
        if 'error' in rec:
            row('failed', rec['error'])
            continue
        sums.add(round(rec['checksum'], 1))
        subs = rec['call_targets']
        row('subroutines (targets traced / left after merging)',
            f"{subs} / {subs - rec['call_targets_merged']}")
        row('call inputs (per target) / removed',
            f"{rec['call_inputs']} / {rec['call_inputs_removed']}")
        row('call outputs / removed', f"{rec['call_outputs']} / {rec['call_outputs_removed']}")
        row('loop state variables / removed',
            f"{rec['loop_state']} / {rec['loop_state_removed']}")
        row('IR ops', rec['ir_ops'])
        row('compile (codegen + LLVM)', f"{1e3 * (rec['codegen_time'] + rec['backend_time']):.1f}",
            'ms')
        row('run (warm)', f"{1e3 * rec['warm']:.1f}", 'ms')
    print(f'all configurations give the same image: {len(sums) == 1}')
    print(f'total {time.perf_counter() - t0:.1f} s')


if __name__ == '__main__':
    if sys.argv[1:2] == ['child']:
        print(json.dumps(child(sys.argv[2])))
    else:
        main()
