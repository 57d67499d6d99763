"""One derivative rule per differentiable op and function, in one table.

Elementwise rules are tuples of partial derivatives, one function per operand, of the
operands' values and the result's (`r`; kept only for rules registered with it). A partial
is a number, an array, or `Where(mask)` (1 where mask is set, else 0: a select, so that an
infinite or NaN gradient on the other side does not leak through a multiplication by 0).
Forward mode sums partial x tangent; reverse mode scales the output's gradient by each
partial. Everything else (gathers, scatters, reductions, prefix sums) states its forward and
backward maps itself. Rules run on values without derivatives, so what they compute is
ordinary traced code that fuses into kernels.
"""

import math
from typing import NamedTuple

from .. import _runtime
from ..evaluate import BACKENDS
from ..optable import DIFF, OPS


class Where(NamedTuple):
    mask: object


class Elementwise(NamedTuple):
    partials: tuple          # per operand: f(*operands, r) -> partial derivative


class Special(NamedTuple):
    forward: object          # (node, tangents of its operands) -> tangent of its result
    backward: object         # (node, gradient of its result) -> gradients of its operands


class Product(NamedTuple):
    """A contribution x * w kept apart, so that adding it to a gradient is one fma. With
    `guard`, lanes where x is 0 contribute 0 even where w is infinite or NaN."""
    x: object
    w: object
    guard: bool

    def value(self):
        p = self.x * self.w
        return _runtime.op_select(self.x == 0, 0.0, p) if self.guard else p

    def added_to(self, total):
        # The select follows the fma (not a select of w before it): the compare runs
        # beside the fma, so the gradient's dependency chain grows by one select only.
        s = _runtime.op_fma(self.x, self.w, total)
        return _runtime.op_select(self.x == 0, total, s) if self.guard else s


def _scale(w, x):
    """x times partial w: None (no contribution), an array, or a Product. A zero gradient or
    tangent contributes zero even where the partial is infinite or NaN (as in Dr.Jit): the
    derivative of select(x > 0, sqrt(x), 0) at x = 0 is 0, not 0 * inf. The guard is paid
    only where w may not be finite: not for numbers and finite literals."""
    if w is None or (isinstance(w, (int, float)) and w == 0):
        return None
    if isinstance(w, Where):
        return _runtime.op_select(w.mask, x, 0.0)
    if isinstance(w, (int, float)):
        return x if w == 1 else -x if w == -1 else x * w
    return Product(x, w, not _runtime.ad_finite_literal(w))


class Scattered(NamedTuple):
    """A gather's adjoint: gradient g added at the lanes `index` of an array of the
    source's width (where `active`). Kept apart so that inside a symbolic loop's body it is
    one scatter-add into the sink of a source from outside the body (propagate._Body)."""
    g: object
    index: object
    active: object

    def value(self, size):
        out = Spread(type(self.g), size, max(len(self.g), len(self.index)))
        out.add(self)
        return out.total()


class Spread:
    """An array of `size` entries that many lanes (`lanes`, or more: a loop's iterations)
    scatter-add into, and `total()` reads. On the CPU, where there are at most half as
    many entries in a copy per thread as lanes, each thread adds into a copy of its own
    without atomics (scatter_add_local; `total()` sums the copies): contended atomic
    additions cost several times uncontended ones, which cost several times plain ones
    (10^6 lanes adding into 1024 entries 16 times, Path Replay Backpropagation's toy,
    AMD Zen 5, 2 threads: megakernel 70 -> 15 ms, wavefront 83 -> 44 ms, where 16 copies
    by groups of 1024 lanes, with atomics, had been). Else, one array and atomic
    additions (a GPU's are fast)."""

    MOST = 1 << 22              # entries in all copies together, at most

    def __init__(self, T, size, lanes):
        copies = _runtime.thread_count() if BACKENDS[T._backend_code] == 'llvm' else 1
        local = copies * size <= min(2 * lanes, self.MOST) or copies == 1
        self.size, self.copies, self.local = size, copies if local else 1, local
        self.buffer = _runtime.literal(T, 0.0, size * self.copies)
        _runtime.make_opaque(self.buffer)

    def add(self, c):
        """Scatter-adds contribution c (a Scattered, or a value per lane of `size` lanes,
        or one value) into the copies."""
        U = _runtime.class_for(c.g if isinstance(c, Scattered) else c, 'uint32')
        if isinstance(c, Scattered):
            g, index, active = c.g, c.index, c.active
        else:
            g, active = c, True
            index = _runtime.counter(U, self.size) if self.size > 1 else \
                _runtime.literal(U, 0, 1)
        if self.local:
            _runtime.scatter_add_local(self.buffer, g, index, active, self.size)
        else:
            _runtime.scatter(self.buffer, g, index, active, 1)

    def total(self):
        if self.copies == 1:
            return self.buffer
        U = _runtime.class_for(self.buffer, 'uint32')
        at = _runtime.counter(U, self.size) if self.size > 1 else _runtime.literal(U, 0, 1)
        out = None
        for c in range(self.copies):
            part = _runtime.gather(type(self.buffer), self.buffer, at + c * self.size, True)
            out = part if out is None else out + part
        return out


def value(c):
    """Contribution c (see _scale) as an array."""
    return c.value() if isinstance(c, Product) else c


def add_to(total, c):
    """total + contribution c (total None: zero), one fma where c is a product."""
    if total is None:
        return c
    total = value(total)
    if isinstance(c, Product) and type(c.x) is type(c.w) is type(total):
        return c.added_to(total)
    return total + value(c)


def _partials(rule, node, need):
    args = node.args[:len(rule.partials)]
    return [f(*args, node.value) if f is not None and wanted else None
            for f, wanted in zip(rule.partials, need)]


def forward(rule, node, tangents):
    """The result's tangent from its operands' tangents (None: zero; a contribution as
    _scale makes them)."""
    if isinstance(rule, Special):
        return rule.forward(node, tangents)
    out = None
    for w, t in zip(_partials(rule, node, [t is not None for t in tangents]), tangents):
        c = _scale(w, t) if t is not None else None
        if c is not None:
            out = add_to(out, c)
    return out


def backward(rule, node, grad, need):
    """The operands' gradients from the result's (None where an operand needs none;
    contributions as _scale makes them)."""
    if isinstance(rule, Special):
        return rule.backward(node, grad)
    return [_scale(w, grad) for w in _partials(rule, node, need)]


# ---- helpers (imported late: pbc's math is built on the runtime this package extends) ----
def _math():
    from .. import math
    return math


def _routines():
    from .. import routines
    return routines


def widen(x, size):
    """Flat array x, `size` lanes wide (routines.broadcast_lanes; routines imports pbc.ad)."""
    return _routines().broadcast_lanes(x, size)


def _sign(a):
    return _runtime.op_select(a < 0, -1.0, 1.0)


def _rcp(a):
    return 1.0 / a


def _rsqrt(a):
    return 1.0 / _runtime.op_unary('sqrt', a)


_LN2 = math.log(2.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _zero(*_):
    return 0


def _one(*_):
    return 1


def _gather_forward(node, t):
    index, active, _ = node.payload
    return _runtime.gather(type(t[0]), t[0], index, active)


def _gather_backward(node, g):
    index, active, _ = node.payload
    return [Scattered(g, index, active), None, None]


def _scatter_forward(add):
    def fwd(node, t):
        index, active = node.payload
        d_target, d_value = t[0], t[1]
        T = type(d_target if d_target is not None else d_value)
        out = T(d_target) if d_target is not None else _runtime.literal(T, 0.0, node.size)
        _runtime.make_opaque(out)
        if d_value is not None:
            _runtime.scatter(out, d_value, index, active, 1 if add else 0)
        elif not add:
            _runtime.scatter(out, 0.0, index, active, 0)
        return out
    return fwd


def _scatter_backward(add):
    def bwd(node, g):
        index, active = node.payload
        g_value = _runtime.gather(type(g), g, index, active)
        if add:
            return [g, g_value, None]
        g_target = type(g)(g)
        _runtime.make_opaque(g_target)
        _runtime.scatter(g_target, 0.0, index, active, 0)     # overwritten: no gradient
        return [g_target, g_value, None]
    return bwd


def _minmax_winners(node):
    """scatter_reduce(Min/Max): which old target entries (hit_x) and which value lanes
    (hit_v) equal the result, and how many share each entry (ties share the gradient, as
    in the horizontal min/max)."""
    x0, v = node.args[0], node.args[1]
    index, active, _ = node.payload
    r = node.value
    T = type(r)
    hit_x = x0 == r
    hit_v = (v == _runtime.gather(T, r, index, active)) & active
    count = _runtime.literal(T, 0.0, node.size)
    _runtime.make_opaque(count)
    _runtime.scatter(count, _runtime.op_select(hit_v, 1.0, 0.0), index, active, 1)
    count = _runtime.op_select(hit_x, count + 1.0, count)
    return hit_x, hit_v, _runtime.op_select(count == 0, 1.0, count)     # (0: NaN won)


def _minmax_forward(node, t):
    hit_x, hit_v, count = _minmax_winners(node)
    index, active, _ = node.payload
    t_x, t_v = t[0], t[1]
    T = type(node.value)
    out = _runtime.literal(T, 0.0, node.size) if t_x is None else \
        _runtime.op_select(hit_x, t_x, 0.0)
    _runtime.make_opaque(out)
    if t_v is not None:
        _runtime.scatter(out, _runtime.op_select(hit_v, t_v, 0.0), index, active, 1)
    return out / count


def _minmax_backward(node, g):
    hit_x, hit_v, count = _minmax_winners(node)
    index, active, _ = node.payload
    share = widen(g, node.size) / count
    return [_runtime.op_select(hit_x, share, 0.0),
            _runtime.op_select(hit_v, _runtime.gather(type(share), share, index, active), 0.0),
            None]


def _sum(x):
    return _runtime.reduce(x, 'sum')


def _reduce_rule(name):
    """Horizontal reductions: the result is one lane."""
    def weight(node):                    # d result / d x_i
        x, r = node.args[0], node.value
        if name == 'sum':
            return None
        if name == 'prod':
            return r / x
        hit = _runtime.op_select(x == r, 1.0, 0.0)         # min/max: shared among ties
        return hit / _sum(hit)

    def fwd(node, t):
        w = weight(node)
        return _sum(t[0] if w is None else t[0] * w)

    def bwd(node, g):
        w = weight(node)
        return [g if w is None else g * w, None, None]
    return Special(fwd, bwd)


def _prefix_forward(node, t):
    inclusive, reverse = node.payload
    return _runtime.prefix_sum(t[0], inclusive, reverse)


def _prefix_backward(node, g):
    inclusive, reverse = node.payload
    return [_runtime.prefix_sum(widen(g, node.size), inclusive, not reverse), None, None]


def _power_x(x, y, r):
    return y * _math().power(x, y - 1.0)


def _power_y(x, y, r):
    return _runtime.op_select(x == 0, 0.0, r * _math().log(x))


RULES = {
    # ---- ops of the op table ----
    'neg': Elementwise((lambda a, r: -1,)),
    # (0 at 0: the subgradient of least norm, as Dr.Jit and PyTorch)
    'abs': Elementwise((lambda a, r: _runtime.op_select(a == 0, 0.0, _sign(a)),)),
    'sqrt': Elementwise((lambda a, r: 0.5 * _rsqrt(a),)),
    'floor': Elementwise((_zero,)),
    'ceil': Elementwise((_zero,)),
    'round': Elementwise((_zero,)),
    'trunc': Elementwise((_zero,)),
    'cast': Elementwise((_one,)),       # (the gradient takes the operand's type)
    'add': Elementwise((_one, _one)),
    'sub': Elementwise((_one, lambda a, b, r: -1)),
    'mul': Elementwise((lambda a, b, r: b, lambda a, b, r: a)),
    # The partials depend on primal values only (1 / b, and a / b: the op's own result,
    # found again by value numbering), so the gradient's dependency chain meets no
    # division: dividing the gradient by b once instead measured 8 % slower.
    'div': Elementwise((lambda a, b, r: _rcp(b), lambda a, b, r: -(a / b) * _rcp(b))),
    # fmod(a, b) = a - trunc(a / b) * b
    'mod': Elementwise((_one, lambda a, b, r: -_routines().trunc(a / b))),
    'min': Elementwise((lambda a, b, r: Where(a <= b), lambda a, b, r: Where(~(a <= b)))),
    'max': Elementwise((lambda a, b, r: Where(a >= b), lambda a, b, r: Where(~(a >= b)))),
    'minimum': Elementwise((lambda a, b, r: Where(a <= b), lambda a, b, r: Where(~(a <= b)))),
    'maximum': Elementwise((lambda a, b, r: Where(a >= b), lambda a, b, r: Where(~(a >= b)))),
    'fma': Elementwise((lambda a, b, c, r: b, lambda a, b, c, r: a, _one)),
    'select': Elementwise((None, lambda m, t, f, r: Where(m), lambda m, t, f, r: Where(~m))),
    'gather': Special(_gather_forward, _gather_backward),
    'scatter': Special(_scatter_forward(False), _scatter_backward(False)),
    'scatter_add': Special(_scatter_forward(True), _scatter_backward(True)),
    'scatter_minmax': Special(_minmax_forward, _minmax_backward),
    # ---- functions whose implementation is not differentiable as written (bit tricks,
    # polynomial approximations): their analytic derivatives ----
    'sin': Elementwise((lambda a, r: _math().cos(a),)),
    'cos': Elementwise((lambda a, r: -_math().sin(a),)),
    'tan': Elementwise((lambda a, r: 1.0 + r * r,)),
    'asin': Elementwise((lambda a, r: _rsqrt(1.0 - a * a),)),
    'acos': Elementwise((lambda a, r: -_rsqrt(1.0 - a * a),)),
    'atan': Elementwise((lambda a, r: _rcp(1.0 + a * a),)),
    'atan2': Elementwise((lambda y, x, r: x / (x * x + y * y),
                          lambda y, x, r: -y / (x * x + y * y))),
    'exp': Elementwise((lambda a, r: r,)),
    'exp2': Elementwise((lambda a, r: r * _LN2,)),
    'log': Elementwise((lambda a, r: _rcp(a),)),
    'log2': Elementwise((lambda a, r: _rcp(a * _LN2),)),
    'power': Elementwise((_power_x, _power_y)),
    'sinh': Elementwise((lambda a, r: _math().cosh(a),)),
    'cosh': Elementwise((lambda a, r: _math().sinh(a),)),
    'tanh': Elementwise((lambda a, r: 1.0 - r * r,)),
    'erf': Elementwise((lambda a, r: _TWO_OVER_SQRT_PI * _math().exp(-(a * a)),)),
    'copysign': Elementwise((lambda a, b, r: _sign(a) * _sign(b), _zero)),
    'mulsign': Elementwise((lambda a, b, r: _sign(b), _zero)),
    'reduce_sum': _reduce_rule('sum'),
    'reduce_prod': _reduce_rule('prod'),
    'reduce_min': _reduce_rule('min'),
    'reduce_max': _reduce_rule('max'),
    'prefix_sum': Special(_prefix_forward, _prefix_backward),
    # replace_grad(a, b): a's value, b's derivatives
    'replace_grad': Elementwise((None, _one)),
    # A custom op's node (pbc/ad/custom.py): the traversal calls the op's own forward or
    # backward, which set its outputs' or inputs' gradients; an output's node passes nothing.
    'custom': Special(None, None),
    'custom_out': Special(lambda node, t: None, lambda node, g: [None]),
}

# Rules that read no operand values (constant partials, or data of their own in the node's
# payload): their nodes keep none, and so hold no memory of their operands.
READS_NOTHING = {'neg', 'floor', 'ceil', 'round', 'trunc', 'cast', 'add', 'sub',
                 'replace_grad', 'gather', 'scatter', 'scatter_add', 'prefix_sum', 'custom',
                 'custom_out'}

_missing = {op for op in OPS if op.has(DIFF)} - set(RULES)
assert not _missing, f'differentiable ops without a derivative rule: {sorted(_missing)}'

# The runtime numbers rules by name (it knows the op table's; others are registered here).
for _name in RULES:
    _runtime.ad_rule_code(_name, _name not in READS_NOTHING)


def code(name):
    return _runtime.AD_RULES.index(name)
