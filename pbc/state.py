"""The state of a loop or conditional, tracked as Dr.Jit tracks it.

A body never sees the caller's objects: it gets a working copy of the state (new containers
and new array objects for the same values, one per object however many names share it), so
that an exception leaves the caller's state as it was, and so that one branch's in-place
changes do not reach the other. Afterwards the results are mapped back onto the caller's
objects (the rules lane by lane: docs/semantics.md, "In-place changes"):

- a value that ends as it started is the caller's object itself;
- a value the body changed in place (`x += 1` on the array it got, `lst[0] = v` on the
  list it got) is written into the caller's object, which is returned (so every name bound
  to it sees the change);
- anything else (`x = x + 1` binds a new object) comes back as a new object, and the
  caller's object keeps its value.

Nodes are the arrays and containers of a state tree, listed in pre-order, which is the same
order for trees of the same structure.
"""

from ._runtime import AD_RULES, ArrayBase, ad_index, ad_rule_of, stash_copy
from .tree import assign, children, rebuild


def nodes(tree):
    """(objects, kids): every array and container in `tree`, pre-order, and for each the
    positions of its child nodes."""
    objs, kids = [], []
    stack = [(tree, -1)]
    while stack:
        x, parent = stack.pop()
        parts = None if isinstance(x, ArrayBase) else children(x)
        if parts is None and not isinstance(x, ArrayBase):
            continue                          # a Python value, not a node
        if parent >= 0:
            kids[parent].append(len(objs))
        objs.append(x)
        kids.append([])
        if parts:
            stack.extend((p, len(objs) - 1) for p in reversed(parts))
    return objs, kids


def per_object(arrays, copy):
    """copy(a) for each of `arrays`, made once per object: an object under several names
    (a call's `x, x`) stays one object in the copies."""
    made = {}
    return [made[id(a)] if id(a) in made else made.setdefault(id(a), copy(a)) for a in arrays]


def working_copy(tree, memo=None):
    """A copy of tree for a body: new containers and new array objects, same variables. An
    object found twice (`y = x`, or a list holding an argument) is copied once, so that
    the body sees the names that share it share its copy, as Python would."""
    if memo is None:
        memo = {}
    copy = memo.get(id(tree))
    if copy is not None:
        return copy
    if isinstance(tree, ArrayBase):
        if not tree.index:
            copy = type(tree)()
        else:
            copy = type(tree)(tree)
            stash_copy(tree, copy)          # (a scatter into it writes the caller's buffer)
    else:
        parts = children(tree)
        if parts is None:
            return tree
        copy = rebuild(tree, [working_copy(p, memo) for p in parts])
    memo[id(tree)] = copy
    return copy


class Snapshot:
    """A working copy's nodes as a body gets them, to tell afterwards which it changed in
    place."""

    def __init__(self, tree):
        self.objs, self.kids = nodes(tree)
        # (arrays: copies, which hold their variables: one freed while the body runs may
        # come back as the variable of the array's new value, which a saved index would
        # take for no change)
        self.before = [type(x)(x) if isinstance(x, ArrayBase) else list(children(x))
                       for x in self.objs]
        self.position = {id(x): i for i, x in enumerate(self.objs)}

    def changed(self, i):
        """Whether node i (or anything inside it) was changed in place."""
        x = self.objs[i]
        if isinstance(x, ArrayBase):
            return x.index != self.before[i].index
        now = children(x)
        return (len(now) != len(self.before[i])
                or any(a is not b for a, b in zip(now, self.before[i]))
                or any(self.changed(k) for k in self.kids[i]))

    def same_path(self, result):
        """For each node of `result` (a tree of the working copy's structure): whether it is
        the working copy's node at the same place and was changed in place."""
        objs = nodes(result)[0]
        return [r is w and self.changed(i) for i, (r, w) in enumerate(zip(objs, self.objs))]

    def kept(self, result):
        """For each node of `result`: whether it is the working copy's node at that place."""
        return [r is w for r, w in zip(nodes(result)[0], self.objs)]


def settle(result, finals, originals, mutated, kept=None):
    """The caller's view of a loop's result.

    `result` gives the structure (a tree of the body's result), `finals` its new arrays in
    flatten order, and per node of `result` in pre-order: `originals` the caller's object it
    stands for (or None), `mutated` whether the body changed that object in place and
    `kept` whether the body left the node the object it got (None: all were). A node the
    body bound to another object is a new object, even of the same value: the caller's
    object under its other names must not follow it (docs/semantics.md, rule 3)."""
    if not _is_node(result):
        return result
    kept = [True] * len(mutated) if kept is None else kept
    return _settle(result, iter(finals), iter(zip(originals, mutated, kept)))


def _settle(r, finals, homes):
    # A module-level function, not a closure over itself: such a cycle would keep the arrays
    # alive until the garbage collector runs.
    o, m, k = next(homes)
    if isinstance(r, ArrayBase):
        f = next(finals)
        if k and isinstance(o, ArrayBase) and type(o) is type(f) and o.index:
            if o.index == f.index:
                # (a scatter in the body gave the array's copy a node of its own: the
                # array written in place takes it)
                if ad_index(o) != ad_index(f) and scattered_into(f):
                    o._assign(f)
                return o
            if m:
                o._assign(f)
                return o
        return f
    new = [_settle(p, finals, homes) if _is_node(p) else p for p in children(r)]
    now = children(o) if k and o is not None and type(o) is type(r) else None
    if now is not None and len(now) == len(new):
        if all(a is b for a, b in zip(now, new)):
            if m and hasattr(o, '_pbc_assign'):
                o._pbc_assign(new)        # (a tensor's shape follows its changed array)
            return o
        if m and assign(o, new):
            return o
    return rebuild(r, new)


_SCATTER_RULES = ('scatter', 'scatter_add', 'scatter_minmax')


def scattered_into(x):
    """Whether array x's derivatives are those a scatter into it gave it (its node is
    the scatter's)."""
    n = ad_index(x)
    return bool(n) and AD_RULES[ad_rule_of(n)] in _SCATTER_RULES


def _is_node(x):
    return isinstance(x, ArrayBase) or children(x) is not None
