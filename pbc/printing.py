"""String forms of arrays and nested values as Dr.Jit 1.5 writes them: repr()/str() of every
array kind, and pbc.format.

An array prints as nested lists over its dimensions; JIT vectors and matrices put the lane
dimension outermost (one entry per lane), tensors follow their shape. A dimension longer
than the limit (20 by default) shows its first and last three entries around
'.. N skipped ..'. Floats print like C's %g."""

import math

import numpy as np

from ._runtime import ArrayBase

LIMIT = 20
EDGE = 3          # entries kept at each end of a truncated dimension


def format_scalar(x, spec=''):
    """One element: True/False, integers in full, floats as %g (NaN keeps its sign, as C's
    printf shows it); `spec` (a Python format spec) replaces that."""
    if isinstance(x, np.generic):
        x = x.item()
    if spec:
        return format(x, spec)
    if isinstance(x, bool):
        return 'True' if x else 'False'
    if isinstance(x, float):
        if math.isnan(x):
            return '-nan' if math.copysign(1.0, x) < 0 else 'nan'
        return '%g' % x
    return str(x)


def is_array(x):
    from .tensor import Tensor
    from .vector import Matrix, StaticArray
    return isinstance(x, (ArrayBase, StaticArray, Matrix, Tensor))


def _width(sizes):
    """The common lane count of components of these sizes (size 1 broadcasts), or None if
    they are ragged."""
    w = max(sizes, default=0)
    return w if all(s == w or s == 1 for s in sizes) else None


def _grid(x):
    """The values of array x as a NumPy array in print order (lanes first for vectors and
    matrices), or None if x is ragged (its components differ in width)."""
    from .tensor import Tensor
    from .vector import Matrix, StaticArray
    if isinstance(x, ArrayBase):
        return x.numpy()
    if isinstance(x, Tensor):
        return x.numpy()
    matrix = isinstance(x, Matrix) or isinstance(x[0] if len(x) else None, StaticArray)
    rows = [list(r) for r in x] if matrix else [list(x)]
    w = _width([len(c) for r in rows for c in r])
    if w is None:
        return None
    from .evaluate import eval as evaluate
    evaluate(x)                     # (the components in one kernel, not one each)
    g = np.array([[np.broadcast_to(c.numpy(), w) for c in r] for r in rows])
    if w == 0:
        return np.zeros((0,))
    # (rows, columns, lanes) -> (lanes, rows, columns); a vector is a single row.
    g = np.moveaxis(g, -1, 0)
    return g if matrix else g[:, 0, :]


def _nested(g, indent, limit, spec):
    n = g.shape[0]
    last = g.ndim == 1
    if 0 <= limit < n and n > 2 * EDGE:
        picks = [*range(EDGE), None, *range(n - EDGE, n)]
    else:
        picks = range(n)
    parts = []
    for j in picks:
        if j is None:
            parts.append(f'.. {n - 2 * EDGE} skipped ..')
        elif last:
            parts.append(format_scalar(g[j], spec))
        else:
            parts.append(_nested(g[j], indent + 1, limit, spec))
    sep = ', ' if last else ',\n' + ' ' * (indent + 1)
    return '[' + sep.join(parts) + ']'


def format_grid(g, limit=LIMIT, spec=''):
    """Values already in print order (a NumPy array, one row per lane), as format_array
    writes them."""
    g = np.asarray(g)
    return format_scalar(g[()], spec) if g.ndim == 0 else _nested(g, 0, limit, spec)


def format_array(x, indent=0, limit=LIMIT, spec=''):
    """The string form of any pbc array (flat, vector, matrix, tensor); continuation lines
    are indented by `indent` spaces more."""
    g = _grid(x)
    if g is None:
        return '[ragged array]'
    if g.ndim == 0:                                   # a 0-d tensor: its one value
        return format_scalar(g[()], spec)
    return _nested(g, indent, limit, spec)


def array_repr(x):
    """repr() and str() of every pbc array."""
    return format_array(x)


def _block(open_, close, items, indent):
    """A container: one item per line, indented two more than `indent`."""
    if not items:
        return open_ + close
    pad = ' ' * (indent + 2)
    return (open_ + '\n' + pad + (',\n' + pad).join(items) + '\n' + ' ' * indent + close)


def format_value(x, indent=0, limit=LIMIT, spec=''):
    """Any value as pbc.format shows it: arrays as above; tuples, lists, dicts and
    DRJIT_STRUCT objects one entry per line; strings quoted inside containers; other
    objects by their repr()."""
    if is_array(x):
        return format_array(x, indent, limit, spec)
    t = type(x)
    sub = lambda v: format_value(v, indent + 2, limit, spec)      # noqa: E731
    if t is str:
        return f"'{x}'" if indent > 0 else (format(x, spec) if spec else x)
    if t in (float, int, bool):
        return format_scalar(x, spec) if (spec or t is float) else repr(x)
    if t is tuple:
        return _block('(', ')', [sub(v) for v in x], indent)
    if t is list:
        return _block('[', ']', [sub(v) for v in x], indent)
    if t is dict:
        return _block('{', '}', [f'{sub(k)}: {sub(v)}' for k, v in x.items()], indent)
    fields = getattr(t, 'DRJIT_STRUCT', None)
    if isinstance(fields, dict):
        return _block(t.__name__ + '[', ']', [f'{k}={sub(getattr(x, k))}' for k in fields],
                      indent)
    return format(x, spec) if spec else repr(x)


# ---- format strings ----------------------------------------------------------------------
_CONVERSIONS = {'r': repr, 's': str, 'a': ascii}


def _fields(fmt):
    """Splits a format string into literal text and fields (name, conversion, spec,
    echo), where echo is the field text to repeat for '{name=}'."""
    out, text, i, n = [], [], 0, len(fmt)
    while i < n:
        c = fmt[i]
        if c == '{' and fmt.startswith('{{', i):
            text.append('{')
            i += 2
        elif c == '}':
            if not fmt.startswith('}}', i):
                raise RuntimeError('single "}" encountered in format string.')
            text.append('}')
            i += 2
        elif c == '{':
            end = fmt.find('}', i)
            if end < 0:
                raise RuntimeError(f'unmatched brace in format string (at position {i}).')
            body, echo = fmt[i + 1:end], ''
            name, _, spec = body.partition(':')
            name, _, conv = name.partition('!')
            if name.endswith('='):
                name, echo = name[:-1], name
            if conv and conv not in _CONVERSIONS:
                raise RuntimeError(f'unknown conversion "!{conv}" in format string (at '
                                   f'position {i}).')
            out.append(''.join(text))
            text = []
            out.append((name, conv, spec, echo, i))
            i = end + 1
        else:
            text.append(c)
            i += 1
    out.append(''.join(text))
    return out


def resolve(fmt, args, kwargs):
    """The parts of `fmt`: literal text, and for each field (value, conversion, spec,
    echo) with the argument it references. Raises RuntimeError for a malformed string or
    a missing argument."""
    out, auto, numbering = [], 0, None
    for part in _fields(fmt):
        if isinstance(part, str):
            out.append(part)
            continue
        name, conv, spec, echo, pos = part
        if name == '' or name.isdigit():
            kind = 'implicit' if name == '' else 'explicit'
            if numbering not in (None, kind):
                raise RuntimeError(f'cannot switch from {numbering} to {kind} field '
                                   'numbering.')
            numbering = kind
            k = auto if name == '' else int(name)
            auto += name == ''
            if k >= len(args):
                raise RuntimeError(f'missing positional argument {k} referenced by format '
                                   f'string (at position {pos}).')
            value = args[k]
        elif name in kwargs:
            value = kwargs[name]
        else:
            raise RuntimeError(f'missing keyword argument "{name}" referenced by format '
                               f'string (at position {pos}).')
        out.append((value, conv, spec, echo))
    return out


def format_fields(fmt, args, kwargs, limit=LIMIT):
    """The text of `fmt` with its fields replaced by the formatted arguments (which must be
    readable: evaluated arrays or plain Python values)."""
    out = []
    for part in resolve(fmt, args, kwargs):
        if isinstance(part, str):
            out.append(part)
        else:
            value, conv, spec, echo = part
            if conv:
                value = _CONVERSIONS[conv](value)
            out.append(echo + format_value(value, 0, limit, spec))
    return ''.join(out)
