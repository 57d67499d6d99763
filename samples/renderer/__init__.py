"""A differentiable renderer written as plain Python on pbc: scenes (scene.py), a BVH built
with NumPy (bvh.py) and traversed inside the kernels (intersect.py), and integrators."""
