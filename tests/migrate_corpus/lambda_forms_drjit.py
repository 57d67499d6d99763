"""Dr.Jit 1.x loops and conditionals in their functional form: lambdas and local functions."""
import drjit as dr
from drjit.llvm import Float, UInt32


def collatz(n):
    """Steps until each lane reaches 1."""
    steps = UInt32(0)

    def cond(n, steps):
        return n != 1

    def body(n, steps):
        n = dr.select(n % 2 == 0, n // 2, 3 * n + 1)   # one step
        return n, steps + 1

    n, steps = dr.while_loop((n, steps), cond, body)
    return steps


def newton_sqrt(a):
    x, it = Float(a), UInt32(0)
    x, it = dr.while_loop(state=(x, it),
                          cond=lambda v, k: k < 6,
                          body=lambda v, k: (0.5 * (v + a / v), k + 1),
                          labels=('x', 'it'))
    return x


def piecewise(x):
    y = dr.if_stmt((x,), x < 0, lambda x: -x * 2, lambda x: dr.sqrt(x))
    lo, hi = dr.if_stmt((x, y), y > 1,
                        lambda a, b: (b, a),
                        lambda a, b: (a, b))
    return y, lo, hi


def run():
    return (collatz(UInt32(1, 2, 3, 6, 7, 27)), newton_sqrt(Float(2, 9, 10)),
            piecewise(Float(-2, -0.25, 0.5, 4)))
