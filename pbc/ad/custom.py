"""Custom differentiable operations (Dr.Jit's CustomOp): a class states how to evaluate a
function and how to propagate derivatives through it, and pbc.custom() puts one node for it
in the AD graph.

The op's node has every input that carries derivatives as an operand: the arguments given
to pbc.custom(), those registered with add_input(), and those `eval` reads without
receiving them (implicit inputs, found by running `eval` in a scope that notes every
derivative asked for). Each float output gets a node computed from the op's node. A
traversal that reaches the op calls its `forward` or `backward` once, which read and set the
gradients of inputs and outputs themselves.
"""

import inspect

from .. import _runtime, tree
from .._runtime import ArrayBase
from .api import accum_grad, detach, grad
from .propagate import accumulate, custom_node


class CustomOp:
    """Base class of custom differentiable operations. Subclasses define `eval(self, ...)`
    (the primal computation, on arguments without derivatives), `forward(self)` and/or
    `backward(self)`, and optionally `name(self)`."""

    def eval(self, *args, **kwargs):
        raise NotImplementedError(f'{type(self).__name__}.eval(): not implemented')

    def forward(self):
        raise NotImplementedError(f'{type(self).__name__}.forward(): not implemented')

    def backward(self):
        raise NotImplementedError(f'{type(self).__name__}.backward(): not implemented')

    def name(self):
        return type(self).__name__

    # ---- gradients of inputs (by argument name) and outputs ----
    def _input(self, name, what):
        try:
            return self._inputs[name]
        except KeyError:
            raise KeyError(f'pbc.CustomOp.{what}(): {self.name()}.eval() has no argument '
                           f'named {name!r}') from None

    def grad_in(self, name):
        """The gradient (forward mode: tangent) of input argument `name`."""
        return grad(self._input(name, 'grad_in'))

    def set_grad_in(self, name, value):
        """Adds `value` to the gradient of input argument `name` (reverse mode)."""
        accum_grad(self._input(name, 'set_grad_in'), value)

    def grad_out(self):
        """The gradient of the output (in its structure; zero where none arrived)."""
        return self._out_build([self._grad_of_output(i) for i in range(len(self._out_kind))])

    def set_grad_out(self, value):
        """Adds `value` (the output's structure, or one value for all) to the output's
        gradient (forward mode)."""
        n = len(self._out_kind)
        if isinstance(value, (int, float)) or (isinstance(value, ArrayBase) and n > 1):
            values = [value] * n
        else:
            values = list(tree.leaves(value))
        for (node, serial), v in zip(self._out_nodes, values):
            if node and _runtime.ad_alive(node, serial):
                T = _runtime.ad_class(node)
                accumulate(node, detach(v) if isinstance(v, ArrayBase) else T(v))

    def add_input(self, value):
        """Registers the derivatives `value` carries as an input of this op (for arrays that
        eval does not receive as arguments); returns value."""
        self._more_in.append(value)
        return value

    def add_output(self, value):
        """Registers the float arrays inside `value`, made by eval, as further outputs of
        this op: their derivatives are the op's. Returns value."""
        self._more_out.append(value)
        return value

    def _grad_of_output(self, i):
        T, width = self._out_kind[i]
        node, serial = self._out_nodes[i]
        g = _runtime.ad_grad(node) if node and _runtime.ad_alive(node, serial) else None
        if g is None:
            return _runtime.literal(T, 0, width)
        from .rules import widen
        return g if len(g) == width else widen(g, width)

    def _propagate(self, backward):
        """Called by a traversal that reaches the op: runs backward() if an output has a
        gradient (forward mode: the traversal checked the inputs' tangents)."""
        if backward and not any(_runtime.ad_alive(n, s) and _runtime.ad_grad(n) is not None
                                for n, s in self._out_nodes if n):
            return False
        self.backward() if backward else self.forward()
        return True


def _float(x):
    return isinstance(x, ArrayBase) and x.Type in ('float32', 'float64')


def custom(cls, *args, **kwargs):
    """Evaluates custom op `cls` (a CustomOp subclass) on the arguments and returns its
    output, whose derivatives the op's forward/backward compute."""
    if not (isinstance(cls, type) and issubclass(cls, CustomOp)):
        raise TypeError(f'pbc.custom(): {cls!r} is not a subclass of pbc.CustomOp')
    op = cls()
    op._more_in, op._more_out = [], []
    try:
        op._inputs = dict(inspect.signature(op.eval).bind(*args, **kwargs).arguments)
        collector = _runtime.ad_scope_push(False, False, [], True)
        try:
            output = op.eval(*detach(args), **detach(kwargs))
        finally:
            _runtime.ad_scope_pop()
        return _link(op, args, kwargs, output, collector.implicit)
    except Exception as e:
        raise RuntimeError(f'pbc.custom(<{cls.__name__}>): error while performing a custom '
                           f'differentiable operation: {e}') from e


def _link(op, args, kwargs, output, implicit):
    """Gives the op its node (if any input carries derivatives) and the float outputs
    theirs; returns the output structure."""
    inputs = []
    for a in (*tree.leaves(args), *tree.leaves(kwargs), *tree.leaves(op._more_in)):
        # (inside another op's eval, whose scope collects, that op takes the inputs, and
        # this one makes no node)
        n = _runtime.ad_index(a) if isinstance(a, ArrayBase) else 0
        if n and n not in inputs and _runtime.ad_enabled_here(n):
            inputs.append(n)
    inputs += sorted(n for n in implicit if n not in inputs and _runtime.ad_enabled_here(n))
    leaves, build = tree.flatten(output)
    leaves = [_runtime.ad_detached(a) if _float(a) else a for a in leaves]
    more = [a for a in tree.leaves(op._more_out) if _float(a)]
    op._more_in = op._more_out = None
    op._out_build = build
    op._out_kind = [(type(a), len(a)) for a in leaves]
    op._out_nodes = [(0, 0)] * len(leaves)
    linked = [a for a in leaves if _float(a)] + more
    if inputs and linked:
        for a in more:
            _runtime.ad_disable(a)
        weak = iter(custom_node(op, inputs, linked))
        op._out_nodes = [next(weak) if _float(a) else (0, 0) for a in leaves]
    return build(leaves)
