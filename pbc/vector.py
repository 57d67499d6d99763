"""Static vectors (Array2f ... Array4b) and matrices (Matrix2f ... Matrix4f) of flat arrays.

A static vector holds `Size` flat JIT arrays and applies every operation componentwise;
flat arrays and Python scalars broadcast across components. Matrices are row-major stacks
of row vectors; `@` (and `*` between two matrices, as in Dr.Jit) is the matrix product.
"""

import functools
import operator

import numpy as np

from ._runtime import VECTOR_CLASSES, ArrayBase, VarState, VectorBase, op_select
from .ad.api import GradAttribute
from .evaluate import eval as _eval
from .printing import array_repr

_VECTORS = VECTOR_CLASSES      # (size, flat class) -> vector class


def vector_type(size, flat):
    return _VECTORS[(size, flat)]


OPERANDS = (ArrayBase, int, float, bool, list, tuple, np.ndarray, np.number, np.bool_)


def _common_state(parts):
    states = {p.state for p in parts}
    return states.pop() if len(states) == 1 else VarState.Mixed


def _is_mask(i):
    """Whether index i is a Bool array or vector (a mask), not a position."""
    return (isinstance(i, ArrayBase) and i.Type == 'bool') or (
        isinstance(i, StaticArray) and getattr(i.Value, 'Type', None) == 'bool')


def _components(x, size):
    """x per component: a vector's own, a sequence's entries (one per component, as Dr.Jit
    converts a sequence to the vector type), or x itself for each."""
    if isinstance(x, StaticArray):
        if x.Size != size:
            raise ValueError(f'pbc: cannot combine vectors of sizes {x.Size} and {size}')
        return x._items
    if isinstance(x, (list, tuple)) or (isinstance(x, np.ndarray) and x.ndim > 0):
        if len(x) != size:
            raise ValueError(f'pbc: cannot combine a sequence of length {len(x)} with a '
                             f'vector of size {size}')
        return tuple(x)
    return (x,) * size


# ---- shared by vectors and matrices ----
def _update_in_place(self, r):
    """self updated to r (a += b changes the vector or matrix object, as in Dr.Jit): its
    components change in place, so that names bound to them (vy = v.y) see it too. A result
    of another type rebinds the name instead."""
    if r is NotImplemented or type(r) is not type(self):
        return r
    assign(self, r)
    return self


def _identity_hash(self):
    # (== compares lanes), as for flat arrays
    return id(self) >> 4


def _numpy_array(self, dtype=None, copy=None):
    a = self.numpy()
    return a if dtype is None else a.astype(dtype)


class StaticArray(VectorBase):
    # (VectorBase, in C, holds the components and the common cases of the componentwise
    # operators; the methods here are the general forms)
    Size = 0
    Value = None          # flat component class
    __slots__ = ()
    __array_priority__ = 200
    grad = GradAttribute()

    def __init__(self, *args, flip_axes=False, **kwargs):
        n, V = self.Size, self.Value
        if kwargs:
            raise TypeError(f'pbc: {type(self).__name__}(): Unknown keyword argument '
                            f'{next(iter(kwargs))!r}')
        if len(args) == 1 and not isinstance(args[0], (list, tuple, np.ndarray)) and hasattr(
                args[0], '__iter__') and not isinstance(args[0], (ArrayBase, StaticArray)) \
                and not hasattr(args[0], 'shape'):
            args = (list(args[0]),)           # an iterator or generator of components
        if len(args) == 0:
            items = [V() for _ in range(n)]
        elif len(args) == 1:
            a = args[0]
            if hasattr(a, 'array') and hasattr(a, 'shape'):         # a tensor: (Size, N)
                from .tensor_shape import transpose
                a = transpose(a) if flip_axes else a
                if len(a.shape) not in (1, 2) or a.shape[0] != n:
                    raise ValueError(f'pbc: {type(self).__name__} needs a tensor of shape '
                                     f'({n},) or ({n}, N), got {a.shape}')
                a = [a[k].array for k in range(n)]
            if isinstance(a, np.ndarray) and flip_axes:
                a = a.T               # (N, Size) data, as Dr.Jit's flip_axes
            if isinstance(a, StaticArray):
                items = [V(c) for c in _components(a, n)]
            elif isinstance(a, (list, tuple)):
                if len(a) != n:
                    raise TypeError(f'pbc: {type(self).__name__}: Input has the wrong size '
                                    f'(expected {n} elements, got {len(a)}).')
                items = [V(c) for c in a]
            elif isinstance(a, np.ndarray) and a.ndim in (1, 2):
                if a.shape[0] != n:
                    raise ValueError(f'pbc: {type(self).__name__} needs shape ({n},) or '
                                     f'({n}, N), got {a.shape}')
                items = [V(np.ascontiguousarray(row)) for row in a]
            else:
                # One object per component: an in-place change of one must not show in
                # the others.
                items = [V(a) for _ in range(n)]
        elif len(args) == n:
            items = [V(c) for c in args]
        else:
            raise TypeError(f'pbc: {type(self).__name__}: Input has the wrong size (expected '
                            f'{n} elements, got {len(args)}).')
        _set_items(self, tuple(items))

    @classmethod
    def _from(cls, items):
        out = VectorBase.__new__(cls)
        _set_items(out, tuple(items))
        return out

    def _pbc_children(self):
        return list(self._items)

    def _pbc_rebuild(self, children):
        return self._from(children)

    # ---- components (len, iteration and .x .y .z .w: VectorBase) ----
    def __getitem__(self, i):
        if _is_mask(i):                       # v[mask] += w: see __setitem__
            return self._from([type(c)(c) for c in self._items])
        return self._items[i]

    def __setitem__(self, i, value):
        if _is_mask(i):
            # v[mask] = w: each component changes in place where the mask holds (`vy = v.y`
            # sees it, as it sees `v += 1`)
            assign(self, _where(i, value, self))
            return
        if self._items[i] is value:           # v.x += 1 wrote into the component itself
            return
        items = list(self._items)
        items[i] = self.Value(value)
        _set_items(self, tuple(items))

    def _pbc_assign(self, children):
        _set_items(self, tuple(children))

    def __getattr__(self, name):
        # Swizzles: v.xy, v.zyx, v.xxxx (as Dr.Jit), new vectors of the named components.
        if 2 <= len(name) <= 4 and set(name) <= set(_SWIZZLE):
            items = self._items
            try:
                picked = [items[_SWIZZLE[c]] for c in name]
            except IndexError:
                pass
            else:
                return vector_type(len(name), self.Value)._from(
                    [type(c)(c) for c in picked])
        raise AttributeError(f'{type(self).__name__!r} object has no attribute {name!r}')

    def __setattr__(self, name, value):
        if 2 <= len(name) <= 4 and set(name) <= set(_SWIZZLE) and len(set(name)) == len(name):
            parts = _components(value, len(name))
            for c, v in zip(name, parts):
                self[_SWIZZLE[c]] = v
            return
        object.__setattr__(self, name, value)

    def width(self):
        return max((c.width() if isinstance(c, StaticArray) else len(c) for c in self._items),
                   default=0)

    @property
    def state(self):
        """The components' common VarState, or VarState.Mixed."""
        return _common_state(self._items)

    @property
    def shape(self):
        """(Size, N), as pbc.shape(); RuntimeError if the component widths do not fit."""
        from .traits import shape
        return shape(self)

    # ---- componentwise operators (their common cases: VectorBase) ----
    def _map2(self, other, fn, reflected=False):
        if not isinstance(other, (StaticArray,) + OPERANDS):
            return NotImplemented
        pairs = zip(self._items, _components(other, self.Size))
        return self._result([fn(b, a) if reflected else fn(a, b) for a, b in pairs])

    def _map1(self, fn):
        return self._result([fn(a) for a in self._items])

    def _result(self, items):
        """The vector (of the size and component type) of these items."""
        return _VECTORS[self.Size, type(items[0])]._from(items)

    _inplace = _update_in_place

    def __pos__(self): return self._map1(lambda a: type(a)(a))
    def __invert__(self): return self._map1(operator.invert)
    def __abs__(self): return self._map1(abs)

    __hash__ = _identity_hash

    def __bool__(self):
        raise TypeError('pbc: bool() of a static vector is ambiguous; use pbc.all()/any()')

    def numpy(self):
        """Shape (Size, N), static dimension first (as Dr.Jit)."""
        w = self.width()
        _eval(self)                 # (the components in one kernel, not one each)
        parts = [c.numpy() for c in self._items]
        return np.stack([np.broadcast_to(p, p.shape[:-1] + (w,)) for p in parts])

    __array__ = _numpy_array

    __repr__ = array_repr


# (assigning self._items would go through StaticArray.__setattr__, which handles swizzles)
_set_items = VectorBase._items.__set__
_SWIZZLE = {'x': 0, 'y': 1, 'z': 2, 'w': 3}
_BINARY = {'add': operator.add, 'sub': operator.sub, 'mul': operator.mul,
           'truediv': operator.truediv, 'floordiv': operator.floordiv, 'mod': operator.mod,
           'pow': operator.pow, 'and': operator.and_, 'or': operator.or_, 'xor': operator.xor,
           'lshift': operator.lshift, 'rshift': operator.rshift}


def _operators(cls, binary):
    """cls's binary operators, their reflected and in-place forms, from cls._map2, except
    those that a base class defines (VectorBase's, in C)."""
    for name, fn in binary.items():
        forms = {f'__{name}__': lambda s, o, fn=fn: s._map2(o, fn),
                 f'__r{name}__': lambda s, o, fn=fn: s._map2(o, fn, True),
                 f'__i{name}__': lambda s, o, fn=fn: s._inplace(s._map2(o, fn))}
        for dunder, method in forms.items():
            if not hasattr(cls, dunder):
                setattr(cls, dunder, method)


_operators(StaticArray, _BINARY)


def _where(mask, t, f):
    """A new vector (of f's type) of t where mask holds, f elsewhere, per component: t's
    values take f's type (a masked store keeps the destination's type, as a flat array's
    x[mask] = y does)."""
    if isinstance(f, ArrayBase):
        r = op_select(mask, t, f)
        return r if type(r) is type(f) else type(f)(r)
    return f._from([_where(m, a, b) for m, a, b in zip(_components(mask, f.Size),
                                                       _components(t, f.Size), f._items)])


def assign(dst, src):
    """dst (an array, vector or matrix) takes src's values in place, down to its flat
    arrays. A component object that occurs twice in dst is replaced rather than changed."""
    seen = set()
    items = list(dst._pbc_children())
    for k, (d, s) in enumerate(zip(items, src._pbc_children())):
        if id(d) in seen or type(d) is not type(s):
            items[k] = s
        elif isinstance(d, ArrayBase):
            d._assign(s)
        else:
            assign(d, s)
        seen.add(id(items[k]))
    dst._pbc_assign(items)


class Matrix:
    """Row-major square matrix of flat arrays: m[i] is row i (a static vector)."""
    Size = 0
    Row = None
    __slots__ = ('_rows',)
    grad = GradAttribute()

    def __init__(self, *args, **kwargs):
        n, R = self.Size, self.Row
        if kwargs:
            raise TypeError(f'pbc: {type(self).__name__}(): Unknown keyword argument '
                            f'{next(iter(kwargs))!r}')
        if len(args) == 0:
            rows = [R() for _ in range(n)]      # empty entries, as Dr.Jit (pbc.identity: I)
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
            raise TypeError(f'pbc: {type(self).__name__}: Input has the wrong size (expected {n} '
                            f'elements, got {len(args)}).')
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

    def __setitem__(self, i, value):
        if _is_mask(i):
            # m[mask] = w: each entry changes in place where the mask holds (as v[mask] = w;
            # a matrix w gives its entries, anything else every entry)
            parts = value._rows if isinstance(value, Matrix) else (value,) * self.Size
            assign(self, self._from([_where(c, w, r) for c, w, r in
                                     zip(_components(i, self.Size), parts, self._rows)]))
        elif isinstance(i, tuple):
            self._rows[i[0]][i[1]] = value
        elif self._rows[i] is not value:        # (m[1] += v changed the row itself)
            rows = list(self._rows)
            rows[i] = self.Row(value)           # (a copy, as a vector's component store)
            object.__setattr__(self, '_rows', tuple(rows))

    def __len__(self):
        return self.Size

    @property
    def shape(self):
        """(Size, Size, N), as pbc.shape()."""
        from .traits import shape
        return shape(self)

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
        return self._map2(o, operator.mul)

    def __rmul__(self, o):
        return self._map2(o, operator.mul, True)

    def _map2(self, other, fn, reflected=False):
        """fn row by row: with another matrix's rows, a nested sequence's, or other for every
        row (a number, a flat array, or a vector applied to each row)."""
        n = self.Size
        if isinstance(other, Matrix):
            if other.Size != n:
                raise ValueError(f'pbc: cannot combine matrices of sizes {n} and {other.Size}')
            parts = other._rows
        elif isinstance(other, (StaticArray,) + OPERANDS):
            parts = _components(other, n) if np.ndim(other) == 2 else (other,) * n
        else:
            return NotImplemented
        rows = [fn(b, a) if reflected else fn(a, b) for a, b in zip(self._rows, parts)]
        if all(type(r) is self.Row for r in rows):
            return type(self)._from(rows)
        return vector_type(n, type(rows[0]))._from(rows)      # comparisons: Array{n}{n}b

    def _map1(self, fn):
        return type(self)._from([fn(r) for r in self._rows])

    _inplace = _update_in_place

    def _pbc_assign(self, children):
        object.__setattr__(self, '_rows', tuple(children))

    def __eq__(self, o): return self._map2(o, operator.eq)
    def __ne__(self, o): return self._map2(o, operator.ne)
    def __lt__(self, o): return self._map2(o, operator.lt)
    def __le__(self, o): return self._map2(o, operator.le)
    def __gt__(self, o): return self._map2(o, operator.gt)
    def __ge__(self, o): return self._map2(o, operator.ge)
    def __neg__(self): return self._map1(operator.neg)
    def __pos__(self): return self._map1(operator.pos)
    def __abs__(self): return self._map1(abs)
    def __imul__(self, o): return self._inplace(self * o)
    # (m @= n changes m; m @= v, a vector, binds m to the product)
    def __imatmul__(self, o): return self._inplace(self @ o)

    __hash__ = _identity_hash

    @property
    def state(self):
        return _common_state(self._rows)

    @property
    def T(self):
        return transpose(self)

    mT = T          # (the transpose of the last two axes: the matrix's)

    def numpy(self):
        """Shape (Size, Size, N)."""
        _eval(self)
        return np.stack([r.numpy() for r in self._rows])

    __array__ = _numpy_array

    __repr__ = array_repr


_operators(Matrix, {k: v for k, v in _BINARY.items() if k not in ('mul', 'pow')})


def static_shape(T):
    """(sizes, flat): the static sizes of array type T, outermost first ([] for a flat
    type), and the flat class of its components."""
    sizes = []
    while isinstance(T, type) and issubclass(T, (StaticArray, Matrix)):
        sizes.append(T.Size)
        T = T.Value if issubclass(T, StaticArray) else T.Row
    return sizes, T


def transpose(m):
    n = m.Size
    return type(m)._from([m.Row(*[m._rows[j][i] for j in range(n)]) for i in range(n)])


def det(m):
    """The determinant of a square matrix (Matrix2f ... Matrix4f), per lane."""
    return _det(_entries(m))


def trace(m):
    """The sum of a square matrix's diagonal, per lane."""
    a = _entries(m)
    return functools.reduce(operator.add, (a[i][i] for i in range(len(a))))


def inverse(m):
    """The inverse of a square matrix, per lane: its adjugate over its determinant (no
    branch, so every lane computes the same code; a singular matrix gives inf or NaN, as
    Dr.Jit's). Dr.Jit's `rcp` of a matrix is this too."""
    a = _entries(m)
    n = len(a)
    cofactor = [[_signed(_det(_minor(a, i, j)), i + j) for j in range(n)] for i in range(n)]
    scale = 1.0 / functools.reduce(operator.add, (a[0][j] * cofactor[0][j] for j in range(n)))
    return type(m)(*[cofactor[j][i] * scale for i in range(n) for j in range(n)])


def _entries(m):
    if not isinstance(m, Matrix):
        raise TypeError(f'pbc: a matrix is needed (Matrix2f ... Matrix4f), not '
                        f'{type(m).__name__}')
    return [[m._rows[i][j] for j in range(m.Size)] for i in range(m.Size)]


def _minor(a, i, j):
    return [row[:j] + row[j + 1:] for k, row in enumerate(a) if k != i]


def _det(a):
    """Laplace expansion along the first row (sizes up to 4: at most 24 products)."""
    if len(a) == 1:
        return a[0][0]
    if len(a) == 2:
        return a[0][0] * a[1][1] - a[0][1] * a[1][0]
    return functools.reduce(operator.add,
                            (_signed(a[0][j] * _det(_minor(a, 0, j)), j) for j in range(len(a))))


def _signed(x, k):
    return -x if k % 2 else x



def make_vector_types(flat, module_name):
    """Array{2,3,4}{f,f64,i,u,b} and Matrix{2,3,4}{f,f64} for one backend's flat classes."""
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
    for n in (2, 3, 4):          # masks of matrices (their comparisons' results)
        name = f'Array{n}{n}b'
        inner = types[f'Array{n}b']
        types[name] = _VECTORS[(n, inner)] = type(name, (StaticArray,), {
            'Size': n, 'Value': inner, '__slots__': (), '__module__': module_name,
            '__qualname__': name})
    for n in (2, 3, 4):
        for s in ('f', 'f64'):
            name = f'Matrix{n}{s}'
            types[name] = type(name, (Matrix,), {'Size': n, 'Row': types[f'Array{n}{s}'],
                                                 '__slots__': (), '__module__': module_name,
                                                 '__qualname__': name})
    return types
