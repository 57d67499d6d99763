"""Polymorphism: pbc.Object instances, arrays of pointers to them (Ptr[Base]), and calls
that run each lane's own instance's method: pbc.dispatch, pbc.switch, ptrs.method(...).

Symbolic calls (JitFlag.SymbolicCalls, the default) trace each reachable target once under
the mask of its lanes, within the caller's kernel; evaluated calls find each target's lanes
(one partition pass), run one kernel per target on just those lanes and scatter the
results back (the paper's wavefront baseline). Both give the same results; null or
masked-off lanes do nothing and return zeros.
"""

import dataclasses
import functools
import heapq
import inspect
import itertools
import types
import weakref

import numpy as np

from . import _runtime, call_effects
from ._runtime import ArrayBase
from .ad import call as ad_call
from .ad import propagate as ad_propagate
from .errors import SizeError, StateError, call_user
from .evaluate import eval as _eval
from .evaluate import eval_pending
from .flags import JitFlag, flag
from .regions import copy_of
from .routines import broadcast_lanes, full, gather, select, zeros
from .state import per_object, working_copy
from .tree import children, flatten, mismatch, rebuild

_instances = {}                 # id -> weak reference to the registered instance
_ids = itertools.count(1)       # 0 is the null pointer
_free_ids = []                  # ids of deleted instances, reused smallest first (a heap)
# Tables indexed by instance id (closure data slots, which lanes call a target) are used
# up to this id; ids are reused, so they stay below the number of live instances.
TABLE_IDS = 1 << 16
_active_calls = []              # (target key, name) of the symbolic calls being traced


class Object:
    """Base of classes whose instances JIT code can call through pointer arrays. Each
    instance gets a 32-bit id (`pbc_id`) for as long as it lives."""

    def __new__(cls, *args, **kwargs):
        obj = super().__new__(cls)
        i = heapq.heappop(_free_ids) if _free_ids else next(_ids)
        object.__setattr__(obj, '_pbc_id', i)
        _instances[i] = weakref.ref(obj)
        weakref.finalize(obj, _unregister, i)
        return obj

    @property
    def pbc_id(self):
        return self._pbc_id


def _unregister(i):
    _instances.pop(i, None)
    heapq.heappush(_free_ids, i)


def instances(base):
    """The live registered instances of class `base` (and its subclasses), by id."""
    out = []
    for i, ref in list(_instances.items()):
        obj = ref()
        if obj is not None and isinstance(obj, base):
            out.append((i, obj))
    return sorted(out, key=lambda x: x[0])


def instance(i):
    ref = _instances.get(int(i))
    return ref() if ref is not None else None


class PtrBase:
    """A JIT array of pointers to instances of `Base` (ids as UInt32; 0 is null).
    Backends bind UInt32 and Bool; Ptr[Base] makes the class for one base."""
    Base = Object
    UInt32 = Bool = None
    # The instances it was made from: an array of pointers keeps them alive, as Dr.Jit's
    # does (an array made from ids, `Ptr[Base](UInt32(...))`, holds none).
    __slots__ = ('index', '_refs')

    def __init__(self, value=None):
        U = self.UInt32
        self._refs = ()
        if value is None:
            self.index = U(0)
        elif isinstance(value, PtrBase):
            self.index, self._refs = U(value.index), value._refs
        elif isinstance(value, ArrayBase):
            self.index = U(value)
        elif isinstance(value, (list, tuple)):
            self.index = U(np.array([self._id_of(v) for v in value], dtype=np.uint32))
            self._refs = tuple({id(v): v for v in value if v is not None}.values())
        else:
            self.index = U(self._id_of(value))
            self._refs = () if value is None else (value,)

    def _id_of(self, v):
        if v is None:
            return 0
        if not isinstance(v, self.Base):
            raise TypeError(f'pbc: {type(v).__name__} is not a {self.Base.__name__} (a '
                            'pbc.Object subclass): cannot point to it')
        return v.pbc_id

    @classmethod
    def _wrap(cls, index, *sources):
        out = object.__new__(cls)
        out.index = index
        out._refs = tuple({id(r): r for s in sources for r in s._refs}.values())
        return out

    def __class_getitem__(cls, base):
        key = (cls, base)
        ptr = _ptr_classes.get(key)
        if ptr is None:
            if not (isinstance(base, type) and issubclass(base, Object)):
                raise TypeError('pbc: Ptr[...] needs a pbc.Object subclass')
            ptr = _ptr_classes[key] = type(f'Ptr[{base.__name__}]', (cls,), {
                'Base': base, '__slots__': ()})
        return ptr

    def __len__(self):
        return len(self.index)

    def __eq__(self, other):
        return self.index == (other.index if isinstance(other, PtrBase)
                              else self._id_of(other))

    def __ne__(self, other):
        return ~(self == other)

    __hash__ = None

    def _pbc_children(self):
        return [self.index]

    def _pbc_rebuild(self, parts):
        return self._wrap(parts[0], self)

    def _pbc_assign(self, parts):
        self.index = parts[0]

    @classmethod
    def _pbc_select(cls, m, t, f):
        return cls._wrap(select(m, t.index, f.index), t, f)

    @classmethod
    def _pbc_gather(cls, source, index, active=True):
        return cls._wrap(gather(cls.UInt32, source.index, index, active), source)

    def __getattr__(self, name):
        # The method may be declared by the base class or only by its subclasses.
        if name.startswith('__') or not (
                callable(getattr(self.Base, name, None))
                or any(callable(getattr(obj, name, None)) for _, obj in instances(self.Base))):
            raise AttributeError(f'{self.Base.__name__} has no method {name!r} to dispatch')

        def method(*args, **kwargs):
            where = _split_mask(args, kwargs)[2] is not None and (
                'keyword' if 'active' in kwargs else 'last')
            return dispatch(self, functools.partial(_call_method, name, where), *args,
                            _name=name, _method=name, **kwargs)
        method.__name__ = name
        return method

    def __repr__(self):
        return f'{type(self).__name__}{self.index}'


_ptr_classes = {}


def make_ptr(flat, module_name):
    return type('Ptr', (PtrBase,), dict(UInt32=flat['UInt32'], Bool=flat['Bool'],
                                        __module__=module_name, __slots__=()))


# ---- calls ------------------------------------------------------------------------------------
def dispatch(ptrs, func, *args, mode=None, label=None, _name=None, _method=None, **kwargs):
    """func(instance, *args, **kwargs) for each lane's instance of `ptrs` (a Ptr array);
    null lanes give zeros. Targets: every live instance of the pointer's base class (for a
    method call, those that have the method; lanes pointing to others give zeros). A mask,
    as the `active` keyword or a trailing Bool argument (Dr.Jit's convention), turns lanes
    off: they run nothing and give zeros; the functions get True in its place."""
    if not isinstance(ptrs, PtrBase):
        raise TypeError('pbc.dispatch: the first argument must be a Ptr array')
    name = _name or getattr(func, '__name__', 'function')
    args, kwargs, mask = _split_mask(args, kwargs)
    targets = [(i, functools.partial(func, obj), obj) for i, obj in instances(ptrs.Base)
               if _method is None or callable(getattr(obj, _method, None))]
    return _call(ptrs.index, targets, (args, kwargs), mode, f'{ptrs.Base.__name__}.{name}',
                 mask)


def switch(index, targets, *args, mode=None, label=None, **kwargs):
    """targets[index](*args, **kwargs) for each lane; lanes whose index is out of range give
    zeros. A Python int index calls that one target directly. A mask, as the `active`
    keyword or a trailing Bool argument (Dr.Jit's convention), turns lanes off: they run
    nothing and give zeros (None for a Python index); the targets get True in its place."""
    args, kwargs, mask = _split_mask(args, kwargs)
    if isinstance(index, (int, np.integer)) and not isinstance(index, bool):
        if mask is not None and not isinstance(mask, (bool, np.bool_)):
            raise TypeError('pbc.switch(): with a Python index, the mask must be a Python '
                            'bool')
        if mask is False:
            return None
        return targets[index](*args, **kwargs)
    if not isinstance(index, ArrayBase) or index.Type not in ('uint32', 'int32'):
        raise TypeError('pbc.switch(): the index must be a UInt32 array or a Python int, not '
                        f'{type(index).__name__}')
    U = _runtime.class_for(index, 'uint32')
    keyed = [(k + 1, f, f) for k, f in enumerate(targets)]
    return _call(U(index) + 1, keyed, (args, kwargs), mode, 'switch', mask)


def _split_mask(args, kwargs):
    """(args, kwargs, mask): the mask is the `active` keyword, or else a trailing Bool array
    or Python bool among args; the functions called get True in its place."""
    if 'active' in kwargs:
        mask = kwargs['active']
        return args, {**kwargs, 'active': _true_like(mask)}, mask
    if args and (isinstance(args[-1], (bool, np.bool_)) or (
            isinstance(args[-1], ArrayBase) and args[-1].Type == 'bool')):
        return args[:-1] + (_true_like(args[-1]),), kwargs, args[-1]
    return args, kwargs, None


def _true_like(mask):
    return type(mask)(True) if isinstance(mask, ArrayBase) else True


def _call(selector, targets, args, mode, what, mask=None):
    """Runs target(*args[0], **args[1]) on the lanes where selector equals the target's key
    (keys are non-zero; 0 selects nothing) and `mask` holds, and merges the results."""
    if not targets:
        raise RuntimeError(f'pbc: {what}: nothing to call (no live instance or function); '
                           'instances are registered while they live, so keep them alive')
    if mode not in (None, 'symbolic', 'evaluated'):
        raise ValueError(f"pbc.dispatch: mode must be 'symbolic' or 'evaluated', not {mode!r}")
    if mode is None:
        mode = 'symbolic' if flag(JitFlag.SymbolicCalls) else 'evaluated'
    if mask is not None:
        if isinstance(mask, ArrayBase) and mask.Type != 'bool':
            raise TypeError(f'pbc: {what}: the mask must be a Bool array')
        selector = select(mask, selector, 0)        # masked lanes call nothing
    if mode == 'evaluated' and not _runtime.recording_depth():
        selector, flat, active, outer = _lanes(selector, args, what)
        # (without an outer mask, lanes with selector 0 select nothing already)
        keys = selector if outer is None else select(active, selector, 0)
        return _evaluated(keys, targets, args, flat, what)
    # (recorded again while its targets turn out to change more of the caller's than
    # their arguments in place: call_effects)
    cells, outside = _loop_variables_read(targets, flatten(args)[0])
    stored = set()
    for _ in range(MAX_RECORDINGS):
        try:
            return _symbolic_call(selector, targets, args, what, outside, sorted(stored),
                                  cells)
        except call_effects.MoreOutputs as more:
            # (an argument a target changes through a variable of an enclosing function:
            # the cell holds the target's copy of it)
            more.cells += call_effects.cells_passing(
                [fn for _, fn, _ in targets], more.outside, flatten(args)[0], what)
            outside += [x for x in more.outside if all(x is not o for o in outside)]
            stored |= more.stored
            cells += [c for c in more.cells if all(c is not o for o in cells)]
    raise RuntimeError(f'pbc: {what}: what its targets change does not settle')


def _loop_variables_read(targets, passed):
    """(cells, arrays): the cells of the targets' enclosing variables that hold arrays
    whose derivatives are made in a symbolic loop body (or call target) being recorded,
    the innermost or one around it (a variable of an outer loop, read by a call in an
    inner one), and such arrays in the containers (lists, Locals, ...) that enclosing
    variables hold, but for the call's arguments `passed`. The call takes them as
    arguments (call_effects.in_callers_place: the targets see the arrays through their
    copies, as arrays they change in place), so that their gradients leave the derivative
    call as its results do; read from the enclosing scope, they would go into sinks that
    the body's kernel reads after the call writes them."""
    if ad_propagate.in_body() is None or not _runtime.ad_live_count():
        return [], []
    first = ad_propagate.outermost_serial()

    def made_here(x):
        node = _runtime.ad_index(x)
        return node and _runtime.ad_serial_of(node) >= first

    cells, arrays, seen = [], [], {id(a) for a in passed}
    for _, fn, _ in targets:
        found, containers = call_effects.array_cells(fn)
        cells += [c for c in found if made_here(c.cell_contents) and
                  all(c is not o for o in cells)]
        for x in flatten(containers)[0]:
            if id(x) not in seen and made_here(x):
                seen.add(id(x))
                arrays.append(x)
    return cells, arrays


def _lanes(selector, args, what):
    """(selector as wide as the call, flatten() of args, the lanes that call something,
    the mask of the code around the call or None)."""
    positional, named = args
    if not named and all([isinstance(a, ArrayBase) for a in positional]):
        # (the common case: arrays only; flatten's general walk costs more than the call)
        flat = list(positional), lambda new: (tuple(new), {})
    else:
        flat = flatten(args)
    width = max([len(selector)] + [len(a) for a in flat[0]])
    for a in flat[0]:
        if len(a) not in (1, width):
            raise SizeError(f'pbc: {what}: some of the call arguments have incompatible sizes '
                            f'(encountered arrays of length {width} and {len(a)})')
    if len(selector) != width:
        selector = broadcast_lanes(selector, width)
    Bool = _runtime.class_for(selector, 'bool')
    outer = _runtime.mask_top(Bool)
    active = selector != 0 if outer is None else (selector != 0) & outer
    return selector, flat, active, outer


MAX_RECORDINGS = 64


def _symbolic_call(selector, targets, args, what, outside, stored, cells):
    """The symbolic call of `targets` on `args`, where they change in place the arrays
    `outside` (from enclosing scopes), store into the entries of args' containers at the
    positions `stored` or bind the variables of enclosing functions whose `cells` hold
    arrays to others (call_effects.in_callers_place)."""
    given, rebinds = args, [False] * len(cells)
    if outside or stored or cells:
        targets = [(key, functools.partial(call_effects.in_callers_place, fn, tuple(outside),
                                           stored, tuple(cells), rebinds, what), obj)
                   for key, fn, obj in targets]
        args = ((args, list(outside) + [cell.cell_contents for cell in cells]), {})
    selector, flat, active, _ = _lanes(selector, args, what)
    # (the caller's arguments, which variables of enclosing functions may hold too: there,
    # the targets see their copies of them; by id, as the call's node in the AD graph keeps
    # `record`, and the arguments may come to hold the call's results, `x += y` in a target:
    # a cycle through the AD graph, which no collector sees. The cells that a derivative
    # call reads hold what they held when the call was recorded, local.Closures: objects
    # alive together with these.)
    shown = [id(a) for a in (flatten(given)[0] if given is not args else flat[0])]
    # (also inside suspend_grad(): a target may propagate derivatives itself, in a local
    # resume_grad() scope)
    if _runtime.ad_live_count() and not _runtime.ad_collecting():
        tables = {}
        r = ad_call.symbolic_call(
            targets, flat,
            lambda t, f: _symbolic(selector, active, t, f, what, tables, shown),
            lambda a, new: a._assign(select(_calling(selector, active, targets), new, a)))
    else:
        r = _symbolic(selector, active, targets, flat, what, shown=shown)
    if not stored and not cells:
        return r
    # (each stored entry and rebound variable: a new object, the targets' values on their
    # lanes)
    r, values, bound = r
    lanes = _calling(selector, active, targets)
    slots, arrays = call_effects.leaf_slots(given), flatten(given)[0]
    for i, v in zip(stored, values):
        call_effects.put(*slots[i], select(lanes, v, arrays[i]))
    for cell, v, rebound in zip(cells, bound, rebinds):
        if rebound:
            cell.cell_contents = select(lanes, v, cell.cell_contents)
    return r


def _check_results(leaves, width, what):
    """A target's result arrays must be initialized and one lane or the call's width."""
    for x in leaves:
        if x.index == 0:
            raise StateError(f"pbc: {what}: field 'result' is uninitialized (a target returns "
                             'an empty array)')
        if len(x) not in (1, width):
            raise SizeError(f'pbc: a target of {what} returns an array of width {len(x)} for '
                            f'a call of width {width}')


def _call_method(name, mask_at, obj, *args, **kwargs):
    """obj.name(*args, **kwargs). The True that dispatch put in for the call's mask
    (`mask_at`: 'keyword', 'last' or False) is left out where the method takes no such
    argument."""
    fn = getattr(obj, name)
    if mask_at:
        try:
            inspect.signature(fn).bind(*args, **kwargs)
        except TypeError:
            if mask_at == 'keyword':
                kwargs = {k: v for k, v in kwargs.items() if k != 'active'}
            else:
                args = args[:-1]
        except ValueError:               # no signature (a builtin): call as given
            pass
    return fn(*args, **kwargs)


def run_target(fn, args, what, size_hint=''):
    """fn(*args[0], **args[1]); an exception it raises comes out as the cause of a
    RuntimeError (see pbc/errors.py). `size_hint` explains a size mismatch."""
    return call_user(fn, args[0], f'pbc: {what}', 'call target', args[1], size_hint)


def _enter(key, what):
    if (key, what) in _active_calls:
        raise RuntimeError(f'pbc: {what} calls itself (through a dispatch on the same '
                           'instance): recursive dispatch cannot be compiled')
    _active_calls.append((key, what))


def _watched(fn, args, inner, what, hint='', owners=(), passed=(), own=None):
    """run_target(fn, args) and what it changed of its caller's (call_effects.Effects):
    `inner` are the arrays in `args`, `owners` the call's instances, `passed` the caller's
    argument arrays, `own` the target's instance (whose fields it must not bind)."""
    fields = [(owner, name, v) for _, owner, name, v in _array_attributes(own)] \
        if isinstance(own, Object) else []
    return call_effects.watch(
        fn, lambda: run_target(fn, args, what, hint), args, inner, what,
        lambda: {id(a) for o in owners for *_, a in _array_attributes(o)}, passed, fields)


class _ChangedArguments(Exception):
    """Internal: a target changed these arguments in place: record the call again with
    their new values as outputs of every target."""


def _symbolic(selector, active, targets, flat, what, tables=None, shown=()):
    """Records every target once, in a scope of its own; the kernel runs each target only
    for the lanes (and vectors) that select it. (flat: flatten() of the arguments.) A
    call's derivative calls (pbc/ad/call.py) read the instances' attributes from the tables
    the call read them from (`tables`, a dict the first call fills): their derivatives are
    the call's inputs. An argument that a target changes in place (`x += y`) is the
    caller's object, changed on the lanes that call that target (docs/semantics.md)."""
    changed = ()
    for _ in range(len(flat[0]) + 1):
        try:
            return _symbolic_once(selector, active, targets, flat, what, tables, changed,
                                  shown)
        except _ChangedArguments as more:
            changed = tuple(sorted(set(changed) | more.args[0]))
    raise RuntimeError(f'pbc: {what}: the arguments its targets change do not settle')


def _symbolic_once(selector, active, targets, flat, what, tables, changed, shown):
    width = len(selector)
    arrays, build = flat
    optimize = flag(JitFlag.OptimizeCalls)
    Bool = _runtime.class_for(selector, 'bool')
    values, sources, pointers = _closure_data(selector, targets)
    if tables is not None:
        values = tables.setdefault('values', values)
    starts, ends, first, types, outs = [], [], None, None, []
    owners = [obj for _, _, obj in targets if isinstance(obj, Object)]
    # Literal arguments go in as they are: the target folds them (OptimizeCalls).
    literal = {id(a) for a in arrays if optimize and a.state == 'literal'}
    try:
        for (key, fn, obj), closure, mine in zip(targets, values, sources):
            start = _runtime.call_begin(key, width, selector._backend_code)
            # (a target that computes derivatives, pbc/ad/call.py, records in an AD scope of
            # its own, which its reads of attributes belong to)
            recording = fn.recording() if isinstance(fn, ad_call.Target) else None
            if recording is not None:
                recording.__enter__()
            outer = None
            if mine:
                # (by the arrays' variables now: a scatter in an earlier target may have
                # given an array a buffer of its own; those of an enclosing call still hold)
                outer = _runtime.set_closure_sources({})
                _runtime.set_closure_sources({**outer, **{v.index: p for v, p in mine}})
            saved = []
            try:
                _runtime.call_mask(start)
                if closure:
                    # Width-1 closure data is read inside the target (under its mask), so
                    # that reading it as a Python value there is an error rather than some
                    # lane's value.
                    mask = _runtime.mask_top(Bool)
                    saved = _swap_attributes([(owner, name, read(mask))
                                              for owner, name, read in closure])
                # (Each target gets objects of its own: it may change them in place; an
                # object under several names is one, as in Python.)
                inner = per_object(arrays, lambda a, s=start: type(a)(a) if id(a) in literal
                                   else _runtime.wrap_index(type(a), _runtime.call_arg(s, a)))
                _enter(id(obj), what)
                # (a variable of an enclosing function bound to one of the caller's
                # arguments, `shown` by id, the first of the arrays: the target's copy of it)
                cells = call_effects.argument_cells(fn, dict(zip(shown, inner)))
                try:
                    seen = _watched(fn, build(inner), inner, what, owners=owners, own=obj)
                finally:
                    _active_calls.pop()
                    for cell, x in cells:
                        cell.cell_contents = x
                if seen.outside or seen.stored or seen.rebound:
                    raise call_effects.MoreOutputs([x for x, _ in seen.outside],
                                                   set(seen.stored),
                                                   [c for c, _ in seen.rebound])
                r, more = seen.result, seen.changed
                if more - set(changed):
                    raise _ChangedArguments(more)
                if isinstance(r, ArrayBase):            # (most targets: one array)
                    leaves = [r]
                    why = first is not None and type(r) is not type(first) and mismatch(
                        r, first, 'result')
                else:
                    r = _as_arrays(r, selector)
                    leaves = flatten(r)[0]
                    why = first is not None and mismatch(r, first, 'result')
                if why:
                    raise StateError(f'pbc: the targets of {what} disagree: {why}')
                _check_results(leaves, width, what)
                leaves = leaves + [inner[i] for i in changed]
                if first is None:
                    first, types = r, [type(x) for x in leaves]
            except BaseException:
                _runtime.call_abort(start)
                raise
            finally:
                if saved:
                    _swap_attributes(saved)
                if outer is not None:
                    _runtime.set_closure_sources(outer)
                if recording is not None:
                    recording.__exit__(None, None, None)
            starts.append(start)
            outs.append(leaves)
            ends.append(_runtime.call_end(start, [x.index for x in leaves]))
    except BaseException:
        for end in ends:
            _runtime.dec_ref(end)
        raise
    finally:
        for p in pointers:
            p.release()
    effects = _runtime.call_writes(ends)        # (before call_site takes the ends)
    ids = _runtime.call_site(selector, active, ends, [t.Type for t in types], len(arrays))
    results = [_runtime.wrap_index(t, i) for t, i in zip(types, ids)]
    if optimize:
        _devirtualize(starts, outs, results, lambda: _calling(selector, active, targets),
                      effects)
    if changed:
        results, news = results[:-len(changed)], results[-len(changed):]
        lanes = _calling(selector, active, targets)
        for i, new in zip(changed, news):
            arrays[i]._assign(select(lanes, new, arrays[i]))
    return results[0] if isinstance(first, ArrayBase) else flatten(first)[1](results)


def _calling(selector, active, targets):
    """The lanes of `active` whose selector is the key of a target (others call nothing)."""
    keys = sorted(key for key, _, _ in targets)
    Bool = _runtime.class_for(selector, 'bool')
    if keys == list(range(keys[0], keys[-1] + 1)):           # consecutive (and not 0)
        hit = selector <= keys[-1]
        return active & (hit if keys[0] == 1 else hit & (selector >= keys[0]))
    if keys[-1] < TABLE_IDS:
        table = np.zeros(keys[-1] + 1, dtype=np.bool_)
        table[keys] = True
        return active & gather(Bool, Bool(table), selector)      # out of range: False
    hit = selector == keys[0]
    for key in keys[1:]:
        hit = hit | (selector == key)
    return active & hit


def _devirtualize(starts, outs, results, calling, effects):
    """Outputs that every target computes alike (the same pure function of the same
    arguments, outside values and literals) are computed once outside the call instead:
    the call's copies are then unused and dropped with their code (OptimizeCalls). With
    side effects in the targets, only outputs that are such values themselves are (a
    computation moved after the call could see memory the targets wrote). So are those of
    a single target: its call runs its code once per vector, in place (see llvm_render's
    call_head), as a copy outside would, and copying it cost as much as recording it."""
    ops = not effects and len(starts) > 1
    lanes = None
    for k, leaf in enumerate(outs[0]):
        others = [(s, o[k].index) for s, o in zip(starts[1:], outs[1:])]
        if _runtime.call_outputs_alike(starts[0], leaf.index, others, ops):
            T = type(results[k])
            value = _runtime.wrap_index(T, _runtime.call_hoist(starts[0], leaf.index))
            lanes = calling() if lanes is None else lanes
            results[k] = select(lanes, value, zeros(T))


CLOSURE_DEPTH = 2      # attributes, and attributes of the plain objects they hold


def _array_attributes(obj, depth=CLOSURE_DEPTH, path=()):
    """(path, owner, name, array) for the non-empty JIT arrays among obj's attributes and,
    `depth` - 1 levels down, among those of the objects it holds (a texture object, say)."""
    for name, v in list(getattr(obj, '__dict__', {}).items()):
        if isinstance(v, ArrayBase):
            if len(v) > 0:
                yield path + (name,), obj, name, v
        elif depth > 1 and hasattr(v, '__dict__') and not isinstance(
                v, (type, types.ModuleType, types.FunctionType, types.MethodType)):
            yield from _array_attributes(v, depth - 1, path + (name,))


def _closure_data(selector, targets):
    """Instance attributes that are JIT arrays (also those of objects the instances hold),
    as closure data: per attribute (path, type, and whether it has one value), for the
    targets that have it, either a table of their values read per lane at the lane's
    target's slot (one value each: read(mask) reads it), or a pointer per lane to the
    lane's target's array, which gathers inside the targets go through. Read so, instances
    that differ only in these values have the same code (which MergeFunctions then
    shares). Returns, per target, its [(owner, name, read)] and its [(array,
    _LanePointer)], and the _LanePointers (the caller releases them)."""
    objs = [obj if isinstance(obj, Object) else None for _, _, obj in targets]
    none = ([[]] * len(targets), [[]] * len(targets), [])
    keys = [obj.pbc_id for obj in objs if obj is not None]
    if len(keys) < 2 or max(keys) >= TABLE_IDS:
        return none
    found = {}                  # (path, type, wide) -> {target: (owner, name, value)}
    for t, obj in enumerate(objs):
        for path, owner, name, v in _array_attributes(obj) if obj is not None else ():
            found.setdefault((path, type(v), len(v) > 1), {})[t] = owner, name, v
    found = {k: vs for k, vs in found.items() if len(vs) > 1}
    if not found:
        return none
    table = np.zeros(max(keys) + 1, dtype=np.uint32)
    for t, obj in enumerate(objs):
        if obj is not None:
            table[obj.pbc_id] = t
    U = _runtime.class_for(selector, 'uint32')
    slot = gather(U, U(table), selector)              # each lane's target, numbered
    values, sources, pointers = [[] for _ in objs], [[] for _ in objs], []
    for (_, T, wide), vs in found.items():
        if wide:
            # Targets without the attribute get some valid buffer: their code never uses it.
            arrays = {t: v for t, (_, _, v) in vs.items()}
            any_array = next(iter(arrays.values()))
            pointers.append(_LanePointer(slot, [arrays.get(t, any_array)
                                                for t in range(len(objs))]))
            for t, v in arrays.items():
                sources[t].append((v, pointers[-1]))
        else:
            read = functools.partial(_read_table, T, _table(T, len(objs), vs), slot)
            for t, (owner, name, _) in vs.items():
                values[t].append((owner, name, read))
    return values, sources, pointers


class _LanePointer:
    """The lane pointer (see _runtime.lane_pointer) to each lane's target's array of one
    attribute, made when a target first gathers from the attribute: until then, nothing
    holds the arrays (which would make a scatter into one copy it first). Scatters into
    the attribute make a pointer of their own to `arrays` (see _runtime.scatter)."""
    __slots__ = ('slot', 'arrays', 'index', 'written')

    def __init__(self, slot, arrays):
        self.slot, self.arrays, self.index, self.written = slot, arrays, 0, None

    def __call__(self):
        if not self.index:
            self.index = _runtime.lane_pointer(self.slot, self.arrays)
        return self.index

    def write_pointer(self):
        """The lane pointer for scatters into the (claimed) arrays: one for all the targets'
        scatters, so that their code stays the same, unless an array got a new buffer."""
        key = tuple(a.index for a in self.arrays)
        if self.written is None or self.written[0] != key:
            if self.written is not None:
                _runtime.dec_ref(self.written[1])
            self.written = key, _runtime.lane_pointer(self.slot, self.arrays, True)
        return self.written[1]

    def release(self):
        if self.index:
            _runtime.dec_ref(self.index)
        if self.written is not None:
            _runtime.dec_ref(self.written[1])
        self.index, self.written = 0, None


def _table(T, n, values):
    """The table of n entries that holds `values` ({target: (owner, name, width-1 array)})
    for the targets to read. Where one carries derivatives, its entry is scattered in, so
    that the table's derivatives reach the instance's attribute (a symbolic call's targets
    read the table: pbc/ad/call.py); else the values go through the host, as data."""
    if _runtime.ad_live_count() and _runtime.ad_tracked([v for _, _, v in values.values()]):
        table = zeros(T, n)
        U = _runtime.class_for(table, 'uint32')
        for t, (_, _, v) in values.items():
            _runtime.scatter(table, v, U(t))
        return table
    data = np.zeros(n, dtype=T.Type if T.Type != 'bool' else np.bool_)
    for t, (_, _, v) in values.items():
        data[t] = v.numpy()[0]
    return T(data)


def _read_table(T, table, slot, mask):
    return gather(T, table, slot, mask)


def _swap_attributes(values):
    """Sets each owner's attribute `name` to `value` ([(owner, name, value)]); returns
    what puts the old ones back (applied in order, also when an owner comes twice)."""
    old = []
    for owner, name, v in values:
        old.append((owner, name, owner.__dict__[name]))
        owner.__dict__[name] = v
    return old[::-1]


def _as_arrays(r, like):
    """r with its Python numbers as arrays of their weak type (one value per lane)."""
    if isinstance(r, ArrayBase):
        return r
    if type(r) in PY_TYPES:
        return _runtime.class_for(like, PY_TYPES[type(r)])(r)
    parts = children(r)
    return r if parts is None else rebuild(r, [_as_arrays(p, like) for p in parts])


def _evaluated(selector, targets, args, flat, what):
    """Each target called on just its lanes (those where `selector` is its key): their
    arguments gathered, results scattered into zeros, a kernel per target. (flat:
    flatten() of the arguments.)"""
    Bool = _runtime.class_for(selector, 'bool')
    width = len(selector)                 # (_call made it as wide as the arguments)
    # The lanes of every target, in one partition pass over the (evaluated) selector.
    groups = _runtime.partition(selector, [key for key, _, _ in targets])
    # Where the targets cover every lane, their scatters write the results in full: no
    # zeros need to be written first.
    fill = sum(len(lanes) for lanes in groups) < width
    out = first = None
    # Where the targets' kernels are compiled already (a call made before), each target
    # launches once traced, and the next one is traced while its kernel runs. Else its
    # kernel waits to compile with the others of its round.
    pipelined = True
    # (with derivatives: per target scattered, its lanes and result arrays, for the node
    # that links them to the call's result)
    parts = [] if _runtime.ad_live_count() else None
    later = _Later([obj for _, _, obj in targets if isinstance(obj, Object)], [], [], [])
    for members in _rounds(targets, groups):
        for (_key, fn, obj), lanes in members:
            out, first = _run_on_lanes(fn, obj, flat, lanes, width, Bool, selector, what,
                                       out, first, fill, parts, later)
            pipelined = pipelined and eval_pending(compiled_only=True)
        # One evaluation per round: its targets' kernels compile together (see
        # compile_many) and launch back to back.
        _eval(out)
    if later.outside or later.stored or later.rebound:
        saved = _runtime.masks_take()       # (the scatters to the lanes are not masked)
        try:
            later.merge(args, flat[0], width, Bool)
        finally:
            _runtime.masks_restore(saved)
    if parts:
        ad_call.merge_lanes(flatten(out)[0], parts)
    if out is None and targets:
        # No lane calls anything: trace one target for the result's shape, run nothing.
        _key, fn, obj = targets[0]
        _runtime.mask_push(full(Bool, False, width))
        try:
            # (what it changes of its caller's, on no lane, is put back: its effects)
            sub = working_copy(args)
            seen = _watched(fn, sub, flatten(sub)[0], what, owners=later.owners, own=obj)
            out = _zeros_like(seen.result, width, selector)
        finally:
            _runtime.mask_pop()
    return out


@dataclasses.dataclass
class _Later:
    """What an evaluated call's targets change of their caller's besides their arguments,
    merged once every target has run (until then, targets read it as it was): `outside`,
    [(array from an enclosing scope, its value, lanes)]; `stored`, [(position in the
    arguments' arrays of an entry a target stored into, its value, lanes)]; `rebound`,
    [(cell of a variable of an enclosing function, the array a target bound it to,
    lanes)]. `owners`: the call's instances."""
    owners: list
    outside: list
    stored: list
    rebound: list

    def merge(self, args, arrays, width, Bool):
        for a, x, lanes in self.outside:
            call_effects.merge_on_lanes(a, x, lanes, width, Bool)
        # (a stored entry or rebound variable: a new object, each target's value on its
        # lanes)
        new = {}
        for i, x, lanes in self.stored:
            if i not in new:
                new[i] = copy_of(arrays[i])
            call_effects.merge_on_lanes(new[i], x, lanes, width, Bool)
        slots = call_effects.leaf_slots(args)
        for i, value in new.items():
            call_effects.put(*slots[i], value)
        cells = {}
        for cell, x, lanes in self.rebound:
            if id(cell) not in cells:
                cells[id(cell)] = cell, copy_of(cell.cell_contents)
            call_effects.merge_on_lanes(cells[id(cell)][1], x, lanes, width, Bool)
        for cell, value in cells.values():
            cell.cell_contents = value


def _run_on_lanes(fn, obj, flat, lanes, width, Bool, selector, what, out, first, fill,
                  parts, later):
    """Traces target fn on its `lanes` and queues the scatter of its results into `out`
    (made by the first target: zeros of its results' structure, or with `fill` False,
    arrays of that structure that the targets' scatters write in full). With `parts` (a
    list), the scatters leave derivatives out and the lanes and result arrays go into
    `parts` instead. What the target changes of its caller's besides its arguments goes
    into `later` (_Later). Returns (out, first)."""
    # A target that every lane calls needs neither the gathers nor the scatters.
    whole = len(lanes) == width
    arrays, build = flat
    # (an object under several names is one object in the target, as in Python)
    inner = per_object(arrays, lambda a: type(a)(a) if whole or len(a) == 1 else
                       gather(type(a), a, lanes))
    sub = build(inner)
    _enter(id(obj), what)
    saved = _runtime.masks_take()        # the call runs on its own lanes only
    # ... all of them: a side effect of width 1 happens once per lane, as in a symbolic call
    _runtime.mask_push(_runtime.literal(Bool, True, len(lanes)))
    try:
        hint = '' if whole else lambda: (      # (formatted only for an error message)
            f' (in an evaluated call of {what}, each target runs on just the '
            f'{len(lanes)} lanes that call it: pass arrays as wide as the call ({width}) '
            'as arguments instead of reading them from an enclosing scope, or call '
            'symbolically)')
        # (the variables of enclosing functions it reads that hold an array per lane of
        # the call: their values on its lanes while it runs, as its arguments)
        # (a variable of an enclosing function bound to an argument is the target's copy
        # of it there too)
        cells = call_effects.argument_cells(fn, {id(a): x for a, x in zip(arrays, inner)})
        try:
            seen = _watched(fn, sub, inner, what, hint, later.owners, arrays, obj)
        finally:
            for cell, x in cells:
                cell.cell_contents = x
        r = _as_arrays(seen.result, selector)
        # (an argument the target changed in place: the caller's object, on its lanes; an
        # array from an enclosing scope, once every target has run: until then they read
        # it as it was)
        for i in sorted(seen.changed):
            call_effects.merge_on_lanes(arrays[i], inner[i], lanes, width, Bool)
        later.outside.extend((a, x, lanes) for a, x in seen.outside)
        later.stored.extend((i, x, lanes) for i, x in seen.stored.items())
        later.rebound.extend((cell, x, lanes) for cell, x in seen.rebound)
        if whole:
            _check_results(flatten(r)[0], width, what)
            return _widened(r, width), r
        if out is None:
            out, first = _zeros_like(r, width, selector, fill), r
        else:
            why = mismatch(r, first, 'result')
            if why:
                raise StateError(f'pbc: the targets of {what} disagree: {why}')
        if parts is not None:
            leaves, build = flatten(r)
            parts.append((lanes, leaves))
            r = build([_runtime.ad_detached(x) for x in leaves])
        _scatter_into(out, r, lanes, what)
        return out, first
    finally:
        _runtime.mask_pop()
        _runtime.masks_restore(saved)
        _active_calls.pop()


MAX_ROUNDS = 3


def _rounds(targets, groups):
    """The targets that some lane calls, with their lanes, in rounds that evaluate
    together: each round's targets have lane counts of their own, as the kernels of one
    size would fuse into one kernel of both targets, which no other call reuses. Where
    that takes more than MAX_ROUNDS rounds (counts repeat all over), one round of all."""
    rounds = []
    for target, lanes in zip(targets, groups):
        n = len(lanes)
        if n == 0:
            continue                    # no lane calls this target
        for counts, members in rounds:
            if n not in counts:
                counts.add(n)
                members.append((target, lanes))
                break
        else:
            rounds.append(({n}, [(target, lanes)]))
    if len(rounds) > MAX_ROUNDS:
        return [[m for _, members in rounds for m in members]]
    return [members for _, members in rounds]


def _widened(r, width):
    """r (a result that every lane computed) with new arrays, `width` lanes wide."""
    if isinstance(r, ArrayBase):
        return broadcast_lanes(r, width)
    parts = children(r)
    return r if parts is None else rebuild(r, [_widened(p, width) for p in parts])


PY_TYPES = {bool: 'bool', int: 'int32', float: 'float32'}


def _zeros_like(r, width, like, fill=True):
    """Zeros of r's structure, `width` lanes wide (without `fill`: arrays whose memory is
    not written, for results that scatters write in full). Python numbers become arrays of
    their weak type (as `select` would make them), other Python values are kept."""
    if isinstance(r, ArrayBase) or type(r) in PY_TYPES:
        T = type(r) if isinstance(r, ArrayBase) else _runtime.class_for(like, PY_TYPES[type(r)])
        return zeros(T, width) if fill else _runtime.unfilled(T, width)
    parts = children(r)
    if parts is None:
        return r
    return rebuild(r, [_zeros_like(p, width, like, fill) for p in parts])


def _scatter_into(out, r, lanes, what):
    """out[lanes] = r, leaf by leaf (r's Python numbers too). Targets write lanes of their
    own: their scatters queue up without running those before them."""
    if isinstance(out, ArrayBase):
        if isinstance(r, ArrayBase) and type(r) is not type(out):
            raise StateError(f'pbc: the targets of {what} return {type(out).__name__} and '
                             f'{type(r).__name__}')
        _runtime.scatter(out, r, lanes, True, 0, True)
        return
    po, pr = children(out), children(r)
    if po is None:
        return
    if pr is None or len(po) != len(pr):
        raise StateError(f'pbc: the targets of {what} return different structures')
    for a, b in zip(po, pr):
        _scatter_into(a, b, lanes, what)
