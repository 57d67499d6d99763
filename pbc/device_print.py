"""pbc.print: formatted output of JIT values that happens when the kernel runs, one line per
active lane (Dr.Jit's dr.print / printf_async). Python-style `{}` fields become C printf
conversions; Python values are formatted right away and baked into the format."""

import builtins
import string

from . import _runtime
from ._runtime import ArrayBase
from .vector import StaticArray

_CONVERSION = {'float32': 'g', 'float64': 'g', 'int32': 'd', 'uint32': 'u', 'int64': 'lld',
               'uint64': 'llu', 'bool': 'd'}
_FLOAT_CODES, _INT_CODES = set('eEfFgGaA'), set('diouxXc')


def _conversion(array, spec):
    """A printf conversion for `array` from a Python format spec such as '.3f' or '08x'."""
    t = array.Type
    if not spec:
        return '%' + _CONVERSION[t]
    code, flags = spec[-1], spec[:-1]
    if not set(flags) <= set('0123456789.+- #'):
        raise ValueError(f'pbc.print: unsupported format spec {spec!r}')
    if t.startswith('float'):
        if code not in _FLOAT_CODES:
            raise ValueError(f'pbc.print: format {spec!r} does not apply to {t} values')
        return '%' + flags + code
    if code not in _INT_CODES:
        raise ValueError(f'pbc.print: format {spec!r} does not apply to {t} values')
    return '%' + flags + ('ll' if t.endswith('64') else '') + code


def print(fmt, *args, active=True, end='\n', **kwargs):  # noqa: A001
    """Prints `fmt` formatted with args/kwargs for every active lane when the kernel runs.
    Without JIT arrays among the arguments it prints immediately, like builtins.print."""
    pieces, values, auto = [], [], 0
    for text, field, spec, conv in string.Formatter().parse(fmt):
        pieces.append(text.replace('%', '%%'))
        if field is None:
            continue
        if field == '':
            value, auto = args[auto], auto + 1
        elif field.isdigit():
            value = args[int(field)]
        else:
            value = kwargs[field]
        if isinstance(value, ArrayBase):
            pieces.append(_conversion(value, spec))
            values.append(value)
        elif isinstance(value, StaticArray):
            pieces.append('[' + ', '.join(_conversion(c, spec) for c in value) + ']')
            values.extend(value)
        else:
            text = format(value, spec) if conv is None else format(
                {'r': repr, 's': str, 'a': ascii}[conv](value), spec)
            pieces.append(text.replace('%', '%%'))
    if not values and not isinstance(active, ArrayBase):
        builtins.print(fmt.format(*args, **kwargs), end=end)
        return
    _runtime.device_print(''.join(pieces) + end.replace('%', '%%'), values, active)
