# Static vectors' storage and componentwise arithmetic; the rest of the class is Python
# (pbc/vector.py, StaticArray).
#
# A vector operator traces one flat op per component, and the Python around those ops
# (pairing the components, making the result vector) used to cost more than the ops
# themselves. The common cases therefore stay in C: components that are flat arrays, and
# an operand that is a vector of the same class, a flat array or a Python int or float.
# Everything else (nested vectors, sequences, NumPy data, two vector classes) takes the
# general path, StaticArray._map2, which gives the same results.

import operator as _operator

cdef dict vector_classes = {}
VECTOR_CLASSES = vector_classes      # (size, component class) -> vector class (pbc.vector)

# The general path's function per op, given to StaticArray._map2. `==` and `!=` go through
# op_binary, which raises TypeError for an operand it cannot compare (Python's `==` would
# fall back to identity and give a plain False).
cdef dict GENERAL_PATH = {
    OP_ADD: _operator.add, OP_SUB: _operator.sub, OP_MUL: _operator.mul,
    OP_DIV: _operator.truediv, OP_AND: _operator.and_, OP_OR: _operator.or_,
    OP_XOR: _operator.xor, OP_LT: _operator.lt, OP_LE: _operator.le, OP_GT: _operator.gt,
    OP_GE: _operator.ge, OP_EQ: lambda a, b: op_binary('eq', a, b),
    OP_NE: lambda a, b: op_binary('ne', a, b)}


cdef class VectorBase:
    """The components of a static vector (a tuple of flat arrays, or of vectors for a
    nested type) and the C paths of its componentwise operators."""
    cdef public tuple _items

    def __add__(self, o): return vec_binary(OP_ADD, ARITHMETIC, self, o, False)
    def __radd__(self, o): return vec_binary(OP_ADD, ARITHMETIC, self, o, True)
    def __sub__(self, o): return vec_binary(OP_SUB, ARITHMETIC, self, o, False)
    def __rsub__(self, o): return vec_binary(OP_SUB, ARITHMETIC, self, o, True)
    def __mul__(self, o): return vec_binary(OP_MUL, ARITHMETIC, self, o, False)
    def __rmul__(self, o): return vec_binary(OP_MUL, ARITHMETIC, self, o, True)
    def __truediv__(self, o): return vec_binary(OP_DIV, ARITHMETIC, self, o, False)
    def __rtruediv__(self, o): return vec_binary(OP_DIV, ARITHMETIC, self, o, True)
    def __and__(self, o): return vec_binary(OP_AND, ARITHMETIC, self, o, False)
    def __rand__(self, o): return vec_binary(OP_AND, ARITHMETIC, self, o, True)
    def __or__(self, o): return vec_binary(OP_OR, ARITHMETIC, self, o, False)
    def __ror__(self, o): return vec_binary(OP_OR, ARITHMETIC, self, o, True)
    def __xor__(self, o): return vec_binary(OP_XOR, ARITHMETIC, self, o, False)
    def __rxor__(self, o): return vec_binary(OP_XOR, ARITHMETIC, self, o, True)
    # In-place forms change the vector object (StaticArray._inplace), as Dr.Jit does.
    def __iadd__(self, o): return self._inplace(vec_binary(OP_ADD, ARITHMETIC, self, o, False))
    def __isub__(self, o): return self._inplace(vec_binary(OP_SUB, ARITHMETIC, self, o, False))
    def __imul__(self, o): return self._inplace(vec_binary(OP_MUL, ARITHMETIC, self, o, False))
    def __itruediv__(self, o):
        return self._inplace(vec_binary(OP_DIV, ARITHMETIC, self, o, False))
    def __iand__(self, o): return self._inplace(vec_binary(OP_AND, ARITHMETIC, self, o, False))
    def __ior__(self, o): return self._inplace(vec_binary(OP_OR, ARITHMETIC, self, o, False))
    def __ixor__(self, o): return self._inplace(vec_binary(OP_XOR, ARITHMETIC, self, o, False))

    def __eq__(self, o): return vec_binary(OP_EQ, COMPARISON, self, o, False)
    def __ne__(self, o): return vec_binary(OP_NE, COMPARISON, self, o, False)
    def __lt__(self, o): return vec_binary(OP_LT, COMPARISON, self, o, False)
    def __le__(self, o): return vec_binary(OP_LE, COMPARISON, self, o, False)
    def __gt__(self, o): return vec_binary(OP_GT, COMPARISON, self, o, False)
    def __ge__(self, o): return vec_binary(OP_GE, COMPARISON, self, o, False)

    def __neg__(self):
        cdef tuple xs = self._items
        cdef Py_ssize_t k, n = len(xs)
        if not all_flat(xs):
            return self._map1(_operator.neg)
        cdef list out = [None] * n
        for k in range(n):
            out[k] = unop(OP_NEG, <ArrayBase> xs[k])
        return vector_of(out)

    def __len__(self):
        return len(self._items)

    def __iter__(self):
        return iter(self._items)

    # (set through __setitem__, which converts the value to the component type)
    @property
    def x(self): return self._items[0]
    @x.setter
    def x(self, value): self[0] = value
    @property
    def y(self): return self._items[1]
    @y.setter
    def y(self, value): self[1] = value
    @property
    def z(self): return self._items[2]
    @z.setter
    def z(self, value): self[2] = value
    @property
    def w(self): return self._items[3]
    @w.setter
    def w(self, value): self[3] = value


cdef inline bint all_flat(tuple xs):
    for x in xs:
        if not isinstance(x, ArrayBase):
            return False
    return True

cdef object vec_binary(uint16_t op, BinopMode mode, VectorBase v, object o, bint reflected):
    """v <op> o (o <op> v if reflected), component by component."""
    cdef tuple xs = v._items, ys = None
    cdef Py_ssize_t k, n = len(xs)
    t = type(o)
    if t is type(v):
        ys = (<VectorBase> o)._items
    elif not (t is float or t is int or isinstance(o, ArrayBase)):
        return v._map2(o, GENERAL_PATH[op], reflected)
    if not all_flat(xs) or (ys is not None and not all_flat(ys)):
        return v._map2(o, GENERAL_PATH[op], reflected)
    cdef list out = [None] * n
    for k in range(n):
        y = o if ys is None else ys[k]
        out[k] = component_op(op, mode, y, xs[k]) if reflected else \
            component_op(op, mode, xs[k], y)
    return vector_of(out)

cdef inline object component_op(uint16_t op, BinopMode mode, object a, object b):
    # (OP_DIV is `/` here: vectors' `//` takes the general path)
    return truediv(a, b) if op == OP_DIV else binop(op, a, b, mode)

cdef object vector_of(list items):
    """The vector of these components: its class is that of their size and type."""
    cdef type cls = vector_classes.get((len(items), type(items[0])))
    if cls is None:
        raise TypeError(f'pbc: no vector type of {len(items)} {type(items[0]).__name__} '
                        'components')
    # The type's tp_new directly, as wrap() does for flat arrays.
    cdef VectorBase r = <VectorBase> (<PyTypeObject*> cls).tp_new(cls, <PyObject*> EMPTY, NULL)
    r._items = tuple(items)
    return r


def vector_dot(VectorBase a, VectorBase b):
    """The per-lane dot product of two vectors of flat arrays of one class (one multiply and
    a chain of fused multiply-adds), or None for other components."""
    cdef tuple xs = a._items, ys = b._items
    cdef Py_ssize_t k, n = len(xs)
    if n == 0 or len(ys) != n or not all_flat(xs) or not all_flat(ys):
        return None
    acc = binop(OP_MUL, xs[0], ys[0], ARITHMETIC)
    for k in range(1, n):
        acc = fma3(xs[k], ys[k], acc)
    return acc


def vector_cross(VectorBase a, VectorBase b):
    """The cross product of two 3-vectors of flat arrays (each component one multiply, a
    negation and a fused multiply-add), or None for other components."""
    cdef tuple xs = a._items, ys = b._items
    if len(xs) != 3 or len(ys) != 3 or not all_flat(xs) or not all_flat(ys):
        return None
    ax, ay, az = xs
    bx, by, bz = ys
    return vector_of([fma_minus(ay, bz, az, by), fma_minus(az, bx, ax, bz),
                      fma_minus(ax, by, ay, bx)])

cdef inline object fma_minus(object a, object b, object c, object d):
    """a * b - c * d, with one rounding fewer than two products and a difference."""
    return fma3(a, b, unop(OP_NEG, <ArrayBase> binop(OP_MUL, c, d, ARITHMETIC)))
