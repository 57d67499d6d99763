"""The AST frontend: `@pbc.syntax` rewrites `while`/`if` statements into calls of the
control-flow primitives. Nothing else imports this package except pbc/__init__.py.

See docs/control_flow.md. Modules: transform (the decorator), lowering (early exits,
`for` over range, what can be rewritten), analysis (read/write sets, liveness), rewrite
(the generated calls), hints (pbc.hint), runtime_helpers (what rewritten code calls)."""

from .errors import SourceUnavailableError, SyntaxError_
from .transform import kernel, syntax

__all__ = ['syntax', 'kernel', 'SyntaxError_', 'SourceUnavailableError']
