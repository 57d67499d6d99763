"""The AST frontend: `@pbc.syntax` rewrites `while`/`if` statements into calls of the
control-flow primitives. Nothing else imports this package except pbc/__init__.py."""
