"""Derivatives of symbolic calls (the paper's "Differentiating polymorphism"): the
derivative of a call is another call, to derivative versions of each target, recorded as
subroutines like the call itself.

A symbolic call whose arguments carry derivatives is recorded with each target run in an
AD scope local to it: its float arguments get nodes of their own, and what it computes
from them and from arrays read from outside (its implicit inputs) carries derivatives
there. The call's results leave without those nodes; one node of the AD graph stands for
the call, from the arguments' and implicit inputs' nodes to its float results.

Forward mode calls the targets again with the arguments' tangents as further arguments
(zero ones as literals, which the targets fold: their derivative code disappears); each
target propagates them forward inside itself and returns its results' tangents. Reverse
mode calls them with the results' gradients: each target propagates them backward inside
itself and returns the arguments' gradients; what reaches the implicit inputs goes into
sinks (propagate._Body), added to their gradients once the call is recorded.

Attributes of instances are read inside the targets as closure data: width-1 ones from a
table of the instances' values (built with scatters where one carries derivatives, so that
the table carries them), array ones through a pointer per lane to the lane's instance's
array (a gather from it has the derivatives of the array the target was recorded with: in
reverse mode, a scatter-add into that array's sink).

An evaluated call runs each target on its lanes and scatters the results together; one
node per result (merge_lanes) links it to the targets' results: reverse mode gathers its
gradient at each target's lanes, forward mode scatters their tangents together. (Each
scatter's own rule would pass the merged gradient on as a copy with the target's lanes
cleared, once per target.)
"""

import contextlib

from .. import _runtime, tree
from ..state import per_object
from . import propagate
from .local import (
    Closures,
    Noted,
    add_tangents,
    enable,
    gathered_gradients,
    grad_or_zero,
    is_float,
    leave_scope,
    link,
    local_scope,
    nested_scatters,
    noting_scatters,
    outer_values,
    propagate_back,
    result_nodes,
    routing,
    run_body,
    scattered_gradients,
    scattered_into,
    seed_roots,
    seed_tangents,
    tangent_or_zero,
    with_routed,
)
from .propagate import ADFlag, accumulate, traverse
from .scopes import suspend_grad


def symbolic_call(targets, flat, record, write_back):
    """The result of `record(targets, flat)`, which records a symbolic call of `targets`
    ((key, fn, obj) each) on the flattened arguments `flat` ((arrays, build)), with a node
    for the call where its inputs carry derivatives. An argument that a target changes in
    place is an output of the call too: `write_back(a, new)` gives the caller's object `a`
    the call's `new` value on the lanes that call a target."""
    arrays, build = flat
    inputs = [_runtime.ad_node_of(a) if is_float(a) else 0 for a in arrays]
    # (an object under several names, one object in the targets: its derivatives once, at
    # its first position)
    first = {}
    leads = [first.setdefault(id(a), i) == i for i, a in enumerate(arrays)]
    diff = [i for i, n in enumerate(inputs) if n and leads[i]]
    # (an object passed under several names stays one, as pbc/dispatch.py keeps it)
    values = per_object(arrays, _runtime.ad_detached)
    primal = [Target(fn, diff, 'primal') for _, fn, _ in targets]
    # (the call gets copies: `values` stay the arguments' values for the derivative calls;
    # the arguments the targets change in place, pbc/dispatch.py, are changed in the copies)
    given = per_object(values, lambda v: type(v)(v))
    result = record([(key, t, obj) for (key, _, obj), t in zip(targets, primal)],
                    (given, build))
    changed = [i for i, (v, g) in enumerate(zip(values, given)) if v.index != g.index]
    moved = [i for i in changed if is_float(arrays[i]) and leads[i]]
    propagate.add_sinks([t.sinks for t in primal], resume=True)
    implicit = sorted({n for t in primal for n in t.implicit})
    # The arrays the targets scatter-add into (closure arrays: the same objects when the
    # targets run again), and the nodes they had before: their new values are the call's
    # results too, but where the call is inside another body (then the outermost's).
    below = {k: a for t in primal for k, a in t.noted.below.items()}
    nested = nested_scatters(below)
    scattered = [] if nested else list(below.values())
    before = [_runtime.ad_index(a) for a in scattered]
    sources = list(dict.fromkeys([n for n in inputs if n] + implicit +
                                 [n for n in before if n]))
    outs = tree.flatten(result)[0]
    linked = [outs[i] for i, a in enumerate(outs) if is_float(a) and _runtime.ad_index(a) == 0]
    if not sources or not (linked or moved or scattered or nested):
        for i in changed:
            arrays[i]._assign(given[i])
        return result
    # (the float arguments changed in place are results after the call's own, in the order
    # its derivative targets return their tangents and take their gradients)
    linked += [given[i] for i in moved]
    op = CallOp(targets, values, build, inputs, diff, implicit,
                [(type(a), len(a)) for a in linked], record,
                Closures(*[fn for _, fn, _ in targets], writes=below), moved)
    weak = link(op, sources, linked, scattered, nested)
    op.outputs = list(weak[:len(linked)])
    op.scatter_targets = {id(a): (n, w, type(a), len(a))
                          for a, n, w in zip(scattered, before, weak[len(linked):])}
    for i in changed:
        if i in moved:
            write_back(arrays[i], given[i])
        elif not is_float(arrays[i]) or leads[i]:
            arrays[i]._assign(given[i])
    return result


class Target:
    """A call target run in an AD scope and a propagate._Body local to it. `kind`:
    'primal' (the call itself: notes the implicit inputs, strips the results' nodes),
    'forward' (more arguments: the tangents of the arguments `diff`; returns the tangents
    of the float results) or 'backward' (more arguments: the gradients of the float
    results; returns those of the arguments `diff`). The scatter-adds with derivatives
    that it makes (into arrays from outside) are noted in `noted` (local.Noted); the
    derivative calls add the values' tangents into `into` (forward) or read their gradients
    from the arrays' in `scattered` (backward), by the array's id. The float arguments at
    positions `moved` are results too (the call's targets change them in place): derivative
    calls return their tangents, and take their gradients, after the results'."""

    def __init__(self, fn, diff, kind, size=0, build=None, seeds=(), into=None,
                 scattered=None, moved=()):
        self.fn, self.diff, self.kind, self.moved = fn, diff, kind, moved
        self.__wrapped__ = fn           # (what it runs: pbc/call_effects.array_cells)
        # (derivative calls: how many arrays the arguments are, their structure, and the
        # call's implicit inputs, which forward mode seeds with their tangents)
        self.size, self.build, self.seeds = size, build, seeds
        self.into, self.scattered = into or {}, scattered or {}
        self.implicit, self.sinks, self.noted = [], {}, Noted()

    @contextlib.contextmanager
    def recording(self):
        """The target's AD scope and propagate._Body, entered by the call's recording
        (pbc/dispatch.py) right after the target's begins, so that its reads of the
        instances' attributes belong to them too."""
        # (a derivative call: everything, as only the seeds carry derivatives)
        scope = local_scope(inherit=self.kind == 'primal')
        propagate.body_begin()
        self.since = scope.serial
        try:
            yield self
        finally:
            self.sinks = propagate.body_leave()
            _runtime.ad_scope_pop()

    def __call__(self, *args, **kwargs):
        # (self.noted: what the target scatter-adds with derivatives; the derivative code
        # recorded after it runs is the target's too, where the loops and calls nested in it
        # record theirs)
        with noting_scatters() as self.noted:
            if self.kind == 'primal':
                return self._primal(args, kwargs, self.since)
            arrays, extra = list(args[:self.size]), args[self.size:]
            enable(arrays, self.diff)
            if self.kind == 'forward':
                return self._forward(arrays, extra, self.since)
            return self._backward(arrays, extra, self.since)

    def _primal(self, args, kwargs, since):
        arrays = tree.flatten((args, kwargs))[0]
        enable(arrays, self.diff)
        given = [type(a)(a) for a in arrays]        # (held: see dispatch._run_watched)
        r = self.fn(*args, **kwargs)
        # (an argument changed in place leaves as a result does)
        out = tree.flatten(r)[0] + [a for a, g in zip(arrays, given) if a.index != g.index]
        self.implicit = sorted(set(leave_scope(out, result_nodes(out), since)) |
                               outer_values(self.noted.scatters, since))
        return r

    def _run(self, arrays):
        # (the call itself made its side effects: a derivative call does not repeat them,
        # but notes its scatter-adds)
        args, kwargs = self.build(arrays)
        out = tree.flatten(run_body(lambda: self.fn(*args, **kwargs), (), False))[0]
        return out + [arrays[i] for i in self.moved]

    def _forward(self, arrays, tangents, since):
        seeds = list(self.seeds) + seed_tangents(arrays, self.diff, tangents)
        out = self._run(arrays)
        traverse(seeds, False, False, ADFlag.ClearNone, since=since)
        add_tangents(self.noted.scatters, self.into, since, seeds)
        return [tangent_or_zero(a, since, seeds) for a in out if is_float(a)]

    def _backward(self, arrays, grads, since):
        # (the arguments as given: the target may change them in place)
        inputs = [type(a)(a) for a in arrays]
        results = [a for a in self._run(arrays) if is_float(a)]
        # (and the loops and calls nested in the target that scatter-add, from their tokens)
        values, more = gathered_gradients(self.noted.scatters, self.scattered)
        roots, zeros = seed_roots(self.noted)
        propagate_back(results + values + roots, list(grads) + more + zeros, since)
        return [grad_or_zero(inputs[i], since) for i in self.diff]


class CallOp:
    """The AD graph's node for one symbolic call (a custom op's node: traversals call
    _propagate). It holds the call's arguments (values) and, weakly, its results' nodes."""

    def __init__(self, targets, values, build, inputs, diff, implicit, kinds, record,
                 closures, moved):
        self.targets, self.values = targets, values
        self.build = tree.without_arrays(build)
        self.closures = closures        # what the targets read, as they read it
        self.inputs, self.diff, self.implicit = inputs, diff, implicit
        self.kinds, self.record = kinds, record      # (type, width) of the float results
        self.moved = moved              # (the float arguments the targets change in place)
        self.outputs = []                             # (node, serial) per float result
        # id of an array the targets scatter-add into -> (its node before the call, (node,
        # serial) of its value after, its type, its width)
        self.scatter_targets = {}
        self.nested = None              # (NestedScatters: inside another body, they route)

    def _propagate(self, backward):
        into, scattered = {}, {}
        if backward:
            grads = [_runtime.ad_grad(n) if _runtime.ad_alive(n, s) else None
                     for n, s in self.outputs]
            own = scattered_gradients(self.scatter_targets)
            scattered = with_routed(own, self.nested)
            if all(g is None for g in grads) and not scattered:
                return False
            extra = [g if g is not None else _runtime.literal(T, 0, 1)
                     for g, (T, _) in zip(grads, self.kinds)]
        else:
            extra = [_runtime.ad_grad(self.inputs[i]) for i in self.diff]
            extra = [t if t is not None else _runtime.literal(type(self.values[i]), 0, 1)
                     for t, i in zip(extra, self.diff)]
            # (the arrays' tangents before the call, to which the targets add the values')
            own = scattered_into(self.scatter_targets)
            into = with_routed(own, self.nested)
        kind = 'backward' if backward else 'forward'
        bodies = [Target(fn, self.diff, kind, len(self.values), self.build, self.implicit,
                         into, scattered, self.moved)
                  for _, fn, _ in self.targets]
        # (copies: targets that change arguments in place change these, not `values`)
        given = per_object(self.values, lambda v: type(v)(v))
        # (and the loops and calls nested in the targets find them)
        with self.closures, suspend_grad(), routing(own):
            out = self.record([(key, t, obj) for (key, _, obj), t in zip(self.targets, bodies)],
                              (given + extra, lambda new: (tuple(new), {})))
        out = tree.flatten(out)[0]
        _check_sinks_outside(bodies)
        propagate.add_sinks([t.sinks for t in bodies], resume=False)
        if backward:
            for i, g in zip(self.diff, out):
                accumulate(self.inputs[i], g)
            for k, g in own.items():                 # (a scatter-add passes it on as it is)
                node = self.scatter_targets[k][0]
                if node:
                    accumulate(node, g)
        else:
            for (n, s), t in zip(self.outputs, out):
                if _runtime.ad_alive(n, s):
                    accumulate(n, t)
            for k, t in own.items():
                accumulate(self.scatter_targets[k][1][0], t)
        return True


def _check_sinks_outside(bodies):
    """Raises where a derivative call's targets give gradients, through sinks, to arrays
    they read from an enclosing scope that the symbolic loop body it is recorded in made
    (a loop variable): the sinks' totals, read in that body's kernel after the call wrote
    them, could not be ordered after the writes."""
    body = propagate.in_body()
    if body is None:
        return
    if any(_runtime.ad_serial_of(n) >= body.serial for t in bodies for n in t.sinks):
        raise NotImplementedError(
            'pbc: reverse-mode derivatives of a symbolic call inside a symbolic loop, whose '
            'targets read from an enclosing scope an array that the loop computes (a loop '
            'variable, or an object it shares with one), are not supported: pass that array '
            'to the call as an argument (where it is one already, read it through the '
            'argument, not through the container that also holds it), or run the loop or the '
            'call in evaluated mode')


def merge_lanes(outs, parts):
    """Links the float arrays `outs` of an evaluated call's result (new arrays, without
    nodes, that the targets' results were scattered into without derivatives) to those
    results: `parts` holds, per target, its lanes and its result's arrays, in the order of
    `outs`."""
    for k, out in enumerate(outs):
        if not is_float(out):
            continue
        sources = [(lanes, _runtime.ad_node_of(leaves[k])) for lanes, leaves in parts]
        sources = [(lanes, n) for lanes, n in sources if n]
        if sources:
            op = LaneMerge(type(out), len(out), sources)
            (op.output,) = propagate.custom_node(op, [n for _, n in sources], [out])


class LaneMerge:
    """The AD graph's node for one result of an evaluated call (a custom op's node):
    `sources` holds, per target whose result carries derivatives, its lanes and that
    result's node."""

    def __init__(self, T, width, sources):
        self.T, self.width, self.sources = T, width, sources
        self.output = None                       # (node, serial)

    def _propagate(self, backward):
        n, serial = self.output
        if not _runtime.ad_alive(n, serial):
            return False
        if backward:
            g = _runtime.ad_grad(n)
            if g is None:
                return False
            for lanes, node in self.sources:
                accumulate(node, _runtime.gather(self.T, g, lanes, True))
            return True
        t = None
        for lanes, node in self.sources:
            d = _runtime.ad_grad(node)
            if d is not None:
                if t is None:
                    t = _runtime.literal(self.T, 0.0, self.width)
                    _runtime.make_opaque(t)
                _runtime.scatter(t, self.T(d), lanes, True, 0, True)
        if t is None:
            return False
        accumulate(n, t)
        return True
