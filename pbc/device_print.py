"""pbc.format and pbc.print, as Dr.Jit's dr.format and dr.print.

pbc.format returns the string right away (evaluating the arrays it shows). pbc.print writes
`file.write(text)` where text is the formatted string plus `end`:
  - evaluated (immediate): outside symbolic code, or with mode='evaluated'. An `active`
    mask selects the entries shown; nothing is printed if none is active.
  - symbolic (delayed): inside the body of a symbolic loop, conditional or call, or with
    mode='symbolic'. The kernel captures the values of each active lane (up to `limit`
    lanes; each execution in a loop counts); after it runs, the captured entries are
    printed as arrays, in lane order, once per print statement. The reserved field
    {thread_id} shows the lane of each entry.
Format strings follow Dr.Jit: {}, {0}, {name}, {name=} (repeats 'name=' before the value),
{{ and }}; pbc also accepts Python's !r/!s/!a conversions and format specs ({x:.3f}), which
apply to each element of an array.
"""

import sys
import warnings

import numpy as np

from . import _runtime, tree
from ._runtime import ArrayBase
from .printing import LIMIT, format_fields, resolve
from .tensor import Tensor

MODES = ('auto', 'evaluated', 'evaluate', 'symbolic')


def _split(fmt, args):
    """Dr.Jit's second form: a first argument that is not a string is the value to show."""
    return (fmt, args) if isinstance(fmt, str) else ('{}', (fmt,) + args)


def _text(name, fmt, args, kwargs, limit):
    try:
        return format_fields(fmt, args, kwargs, limit)
    except RuntimeError as e:
        raise RuntimeError(f'{name}(): {e}') from None


def _check_reserved(name, kwargs):
    if 'thread_id' in kwargs:
        raise RuntimeError(f"{name}(): the 'thread_id' keyword argument is reserved and "
                           'should not be specified.')


def _limit(limit):
    return -1 if limit is None or limit < 0 else int(limit)


def format(fmt='{}', *args, limit=LIMIT, **kwargs):  # noqa: A001
    """The string of `fmt` with its fields replaced by the arguments, formatted the way
    Dr.Jit prints them (arrays evaluated; dimensions longer than `limit` abbreviated)."""
    from .evaluate import eval
    fmt, args = _split(fmt, args)
    _check_reserved('pbc.format', kwargs)
    eval(args, kwargs)
    return _text('pbc.format', fmt, args, kwargs, _limit(limit))


def print(fmt='', *args, active=True, end='\n', file=None, limit=LIMIT,  # noqa: A001
          mode='auto', **kwargs):
    """Prints `fmt` formatted with the arguments (see the module's description)."""
    from .control import in_symbolic_code
    fmt, args = _split(fmt, args)
    if mode not in MODES:
        raise RuntimeError("pbc.print(): 'mode' must be one of \"auto\", \"evaluated\" or "
                           f'"symbolic", not {mode!r}.')
    if not isinstance(active, (bool, np.bool_, ArrayBase)):
        raise TypeError("pbc.print(): the 'active' argument must be a Bool array or a bool.")
    _check_reserved('pbc.print', kwargs)
    file = sys.stdout if file is None else file
    limit = _limit(limit)
    jit = isinstance(active, ArrayBase) or any(True for _ in tree.leaves((args, kwargs)))
    symbolic = mode == 'symbolic' or (mode == 'auto' and in_symbolic_code())
    if jit and symbolic:
        _symbolic(fmt + end, args, kwargs, active, file, limit)
    else:
        _immediate(fmt + end, args, kwargs, active, file, limit)


# ---- evaluated ---------------------------------------------------------------------------
def _immediate(fmt, args, kwargs, active, file, limit):
    from .evaluate import eval
    if isinstance(active, ArrayBase):
        top = _runtime.mask_top(type(active))       # an evaluated loop's or branch's lanes
        mask = active if top is None else active & top
        eval(mask, args, kwargs)
        sizes = [len(a) for a in tree.leaves((args, kwargs))] + [len(mask)]
        lanes = np.flatnonzero(np.broadcast_to(mask.numpy(), max(sizes)))
        if lanes.size == 0:
            return
        args, kwargs = _take((args, kwargs), lanes, max(sizes))
    elif not active:
        return
    else:
        eval(args, kwargs)
    file.write(_text('pbc.print', fmt, args, kwargs, limit))


def _take(x, lanes, width):
    """x with every flat array of `width` lanes (or one, broadcast) reduced to `lanes`;
    tensors stay whole."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, ArrayBase):
        v = x.numpy()
        if len(v) == 1:
            return type(x)(np.repeat(v, len(lanes)))
        return type(x)(np.ascontiguousarray(v[lanes])) if len(v) == width else x
    parts = tree.children(x)
    return x if parts is None else tree.rebuild(x, [_take(p, lanes, width) for p in parts])


# ---- symbolic ----------------------------------------------------------------------------
def _symbolic(fmt, args, kwargs, active, file, limit):
    if active is False or isinstance(active, np.bool_) and not active:
        return
    arrays = list(tree.leaves((args, kwargs)))
    try:                  # errors in the format string show now, not when the kernel runs
        resolve(fmt, args, dict(kwargs, thread_id=None))
    except RuntimeError as e:
        raise RuntimeError(f'pbc.print(): {e}') from None
    ref = arrays[0] if arrays else active
    sizes = [len(a) for a in arrays]
    if isinstance(active, ArrayBase):
        sizes.append(len(active))
    top = _runtime.mask_top(type(active) if isinstance(active, ArrayBase)
                            else _runtime.class_for(ref, 'bool'))
    if top is not None:
        sizes.append(len(top))
    UInt32 = _runtime.class_for(ref, 'uint32')
    from .routines import arange
    values = arrays + [arange(UInt32, max(sizes))]
    types = [type(a) for a in values]

    def deliver(rows, count):
        rows = rows[np.argsort(rows[:, -1], kind='stable')]       # lane order
        new = [cls(_decode(rows[:, k], cls)) for k, cls in enumerate(types)]
        a, kw = _rebuild((args, kwargs), iter(new[:-1]))
        kw['thread_id'] = new[-1]
        file.write(_text('pbc.print', fmt, a, kw, limit))
        if count > len(rows):
            warnings.warn(
                f'pbc.print(): symbolic print statement only captured {len(rows)} of '
                f'{count} available outputs. The above is a sample, in which entries are in '
                'the right order but not necessarily contiguous. Specify `limit=..` to '
                'capture more information and/or add the special format field '
                '`{thread_id}` to show the thread ID/array index associated with each '
                'entry of the captured output.', RuntimeWarning, stacklevel=2)

    _runtime.device_print(values, active, deliver, limit if limit >= 0 else 2**64 - 1)


def _decode(bits, cls):
    """Captured 64-bit words back as values of array class cls."""
    dt = np.dtype(_runtime.NUMPY_DTYPES[cls._vt_code])
    if dt == np.bool_:
        return bits != 0
    return np.ascontiguousarray(bits.astype(np.uint32).view(dt) if dt.itemsize == 4
                                else bits.view(dt))


def _rebuild(x, it):
    """x's structure around the captured arrays; a tensor becomes the 1-d tensor of what
    was captured of it (its shape no longer applies)."""
    if isinstance(x, ArrayBase):
        return next(it)
    if isinstance(x, Tensor):
        return type(x)(next(it))
    parts = tree.children(x)
    return x if parts is None else tree.rebuild(x, [_rebuild(p, it) for p in parts])

