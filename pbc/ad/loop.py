"""Derivatives of symbolic loops. Loops are isolation boundaries (the paper's section 4): the
derivative of a symbolic loop is code of another symbolic loop, not a kernel per iteration.

While some node lives, a symbolic loop's body is recorded in an AD scope local to it: its
float state gets nodes of its own, and what it computes from them and from arrays read
from outside carries derivatives there. Those arrays' nodes are the loop's implicit inputs.
The loop's results leave without the body's nodes: where the state or the implicit inputs
carry derivatives, one node of the AD graph stands for the loop, from their nodes to its
float results.

Forward mode records a second loop whose state also holds the tangents of the float state.
Its body runs the user's body on state that carries derivatives, in an AD scope local to
the body being recorded, and a forward traversal inside the body, from that state and the
implicit inputs (whose tangents the enclosing traversal computed), gives the new tangents:
the derivative code is code of that loop.

Reverse mode needs the loop's states in reverse order, which a symbolic loop does not keep.
Given pbc.hint(..., max_iterations=N), the loop runs again storing its state at every
iteration, then a loop runs from each lane's last iteration back: it runs the body on the
stored state and propagates the gradient backward through that one iteration; what
reaches the implicit inputs goes through sinks (propagate._Body). Without max_iterations it
is an error naming the loop's line.

The derivative loops run the body again later, when the traversal reaches the loop: with
what it read from enclosing scopes restored (local.Closures), and without its side
effects.
"""

import os
import sys

from .. import _runtime, tree
from ..state import working_copy
from . import propagate
from .local import (
    Closures,
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
from .propagate import ADFlag, accumulate, caller_resumes, traverse

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _user_site():
    """'file:line' of the innermost caller outside pbc (the loop's line in user code)."""
    f = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_PACKAGE):
        f = f.f_back
    return f'{f.f_code.co_filename}:{f.f_lineno}' if f is not None else 'an unknown line'


def tracked():
    """Whether a loop recorded now may need a node: some node lives, and the innermost
    scope neither disables every derivative (suspend_grad()) nor collects them (a custom
    op's eval, which notes what the loop's body reads as the op's inputs)."""
    return _runtime.ad_live_count() != 0 and not _runtime.ad_enables_nothing_here() \
        and not _runtime.ad_collecting()


def symbolic_loop(state, cond, body, record, max_iterations):
    """The result of `record(cond, body)`, which records symbolic loop `state = body(*state)
    while cond(*state)`, with a node for the loop where its inputs carry derivatives."""
    leaves, build = tree.flatten(state)
    # Copies made here carry the derivatives that this scope enables (the loop's inputs),
    # and keep those nodes alive while the recording rebinds the caller's arrays.
    held = _per_object(leaves, lambda a: type(a)(a))
    inputs = [_runtime.ad_index(a) if is_float(a) else 0 for a in held]
    # The state that carries derivatives: what does before the loop, and what gets them
    # in an iteration (from arrays read from outside, or from other such state), found by
    # recording again until no more does.
    diff = {i for i, n in enumerate(inputs) if n}
    for _ in range(len(leaves) + 1):
        primal = _PrimalBody(body, len(state), diff)
        try:
            result = record(_LocalCondition(cond), primal)
            break
        except _MoreState as more:
            diff |= more.args[0]
    else:
        raise RuntimeError('pbc: internal error: the derivatives of a loop do not settle')
    # The arrays it scatter-adds into (closure arrays: the same objects when the body runs
    # again), and the nodes they had before: their new values are the loop's results too,
    # but where the loop is inside another body (then the outermost's).
    nested = nested_scatters(primal.targets)
    targets = [] if nested else list(primal.targets.values())
    before = [_runtime.ad_index(t) for t in targets]
    sources = list(dict.fromkeys([n for n in inputs if n] + primal.implicit +
                                 [n for n in before if n]))
    outs = tree.flatten(result)[0]
    # Results without a node are the loop's (a result that is the caller's own array, as
    # the body left it, keeps its derivatives).
    linked = [i for i, a in enumerate(outs) if is_float(a) and _runtime.ad_index(a) == 0]
    if not sources or not (linked or targets or nested):
        return result
    # (an object under several names stays one where the loop kept it one: a body that
    # rebinds one of the names gets new objects, rule 4 of docs/semantics.md)
    values = _per_object(held, _runtime.ad_detached, [id(a) for a in outs])
    op = LoopOp(cond, body, len(state), build, values,
                max(len(a) for a in outs), inputs, primal.implicit, max_iterations,
                _user_site(), Closures(cond, body, writes=primal.targets))
    if primal.targets:
        # (the lanes its scatters wrote: also those an enclosing conditional, or an early
        # return, left on; the derivative loops run outside it)
        op.mask = _runtime.mask_top(_runtime.class_for(outs[0] if outs else held[0], 'bool'))
    weak = link(op, sources, [outs[i] for i in linked], targets, nested)
    op.outputs = dict(zip(linked, weak))
    op.targets = {id(t): (n, w, type(t), len(t))
                  for t, n, w in zip(targets, before, weak[len(linked):])}
    return result


def _per_object(arrays, copy, ends=None):
    """copy(a) for each of `arrays`, made once per object (and per `ends` entry, where
    given): an object the state holds under several names (`o.p = v[2]`, then `o.p -= 1`
    in the body changes v[2]) stays one object in the derivative loops' state too."""
    made, keys = {}, [(id(a), e) for a, e in zip(arrays, ends or [None] * len(arrays))]
    for a, key in zip(arrays, keys):
        if key not in made:
            made[key] = copy(a)
    return [made[key] for key in keys]


class _MoreState(BaseException):
    """More of a loop's state carries derivatives than its recording assumed: record again.
    (Not an Exception: it passes through the handlers of the user's errors.)"""


class _LocalCondition:
    """A loop's condition, run in a scope local to the body being recorded (it computes no
    derivatives, but may compute floats from arrays that carry them)."""

    def __init__(self, cond):
        self.cond = cond

    def __call__(self, *state):
        local_scope()
        try:
            return self.cond(*state)
        finally:
            _runtime.ad_scope_pop()


class _LocalBody:
    """A loop body run in an AD scope local to the body being recorded: the float state
    that carries derivatives (`diff`, flatten order) gets nodes of its own, so that what
    the body computes from it, and from arrays from outside that carry derivatives, carries
    them there; its side effects (scatters, prints) are recorded (`effects`) or not.
    Subclasses say what to do before and after the body (`seed`, `done`)."""

    effects = True
    reads_inputs = True         # (whether `done` reads the derivatives of `leaves`)

    def __init__(self, body, size, diff):
        self.body, self.size, self.diff = body, size, diff

    @property
    def _pbc_body(self):
        """The user's body function (what identifies the loop, see control._invariant_key)."""
        return getattr(self.body, '_pbc_body', self.body)

    def scope(self):
        return local_scope()                    # (the enclosing scope's set Omega)

    def seed(self, leaves, extra):
        pass

    def run(self, state, extra=None):
        scope = self.scope()
        try:
            leaves = tree.flatten(state)[0]
            enable(leaves, self.diff)
            self.seed(leaves, extra)
            # (self.noted: what the body scatter-adds with derivatives; the derivative code
            # that `done` records is the body's too, where the loops and calls nested in it
            # record theirs)
            # (a derivative's body gets copies: what it changes in place (`r *= x`) must
            # not change `leaves`, the inputs whose derivatives `done` reads)
            if self.reads_inputs:
                state = working_copy(state)
            with noting_scatters() as self.noted:
                new = _as_state(run_body(self.body, state, self.effects), self.size)
                return self.done(leaves, new, scope.serial)
        finally:
            _runtime.ad_scope_pop()


def _as_state(new, size):
    """A loop body's result as the tuple of its state (one variable may come alone)."""
    return (new,) if size == 1 and not isinstance(new, tuple) else tuple(new)


class _PrimalBody(_LocalBody):
    """The body of the loop itself: it notes the nodes from outside that it reads (its
    implicit inputs), and its results leave without their nodes (the loop's node stands
    for them). A float result that carries derivatives where its state did not means the
    loop's derivatives reach that state in the next iteration (_MoreState)."""

    reads_inputs = False        # (the loop's own recording: its state is the loop's)

    def __init__(self, body, size, diff):
        super().__init__(body, size, diff)
        self.implicit, self.targets = [], {}

    def __call__(self, *state):
        return self.run(state)

    def done(self, leaves, new, since):
        out = tree.flatten(new)[0]
        nodes = result_nodes(out)
        more = {i for i, n in enumerate(nodes) if n and i not in self.diff}
        if more:
            raise _MoreState(more)
        self.implicit = sorted(set(leave_scope(out, nodes, since)) |
                               outer_values(self.noted.scatters, since))
        # (the body cannot read them: the runtime refuses reads and writes of one array
        # in a loop's body)
        self.targets = dict(self.noted.below)
        return new


class _TangentBody(_LocalBody):
    """The body of a loop's forward-mode derivative, (state, tangents) -> (state, tangents):
    the state's float arrays (`diff`, flatten order) get their tangents, and a forward
    traversal from them and the loop's implicit inputs (whose tangents the enclosing
    traversal computed) gives those of the new state. Side effects are the loop's own."""

    effects = False

    def __init__(self, op, diff):
        super().__init__(op.body, op.size, diff)
        self.op = op

    def scope(self):
        # (everything: only the seeds carry tangents, and they are what the loop's scope
        # enabled)
        return local_scope(inherit=False)

    def __call__(self, x, t):
        return self.run(x, t)

    def seed(self, leaves, tangents):
        self.seeds = list(self.op.implicit) + seed_tangents(leaves, self.diff, tangents)

    def done(self, leaves, new, since):
        traverse(self.seeds, False, False, ADFlag.ClearNone, since=since)
        out, build = tree.flatten(new)
        tangents = [tangent_or_zero(out[i], since, self.seeds) for i in self.diff]
        # (the loop's scatter-adds, of the values' tangents into the targets')
        add_tangents(self.noted.scatters, self.op.tangent_targets, since, self.seeds,
                     self.op.lanes)
        return build(_per_object(out, _runtime.ad_detached)), tangents


class LoopOp:
    """The AD graph's node for one symbolic loop (a custom op's node: traversals call
    _propagate). It holds the loop's inputs (values, not derivatives) and, weakly, the nodes
    of its results: never its results themselves."""

    def __init__(self, cond, body, size, build, values, width, inputs, implicit,
                 max_iterations, site, closures):
        self.cond, self.body, self.size = cond, body, size
        self.build = tree.without_arrays(build)
        self.closures = closures        # what cond and body read, as they read it
        self.values = values            # the state's arrays, in flatten order
        # (per position, the first that holds the same object: one object under several
        # names has one gradient, which the first position carries)
        first = {}
        self.leaders = [first.setdefault(id(a), i) for i, a in enumerate(values)]
        self.width = width              # the loop's
        self.inputs = inputs            # their nodes (0: none)
        self.implicit = implicit        # nodes of what the body reads besides its state
        self.max_iterations, self.site = max_iterations, site
        self.outputs = {}               # state index -> (node, serial) of its result
        # id of an array the body scatter-adds into -> (its node before the loop, (node,
        # serial) of its value after, its type, its width)
        self.targets = {}
        self.mask = None                # the lanes an enclosing conditional left on
        self.tangent_targets = {}       # (forward mode, while recording: their tangents)
        self.nested = None              # (NestedScatters: inside another body, they route)

    def lanes(self, active):
        """A scatter's lanes, `active` in a derivative loop, as the loop itself wrote them."""
        return active if self.mask is None else self.mask & active

    def _propagate(self, backward):
        if not backward:
            self._forward()
            return True
        grads = {i: _runtime.ad_grad(n) for i, (n, s) in self.outputs.items()
                 if _runtime.ad_alive(n, s)}
        grads = {i: g for i, g in grads.items() if g is not None}
        scattered = with_routed(scattered_gradients(self.targets), self.nested)
        if not grads and not scattered:
            return False
        if not self.max_iterations or self.max_iterations < 1:
            raise NotImplementedError(
                f'pbc: reverse-mode derivatives through the symbolic loop at {self.site} '
                'need its states in reverse order, which a symbolic loop does not keep: give '
                'an upper bound on its iterations (pbc.hint(cond, max_iterations=N), or '
                "while_loop(..., max_iterations=N)) to store them, run it in evaluated mode "
                "(pbc.hint(cond, mode='evaluated')), or compute forward-mode derivatives")
        _reverse(self, grads, scattered)
        return True

    def _forward(self):
        from ..control import while_loop
        from .scopes import suspend_grad
        diff = [i for i, a in enumerate(self.values) if is_float(a)]
        tangents = []
        for i in diff:
            g = _runtime.ad_grad(self.inputs[i]) if self.inputs[i] else None
            tangents.append(g if g is not None else
                            _runtime.literal(type(self.values[i]), 0, 1))
        body = _TangentBody(self, diff)
        # The tangents of the arrays the body scatter-adds into: theirs before the loop,
        # to which the tangent loop adds those of the values.
        own = scattered_into(self.targets)
        self.tangent_targets = with_routed(own, self.nested)
        # (this loop needs no node: its body makes its own)
        try:
            with suspend_grad(), self.closures, routing(own, self.mask):
                _, final = while_loop((self.build(list(self.values)), tangents),
                                      lambda x, t: self.cond(*x), body, mode='symbolic',
                                      labels=('state', 'tangents'))
        finally:
            self.tangent_targets = {}
        for k, i in enumerate(diff):
            node, serial = self.outputs.get(i, (0, 0))
            if node and _runtime.ad_alive(node, serial):
                accumulate(node, final[k])
        for k, t in own.items():
            accumulate(self.targets[k][1][0], t)


class _AdjointBody(_LocalBody):
    """One step of a loop's reverse-mode derivative, run backwards: (k, gradients of the
    state, gradients gathered so far) -> the same one iteration earlier. It reads iteration
    k - 1's state from the stored trajectory, runs the body on it, and a backward traversal
    inside the body from the new state (holding the gradients) gives those of the state
    before. The implicit inputs' gradients gather in sinks (propagate._Body), but those of
    the implicit inputs made in an enclosing body being recorded (`local`: the loop is
    nested), which gather in the loop's state. Side effects are the loop's."""

    effects = False

    def __init__(self, op, diff, states, scattered, local):
        super().__init__(op.body, op.size, diff)
        self.op, self.states, self.local = op, states, local
        self.scattered = scattered      # gradients of the arrays it scatter-adds into

    def scope(self):
        return local_scope(inherit=False)

    def __call__(self, k, grads, gathered):
        k = k - 1
        stored = self.states.read(k)
        state = self.op.build([stored[j] for j in self.op.leaders])
        grads, more = self.run(state, grads)
        return k, grads, [a + b for a, b in zip(gathered, more)]

    def seed(self, leaves, grads):
        self.grads = grads

    def done(self, leaves, new, since):
        out = tree.flatten(new)[0]
        # (a value scatter-added into an array: the array's gradient at its entries; and
        # the loops and calls nested in the body that scatter-add, from their tokens)
        values, more = gathered_gradients(self.noted.scatters, self.scattered, self.op.lanes)
        roots, zeros = seed_roots(self.noted)
        results = [out[i] for i in self.diff] + values + roots
        grads = list(self.grads) + more + zeros
        body = propagate.in_body()
        body.collect = dict.fromkeys(self.local)
        propagate_back(results, grads, since)
        gathered = [g if g is not None else _runtime.literal(_runtime.ad_class(n), 0, 1)
                    for n, g in body.collect.items()]
        # (an object under several names: its gradient once, at the first)
        leaders = self.op.leaders
        return [grad_or_zero(leaves[i], since) if leaders[i] == i else
                _runtime.literal(type(leaves[i]), 0, 1) for i in self.diff], gathered


class _StatesInMemory:
    """A loop's states, iteration by iteration, in arrays of `n` rows of the loop's width
    (scatters and gathers: the loop that writes them is a kernel of its own)."""

    def __init__(self, values, width, n):
        from ..routines import arange, zeros
        self.rows = [zeros(type(a), n * width) for a in values]
        self.width, self.lanes = width, arange(_runtime.class_for(values[0], 'uint32'), width)

    def kept(self):
        return []

    def keep(self, kept):
        pass

    def write(self, leaves, k):
        from ..routines import scatter
        for row, a in zip(self.rows, leaves):
            scatter(row, a, k * self.width + self.lanes)

    def read(self, k):
        from ..routines import gather
        return [gather(type(row), row, k * self.width + self.lanes) for row in self.rows]


class _StatesInLanes:
    """A nested loop's states, iteration by iteration, each lane's in `n` values of its
    own (pbc.Local: state of the loop that writes them, and read in the same kernel). An
    access selects among the n entries: meant for short inner loops."""

    def __init__(self, values, n):
        from ..local import Local
        self.entries = [Local(dtype=type(a), size=n, value=a) for a in values]

    def kept(self):
        return self.entries

    def keep(self, kept):
        self.entries = list(kept)

    def write(self, leaves, k):
        for e, a in zip(self.entries, leaves):
            e.write(a, k)

    def read(self, k):
        return [e.read(k) for e in self.entries]


def _reverse(op, grads, scattered):
    """Reverse mode through loop `op` (gradients `grads` of its results, by state index,
    and `scattered` of the arrays it scatter-adds into, by id): the loop runs again,
    storing its state at every iteration (at most max_iterations), then a loop runs its
    body backwards over the stored states (_AdjointBody). Inside the body of another
    symbolic loop being recorded, both are code of that body: the states are kept in the
    lanes, and the gradients of the implicit inputs made in that body are loop state."""
    from ..control import while_loop
    from ..device_print import print as device_print
    from ..reductions import any as any_lane
    from ..routines import select
    from .scopes import suspend_grad
    values, width, n = op.values, op.width, op.max_iterations
    enclosing = propagate.in_body()
    if _runtime.recording_depth() and enclosing is None:
        raise NotImplementedError(
            f'pbc: reverse-mode derivatives through the symbolic loop at {op.site}, inside '
            'symbolic code other than a loop\'s body or a call\'s target, are not supported')
    diff = [i for i, a in enumerate(values) if is_float(a)]
    UInt32 = _runtime.class_for(values[0], 'uint32')
    states = _StatesInMemory(values, width, n) if enclosing is None else \
        _StatesInLanes(values, n)
    # (made in a body being recorded: that of an enclosing loop's derivative, or of one
    # around it, whose own code must add their gradients, not this loop's)
    local = [] if enclosing is None else \
        [m for m in op.implicit if _runtime.ad_serial_of(m) >= propagate.outermost_serial()]

    def store(x, k, kept):
        states.keep(kept)
        states.write(tree.flatten(x)[0], k)
        return _as_state(run_body(op.body, x, False), op.size), k + 1, states.kept()

    seeds = [grads[i] if i in grads else _runtime.literal(type(values[i]), 0, 1)
             for i in diff]
    with op.closures, suspend_grad():
        x, k, kept = while_loop((op.build(list(values)), UInt32(0), states.kept()),
                                lambda x, k, kept: op.cond(*x) & (k < n), store,
                                mode='symbolic')
        states.keep(kept)
        over = op.cond(*x) & (k >= n)
        message = (f'pbc: reverse-mode derivatives through the symbolic loop at {op.site}: '
                   f'it runs more than max_iterations={n} iterations on some lanes')
        if enclosing is None:
            if any_lane(over)[0]:
                raise RuntimeError(message)
        else:
            # (known only once the kernel runs: those lanes' derivatives are NaN, and the
            # kernel reports them)
            device_print(message + ' ({thread_id}): their derivatives are NaN', active=over,
                         file=sys.stderr)
            seeds = [select(over, float('nan'), s) for s in seeds]
        body = _AdjointBody(op, diff, states, scattered, local)
        zero = [_runtime.literal(_runtime.ad_class(m), 0, 1) for m in local]
        # (the implicit inputs' gradients leave the loop through their sinks, and the
        # traversal in progress goes on from them)
        # (and the arrays' gradients reach the loops and calls nested in it)
        with caller_resumes(), routing(scattered, op.mask):
            _, out, gathered = while_loop((k, seeds, zero), lambda k, g, h: k > 0, body,
                                          mode='symbolic')
    for i, g in zip(diff, out):
        if op.inputs[i]:
            accumulate(op.inputs[i], g)
    for m, g in zip(local, gathered):
        accumulate(m, g)
    for k, g in scattered.items():                # (a scatter-add passes it on as it is)
        before = op.targets[k][0] if k in op.targets else 0       # (0: routed)
        if before:
            accumulate(before, g)
