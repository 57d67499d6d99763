"""What functions rewritten by @pbc.syntax call at run time (as `__pbc_ctl__.name`).

Each helper does exactly what plain Python would do when its condition is a Python value,
and defers to pbc.while_loop / pbc.if_stmt (pbc/control.py) when it is a JIT array."""

import ast
import operator
import re
import sys
import types

from .. import control
from .._runtime import ArrayBase
from ..dispatch import PtrBase
from ..errors import StateError, TraceError
from ..routines import select
from ..state import nodes
from ..tensor import Tensor
from ..tree import child_keys, children, hollow, leaves, rebuild
from ..vector import StaticArray
from .aliases import Aliases
from .errors import SyntaxError_, UnassignedError, UnassignedLocalError

BREAK = '_pbc_brk_'          # loop state named so is a `break` flag (see lowering.py)


def is_jit(x):
    return isinstance(x, (ArrayBase, StaticArray, Tensor))


def shown(labels):
    """Names for the runtime's error messages: generated variables say what they are."""
    words = {BREAK: 'break flag of loop ', '_pbc_i_': 'counter of for loop ',
             '_pbc_retval': 'return value'}
    return tuple(next((w + v[len(p):] for p, w in words.items() if v.startswith(p)), v)
                 for v in labels)


def _caller(depth=2):
    """The user's file and line `depth` frames up, past this module's own frames."""
    f = sys._getframe(depth)
    while f.f_back is not None and f.f_code.co_filename == __file__:
        f = f.f_back
    return f.f_code.co_filename, f.f_lineno


class Undefined:
    """Stands for a variable that is not assigned yet where a loop or branch takes it as
    state. Using it raises the error Python would have raised."""

    __slots__ = ('name',)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f'<unassigned variable {self.name!r}>'

    def _fail(self, *args, **kwargs):
        raise UnassignedLocalError(f"cannot access local variable '{self.name}' where it "
                                   'is not associated with a value')

    __bool__ = __call__ = __getitem__ = __index__ = __int__ = __float__ = _fail
    __neg__ = __pos__ = __invert__ = __abs__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = _fail
    for _op in ('add', 'sub', 'mul', 'truediv', 'floordiv', 'mod', 'pow', 'matmul',
                'and', 'or', 'xor', 'lshift', 'rshift'):
        locals()[f'__{_op}__'] = locals()[f'__r{_op}__'] = _fail
    del _op


def is_undefined(x):
    return isinstance(x, Undefined)


def _unassigned(names, what):
    file, line = _caller(3)
    listed = ', '.join(repr(n) for n in names)
    return UnassignedError(
        f'{file}:{line}: {listed} {"is" if len(names) == 1 else "are"} not assigned on every '
        f'path before this {what}, which runs on JIT values (all lanes at once) and needs a '
        f'value for every lane: assign {"it" if len(names) == 1 else "them"} before the '
        f'{what}, e.g. {names[0]} = pbc.llvm.Float(0)')


# ---- conditions -----------------------------------------------------------------------
def lnot(x):
    return ~x if is_jit(x) else not x


def python_cond(c, reason, _depth=2):
    """The condition of a statement left as plain Python: it must not be a JIT value."""
    if is_jit(c):
        file, line = _caller(_depth)
        raise SyntaxError_(
            f'this condition is a {type(c).__name__}, but @pbc.syntax left the statement as '
            f'plain Python because {reason}. Restructure it, or reduce the condition to one '
            'Python bool for all lanes (pbc.any(), pbc.all()) if that is what you mean',
            file, line)
    return c


def ifexp(c, a, b):
    """`a() if c else b()`; lane by lane for a JIT condition."""
    if not is_jit(c):
        return a() if c else b()
    return control.if_stmt((), c, a, b, label='value')


# ---- what a loop or branch only reads -----------------------------------------------------
def _read_through(reads, original, labels=(), rebinds=()):
    """A function of the working copy of the caller's state `original` (a tuple, as the
    code gets it) that returns the read-only variables `reads` of a loop or branch as its
    code must see them: an object of the state, or a container holding one, is its working
    copy (a name bound to an object that the code changes in place sees the change, as in
    Python); anything else is itself. A loop's working copy of a variable its body binds to
    another object (`rebinds`: 'name', or its entries 'name[0]', 'name.field', 'name[]' for
    any, 'name[0][]' for those of an entry) stands for the variable, not for the object:
    that object is read as it is.

    Worked out once, as where in the state each such object is, the function holds no
    object of the state. (A loop's node in the AD graph keeps the loop's code, to run it
    again for derivatives; code that held the caller's objects, into which the loop's
    results go, `x *= 2`, would make a cycle through the AD graph, which no collector
    sees.) It is a closure over its template, not a bound method: local.Closures, which
    keeps what a derivative's re-run must read as it was, finds the objects read as they
    are in the template through the closure's cell."""
    where = {}          # id of an object of the state -> _Slot
    for i, o in enumerate(original):
        label = labels[i] if i < len(labels) else None
        if label in rebinds:
            continue
        entries = _entries(o, label, rebinds)
        if entries is None or children(o) is None:
            where.update((id(a), _Slot(i, None, j)) for j, a in enumerate(nodes(o)[0]))
            continue
        whole, partly = entries
        where[id(o)] = _Slot(i, None, 0)
        for k, a in enumerate(children(o)):
            if k in partly:           # (itself, not the entries of it that the body binds)
                where[id(a)] = _Slot(i, k, 0)
            elif k not in whole:
                where.update((id(p), _Slot(i, k, j)) for j, p in enumerate(nodes(a)[0]))
    template = tuple(_template(r, where) for r in reads)

    def seen(working):
        return tuple(_filled(t, working) for t in template)
    return seen


class _Slot(tuple):
    """Where an object is in the state: node j (pre-order, state.nodes) of state[i], or of
    its child k."""

    def __new__(cls, i, k, j):
        return super().__new__(cls, (i, k, j))


class _Rebuilt:
    """A container of the reads that holds objects of the state: `shape` (its structure,
    with empty arrays) around the templates of its children (its children to tree.leaves,
    which local.Closures walks)."""

    def __init__(self, shape, parts):
        self.shape, self.parts = shape, parts

    def _pbc_children(self):
        return self.parts


def _template(x, where):
    slot = where.get(id(x))
    if slot is not None:
        return slot
    parts = None if isinstance(x, ArrayBase) else children(x)
    if not parts:
        return x
    new = [_template(p, where) for p in parts]
    if all(a is b for a, b in zip(new, parts)):
        return x
    return _Rebuilt(hollow(x), new)


def _filled(t, working):
    if type(t) is _Slot:
        i, k, j = t
        w = working[i] if k is None else children(working[i])[k]
        return w if j == 0 else nodes(w)[0][j]
    if type(t) is _Rebuilt:
        return rebuild(t.shape, [_filled(p, working) for p in t.parts])
    return t


def _seen_through(reads, original, working, labels=(), rebinds=()):
    """`reads` as the code that gets the working copy `working` of the caller's state
    `original` must see them (_read_through)."""
    if not reads:
        return ()
    return _read_through(reads, original, labels, rebinds)(working)


# ---- objects whose attributes pbc does not follow --------------------------------------
class _Untracked:
    """The attributes holding arrays of the objects among a loop's or branch's values that
    are not containers pbc follows (a plain class's instance: not a dataclass, nor with
    DRJIT_STRUCT). Its code may change those arrays in place (pbc/regions.py follows
    that), but binding such an attribute to another array (`s.v = s.v * 2`, in a method
    too) cannot be made lane by lane: after each run of the code, that is an error, the
    attribute put back."""

    def __init__(self, values, where, what):
        self.where, self.what = where, what
        self.objects = [(x, dict(_arrays_of(x))) for x in values if _untracked(x)]

    def release(self):
        """Stops checking (the code ran as recorded; run again for derivatives, it binds
        the same attributes): lets go of the objects."""
        self.objects = []

    def check(self):
        for x, before in self.objects:
            bound = [k for k, v in _arrays_of(x) if before.get(k) is not v]
            if bound:
                for k, v in before.items():
                    setattr(x, k, v)
                file, line = self.where
                name = type(x).__name__
                raise TypeError(
                    f'{file}:{line}: this {self.what} binds attribute {bound[0]!r} of a '
                    f'{name} to another array, which pbc cannot do lane by lane for an '
                    f"object whose fields it does not know: make {name} a dataclass or give "
                    'it DRJIT_STRUCT (then the attribute is state like a variable), or change '
                    f'the array in place ({bound[0]} += ...)')


def _untracked(x):
    return not isinstance(x, (ArrayBase, type, types.ModuleType, types.FunctionType,
                              types.MethodType)) \
        and children(x) is None and isinstance(getattr(x, '__dict__', None), dict)


def _arrays_of(x):
    return [(k, v) for k, v in vars(x).items() if isinstance(v, ArrayBase)]


# ---- what a loop or branch passes to a call ------------------------------------------
def _passed_containers(reads, passed):
    """The variables a loop or branch only reads but passes to a call (`passed`: (position
    in reads, name, whether passed whole)) whose values are containers holding arrays
    (parts passed, `f(x[0])`: containers holding such containers): the function called may
    store into them (`lst[0] = e`, `o.p = e`, `v.x = e`), which must reach the caller's
    container lane by lane, as any store of the region's code does. They become state."""
    return [(i, name) for i, name, whole in passed
            if _holds_arrays(reads[i]) and (whole or any(
                _holds_arrays(p) for p in children(reads[i])))]


def _holds_arrays(x):
    """Whether x is a container holding arrays. (A pointer array is a value, as an array
    is: a function stores nothing into it.)"""
    if isinstance(x, (ArrayBase, PtrBase)) or children(x) is None:
        return False
    try:
        return next(leaves(x), None) is not None
    except RuntimeError:            # (a container that holds itself)
        return False


def _with_state(fn, n, m):
    """fn(*own, *reads) of a loop's or branch's code, called as fn(*own, *more, *reads)
    with `m` more state variables after its `n` own: those it gets (working copies, which
    fn may change in place) it returns after its own results."""
    def run(*a):
        return (*fn(*a[:n], *a[n + m:]), *a[n:n + m])
    run._pbc_body = getattr(fn, '_pbc_body', fn)
    return run


# ---- while -----------------------------------------------------------------------------
def while_loop(state, cond, body, labels=(), reads=(), rebinds=(), passed=(), **kwargs):
    moved = _passed_containers(reads, passed)
    if not moved:
        return _while_loop(state, cond, body, labels, reads, rebinds, **kwargs)
    n, m = len(state), len(moved)
    state = tuple(state) + tuple(reads[i] for i, _ in moved)
    labels = tuple(labels) + tuple(name for _, name in moved)

    def test(*a):
        return cond(*a[:n], *a[n + m:])
    test._pbc_body = cond
    out = _while_loop(state, test, _with_state(body, n, m), labels, reads, rebinds, **kwargs)
    return out[:n]


def _while_loop(state, cond, body, labels=(), reads=(), rebinds=(), **kwargs):
    state, labels = tuple(state), tuple(labels)
    brk = next((i for i, v in enumerate(labels) if v.startswith(BREAK)), None)
    c = _stopping(cond, brk, lambda s: reads)(*state)          # Python or JIT? (computed once)
    if not is_jit(c):
        return _python_loop(state, _stopping(cond, brk, lambda s: reads),
                            lambda *s: body(*s, *reads), c)
    unassigned = [labels[i] for i, x in enumerate(state) if isinstance(x, Undefined)]
    if unassigned:
        raise _unassigned(unassigned, 'loop')
    state = tuple(type(c)(False) if i == brk else x for i, x in enumerate(state))
    # (`v[key] = e` on a static vector is a masked store, in place, or an entry store,
    # which binds the entry: the code does not tell. The loop takes it for a masked store
    # where that matters, a component the body reads under another name, and records it
    # again as an entry store if the body binds an entry after all. An evaluated loop's
    # first iteration has run by then, so it raises instead.)
    guessed = _masked_stores(state, labels, reads, rebinds)
    if guessed:
        try:
            return _jit_loop(state, labels, reads, [r for r in rebinds if r not in guessed],
                             c, cond, body, brk, kwargs, guessed)
        except _EntryBound:
            pass
    return _jit_loop(state, labels, reads, rebinds, c, cond, body, brk, kwargs)


class _EntryBound(TraceError):
    """Internal: a loop body taken to store into a vector under a mask bound an entry."""


def _masked_stores(state, labels, reads, rebinds):
    """The rebinds 'v[]' of static vectors and matrices v among the state of which the body
    reads a component under another name (`s = v.y` before the loop, `s` passed to a call
    in it): if `v[key] = e` is a masked store, s must be v.y's working copy."""
    read = {id(a) for r in reads for a in nodes(r)[0]}
    return [f'{label}[]' for x, label in zip(state, labels)
            if f'{label}[]' in rebinds and label not in rebinds and
            isinstance(x, StaticArray) and any(id(a) in read for a in nodes(x)[0][1:])]


def _components(state, labels, guessed):
    """The objects in the vectors `guessed` of the state, in order (the vector's own object
    stays when a store binds an entry of it: only its components tell)."""
    return [id(a) for i, label in enumerate(labels[:len(state)]) if f'{label}[]' in guessed
            for a in nodes(state[i])[0][1:]]


def _jit_loop(state, labels, reads, rebinds, c, cond, body, brk, kwargs, guessed=()):
    # (What the body changes in place reaches the caller's objects: see pbc/state.py.)
    aliases = Aliases(state, labels)
    unique = aliases.collapse(state)
    # The code that control.while_loop gets holds no object of the state (see
    # _read_through): the loop's node in the AD graph keeps it.
    seen = _read_through(reads, state, labels, rebinds)
    untracked = _Untracked(state + tuple(reads), _caller(), 'loop')
    index = aliases.hollow()

    evaluated = guessed and control.loop_is_evaluated(kwargs.get('mode'))

    def collapsed_body(*u):
        s = _fresh(index.expand(u), labels, rebinds)
        before = _components(s, labels, guessed)
        out = body(*s, *seen(s))
        untracked.check()
        if before != _components(out, labels, guessed):
            if evaluated:
                name = guessed[0][:-2]
                raise StateError(
                    'pbc.while_loop: the loop body stores into an entry of the vector '
                    f"'{name}' (`{name}[i] = e`), a component of which it also reads under "
                    'another name: an evaluated loop cannot tell such a store from a masked '
                    "one before its first iteration runs. Store through the component's "
                    f"name (`{name}.y = e`), or run the loop symbolic")
            raise _EntryBound()
        return index.collapse(out)
    # (identifies the loop: control._invariant_key; `body` may wrap the user's, _with_state)
    collapsed_body._pbc_body = getattr(body, '_pbc_body', body)
    test = _stopping(cond, brk, seen)
    try:
        out = control.while_loop(unique, _first(lambda *u: test(*index.expand(u)), unique, c),
                                 collapsed_body, labels=shown(aliases.unique_labels()),
                                 **kwargs)
    finally:
        untracked.release()
    # (what the body rebinds is a new object after the loop, on every lane: also where
    # no lane ran an iteration, as an evaluated loop may find)
    return _fresh(aliases.expand(out), labels, rebinds)


_COMPONENTS = {'.x': '[0]', '.y': '[1]', '.z': '[2]', '.w': '[3]'}


def _entries(container, label, rebinds):
    """The positions (in children() order) of the container's entries that a loop body
    binds (`rebinds`: 'name[0]', 'name.field', 'name[]' for any), and of those it binds
    entries of (`name[0][]`: name[0] stays the object it is), or None if it binds none."""
    bound = [_segments(r[len(label):]) for r in rebinds if label is not None and
             r.startswith((f'{label}[', f'{label}.'))]
    if not bound:
        return None
    parts = children(container)
    if parts is None:
        return set(), set()
    keys = child_keys(container, parts)
    whole, partly = set(), set()
    for segments in bound:
        first = segments[0]
        if isinstance(container, StaticArray):
            first = _COMPONENTS.get(first, first)
        hit = range(len(parts)) if first == '[]' else \
            [k for k, key in enumerate(keys) if key == first]
        (whole if len(segments) == 1 else partly).update(hit)
    return whole, partly - whole


def _segments(path):
    """'[0][]' -> ['[0]', '[]']; '.x[1]' -> ['.x', '[1]'] (see analysis._entry)."""
    return re.findall(r"\[[^\]]*\]|\.\w+", path)


def _fresh(state, labels, rebinds):
    """The loop state as an iteration starts: the arrays that the body binds to other
    objects (`rebinds`, see rewrite._rebinds), and the entries and fields it binds, are new
    objects of their values (docs/semantics.md: an iteration does not change, through a
    name it rebinds, the object the name had)."""
    if not rebinds:
        return state
    state = list(state)
    for i, label in enumerate(labels[:len(state)]):
        x = state[i]
        if label in rebinds and isinstance(x, ArrayBase):
            state[i] = type(x)(x) if x.index else type(x)()
        for r in rebinds:
            if r.startswith((f'{label}[', f'{label}.')) and r != label:
                *path, entry = _segments(r[len(label):])
                for c in _reached(x, path):
                    _fresh_entry(c, entry)
    return tuple(state)


def _reached(container, path):
    """The objects at `path` (segments, '[]': every entry) inside the container."""
    out = [container]
    for segment in path:
        out = [e for c in out for _, e in _at(c, segment)]
    return out


def _at(container, segment):
    """(key, entry) for the container's entries that `segment` names ('[key]', '.field',
    '[]': every entry of a list or dict)."""
    if segment.startswith('.'):
        keys, get = [segment[1:]], getattr
    else:
        get = operator.getitem
        if segment == '[]':
            keys = list(container) if isinstance(container, dict) else \
                range(len(container)) if isinstance(container, list) else []
        else:
            keys = [ast.literal_eval(segment[1:-1])]
    out = []
    for k in keys:
        try:
            out.append((k, get(container, k)))
        except (AttributeError, KeyError, IndexError, TypeError):
            continue
    return out


def _fresh_entry(container, segment):
    """container's entry ('[key]', '.field'; '[]': every entry) as a new object of its
    value (the container is the loop's working copy)."""
    put = setattr if segment.startswith('.') else operator.setitem
    for k, x in _at(container, segment):
        if isinstance(x, ArrayBase):
            put(container, k, type(x)(x) if x.index else type(x)())


def _stopping(cond, brk, seen):
    """The loop's test of state s: cond(*s, *seen(s)) (the read-only variables as the test
    of s sees them), and not where the `break` flag (state[brk]) is set: a lane that took
    `break` stops; in Python, with no further test."""
    def test(*s):
        if brk is None:
            return cond(*s, *seen(s))
        if is_jit(s[brk]):
            return ~s[brk] & cond(*s, *seen(s))
        return not s[brk] and cond(*s, *seen(s))
    return test


def _first(cond, state, c):
    """cond, but its first call with the initial state returns `c` (already computed). (It
    lets go of the state then: see _read_through.)"""
    pending = [(state, c)]

    def first(*s):
        if pending:
            (start, value), = pending
            pending.clear()
            if len(s) == len(start) and all(a is b for a, b in zip(s, start)):
                return value
        return cond(*s)
    return first


def _python_loop(state, cond, body, c):
    while c:
        state = tuple(body(*state))
        c = cond(*state)
        if is_jit(c):
            file, line = _caller(3)
            raise TypeError(
                f'{file}:{line}: this loop started with a Python bool condition, which became '
                f'a {type(c).__name__} (a `break` under a JIT condition?). A loop that stops '
                'lane by lane needs a JIT condition from the start, e.g. a counter '
                'i = pbc.llvm.UInt32(0) instead of i = 0')
    return state


# ---- if --------------------------------------------------------------------------------
def if_stmt(args, cond, true_fn, false_fn, labels=(), reads=(), passed=(), **kwargs):
    moved = _passed_containers(reads, passed) if is_jit(cond) else ()
    if not moved:
        return _if_stmt(args, cond, true_fn, false_fn, labels, reads, **kwargs)
    n, m, k = len(args), len(moved), len(labels)
    args = tuple(args) + tuple(reads[i] for i, _ in moved)
    labels = tuple(labels) + tuple(name for _, name in moved)
    out = _if_stmt(args, cond, _with_state(true_fn, n, m), _with_state(false_fn, n, m),
                   labels, reads, **kwargs)
    return out[:k]


def _if_stmt(args, cond, true_fn, false_fn, labels=(), reads=(), **kwargs):
    if not is_jit(cond):
        return true_fn(*args, *reads) if cond else false_fn(*args, *reads)
    labels, where = tuple(labels), _caller()
    aliases = Aliases(args, ())

    untracked = _Untracked(tuple(args) + tuple(reads), where, 'conditional')

    def checked(fn):
        def run(*a):
            seen = _seen_through(reads, aliases.unique, a)
            result = fn(*aliases.expand(a), *seen)
            untracked.check()
            out = tuple(type(cond)(x) if isinstance(x, bool) and v.startswith(BREAK) else x
                        for v, x in zip(labels, result))  # (flags: Bool)
            bad = [v for v, x in zip(labels, out) if isinstance(x, Undefined)]
            if bad:
                raise _unassigned_branch(bad, where)
            return out
        return run
    # (What a branch changes in place reaches the caller's objects: see pbc/state.py.)
    return tuple(control.if_stmt(aliases.unique, cond, checked(true_fn), checked(false_fn),
                                 labels=shown(labels), **kwargs))


def _unassigned_branch(names, where):
    file, line = where
    return UnassignedError(
        f'{file}:{line}: {", ".join(repr(n) for n in names)} is assigned in only one branch '
        'of this if statement (and not before it), but used after it; with a JIT condition '
        'both branches run (masked), so it needs a value on both: assign it before the if '
        'or in both branches')


# ---- for i in range(...) ---------------------------------------------------------------
def is_python_range(args):
    return not any(is_jit(a) for a in args)


def python_range(reason, *args):
    for a in args:
        python_cond(a, reason, _depth=3)
    return range(*args)


def jit_range(args):
    """(counter, stop, step) for a range with a JIT argument; the counter has the type of
    the JIT bound."""
    if len(args) == 1:
        start, stop, step = 0, args[0], 1
    else:
        start, stop, step = (tuple(args) + (1,))[:3]
    if not is_jit(step) and step == 0:
        raise ValueError('range() arg 3 must not be zero')
    kind = type(next(a for a in (stop, start, step) if is_jit(a)))
    return (start if is_jit(start) else kind(start)), stop, step


def range_test(i, stop, step):
    if is_jit(step):
        return select(step > 0, i < stop, i > stop)
    return i < stop if step > 0 else i > stop
