"""Derivative rules at the level of a function: for code whose own operations have no
useful derivative (bit tricks, polynomial approximations of sin, ...), the function runs on
values without derivatives and its result gets one node of its analytic rule."""

import functools

from .. import _runtime
from .._runtime import ArrayBase


def apply(rule, fn, args, payload=None, keep_value=True):
    """fn(*args) with AD node `rule` (pbc/ad/rules.py) over the array arguments."""
    plain = [_runtime.ad_detached(a) if isinstance(a, ArrayBase) else a for a in args]
    value = fn(*plain)
    if any(value is p for p in plain):
        value = _runtime.ad_detached(value)        # a new array object for the result
    return _runtime.ad_record_rule(_runtime.AD_RULES.index(rule), value, tuple(args),
                                   payload, keep_value)


def differentiable(rule):
    """Decorator: fn(flat arrays...) differentiates by rule `rule` rather than through its
    own operations. Untracked arguments cost one test."""
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            if _runtime.ad_tracked(args):
                return apply(rule, fn, args)
            return fn(*args)
        return wrapper
    return decorate
