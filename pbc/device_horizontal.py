"""Horizontal operations of arrays that live on a device (pbc.cuda) as kernels, so that
`pbc.sum(x)`, `pbc.prefix_sum(x)` or `pbc.compress(m)` copy nothing to the host (the
runtime's host versions, pbc/_rt_horizontal.pxi, would move x there).

Every pass is one kernel in which a lane combines WAYS values read with a stride, so that
neighbouring threads read neighbouring memory; there are no atomics, so results are the
same from run to run. Their order of combination differs from the CPU's (float sums may
differ in their last bits: docs/semantics.md).
  - reduce: lane j of a pass over n values combines values j, j + m, j + 2m, ...
    (m = ceil(n / WAYS)); passes repeat until one lane is left: log16(n) kernels.
  - prefix_sum: after the pass of stride d, lane i holds the sum of the WAYS * d values up
    to it (it adds the WAYS partial sums i, i - d, i - 2d, ...); d grows by WAYS per pass
    until the window covers every lane: log16(n) kernels.
  - compress: the exclusive prefix sum of the mask gives each true lane its place, a
    scatter puts it there.
"""

import functools
import sys

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


def _unmasked(fn):
    """Runs fn with the mask stack set aside: a horizontal operation inside a conditional
    or an evaluated loop covers every lane of its input, as the host's does, so the masks
    of the enclosing region must not reach its internal scatters."""
    @functools.wraps(fn)
    def run(*args):
        saved = _runtime.masks_take()
        try:
            return fn(*args)
        finally:
            _runtime.masks_restore(saved)
    return run


def _read(cls, x, index, valid, fill):
    """x[index] where `valid`, else `fill`."""
    return op_select(valid, _runtime.gather(cls, x, index, valid), fill)


@_unmasked
def reduce(x, name):
    """`name` ('sum', 'prod', 'min', 'max', 'and', 'or'; 'count' of a Bool array) of the
    n > 0 lanes of flat array x as an evaluated width-1 array of its type (UInt32 for
    'count'). Float32 sums accumulate in float64 and round once at the end, which keeps
    them within about one rounding of the exact sum whatever the order of combination
    (the passes are bound by memory reads: the float64 adds cost nothing)."""
    if name == 'count':                   # (of a Bool array)
        x, name = _runtime.class_for(x, 'uint32')(x), 'sum'
    result_cls = type(x)
    if result_cls.Type == 'bool':         # (the least and greatest of truth values)
        name = {'min': 'and', 'max': 'or'}.get(name, name)
    if name == 'sum' and result_cls.Type == 'float32':
        x = _runtime.class_for(x, 'float64')(x)     # (a cast the first pass reads)
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
            value = _read(cls, x, lane + i * m, valid, fill)
            acc = value if acc is None else op_binary(op, acc, value)
        if m == 1 and type(acc) is not result_cls:
            acc = result_cls(acc)         # (the float64 sum of float32 values, rounded)
        _runtime.make_opaque(acc)         # (evaluates it)
        if m == 1:
            return acc
        x, n = acc, m


@_unmasked
def prefix_sum(x, inclusive, reverse):
    """The (inclusive or exclusive) prefix sum of the n > 0 lanes of flat array x, from the
    end if `reverse`, as a new evaluated array."""
    cls, index_cls = type(x), _runtime.class_for(x, 'uint32')
    n = len(x)
    source = x
    lane = _runtime.counter(index_cls, n)
    if reverse:                           # (the scan of the reversed array, reversed)
        x = _runtime.gather(cls, x, (n - 1) - lane, True)
    window = 1
    while window < n:
        acc = x
        for k in range(1, WAYS):
            shift = k * window
            if shift >= n:
                break
            acc = op_binary('add', acc, _read(cls, x, lane - shift, lane >= shift, 0))
        _runtime.make_opaque(acc)
        x, window = acc, window * WAYS
    if not inclusive:                     # (shifted by one lane: no subtraction, exact)
        x = _read(cls, x, lane - 1, lane >= 1, 0)
    if reverse:
        x = _runtime.gather(cls, x, (n - 1) - lane, True)
    if x is source:                       # (one lane, inclusive: a new array all the same)
        x = cls(x)
    _runtime.make_opaque(x)
    return x


@_unmasked
def compress(mask):
    """The UInt32 indices of the true lanes of Bool array `mask` (n > 0 lanes), in
    increasing order."""
    index_cls = _runtime.class_for(mask, 'uint32')
    n = len(mask)
    place = prefix_sum(index_cls(mask), False, False)
    total = int(place[n - 1]) + int(bool(mask[n - 1]))
    out = _runtime.unfilled(index_cls, total)
    if total:
        _runtime.scatter(out, _runtime.counter(index_cls, n), place, mask)
        _runtime.make_opaque(out)
    return out


_runtime.set_device_horizontal(sys.modules[__name__])
