"""Traversal of nested state: JIT arrays inside vectors, tensors, sequences, dicts,
dataclasses and classes that declare DRJIT_STRUCT (Dr.Jit's convention)."""

import dataclasses

from ._runtime import ArrayBase


def leaves(obj):
    """Yields every flat JIT array reachable from obj, depth first, without recursion."""
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, ArrayBase):
            yield x
        elif hasattr(x, '_pbc_children'):
            stack.extend(reversed(x._pbc_children()))
        elif isinstance(x, (list, tuple)):
            stack.extend(reversed(x))
        elif isinstance(x, dict):
            stack.extend(reversed(list(x.values())))
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            stack.extend(reversed([getattr(x, f.name) for f in dataclasses.fields(x)]))
        elif hasattr(type(x), 'DRJIT_STRUCT'):
            stack.extend(reversed([getattr(x, k) for k in type(x).DRJIT_STRUCT]))
