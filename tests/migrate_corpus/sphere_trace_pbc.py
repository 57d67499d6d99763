"""sphere_trace_drjit.py, written for pbc."""
import pbc
from pbc.llvm import Array3f, Float, TensorXf, UInt32


def sdf(p: Array3f) -> Float:
    sdf_value = pbc.norm(p) - 1
    sdf_value += pbc.sin(p.x * 10) * pbc.sin(p.y * 10) * 0.02
    return sdf_value


@pbc.syntax
def trace(o: Array3f, d: Array3f) -> Array3f:
    i = UInt32(0)
    while i < 10:
        o = pbc.fma(d, sdf(o), o)
        i += 1
    return o


def shade(p: Array3f, l: Array3f) -> Float:
    pbc.enable_grad(p)
    value = sdf(p)
    pbc.set_grad(p, l)
    pbc.forward_to(value)
    return pbc.maximum(0, pbc.grad(value))


def run():
    x = pbc.linspace(Float, -1, 1, 40)
    x, y = pbc.meshgrid(x, x)
    p = trace(o=Array3f(0, 0, -2), d=pbc.normalize(Array3f(x, y, 1)))
    sh = shade(p, l=Array3f(0, -1, -1))
    sh[sdf(p) > .1] = 0
    img = Array3f(.1, .1, .2) + Array3f(.4, .4, .2) * sh
    return TensorXf(pbc.ravel(img), shape=(40, 40, 3))
