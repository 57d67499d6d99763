"""The op table as the backends and kernel assembly see it (`pbc/optable.py` describes each
op; the runtime is built from the same table, which this module checks at import)."""

from . import _runtime
from .optable import BY_NAME, CALL, COMPARISON, LOOP, OPS, TRACE_OPS

# Trace-graph ops that become something else during assembly.
ASSEMBLY_ONLY = {'data'}
# The ops kernels contain -> number of register operands (-1: variable)
ARITY = {op: op.arity for op in OPS if op not in ASSEMBLY_ONLY}
LOOP_OPS = tuple(op for op in OPS if op.has(LOOP))
CALL_OPS = tuple(op for op in OPS if op.has(CALL))
COMPARISONS = tuple(op for op in OPS if op.has(COMPARISON))

TYPE_NAMES = _runtime.TYPE_NAMES
REDUCE_NAMES = _runtime.REDUCE_NAMES

if tuple(_runtime.OP_NAMES) != TRACE_OPS:
    raise ImportError('pbc: the compiled runtime was built from another op table; rebuild it '
                      '(python setup.py build_ext --inplace)')


def op(name):
    """The op table's entry for `name`."""
    return BY_NAME[name]
