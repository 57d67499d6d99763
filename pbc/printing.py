"""String forms of arrays, as Dr.Jit prints them: long arrays show three values per end."""

import numpy as np

THRESHOLD = 20


def format_scalar(x):
    if isinstance(x, (bool, np.bool_)):
        return 'True' if x else 'False'
    if isinstance(x, (float, np.floating)):
        return '%g' % x
    return str(int(x))


def format_values(values):
    n = len(values)
    if n > THRESHOLD:
        head = [format_scalar(v) for v in values[:3]]
        tail = [format_scalar(v) for v in values[-3:]]
        return '[' + ', '.join(head + [f'.. {n - 6} skipped ..'] + tail) + ']'
    return '[' + ', '.join(format_scalar(v) for v in values) + ']'


def format_rows(rows):
    """Static vectors print per lane: [[x0, y0, z0], [x1, y1, z1], ...]."""
    n = len(rows)
    fmt = lambda r: '[' + ', '.join(format_scalar(v) for v in r) + ']'  # noqa: E731
    if n > THRESHOLD:
        parts = [fmt(r) for r in rows[:3]] + [f'.. {n - 6} skipped ..'] + \
                [fmt(r) for r in rows[-3:]]
    else:
        parts = [fmt(r) for r in rows]
    return '[' + ',\n '.join(parts) + ']'


def array_repr(a):
    return format_values(a.numpy())
