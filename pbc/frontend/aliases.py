"""Keeping Python's object identity through JIT loops and branches.

Python code that modifies an object in place (`rng.next_uint32()`, `obj.field = v`) changes
it under every name that refers to it (`b = a`), loop state or not. The runtime, however,
tracks each state entry on its own (pbc/state.py). So for a JIT loop or branch, a container
under several state names is passed once and handed to the user's functions under all its
names again (Aliases). JIT arrays are passed per name (`acc = x` followed by
`acc = acc * x` in a loop must leave x alone); the runtime gives names that share an
array one working copy of it (pbc/state.py, working_copy)."""

from .._runtime import ArrayBase

IMMUTABLE = (int, float, complex, bool, str, bytes, tuple, frozenset, type(None))


def shared(x):
    """Whether x is a container whose in-place changes must be seen through its other names
    (arrays are tracked per name, see the module's docstring)."""
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

    def hollow(self):
        """These aliases without the objects (expand and collapse need only their places)."""
        out = Aliases((), self.labels)
        out.index, out.unique = self.index, [None] * len(self.unique)
        return out

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
