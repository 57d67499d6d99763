"""A differentiable renderer written as plain Python on pbc: scenes (scene.py), a BVH built
with NumPy (bvh.py) and traversed inside the kernels (intersect.py), and integrators. Its
arrays are those of the backend that jit.py holds: pbc.llvm, or pbc.cuda after jit.use('cuda')."""
