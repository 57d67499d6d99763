"""JitFlag and the functions that read and set it. The runtime stores the bits."""

import enum
from contextlib import contextmanager

from . import _runtime


class JitFlag(enum.IntFlag):
    ConstantPropagation = _runtime.FLAG_BITS['ConstantPropagation']
    ValueNumbering = _runtime.FLAG_BITS['ValueNumbering']
    SymbolicLoops = _runtime.FLAG_BITS['SymbolicLoops']
    SymbolicConditionals = _runtime.FLAG_BITS['SymbolicConditionals']
    SymbolicCalls = _runtime.FLAG_BITS['SymbolicCalls']
    OptimizeCalls = _runtime.FLAG_BITS['OptimizeCalls']
    MergeFunctions = _runtime.FLAG_BITS['MergeFunctions']
    OptimizeLoops = _runtime.FLAG_BITS['OptimizeLoops']
    KernelHistory = _runtime.FLAG_BITS['KernelHistory']
    Debug = _runtime.FLAG_BITS['Debug']
    PrintIR = _runtime.FLAG_BITS['PrintIR']
    LaunchBlocking = _runtime.FLAG_BITS['LaunchBlocking']
    FlushDenormals = _runtime.FLAG_BITS['FlushDenormals']


def flag(f):
    """Whether JitFlag f is set."""
    return bool(_runtime.get_flags() & int(f))


def set_flag(f, value):
    bits = _runtime.get_flags()
    _runtime.set_flags(bits | int(f) if value else bits & ~int(f))


@contextmanager
def scoped_set_flag(f, value=True):
    """Sets JitFlag f within a `with` block and restores it afterwards."""
    old = flag(f)
    set_flag(f, value)
    try:
        yield
    finally:
        set_flag(f, old)
