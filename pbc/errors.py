"""Exceptions of pbc's loops, conditionals and calls.

Dr.Jit raises RuntimeError when a loop, conditional or call fails, with the user's own
exception as the cause. pbc does the same, and its own diagnostics of such code (state that
changes type or width, branches that disagree, results that do not fit together) are
TraceErrors: they keep their natural type (TypeError, ValueError) and are RuntimeErrors too,
so code written against either library catches them. A TraceError raised inside a body is
passed on as it is, not wrapped again: its message already says what went wrong where.
"""


class TraceError(Exception):
    """Base of pbc's diagnostics of traced control flow (a mixin)."""


class StateError(TraceError, TypeError, RuntimeError):
    """State, branch results or call results whose types or structure do not fit."""


class SizeError(TraceError, ValueError, RuntimeError):
    """State or results whose widths do not fit."""


def call_user(fn, args, what, role, kwargs=None, size_hint=''):
    """fn(*args, **kwargs), a function the user gave `what` (e.g. 'pbc.while_loop()') as its
    `role` ('loop body'): an exception it raises comes out as the cause of a RuntimeError,
    except pbc's own diagnostics. `size_hint` (text, or a function that returns it) is added
    to the message of an operation on arrays of incompatible sizes (it says why the sizes
    may differ there)."""
    try:
        return fn(*args, **(kwargs or {}))
    except TraceError:
        raise
    except Exception as e:
        hint = '' if 'incompatible sizes' not in str(e) else \
            size_hint() if callable(size_hint) else size_hint
        raise RuntimeError(f'{what}: the {role} raised {type(e).__name__}: {e}{hint}') from e
