"""Keeping Python's object identity through JIT loops and branches.

Python code that modifies an object in place (`rng.next_uint32()`, `obj.field = v`) changes
it under every name that refers to it (`b = a`), loop state or not. The runtime, however,
records each state entry as its own variables and returns new objects. So for a JIT loop or
branch, an object under several state names is passed once and handed to the user's
functions under all its names again (Aliases), and an object that the body only modified in
place gets the final values written back into it (write_back), instead of being replaced."""

import dataclasses

from .._runtime import ArrayBase
from ..vector import StaticArray

IMMUTABLE = (int, float, complex, bool, str, bytes, tuple, frozenset, type(None))


def shared(x):
    """Whether in-place changes of x would be seen through another name (JIT arrays are
    replaced, not changed, by arithmetic; a scatter into an aliased array is rare)."""
    return not isinstance(x, (ArrayBase, IMMUTABLE))


class Aliases:
    def __init__(self, values, labels):
        self.labels, self.index, self.unique = tuple(labels), [], []
        seen = {}
        for x in values:
            j = seen.get(id(x)) if shared(x) else None
            if j is None:
                j = len(self.unique)
                self.unique.append(x)
                if shared(x):
                    seen[id(x)] = j
            self.index.append(j)

    def __bool__(self):
        return len(self.unique) < len(self.index)

    def unique_labels(self):
        first = {}
        for pos, j in enumerate(self.index):
            first.setdefault(j, self.labels[pos] if pos < len(self.labels) else f'[{pos}]')
        return tuple(first[j] for j in range(len(self.unique)))

    def expand(self, unique):
        return tuple(unique[j] for j in self.index)

    def collapse(self, values):
        """One value per object; names that shared one must still share it."""
        values, out = tuple(values), {}
        for pos, j in enumerate(self.index):
            if j not in out:
                out[j] = pos
            elif values[pos] is not values[out[j]]:
                a, b = self.labels[out[j]], self.labels[pos]
                raise TypeError(f"'{b}' was the same object as '{a}' when the loop started and "
                                'is a different one after the loop body; copy it before the '
                                f'loop (e.g. {b} = copy.copy({a})) to make them independent')
        return tuple(values[out[j]] for j in range(len(self.unique)))


def write_back(orig, new):
    """orig, updated in place to new's contents (same type); new if that is not possible."""
    if orig is new or type(orig) is not type(new) or not shared(orig):
        return new
    if isinstance(orig, list):
        orig[:] = new
    elif isinstance(orig, dict):
        orig.clear()
        orig.update(new)
    elif isinstance(orig, StaticArray):
        object.__setattr__(orig, '_items', new._items)
    elif hasattr(type(orig), 'DRJIT_STRUCT') or dataclasses.is_dataclass(orig):
        names = type(orig).DRJIT_STRUCT if hasattr(type(orig), 'DRJIT_STRUCT') else \
            [f.name for f in dataclasses.fields(orig)]
        for k in names:
            setattr(orig, k, getattr(new, k))
    else:
        return new
    return orig
