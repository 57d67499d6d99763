"""Automatic differentiation (the paper's section 4): a graph beside the trace whose rules
trace ordinary operations, so derivative code fuses into kernels. See docs/autodiff.md."""

from . import rules  # noqa: F401  (registers the rule codes with the runtime)
from .api import (
    ADMode,
    accum_grad,
    backward,
    backward_from,
    backward_to,
    clear_grad,
    detach,
    disable_grad,
    enable_grad,
    enqueue,
    forward,
    forward_from,
    forward_to,
    grad,
    grad_enabled,
    replace_grad,
    set_grad,
    traverse,
)
from .custom import CustomOp, custom
from .propagate import ADFlag
from .scopes import isolate_grad, resume_grad, suspend_grad

__all__ = ['ADFlag', 'ADMode', 'CustomOp', 'accum_grad', 'backward', 'backward_from', 'backward_to',
           'clear_grad', 'custom', 'detach', 'disable_grad', 'enable_grad', 'enqueue', 'forward',
           'forward_from', 'forward_to', 'grad', 'grad_enabled', 'isolate_grad',
           'replace_grad', 'resume_grad', 'set_grad', 'suspend_grad', 'traverse']
