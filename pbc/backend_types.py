"""The names of a backend's module (pbc.llvm, pbc.cuda): its array, vector, matrix and tensor
types, PCG32 and Ptr, made for that backend; `Loop`, which Dr.Jit 0.x imported from its
backend modules; and `<module>.ad`, the module itself (pbc's float arrays are
differentiable themselves)."""

import sys

from .array import make_flat_types
from .dispatch import make_ptr
from .legacy_loop import Loop
from .pcg32 import make_pcg32
from .tensor import make_tensor_types
from .vector import make_vector_types


def populate(module_name, backend_code):
    module = sys.modules[module_name]
    flat = make_flat_types(backend_code, module_name)
    names = vars(module)
    names.update(flat)
    names.update(make_vector_types(flat, module_name))
    names.update(make_tensor_types(flat, module_name))
    names.update(PCG32=make_pcg32(flat, module_name), Ptr=make_ptr(flat, module_name),
                 Loop=Loop, ad=module)
    sys.modules[module_name + '.ad'] = module
