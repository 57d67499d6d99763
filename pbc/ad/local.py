"""AD local to a symbolic body being recorded (a loop's body, a call's target): its scope,
the nodes of its inputs, the derivatives given to and read from its results, and what it
read from enclosing scopes, for the derivative code recorded from it later. Shared by
pbc/ad/loop.py and pbc/ad/call.py."""

import contextlib
import functools

from .. import _runtime, tree
from .._runtime import ArrayBase
from ..state import nodes
from . import propagate
from .propagate import ADFlag, accumulate, traverse
from .scopes import _current


def is_float(x):
    return isinstance(x, ArrayBase) and x.Type in ('float32', 'float64')


def local_scope(inherit=True):
    """Enters an AD scope local to the body being recorded (nodes may be made there):
    with `inherit`, enabling what the enclosing scope enables (its set Omega), else
    everything (derivative code, whose seeds are the only derivatives). The caller pops it
    (ad_scope_pop); returns it (its `serial`: the first node made inside)."""
    complement, nodes = _current() if inherit else (True, set())
    return _runtime.ad_scope_push(complement, False, list(nodes), False, True)


def enable(arrays, diff):
    """Gives the arrays `diff` (indices) nodes of their own (but arrays that carry one
    already: the caller's, as invariant loop state is)."""
    for i in diff:
        if not _runtime.ad_index(arrays[i]):
            _runtime.ad_enable(arrays[i])


def seed_tangents(arrays, diff, tangents):
    """The arrays `diff` (enabled) get `tangents`; returns their nodes."""
    nodes = [_runtime.ad_index(arrays[i]) for i in diff]
    for n, t in zip(nodes, tangents):
        _runtime.ad_set_grad(n, t)
    return nodes


def run_body(body, args, effects):
    """body(*args), its side effects (scatters, prints) recorded or not: a derivative's
    second run of a body does not repeat them, while the derivative code after it records
    its own (the scatters of a nested loop's stored states, say)."""
    if effects:
        return body(*args)
    _runtime.suppress_effects(True)
    try:
        return body(*args)
    finally:
        _runtime.suppress_effects(False)


class Noted:
    """What a body run under noting_scatters() met: `scatters`, its own scatter-adds whose
    target or value carries derivatives (target, value, index, active: the lanes it wrote);
    `below`, the arrays that it and the bodies nested in it scatter-add into (id -> array);
    `roots`, the tokens of the loops and calls nested in it that do (see NestedScatters)."""

    __slots__ = ('scatters', 'below', 'roots')

    def __init__(self):
        self.scatters, self.below, self.roots = [], {}, []


_noting = []          # per body running, from the outermost recording level in


@contextlib.contextmanager
def noting_scatters():
    """The Noted of the body run inside `with`. A scatter-add in a body nested in others
    (a loop or call inside a loop's body or a call's target) is its own body's scatter and
    one of every enclosing body's `below`: the outermost loop or call makes the array's new
    value one of its results, and the inner ones find its derivatives through routing()."""
    noted = Noted()
    _noting.append(noted)
    try:
        yield noted
    finally:
        _noting.pop()


def _as_now(x):
    """A new array object of x's variable and derivatives (anything else as it is)."""
    return type(x)(x) if isinstance(x, ArrayBase) and x.index else x


def _scatter_hook(target, value, index, active, reduce, primal):
    """See _runtime.set_symbolic_scatter_hook: True where noting_scatters() takes this
    scatter (with `primal`, it is being recorded; else a derivative runs the body again):
    a scatter-add in a body, at every recording level of which a body notes."""
    if reduce != 1 or propagate.in_body() is None or \
            len(_noting) != _runtime.recording_depth():
        return False
    # (the value, index and lanes as they are now: code after the scatter may change the
    # objects in place, `y = a`, scatter_add(acc, y, i), then `a /= 2`)
    _noting[-1].scatters.append((target, *[_as_now(x) for x in (value, index, active)]))
    for noted in _noting:
        noted.below[id(target)] = target
    return True


_runtime.set_symbolic_scatter_hook(_scatter_hook)


_routes = []      # (arrays, mask) per loop or call whose derivative is being recorded


@contextlib.contextmanager
def routing(arrays, mask=None):
    """While the derivative of a loop or call is recorded: the loops and calls nested in it
    find there the arrays it scatter-adds into as the outermost (`arrays`: id -> the
    tangent buffer, forward mode, or the gradient, reverse mode, of each; routed), and the
    lanes it ran on (a loop's `mask`: those an enclosing conditional left on), on which
    alone their scatters count (routed_lanes)."""
    _routes.append((arrays, mask))
    try:
        yield
    finally:
        _routes.pop()


def routed(ids):
    """{id: buffer or gradient} that routing() gives for the arrays `ids`."""
    out = {}
    for arrays, _ in _routes:
        out.update((k, arrays[k]) for k in ids if k in arrays)
    return out


def routed_lanes(active):
    """`active`, on the lanes that the loops whose derivatives are being recorded ran on."""
    for _, mask in _routes:
        if mask is not None:
            active = mask & active
    return active


class NestedScatters:
    """The scatter-adds of a loop or call recorded inside another loop's body or call's
    target (`below`: their arrays, by id). Their arrays' new values are the outermost
    one's results; this op gets a token (`take_token`), an output of its own that the body
    it is in seeds in its derivative (Noted.roots), so that a backward traversal there
    reaches the op even where none of its results carries a gradient."""

    def __init__(self, below):
        self.ids = set(below)
        like = next(iter(below.values()))
        self.token = _runtime.literal(_runtime.class_for(like, 'float32'), 0.0, 1)
        _noting[-1].roots.append(self.token)

    def take_token(self):
        """The token, once, for the op's outputs: the op (the payload of its node) must not
        hold it, or the op, its token and its node would keep each other alive after the
        body it is in (where a traversal would find it and record code outside its loop)."""
        token, self.token = self.token, None
        return [token]

    def arrays(self):
        """The routed tangent buffers or gradients of its arrays."""
        return routed(self.ids)


def nested_scatters(below):
    """A NestedScatters where a loop or call being made inside another body scatter-adds
    (`below`, its Noted's), else None (an outermost one makes the arrays its results)."""
    if not below or not _runtime.recording_depth():
        return None
    if not _noting:
        raise RuntimeError('pbc: internal error: a nested scatter-add outside a noting body')
    return NestedScatters(below)


def link(op, sources, results, scattered, nested):
    """The AD node of loop or call `op` (a custom op's): from the nodes `sources` to its
    float `results`, the arrays it scatter-adds into as the outermost (`scattered`, whose
    nodes before it are among the sources) and, nested (a NestedScatters), its token.
    Returns the outputs' (node, serial) pairs in that order."""
    # (the arrays' nodes before are sources: held here until the op's node holds them)
    held = [_runtime.ad_same(a) for a in scattered]
    for a in scattered:
        _runtime.ad_disable(a)
    op.nested = nested
    try:
        return propagate.custom_node(op, sources, results + scattered +
                                  (nested.take_token() if nested else []))
    finally:
        del held


def seed_roots(noted):
    """The tokens of a derivative body's nested loops and calls, with zero gradients, for
    propagate_back: (arrays, gradients)."""
    return noted.roots, [_runtime.literal(type(t), 0.0, 1) for t in noted.roots]


def scattered_into(targets):
    """For forward mode through a body that scatter-adds into arrays (`targets`: id ->
    (node before the body, (node, serial) after it, type, width), those of a LoopOp or
    CallOp): id -> a new array holding each live array's tangent before the body, to which
    the derivative body adds the tangents of the values."""
    out = {}
    for k, (before, (n, s), T, width) in targets.items():
        if _runtime.ad_alive(n, s):
            t = _runtime.ad_grad(before) if before else None
            t = T(t) if t is not None and len(t) == width else \
                _runtime.literal(T, 0, width) + (0 if t is None else t)
            _runtime.make_opaque(t)
            out[k] = t
    return out


def scattered_gradients(targets):
    """For reverse mode through a body that scatter-adds into arrays (`targets`, as for
    scattered_into): id -> the gradient of each live array's value after the body."""
    out = {}
    for k, (_, (n, s), _, _) in targets.items():
        g = _runtime.ad_grad(n) if _runtime.ad_alive(n, s) else None
        if g is not None:
            out[k] = g
    return out


def with_routed(own, nested):
    """`own` (scattered_into's or scattered_gradients' of an op), and where the op is
    nested (a NestedScatters), the routed buffers or gradients of its arrays with them."""
    return {**nested.arrays(), **own} if nested else own


def outer_values(scatters, since):
    """The nodes from before serial number `since` (outside the body) that `scatters` add
    as they are: implicit inputs of the body too."""
    values = {_runtime.ad_index(v) for _, v, _, _ in scatters if is_float(v)}
    return {n for n in values if n and _runtime.ad_serial_of(n) < since}


def add_tangents(scatters, into, since, seeds, lanes=None):
    """Forward mode of a body's `scatters` (those its derivative run noted): the values'
    tangents scatter-added into `into` (scattered_into, or routed) at the same entries, on
    the same lanes (`lanes(active)`, where given, and routed_lanes)."""
    for target, value, index, active in scatters:
        t = into.get(id(target))
        if t is not None and is_float(value):
            active = routed_lanes(active if lanes is None else lanes(active))
            _runtime.scatter(t, tangent_or_zero(value, since, seeds), index, active, 1)


def gathered_gradients(scatters, scattered, lanes=None):
    """Reverse mode of a body's `scatters`: each value with the gradient of the array it
    was added into (`scattered`, by the array's id) at its entries, as (values, grads)."""
    values, grads = [], []
    for target, value, index, active in scatters:
        g = scattered.get(id(target))
        if g is not None and is_float(value):
            values.append(value)
            active = routed_lanes(active if lanes is None else lanes(active))
            grads.append(_runtime.gather(type(g), g, index, active))
    return values, grads


def result_nodes(out):
    """The nodes of float results `out` that the scope enables: made by the body being
    recorded, or arrays from outside that it returns as they are (0: none)."""
    nodes = [_runtime.ad_index(a) if is_float(a) else 0 for a in out]
    return [n if n and _runtime.ad_enabled_here(n) else 0 for n in nodes]


def outer_sources(since):
    """The nodes from before serial number `since` that those made since read (none made:
    no scan of the graph)."""
    return _runtime.ad_outer_sources(since) if _runtime.ad_serial_now() > since else set()


def leave_scope(out, nodes, since):
    """Results `out` (with `nodes`, result_nodes) leave the body made since serial number
    `since` without its nodes; returns the implicit inputs: the nodes from outside that it
    read or returns, sorted."""
    outer = {n for n in nodes if n and _runtime.ad_serial_of(n) < since}
    implicit = sorted(outer_sources(since) | outer)
    for a, n in zip(out, nodes):
        if n and _runtime.ad_serial_of(n) >= since:
            _runtime.ad_disable(a)
    return implicit


def tangent_or_zero(a, since, seeds):
    """The tangent a forward traversal inside the body gave result a (zero where none): a
    node of the body's, or a seed it returns as it is."""
    n = _runtime.ad_index(a)
    inside = n and (_runtime.ad_serial_of(n) >= since or n in seeds)
    g = _runtime.ad_grad(n) if inside else None
    return _runtime.literal(type(a), 0, 1) if g is None else g


def grad_or_zero(a, since):
    """The gradient a backward traversal inside the body gave input a (zero where none)."""
    n = _runtime.ad_index(a)
    g = _runtime.ad_grad(n) if n and _runtime.ad_serial_of(n) >= since else None
    return _runtime.literal(type(a), 0, 1) if g is None else g


def propagate_back(results, grads, since):
    """Results `results` get gradients `grads` and a backward traversal inside the body
    carries them to its inputs (and, through sinks, to arrays from outside)."""
    starts = []
    for a, g in zip(results, grads):
        n = _runtime.ad_index(a)
        if n:
            accumulate(n, g, wide=True)
            starts.append(n)
    traverse(starts, True, True, ADFlag.ClearNone, since=since)


class Closures:
    """What functions (a loop's cond and body, a call's targets) read from enclosing
    scopes, as it was when they were recorded: the variables (closure cells, through the
    functions found in them: the frontend's nested bodies; the arguments of a
    functools.partial) and the JIT arrays inside their values. A derivative records them
    again later, when the enclosing function may have rebound a variable (`i = i + 1`
    after an inner loop whose condition reads i) or changed an array in place (`i += 1`):
    inside `with`, they see them as they were."""

    def __init__(self, *fns, writes=()):
        # (one entry per cell and per array: functions share cells, and a swap made twice
        # would undo itself; the arrays the functions scatter-add into, `writes` by id, are
        # not held: their derivatives know them by identity, and a copy held here would make
        # the next write to one copy it, a read in a loop's body that writes it)
        self.cells, self.arrays, seen, stack = {}, dict.fromkeys(writes), set(), list(fns)
        self.entries = {}           # id -> (container, its entries as they were)
        while stack:
            f = stack.pop()
            f = getattr(f, '__func__', f)
            if id(f) in seen:
                continue
            seen.add(id(f))
            if isinstance(f, functools.partial):          # (a method bound to an instance)
                stack.append(f.func)
                for value in (*f.args, *f.keywords.values()):
                    if callable(value) and not isinstance(value, type):
                        stack.append(value)
                    else:
                        self._hold(value)
                continue
            for cell in getattr(f, '__closure__', None) or ():
                try:
                    value = cell.cell_contents
                except ValueError:          # (not assigned yet)
                    continue
                self.cells.setdefault(id(cell), (cell, value))
                if callable(value) and not isinstance(value, type):
                    stack.append(value)
                elif not isinstance(value, (type, str, int, float, bool)):
                    self._hold(value)

    def _hold(self, value):
        """Keeps the JIT arrays inside `value` with their variables and nodes as they are
        now (none in a structure tree cannot walk)."""
        try:
            arrays = list(tree.leaves(value))
        except (TypeError, ValueError, RecursionError):
            return
        for a in arrays:
            self.arrays.setdefault(id(a), (a, _runtime.ad_same(a)))
        # (and the containers' entries: one rebound later, `o.q = v` after a loop that read
        # o.q, is read as it was)
        try:
            containers = nodes(value)[0]
        except (TypeError, ValueError, RecursionError):
            return
        for c in containers:
            if not isinstance(c, ArrayBase):
                self.entries.setdefault(id(c), (c, list(tree.children(c))))

    def __enter__(self):
        self.now = []
        for cell, value in self.cells.values():
            try:
                self.now.append((cell, cell.cell_contents))
            except ValueError:
                self.now.append((cell, _EMPTY))
            cell.cell_contents = value
        self.swapped = [(a, was) for a, was in filter(None, self.arrays.values())
                        if a.index != was.index or _runtime.ad_index(a) != _runtime.ad_index(was)]
        for a, was in self.swapped:
            _runtime.swap_contents(a, was)
        self.rebound = []
        for c, was in self.entries.values():
            now = list(tree.children(c))
            if len(now) == len(was) and any(p is not q for p, q in zip(now, was)) and \
                    tree.assign(c, was):
                self.rebound.append((c, now))
        return self

    def __exit__(self, *exc):
        for c, now in self.rebound:
            tree.assign(c, now)
        for a, was in self.swapped:
            _runtime.swap_contents(a, was)
        for cell, value in self.now:
            if value is _EMPTY:
                del cell.cell_contents
            else:
                cell.cell_contents = value
        self.now = self.swapped = None
        return False


_EMPTY = object()
