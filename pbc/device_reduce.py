"""Horizontal reductions of arrays that live on a device (pbc.cuda), as kernels, so that
`pbc.sum(x)` copies nothing to the host (the runtime's host reductions would move x there).

Each pass is one kernel that combines WAYS lanes into one: lane j of a pass over n values
reads values j, j + m, j + 2m, ... (m = ceil(n / WAYS)), so neighbouring threads read
neighbouring memory. Passes repeat until one lane is left: log16(n) kernels, with no
atomics, so the result is the same from run to run. Its order of combination differs from
the CPU's (float sums may differ in their last bits: docs/semantics.md).
"""

from . import _runtime
from ._runtime import op_binary, op_select

WAYS = 16

# reduction -> (the binary op combining two values (op_binary's name), its identity)
_RULES = {'sum': ('add', lambda t: 0), 'prod': ('mul', lambda t: 1),
          'min': ('min', lambda t: _extreme(t, high=True)),
          'max': ('max', lambda t: _extreme(t, high=False)),
          'and': ('and', lambda t: True if t == 'bool' else -1),
          'or': ('or', lambda t: False if t == 'bool' else 0)}


def _extreme(tname, high):
    """The identity of min (high) or max: NaN for floats (ignored by the NaN-ignoring min and
    max of reductions), else the type's largest or smallest value."""
    if tname.startswith('float'):
        return float('nan')
    bits = 32 if tname.endswith('32') else 64
    if tname.startswith('uint'):
        return (1 << bits) - 1 if high else 0
    return (1 << (bits - 1)) - 1 if high else -(1 << (bits - 1))


def reduce(x, name):
    """`name` ('sum', 'prod', 'min', 'max', 'and', 'or'; 'count' of a Bool array) of the
    n > 0 lanes of flat array x as an evaluated width-1 array of its type (UInt32 for
    'count')."""
    if name == 'count':                   # (of a Bool array)
        x, name = _runtime.class_for(x, 'uint32')(x), 'sum'
    op, identity = _RULES[name]
    cls, index_cls = type(x), _runtime.class_for(x, 'uint32')
    fill = identity(cls.Type)
    n = len(x)
    while True:
        m = -(-n // WAYS)
        lane = _runtime.counter(index_cls, m)
        acc = None
        for i in range(WAYS):
            valid = lane < max(0, min(m, n - i * m))    # (Python ints: no wrap-around)
            value = op_select(valid, _runtime.gather(cls, x, lane + i * m, valid), fill)
            acc = value if acc is None else op_binary(op, acc, value)
        _runtime.make_opaque(acc)         # (evaluates it)
        if m == 1:
            return acc
        x, n = acc, m


_runtime.set_device_reduce_hook(reduce)
