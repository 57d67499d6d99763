"""Imports and names: `drjit` becomes `pbc`, and Dr.Jit 0.x names become today's.

One table each for modules, functions, flags and calls whose arguments change; every entry
is applied to `module.name` attribute chains and to names imported with `from ... import`.
A name that pbc does not have is reported where it is used, since the migrated file would
fail there.
"""

import ast
import enum
import functools
import importlib
import importlib.util
import re
import types

# Dr.Jit module -> pbc module (where pbc has none, uses are reported). `.ad` variants
# collapse: pbc's float arrays are differentiable.
MODULES = {
    'drjit': 'pbc', 'drjit.llvm': 'pbc.llvm', 'drjit.llvm.ad': 'pbc.llvm',
    'drjit.cuda': 'pbc.cuda', 'drjit.cuda.ad': 'pbc.cuda', 'drjit.detail': 'pbc.detail',
    'drjit.scalar': 'pbc.scalar',
}

BACKEND_MODULES = ('pbc.llvm', 'pbc.cuda')      # whose `.ad` is the module itself

# Dr.Jit 0.x function and trait names -> their names in Dr.Jit 1.x and pbc (applied where pbc
# has no function of the old name).
RENAMES = {
    'mulhi': 'mul_hi',
    'sqr': 'square',
    'clamp': 'clip',
    'reinterpret_array_v': 'reinterpret_array',
    'is_dynamic_array_v': 'is_dynamic_v',
    'leaf_array_t': 'leaf_t',
}

# Dr.Jit 0.x JitFlag members -> Dr.Jit 1.x (whose changelog calls the old ones deprecated).
FLAGS = {
    'LoopRecord': 'SymbolicLoops',
    'LoopOptimize': 'OptimizeLoops',
    'VCallRecord': 'SymbolicCalls',
    'VCallOptimize': 'OptimizeCalls',
    'VCallDeduplicate': 'MergeFunctions',
    'ConstProp': 'ConstantPropagation',
}


def _operator(op):
    def rewrite(call, args, source):
        if len(call.args) != 2 or call.keywords:
            return None
        a, b = (f'({t})' if _loose(n) else t for n, t in zip(call.args, args))
        text = f'{a} {op} {b}'
        parent = call.parent
        bare = isinstance(parent, (ast.Assign, ast.Return, ast.Expr, ast.keyword)) or \
            isinstance(parent, ast.Call) and call in parent.args
        return text if bare else f'({text})'
    return rewrite


def _loose(node):
    """Whether an operand of `==` needs parentheses (it binds no tighter than `==`)."""
    return isinstance(node, (ast.Compare, ast.BoolOp, ast.IfExp, ast.Lambda, ast.NamedExpr)) \
        or isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)


def _nested(name):
    """`all_nested(x)` reduced over every axis: `all(x, axis=None)`."""
    def rewrite(call, args, source):
        if len(call.args) != 1 or call.keywords:
            return None
        return f'{source.prefix(call)}{name}({args[0]}, axis=None)'
    return rewrite


def _reciprocal(name):
    """`cot(x)` is `rcp(tan(x))`: Dr.Jit 1.x dropped cot, sec and csc."""
    def rewrite(call, args, source):
        if len(call.args) != 1 or call.keywords:
            return None
        p = source.prefix(call)
        return f'{p}rcp({p}{name}({args[0]}))'
    return rewrite


# printf's conversions, and the Python format spec each becomes.
_PRINTF = re.compile(r'%(?P<flags>[-+ #0]*)(?P<width>\d*)(?:\.(?P<prec>\d+))?'
                     r'(?:hh|h|ll|l|L|z|j|t)?(?P<conv>[diouxXeEfFgGs%])')


def printf_format(fmt):
    """printf_async's C format string as pbc.print's, or None where it has no equivalent:
    (format, end)."""
    out, pos = [], 0
    for m in _PRINTF.finditer(fmt):
        out.append(fmt[pos:m.start()].replace('{', '{{').replace('}', '}}'))
        pos = m.end()
        flags, width, prec, conv = m['flags'], m['width'], m['prec'], m['conv']
        if conv == '%':
            out.append('%')
            continue
        spec = ('<' if '-' in flags else '') + ('+' if '+' in flags else
                                                ' ' if ' ' in flags else '')
        spec += ('#' if '#' in flags else '') + ('0' if '0' in flags else '') + width
        spec += f'.{prec}' if prec is not None and conv not in 'diuoxXs' else ''
        kind = {'i': 'd', 'u': 'd', 's': ''}.get(conv, conv)
        spec += kind if spec or kind not in ('d', '') else ''
        out.append('{:' + spec + '}' if spec else '{}')
    rest = fmt[pos:]
    if '%' in rest:
        return None
    out.append(rest.replace('{', '{{').replace('}', '}}'))
    text = ''.join(out)
    return (text[:-1], None) if text.endswith('\n') else (text, "''")


def _printf(call, args, source):
    fmt = call.args[0] if call.args else None
    if not (isinstance(fmt, ast.Constant) and isinstance(fmt.value, str)) or \
            any(isinstance(a, ast.Starred) for a in call.args):
        return None
    converted = printf_format(fmt.value)
    if converted is None:
        return None
    text, end = converted
    parts = [_quote(text, source.text(fmt))] + args[1:]
    parts += [f'{k.arg}={source.text(k.value)}' for k in call.keywords]
    parts += [f'end={end}'] if end else []
    return f'{source.prefix(call)}print({", ".join(parts)})'


def _quote(text, original):
    """A string literal for `text`, in the original literal's quotes where possible."""
    literal = repr(text)
    if original.lstrip('rRbBuU').startswith('"') and '"' not in text:
        literal = '"' + literal[1:-1].replace("\\'", "'") + '"'
    return literal


# Dr.Jit 0.x calls whose arguments change: name -> rewrite(call, rendered args, source),
# which returns the new text of the call or None where it cannot be rewritten.
CALLS = {
    'eq': _operator('=='),
    'neq': _operator('!='),
    'printf_async': _printf,
    'cot': _reciprocal('tan'),
    'sec': _reciprocal('cos'),
    'csc': _reciprocal('sin'),
    **{f'{r}_nested': _nested(r) for r in ('all', 'any', 'none', 'sum', 'prod', 'min', 'max',
                                           'mean')},
}


def _new_name(base, attr):
    """The name of `base.attr` in pbc: renamed where Dr.Jit 1.x renamed it and pbc has no
    such name (code that works in pbc is left alone)."""
    table = FLAGS if base == 'pbc.JitFlag' else RENAMES if base == 'pbc' else {}
    return table[attr] if attr in table and not hasattr(_object(base), attr) else attr


def _traverse(call, args, source):
    """Dr.Jit 0.x's traverse(dtype, mode, flags): Dr.Jit 1.x and pbc take no type. The 0.x
    form is told by its ADMode in the second place; None where the call has the new form."""
    if len(call.args) < 2 or 'ADMode' not in args[1] or 'ADMode' in args[0] or \
            any(isinstance(a, ast.Starred) for a in call.args):
        return None
    parts = args[1:] + [f'{k.arg}={source.text(k.value)}' for k in call.keywords]
    return f'{source.prefix(call)}traverse({", ".join(parts)})'


# Calls whose name stayed but whose arguments changed: name -> rewrite, None where the call
# already has today's form.
SIGNATURES = {'traverse': _traverse}


@functools.cache
def _module(path):
    """The pbc module at `path`, or None where pbc has none (yet)."""
    try:
        return importlib.import_module(path) if importlib.util.find_spec(path) else None
    except ImportError:
        return None


class Names:
    """What each imported name refers to, in pbc's terms ('pbc', 'pbc.llvm',
    'pbc.while_loop', ...), and the rewrites of imports and names."""

    def __init__(self, source):
        self.source = source
        self.bound = {}           # name -> dotted pbc path of what it refers to
        self.renamed = {}         # a name whose binding changes ('drjit', 'mulhi') -> new
        self.imports = []         # (ImportFrom node, alias) of names from pbc modules

    # ---- resolution ---------------------------------------------------------------------
    def resolve(self, node):
        """The dotted pbc path an expression refers to, or None."""
        if isinstance(node, ast.Name):
            return self.bound.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            if base is None:
                return None
            if base in BACKEND_MODULES and node.attr == 'ad':
                return base
            return MODULES.get(f'drjit{base[3:]}.{node.attr}',
                               f'{base}.{_new_name(base, node.attr)}')
        return None

    def is_pbc(self, node):
        """Whether an expression names something of pbc's (whose calls change no argument
        in place, scatters aside, which are side effects rather than state)."""
        path = self.resolve(node)
        return path is not None and path.startswith('pbc')

    def module_alias(self):
        """A module-level name bound to pbc itself, or None."""
        for node in self.source.tree.body:
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname and self.bound.get(a.asname) == 'pbc':
                        return a.asname
                    if not a.asname and a.name.split('.')[0] in ('pbc', 'drjit'):
                        return 'pbc'
        return None

    # ---- the rewrites -------------------------------------------------------------------
    def run(self):
        for node in ast.walk(self.source.tree):
            if isinstance(node, ast.Import):
                self._import(node)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                    node.module.split('.')[0] in ('drjit', 'pbc'):
                self._import_from(node)
        nodes = sorted((n for n in ast.walk(self.source.tree)
                        if isinstance(n, (ast.Name, ast.Attribute, ast.Call))),
                       key=self._size)
        for node in nodes:                      # inner first, so outer rewrites render them
            if isinstance(node, ast.Name):
                self._name(node)
            elif isinstance(node, ast.Attribute):
                self._attribute(node)
            else:
                self._call(node)

    def _size(self, node):
        start, end = self.source.span(node)
        return end - start

    def _import(self, node):
        src = self.source
        for alias in node.names:
            top = alias.name.split('.')[0]
            if top not in ('drjit', 'pbc'):
                continue
            target = MODULES.get(alias.name, alias.name) if top == 'drjit' else alias.name
            if alias.name not in MODULES and top == 'drjit' or _module(target) is None:
                src.report(node, _no_module(alias.name, target))
                continue
            if alias.asname:
                self.bound[alias.asname] = target
            else:
                self.bound['pbc'] = 'pbc'
                if top == 'drjit':
                    self.bound['drjit'] = 'pbc'
                    self.renamed['drjit'] = 'pbc'
            if top == 'drjit':
                start = src.at(alias.lineno, alias.col_offset)
                src.replace(start, start + len(alias.name), target)

    def _import_from(self, node):
        src = self.source
        top = node.module.split('.')[0]
        module = MODULES.get(node.module) if top == 'drjit' else node.module
        if module is None or _module(module) is None:
            src.report(node, _no_module(node.module, module))
            return
        pbc_module = _module(module)
        if top == 'drjit':
            start = src.span(node)[0]
            m = re.compile(rb'from\s+(' + re.escape(node.module.encode()) + rb')\b').match(
                src.data, start)
            if m is None:
                src.report(node, 'cannot find the module name of this import; left as is')
                return
            src.replace(m.start(1), m.end(1), module)
        for alias in node.names:
            if alias.name == '*':
                continue
            sub = MODULES.get(f'{node.module}.{alias.name}') if top == 'drjit' else \
                f'{module}.{alias.name}'
            name = _new_name(module, alias.name)
            if sub and _module(sub) is not None:
                self.bound[alias.asname or alias.name] = sub
                continue
            sub = sub if top == 'drjit' else None
            if alias.name in CALLS and module == 'pbc':
                src.report(alias, f'{alias.name} imported by name: only calls of the form '
                                  f'dr.{alias.name}(...) are rewritten; left as is')
                continue
            if sub or not hasattr(pbc_module, name):
                src.report(alias, f'pbc has no {module}.{name}')
                continue
            self.bound[alias.asname or alias.name] = f'{module}.{alias.name}'
            self.imports.append((node, alias))
            if name != alias.name:
                if alias.asname is None and self._rebound(alias.name):
                    src.report(alias, f'{alias.name!r} is pbc.{name} now, but the file '
                                      'also binds the name otherwise; left as is')
                    continue
                start = src.at(alias.lineno, alias.col_offset)
                src.replace(start, start + len(alias.name), name)
                if alias.asname is None:
                    self.renamed[alias.name] = name

    def _rebound(self, name):
        return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
                   or isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name
                   for n in ast.walk(self.source.tree))

    def _name(self, node):
        new = self.renamed.get(node.id)
        if new:
            self.source.replace_node(node, new)

    def _attribute(self, node):
        src = self.source
        base = self.resolve(node.value)
        if base is None or not base.startswith('pbc'):
            return
        _, end = src.span(node)
        if base in BACKEND_MODULES and node.attr == 'ad':            # pbc.llvm.ad is pbc.llvm
            src.replace(src.span(node.value)[1], end, '')
            return
        path = self.resolve(node)
        new = path.rsplit('.', 1)[1]
        dotted = MODULES.get(f'drjit{base[3:]}.{node.attr}')
        if dotted is not None or _module(f'{base}.{node.attr}') is not None:
            if dotted is not None and _module(dotted) is None:
                src.report(node, f'pbc has no module {dotted}; left as is')
            return
        owner = _object(base)
        if isinstance(owner, (types.ModuleType, enum.EnumMeta)) and not hasattr(owner, new) \
                and not (base == 'pbc' and node.attr in CALLS and _called(node)):
            src.report(node, f'pbc has no {base}.{new}')
            return
        if new != node.attr:
            src.replace(end - len(node.attr), end, new)

    def _call(self, node):
        path = self.resolve(node.func)
        if isinstance(node.func, ast.Attribute) and path is not None and \
                path[4:] in SIGNATURES and path.startswith('pbc.'):
            text = SIGNATURES[path[4:]](node, [self.source.text(a) for a in node.args], self)
            if text is not None:
                self.source.replace_node(node, text)
            return
        if not isinstance(node.func, ast.Attribute) or path is None or \
                not path.startswith('pbc.') or path[4:] not in CALLS or hasattr(_object('pbc'),
                                                                                path[4:]):
            return
        args = [self.source.text(a) for a in node.args]
        text = CALLS[path[4:]](node, args, self)
        if text is None:
            self.source.report(node, f'{path[4:]}(...) has no pbc equivalent in this form; '
                                     'left as is')
        else:
            self.source.replace_node(node, text)

    # used by the CALLS rewrites
    def prefix(self, call):
        """'dr.' for a call `dr.name(...)`, '' for a bare `name(...)`."""
        f = call.func
        return self.source.text(f.value) + '.' if isinstance(f, ast.Attribute) else ''

    def text(self, node):
        return self.source.text(node)


def _no_module(name, target):
    if target is None or target == name:
        return f'pbc has no counterpart of module {name}; left as is'
    return f'pbc has no module {target} (for {name}); left as is'


def _called(node):
    return isinstance(node.parent, ast.Call) and node.parent.func is node


@functools.cache
def _object(path):
    """The pbc object at a dotted path, or None."""
    parts = path.split('.')
    obj = _module(parts[0])
    for p in parts[1:]:
        obj = getattr(obj, p, None)
        if obj is None:
            return None
    return obj

