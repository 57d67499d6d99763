"""The CPU backend's types: `from pbc.llvm import Float, UInt32, Array3f, TensorXf`."""

import sys

from .array import make_flat_types
from .control import Loop  # noqa: F401  (Dr.Jit 0.x imported Loop from its backends)
from .dispatch import make_ptr
from .pcg32 import make_pcg32
from .tensor import make_tensor_types
from .vector import make_vector_types

_flat = make_flat_types(0, __name__)
globals().update(_flat)
globals().update(make_vector_types(_flat, __name__))
globals().update(make_tensor_types(_flat, __name__))
PCG32 = make_pcg32(_flat, __name__)
Ptr = make_ptr(_flat, __name__)

# pbc's float arrays are differentiable themselves: pbc.llvm.ad is pbc.llvm.
ad = sys.modules[__name__]
sys.modules[__name__ + '.ad'] = ad
