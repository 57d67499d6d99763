"""Static reading of `pbc.hint(cond, mode=..., ...)` around a loop or branch condition."""

import ast

CTL = '__pbc_ctl__'       # the run-time helpers, a closure variable of rewritten functions
PASSED = {'while': ('mode', 'max_iterations', 'label', 'strict', 'compress'),
          'if': ('mode', 'label', 'strict')}
MODES = ('symbolic', 'evaluated', 'scalar')


def ctl(attr, *args, node=None):
    """The call `__pbc_ctl__.attr(*args)`, located at `node`."""
    fn = ast.Attribute(ast.Name(CTL, ast.Load()), attr, ast.Load())
    call = ast.Call(fn, list(args), [])
    if node is not None:
        call.lineno, call.col_offset = node.lineno, node.col_offset
        call.end_lineno = node.lineno
        call.end_col_offset = node.end_col_offset if node.end_lineno == node.lineno \
            else node.col_offset + 1
        ast.fix_missing_locations(call)
    return call


class Hint:
    """mode ('scalar', 'symbolic', 'evaluated', None, or 'dynamic' for a non-literal),
    keywords passed on to while_loop/if_stmt, and the include/exclude names."""

    def __init__(self, mode=None, keywords=(), include=(), exclude=(), node=None):
        self.mode, self.keywords = mode, list(keywords)
        self.include, self.exclude, self.node = list(include), list(exclude), node

    @property
    def scalar(self):
        return self.mode == 'scalar'

    @property
    def explicit(self):
        """The user asked for a JIT loop/branch: unsupported constructs are errors now."""
        return self.mode in ('symbolic', 'evaluated')


def is_hint_call(node):
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Name) and f.id == 'hint') or \
        (isinstance(f, ast.Attribute) and f.attr == 'hint')


def parse(expr, kind, where):
    """(condition, Hint) of `expr`; `where` (errors.Located) reports malformed hints."""
    if not is_hint_call(expr):
        return expr, Hint()
    if len(expr.args) != 1 or isinstance(expr.args[0], ast.Starred):
        where.error(expr, 'pbc.hint() takes the condition as its only positional argument')
    hint = Hint(node=expr)
    for k in expr.keywords:
        if k.arg in ('include', 'exclude'):
            names = _names(k.value)
            if names is None:
                where.error(k.value, f"the '{k.arg}' argument of pbc.hint() must be a list of "
                            f'variable names, e.g. {k.arg}=[x, y]')
            getattr(hint, k.arg).extend(names)
        elif k.arg in PASSED[kind]:
            if k.arg == 'mode':
                if not isinstance(k.value, ast.Constant):
                    hint.mode = 'dynamic'
                elif k.value.value in MODES or k.value.value is None:
                    hint.mode = k.value.value
                else:
                    where.error(k.value, f"pbc.hint(): unknown mode {k.value.value!r}; use "
                                "'symbolic', 'evaluated' or 'scalar'")
                if hint.mode == 'scalar':
                    continue
            hint.keywords.append(k)
        else:
            what = 'a loop' if kind == 'while' else 'an if statement'
            known = ', '.join(PASSED[kind] + ('include', 'exclude'))
            where.error(k, f"pbc.hint() on {what} does not take {k.arg or '**kwargs'!r} "
                        f'(it takes {known})')
    return expr.args[0], hint


def _names(node):
    if not isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return None
    out = []
    for e in node.elts:
        if isinstance(e, ast.Name):
            out.append(e.id)
        elif isinstance(e, ast.Constant) and isinstance(e.value, str):
            out.append(e.value)
        else:
            return None
    return out
