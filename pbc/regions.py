"""What a loop body or branch changes in place besides its own state.

A loop body or branch being run is a region. Its own arrays are the working copies of its
state (pbc/state.py) and every array made while it runs. Code can also reach an array of
the caller's that is not state and change it in place: through a name the region only
reads (`y = x` before it, `y += 1` inside), an entry of a container (`lst[0] = x`, then
`lst[0] += 1`), a component of another vector. Python changes that object, on the lanes
that run the code. The runtime tells pbc before any array changes in place
(`_runtime.set_inplace_hook`); a region notes each foreign array with its value before
the change, and when the region ends puts the old value back and keeps the end value: a
conditional merges it lane by lane, an evaluated loop keeps it on the iteration's lanes,
a symbolic loop records again with the array as loop state (pbc/control.py).

Invariant: while a region is open, every array made before it and not among its own has
the value it had when the region began, or is in `before` with that value.
"""

from . import _runtime

_open = []          # the regions being run, innermost last


class Region:
    """`with Region(own) as r:` runs code that may change the arrays `own` in place; after
    it, `r.changed` maps id -> (array from outside, its value at the end), the array itself
    back at its value before."""

    def __init__(self, own):
        self.own = {id(a) for a in own}
        self.keep = list(own)                   # (so that the ids stay theirs)
        self.before = {}                        # id -> (array, its value before)
        self.changed = {}
        # (what ends a region its code left open: see __exit__)
        self.discard = None

    def __enter__(self):
        self.made = _runtime.arrays_made_so_far()
        _open.append(self)
        _runtime.set_inplace_hook(_changing)
        return self

    def __exit__(self, *exc):
        # Regions opened after this one and left open (a pbc.Loop's, whose body raised)
        # end first, innermost first, as unwinding would have ended them: their loops give
        # back the masks and scopes stacked on this region's, and their arrays their values.
        if self in _open:
            stale = _open[_open.index(self) + 1:]
            del _open[len(_open) - len(stale):]
            for r in reversed(stale):
                if r.discard is not None:
                    r.discard()
        # (put back without the hook: to an enclosing region this is no change; the
        # merged value the caller assigns afterwards is)
        _runtime.set_inplace_hook(None)
        try:
            for key, (x, old) in self.before.items():
                self.changed[key] = (x, copy_of(x))
                x._assign(old)
        finally:
            if self in _open:
                _open.remove(self)
            _runtime.set_inplace_hook(_changing if _open else None)
        return False


def will_change(arrays):
    """Tells the innermost open region that `arrays` are about to change in place (code
    that changes them later, as a pbc.Loop's body its state, in a region of its own)."""
    if _open:
        for x in arrays:
            _changing(x)


def adopt(arrays):
    """The innermost open region takes `arrays` for its own from now on: code that runs in
    it changes them in place on purpose, and puts them back itself (a call target that sees
    its working copies through arrays from an enclosing scope: pbc/dispatch.py)."""
    if _open:
        _open[-1].own.update(id(a) for a in arrays)
        _open[-1].keep.extend(arrays)


def _changing(x):
    """The hook: x is about to change in place inside the innermost region."""
    r = _open[-1]
    key = id(x)
    if x._birth > r.made or key in r.own or key in r.before:
        return
    r.before[key] = (x, copy_of(x))


def copy_of(x):
    """A new array object of x's value and derivatives."""
    return type(x)(x) if x.index else type(x)()
