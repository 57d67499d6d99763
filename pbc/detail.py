"""pbc.detail: the helpers of Dr.Jit's `drjit.detail` that portable code uses.

They answer questions about the backend (which reductions it supports, what their identity
is, which LLVM it compiles with) and compare the structure of two values.
"""

import llvmlite.binding as _llvm
import numpy as np

from ._runtime import ArrayBase
from .routines import ReduceOp
from .tree import mismatch
from .vector import static_shape


def _flat_type(tp):
    """The flat array class of type tp (or of its components, for vectors)."""
    _, tp = static_shape(tp)
    if not (isinstance(tp, type) and issubclass(tp, ArrayBase)):
        raise TypeError(f'pbc.detail: {tp!r} is not a pbc array type')
    return tp


def can_scatter_reduce(tp, op):
    """Whether pbc.scatter_reduce(op, ...) supports arrays of type tp: Add, Mul, Min and Max
    on numbers, And and Or on integers and Bool (every backend)."""
    t = _flat_type(tp).Type
    op = ReduceOp(op)
    if op == ReduceOp.Identity:
        return False
    if op in (ReduceOp.And, ReduceOp.Or):
        return not t.startswith('float')
    return t != 'bool'


def reduce_identity(tp, op):
    """The value x that op(x, y) == y leaves every y alone with, as a width-1 array of
    type tp (e.g. +inf for Min on floats)."""
    T = _flat_type(tp)
    t, op = T.Type, ReduceOp(op)
    if t == 'bool':
        value = {ReduceOp.And: True, ReduceOp.Or: False}.get(op)
    elif t.startswith('float'):
        value = {ReduceOp.Add: 0.0, ReduceOp.Mul: 1.0, ReduceOp.Min: np.inf,
                 ReduceOp.Max: -np.inf}.get(op)
    else:
        info = np.iinfo(t)
        value = {ReduceOp.Add: 0, ReduceOp.Mul: 1, ReduceOp.Min: int(info.max),
                 ReduceOp.Max: int(info.min), ReduceOp.And: -1 if info.min else int(info.max),
                 ReduceOp.Or: 0}.get(op)
    if value is None:
        raise ValueError(f'pbc.detail.reduce_identity(): {op!r} has no identity for {t} arrays')
    return tp(value) if tp is T else tp(T(value))


def llvm_version():
    """The (major, minor, patch) version of the LLVM that compiles pbc's CPU kernels."""
    return tuple(_llvm.llvm_version_info)


def check_compatibility(a, b, strict, name):
    """Raises RuntimeError if a and b differ in structure or types (with `strict`, also in
    their Python values): the check a call applies to its targets' results (`name` labels
    them in the message)."""
    why = mismatch(a, b, name, strict)
    if why:
        raise RuntimeError(why)
