"""The ambient occlusion walkthrough of the Dr.Jit paper (section 3), Dr.Jit 0.x style, with an
analytic occluder in place of the Mitsuba scene."""
import drjit as dr
from drjit.llvm import PCG32, Array3f, Float, Loop, UInt32


def occluded(o: Array3f, d: Array3f):
    """Rays blocked by the slab 0.2 < z < 0.3 above the plane when they pass x < 0."""
    t = (0.25 - o.z) / d.z
    return (t > 0) & (o.x + t * d.x < 0)


def ao(samples):
    x = dr.linspace(Float, -1, 1, num=32)
    y = dr.linspace(Float, -1, 1, num=32)
    x, y = dr.meshgrid(x, y)
    valid = dr.sqr(x) + dr.sqr(y) < 1          # the 'hit' pixels

    rng = PCG32(size=dr.width(x))
    i, result = UInt32(0), Float(0)
    loop = Loop("ao", state=lambda: (rng, i, result))
    while loop(valid & (i < samples)):
        # Sample from the cosine-weighted hemisphere
        sin_phi, cos_phi = dr.sincos(rng.next_float32() * dr.two_pi)
        sin_theta_2 = rng.next_float32()
        wo = Array3f(cos_phi * dr.sqrt(sin_theta_2),
                     sin_phi * dr.sqrt(sin_theta_2),
                     dr.sqrt(1 - sin_theta_2))
        # Count unoccluded rays
        result[~occluded(Array3f(x, y, 0), wo)] += 1.0
        i += 1
    return result / samples


def run():
    return ao(16), ao(UInt32(3))
