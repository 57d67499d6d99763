"""pbc.detail: the helpers of Dr.Jit's `drjit.detail` that portable code uses.

They answer questions about the backend (which reductions it supports, what their identity
is, which LLVM it compiles with) and compare the structure of two values.
"""

import llvmlite.binding as _llvm
import numpy as np

from ._runtime import ArrayBase
from .routines import ReduceOp
from .tree import children
from .vector import Matrix, StaticArray


def _flat_type(tp):
    """The flat array class of type tp (or of its components, for vectors)."""
    while isinstance(tp, type) and issubclass(tp, (StaticArray, Matrix)):
        tp = tp.Value if issubclass(tp, StaticArray) else tp.Row
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
    """Raises RuntimeError if a and b differ in structure or types: the same check a loop or
    call applies to its results (`name` labels them in the message)."""
    _compatible(a, b, strict, name)


def _compatible(a, b, strict, path):
    if type(a) is not type(b):
        raise RuntimeError(f"inconsistent types for field '{path}' ('{type(a).__name__}' and "
                           f"'{type(b).__name__}')")
    if isinstance(a, ArrayBase):
        return
    if isinstance(a, dict):
        if list(a) != list(b):
            raise RuntimeError(f"inconsistent dictionary keys for field '{path}' "
                               f'({sorted(a)} and {sorted(b)})')
    pa, pb = children(a), children(b)
    if pa is None:
        if strict and not (a is b or a == b):
            raise RuntimeError(f"inconsistent values for field '{path}' ({a!r} and {b!r})")
        return
    if len(pa) != len(pb):
        raise RuntimeError(f"inconsistent sizes for field '{path}' ({len(pa)} and {len(pb)})")
    keys = list(a) if isinstance(a, dict) else range(len(pa))
    for k, x, y in zip(keys, pa, pb):
        _compatible(x, y, strict, f'{path}[{k!r}]' if isinstance(a, dict) else f'{path}[{k}]')
