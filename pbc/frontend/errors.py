"""Errors of the @pbc.syntax frontend. Every message starts with the user's `file:line`."""

import linecache

from ..control import TraceError

FUNCTIONAL_FORM = '''\
    def cond(i, x):
        return i < n

    def body(i, x):
        return i + 1, x * 2

    i, x = pbc.while_loop((i, x), cond, body)'''


class UnassignedError(TraceError, NameError):
    """A variable that a JIT loop or branch needs on every lane is not assigned on every
    path."""


class UnassignedLocalError(TraceError, UnboundLocalError):
    """The user's code read a variable that is not assigned (as Python would raise)."""


class SyntaxError_(TraceError, SyntaxError):
    """A construct that @pbc.syntax cannot turn into a symbolic loop or conditional, or a
    malformed pbc.hint(). Raised while decorating, or, for statements left as plain Python,
    when their condition turns out to be a JIT value."""

    def __init__(self, msg, filename=None, lineno=None, col=None):
        where = f'{filename}:{lineno}: ' if filename and lineno else ''
        text = linecache.getline(filename, lineno) if filename and lineno else None
        super().__init__(f'{where}@pbc.syntax: {msg}',
                         (filename, lineno, None if col is None else col + 1, text))


class SourceUnavailableError(SyntaxError_):
    """@pbc.syntax could not read the decorated function's source code."""

    def __init__(self, fn, why):
        name = getattr(fn, '__qualname__', repr(fn))
        code = getattr(fn, '__code__', None)
        where = f' (defined in {code.co_filename})' if code is not None else ''
        super().__init__(
            f"cannot read the source code of {name!r}{where}: {why}. @pbc.syntax works by "
            'rewriting the source code of the function, which inspect.getsource() cannot find '
            'for functions created by exec()/eval(), typed into an interactive interpreter, '
            'or written as a lambda. Define the function with `def` in a .py file (or a '
            'notebook cell), or call the control-flow primitives directly, e.g.\n\n'
            + FUNCTIONAL_FORM)


class Located:
    """Raises SyntaxError_ at a node of one function's source."""

    def __init__(self, filename):
        self.filename = filename

    def error(self, node, msg):
        raise SyntaxError_(msg, self.filename, getattr(node, 'lineno', None),
                           getattr(node, 'col_offset', None))
