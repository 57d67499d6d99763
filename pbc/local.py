"""Local memory (Dr.Jit's `dr.alloc_local` and `dr.Local`): a small array of values per lane,
read and written at per-lane (JIT) positions, typically inside a loop.

Its entries are ordinary JIT values, so a Local is a container like any other: loop and
branch state, with the masking that follows from that. A read at a JIT position selects
among the entries (zero where the position is out of range); a write updates each entry
where the position (and the mask) says so. That is `size` selects per access: meant for the
short arrays local memory is for (a stack, a sort buffer), not for large tables (use
pbc.gather/pbc.scatter on an array).
"""

from ._runtime import ArrayBase
from .routines import select, zeros
from .state import working_copy
from .tree import flatten


class Local:
    """`size` values of type `dtype` per lane (see the module's docstring)."""
    __slots__ = ('dtype', 'entries')

    def __init__(self, other=None, *, dtype=None, size=None, value=None):
        if isinstance(other, Local):                   # a copy: later writes stay apart
            self.dtype, self.entries = other.dtype, [working_copy(e) for e in other.entries]
            return
        if other is not None or dtype is None or size is None:
            raise TypeError('pbc.Local: make one with pbc.alloc_local(dtype, size, value) or '
                            'copy one with pbc.Local(other)')
        if value is None:
            value = zeros(dtype)
        elif not isinstance(value, dtype):
            value = dtype(value)
        if not flatten(value)[0]:
            raise TypeError(f'pbc.alloc_local(): the type {dtype.__name__} does not contain '
                            'any Jit-tracked arrays')
        self.dtype, self.entries = dtype, [working_copy(value) for _ in range(size)]

    def __len__(self):
        return len(self.entries)

    # ---- a container of loop and branch state ----
    def _pbc_children(self):
        return list(self.entries)

    def _pbc_rebuild(self, children):
        out = object.__new__(Local)
        out.dtype, out.entries = self.dtype, list(children)
        return out

    def _pbc_assign(self, children):
        self.entries = list(children)

    # ---- access ----
    def _position(self, index, what):
        """index as a Python int (checked) or a UInt32 array."""
        if isinstance(index, ArrayBase):
            if index.Type not in ('uint32', 'int32', 'uint64', 'int64'):
                raise TypeError(f'pbc.Local.{what}(): positions are integers, not '
                                f'{type(index).__name__}')
            return index
        i = int(index)
        if not 0 <= i < len(self.entries):
            raise RuntimeError(f'pbc.Local.{what}(): out of bounds {what} ('
                               f'{"source" if what == "read" else "target"} size='
                               f'{len(self.entries)}, offset={i})')
        return i

    def read(self, index, active=True):
        """The value at `index` (a Python int or a per-lane array); zero on lanes where
        `active` is False or the position is out of range."""
        i = self._position(index, 'read')
        if isinstance(i, int):
            value = working_copy(self.entries[i])
        else:
            value = zeros(self.dtype)
            for k, e in enumerate(self.entries):
                value = _select(i == k, e, value)
        return value if active is True else _select(active, value, zeros(self.dtype))

    def write(self, value, index, active=True):
        """Stores `value` at `index` (a Python int or a per-lane array) on lanes where
        `active` holds."""
        i = self._position(index, 'write')
        if not isinstance(value, self.dtype) and isinstance(self.dtype, type) and issubclass(
                self.dtype, ArrayBase):
            value = self.dtype(value)
        if isinstance(i, int):
            hit = [active if k == i else False for k in range(len(self.entries))]
        else:
            hit = [(i == k) if active is True else (i == k) & active
                   for k in range(len(self.entries))]
        self.entries = [e if h is False else working_copy(value) if h is True else
                        _select(h, value, e) for e, h in zip(self.entries, hit)]

    def __getitem__(self, index):
        return self.read(index)

    def __setitem__(self, index, value):
        self.write(value, index)

    def __repr__(self):
        return f'Local[{self.dtype.__name__}, {len(self.entries)}]'


def _select(mask, t, f):
    """select() over the arrays of two values of one structure."""
    tl, build = flatten(t)
    fl, _ = flatten(f)
    return build([select(mask, a, b) for a, b in zip(tl, fl)])


def alloc_local(dtype, size, value=None):
    """Local memory of `size` values of type `dtype` per lane, each `value` to begin with
    (zeros by default)."""
    return Local(dtype=dtype, size=size, value=value)
