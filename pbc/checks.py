"""Checks as in Dr.Jit: allclose / assert_allclose compare values within a tolerance;
assert_true / assert_false report the lanes where a condition fails (when JitFlag.Debug is
set, as Dr.Jit)."""

import sys
import traceback
import types

import numpy as np

from . import _runtime
from ._runtime import ArrayBase
from .control import in_symbolic_code
from .device_print import print as _device_print
from .dispatch import PtrBase
from .flags import JitFlag, flag
from .printing import format_grid
from .traits import VarType, _expr_meta, _meta, is_array_v, is_mask_v
from .vector import StaticArray

# Default (rtol, atol) by the precision of the comparison, as Dr.Jit: loose for Float32,
# NumPy's defaults otherwise.
_TOLERANCES = {VarType.Float32: (1e-3, 1e-5)}
_DEFAULT_TOLERANCES = (1e-5, 1e-8)


# ---- allclose ------------------------------------------------------------------------------
def _values(x):
    """The values of pbc array x as a NumPy array laid out as pbc.shape(x)."""
    if isinstance(x, PtrBase):
        x = x.index
    try:
        return np.asarray(x.numpy())
    except ValueError:        # components of a vector with widths that do not broadcast
        raise RuntimeError(f'pbc.allclose(): {type(x).__name__} is ragged') from None


def _operands(a, b):
    """(A, B, vt): a and b as NumPy arrays broadcast like the pbc operation a - b (at least
    one is a pbc array) and the element type of that operation."""
    # The layout and element type of a - b (its type need not exist in pbc: a Matrix3f and
    # float64 NumPy data compare in float64). TypeError for types that do not combine.
    m = _meta(a) if type(a) is type(b) else _expr_meta(a, b)
    depth = len(m.shape)

    def lanes(x):
        if is_array_v(x):
            X = _values(x)
            # A shallower pbc array broadcasts over the outer dimensions (a Float over the
            # components of an Array3f): its lanes stay last.
            return X if m.kind == 'tensor' else X.reshape((1,) * (depth - X.ndim) + X.shape)
        X = np.asarray(x)
        if X.dtype.kind not in 'biuf':
            raise TypeError(f'pbc.allclose(): cannot compare {type(x).__name__} values')
        # Other values give the outer (static) dimensions first, as in Array3f([1, 2, 3])
        return X if m.kind == 'tensor' else X.reshape(X.shape + (1,) * (depth - X.ndim))

    A, B = lanes(a), lanes(b)
    try:
        A, B = np.broadcast_arrays(A, B)
    except ValueError:
        raise RuntimeError(f'pbc.allclose(): incompatible shapes {A.shape} and {B.shape}') \
            from None
    return A, B, m.vt


def _compare(A, B, vt, rtol, atol, equal_nan):
    """(cond, |A - B|, B, rtol, atol): where A and B are close, in vt's precision."""
    rtol_d, atol_d = _TOLERANCES.get(vt, _DEFAULT_TOLERANCES)
    rtol, atol = (rtol_d if rtol is None else rtol), (atol_d if atol is None else atol)
    if vt in (VarType.Bool, VarType.Pointer):       # no tolerance: equal or not
        A, B = A.astype(np.float64), B.astype(np.float64)
        return A == B, np.abs(A - B), B, rtol, atol
    dtype = np.float32 if vt == VarType.Float32 else np.float64
    A, B = A.astype(dtype), B.astype(dtype)
    with np.errstate(invalid='ignore', over='ignore'):
        diff = np.abs(A - B)
        # Infinities are close only to themselves (the formula alone would let an infinite
        # tolerance accept anything)
        cond = ((diff <= np.abs(B) * rtol + atol) & np.isfinite(A) & np.isfinite(B)) \
            | (A == B)
    if equal_nan:
        cond |= np.isnan(A) & np.isnan(B)
    return cond, diff, B, rtol, atol


def _is_plain(x):
    return isinstance(x, (np.ndarray, bool, int, float, np.generic))


def _length(x):
    try:
        return len(x)
    except TypeError:
        return 0


def allclose(a, b, rtol=None, atol=None, equal_nan=False):
    """Whether a and b are elementwise equal within |a - b| <= |b| * rtol + atol (a Python
    bool). a and b may be pbc arrays, vectors, matrices, tensors, NumPy arrays, Python
    numbers or nested sequences; they broadcast against each other. With a pbc operand the
    comparison has the precision of a - b, and the defaults are rtol=1e-3, atol=1e-5 for
    Float32, rtol=1e-5, atol=1e-8 otherwise (as Dr.Jit); masks must be equal. Infinities
    are close only to equal infinities (as NumPy); NaNs are close to NaNs only with
    equal_nan. RuntimeError for shapes that do not broadcast, TypeError for types that do
    not combine."""
    if is_array_v(a) or is_array_v(b):
        if (is_array_v(a) and is_mask_v(a)) or (is_array_v(b) and is_mask_v(b)):
            A, B, _ = _operands(a, b)
            return bool(np.all(A == B))
        return bool(np.all(_compare(*_operands(a, b), rtol, atol, equal_nan)[0]))
    if _is_plain(a) and _is_plain(b):
        A, B = np.asarray(a), np.asarray(b)
        if A.ndim == B.ndim or 0 in (A.ndim, B.ndim):     # NumPy's broadcasting agrees
            try:
                A, B = np.broadcast_arrays(A, B)
            except ValueError:
                raise RuntimeError(f'pbc.allclose(): incompatible shapes {A.shape} and '
                                   f'{B.shape}') from None
            return bool(np.all(_compare(A, B, VarType.Float64, rtol, atol, equal_nan)[0]))
    # Sequences: entry by entry, outer dimension first; entries of size 1 broadcast
    la, lb = _length(a), _length(b)
    n = max(la, lb)
    if la not in (n, 0, 1) or lb not in (n, 0, 1):
        raise RuntimeError(f'pbc.allclose(): incompatible sizes ({la} and {lb})')
    if n == 0:
        return bool(np.all(_compare(np.asarray(a), np.asarray(b), VarType.Float64, rtol,
                                    atol, equal_nan)[0]))
    pick = lambda x, k, i: x if k == 0 else x[0] if k == 1 else x[i]  # noqa: E731
    return all(allclose(pick(a, la, i), pick(b, lb, i), rtol, atol, equal_nan)
               for i in range(n))


def assert_allclose(actual, desired, rtol=None, atol=None, equal_nan=False, err_msg=''):
    """Raises AssertionError unless allclose(actual, desired, ...), with a report like
    NumPy's (mismatched elements, largest differences, both values) when a pbc array is
    involved."""
    prefix = err_msg + '\n' if err_msg else ''
    if not (is_array_v(actual) or is_array_v(desired)):
        if not allclose(actual, desired, rtol, atol, equal_nan):
            raise AssertionError(f'{prefix}assert_allclose() failed: actual={actual!r}, '
                                 f'desired={desired!r}')
        return
    A, B, vt = _operands(actual, desired)
    cond, diff, B, rtol, atol = _compare(A, B, vt, rtol, atol, equal_nan)
    if np.all(cond):
        return
    bad = ~cond
    denom = np.abs(B) + atol
    rel = diff / np.where(denom > 0, denom, 1)
    n_bad, n = int(np.count_nonzero(bad)), cond.size

    def labeled(name, x):
        label = f' {name}: '
        return label + repr(x).replace('\n', '\n' + ' ' * len(label))

    raise AssertionError(
        f'{prefix}Arrays are not equal to tolerance rtol={rtol:g}, atol={atol:g}\n'
        f'Mismatched elements: {n_bad} / {n} ({100.0 * n_bad / n:.3g}%)\n'
        f'Max absolute difference: {float(np.max(diff[bad])):.6g}\n'
        f'Max relative difference: {float(np.max(rel[bad])):.6g}\n'
        f'{labeled("ACTUAL", actual)}\n{labeled("DESIRED", desired)}')


# ---- assert_true / assert_false ------------------------------------------------------------
class _Lanes:
    """An argument of an assertion message: a pbc array's values on the failing lanes."""

    def __init__(self, x, lanes, width):
        v = x.numpy()
        if isinstance(x, StaticArray):
            v = v.T                                  # one row per lane
        self.vector = isinstance(x, StaticArray)
        if lanes is None:                            # every lane failed
            self.values = v
            return
        if len(v) not in (1, width):
            raise ValueError(f'pbc.assert_true(): an argument has {len(v)} lanes, the '
                             f'condition {width}')
        self.values = v[np.minimum(lanes, len(v) - 1)]     # width-1 arguments broadcast

    def __format__(self, spec):
        return format_grid(self.values, spec=spec)

    __str__ = __repr__ = lambda self: format(self, '')


def _message(fmt, args, kwargs, lanes, width):
    """'Assertion failure!' or 'Assertion failure: ' + fmt formatted with the values of the
    failing lanes."""
    if not fmt:
        return 'Assertion failure!'
    pick = lambda x: _Lanes(x, lanes, width) if isinstance(x, (ArrayBase, StaticArray)) \
        else x  # noqa: E731
    return 'Assertion failure: ' + fmt.format(*map(pick, args),
                                              **{k: pick(v) for k, v in kwargs.items()})


def assert_true(cond, fmt=None, *args, tb_depth=3, tb_skip=0, **kwargs):
    """With JitFlag.Debug set (otherwise it does nothing, as Dr.Jit): raises AssertionError
    if cond (a bool or a Bool array) is False on any lane of the enclosing if/loop body;
    the message formats fmt (str.format fields) with the failing lanes' values of the
    pbc-array arguments. In symbolic code (a symbolic loop body or call target) values are
    not known yet: the kernel captures the failing lanes' values and 'Assertion failure:
    ...' with them and the caller's traceback (tb_depth entries, skipping tb_skip) goes to
    standard error after it runs (a pbc.print)."""
    if not flag(JitFlag.Debug) or cond is True:
        return
    if isinstance(cond, (bool, np.bool_)):
        if cond:
            return
        failed = True
    elif isinstance(cond, ArrayBase) and cond.Type == 'bool':
        failed = ~cond
    else:
        raise TypeError(f'pbc.assert_true(): the condition must be a bool or a Bool array, '
                        f'not {type(cond).__name__}')
    if in_symbolic_code():
        frame = sys._getframe(tb_skip + 1)      # the caller's line, as Dr.Jit reports it
        tb = types.TracebackType(None, frame, frame.f_lasti, frame.f_lineno)
        tb_msg = ''.join(traceback.format_tb(tb, limit=tb_depth))
        _device_print('Assertion failure' + (': ' + fmt if fmt else '!') + '\n{tb_msg}',
                      *args, tb_msg=tb_msg, active=failed, end='', file=sys.stderr, **kwargs)
        return
    if failed is True:
        raise AssertionError(_message(fmt, args, kwargs, None, 1))
    outer = _runtime.mask_top(type(cond))     # lanes of an enclosing if_stmt / loop body
    if outer is not None:
        failed = failed & outer
    mask = failed.numpy()
    if mask.any():
        lanes = None if len(mask) == 1 else np.flatnonzero(mask)
        raise AssertionError(_message(fmt, args, kwargs, lanes, len(mask)))


def assert_false(cond, fmt=None, *args, tb_depth=3, tb_skip=0, **kwargs):
    """assert_true(not cond, ...)."""
    return assert_true(not cond if isinstance(cond, (bool, np.bool_)) else ~cond, fmt,
                       *args, tb_depth=tb_depth, tb_skip=tb_skip + 1, **kwargs)
