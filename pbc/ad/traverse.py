"""Propagation of derivatives through the AD graph: forward (tangents from inputs to
outputs) and backward (gradients from outputs to inputs), in creation order, without
recursion. Each node's rule traces ordinary JIT operations; nothing is evaluated here
except where a rule needs memory (the scatters of a gather's adjoint, reductions)."""

import enum

from .. import _runtime
from . import rules

CUSTOM = rules.code('custom')    # a custom op's node: its own forward/backward propagate


class ADFlag(enum.IntFlag):
    """What a traversal clears afterwards (Dr.Jit's values)."""
    ClearNone = 0
    ClearEdges = 1        # the edges it traversed (a second traversal finds nothing)
    ClearInput = 2        # the gradients of the nodes it started from
    ClearInterior = 4     # the gradients of nodes it propagated through
    ClearVertices = 6
    Default = 7
    AllowNoGrad = 8       # no error when the argument carries no derivatives


def accumulate(node, g):
    """Adds g to node's gradient, converted to its type and width: summed over lanes for a
    node of width 1 (which was broadcast in the operation), broadcast for a gradient of
    width 1 (a seed or a constant partial) on a wider node. Gradients always have their
    node's width, so rules such as a gather's read them lane by lane."""
    g = _as(g, node)
    size = _runtime.ad_size(node)
    if len(g) != size:
        g = _runtime.reduce(g, 'sum') if size == 1 else rules.widen(g, size)
    old = _runtime.ad_grad(node)
    _runtime.ad_set_grad(node, g if old is None else old + g)


def traverse(starts, backward, toward_inputs, flags, seeds=()):
    """Propagates over the nodes that nodes `starts` reach (toward the inputs, or toward
    what is computed from them), backward or forward; `seeds` are the nodes whose gradients
    were set to start it (ADFlag.ClearInput)."""
    order = _runtime.ad_order(list(starts), toward_inputs)
    inside = set(order)
    interior = set()
    edges = []                     # (node, operand) traversed
    boundary = _runtime.ad_boundary() if backward else None
    for n in (reversed(order) if backward else order):
        srcs = [s if s in inside else 0 for s in _runtime.ad_sources(n)]
        if not any(srcs):
            continue
        if _runtime.ad_rule_of(n) == CUSTOM:
            if backward and boundary is not None and _runtime.ad_serial_of(n) < boundary.serial:
                continue                   # (its outputs were postponed)
            edges += [(n, k) for k, s in enumerate(srcs) if s]
            carrying = [s for s in srcs if s and _runtime.ad_grad(s) is not None]
            if (backward or carrying) and _runtime.ad_view(n).payload._propagate(backward):
                interior.update([] if backward else carrying)
            continue
        if backward:
            g = _runtime.ad_grad(n)
            if boundary is not None and _runtime.ad_serial_of(n) < boundary.serial:
                if g is not None:
                    boundary.postpone(n)       # continued when the isolation scope ends
                continue
            edges += [(n, k) for k, s in enumerate(srcs) if s]
            if g is None:
                continue
            node = _runtime.ad_view(n)
            parts = rules.backward(rules.RULES[node.rule], node, g, [bool(s) for s in srcs])
            for s, p in zip(srcs, parts):
                if s and p is not None:
                    accumulate(s, p)
            interior.add(n)
        else:
            edges += [(n, k) for k, s in enumerate(srcs) if s]
            tangents = [_runtime.ad_grad(s) if s else None for s in srcs]
            if all(t is None for t in tangents):
                continue
            tangents = [None if t is None else _as(t, n) for t in tangents]
            node = _runtime.ad_view(n)
            d = rules.forward(rules.RULES[node.rule], node, tangents)
            if d is not None:
                accumulate(n, d)
            interior.update(s for s, t in zip(srcs, tangents) if t is not None)
    if flags & ADFlag.ClearInterior:
        for n in interior:
            _runtime.ad_set_grad(n, None)
    if flags & ADFlag.ClearInput:
        for n in seeds:
            _runtime.ad_set_grad(n, None)
    if flags & ADFlag.ClearEdges:
        for n, k in edges:
            _runtime.ad_drop_source(n, k)


def _as(t, node):
    """t converted to the type of node's values."""
    T = _runtime.ad_class(node)
    return t if type(t) is T else T(t)
