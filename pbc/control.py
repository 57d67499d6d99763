"""Loops and conditionals on JIT values: while_loop, if_stmt, hint and the legacy Loop.

A Python-bool condition runs as ordinary Python. A JIT condition runs either symbolically
(the body is traced once into the kernel as an SSA loop, or both branches are traced and
merged lane by lane) or evaluated (a loop runs as one kernel per iteration; a conditional
evaluates its condition and its merged result in kernels of their own).
The `@pbc.syntax` frontend rewrites `while` and `if` statements into calls of these.
"""

import contextlib
import functools

from . import _runtime
from ._runtime import ArrayBase
from .ad import loop as ad_loop
from .ad import propagate as ad_propagate
from .ad.scopes import isolate_grad
from .errors import (
    SizeError,
    StateError,
    TraceError,  # noqa: F401  (for the frontend, which imports only this)
    call_user,
)
from .evaluate import eval as _eval
from .flags import JitFlag, flag
from .reductions import any as _any
from .regions import Region, copy_of
from .routines import broadcast_lanes, gather, select
from .state import Snapshot, nodes, per_object, scattered_into, settle, working_copy
from .tensor import Tensor
from .tree import assign, children, flatten, paths, rebuild

MODES = ('symbolic', 'evaluated', None)
# Record-time statistics of symbolic loops (see loop_stats).
_stats = dict(loops=0, state=0, invariant_removed=0, rerecorded=0)
# The state that the last recording of a loop's code found loop-invariant (see
# _invariant_key): a later recording of that code leaves it out from the start, where each
# loop would otherwise be recorded twice, and a loop nested k deep 2^k times. A recording
# whose body changes such state records again with it.
_invariant_memo = {}
_MEMO_LIMIT = 4096
_symbolic_branches = 0      # symbolic if_stmt branches being traced


def in_symbolic_code():
    """Whether code traced now runs later, inside a kernel: the body of a symbolic loop,
    call target or conditional (pbc.print defers its output there)."""
    return _runtime.recording_depth() > 0 or _symbolic_branches > 0


def hint(value, mode=None, max_iterations=None, label=None, include=None, exclude=None):
    """Marks a loop or branch condition for @pbc.syntax (which reads the keywords from the
    source); at run time it returns `value` unchanged."""
    return value


def loop_stats():
    """Counts of symbolic loops recorded so far: loops, state variables, state variables
    found loop-invariant and removed (OptimizeLoops; a later trace of the same loop code
    leaves them out from the start), and loops recorded again for that reason or because
    their width grew. Kernel assembly's removal of state that nothing reads after a
    loop shows in kernel_history() as 'loop_state_removed'."""
    return dict(_stats)


def _mode(mode, symbolic_flag, what):
    if mode not in MODES:
        raise ValueError(f"pbc.{what}: mode must be 'symbolic' or 'evaluated', not {mode!r}")
    if mode is None:
        mode = 'symbolic' if flag(symbolic_flag) else 'evaluated'
    return mode


def _names(state, labels):
    return [labels[i] if i < len(labels) else f'state[{i}]' for i in range(len(state))]


def _as_state(value, n, what):
    if n == 1 and not isinstance(value, tuple):
        value = (value,)
    if not isinstance(value, (tuple, list)) or len(value) != n:
        raise StateError(f'pbc.{what}: the body must return a tuple of the {n} state '
                         f'variables, got {type(value).__name__}')
    return tuple(value)


def _describe(x):
    return type(x).__name__ if isinstance(x, ArrayBase) or children(x) is not None \
        else f'{type(x).__name__} {x!r}'


def _check_same(old, new, names, what, strict=True):
    """Raises if `new` state differs from `old` in structure, array types or (`strict`)
    other values."""
    before, after = [[pv for i, s in enumerate(st) for pv in paths(s, names[i])]
                     for st in (old, new)]
    for (path, a), (path2, b) in zip(before, after):
        if path != path2:
            break
        if isinstance(a, ArrayBase) and isinstance(b, ArrayBase):
            if type(a) is not type(b):
                raise StateError(f"pbc.{what}: the type of state variable '{path}' changed from "
                                 f'{type(a).__name__} to {type(b).__name__} in the loop body; '
                                 f'convert it explicitly, e.g. {type(a).__name__}(...)')
        elif isinstance(a, ArrayBase) or isinstance(b, ArrayBase):
            hint = ('initialize it as a JIT array before the loop, e.g. '
                    f'{type(b).__name__}({a!r})' if isinstance(b, ArrayBase) else '')
            raise StateError(f"pbc.{what}: the type of state variable '{path}' changed from "
                             f'{_describe(a)} to {_describe(b)} in the loop body; '
                             f'{hint}'.rstrip('; '))
        elif strict and not (a is b or (type(a) is type(b) and _equal(a, b))):
            raise StateError(f"pbc.{what}: '{path}' is {_describe(a)}, not a JIT array, and "
                             f'the loop body changes it to {_describe(b)}: initialize it as a '
                             'JIT array before the loop to make it loop state')
    else:
        if len(before) == len(after):
            return
        path, path2 = (before + after)[min(len(before), len(after))][0], '(nothing)'
    raise StateError(f'pbc.{what}: the loop body changes the structure of its state '
                     f'(at {path} / {path2})')


def _equal(a, b):
    try:
        return bool(a == b)
    except Exception:        # noqa: BLE001 - objects without a usable ==
        return False


W = 'pbc.while_loop()'


def _condition(c, what):
    """A loop's or branch's condition: a Python bool, or a Bool array (a Bool tensor stands
    for its elements)."""
    if isinstance(c, Tensor):
        c = c.array
    if isinstance(c, ArrayBase):
        if c.Type != 'bool':
            raise StateError(f'{what}: the condition must be a Bool array, got '
                             f'{type(c).__name__}')
        if c.index == 0:
            raise StateError(f"{what}: 'cond' cannot be empty (an uninitialized array)")
    return c


def _check_initialized(tree, names, what):
    """Raises for an empty (uninitialized) array in loop or branch state."""
    for i, part in enumerate(tree):
        for path, x in paths(part, names[i] if i < len(names) else f'state[{i}]'):
            if isinstance(x, ArrayBase) and x.index == 0:
                raise StateError(f"{what}: state variable '{path}' of type {type(x).__name__} "
                                 'is uninitialized (an empty array): give it a value first')


# ---- while_loop ------------------------------------------------------------------------------
def while_loop(state, cond, body, labels=(), label=None, mode=None, max_iterations=None,
               strict=True, compress=None):
    """Runs `state = body(*state)` while `cond(*state)` holds and returns the final state.
    See API.md, "Control flow". `max_iterations` is accepted for reverse-mode AD through
    symbolic loops. `compress=True` makes an evaluated loop run each iteration on just the
    lanes still in the loop (a symbolic loop ignores it, as Dr.Jit's). `strict=False` lets
    the body change Python values in the state: they come out as the last run of the body
    left them (for a symbolic loop, its recording)."""
    state = tuple(state)
    c = _condition(call_user(cond, state, W, 'loop condition'), W)
    if not isinstance(c, ArrayBase):
        while c:
            state = _as_state(call_user(body, state, W, 'loop body'), len(state), 'while_loop')
            c = _condition(call_user(cond, state, W, 'loop condition'), W)
        return state
    names = _names(state, tuple(labels))
    _check_initialized(state, names, W)
    evaluated = loop_is_evaluated(mode)
    if evaluated and _runtime.recording_depth():
        raise RuntimeError('pbc.while_loop: cannot execute a loop in *evaluated mode* inside '
                           "a symbolic loop body; use mode='symbolic' for the inner loop")
    stash = _runtime.stash_refs(flatten(state)[0])
    try:
        if not evaluated:
            if ad_loop.tracked():
                return _tracked_loop(state, cond, body, names, c, strict, max_iterations)
            return _symbolic_loop(state, cond, body, names, c, strict)
        # (as a conditional: derivatives propagated backward inside the body stop at what
        # came before the loop, and go on from there once, after it)
        with _isolation():
            if compress:
                return _compressed_loop(state, cond, body, names, c, strict)
            return _evaluated_loop(state, cond, body, names, c, strict)
    finally:
        _runtime.unstash_refs(stash)


def loop_is_evaluated(mode):
    """Whether a JIT loop of `mode` (None: the flag decides) runs evaluated here: left to
    the flag, a loop inside a symbolic loop or call is symbolic (it cannot be evaluated
    there)."""
    return _mode(mode, JitFlag.SymbolicLoops, 'while_loop') == 'evaluated' and not (
        mode is None and _runtime.recording_depth())


def _isolation():
    """An isolation scope (isolate_grad) for a region of evaluated code, where derivatives
    may flow: a traversal started inside it reaches what came before the region only when
    the region ends, once for all of its branches or iterations."""
    return isolate_grad() if _runtime.ad_live_count() else contextlib.nullcontext()


def loop_width(arrays, what, names):
    """The loop's width: that of its widest state (widths must be equal or 1; 0 counts)."""
    n = 1
    for x in arrays:
        m = len(x)
        if n == 1:
            n = m
        elif m != 1 and m != n:
            raise SizeError(f'pbc.{what}: loop state has incompatible widths {n} and {m}')
    return n


def _size_change(state, names, k, old, new, width, fixed):
    """The message for array k of a loop's state whose width does not fit the loop's."""
    name = _path_of(state, names, k)
    if fixed:            # of another width from the start
        return (f'pbc.while_loop: this operation processes arrays of size {width}, while '
                f"state variable '{name}' has an incompatible size {len(old)}.")
    return (f"pbc.while_loop: the size of state variable '{name}' of type "
            f'{type(old).__name__} changed from {width} to {len(new)} in the loop body')


def _path_of(state, names, k):
    """The name of the k-th array of `state` (for error messages)."""
    found = [p for i, s in enumerate(state)
             for p, x in paths(s, names[i] if i < len(names) else f'state[{i}]')
             if isinstance(x, ArrayBase)]
    return found[k] if k < len(found) else f'array {k}'


class _Retry(Exception):
    """Internal: record the loop again (invariant state found, or the width grew)."""


class _Unshare(Exception):
    """Internal: record the loop again with these positions of the state, which held an
    object under several names, as loop variables of their own: the body binds them to
    other objects."""


class _Outside(Exception):
    """Internal: record the loop again with these arrays from outside its state as loop
    variables: the body changes them in place (pbc/regions.py)."""


class _OutsideTracked(Exception):
    """Internal: arrays from outside the state that the body changes in place, while
    derivatives may flow: record the loop again with them as state of its own
    (_tracked_loop)."""


def _tracked_loop(state, cond, body, names, c, strict, max_iterations):
    """A symbolic loop while derivatives may flow (pbc/ad/loop.py). Arrays from outside its
    state that the body changes in place become state too, a tuple after the user's: the
    condition and body see them in the arrays themselves (docs/semantics.md, rule 2), the
    loop's node links the values the float ones end with, derivatives they had before or
    got in the body alike, and the derivative loops start from the values all had before."""
    outside = []
    for _ in range(len(flatten(state)[0]) + 8):
        if outside:
            full = state + (tuple(copy_of(x) for x in outside),)
            co, bo = _showing(cond, outside, False), _showing(body, outside, True)
            labels = list(names) + ['(arrays from outside changed in place)']
        else:
            full, co, bo, labels = state, cond, body, names
        try:
            out = ad_loop.symbolic_loop(
                full, co, bo,
                lambda co, b, full=full, labels=labels: _symbolic_loop(full, co, b, labels, c,
                                                                       strict),
                max_iterations)
        except _OutsideTracked as more:
            outside += [x for x in more.args[0] if all(x is not y for y in outside)]
            continue
        if not outside:
            return out
        for x, end in zip(outside, out[-1]):
            x._assign(end)
        return out[:-1]
    raise RuntimeError('pbc: internal error: the arrays a loop changes in place do not settle')


def _showing(fn, outside, body):
    """A loop's condition or body (`body`: it returns state) that, run on the state with a
    last entry for the arrays `outside`, sees those values in the arrays themselves and
    returns the values it leaves them with there. (A partial: local.Closures reads what
    `fn` reads from enclosing scopes through it.)"""
    shown = functools.partial(_show, fn, outside, body)
    shown._pbc_body = getattr(fn, '_pbc_body', fn)
    return shown


def _show(fn, outside, body, *state):
    *own, values = state
    own_arrays = flatten(tuple(own))[0]
    with Region(list(outside) + own_arrays) as region:
        before = [copy_of(x) for x in outside]
        for x, v in zip(outside, values):
            x._assign(v)
        try:
            r = fn(*own)
            ends = tuple(copy_of(x) for x in outside)
            if body:
                # (state it leaves bound to one of those arrays, `lst[0] = o.p`: its value
                # now, before the arrays are put back)
                at = {id(x): e for x, e in zip(outside, ends)}
                r = tuple(_replaced(x, at) for x in _as_state(r, len(own), 'while_loop'))
        finally:
            for x, b in zip(outside, before):
                x._assign(b)
    # (other arrays from outside that it changed: as they end, for the loop's own region)
    for x, end in region.changed.values():
        x._assign(end)
    return (*r, ends) if body else r


def _replaced(x, at):
    """x with the arrays in it that `at` maps (by id) replaced: in its containers where they
    can change (a body's, which it owns), else in new ones."""
    if isinstance(x, ArrayBase):
        return at.get(id(x), x)
    parts = children(x)
    if parts is None:
        return x
    new = [_replaced(p, at) for p in parts]
    if all(a is b for a, b in zip(new, parts)) or assign(x, new):
        return x
    return rebuild(x, new)


def _symbolic_loop(state, cond, body, names, c, strict):
    arrays, build = flatten(state)
    fixed = set()          # state arrays found loop-invariant: kept out of the loop
    try:
        width = loop_width(arrays, 'while_loop', names)
    except SizeError:
        # State of another width than the condition's can only be loop-invariant (a buffer
        # the body reads, say): it starts out of the loop, and a body that changes it fails.
        width = len(c)
        fixed = {i for i, a in enumerate(arrays) if len(a) not in (1, width)}
        if width == 1:
            raise
    key = _invariant_key(body, arrays) if flag(JitFlag.OptimizeLoops) else None
    assumed = {i for i in _invariant_memo.get(key, ()) if len(arrays[i]) in (1, width)}
    # (an object under several names is invariant under all or none: the memo may be of
    # another loop of the same code, ad/loop.py's over any state, whose positions held other
    # objects; one left in the loop under one name and out under another would be two)
    names_of = {}
    for i, a in enumerate(arrays):
        names_of.setdefault(id(a), []).append(i)
    assumed = {i for i in assumed if all(j in assumed for j in names_of[id(arrays[i])])}
    hidden = []            # arrays from outside the state that the body changes in place
    apart = set()          # positions of an array under several names, that the body rebinds
    for _ in range(len(arrays) + len(assumed) + 8):
        try:
            out = _record(state, arrays, build, cond, body, names, width, fixed | assumed,
                          strict, assumed, hidden, apart)
        except _Outside as o:
            _stats['rerecorded'] += 1
            hidden += [x for x in o.args[0] if all(x is not h for h in hidden)]
            if width == 1:          # (a loop of width 1 grows to theirs)
                width = max(len(x) for x in hidden)
            continue
        except _Unshare as u:
            _stats['rerecorded'] += 1
            apart |= u.args[0]
            continue
        except _Retry as r:
            _stats['rerecorded'] += 1
            width, found = r.args
            assumed &= found
            fixed = found - assumed
            continue
        if key is not None:
            if len(_invariant_memo) >= _MEMO_LIMIT:
                _invariant_memo.clear()
            _invariant_memo[key] = frozenset(fixed | assumed)
        return out
    raise RuntimeError('pbc.while_loop: the loop state does not settle')


def _invariant_key(body, arrays):
    """What identifies a loop for _invariant_memo: its body's code (the function that
    @pbc.syntax made of it, or the one passed to pbc.while_loop), the Python scalars that
    code reads from enclosing scopes (a flag that selects another path through it), and
    the types of its state's arrays. None where the body has no code of its own."""
    fn = getattr(body, '_pbc_body', body)
    code = getattr(fn, '__code__', None)
    if code is None:
        return None
    return code, _scalars_read(fn), tuple(type(a) for a in arrays)


def _scalars_read(fn):
    """The Python scalars (None, bool, int, float, str) in fn's closure cells."""
    out = []
    for cell in getattr(fn, '__closure__', None) or ():
        try:
            value = cell.cell_contents
        except ValueError:            # (an empty cell)
            continue
        if value is None or type(value) in (bool, int, float, str):
            out.append(value)
    return tuple(out)


def _record(state, arrays, build, cond, body, names, width, fixed, strict, assumed=frozenset(),
            hidden=(), apart=frozenset()):
    """One recording of the loop; `fixed` state stays out of it (loop-invariant), of which
    `assumed` only because an earlier recording of the same code found it so (a body that
    changes it then records again without it). `hidden`: arrays from outside the state
    that the body changes in place (found by an earlier recording): loop variables too,
    which the body sees in the arrays themselves."""
    # (while derivatives may flow, they become state: whether the body gives a float one
    # derivatives shows only inside its scope, which strips them from its results, and
    # the state may hold one of them, `lst[0] = o.p`; and the derivative loops run the
    # body again from the values all of them had before the loop, the state of a
    # generator that a call in the body draws from, say, not from those after it)
    if hidden and ad_loop.tracked():
        raise _OutsideTracked(list(hidden))
    for x in hidden:
        if len(x) not in (1, width):
            raise SizeError(f'pbc.while_loop: the loop body changes in place an array of width '
                            f'{len(x)} from outside its state (the loop\'s width is {width})')
    # An array under several names (`y = x`) is one object in the body too, so that a
    # change through one name is seen through the others: one loop variable.
    first, aliases = {}, {}
    for i, a in enumerate(arrays):
        j = first.setdefault(id(a), i)
        if j != i and (j in fixed) == (i in fixed) and i not in apart:
            aliases[i] = j
    loop_arrays = [i for i in range(len(arrays)) if i not in fixed and i not in aliases]
    if not arrays:
        raise StateError('pbc.while_loop: a loop with a JIT condition needs at least one JIT '
                         'array in its state')
    backend = arrays[0]._backend_code
    ad_since = _runtime.ad_serial_now()
    start, phis = _runtime.loop_begin([arrays[i].index for i in loop_arrays] +
                                      [x.index for x in hidden], width, backend)
    phis, hidden_phis = phis[:len(loop_arrays)], phis[len(loop_arrays):]
    saved = [copy_of(x) for x in hidden]
    # (the state's values before the loop: an array from outside may be one of its objects
    # under another name, and shows the loop's phi while the body is recorded)
    starts = [type(a)(a) for a in arrays]
    # The phis, held until the loop ends: the body may change the objects that show them
    # in place (`x *= 0`), which then let go of them.
    held = [_runtime.wrap_index(type(arrays[i]), p) for i, p in zip(loop_arrays, phis)] + \
        [_runtime.wrap_index(type(x), p) for x, p in zip(hidden, hidden_phis)]
    ad_propagate.body_begin()
    try:
        for x, p in zip(hidden, held[len(loop_arrays):]):
            x._assign(p)
        # The body's working copy: the loop's variables in new objects and containers.
        inner = [type(a)(a) for a in starts]
        for i, p in zip(loop_arrays, held):
            inner[i] = type(p)(p)
        for i, j in aliases.items():
            inner[i] = inner[j]
        st = build(inner)
        snap = Snapshot(st)
        with Region(flatten(st)[0] + list(hidden)) as region:
            c = _condition(call_user(cond, st, W, 'loop condition'), W)
            if not isinstance(c, ArrayBase):
                raise StateError(f'pbc.while_loop: the condition must stay a Bool array, got '
                                 f'{type(c).__name__}')
            if len(c) not in (1, width):
                if width == 1:
                    raise _Retry(len(c), fixed)
                raise SizeError(f'pbc.while_loop: the condition has width {len(c)}, the '
                                f'loop state {width}')
            _runtime.loop_cond(start, c)
            new = _as_state(call_user(body, st, W, 'loop body'), len(state), 'while_loop')
            hidden_updates = [x.index for x in hidden]
        if region.changed:
            raise _Outside([x for x, _ in region.changed.values()])
        _check_same(state, new, names, 'while_loop', strict)
        _check_initialized(new, names, W)
        new_arrays, _ = flatten(new)
        rebound = {i for i, j in aliases.items() if new_arrays[i] is not new_arrays[j]}
        if rebound:
            raise _Unshare(rebound)
        changed = {i for i in assumed if new_arrays[i].index != arrays[i].index}
        if changed:
            raise _Retry(width, fixed - changed)
        wide = [i for i, x in enumerate(new_arrays) if len(x) not in (1, width)
                and not (i in fixed and x.index == arrays[i].index)]
        if wide and width == 1 and len({len(new_arrays[i]) for i in wide}) == 1:
            raise _Retry(len(new_arrays[wide[0]]), fixed)
        if wide:
            k = wide[0]
            raise SizeError(_size_change(state, names, k, arrays[k], new_arrays[k], width,
                                         k in fixed))
        # (an array from outside changed in place to a wider value: `t = UInt32(5)` before
        # a loop of width 1 whose body adds an argument of a call's lanes to it)
        grown = {len(x) for x in hidden} - {1, width}
        if grown and width == 1 and len(grown) == 1:
            raise _Retry(grown.pop(), fixed)
        if grown:
            raise SizeError(f'pbc.while_loop: the loop body changes in place an array from '
                            f'outside its state to width {max(grown)} (the loop\'s width is '
                            f'{width})')
        effects = _runtime.loop_effect_width(start)
        if effects > width:
            if width != 1:
                raise SizeError(f'pbc.while_loop: a scatter or print in the loop body has '
                                f'width {effects}, the loop {width}')
            raise _Retry(effects, fixed)
        if flag(JitFlag.OptimizeLoops):
            same = {i for i, p in zip(loop_arrays, phis)
                    if new_arrays[i].index in (p, arrays[i].index)}
            same |= {i for i, j in aliases.items() if j in same}     # (all its names)
            if same:
                _stats['invariant_removed'] += len(same)
                raise _Retry(width, fixed | same)
        updates = [new_arrays[i].index for i in loop_arrays]
    except BaseException:
        ad_propagate.body_end(False)
        _runtime.loop_abort(start)
        # (the derivative nodes made in the abandoned recording: see ad_sever_since)
        _runtime.ad_sever_since(ad_since)
        for x, old in zip(hidden, saved):
            x._assign(old)
        raise
    try:
        outs = _runtime.loop_end(start, phis + hidden_phis, updates + hidden_updates)
    except BaseException:
        ad_propagate.body_end(False)
        for x, old in zip(hidden, saved):
            x._assign(old)
        raise
    final = starts
    outs, hidden_outs = outs[:len(loop_arrays)], outs[len(loop_arrays):]
    for x, o in zip(hidden, hidden_outs):
        x._assign(_runtime.wrap_index(type(x), o))
    ad_propagate.body_end(True)
    _stats['loops'] += 1
    _stats['state'] += len(loop_arrays)
    # State the body leaves as it is (fixed ones, or an update that is its own phi) ends as
    # it started: the caller's array, of its own width.
    for i, p, u, o in zip(loop_arrays, phis, updates, outs):
        if u != p:
            final[i] = _runtime.wrap_index(type(arrays[i]), o)
    for i, j in aliases.items():
        final[i] = final[j]
    return settle(new, final, nodes(state)[0], snap.same_path(new), snap.kept(new))


def _evaluated_loop(state, cond, body, names, c, strict):
    """One kernel per iteration: lanes whose condition fails keep their state (and their
    side effects are masked), until no lane is left."""
    arrays, build = flatten(state)
    width = len(c) if len(c) != 1 else loop_width(arrays, 'while_loop', names)
    # (state of another width can only be loop-invariant, as in a symbolic loop)
    odd = {i for i, a in enumerate(arrays) if len(a) not in (1, width)}
    if width == 1 and odd:
        loop_width(arrays, 'while_loop', names)                  # raises
    original = nodes(state)[0]
    mutated = _InPlace(len(original))
    changed = [False] * len(arrays)       # per array: whether some iteration changed it
    # (the state's values before the loop: an iteration may change one of its objects in
    # place through another name, as an array from outside the state)
    starts = [type(a)(a) if a.index else type(a)() for a in arrays]
    wide = {}               # (as wide as a symbolic loop's; an object under two names: one)
    state = build([a if i in odd else wide.setdefault(id(a), broadcast_lanes(a, width))
                   for i, a in enumerate(arrays)])
    Bool = type(c)
    outer = _runtime.mask_top(Bool)
    active = None
    first = True
    outside = {}
    while True:
        if outer is not None:
            c = c & outer
        if active is not None:
            c = c & active
        _eval(c, state, list(outside.values()))
        if not _any(c)[0]:
            # (state no iteration changed ends as it started: the caller's array; state
            # that changed is a new array, as after a symbolic loop, even where the body
            # left an object from outside in it: `lst[1] = v.y`)
            copies = {}
            final = [copies.setdefault(id(b), type(b)(b)) if ch else a
                     for a, b, ch in zip(starts, flatten(state)[0], changed)]
            return settle(state, final, original, mutated.flags(), mutated.kept)
        # The body gets a working copy: changing it in place (pos.x += 1) must not touch
        # the state of the lanes that are done.
        old_arrays, _ = flatten(state)
        since = _runtime.serial_now()
        work = working_copy(state)
        snap = Snapshot(work)
        _runtime.mask_push(c)
        try:
            with Region(flatten(work)[0]) as region:
                new = _as_state(call_user(body, work, W, 'loop body'), len(state),
                                'while_loop')
        finally:
            _runtime.mask_pop()
        # (arrays from outside the state that the body changed in place: on the
        # iteration's lanes; see pbc/regions.py)
        for x, end in region.changed.values():
            x._assign(select(c, end, x) if len(c) > 1 else end)
            outside[id(x)] = x
        _check_same(state, new, names, 'while_loop', strict)
        _check_initialized(new, names, W)
        mutated.add(snap, new)
        new_arrays, build_new = flatten(new)
        changed = [ch or a.index != b.index
                   for ch, a, b in zip(changed, old_arrays, new_arrays)]
        for i, (a, b) in enumerate(zip(old_arrays, new_arrays)):
            # (a loop of width 1 may grow, as a symbolic one does)
            if changed[i] if i in odd else width != 1 and len(b) not in (1, width):
                raise SizeError(_size_change(state, names, i, a, b, width, i in odd))
        # (a condition of width 1 that held holds on every lane: no lane keeps its state)
        # (an object under several names stays one: `y = x` before the loop)
        kept = {}
        state = new if len(c) == 1 else build_new(
            [a if a.index == b.index else kept.setdefault((id(a), id(b)), select(c, b, a))
             for a, b in zip(old_arrays, new_arrays)])
        state = _iteration_ends(state, changed)
        active = c
        c = _condition(call_user(cond, state, W, 'loop condition'), W)
        if not isinstance(c, ArrayBase):
            raise StateError('pbc.while_loop: the condition must stay a Bool array')
        if first:
            # Values traced before the loop that the body reads would be computed again in
            # every iteration's kernel: they are evaluated once, with the first iteration's
            # state (the queue holds them until then).
            for i in _runtime.outside_reads([a.index for a in flatten(state)[0]] + [c.index],
                                            since):
                _runtime.schedule(i)
            first = False


class _InPlace:
    """Per node of an evaluated loop's state: whether every iteration left it the object it
    got (the caller's, then) and one changed it in place: the caller's object takes its
    final value. (A node one iteration rebinds stands for another object from then on.)"""

    def __init__(self, n):
        self.kept, self.changed = [True] * n, [False] * n

    def add(self, snap, new):
        for i, (r, w) in enumerate(zip(nodes(new)[0], snap.objs)):
            self.kept[i] = self.kept[i] and r is w
            self.changed[i] = self.changed[i] or (r is w and snap.changed(i))

    def flags(self):
        return [k and c for k, c in zip(self.kept, self.changed)]


def _iteration_ends(state, changed):
    """The state for an evaluated loop's next iteration, from `state` and which of its
    arrays an iteration `changed`. Changed literals (a counter that every lane steps
    alike: `i += 1` under a condition of width 1) are put in memory, as Dr.Jit's evaluated
    loops do (copies: the body may have returned an array of the caller's): folded into
    the kernels, their values made each iteration's kernels new code to compile (100
    iterations of `i += 1; x = sin(x + i)`: 101 kernels compiled, 1.2 s; now 3). Changed
    arrays that carry derivatives have their gradients evaluated by reverse traversals
    that launch kernels before their end (pbc/ad/propagate.py), for the same reason:
    an iteration's derivative is then a kernel of one iteration's code, not part of an
    expression that grows with each iteration traversed (reverse mode through 16
    iterations of `L *= table[i]` at 10^6 lanes: 16 kernels of 13 to 128 ops compiled, 85
    ms; now 9 for the whole gradient, 39 ms)."""
    arrays, build = flatten(state)
    out, made = [], {}
    for a, ch in zip(arrays, changed):
        if ch and a.state == 'literal':
            if id(a) not in made:
                made[id(a)] = type(a)(a)
                _runtime.make_opaque(made[id(a)])
            a = made[id(a)]
        if ch:
            _runtime.ad_mark_evaluate(a)
        out.append(a)
    return build(out)


_COMPRESSED = (' (with compress=True, each iteration runs on just the lanes still in the '
               'loop: arrays as wide as the loop that it reads must be loop state, e.g. '
               'pbc.hint(..., include=[n]))')


def _compressed_loop(state, cond, body, names, c, strict):
    """An evaluated loop whose every iteration runs on just the lanes still in it: they are
    gathered into smaller arrays (the lanes of an enclosing conditional count), and written
    back into the full-width state as they change, so the work shrinks with the lanes. An
    array under several names (`y = x` before the loop) is one object in the body and
    afterwards, until the body binds the names apart; state that no iteration changed is
    the caller's array after the loop, as after the other loops."""
    arrays, build = flatten(state)
    width = loop_width(arrays + [c], 'while_loop', names)
    original = nodes(state)[0]
    mutated = _InPlace(len(original))
    UInt32 = _runtime.class_for(c, 'uint32')
    full = per_object(arrays, lambda a: broadcast_lanes(a, width))  # the results, per lane
    changed = [False] * len(arrays)       # per array: whether some iteration changed it
    lanes = _runtime.counter(UInt32, width) if width > 1 else UInt32(0)
    outer = _runtime.mask_top(type(c))
    if outer is not None:
        c = c & outer
    current = build(per_object(full, lambda a: type(a)(a)))
    while True:
        # (`lanes` too: unevaluated, each iteration's would gather through all the earlier
        # ones', a kernel longer each time)
        _eval(c, current, lanes)
        keep = _runtime.compress(c if len(c) > 1 else broadcast_lanes(c, len(lanes)))
        if len(keep) == 0:
            final = [f if ch else a for a, f, ch in zip(arrays, full, changed)]
            return settle(state, final, original, mutated.flags(), mutated.kept)
        lanes = gather(UInt32, lanes, keep)
        work = build(per_object(flatten(current)[0], functools.partial(_gathered, keep)))
        snap = Snapshot(work)
        start = flatten(work)[0]
        before = [type(a)(a) for a in start]     # (copies, which hold the variables: Snapshot)
        saved = _runtime.masks_take()        # every lane of `work` runs the body
        try:
            with Region(flatten(work)[0]) as region:
                new = _as_state(call_user(body, work, W, 'loop body', size_hint=_COMPRESSED),
                                len(state), 'while_loop')
            if region.changed:
                raise StateError(
                    'pbc.while_loop: with compress=True, the loop body changes in place an '
                    'array that is not loop state (a name bound to a state variable\'s '
                    'object, or an entry of a container that is not state): make it loop '
                    'state, e.g. pbc.hint(..., include=[name])')
            _check_same(state, new, names, 'while_loop', strict)
            _check_compressed_widths(new, names, len(lanes))
            after = flatten(new)[0]
            full = _written_back(full, after, lanes)
        finally:
            _runtime.masks_restore(saved)
        mutated.add(snap, new)
        # (changed: a new value, or another object: a name the body binds anew, even to a
        # copy of its value, is no longer the object the caller's names share)
        now = [a.index != b.index or s is not b for a, b, s in zip(before, after, start)]
        changed = [x or y for x, y in zip(changed, now)]
        current = _iteration_ends(build(_apart(start, after)), now)
        c = _condition(call_user(cond, current, W, 'loop condition', size_hint=_COMPRESSED), W)
        if not isinstance(c, ArrayBase):
            raise StateError('pbc.while_loop: the condition must stay a Bool array')


def _apart(start, new):
    """The arrays `new` that an iteration gave the names that held `start` as it began, for
    the next: names that held one object and that the body left one stay one; names that
    held different ones are different ones (`o.q = y` in the body binds the place o.q: a
    new object each iteration, as in every loop, docs/semantics.md), a copy where needed."""
    out, made, taken = [], {}, set()
    for a, b in zip(start, new):
        key = (id(a), id(b))
        if key not in made:
            made[key] = type(b)(b) if id(b) in taken else b
            taken.add(id(b))
        out.append(made[key])
    return out


def _gathered(keep, a):
    return gather(type(a), a, keep)


def _written_back(full, new, lanes):
    """The full-width state after an iteration of a compressed loop gave the values `new`
    on `lanes`: each array of `full` takes them in place, once per object. Names that
    shared an array and that the iteration bound to different ones get an array each (a
    copy, made before any is written)."""
    out, made, first = [], {}, {}
    for a, b in zip(full, new):
        key = (id(a), id(b))
        if key not in made:
            made[key] = (a if first.setdefault(id(a), key) == key else type(a)(a), b)
        out.append(made[key][0])
    for a, b in made.values():
        _runtime.scatter(a, b, lanes)
    return out


def _check_compressed_widths(new, names, n):
    """Raises where the body of a compressed loop, run on n lanes, gave a state variable
    another width (it computed the value from an array as wide as the loop that is not
    loop state, `m = k > 2` with k read only)."""
    for path, x in (pv for i, s in enumerate(new) for pv in paths(s, names[i])):
        if isinstance(x, ArrayBase) and len(x) not in (1, n):
            raise StateError(f"pbc.while_loop: state variable '{path}' is {len(x)} wide "
                             f'after an iteration that ran on {n} lanes' + _COMPRESSED)


# ---- if_stmt ---------------------------------------------------------------------------------
def if_stmt(args, cond, true_fn, false_fn, arg_labels=(), rv_labels=(), label=None,
            mode=None, strict=True, labels=()):
    """true_fn(*args) where cond holds, false_fn(*args) elsewhere (see API.md). The labels
    name the arguments and results in error messages (`labels`: the results, as pbc's
    frontend passes them)."""
    global _symbolic_branches
    args = tuple(args)
    labels = tuple(rv_labels or labels)
    cond = _condition(cond, 'pbc.if_stmt()')
    if isinstance(cond, ArrayBase) and len(cond) == 1 and cond.state == 'literal':
        cond = bool(cond[0])          # the same on every lane: only that branch runs
    if not isinstance(cond, ArrayBase):
        return call_user(true_fn if cond else false_fn, args, 'pbc.if_stmt()',
                         'true_fn' if cond else 'false_fn')
    _check_initialized(args, _names(args, tuple(arg_labels)), 'pbc.if_stmt()')
    evaluated = _mode(mode, JitFlag.SymbolicConditionals, 'if_stmt') == 'evaluated' \
        and not _runtime.recording_depth()
    if evaluated:
        _eval(cond)
    result, snaps, outside = [], [], []
    scattered = set()               # nodes that scatters in the branches made
    stash = _runtime.stash_refs(flatten(args)[0])
    # (derivatives propagated backward inside a branch stop at what came before the
    # conditional and go on from there after it, once: both branches' gradients, each on
    # its lanes, and no branch's traversal clears the edges the other's needs)
    try:
        with _isolation():
            for mask, fn, role in ((cond, true_fn, 'true_fn'), (~cond, false_fn, 'false_fn')):
                # Each branch gets a working copy: its in-place changes do not leak into the other.
                work = working_copy(args)
                nodes_before = [_runtime.ad_index(w) for w in flatten(work)[0]]
                snaps.append(Snapshot(work))
                _runtime.mask_push(mask)
                _symbolic_branches += not evaluated
                try:
                    with Region(flatten(work)[0]) as region:
                        result.append(call_user(fn, work, 'pbc.if_stmt()', role))
                finally:
                    _symbolic_branches -= not evaluated
                    _runtime.mask_pop()
                outside.append(region.changed)
                scattered |= _scattered_nodes(args, work, nodes_before)
    finally:
        _runtime.unstash_refs(stash)
    t, f = result
    original = nodes(args)[0]
    same = _same_original(snaps, original)
    # Lane by lane, an argument's object that a branch changed in place takes that branch's
    # value (containers: their entries), whether or not it is a result, as the caller's
    # object would under plain Python; so does an array from outside the arguments that a
    # branch reached and changed (pbc/regions.py).
    # (a result or entry that is such an array has its value at the branch's end)
    ends = tuple({key: end for key, (_, end) in o.items()} for o in outside)
    updates = _object_updates(cond, original, snaps, scattered, same, ends)
    for key in dict.fromkeys([*outside[0], *outside[1]]):
        x = (outside[0].get(key) or outside[1].get(key))[0]
        values = [o[key][1] if key in o else x for o in outside]
        updates.append((x, _merge(cond, *values, 'an array from outside the branches')))
    if isinstance(t, tuple) and isinstance(f, tuple) and len(t) == len(f) and labels:
        names = _names(t, tuple(labels))
        out = tuple(_merge(cond, a, b, n, scattered, same, ends)
                    for a, b, n in zip(t, f, names))
    else:
        out = _merge(cond, t, f, label or 'result', scattered, same, ends)
    if evaluated:
        _eval(out, [m for _, m in updates])
    for x, m in updates:
        if isinstance(x, ArrayBase):
            x._assign(m)
        elif not assign(x, m):
            raise StateError(f'pbc.if_stmt: a branch changed the immutable {_describe(x)}')
    return out


def _same_original(snaps, original):
    """same(a, b): the caller's object that a (from the first branch) and b (from the
    second) both stand for, as its working copies; None if they do not. A result is the
    caller's object only where both branches leave it there: where one binds the name to
    another object, the name gets a new one, and the caller's object keeps its own lane by
    lane values (see docs/semantics.md, "In-place changes")."""
    def same(a, b):
        i, j = snaps[0].position.get(id(a)), snaps[1].position.get(id(b))
        if i is None or j is None or original[i] is not original[j]:
            return None
        return original[i]
    return same


def _object_updates(cond, original, snaps, scattered, same, ends=None):
    """(object, new value) for each of the caller's objects (arrays, and containers with
    their new entries) that a branch changed in place: the branches' copies, merged."""
    updates, seen, shaped = [], set(), []
    for i, x in enumerate(original):
        if id(x) in seen:
            continue
        seen.add(id(x))
        t, f = snaps[0].objs[i], snaps[1].objs[i]
        if isinstance(x, ArrayBase):
            # (a copy's node of its own is not a change; a scatter's new node is)
            if any(w.index != x.index or (_runtime.ad_index(w) != _runtime.ad_index(x)
                                          and scattered_into(w)) for w in (t, f)):
                updates.append((x, _merge(cond, t, f, f'args[{i}]', scattered)))
            continue
        now = children(t), children(f)
        if all(len(c) == len(b) and all(p is q for p, q in zip(c, b))
               for c, b in zip(now, (snaps[0].before[i], snaps[1].before[i]))):
            if hasattr(x, '_pbc_assign') and any(s.changed(i) for s in snaps):
                shaped.append((x, list(children(x))))   # (a tensor's shape follows its array)
            continue
        if len(now[0]) != len(now[1]):
            raise StateError(f'pbc.if_stmt: the branches change the structure of '
                             f'{_describe(x)} differently')
        updates.append((x, [_merge(cond, a, b, f'args[{i}][{k}]', scattered, same, ends)
                            for k, (a, b) in enumerate(zip(*now))]))
    return updates + shaped


def _scattered_nodes(args, work, nodes_before):
    """The caller's arrays that a branch scattered into (in place: their working copies
    kept the variable, and got a new node) take the derivatives the scatters gave the
    copies, as the writes themselves are side effects: the next branch's scatters, and the
    caller, build on them. (`nodes_before`: the copies' nodes as the branch began.)
    Returns the new nodes."""
    new = set()
    for a, w, n in zip(flatten(args)[0], flatten(work)[0], nodes_before):
        if a.index == w.index and _runtime.ad_index(w) != n and scattered_into(w):
            a._assign(w)
            new.add(_runtime.ad_index(w))
    return new


def _merge(cond, t, f, path, scattered=frozenset(), same=None, ends=None):
    """Lane by lane: t where cond holds, f elsewhere (same structure required). An array
    that the branches scattered into (`scattered`: the nodes that gave it) is the second
    branch's: its derivatives carry the first's on (see _scattered_nodes). Where `same`
    finds the caller's object that both stand for, it is that object. `ends`: per branch,
    the values at its end of the arrays from outside that it changed (pbc/regions.py: the
    arrays themselves are back at their values before)."""
    if same is not None:
        o = same(t, f)
        if o is not None:
            return o
    if ends is not None:
        t, f = ends[0].get(id(t), t), ends[1].get(id(f), f)
    scalar = (bool, int, float)
    if isinstance(t, ArrayBase) and isinstance(f, ArrayBase) and t.index == f.index \
            and t.index and type(t) is type(f):
        if _runtime.ad_index(t) == _runtime.ad_index(f):
            # (the same value on both sides, of its own width: two objects of one value
            # are still two objects, `a = s` in one branch where s = a + 0 folded to a)
            return t if t is f else type(t)(t)
        if _runtime.ad_index(t) in scattered or _runtime.ad_index(f) in scattered:
            return f
    if isinstance(t, ArrayBase) or isinstance(f, ArrayBase):
        for x in (t, f):
            if isinstance(x, ArrayBase) and x.index == 0:
                raise StateError(f"pbc.if_stmt(): state variable '{path}' of type "
                                 f'{type(x).__name__} is uninitialized (an empty array) in a '
                                 'branch\'s result')
        if isinstance(t, ArrayBase) and isinstance(f, ArrayBase):
            if type(t) is not type(f):
                raise StateError(f"pbc.if_stmt: the type of state variable '{path}' changed from "
                                 f'{type(t).__name__} in one branch to {type(f).__name__} in '
                                 f'the other; convert one explicitly')
        elif not isinstance(t if isinstance(f, ArrayBase) else f, scalar):
            raise StateError(f"pbc.if_stmt: '{path}' is {_describe(t)} in one branch and "
                             f'{_describe(f)} in the other')
        return select(cond, t, f)
    pt, pf = children(t), children(f)
    if pt is None or pf is None:
        if t is f or (type(t) is type(f) and _equal(t, f)):
            return t
        if isinstance(t, scalar) and isinstance(f, scalar):
            return select(cond, t, f)            # e.g. `1.0 if c else 0.0`: a JIT array
        raise StateError(f"pbc.if_stmt: '{path}' differs between the branches ({_describe(t)} "
                         f'and {_describe(f)}) and is not a JIT array: make it one')
    if type(t) is not type(f) or len(pt) != len(pf):
        raise StateError(f"pbc.if_stmt: '{path}' has a different structure in the two branches")
    if isinstance(t, dict) and list(t) != list(f):
        raise StateError(f"pbc.if_stmt: '{path}' has different keys in the two branches")
    return rebuild(t, [_merge(cond, a, b, f'{path}[{i}]', scattered, same, ends)
                       for i, (a, b) in enumerate(zip(pt, pf))])
