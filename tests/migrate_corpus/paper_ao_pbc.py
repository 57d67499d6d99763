"""paper_ao_drjit.py, written for pbc."""
import pbc
from pbc.llvm import PCG32, Array3f, Float, UInt32


def occluded(o: Array3f, d: Array3f):
    t = (0.25 - o.z) / d.z
    return (t > 0) & (o.x + t * d.x < 0)


@pbc.syntax
def ao(samples):
    x = pbc.linspace(Float, -1, 1, num=32)
    y = pbc.linspace(Float, -1, 1, num=32)
    x, y = pbc.meshgrid(x, y)
    valid = pbc.square(x) + pbc.square(y) < 1

    rng = PCG32(size=pbc.width(x))
    i, result = UInt32(0), Float(0)
    while valid & (i < samples):
        sin_phi, cos_phi = pbc.sincos(rng.next_float32() * 2 * pbc.pi)
        sin_theta_2 = rng.next_float32()
        wo = Array3f(cos_phi * pbc.sqrt(sin_theta_2),
                     sin_phi * pbc.sqrt(sin_theta_2),
                     pbc.sqrt(1 - sin_theta_2))
        result[~occluded(Array3f(x, y, 0), wo)] += 1.0
        i += 1
    return result / samples


def run():
    return ao(16), ao(UInt32(3))
