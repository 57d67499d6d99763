"""What a call target changes of its caller's (docs/semantics.md, rule 5).

A target of `pbc.switch`, `pbc.dispatch` or a Ptr method runs on working copies of its
arguments (pbc/dispatch.py), for the lanes that call it. Besides returning its result it
can change four kinds of its caller's things, and the caller sees each change afterwards
on exactly those lanes, as Python would on each lane:

- an argument changed in place (`x += y`): the caller's array object takes the new value;
- an array from an enclosing scope changed in place (`total += x`): the same;
- an entry or field of an argument container stored into (`lst[0] = e`, `v.x = e`,
  `o.p = e`): the caller's container holds a new object there, of each lane's value (as
  after a branch, rule 3);
- a variable of an enclosing function that holds an array, bound to another object
  (`nonlocal t; t = t + x`): the same, for the variable (its cell).

An evaluated call runs one target at a time on its lanes and merges these back
(`merge_on_lanes`). A symbolic call records every target once for all lanes, so its
targets must share one list of outputs: a target found changing an array from outside,
storing into a container or binding a variable makes the call record again with every
target run by
`in_callers_place`, which sees the arrays from outside through working copies passed as
arguments and returns the stored entries and rebound variables as results.
"""

import dataclasses
import functools
import types

from ._runtime import ArrayBase
from .errors import StateError
from .regions import Region, adopt, copy_of
from .routines import broadcast_lanes, scatter, select, zeros
from .state import nodes
from .tree import assign, children


@dataclasses.dataclass
class Effects:
    """What one run of a target changed: `changed`, the positions (in the call's flat
    arguments) of the arrays it changed in place; `outside`, [(array from an enclosing
    scope, its value at the end)], the arrays back at their values before; `stored`,
    {position: the array it stored there}; `rebound`, [(cell of an enclosing function's
    variable, the array it bound it to)], the cells back at their arrays before."""
    result: object
    changed: set
    outside: list
    stored: dict
    rebound: list


class MoreOutputs(Exception):
    """Internal: a symbolic call's target changes arrays from outside (`outside`), stores
    into its arguments' containers (at the flat positions `stored`) or binds variables of
    enclosing functions to other arrays (their `cells`): record it again."""

    def __init__(self, outside, stored, cells):
        super().__init__('a call target has more outputs')
        self.outside, self.stored, self.cells = outside, stored, cells


def watch(fn, run, args, inner, what, attributes, passed=(), fields=()):
    """run() (target `fn` called on `args`, whose arrays are `inner`) and what it changed, as
    Effects. Errors, rather than changes that could not reach the caller: changing in
    place an attribute of an instance (`attributes()`: the ids of those arrays; its lanes
    share it with other targets' lanes), or, through an enclosing scope, an array that is
    also an argument (one of `passed`, the caller's arrays: the target has a copy of it;
    a symbolic call, whose targets get copies of the arguments where derivatives flow,
    checks this itself); storing into a container anything but an array of the entry's
    type, or changing its length; binding one of `fields` ((instance, name, its array):
    the target's instance's) to another array."""
    # (the variables themselves, held: one freed while the target runs may come back as
    # the variable of the argument's new value, which a saved index would take for none)
    given = [type(x)(x) for x in inner]
    where = {(id(c), j): i for i, (c, j) in enumerate(leaf_slots(args)) if c is not None}
    entries = [(c, list(children(c))) for c in nodes(args)[0] if not isinstance(c, ArrayBase)]
    cells, held = array_cells(fn)
    cells = [(cell, cell.cell_contents) for cell in cells]
    held = _containers(held)
    with Region(inner) as region:
        try:
            r = run()
        except BaseException:
            # (a failed call leaves the caller's variables and containers as they were)
            for cell, before in cells:
                cell.cell_contents = before
            for c, before in held:
                assign(c, before)
            _put_back(fields)
            raise
    # (the instance's fields, the cells and containers of enclosing functions back as
    # they were, before any error)
    fields_bound = _put_back(fields)
    bound = [(cell, before, cell.cell_contents) for cell, before in cells
             if cell.cell_contents is not before]
    for cell, before, _ in bound:
        cell.cell_contents = before
    stores = [(c, before) for c, before in held if any(
        a is not b and isinstance(a, ArrayBase) for a, b in zip(before, children(c)))]
    for c, before in stores:
        assign(c, before)
    if stores:
        # (an entry that held an array: other changes, `seen.append(x)`, are Python's own)
        raise StateError(
            f'pbc: a target of {what} stores into an entry or field of a container of an '
            'enclosing function: pass the container to it as an argument (then the caller '
            'sees what it stores, lane by lane)')
    if fields_bound:
        raise StateError(
            f'pbc: a target of {what} binds a field of its instance to another array: its '
            "lanes share the instance with the other lanes that call it, which cannot each "
            'hold a value of its own there: return the new value instead')
    rebound = [(cell, _bound(before, now, what)) for cell, before, now in bound]
    outside = list(region.changed.values())
    if outside:
        mine = attributes()
        if any(id(x) in mine for x, _ in outside):
            raise StateError(
                f'pbc: a target of {what} changes in place an attribute of an instance, '
                "which its lanes share with the other targets' lanes: return the new value "
                'instead')
        not_passed([x for x, _ in outside], passed, what)
    stored = {}
    for c, before in entries:
        now = children(c)
        if len(now) != len(before):
            raise StateError(f'pbc: a target of {what} changes the length of a container it '
                             'got as an argument: return the new container instead')
        for j, (old, new) in enumerate(zip(before, now)):
            if new is not old:
                stored[_stored_at(where.get((id(c), j)), old, new, what)] = new
    changed = {i for i, (x, g) in enumerate(zip(inner, given)) if x.index != g.index}
    return Effects(r, changed, outside, stored, rebound)


def _put_back(fields):
    """Puts back the fields ((instance, name, array)) bound to other arrays; whether any
    was."""
    bound = [(o, n, v) for o, n, v in fields if o.__dict__.get(n) is not v]
    for owner, name, v in bound:
        owner.__dict__[name] = v
    return bool(bound)


def _bound(old, new, what):
    """`new`, the array a target bound a variable holding the array `old` to."""
    if not isinstance(new, ArrayBase) or type(new) is not type(old):
        raise StateError(
            f'pbc: a target of {what} binds a variable of an enclosing function that held '
            f'a {type(old).__name__} to a {type(new).__name__}: only an array of the same '
            'type can take its place (or return the new value)')
    return new


def _containers(roots, depth=3):
    """[(container, its entries)] for the containers in `roots` and those they hold,
    `depth` levels down, each once."""
    out, seen, level = [], set(), list(roots)
    for _ in range(depth):
        below = []
        for c in level:
            parts = None if isinstance(c, ArrayBase) or id(c) in seen else children(c)
            if parts is None:
                continue
            seen.add(id(c))
            out.append((c, list(parts)))
            below += parts
        level = below
    return out


def array_cells(fn):
    """(cells, containers): the cells of the enclosing functions' variables that `fn`
    reads or binds and that hold arrays, and the containers of arrays that the others hold:
    those of the functions it is made of (a functools.partial's, a call target's of
    pbc/ad/call.py, a bound method's) and of the functions they hold."""
    out, containers, seen, stack = {}, {}, set(), [fn]
    while stack:
        f = stack.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        if isinstance(f, functools.partial):
            stack += [f.func] + [a for a in (*f.args, *f.keywords.values())
                                 if callable(a) and not isinstance(a, type)]
            continue
        f = getattr(f, '__func__', f)
        if not isinstance(f, types.FunctionType) and hasattr(f, '__wrapped__'):
            stack.append(f.__wrapped__)     # (a wrapper: pbc/ad/call.Target)
        for cell in getattr(f, '__closure__', None) or ():
            try:
                value = cell.cell_contents
            except ValueError:          # (not assigned yet)
                continue
            if isinstance(value, ArrayBase):
                out[id(cell)] = cell
            elif callable(value) and not isinstance(value, type):
                stack.append(value)
            elif children(value) is not None:
                containers[id(value)] = value
    return list(out.values()), list(containers.values())


def not_passed(outside, passed, what):
    """Raises where a target changed in place, through a name from an enclosing scope, an
    array of `outside` that is also among the call's arguments `passed`: it has a copy of
    that argument, which its other names show."""
    passed = {id(a) for a in passed}
    if any(id(x) in passed for x in outside):
        raise StateError(
            f'pbc: a target of {what} changes in place, through a name from an enclosing '
            'scope, an array it also gets as an argument: change the argument instead')


def cells_passing(fns, outside, passed, what):
    """The cells of the variables of enclosing functions of `fns` (a symbolic call's
    targets) that hold an array of `outside` (changed in place by a target) that is also
    one of the call's arguments `passed`; those arrays leave `outside` (the cells will
    hold the targets' copies of them, one object with the argument, as in Python). One
    not reached through such a cell is an error (not_passed)."""
    ids = {id(a) for a in passed} & {id(x) for x in outside}
    cells = [c for fn in fns for c in array_cells(fn)[0] if id(c.cell_contents) in ids]
    through = {id(c.cell_contents) for c in cells}
    not_passed([x for x in outside if id(x) not in through], passed, what)
    outside[:] = [x for x in outside if id(x) not in ids]
    return cells


def _stored_at(i, old, new, what):
    """i, the position of an entry a target stored `new` into, where `old` was: an array
    may replace an array of its type."""
    if i is None or not isinstance(new, ArrayBase) or type(new) is not type(old):
        raise StateError(
            f'pbc: a target of {what} stores a {type(new).__name__} where a container it '
            f'got as an argument held a {type(old).__name__}: only an array of the same '
            "type can take an entry's place (or return the new value)")
    return i


def in_callers_place(fn, outside, stored, cells, rebinds, what, args, copies):
    """fn(*args[0], **args[1]) for a symbolic call that records it again: with each array
    of `outside` (from an enclosing scope, which fn changes in place) holding the value of
    its working copy in `copies`, an argument like any other, so that what fn changes there
    the call merges into the caller's array as it merges any argument changed in place;
    with each of `cells` (of enclosing functions' variables that fn binds to other arrays,
    or through which it changes an argument) holding its working copy, the next in
    `copies`, noting in `rebinds` (a list, one flag per cell) those it binds; and, where
    `stored` lists positions of args' arrays or `cells` is not empty, returning (its
    result, the arrays in those entries then, those in the cells then), the entries and
    cells put back. (A
    functools.partial of it is the target: derivative calls see fn's enclosing scope
    through it, pbc/ad/local.py Closures.)"""
    before = [copy_of(x) for x in outside]
    adopt(outside)
    slots = leaf_slots(args)
    slots = [slots[i] for i in stored]
    given = [children(c)[j] for c, j in slots]
    held = [cell.cell_contents for cell in cells]
    try:
        for x, c in zip(outside, copies):
            x._assign(c)
        for cell, c in zip(cells, copies[len(outside):]):
            cell.cell_contents = c
        r = fn(*args[0], **args[1])
        for x, c in zip(outside, copies):
            c._assign(x)
        if not stored and not cells:
            return r
        values = [children(c)[j] for c, j in slots]
        for (c, j), g, v in zip(slots, given, values):
            _stored_at(j, g, v, what)
            put(c, j, g)
        copies = copies[len(outside):]
        bound = [cell.cell_contents for cell in cells]
        for k, (b, c, h) in enumerate(zip(bound, copies, held)):
            if b is not c:
                rebinds[k] = True
                _bound(h, b, what)
        return r, values, bound
    finally:
        for cell, h in zip(cells, held):
            cell.cell_contents = h
        for x, b in zip(outside, before):
            x._assign(b)


def argument_cells(fn, arguments):
    """For target `fn` of an evaluated call: the cells of the enclosing functions'
    variables it reads that hold one of the call's arguments (by id in `arguments`:
    array -> the target's copy of it) hold that copy, one object with the argument as in
    Python, until the caller puts them back: [(cell, its array)]. (Other arrays it reads
    from enclosing scopes stay as they are: one as wide as the call may be a buffer it
    gathers from or scatters into, as well as a value per lane.)"""
    cells = []
    for cell in array_cells(fn)[0]:
        x = cell.cell_contents
        if id(x) in arguments:
            cell.cell_contents = arguments[id(x)]
            cells.append((cell, x))
    return cells


def merge_on_lanes(a, x, lanes, width, Bool):
    """Gives array `a` the value `x` on `lanes` (of `width`): x is that of a target run on
    just those lanes, one per lane or one for all, or, an array from an enclosing scope the
    target changed, one per lane of the call."""
    if len(lanes) == width:
        a._assign(x)
        return
    hit = zeros(Bool, width)
    scatter(hit, Bool(True), lanes)
    if len(x) == width:
        a._assign(select(hit, x, a))
        return
    # (a new value, not a scatter into `a`: that would write the buffer `a` shares with
    # other arrays, and with the caller's where `a` is a branch's working copy)
    value = zeros(type(a), width)
    scatter(value, x if len(x) == len(lanes) else broadcast_lanes(x, len(lanes)), lanes)
    a._assign(select(hit, value, a))


def leaf_slots(tree):
    """Where each array of flatten(tree) is, in its order: (its container, its position in
    children(container)); (None, None) for tree itself if it is an array."""
    if isinstance(tree, ArrayBase):
        return [(None, None)]
    out = []
    _slots(tree, out)
    return out


def _slots(x, out):
    for j, part in enumerate(children(x) or ()):
        if isinstance(part, ArrayBase):
            out.append((x, j))
        else:
            _slots(part, out)


def put(container, j, value):
    """Stores `value` as entry j of `container` (as children() lists them), in place."""
    parts = list(children(container))
    parts[j] = value
    if not assign(container, parts):
        raise StateError(f'pbc: cannot store into a {type(container).__name__}')
