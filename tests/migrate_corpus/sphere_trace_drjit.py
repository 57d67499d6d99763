"""Dr.Jit 0.4's first-steps tutorial: sphere tracing a bumpy sphere and shading it with a
forward-mode derivative (the noise texture replaced by an analytic bump)."""
import drjit as dr
from drjit.llvm.ad import Array3f, Float, Loop, TensorXf, UInt32


def sdf(p: Array3f) -> Float:
    sdf_value = dr.norm(p) - 1
    sdf_value += dr.sin(p.x * 10) * dr.sin(p.y * 10) * 0.02
    return sdf_value


def trace(o: Array3f, d: Array3f) -> Array3f:
    i = UInt32(0)
    loop = Loop("Sphere tracing", lambda: (o, i))
    while loop(i < 10):
        o = dr.fma(d, sdf(o), o)
        i += 1
    return o


def shade(p: Array3f, l: Array3f) -> Float:
    dr.enable_grad(p)
    value = sdf(p)
    dr.set_grad(p, l)
    dr.forward_to(value)
    return dr.maximum(0, dr.grad(value))


def run():
    x = dr.linspace(Float, -1, 1, 40)
    x, y = dr.meshgrid(x, x)
    p = trace(o=Array3f(0, 0, -2), d=dr.normalize(Array3f(x, y, 1)))
    sh = shade(p, l=Array3f(0, -1, -1))
    sh[sdf(p) > .1] = 0
    img = Array3f(.1, .1, .2) + Array3f(.4, .4, .2) * sh
    return TensorXf(dr.ravel(img), shape=(40, 40, 3))
