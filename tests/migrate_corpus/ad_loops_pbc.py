"""ad_loops_drjit.py, written for pbc."""
import pbc
from pbc.llvm import Float, UInt32


@pbc.syntax
def power_series(x, n):
    k = UInt32(0)
    term, total = Float(1), Float(0)
    while k < n:
        total += term
        k += 1
        term = term * x / Float(k)
    return total


def run():
    x = Float(0.5, 1.0, 2.0)
    pbc.enable_grad(x)
    with pbc.suspend_grad():
        plain = power_series(x, 12)
    y = power_series(x, 12)
    pbc.forward(x)
    dy = pbc.grad(y)

    with pbc.scoped_set_flag(pbc.JitFlag.SymbolicLoops, False):
        z = Float(1.0, 2.0, 3.0)
        pbc.enable_grad(z)
        w = power_series(z, 8)
        pbc.backward(w)
        gz = pbc.grad(z)

    v = Float(1, 2)
    pbc.enable_grad(v)
    with pbc.isolate_grad():
        pbc.backward(v * v * 3)
    return plain, y, dy, w, gz, pbc.grad(v)
