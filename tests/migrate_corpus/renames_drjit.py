"""Dr.Jit 0.x names that Dr.Jit 1.x renamed or dropped, through a plain import of the module."""
import drjit
import drjit.llvm.ad


def run():
    Float, UInt32 = drjit.llvm.ad.Float, drjit.llvm.ad.UInt32
    x = Float(0.5, 1.0, 1.5)
    u = UInt32(3, 0x80000000, 7)
    with drjit.scoped_set_flag(drjit.JitFlag.VCallRecord, True), \
            drjit.scoped_set_flag(drjit.JitFlag.VCallOptimize, True), \
            drjit.scoped_set_flag(drjit.JitFlag.VCallDeduplicate, True), \
            drjit.scoped_set_flag(drjit.JitFlag.LoopOptimize, True), \
            drjit.scoped_set_flag(drjit.JitFlag.ConstProp, True):
        hi = drjit.mulhi(u, UInt32(0x10000))
    return (hi, drjit.sqr(x), drjit.clamp(x, 0.6, 1.2),
            drjit.cot(x), drjit.sec(x), drjit.csc(x),
            drjit.eq(x, 1.0), drjit.neq(u, 7) | drjit.eq(u, 3),
            drjit.all_nested(x > 0), drjit.any_nested(x > 1), drjit.none_nested(x > 2),
            drjit.sum_nested(x), drjit.prod_nested(x), drjit.min_nested(x),
            drjit.max_nested(x), drjit.mean_nested(x),
            drjit.reinterpret_array_v(UInt32, x), drjit.is_dynamic_array_v(x),
            drjit.bool_array_t(Float), drjit.leaf_array_t(Float), drjit.two_pi)
