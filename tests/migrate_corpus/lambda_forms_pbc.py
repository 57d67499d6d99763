"""lambda_forms_drjit.py, written for pbc."""
import pbc
from pbc.llvm import Float, UInt32


@pbc.syntax
def collatz(n):
    steps = UInt32(0)
    while n != 1:
        n = pbc.select(n % 2 == 0, n // 2, 3 * n + 1)
        steps += 1
    return steps


@pbc.syntax
def newton_sqrt(a):
    x, it = Float(a), UInt32(0)
    while it < 6:
        x = 0.5 * (x + a / x)
        it += 1
    return x


@pbc.syntax
def piecewise(x):
    if x < 0:
        y = -x * 2
    else:
        y = pbc.sqrt(x)
    if y > 1:
        lo, hi = y, x
    else:
        lo, hi = x, y
    return y, lo, hi


def run():
    return (collatz(UInt32(1, 2, 3, 6, 7, 27)), newton_sqrt(Float(2, 9, 10)),
            piecewise(Float(-2, -0.25, 0.5, 4)))
