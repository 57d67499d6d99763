"""Scopes that change which variables carry derivatives (the paper's set Omega):
suspend_grad and resume_grad, for everything or for given variables, nesting arbitrarily.
Inside a scope that enables only some variables, what is computed from them is enabled too."""

from .. import _runtime, tree
from .propagate import in_body


def _nodes(args):
    return {_runtime.ad_index(a) for x in args for a in tree.leaves(x)} - {0}


def _current():
    """(complement, nodes) of the enclosing scope: everything enabled outside any."""
    s = _runtime.ad_scope_current()
    return (True, set()) if s is None else (s.complement, set(s.nodes))


class _Scope:
    def __init__(self, args, when, suspend):
        self.args, self.when, self.suspend = args, when, suspend
        self.active = False

    def __enter__(self):
        if not self.when:
            return self
        complement, nodes = _current()
        named = _nodes(self.args)
        if not self.args:                       # everything / nothing
            complement, nodes = not self.suspend, set()
        elif self.suspend == complement:        # (all but S) minus X, or S plus X
            nodes |= named
        else:                                   # (all but S) plus X, or S minus X
            nodes -= named
        # (inside a symbolic loop's body, derivatives computed there are code of the body:
        # Path Replay Backpropagation's backward_from inside the loop)
        _runtime.ad_scope_push(complement, False, list(nodes), False, in_body() is not None)
        self.active = True
        return self

    def __exit__(self, *exc):
        if self.active:
            _runtime.ad_scope_pop()
            self.active = False
        return False


class isolate_grad:
    """A context that is an isolation boundary: backward traversals inside it stop at the
    variables created before it, and continue from them when it ends (so derivative code
    made inside does not reach into what came before until then)."""

    def __enter__(self):
        complement, nodes = _current()
        self.scope = _runtime.ad_scope_push(complement, True, list(nodes), False,
                                            in_body() is not None)
        return self

    def __exit__(self, *exc):
        _runtime.ad_scope_pop()
        pending = self.scope.take_postponed()
        self.scope = None
        try:
            if pending and exc[0] is None:
                from .propagate import ADFlag, traverse
                traverse(pending, True, True, ADFlag.Default)
        finally:
            for n in pending:
                _runtime.ad_release(n)
        return False


def suspend_grad(*args, when=True):
    """A context in which the given variables (all, if none are given) carry no
    derivatives: operations on them give results without derivatives."""
    return _Scope(args, when, True)


def resume_grad(*args, when=True):
    """A context in which the given variables (all, if none are given) carry derivatives
    again inside an enclosing suspend_grad."""
    return _Scope(args, when, False)
