"""Dr.Jit 0.x automatic differentiation around recorded loops: state declared with put/init,
forward mode through a symbolic loop, reverse mode through evaluated loops (LoopRecord off),
and the AD scopes."""
import drjit as dr
from drjit.llvm.ad import Float, Loop, UInt32


def power_series(x, n):
    """exp(x) to n terms."""
    k = UInt32(0)
    term, total = Float(1), Float(0)
    loop = Loop("series")
    loop.put(lambda: (k, term))
    loop.put(lambda: (total,))
    loop.init()
    while loop(k < n):
        total += term
        k += 1
        term = term * x / Float(k)
    return total


def run():
    x = Float(0.5, 1.0, 2.0)
    dr.enable_grad(x)
    with dr.suspend_grad():
        plain = power_series(x, 12)
    y = power_series(x, 12)
    dr.forward(x)
    dy = dr.grad(y)

    with dr.scoped_set_flag(dr.JitFlag.LoopRecord, False):
        z = Float(1.0, 2.0, 3.0)
        dr.enable_grad(z)
        w = power_series(z, 8)
        dr.backward(w)
        gz = dr.grad(z)

    v = Float(1, 2)
    dr.enable_grad(v)
    with dr.isolate_grad():
        dr.backward(v * v * 3)
    return plain, y, dy, w, gz, dr.grad(v)
