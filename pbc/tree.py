"""Traversal of nested state: JIT arrays inside vectors, tensors, sequences, dicts,
dataclasses and classes that declare DRJIT_STRUCT (Dr.Jit's convention).

Containers of JIT values implement `_pbc_children()` (their parts) and
`_pbc_rebuild(children)` (a new container of the same kind around new parts)."""

import copy
import dataclasses
import itertools

from ._runtime import ArrayBase


def _fields(x):
    """Field names of a dataclass instance or DRJIT_STRUCT object, else None."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return [f.name for f in dataclasses.fields(x)]
    if hasattr(type(x), 'DRJIT_STRUCT') and not hasattr(x, '_pbc_children'):
        return list(type(x).DRJIT_STRUCT)
    return None


def children(x):
    """The parts of container x (None if x is not a container)."""
    if isinstance(x, type):             # (a class, Array3f say, read as a value)
        return None
    if hasattr(x, '_pbc_children'):
        return x._pbc_children()
    if isinstance(x, (list, tuple)):
        return list(x)
    if isinstance(x, dict):
        return list(x.values())
    names = _fields(x)
    return None if names is None else [getattr(x, k) for k in names]


def rebuild(x, parts):
    """A container like x holding `parts` (x itself is not changed)."""
    if hasattr(x, '_pbc_rebuild'):
        return x._pbc_rebuild(parts)
    if isinstance(x, list):
        return list(parts)
    if isinstance(x, tuple):
        return type(x)(*parts) if hasattr(x, '_fields') else type(x)(parts)
    if isinstance(x, dict):
        return type(x)(zip(x.keys(), parts))
    out = copy.copy(x)
    for k, v in zip(_fields(x), parts):
        object.__setattr__(out, k, v)
    return out


def assign(x, parts):
    """Puts `parts` into container x in place (as children(x) would list them); False for
    containers that cannot change (tuples, ...)."""
    if hasattr(x, '_pbc_assign'):
        x._pbc_assign(list(parts))
    elif isinstance(x, list):
        x[:] = parts
    elif isinstance(x, dict):
        for key, p in zip(list(x.keys()), parts):
            x[key] = p
    elif _fields(x) is not None:
        for name, p in zip(_fields(x), parts):
            object.__setattr__(x, name, p)
    else:
        return False
    return True


def mismatch(a, b, path, strict=False):
    """Why a and b do not have the same structure and types (with `strict`: also the same
    Python values), naming the place (`path` names the whole); None if they do."""
    if type(a) is not type(b):
        return (f"inconsistent types for field '{path}' ('{type(a).__name__}' and "
                f"'{type(b).__name__}')")
    if isinstance(a, ArrayBase):
        return None
    if isinstance(a, dict) and list(a) != list(b):
        return f"inconsistent dictionary keys for field '{path}' ({sorted(a)} and {sorted(b)})"
    pa, pb = children(a), children(b)
    if pa is None:
        if strict and not (a is b or a == b):
            return f"inconsistent values for field '{path}' ({a!r} and {b!r})"
        return None
    if len(pa) != len(pb):
        return f"inconsistent sizes for field '{path}' ({len(pa)} and {len(pb)})"
    keys = list(a) if isinstance(a, dict) else range(len(pa))
    for k, x, y in zip(keys, pa, pb):
        why = mismatch(x, y, f'{path}[{k!r}]' if isinstance(a, dict) else f'{path}[{k}]',
                       strict)
        if why:
            return why
    return None


class _Leave:
    """Marks, on leaves()'s stack, the end of a container's parts."""
    __slots__ = ('key',)

    def __init__(self, key):
        self.key = key


def leaves(obj):
    """Yields every flat JIT array reachable from obj, depth first, without recursion. A
    container that contains itself is an error (its leaves would never end)."""
    stack = [obj]
    inside = set()                    # ids of the containers being walked
    while stack:
        x = stack.pop()
        if isinstance(x, ArrayBase):
            yield x
        elif type(x) is _Leave:
            inside.discard(x.key)
        else:
            parts = children(x)
            if parts:
                if id(x) in inside:
                    raise RuntimeError(
                        f'pbc: a {type(x).__name__} that contains itself cannot hold JIT '
                        'arrays') from RecursionError('infinite recursion in a structure')
                inside.add(id(x))
                stack.append(_Leave(id(x)))
                stack.extend(reversed(parts))


def flatten(obj):
    """(arrays, build): the JIT arrays inside obj in leaves() order, and a function that
    returns a copy of obj's structure around a new list of arrays."""
    arrays = []
    if not _plain_leaves(obj, arrays, PLAIN_DEPTH):
        arrays = list(leaves(obj))
    return arrays, _Builder(obj)


PLAIN_DEPTH = 4
_NO_ARRAYS = frozenset((bool, int, float, complex, str))


def _plain_leaves(x, out, depth):
    """Appends the arrays of x to out where x is an array or nests plain tuples, lists and
    dicts of arrays and Python scalars only `depth` deep (a call's arguments, a loop's
    state): leaves() is the general walk. False (out then incomplete) for anything else."""
    if isinstance(x, ArrayBase):
        out.append(x)
        return True
    t = type(x)
    if t in _NO_ARRAYS or x is None:
        return True
    if depth == 0 or not (t is tuple or t is list or t is dict):
        return False
    for v in (x.values() if t is dict else x):
        if not _plain_leaves(v, out, depth - 1):
            return False
    return True


class _Builder:
    """flatten()'s build: plans the structure at its first call (most callers of flatten
    only want the arrays)."""
    __slots__ = ('obj', 'plan')

    def __init__(self, obj):
        self.obj, self.plan = obj, None

    def __call__(self, new):
        if self.plan is None:
            self.plan = _plan(self.obj)
        return self.plan(iter(new))

    def without_arrays(self):
        """This build, planned now around a copy of the structure whose arrays are empty
        ones: it holds none of obj's arrays. (A loop's or call's node in the AD graph keeps
        its build to run the code again for derivatives; holding the caller's arrays, which
        may come to hold the node's own results, `x *= 2` in a loop, it would make a cycle
        through the AD graph, which Python's collector cannot see: a leak of the arrays and
        nodes.)"""
        built = _Builder(None)
        built.plan = _plan(hollow(self.obj))
        return built


def without_arrays(build):
    """A build (flatten's, or another function of a list of arrays) that holds no arrays."""
    return build.without_arrays() if isinstance(build, _Builder) else build


def hollow(x):
    """x's structure with an empty array in place of each array (other values as they are):
    a copy that holds none of x's arrays."""
    if isinstance(x, ArrayBase):
        return type(x)()
    parts = children(x)
    return x if parts is None else rebuild(x, [hollow(p) for p in parts])


def _plan(x):
    """A function of an iterator that returns a copy of x's structure around the arrays it
    yields: worked out once, as calls (one per target, per loop iteration) rebuild the
    same structure many times. Plain tuples, lists and dicts get a specialized builder,
    other containers the generic one."""
    if isinstance(x, ArrayBase):
        return next
    t = type(x)
    if t is tuple or t is list or t is dict:
        values = x.values() if t is dict else x
        subs = [_plan(v) for v in values]
        if t is dict:
            keys = list(x)
            return lambda it: {k: s(it) for k, s in zip(keys, subs)}
        if all(s is next for s in subs):          # flat: no call per element
            n = len(subs)
            return lambda it: t(itertools.islice(it, n))
        return lambda it: t([s(it) for s in subs])
    if children(x) is None:
        return lambda it: x
    return lambda it: _build(x, it)


def _build(x, it):
    # A module-level function, not a closure over itself: such a cycle would keep the
    # arrays alive until the garbage collector runs (a buffer per loop iteration).
    if isinstance(x, ArrayBase):
        return next(it)
    parts = children(x)
    return x if parts is None else rebuild(x, [_build(p, it) for p in parts])


def paths(obj, name):
    """(path, value) of every leaf inside obj (JIT arrays and other values), with paths like
    'state.pos[1]' for error messages."""
    parts = children(obj) if not isinstance(obj, ArrayBase) else None
    if parts is None:
        return [(name, obj)]
    keys = child_keys(obj, parts)
    out = []
    for k, p in zip(keys, parts):
        out += paths(p, name + k)
    return out


def child_keys(obj, parts=None):
    """How code names each of container obj's children, after the container's name:
    "['key']" (dicts), '.field' (DRJIT_STRUCTs, dataclasses), '[i]' (anything else)."""
    if isinstance(obj, dict):
        return [f'[{k!r}]' for k in obj]
    if _fields(obj) is not None:
        return [f'.{k}' for k in _fields(obj)]
    return [f'[{i}]' for i in range(len(children(obj) if parts is None else parts))]
