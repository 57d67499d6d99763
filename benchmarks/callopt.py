"""What the call and loop optimizations remove (the paper's Figure "measure_vcall_loop_opt"):
subroutines, call inputs, call outputs and loop state, in a path-tracer-shaped kernel, and
the first-call and warm times beside Dr.Jit 1.5's for the same work (when installed).

    python -m benchmarks callopt

The workload: a symbolic bounce loop over 2^18 lanes; each bounce dispatches to the lane's
material (18 instances of 3 classes: width-1 JIT attributes as closure data, textures as
arrays by pointer), which returns a direction, a weight, a pdf, an emitted radiance, a lobe
flag, a roughness and a shading cosine that every material computes alike. The loop reads
some of them, passes a literal argument, and carries a state variable that nothing reads
after it. Prints, per configuration (each in fresh processes with an empty kernel cache,
"first" after the process's one-time LLVM setup; the best of PBC_BENCH_ROUNDS rounds that
alternate between the systems), the kernel_history() counts (total and removed) with the IR
size, compile and run times; asserts nothing.
"""

import json
import os
import sys
import time
from types import SimpleNamespace

import numpy as np

from benchmarks import best_of_rounds, cpu_model, llvm_setup, row
from benchmarks.compare import LLVM19, drjit_first_and_warm

N = 1 << 18
BOUNCES = 4
WARM_REPEAT = 5                 # warm figures: the best of these


def library(name):
    """What the workload uses of pbc or of Dr.Jit 1.5 (the same names in both)."""
    if name == 'pbc':
        import pbc as m
        from pbc import llvm as types
        base = m.Object
    else:
        import drjit as m
        from drjit import llvm as types
        base = object
    return SimpleNamespace(m=m, Float=types.Float, UInt32=types.UInt32, Array3f=types.Array3f,
                           Base=base)


def make_materials(L):
    """The 18 material instances of 3 classes (width-1 attributes, textures by pointer)."""
    m, Float, UInt32, Array3f = L.m, L.Float, L.UInt32, L.Array3f

    def shading_cosine(wi):
        """The same for every material: computed once outside the call (devirtualized)."""
        return m.abs(wi.z) * 0.5 + 0.5

    class Material(L.Base):
        def sample(self, wi, u, roughness):
            raise NotImplementedError

    class Diffuse(Material):
        def __init__(self, albedo):
            self.albedo = m.opaque(Float, albedo)         # closure data (one value)

        def sample(self, wi, u, roughness):
            phi = u * 6.2831855
            d = Array3f(m.cos(phi), m.sin(phi), m.sqrt(1 - u))
            return dict(wo=d, weight=Array3f(self.albedo), pdf=d.z * 0.31830987,
                        emitted=Array3f(0), lobe=UInt32(1), roughness=roughness + wi.z * 0,
                        cosine=shading_cosine(wi))

    class Textured(Material):
        def __init__(self, k, size):
            self.texture = Float(np.linspace(0.2, 0.9, size) * (k + 1) / 8)   # by pointer

        def sample(self, wi, u, roughness):
            t = m.gather(Float, self.texture, UInt32(u * 15.99))
            d = Array3f(-wi.x, -wi.y, wi.z)
            return dict(wo=d, weight=Array3f(t, t, t * 0.5), pdf=Float(1),
                        emitted=Array3f(t * 0.1), lobe=UInt32(2), roughness=roughness * t,
                        cosine=shading_cosine(wi))

    class Light(Material):
        def __init__(self, power):
            self.power = m.opaque(Float, power)

        def sample(self, wi, u, roughness):
            return dict(wo=wi, weight=Array3f(0), pdf=Float(0), emitted=Array3f(self.power),
                        lobe=UInt32(0), roughness=roughness, cosine=shading_cosine(wi))

    return Material, ([Diffuse(0.1 + 0.05 * k) for k in range(12)]
                      + [Textured(k, 16 + k) for k in range(4)] + [Light(2.0), Light(4.0)])


def render(L, sample, u0):
    """The bounce loop; sample(wi, u, roughness) dispatches to each lane's material."""
    m, UInt32, Array3f = L.m, L.UInt32, L.Array3f

    def cond(depth, throughput, radiance, wi, u, bounce_log):
        return depth < BOUNCES

    def body(depth, throughput, radiance, wi, u, bounce_log):
        s = sample(wi, u, L.Float(0.5))             # a literal argument
        radiance = radiance + throughput * s['emitted']
        throughput = throughput * s['weight'] * s['cosine']
        u = m.fma(u, 0.618034, 0.1)
        u = u - m.floor(u)
        return depth + 1, throughput, radiance, s['wo'], u, bounce_log + s['lobe']

    state = (UInt32(0), Array3f(1), Array3f(0), Array3f(0, 0, 1), u0, UInt32(0))
    return m.while_loop(state, cond, body)[2]


CONFIGS = {
    'all optimizations': {},
    'no OptimizeCalls': {'OptimizeCalls': False},
    'no MergeFunctions': {'MergeFunctions': False},
    'no OptimizeLoops': {'OptimizeLoops': False},
    'none': {'OptimizeCalls': False, 'MergeFunctions': False, 'OptimizeLoops': False},
}


def child(name, lib='pbc'):
    """One configuration's figures: pbc dispatches through a Ptr array of pbc.Objects,
    Dr.Jit through dr.switch over the instances' bound methods (its Python classes have no
    virtual calls); the same work otherwise."""
    L = library(lib)
    m = L.m
    Material, materials = make_materials(L)
    rng = np.random.default_rng(5)
    keys = rng.integers(0, len(materials), N)
    u0 = L.Float(rng.random(N, dtype=np.float32))
    m.eval(u0)
    llvm_setup(m, L.Float)
    if lib == 'drjit':
        m.sync_thread()
    for flag, value in CONFIGS[name].items():
        m.set_flag(getattr(m.JitFlag, flag), value)
    if lib == 'drjit':
        index = L.UInt32(keys.astype(np.uint32))
        methods = [mat.sample for mat in materials]
        out, image = drjit_first_and_warm(
            lambda: render(L, lambda *args: m.switch(index, methods, *args), u0), WARM_REPEAT)
        return dict(out, checksum=float(np.sum(image.numpy(), dtype=np.float64)))
    from pbc.llvm import Ptr
    ptrs = Ptr[Material]([materials[k] for k in keys])
    m.set_flag(m.JitFlag.KernelHistory, True)
    t0 = time.perf_counter()
    image = render(L, ptrs.sample, u0)
    m.eval(image)
    m.sync_thread()
    first = time.perf_counter() - t0
    rec = m.kernel_history()[-1]
    warm = []
    for _ in range(WARM_REPEAT):                    # warm: the kernel comes from the cache
        t0 = time.perf_counter()
        m.eval(render(L, ptrs.sample, u0))
        m.sync_thread()
        warm.append(time.perf_counter() - t0)
    return dict(rec, first=first, warm=min(warm),
                checksum=float(np.sum(image.numpy(), dtype=np.float64)))


def main():
    t0 = time.perf_counter()
    print(f'pbc call/loop optimization counts on {cpu_model()}: {os.cpu_count()} CPUs, {N} lanes, '
          f'18 material instances of 3 classes, {BOUNCES} bounces')
    sums = set()
    os.environ.setdefault('DRJIT_LIBLLVM_PATH', LLVM19)
    for name in CONFIGS:
        runs = best_of_rounds({'pbc': ('callopt', (name,), None),
                               'drjit': ('callopt', (name, 'drjit'), None)})
        rec, dr = runs['pbc'], runs['drjit']
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
        row(f'first call (trace + compile + run) / warm (best of {WARM_REPEAT})',
            f"{1e3 * rec['first']:.1f} / {1e3 * rec['warm']:.1f}", 'ms')
        if 'error' in dr:
            row('Dr.Jit 1.5', dr['error'][:60])
            continue
        same = abs(dr['checksum'] - rec['checksum']) <= 1e-4 * abs(rec['checksum'])
        row('Dr.Jit 1.5 (dr.switch): IR ops, compile', f"{dr['ir_ops']}, "
            f"{1e3 * dr['compile']:.1f}", 'ms')
        row('Dr.Jit 1.5 first call / warm', f"{1e3 * dr['first']:.1f} / {1e3 * dr['warm']:.1f}",
            'ms' + ('' if same else '  DIFFERENT IMAGE'))
        row('ratio pbc / Dr.Jit, first call / warm',
            f"{rec['first'] / dr['first']:.2f} / {rec['warm'] / dr['warm']:.2f}")
    print(f'all configurations give the same image: {len(sums) == 1}')
    print(f'total {time.perf_counter() - t0:.1f} s')


if __name__ == '__main__':
    if sys.argv[1:2] == ['child']:
        print(json.dumps(child(*sys.argv[2:])))
    else:
        main()
