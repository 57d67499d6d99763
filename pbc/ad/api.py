"""The AD functions of Dr.Jit 1.x over nested structures: enabling derivatives, reading and
setting gradients, propagating them, detaching and replacing them."""

import builtins
import enum

from .. import _runtime, tree
from .._runtime import ArrayBase
from . import rules
from .propagate import ADFlag, accumulate
from .propagate import traverse as _traverse


def _float(x):
    return isinstance(x, ArrayBase) and x.Type in ('float32', 'float64')


def _arrays(args):
    for a in args:
        yield from tree.leaves(a)


def _map(fn, x):
    """x's structure around fn(array) for each JIT array inside it."""
    arrays, build = tree.flatten(x)
    return build([fn(a) for a in arrays])


def enable_grad(*args):
    """Makes the float arrays inside args inputs of differentiation (others are ignored)."""
    for a in _arrays(args):
        if _float(a):
            _runtime.ad_enable(a)


def disable_grad(*args):
    """Detaches the arrays inside args in place: they carry no derivatives any more."""
    for a in _arrays(args):
        _runtime.ad_disable(a)


def grad_enabled(*args):
    """Whether any array inside args carries derivatives here (scopes count)."""
    return builtins.any(_runtime.ad_node_of(a) != 0 for a in _arrays(args))


def _grad_of(a):
    n = _runtime.ad_node_of(a)          # (inside a scope that disables a: zero, as Dr.Jit)
    g = _runtime.ad_grad(n) if n else None
    if g is None:
        return _runtime.literal(type(a), 0, len(a))
    return g if len(g) == len(a) else rules.widen(g, len(a))


def grad(x, preserve_type=True):
    """The gradients of the arrays inside x (zero where none was computed, or where the
    current scope disables derivatives), in x's structure. Python numbers give 0."""
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return type(x)(0)
    return _map(_grad_of, x)


def _pairs(x, g, what):
    xs = list(tree.leaves(x))
    if isinstance(g, (int, float)) or (isinstance(g, ArrayBase) and len(xs) > 1):
        return [(a, g) for a in xs]
    gs = list(tree.leaves(g))
    if not gs and len(xs) == 1:          # numbers (a list, a NumPy array) for one array
        gs = [type(xs[0])(g)]
    if len(gs) != len(xs):
        raise ValueError(f'pbc.{what}(): the gradient has another structure than the '
                         f'variable ({len(gs)} arrays for {len(xs)})')
    return list(zip(xs, gs))


def accum_grad(x, g):
    """Adds g to the gradients of the arrays inside x (g: the same structure, or one value
    for all), except where the current scope disables derivatives."""
    for a, v in _pairs(x, g, 'accum_grad'):
        n = _runtime.ad_node_of(a)      # (ignored inside a scope that disables a)
        if not n:
            continue
        if not isinstance(v, ArrayBase):
            v = _runtime.literal(type(a), v, 1)
        accumulate(n, detach(v))


def clear_grad(*args):
    for a in _arrays(args):
        n = _runtime.ad_index(a)
        if n:
            _runtime.ad_set_grad(n, None)


def set_grad(x, g):
    """Replaces the gradients of the arrays inside x by g."""
    clear_grad(x)
    accum_grad(x, g)


def detach(x, preserve_type=True):
    """x without derivatives (a copy of the structure around the same values)."""
    if isinstance(x, ArrayBase):
        return _runtime.ad_detached(x)
    return _map(_runtime.ad_detached, x)


def _nodes(args, what, flags):
    nodes = [n for n in (_runtime.ad_node_of(a) for a in _arrays(args)) if n]
    if not nodes and not flags & ADFlag.AllowNoGrad:
        raise RuntimeError(
            f'pbc.{what}(): the argument does not depend on the input variable(s) being '
            'differentiated (did you forget pbc.enable_grad()?). Pass '
            'flags=pbc.ADFlag.Default | pbc.ADFlag.AllowNoGrad if this is expected.')
    return nodes


def _seed(nodes, force):
    """Sets the gradient of the arrays of `nodes` to 1 (unless, without `force`, one has
    a gradient already): a node that several of them share (Array3f(x)) gets 1 for each,
    as the gradient of their sum."""
    if force or all(_runtime.ad_grad(n) is None for n in nodes):
        for n in nodes:
            _runtime.ad_set_grad(n, None)
        for n in nodes:
            one = _runtime.literal(_runtime.ad_class(n), 1.0, 1)
            # (inside a conditional or an evaluated loop's iteration, on its lanes only:
            # `if c: backward_from(y * 2)` differentiates where c holds)
            mask = _runtime.mask_top(_runtime.class_for(one, 'bool'))
            accumulate(n, one if mask is None else _runtime.op_select(mask, one, one * 0))


def backward_from(arg, flags=ADFlag.Default):
    """Reverse mode: seeds arg's gradient with 1 (unless it has one) and propagates it to
    everything arg was computed from."""
    _from(arg, flags, False, 'backward_from', True)


def backward(arg, flags=ADFlag.Default):
    """Reverse mode from arg, whose gradient is set to 1."""
    _from(arg, flags, True, 'backward', True)


def forward_from(arg, flags=ADFlag.Default):
    """Forward mode: seeds arg's gradient with 1 (unless it has one) and propagates it to
    everything computed from arg."""
    _from(arg, flags, False, 'forward_from', False)


def forward(arg, flags=ADFlag.Default):
    """Forward mode from arg, whose gradient is set to 1."""
    _from(arg, flags, True, 'forward', False)


def _from(arg, flags, force, what, backward):
    """Seeds arg's nodes and traverses from them: backward toward what they were computed
    from, or forward toward what was computed from them."""
    nodes = _nodes([arg], what, flags)
    if nodes:
        _seed(nodes, force)
        _traverse(nodes, backward, backward, flags)


def _targets(args):
    return args[0] if len(args) == 1 else args


def backward_to(*args, flags=ADFlag.Default):
    """Reverse mode toward args: gradients already set anywhere downstream of args flow back
    to them. Returns their gradients."""
    nodes = _nodes(args, 'backward_to', flags)
    if nodes:
        _traverse(nodes, True, False, flags)
    return grad(_targets(args))


def forward_to(*args, flags=ADFlag.Default):
    """Forward mode toward args: tangents already set anywhere upstream of args flow to them.
    Returns their gradients."""
    nodes = _nodes(args, 'forward_to', flags)
    if nodes:
        _traverse(nodes, False, True, flags)
    return grad(_targets(args))


def replace_grad(a, b):
    """a's value with b's derivatives (the paper's tape surgery). a and b have one structure
    (a may be a Python number); a's width must be b's or 1."""
    if not isinstance(b, ArrayBase):
        if isinstance(a, (int, float)):
            return _map(lambda y: replace_grad(a, y), b)
        return _zip_map(a, b)
    T = type(b)
    value = _runtime.ad_detached(a if isinstance(a, ArrayBase) and type(a) is T else T(a))
    if len(value) != len(b):
        if len(value) != 1:
            raise ValueError(f'pbc.replace_grad(): incompatible widths {len(value)} and '
                             f'{len(b)}')
        value = rules.widen(value, len(b))
    return _runtime.ad_record_rule(rules.code('replace_grad'), value, (None, b), None, False)


def _zip_map(a, b):
    xs, build = tree.flatten(a)
    ys = list(tree.leaves(b))
    if len(xs) != len(ys):
        raise ValueError('pbc.replace_grad(): the arguments have different structures')
    return build([replace_grad(x, y) for x, y in zip(xs, ys)])


# ---- the manual interface: enqueue, then traverse -----------------------------------------
class ADMode(enum.IntEnum):
    Primal = 0
    Forward = 1
    Backward = 2


_queued = {ADMode.Forward: [], ADMode.Backward: []}     # arrays, held until traverse()


def enqueue(mode, *args):
    """Marks the arrays inside args for the next traverse(): with ADMode.Forward, it covers
    what is computed from them; with ADMode.Backward, what they are computed from."""
    if mode not in _queued:
        raise ValueError(f'pbc.enqueue(): mode must be ADMode.Forward or ADMode.Backward, '
                         f'not {mode!r}')
    _queued[ADMode(mode)].extend(a for a in _arrays(args) if _runtime.ad_node_of(a))


def traverse(mode, flags=ADFlag.Default):
    """Propagates gradients (ADMode.Backward) or tangents (ADMode.Forward) already set over
    what enqueue() marked, then forgets the marks. enqueue(Backward, y) then
    traverse(Forward) is forward_to(y); enqueue(Forward, x) then traverse(Backward) is
    backward_to(x)."""
    if mode not in _queued:
        raise ValueError(f'pbc.traverse(): mode must be ADMode.Forward or ADMode.Backward, '
                         f'not {mode!r}')
    marked = {m: [_runtime.ad_index(a) for a in arrays] for m, arrays in _queued.items()}
    for arrays in _queued.values():
        arrays.clear()
    for m, nodes in marked.items():
        if nodes:
            _traverse(nodes, mode == ADMode.Backward, m == ADMode.Backward, flags)


class GradAttribute:
    """Dr.Jit's `x.grad`: reading it is grad(x), assigning to it set_grad(x, value)."""

    def __get__(self, obj, owner=None):
        return self if obj is None else grad(obj)

    def __set__(self, obj, value):
        set_grad(obj, value)
