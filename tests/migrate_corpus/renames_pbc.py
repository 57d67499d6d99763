"""renames_drjit.py, written for pbc."""
import pbc
import pbc.llvm


def run():
    Float, UInt32 = pbc.llvm.Float, pbc.llvm.UInt32
    x = Float(0.5, 1.0, 1.5)
    u = UInt32(3, 0x80000000, 7)
    with pbc.scoped_set_flag(pbc.JitFlag.SymbolicCalls, True), \
            pbc.scoped_set_flag(pbc.JitFlag.OptimizeCalls, True), \
            pbc.scoped_set_flag(pbc.JitFlag.MergeFunctions, True), \
            pbc.scoped_set_flag(pbc.JitFlag.OptimizeLoops, True), \
            pbc.scoped_set_flag(pbc.JitFlag.ConstantPropagation, True):
        hi = pbc.mul_hi(u, UInt32(0x10000))
    return (hi, pbc.square(x), pbc.clip(x, 0.6, 1.2),
            pbc.rcp(pbc.tan(x)), pbc.rcp(pbc.cos(x)), pbc.rcp(pbc.sin(x)),
            x == 1.0, (u != 7) | (u == 3),
            pbc.all(x > 0, axis=None), pbc.any(x > 1, axis=None), pbc.none(x > 2, axis=None),
            pbc.sum(x, axis=None), pbc.prod(x, axis=None), pbc.min(x, axis=None),
            pbc.max(x, axis=None), pbc.mean(x, axis=None),
            pbc.reinterpret_array(UInt32, x), pbc.is_dynamic_v(x),
            pbc.mask_t(Float), pbc.leaf_t(Float), 2 * pbc.pi)
