"""Propagation of derivatives through the AD graph: forward (tangents from inputs to
outputs) and backward (gradients from outputs to inputs), in creation order, without
recursion. Each node's rule traces ordinary JIT operations; nothing is evaluated here
except where a rule needs memory (the scatters of a gather's adjoint, reductions)."""

import enum

from .. import _runtime, evaluate
from . import rules

CUSTOM = rules.code('custom')    # a custom op's node: its own forward/backward propagate
CUSTOM_OUT = rules.code('custom_out')    # an output of one: the op reads its gradient
# Rules whose backward propagation queues scatter-adds into gradients, or reads them: a
# reverse traversal through them launches kernels before its end.
LAUNCHING = frozenset(map(rules.code, ('gather', 'scatter', 'scatter_add', 'custom')))


class ADFlag(enum.IntFlag):
    """What a traversal clears afterwards (Dr.Jit's values)."""
    ClearNone = 0
    ClearEdges = 1        # the edges it traversed (a second traversal finds nothing)
    ClearInput = 2        # the gradients it started from (see _clear)
    ClearInterior = 4     # the gradients it passed through
    ClearVertices = 6
    Default = 7
    AllowNoGrad = 8       # no error when the argument carries no derivatives


class _Body:
    """A symbolic loop body (or call target) being recorded (`depth`: the recording depth
    inside it). Nodes
    made before `serial` are outside it: derivative code inside the body cannot add to
    their gradients (an addition there would be code of the body), so their contributions
    are scattered into `sinks`, buffers made for them (node -> buffer), and added to their
    gradients once the loop is recorded."""

    def __init__(self, depth, resume):
        self.depth, self.serial, self.sinks = depth, _runtime.ad_serial_now(), {}
        self.resume = resume
        self.open = True            # (until the recording ends: see custom_node)
        # node -> its gradient so far: nodes whose contributions the code recording the
        # body gathers itself (a nested loop's derivative, as loop state), not in sinks
        self.collect = {}


_bodies = []            # the symbolic loop bodies being recorded, innermost last
_caller_depths = []     # (see caller_resumes)


class caller_resumes:
    """A context in which the loop recorded (its body at the next recording depth; again,
    if it is recorded again) belongs to a traversal in progress (a loop's derivative,
    pbc/ad/loop.py), which goes on from the nodes its sinks give gradients itself."""

    def __enter__(self):
        _caller_depths.append(_runtime.recording_depth() + 1)
        return self

    def __exit__(self, *exc):
        _caller_depths.pop()
        return False


def body_begin():
    """Called as the body of a symbolic loop starts recording."""
    depth = _runtime.recording_depth()
    _bodies.append(_Body(depth, depth not in _caller_depths))


def body_end(recorded):
    """Called as the body of a symbolic loop ends: with `recorded` (the loop was recorded,
    not abandoned), what its sinks gathered goes into the gradients of their nodes, and
    (a body that propagated gradients itself: backward_from inside the loop) a backward
    traversal goes on from them, as it would have without the loop in between."""
    body = _bodies.pop()
    body.open = False
    if recorded:
        add_sinks([body.sinks], body.resume)


def add_sinks(sinks, resume):
    """Adds what sinks ({node: rules.Spread} each, of bodies now recorded: not before, as
    those write them) gathered to their nodes' gradients; with `resume`, a backward
    traversal goes on from those nodes."""
    nodes = []
    for group in sinks:
        for node, sink in group.items():
            if _runtime.ad_size(node):          # (a node alive)
                accumulate(node, sink.total())
                nodes.append(node)
    if nodes and resume:
        traverse(list(dict.fromkeys(nodes)), True, True, ADFlag.Default)


def body_leave():
    """Called as the body of a symbolic call's target ends: its sinks (node -> Spread), for
    the caller to add once the whole call is recorded (pbc/ad/call.py)."""
    body = _bodies.pop()
    body.open = False
    return body.sinks


def custom_node(op, sources, results):
    """The AD node of custom op `op` (a loop's, a call's, the user's), from the nodes
    `sources` to new nodes of the arrays `results`; returns their (node, serial) pairs.
    The op notes the bodies being recorded as it is made: once one of them has ended, the
    op is code of that body, whose derivatives are those of the enclosing loop's or call's
    own op (which records the body again, with ops of its own), or of no kernel (a
    recording given up: the loop's state turned out to carry derivatives, its width grew,
    an error). Traversals pass it by: its nodes may outlive the body (an array that a
    later derivative restores, local.Closures), but its derivative would read the body's
    values where the body is closed."""
    op._pbc_within = tuple(_bodies)
    return _runtime.ad_custom(op, sources, results)


def _closed(op):
    """Whether a body being recorded as `op` was made has ended (see custom_node)."""
    return not all(b.open for b in op._pbc_within)


def outermost_serial():
    """The serial number of the outermost body being recorded (nodes from it on are made
    inside one)."""
    return _bodies[0].serial


def in_body():
    """The _Body of the innermost recording, where that is a symbolic loop's body or a
    symbolic call's target (None elsewhere)."""
    depth = _runtime.recording_depth()
    return _bodies[-1] if depth and _bodies and _bodies[-1].depth == depth else None


def _total(g):
    return _runtime.reduce(g, 'sum') if len(g) > 1 else g


def accumulate(node, g, wide=False, defer=False):
    """Adds g to node's gradient, converted to its type and width: summed over lanes for a
    node of width 1 (which was broadcast in the operation), broadcast for a gradient of
    width 1 (a seed or a constant partial) on a wider node. Gradients always have their
    node's width, so rules such as a gather's read them lane by lane; but with `wide` (a
    traversal inside a symbolic loop's body, whose width-1 values stand for every lane, and
    where no reduction can run), a width-1 node keeps a wide gradient. With `defer` (a
    backward traversal outside symbolic code), it keeps the lanes of a wide gradient apart
    too, for _sum_lanes to sum once the traversal ends. Inside a loop body, a node from
    outside it gets g through a sink (see _Body)."""
    if _bodies and _runtime.ad_serial_of(node) < _bodies[-1].serial:
        # (a node the innermost body gathers itself: a nested loop's derivative; else the
        # outermost body the node is outside of: its sink is read once that loop is
        # recorded, outside every loop that wrote it)
        serial = _runtime.ad_serial_of(node)
        inner = _bodies[-1]
        body = inner if node in inner.collect else next(b for b in _bodies if serial < b.serial)
        if node in body.collect:
            _collect(body, node, g)
        else:
            _into_sink(body, node, g)
        return
    old = _runtime.ad_grad(node)
    size = _runtime.ad_size(node)
    # (while code is recorded, it is a body's: a custom op's propagation there too)
    wide = wide or bool(_runtime.recording_depth())
    if isinstance(g, rules.Scattered):
        g = g.value(size)
    if size == 1 and old is not None and len(old) > 1 and not wide:
        # (a sum deferred to the end of the traversal, see `defer`: lanes of another
        # width, or a total, come in: the sum now)
        g = rules.value(g)
        if not (defer and len(g) == len(old)):
            old = _total(old)
            _runtime.ad_set_grad(node, old)
    if isinstance(g, rules.Product) and old is not None and \
            max(len(g.x), len(g.w)) == size and type(g.x) is type(g.w) is type(old):
        _runtime.ad_set_grad(node, rules.add_to(old, g))    # one fma
        return
    g = _as(rules.value(g), node)
    if len(g) != size:
        if size != 1 and len(g) != 1:
            raise RuntimeError(f'pbc: attempted to store a gradient of size {len(g)} into '
                               f'AD variable of size {size}')
        if size == 1 and wide:
            _runtime.ad_set_grad(node, g if old is None else old + g)
            return
        if size == 1 and defer:
            if old is not None and len(old) != len(g):      # (old: a total, see above)
                g = _total(g)
            _runtime.ad_set_grad(node, g if old is None else old + g)
            return
        g = _total(g) if size == 1 else rules.widen(g, size)
    _runtime.ad_set_grad(node, g if old is None else old + g)


def _collect(body, node, g):
    """Adds contribution g, made inside `body`, to what it gathers for `node` itself."""
    if isinstance(g, rules.Scattered):
        # (a gather from an array made in the enclosing body: not in one kernel)
        raise NotImplementedError(
            'pbc: reverse-mode derivatives of a gather, inside a symbolic loop nested in '
            'another, from an array computed in the enclosing loop, are not supported')
    g = _as(rules.value(g), node)
    old = body.collect[node]
    body.collect[node] = g if old is None else old + g


def _into_sink(body, node, g):
    """Adds contribution g, made inside `body`, to the sink of `node` (from outside it): a
    scatter-add at the entries a gather read (rules.Scattered), or lane by lane into a
    buffer of the node's width (one entry for a node of width 1)."""
    sink = body.sinks.get(node)
    if isinstance(g, rules.Scattered):
        if sink is None:
            sink = body.sinks[node] = rules.Spread(
                _runtime.ad_class(node), _runtime.ad_size(node),
                max(len(g.g), len(g.index)))
        sink.add(g._replace(g=_as(g.g, node)))
        return
    g = _as(rules.value(g), node)
    if sink is None:
        # (a node of width 1 gets one entry, which each vector of lanes adds its sum into)
        sink = body.sinks[node] = rules.Spread(
            _runtime.ad_class(node), _runtime.ad_size(node), len(g))
    sink.add(g)


def traverse(starts, backward, toward_inputs, flags, since=0):
    """Propagates over the nodes that nodes `starts` reach (toward the inputs, or toward
    what is computed from them), backward or forward. Inside the body of a symbolic loop
    being recorded (or from serial number `since` on), only the nodes made in the body
    propagate: those from outside that it reaches are seeds (forward mode: their tangents
    as the enclosing traversal left them) or receive gradients through sinks (backward)."""
    body = in_body()
    if body is None and _runtime.recording_depth():
        raise NotImplementedError(
            'pbc: derivatives propagated inside a symbolic call are not supported yet: call '
            "in evaluated mode (mode='evaluated')")
    if body is not None:
        since = max(since, body.serial)
    order = _runtime.ad_order(list(starts), toward_inputs, since)
    inside = set(order)
    propagated = set()             # nodes whose gradient was passed on
    edges = []                     # (node, operand) traversed
    boundary = _runtime.ad_boundary() if not since else None
    postpone = boundary if backward else None
    fed = _fed(order, inside, backward) if flags & ADFlag.ClearVertices else frozenset()
    # (marked gradients, ad_mark_evaluate, are evaluated where kernels launch before the
    # end: otherwise each would compute again all that the gradients before it fuse; where
    # none launch, one kernel at the end computes each once, and evaluating them would
    # only hold them all in memory: 16 iterations at 10^6 lanes, 72 -> 132 MiB, 1.8x time)
    evaluating = backward and any(_runtime.ad_rule_of(n) in LAUNCHING for n in order)
    read_by = {}                   # custom op node -> its outputs whose gradients it reads

    def passed_on(n):
        # (backward: n's gradient reached its operands, and nothing reads it after: cleared
        # now, as _clear would at the end, and what it held with it, an evaluated gradient
        # or an expression reading one, rather than every iteration's at the end)
        if n in fed and flags & ADFlag.ClearInterior and (
                boundary is None or _runtime.ad_serial_of(n) >= boundary.serial):
            _runtime.ad_set_grad(n, None)

    for n in (reversed(order) if backward else order):
        if since and _runtime.ad_serial_of(n) < since:
            continue
        srcs = [s if s in inside else 0 for s in _runtime.ad_sources(n)]
        if not any(srcs):
            continue
        if postpone is not None and _runtime.ad_serial_of(n) < postpone.serial:
            if _runtime.ad_grad(n) is not None:
                postpone.postpone(n)           # continued when the isolation scope ends
            continue            # (a custom op's node holds none: its outputs were postponed)
        edges += [(n, k) for k, s in enumerate(srcs) if s]
        if _runtime.ad_rule_of(n) == CUSTOM:
            carrying = [] if backward else [s for s in srcs
                                            if s and _runtime.ad_grad(s) is not None]
            op = _runtime.ad_view(n).payload
            if (backward or carrying) and not _closed(op) and op._propagate(backward):
                propagated.update(carrying)
            for out in read_by.pop(n, ()):
                passed_on(out)
            continue
        if backward:
            g = _runtime.ad_grad(n)
            if g is None:
                continue
            if evaluating and _runtime.ad_evaluates(n):
                evaluate.schedule(g)
            node = _runtime.ad_view(n)
            rule = rules.RULES[node.rule]
            if node.size == 1 and len(g) > 1 and not since and \
                    not isinstance(rule, rules.Elementwise):
                # (a sum deferred, see accumulate: a lane by lane rule may pass the lanes
                # on; others, and custom ops reading their outputs' gradients, need the sum)
                g = _total(g)
                _runtime.ad_set_grad(n, g)
            parts = rules.backward(rule, node, g, [bool(s) for s in srcs])
            passed = False
            for s, p in zip(srcs, parts):
                if s and p is not None:
                    accumulate(s, p, wide=bool(since), defer=not since)
                    passed = True
            propagated.add(n)
            if passed:
                passed_on(n)
            elif node.rule == CUSTOM_OUT:
                read_by.setdefault(srcs[0], []).append(n)
        else:
            tangents = [_runtime.ad_grad(s) if s else None for s in srcs]
            if all(t is None for t in tangents):
                continue
            tangents = [None if t is None else _as(t, n) for t in tangents]
            node = _runtime.ad_view(n)
            d = rules.forward(rules.RULES[node.rule], node, tangents)
            if d is not None:
                accumulate(n, d)
            propagated.update(s for s, t in zip(srcs, tangents) if t is not None)
    if backward and not since:
        _sum_lanes(order)
    if flags & ADFlag.ClearVertices:
        if boundary is not None:           # what is older than the boundary keeps its own
            propagated = {n for n in propagated
                          if _runtime.ad_serial_of(n) >= boundary.serial}
        _clear(propagated, fed, flags)
    if flags & ADFlag.ClearEdges:
        for n, k in edges:
            _runtime.ad_drop_source(n, k)


def _sum_lanes(nodes):
    """Width-1 nodes whose gradient a backward traversal left wide (accumulate: `defer`)
    get its sum over the lanes. Their kernels evaluate together, rather than one by one
    as each rule's contribution arrived: an evaluated call's targets each give their
    parameters' gradients, one kernel per target, which then compile and launch as one
    batch."""
    wide = [(n, g) for n in nodes if _runtime.ad_size(n) == 1
            for g in [_runtime.ad_grad(n)] if g is not None and len(g) > 1]
    if wide:
        evaluate.eval(*[g for _, g in wide])
        for n, g in wide:
            _runtime.ad_set_grad(n, _total(g))


def _fed(order, inside, backward):
    """The nodes of the traversal that receive derivatives from another of its nodes (in
    reverse mode: those with a consumer in it; in forward mode: those with an operand)."""
    if backward:
        return {s for n in order for s in _runtime.ad_sources(n) if s in inside}
    return {n for n in order if any(s in inside for s in _runtime.ad_sources(n))}


def _clear(propagated, fed, flags):
    """Dr.Jit's rule: of the nodes that passed their gradient on, ClearInterior clears those
    that received one from another node of the traversal, ClearInput the others (where it
    started: the seeds, the inputs of forward_to, the outputs of backward_to)."""
    for n in propagated:
        if flags & (ADFlag.ClearInterior if n in fed else ADFlag.ClearInput):
            _runtime.ad_set_grad(n, None)


def _as(t, node):
    """t converted to the type of node's values."""
    T = _runtime.ad_class(node)
    return t if type(t) is T else T(t)
