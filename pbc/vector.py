"""Static vectors (Array2f ... Array4b) and matrices (Matrix2f ... Matrix4f) of flat arrays.

A static vector holds `Size` flat JIT arrays and applies every operation componentwise;
flat arrays and Python scalars broadcast across components. Matrices are row-major stacks
of row vectors; `@` (and `*` between two matrices, as in Dr.Jit) is the matrix product.
"""

import numpy as np

from ._runtime import ArrayBase, op_binary
from .printing import array_repr

_VECTORS = {}      # (size, flat class) -> vector class


def vector_type(size, flat):
    return _VECTORS[(size, flat)]


def _components(x, size):
    if isinstance(x, StaticArray):
        if x.Size != size:
            raise ValueError(f'pbc: cannot combine vectors of sizes {x.Size} and {size}')
        return x._items
    return (x,) * size


class StaticArray:
    Size = 0
    Value = None          # flat component class
    __slots__ = ('_items',)
    __array_priority__ = 200

    def __init__(self, *args):
        n, V = self.Size, self.Value
        if len(args) == 0:
            items = [V() for _ in range(n)]
        elif len(args) == 1:
            a = args[0]
            if isinstance(a, StaticArray):
                items = [V(c) for c in _components(a, n)]
            elif isinstance(a, (list, tuple)) and len(a) == n:
                items = [V(c) for c in a]
            elif isinstance(a, np.ndarray) and a.ndim == 2:
                if a.shape[0] != n:
                    raise ValueError(f'pbc: {type(self).__name__} needs shape ({n}, N), '
                                     f'got {a.shape}')
                items = [V(np.ascontiguousarray(row)) for row in a]
            else:
                items = [V(a)] * n
        elif len(args) == n:
            items = [V(c) for c in args]
        else:
            raise TypeError(f'pbc: {type(self).__name__} takes 0, 1 or {n} arguments, '
                            f'got {len(args)}')
        object.__setattr__(self, '_items', tuple(items))

    @classmethod
    def _from(cls, items):
        out = object.__new__(cls)
        object.__setattr__(out, '_items', tuple(items))
        return out

    def _pbc_children(self):
        return list(self._items)

    def _pbc_rebuild(self, children):
        return self._from(children)

    # ---- components ----
    def __len__(self):
        return self.Size

    def __getitem__(self, i):
        return self._items[i]

    def __setitem__(self, i, value):
        items = list(self._items)
        if isinstance(i, ArrayBase):          # v[mask] = w: masked assignment per component
            from .routines import select
            items = [select(i, w, c) for c, w in zip(items, _components(value, self.Size))]
        else:
            items[i] = self.Value(value)
        object.__setattr__(self, '_items', tuple(items))

    def __iter__(self):
        return iter(self._items)

    x = property(lambda s: s._items[0], lambda s, v: s.__setitem__(0, v))
    y = property(lambda s: s._items[1], lambda s, v: s.__setitem__(1, v))
    z = property(lambda s: s._items[2], lambda s, v: s.__setitem__(2, v))
    w = property(lambda s: s._items[3], lambda s, v: s.__setitem__(3, v))

    def width(self):
        return max((len(c) for c in self._items), default=0)

    # ---- componentwise operators ----
    def _map2(self, other, fn, reflected=False):
        if not isinstance(other, (StaticArray, ArrayBase, int, float, bool)):
            return NotImplemented
        n = self.Size
        pairs = zip(_components(other, n), self._items) if reflected else \
            zip(self._items, _components(other, n))
        items = [fn(a, b) for a, b in pairs]
        return vector_type(n, type(items[0]))._from(items)

    def _map1(self, fn):
        items = [fn(a) for a in self._items]
        return vector_type(self.Size, type(items[0]))._from(items)

    def __add__(self, o): return self._map2(o, lambda a, b: a + b)
    def __radd__(self, o): return self._map2(o, lambda a, b: a + b, True)
    def __sub__(self, o): return self._map2(o, lambda a, b: a - b)
    def __rsub__(self, o): return self._map2(o, lambda a, b: a - b, True)
    def __mul__(self, o): return self._map2(o, lambda a, b: a * b)
    def __rmul__(self, o): return self._map2(o, lambda a, b: a * b, True)
    def __truediv__(self, o): return self._map2(o, lambda a, b: a / b)
    def __rtruediv__(self, o): return self._map2(o, lambda a, b: a / b, True)
    def __floordiv__(self, o): return self._map2(o, lambda a, b: a // b)
    def __mod__(self, o): return self._map2(o, lambda a, b: a % b)
    def __pow__(self, o): return self._map2(o, lambda a, b: a ** b)
    def __and__(self, o): return self._map2(o, lambda a, b: a & b)
    def __rand__(self, o): return self._map2(o, lambda a, b: a & b, True)
    def __or__(self, o): return self._map2(o, lambda a, b: a | b)
    def __ror__(self, o): return self._map2(o, lambda a, b: a | b, True)
    def __xor__(self, o): return self._map2(o, lambda a, b: a ^ b)
    def __lshift__(self, o): return self._map2(o, lambda a, b: a << b)
    def __rshift__(self, o): return self._map2(o, lambda a, b: a >> b)
    def __lt__(self, o): return self._map2(o, lambda a, b: a < b)
    def __le__(self, o): return self._map2(o, lambda a, b: a <= b)
    def __gt__(self, o): return self._map2(o, lambda a, b: a > b)
    def __ge__(self, o): return self._map2(o, lambda a, b: a >= b)
    def __eq__(self, o): return self._map2(o, lambda a, b: op_binary('eq', a, b))
    def __ne__(self, o): return self._map2(o, lambda a, b: op_binary('ne', a, b))
    def __neg__(self): return self._map1(lambda a: -a)
    def __invert__(self): return self._map1(lambda a: ~a)
    def __abs__(self): return self._map1(abs)
    __hash__ = None

    def __bool__(self):
        raise TypeError('pbc: bool() of a static vector is ambiguous; use pbc.all()/any()')

    def numpy(self):
        """Shape (Size, N), static dimension first (as Dr.Jit)."""
        w = self.width()
        return np.stack([np.broadcast_to(c.numpy(), w) for c in self._items])

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    __repr__ = array_repr


class Matrix:
    """Row-major square matrix of flat arrays: m[i] is row i (a static vector)."""
    Size = 0
    Row = None
    __slots__ = ('_rows',)

    def __init__(self, *args):
        n, R = self.Size, self.Row
        if len(args) == 0:
            rows = [R(*[1.0 if i == j else 0.0 for j in range(n)]) for i in range(n)]
        elif len(args) == 1 and isinstance(args[0], Matrix):
            rows = [R(r) for r in args[0]._rows]
        elif len(args) == 1 and isinstance(args[0], (int, float, ArrayBase)):
            v = args[0]   # a scalar times the identity, as Dr.Jit
            rows = [R(*[v if i == j else 0.0 for j in range(n)]) for i in range(n)]
        elif len(args) == 1 and np.ndim(args[0]) == 2:
            rows = [R(*[float(x) for x in row]) for row in np.asarray(args[0])]
        elif len(args) == n * n:
            rows = [R(*args[i * n:(i + 1) * n]) for i in range(n)]
        elif len(args) == n:
            rows = [R(r) for r in args]
        else:
            raise TypeError(f'pbc: {type(self).__name__} takes 0, 1, {n} rows or {n * n} '
                            f'entries, got {len(args)} arguments')
        object.__setattr__(self, '_rows', tuple(rows))

    @classmethod
    def _from(cls, rows):
        out = object.__new__(cls)
        object.__setattr__(out, '_rows', tuple(rows))
        return out

    def _pbc_children(self):
        return list(self._rows)

    def _pbc_rebuild(self, children):
        return self._from(children)

    def __getitem__(self, i):
        if isinstance(i, tuple):
            return self._rows[i[0]][i[1]]
        return self._rows[i]

    def __len__(self):
        return self.Size

    def __matmul__(self, o):
        n = self.Size
        if isinstance(o, Matrix):
            from .routines import fma
            cols = [[o._rows[k][j] for k in range(n)] for j in range(n)]
            rows = []
            for i in range(n):
                r = self._rows[i]
                row = []
                for j in range(n):
                    acc = r[0] * cols[j][0]
                    for k in range(1, n):
                        acc = fma(r[k], cols[j][k], acc)
                    row.append(acc)
                rows.append(self.Row(*row))
            return type(self)._from(rows)
        if isinstance(o, StaticArray):
            from .routines import dot
            return self.Row(*[dot(r, o) for r in self._rows])
        return NotImplemented

    def __mul__(self, o):
        if isinstance(o, Matrix):
            return self @ o
        return type(self)._from([r * o for r in self._rows])

    def __rmul__(self, o):
        return type(self)._from([o * r for r in self._rows])

    def __add__(self, o):
        oth = o._rows if isinstance(o, Matrix) else (o,) * self.Size
        return type(self)._from([a + b for a, b in zip(self._rows, oth)])

    def __sub__(self, o):
        oth = o._rows if isinstance(o, Matrix) else (o,) * self.Size
        return type(self)._from([a - b for a, b in zip(self._rows, oth)])

    def __neg__(self):
        return type(self)._from([-r for r in self._rows])

    def numpy(self):
        """Shape (Size, Size, N)."""
        return np.stack([r.numpy() for r in self._rows])

    __repr__ = array_repr


def transpose(m):
    n = m.Size
    return type(m)._from([m.Row(*[m._rows[j][i] for j in range(n)]) for i in range(n)])


def make_vector_types(flat, module_name):
    """Array{2,3,4}{f,f64,i,u,b} and Matrix{2,3,4}f for one backend's flat classes."""
    suffix = {'f': 'Float32', 'f64': 'Float64', 'i': 'Int32', 'u': 'UInt32', 'b': 'Bool'}
    types = {}
    for n in (2, 3, 4):
        for s, comp in suffix.items():
            name = f'Array{n}{s}'
            cls = type(name, (StaticArray,), {'Size': n, 'Value': flat[comp], '__slots__': (),
                                              '__module__': module_name, '__qualname__': name})
            _VECTORS[(n, flat[comp])] = cls
            types[name] = cls
    for comp in ('Int64', 'UInt64'):
        for n in (2, 3, 4):
            name = f'Array{n}{"i64" if comp == "Int64" else "u64"}'
            cls = type(name, (StaticArray,), {'Size': n, 'Value': flat[comp], '__slots__': (),
                                              '__module__': module_name, '__qualname__': name})
            _VECTORS[(n, flat[comp])] = cls
            types[name] = cls
    for n in (2, 3, 4):
        name = f'Matrix{n}f'
        types[name] = type(name, (Matrix,), {'Size': n, 'Row': types[f'Array{n}f'],
                                             '__slots__': (), '__module__': module_name,
                                             '__qualname__': name})
    return types
