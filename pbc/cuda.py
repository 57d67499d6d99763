"""The CUDA backend's types: `from pbc.cuda import Float, UInt32, Array3f, TensorXf`, the
same names as pbc.llvm's. Kernels on them are PTX, launched through the CUDA driver
(pbc/backend/cuda_jit.py); where that cannot run (no driver or device), the first kernel
raises an error that says what is missing, and `pbc.has_backend('cuda')` is false."""

from . import device_horizontal as _horizontal  # noqa: F401  (reductions as kernels)
from .backend_types import populate

populate(__name__, 1)
