"""pbc.Loop: Dr.Jit 0.x's loop object, kept for old code.

    loop = pbc.Loop('name', state=lambda: (rng, i, result))
    while loop(i < n):
        ...

The body is inline code between two calls of `loop(cond)`, which pbc cannot run again, so
the state the lambda lists is the whole loop state. Like Dr.Jit 0.x, the loop runs

* symbolically (JitFlag.SymbolicLoops on, and no state variable carries derivatives):
  creating the loop swaps the state variables' values for the loop's phis in place, the
  body is recorded once, between the first and the second call of `loop(cond)`, and the
  second call ends the loop and gives the variables their values after it (a value that
  carries derivatives used in the body is an error that says to run it evaluated);
* or evaluated (the flag off, or the state carries derivatives: operations of an evaluated
  iteration are traced as any others, so derivatives follow them): every call of
  `loop(cond)` ends an iteration; lanes whose condition failed keep the values they had
  before it, side effects are masked to the iteration's lanes, until no lane is left.

Invariant: nothing outside the state changes in a way the loop cannot carry. An array that
is not state which the body changes in place (`y += 1`, y not in the lambda) changes as
Python says, on the lanes of each iteration, in an evaluated loop; a symbolic loop has
already recorded its state, so it raises an error instead, and every variable keeps the
value it had before the loop (pbc/regions.py sees the change). So does a body that binds a
state variable to an array from before the loop that is not state (the loop would give
that array the state's values).
"""

from . import _runtime
from ._runtime import ArrayBase
from .ad.api import grad_enabled
from .control import in_symbolic_code, loop_width
from .errors import StateError
from .evaluate import eval as _eval
from .flags import JitFlag, flag
from .reductions import any as _any
from .regions import Region, copy_of, will_change
from .routines import broadcast_lanes, select
from .tree import flatten


class Loop:
    """Dr.Jit 0.x's loop recorder (see the module's docstring). The state may be given in
    parts, as Dr.Jit 0.x allowed: `loop = pbc.Loop('name')`, `loop.put(lambda: (...))` any
    number of times, then `loop.init()`. `set_eval_stride` and `set_max_iterations` are
    accepted and change nothing."""

    def __init__(self, name='', state=None):
        self.name, self._funcs, self._ready, self._run = name, [], False, None
        self.max_iterations = None
        if state is not None:
            self.put(state)
            self.init()

    def put(self, state):
        """Adds `state()`'s variables to the loop state (before init())."""
        if self._ready:
            raise RuntimeError(f'pbc.Loop {self.name!r}: put() after the loop was initialized')
        if not callable(state):
            raise TypeError('pbc.Loop: give the state as lambda: (var, ...)')
        self._funcs.append(state)

    def state(self):
        return _state(self._funcs)

    def set_max_iterations(self, n):
        self.max_iterations = int(n)

    def set_eval_stride(self, n):
        pass

    def init(self):
        if self._ready:
            raise RuntimeError(f'pbc.Loop {self.name!r}: already initialized')
        self._ready = True
        arrays = list(flatten(self.state())[0])
        if not arrays:
            return                              # no JIT state: plain Python
        # (inside symbolic code nothing can be evaluated: a loop there is symbolic)
        evaluated = not in_symbolic_code() and (not flag(JitFlag.SymbolicLoops) or
                                                grad_enabled(arrays))
        self._run = (_Evaluated if evaluated else _Symbolic)(self, arrays)

    def __call__(self, cond):
        if not self._ready:
            raise RuntimeError(f'pbc.Loop {self.name!r}: give its state (state=, or put() and '
                               'init()) before the loop')
        if self._run is None:                   # plain Python, or the loop has ended
            return bool(cond)
        run, self._run = self._run, None        # (an error ends it: see _Run.abort)
        if run.step(cond):
            self._run = run
            return True
        return False

    def __del__(self):
        # An exception in the body leaves the loop unfinished: discard it when the loop
        # object goes away, so that later code is not recorded into it.
        run = getattr(self, '_run', None)
        if run is not None and _runtime is not None:
            try:
                run.abort()
            except RuntimeError:
                pass


class _Run:
    """A loop being run: its state arrays as they were when it began (`start`, the objects;
    `before`, their values), and the region that sees the arrays of others that an
    iteration changes in place."""

    def __init__(self, loop, arrays):
        # (not the Loop itself: a cycle would keep an unfinished loop from going away)
        self.name, self.funcs, self.start = loop.name, loop._funcs, arrays
        self.before = [copy_of(a) for a in arrays]
        self.born = _runtime.arrays_made_so_far()
        self.region, self.aborted = None, False
        self.outside = {}       # id -> (array of others the loop changed, its value before)
        # (the body changes the state in place, in a region of its own: a region around the
        # loop learns it now)
        will_change(arrays)

    def enter(self, own):
        self.region = Region(own)
        self.region.discard = self.abort    # (a region around the loop that ends first)
        self.region.__enter__()

    def leave(self):
        """The arrays of others that the iteration changed, back at their old values, with
        their values at its end."""
        region, self.region = self.region, None
        region.discard = None
        region.__exit__(None, None, None)
        return list(region.changed.values())

    def state(self):
        return _state(self.funcs)

    def state_now(self):
        """The state's arrays as the body leaves them; raises (ending the loop) if the body
        changed the state's structure or bound a name to an array from before the loop."""
        now = list(flatten(self.state())[0])
        starting = {id(a) for a in self.start}
        if len(now) != len(self.start):
            self.fail(TypeError(f'pbc.Loop {self.name!r}: the loop body changes the '
                                'structure of its state'))
        if any(a._birth <= self.born and id(a) not in starting for a in now):
            self.fail(StateError(
                f'pbc.Loop {self.name!r}: the loop body binds a state variable to an '
                'array from before the loop that is not part of its state (the loop would '
                'change that array too): bind it to a copy, e.g. x = Float(y)'))
        return now

    def fail(self, error):
        self.abort()
        raise error

    def abort(self):
        """Ends the loop undone: every array it changed gets its value from before it.
        (Once: a region around the loop may have ended it before the loop object goes.)"""
        if self.aborted:
            return
        self.aborted = True
        self.stop()
        if self.region is not None:
            self.leave()
        for x, b in self.outside.values():
            x._assign(b)
        for a, b in zip(self.start, self.before):
            a._assign(b)


class _Symbolic(_Run):
    def __init__(self, loop, arrays):
        super().__init__(loop, arrays)
        width = loop_width(arrays, 'Loop', ())
        # (one loop variable per object: a state that names an object twice, `z = lst[0]`
        # before the loop, changes it once)
        self.objects = list({id(a): a for a in arrays}.values())
        self.id, self.phis = _runtime.loop_begin([a.index for a in self.objects], width,
                                                 arrays[0]._backend_code)
        for a, p in zip(self.objects, self.phis):
            a._set_index(p)
            _runtime.dec_ref(p)
        self.cond = False
        self.enter(arrays)

    def step(self, cond):
        if not self.cond:                      # the first call: the loop's condition
            if not isinstance(cond, ArrayBase):
                self.fail(TypeError('pbc.Loop: the condition must be a Bool array'))
            _runtime.loop_cond(self.id, cond)
            self.cond = True
            return True
        changed = self.leave()                 # the second: the body has run
        now = self.state_now()
        if changed:
            self.fail(StateError(
                f'pbc.Loop {self.name!r}: the loop body changes in place '
                f'{_describe(changed)} that is not part of the loop state, which a symbolic '
                'loop cannot carry: add it to the state (state=lambda: (...))'))
        # Each object's loop variable ends as the object its names are bound to now: the
        # same one for all of them (one recording is read through the object for each).
        ends = {}
        for a, b in zip(now, self.start):
            if ends.setdefault(id(b), a) is not a:
                self.fail(StateError(
                    f'pbc.Loop {self.name!r}: the loop body binds one of several state '
                    'variables that name one array to another array, which a symbolic loop '
                    'cannot follow: give the loop state a copy (y = Float(x)) instead'))
        ends = [ends[id(a)] for a in self.objects]
        outs = _runtime.loop_end(self.id, self.phis, [a.index for a in ends])
        self.id = None
        # Those objects take their values after the loop; an object from the start that
        # the body rebound gets back its value from before the loop (docs/semantics.md,
        # rules 4 and 8).
        before = {id(a): b for a, b in zip(self.start, self.before)}
        for a, end, o in zip(self.objects, ends, outs):
            end._set_index(o)
            if end is not a:
                a._assign(before[id(a)])
        for o in outs:
            _runtime.dec_ref(o)
        return False

    def stop(self):
        """Discards the recording (abort)."""
        if self.id is not None:
            _runtime.loop_abort(self.id)
            self.id = None


class _Evaluated(_Run):
    def __init__(self, loop, arrays):
        super().__init__(loop, arrays)
        self.active = None

    def step(self, cond):
        if self.active is not None:
            self.end_iteration()
        if not isinstance(cond, ArrayBase):
            self.fail(TypeError('pbc.Loop: the condition must be a Bool array'))
        outer = _runtime.mask_top(type(cond))
        c = cond if outer is None else cond & outer
        c = c if self.active is None else c & self.active
        arrays = list(flatten(self.state())[0])
        if self.active is None:
            # (as wide as a symbolic loop's: the state of one lane grows to the loop's width)
            width = loop_width(arrays + [c], 'Loop', ())
            for a in arrays:
                if len(a) != width:
                    a._assign(broadcast_lanes(a, width))
        _eval(c, arrays, [x for x, _ in self.outside.values()])
        if not _any(c)[0]:
            return False
        # (the iteration's lanes: where the loop goes on, the values it starts from)
        self.active, self.values = c, [copy_of(a) for a in arrays]
        _runtime.mask_push(c)
        # (the state too is seen as arrays from outside: the lanes not in the iteration keep
        # what the body changes in place, the state's objects before it rebinds them too)
        self.enter(())
        return True

    def end_iteration(self):
        """Lanes that were not in the iteration get back the values they had before it."""
        _runtime.mask_pop()
        c = self.active
        for x, end in self.leave():
            self.outside.setdefault(id(x), (x, copy_of(x)))
            x._assign(select(c, end, x))
        for a, b in zip(self.state_now(), self.values):
            if a.index != b.index:
                a._assign(select(c, a, b))

    def stop(self):
        """Gives back the iteration's mask, if one runs (abort)."""
        if self.region is not None:
            _runtime.mask_pop()


def _state(funcs):
    """The loop state: what the state lambdas give now."""
    return tuple(f() for f in funcs)


def _describe(changed):
    x = changed[0][0]
    more = f' (and {len(changed) - 1} more)' if len(changed) > 1 else ''
    return f'an array ({type(x).__name__} of width {len(x)}){more}'
