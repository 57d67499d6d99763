"""The CPU backend's types: `from pbc.llvm import Float, UInt32, Array3f, TensorXf`."""

from .backend_types import populate

populate(__name__, 0)
