# ArrayBase: the base of every flat JIT array class. Its operators live here, in Cython, so
# that tracing `a + b` from Python costs one call, one promotion and one hash lookup.

import enum

import numpy as np


class VarState(str, enum.Enum):
    """What an array's variable is now, as Dr.Jit's VarState (a str: `x.state ==
    'literal'` works too)."""
    Invalid = 'invalid'             # an empty array: no variable
    Literal = 'literal'             # a constant, in no memory
    Undefined = 'undefined'
    Unevaluated = 'unevaluated'     # an expression not computed yet
    Evaluated = 'evaluated'         # in memory
    Dirty = 'dirty'                 # in memory, with queued scatters
    Symbolic = 'symbolic'           # a value of a loop or call body being recorded
    Mixed = 'mixed'                 # (vectors: components in different states)

NUMPY_DTYPES = (None, np.bool_, np.int32, np.uint32, np.int64, np.uint64, np.float32, np.float64)
cdef list CLASSES = [None] * 32       # (backend * 16 + type) -> Python class


class CastError(TypeError, RuntimeError):
    """A conversion that cannot be made (a TypeError, and the RuntimeError Dr.Jit raises)."""


class WidthError(ValueError, RuntimeError):
    """An array of the wrong width for the operation (a ValueError, and the RuntimeError
    Dr.Jit raises for it)."""
cdef object repr_hook = None
cdef object power_hook = None
# Called with an array about to change in place (x += 1, x.assign(y), x[mask] = y) while a
# loop body or branch runs: pbc/regions.py tells its own arrays from the caller's. Arrays
# are numbered as they are made (`_birth`): those made inside a region are its own.
cdef object inplace_hook = None
cdef uint64_t arrays_made = 0

def set_inplace_hook(fn):
    global inplace_hook
    inplace_hook = fn

def arrays_made_so_far():
    """The number of arrays made so far: the next one's `_birth` is greater."""
    return arrays_made

cdef extern from *:
    """
    /* A Python subclass of ArrayBase gets CPython's generic operator slots (each `a * b`
       then looks __mul__ up through the class hierarchy and calls it as a method): give
       it ArrayBase's own C slots, which the subclass does not override. */
    static void pbc_use_base_slots(PyObject *sub, PyObject *base) {
        PyTypeObject *t = (PyTypeObject *) sub, *b = (PyTypeObject *) base;
        if (t->tp_as_number && b->tp_as_number) *t->tp_as_number = *b->tp_as_number;
        if (t->tp_as_sequence && b->tp_as_sequence) *t->tp_as_sequence = *b->tp_as_sequence;
        if (t->tp_as_mapping && b->tp_as_mapping) *t->tp_as_mapping = *b->tp_as_mapping;
        PyType_Modified(t);
    }
    """
    void pbc_use_base_slots(object sub, object base)

def register_class(int backend, int vt, cls):
    """Registers a flat array class (a Python subclass of ArrayBase that defines no
    operators of its own)."""
    for k in cls.__mro__[:cls.__mro__.index(ArrayBase)]:
        for name in k.__dict__:
            if name.startswith('__') and name in ArrayBase.__dict__ and name not in (
                    '__module__', '__qualname__', '__doc__', '__slots__'):
                raise TypeError(f'pbc: {cls.__name__} overrides {name}')
    pbc_use_base_slots(cls, ArrayBase)
    CLASSES[backend * 16 + vt] = cls
    cls._vt_code = vt
    cls._backend_code = backend

def set_hooks(repr_fn, power_fn):
    global repr_hook, power_hook
    repr_hook = repr_fn
    power_hook = power_fn

cdef tuple EMPTY = ()

cdef inline ArrayBase wrap(uint8_t backend, uint8_t vt, uint32_t idx):
    """Wraps a new reference in an instance of the registered class (steals the reference)."""
    cdef type cls = CLASSES[backend * 16 + vt]
    if cls is None:
        dec_ext(idx)
        raise TypeError(f'pbc: no array type for {TYPE_NAMES[vt]} on this backend')
    # The type's tp_new directly: `ArrayBase.__new__(cls)` would be a Python method call.
    cdef ArrayBase r = <ArrayBase> (<PyTypeObject*> cls).tp_new(cls, <PyObject*> EMPTY, NULL)
    r._index = idx
    r._vt = vt
    r._backend = backend
    return r

def class_for(x, str tname):
    """The class of element type `tname` on the backend of array (or class) x."""
    return CLASSES[x._backend_code * 16 + TYPE_NAMES.index(tname)]

cdef inline uint8_t promote(uint8_t a, uint8_t b) noexcept nogil:
    return a if a > b else b

cdef inline int scalar_kind(object x):
    """Weak type of a Python scalar operand, or -1 if x is not one."""
    t = type(x)
    if t is float:
        return T_FLOAT32
    if t is int:
        return T_INT32
    if t is bool:
        return T_BOOL
    if isinstance(x, (np.floating, np.integer, np.bool_)):
        return T_FLOAT32 if isinstance(x, np.floating) else (
            T_BOOL if isinstance(x, np.bool_) else T_INT32)
    return -1

cdef inline bint is_sequence(object x):
    return isinstance(x, (list, tuple, np.ndarray))

cdef int kind_of(object x) except -2:
    """The type an operand brings to promotion: an array's own, the weak type of a Python
    scalar, or of the elements of a Python sequence or NumPy array (which then act as an
    array of that weak type, one value per lane); -1 for anything else."""
    if isinstance(x, ArrayBase):
        return (<ArrayBase> x)._vt
    cdef int k = scalar_kind(x)
    if k >= 0 or not is_sequence(x):
        return k
    try:
        kind = np.asarray(x).dtype.kind
    except (ValueError, TypeError):
        return -1
    return T_BOOL if kind == 'b' else T_INT32 if kind in 'iu' else T_FLOAT32 if kind == 'f' \
        else -1

cdef uint32_t operand(object x, uint8_t vt, uint8_t backend) except 0:
    """New reference to x as a variable of type vt (casting arrays, making literals,
    copying sequences in)."""
    cdef ArrayBase a
    if isinstance(x, ArrayBase):
        a = <ArrayBase> x
        if a._index == 0:
            raise ValueError('pbc: operation on an uninitialized (empty) array')
        if a._backend != backend:
            raise TypeError('pbc: cannot mix arrays of different backends')
        return var_cast(a._index, vt, False)
    if is_sequence(x):
        return from_numpy(x, vt, backend)
    return var_literal(vt, 1, scalar_bits(x, vt), backend)

cdef inline void check_allowed(uint16_t op, uint8_t vt) except *:
    if not (OP_ALLOW[op] & kind_bit(vt)):
        raise TypeError(f"pbc: '{OP_NAMES[op]}' is not supported on {TYPE_NAMES[vt]} arrays")

cdef enum BinopMode:
    ARITHMETIC     # operands promoted to a common type, the result's
    COMPARISON     # operands promoted, a Bool result
    SHIFT          # the result has the left operand's type

cdef object binop(uint16_t op, object a, object b, BinopMode mode):
    cdef ArrayBase ref
    cdef int ka, kb
    cdef uint8_t vt, rt
    if isinstance(a, ArrayBase):
        ref = <ArrayBase> a
    elif isinstance(b, ArrayBase):
        ref = <ArrayBase> b
    else:
        return NotImplemented
    ka = kind_of(a)
    kb = kind_of(b)
    if ka < 0 or kb < 0:
        return NotImplemented
    if mode == SHIFT:
        vt = ka if isinstance(a, ArrayBase) else promote(ka, kb)
    else:
        vt = promote(ka, kb)
        if (op == OP_AND or op == OP_OR or op == OP_XOR) and vt != T_BOOL and (
                ka == T_BOOL or kb == T_BOOL):
            if op == OP_AND:
                return mask_and(a, b, ka == T_BOOL)
            if is_float(vt):
                raise TypeError("pbc: only '&' combines a float array with a Bool mask")
    check_allowed(op, vt)
    rt = T_BOOL if mode == COMPARISON else vt
    cdef uint32_t ia = operand(a, vt, ref._backend), ib = 0
    try:
        ib = operand(b, vt, ref._backend)
        return result(op, ref._backend, rt, var_op(op, rt, ia, ib, 0, 0), a, b, None, ia, ib, 0)
    finally:
        dec_ext(ia)
        dec_ext(ib)

cdef inline ArrayBase result(uint16_t op, uint8_t backend, uint8_t vt, uint32_t idx, object a,
                             object b, object c, uint32_t ia, uint32_t ib, uint32_t ic):
    """The one place where op results are made (wrapping new reference idx): with AD nodes
    alive, operands that carry derivatives give the result a node (ia, ib, ic: the operand
    variables the op read)."""
    cdef ArrayBase r = wrap(backend, vt, idx)
    if ad_live:
        ad_op(op, r, a, b, c, ia, ib, ic)
    return r

cdef object mask_and(object a, object b, bint a_is_mask):
    """`x & mask` with a Bool mask (an array, a Python bool or a sequence of them) and a number
    array keeps x where the mask is set and gives 0 elsewhere, as Dr.Jit (not x & 1). The
    other bitwise operators take the mask as the number 0 or 1, as Dr.Jit does."""
    m, x = (a, b) if a_is_mask else (b, a)
    return select3(m, x, 0)

cdef ArrayBase share(ArrayBase a):
    """A new array object for a's variable (and its derivatives). Results are never the
    operand object itself: a later scatter into one must not show in the other (it copies
    instead)."""
    inc_ext(a._index)
    cdef ArrayBase r = wrap(a._backend, a._vt, a._index)
    ad_share(r, a)
    return r

cdef object unop(uint16_t op, ArrayBase a):
    check_allowed(op, a._vt)
    if a._index == 0:
        raise ValueError('pbc: operation on an uninitialized (empty) array')
    if op == OP_ABS and (a._vt == T_UINT32 or a._vt == T_UINT64):
        return share(a)
    return result(op, a._backend, a._vt, var_op(op, a._vt, a._index, 0, 0, 0), a, None, None,
                  a._index, 0, 0)

cdef object select3(object m, object t, object f):
    cdef ArrayBase ref = None
    for x in (t, f, m):
        if isinstance(x, ArrayBase):
            ref = <ArrayBase> x
            break
    if ref is None:
        raise TypeError('pbc.select: at least one argument must be a JIT array')
    cdef int kt = kind_of(t), kf = kind_of(f)
    if kt < 0 or kf < 0:
        raise TypeError('pbc.select: values must be JIT arrays, Python scalars or sequences')
    if isinstance(m, ArrayBase) and (<ArrayBase> m)._vt != T_BOOL:
        raise TypeError('pbc.select: the condition must be a Bool array')
    cdef uint8_t vt = promote(kt, kf)
    cdef uint32_t im = operand(m, T_BOOL, ref._backend), it = 0, jf = 0
    try:
        it = operand(t, vt, ref._backend)
        jf = operand(f, vt, ref._backend)
        return result(OP_SELECT, ref._backend, vt, var_op(OP_SELECT, vt, im, it, jf, 0), m, t,
                      f, im, it, jf)
    finally:
        dec_ext(im); dec_ext(it); dec_ext(jf)

cdef void eval_var(uint32_t i) except *:
    """Makes sure variable i holds memory (or is a literal) with no queued writes."""
    cdef Var* v = &vars[i]
    if (v.op == OP_DATA or v.op == OP_LITERAL) and not (v.flags & F_DIRTY):
        return
    check_evaluable(i)
    if v.flags & F_DIRTY:
        check_dirty_read(i)
    if v.op != OP_DATA and v.op != OP_LITERAL:
        inc_ext(i)
        todo.push_back(i)
    eval_hook()

cdef void eval_for_host(uint32_t i) except *:
    """eval_var, then waits for the kernel that may still be writing i's memory: before
    the host reads it."""
    eval_var(i)
    join_launches()

cdef class ArrayBase:
    """A flat, lazily evaluated JIT array. Subclasses set the element type and backend."""
    cdef uint32_t _index
    cdef uint32_t _ad           # its AD node (pbc/ad/tape.pxi), 0 if it carries no derivative
    cdef uint8_t _vt
    cdef uint8_t _backend
    cdef readonly uint64_t _birth     # (see inplace_hook)
    __array_priority__ = 100   # NumPy defers binary operators to us

    def __init__(self, *args, **kwargs):
        cls = type(self)
        if kwargs:
            raise TypeError(f'pbc: {cls.__name__}(): Unknown keyword argument '
                            f'{next(iter(kwargs))!r}')
        self._vt = cls._vt_code
        self._backend = cls._backend_code
        if self._index:              # __init__ called again on a live array
            dec_ext(self._index)
            self._index = 0
        if self._ad:
            ad_dec(self._ad)
            self._ad = 0
        if len(args) == 0:
            return                   # an empty array holds no variable (as in Dr.Jit)
        value = args[0] if len(args) == 1 else list(args)
        if isinstance(value, ArrayBase):
            if (<ArrayBase> value)._backend != self._backend:
                raise TypeError('pbc: cannot convert between backends')
            if (<ArrayBase> value)._index:            # (a copy of an empty array is empty)
                self._index = var_cast((<ArrayBase> value)._index, self._vt, False)
                if ad_live:
                    if self._vt == (<ArrayBase> value)._vt:
                        ad_share(self, <ArrayBase> value)
                    else:
                        ad_op(OP_CAST, self, value, None, None, (<ArrayBase> value)._index,
                              0, 0)
        elif scalar_kind(value) >= 0 and not isinstance(value, np.ndarray):
            self._index = var_literal(self._vt, 1, scalar_bits(value, self._vt), self._backend)
        else:
            if not is_sequence(value) and hasattr(value, '__iter__') and not hasattr(
                    value, '__array__') and not hasattr(value, '__array_interface__'):
                value = list(value)           # an iterator or generator of values
            self._index = from_numpy(value, self._vt, self._backend)

    def __cinit__(self, *args, **kwargs):
        global arrays_made
        arrays_made += 1
        self._birth = arrays_made

    def __dealloc__(self):
        if self._index and vars != NULL:
            dec_ext(self._index)
        if self._ad:
            ad_dec(self._ad)

    @property
    def index(self):
        """The id of the JIT variable this array refers to (0 for none)."""
        return self._index

    @property
    def state(self):
        """The VarState of the array's variable."""
        if self._index == 0:
            return VarState.Invalid
        cdef Var* v = &vars[self._index]
        if v.flags & F_DIRTY:
            return VarState.Dirty
        if v.op == OP_LITERAL:
            return VarState.Literal
        if v.op == OP_DATA:
            return VarState.Evaluated
        return VarState.Symbolic if node_scope(self._index) else VarState.Unevaluated

    @property
    def grad(self):
        """Dr.Jit's `x.grad`: pbc.grad(x); assigning to it is pbc.set_grad(x, value)."""
        from pbc.ad import api
        return api.grad(self)

    @grad.setter
    def grad(self, value):
        from pbc.ad import api
        api.set_grad(self, value)

    def _set_index(self, uint32_t idx):
        """Rebinds this array to variable idx (takes a new reference to it). Its derivatives
        stay those of its old value: use _assign to take another array's."""
        inc_ext(idx)
        dec_ext(self._index)
        self._index = idx

    def _assign(self, ArrayBase other):
        """Rebinds this array to other's value and derivatives (in place)."""
        assign_from(self, other)

    def __len__(self):
        return vars[self._index].size

    # ---- arithmetic ----
    def __add__(self, o): return binop(OP_ADD, self, o, ARITHMETIC)
    def __radd__(self, o): return binop(OP_ADD, o, self, ARITHMETIC)
    def __sub__(self, o): return binop(OP_SUB, self, o, ARITHMETIC)
    def __rsub__(self, o): return binop(OP_SUB, o, self, ARITHMETIC)
    def __mul__(self, o): return binop(OP_MUL, self, o, ARITHMETIC)
    def __rmul__(self, o): return binop(OP_MUL, o, self, ARITHMETIC)
    def __truediv__(self, o): return truediv(self, o)
    def __rtruediv__(self, o): return truediv(o, self)
    def __floordiv__(self, o): return floordiv(self, o)
    def __rfloordiv__(self, o): return floordiv(o, self)
    def __mod__(self, o): return binop(OP_MOD, self, o, ARITHMETIC)
    def __rmod__(self, o): return binop(OP_MOD, o, self, ARITHMETIC)
    def __and__(self, o): return binop(OP_AND, self, o, ARITHMETIC)
    def __rand__(self, o): return binop(OP_AND, o, self, ARITHMETIC)
    def __or__(self, o): return binop(OP_OR, self, o, ARITHMETIC)
    def __ror__(self, o): return binop(OP_OR, o, self, ARITHMETIC)
    def __xor__(self, o): return binop(OP_XOR, self, o, ARITHMETIC)
    def __rxor__(self, o): return binop(OP_XOR, o, self, ARITHMETIC)
    def __lshift__(self, o): return binop(OP_SHL, self, o, SHIFT)
    def __rlshift__(self, o): return binop(OP_SHL, o, self, SHIFT)
    def __rshift__(self, o): return binop(OP_SHR, self, o, SHIFT)
    def __rrshift__(self, o): return binop(OP_SHR, o, self, SHIFT)
    def __pow__(self, o, mod=None): return power_hook(self, o)
    def __rpow__(self, o, mod=None): return power_hook(o, self)
    # In-place forms change this array object (every name bound to it sees the new value),
    # as Dr.Jit does; a result of another type (UInt32 += 0.5) rebinds the name instead.
    def __iadd__(self, o): return inplace(self, binop(OP_ADD, self, o, ARITHMETIC))
    def __isub__(self, o): return inplace(self, binop(OP_SUB, self, o, ARITHMETIC))
    def __imul__(self, o): return inplace(self, binop(OP_MUL, self, o, ARITHMETIC))
    def __itruediv__(self, o): return inplace(self, truediv(self, o))
    def __ifloordiv__(self, o): return inplace(self, floordiv(self, o))
    def __imod__(self, o): return inplace(self, binop(OP_MOD, self, o, ARITHMETIC))
    def __iand__(self, o): return inplace(self, binop(OP_AND, self, o, ARITHMETIC))
    def __ior__(self, o): return inplace(self, binop(OP_OR, self, o, ARITHMETIC))
    def __ixor__(self, o): return inplace(self, binop(OP_XOR, self, o, ARITHMETIC))
    def __ilshift__(self, o): return inplace(self, binop(OP_SHL, self, o, SHIFT))
    def __irshift__(self, o): return inplace(self, binop(OP_SHR, self, o, SHIFT))
    def __ipow__(self, o): return inplace(self, power_hook(self, o))

    def __neg__(self): return unop(OP_NEG, self)
    def __invert__(self): return unop(OP_NOT, self)
    def __abs__(self): return unop(OP_ABS, self)
    def __pos__(self): return share(self)

    # ---- comparisons ----
    def __eq__(self, o): return binop(OP_EQ, self, o, COMPARISON)
    def __ne__(self, o): return binop(OP_NE, self, o, COMPARISON)
    def __lt__(self, o): return binop(OP_LT, self, o, COMPARISON)
    def __le__(self, o): return binop(OP_LE, self, o, COMPARISON)
    def __gt__(self, o): return binop(OP_GT, self, o, COMPARISON)
    def __ge__(self, o): return binop(OP_GE, self, o, COMPARISON)
    # Hashed by identity (== compares lanes), so that arrays can be dict keys and dataclass
    # field defaults, as Dr.Jit's can.
    def __hash__(self):
        return id(self) >> 4

    def __bool__(self):
        cdef uint32_t n = vars[self._index].size
        if self._vt != T_BOOL:
            raise TypeError('pbc: bool() is defined only for Bool arrays of width 1')
        if n != 1:
            raise WidthError(f'pbc: bool() of a Bool array with {n} lanes is ambiguous; '
                             'use pbc.all(), pbc.any() or pbc.none()')
        return bool(self[0])

    # ---- element access ----
    def __getitem__(self, key):
        if isinstance(key, ArrayBase) and (<ArrayBase> key)._vt == T_BOOL:
            return share(self)   # x[mask] += v  becomes  x = select(mask, x + v, x)
        if isinstance(key, (slice, ArrayBase)) or is_sequence(key):
            return gather(type(self), self, lanes_of(key, len(self), self._backend))
        cdef int64_t n = vars[self._index].size, i = key
        if i < 0:
            i += n
        if i < 0 or i >= n:
            raise IndexError(f'pbc: index {key} is out of range for an array of size {n}')
        eval_for_host(self._index)
        cdef Var* v = &vars[self._index]
        if v.op == OP_LITERAL:
            return bits_to_python(v.literal, v.vtype)
        cdef uint64_t bits = 0
        read_bytes(self._index, i * TYPE_SIZE[v.vtype], TYPE_SIZE[v.vtype], &bits)
        return bits_to_python(bits, v.vtype)

    def __setitem__(self, key, value):
        if isinstance(key, ArrayBase) and (<ArrayBase> key)._vt == T_BOOL:
            assign_from(self, select3(key, value, self))
        elif isinstance(key, (slice, ArrayBase)) or is_sequence(key):
            scatter(self, value, lanes_of(key, len(self), self._backend), True, 0)
        else:
            n = len(self)
            i = key + n if key < 0 else key
            if i < 0 or i >= n:
                raise IndexError(f'pbc: index {key} is out of range for an array of size {n}')
            index = wrap(self._backend, T_UINT32, var_literal(T_UINT32, 1, i, self._backend))
            scatter(self, value, index, True, 0)

    def item(self):
        """The one value of a width-1 array, as a Python number."""
        cdef uint32_t n = vars[self._index].size
        if n != 1:
            raise WidthError(f'pbc: item() can only convert arrays of length 1 (this one has '
                             f'{n} entries)')
        return self[0]

    # ---- conversion ----
    def numpy(self):
        """A NumPy copy of the contents (evaluates)."""
        return to_numpy(self)

    def __array__(self, dtype=None, copy=None):
        a = to_numpy(self)
        return a if dtype is None else a.astype(dtype)

    def __repr__(self):
        return repr_hook(self)

    def __iter__(self):
        a = to_numpy(self)
        return iter(a.tolist())

    def __reduce__(self):
        return (type(self), (to_numpy(self),))

cdef void assign_from(ArrayBase dst, ArrayBase src) except *:
    """dst takes src's variable and derivatives (the object stays: names bound to it see the
    new value)."""
    if inplace_hook is not None:
        inplace_hook(dst)
    inc_ext(src._index)
    dec_ext(dst._index)
    dst._index = src._index
    ad_take(dst, src)

def swap_contents(ArrayBase a, ArrayBase b):
    """a and b (of one type) exchange their variables and AD nodes: no reference changes
    hands, no scope applies (a loop's derivative shows its body the arrays it read, as they
    were, and then puts them back; pbc/ad/loop.py)."""
    if type(a) is not type(b):
        raise TypeError('pbc: internal error: swap_contents() of arrays of two types')
    a._index, b._index = b._index, a._index
    a._ad, b._ad = b._ad, a._ad

cdef object inplace(ArrayBase self, object r):
    if r is NotImplemented or type(r) is not type(self):
        return r
    assign_from(self, <ArrayBase> r)
    return self

cdef object lanes_of(object key, uint32_t n, uint8_t backend):
    """The lanes a slice, index array or sequence selects, as UInt32 indices (a slice
    becomes a counter expression, not memory)."""
    cdef uint32_t count
    if isinstance(key, slice):
        start, stop, step = key.indices(n)
        count = len(range(start, stop, step))
        idx = wrap(backend, T_UINT32, counter_var(count, backend))
        return idx if start == 0 and step == 1 else idx * step + start
    if kind_of(key) not in (T_INT32, T_UINT32, T_INT64, T_UINT64):
        raise TypeError(f'pbc: arrays are indexed by integers, slices or integer arrays, not '
                        f'{type(key).__name__}')
    return key

cdef object truediv(object a, object b):
    """`/`, which divides floats: integer arrays divide with `//` (as Dr.Jit, and unlike a
    C-style integer division that Python's `/` would never mean)."""
    r = binop(OP_DIV, a, b, ARITHMETIC)
    if r is NotImplemented or is_float((<ArrayBase> r)._vt):
        return r
    raise TypeError(f"pbc: unsupported operand type(s) for /: '{type(a).__name__}' and "
                    f"'{type(b).__name__}' (integer arrays divide with //, or convert one to a "
                    'float array first)')

cdef object floordiv(object a, object b):
    r = binop(OP_DIV, a, b, ARITHMETIC)
    if r is NotImplemented or not is_float((<ArrayBase> r)._vt):
        return r
    return unop(OP_FLOOR, <ArrayBase> r)

cdef uint32_t from_numpy(object value, uint8_t vt, uint8_t backend) except 0:
    try:
        arr = np.asarray(value)
    except Exception as e:
        raise TypeError(f'pbc: cannot convert {type(value).__name__} to an array: {e}')
    if arr.dtype.kind in 'fO' and vt != T_BOOL and not is_float(vt) and \
            isinstance(value, (list, tuple)) and all(type(x) is int for x in value):
        # Python integers, one past int64's range: NumPy made floats of them all (or
        # objects), where each must wrap around exactly, as one such integer does alone
        arr = np.array([x & 0xFFFFFFFFFFFFFFFF for x in value], dtype=np.uint64)
    if arr.dtype.kind not in 'biuf':
        if arr.dtype.kind == 'O':
            raise TypeError(f'pbc: {TYPE_NAMES[vt]} array: Could not construct from sequence '
                            '(invalid type in input).')
        raise TypeError(f"pbc: unsupported dtype '{arr.dtype}' (expected bool, integer or "
                        'floating point data)')
    if arr.ndim != 1:
        if arr.ndim == 0:
            return var_literal(vt, 1, scalar_bits(arr.item(), vt), backend)
        raise ValueError(f'pbc: flat arrays need 1-D data, got shape {arr.shape} '
                         '(use a Tensor type for higher dimensions)')
    if arr.dtype.kind == 'f' and vt != T_FLOAT32 and vt != T_FLOAT64 and vt != T_BOOL:
        with np.errstate(invalid='ignore'):
            if not np.all(np.isfinite(arr)):
                raise ValueError(f'pbc: cannot convert non-finite values to {TYPE_NAMES[vt]}')
    arr = np.ascontiguousarray(arr.astype(NUMPY_DTYPES[vt], copy=False))
    return copy_in(arr, vt, backend)

cdef uint32_t copy_in(object arr, uint8_t vt, uint8_t backend) except 0:
    cdef size_t n = arr.shape[0]
    if n >= 0xFFFFFFFF:
        raise ValueError('pbc: arrays are limited to 2^32 - 1 elements')
    cdef const unsigned char[::1] src = arr.view(np.uint8) if n else None
    cdef void* p = mem_alloc(vt, n)
    if n:
        memcpy(p, &src[0], n * TYPE_SIZE[vt])
    return var_data(vt, n, p, backend)

cdef object to_numpy(ArrayBase a):
    eval_for_host(a._index)
    cdef Var* v = &vars[a._index]
    dtype = NUMPY_DTYPES[v.vtype]
    if v.op == OP_LITERAL:
        return np.full(v.size, bits_to_python(v.literal, v.vtype), dtype=dtype)
    out = np.empty(v.size, dtype=dtype)
    cdef unsigned char[::1] dst
    if v.size:
        dst = out.view(np.uint8)
        read_bytes(a._index, 0, v.size * TYPE_SIZE[v.vtype], &dst[0])
    return out

# ---- Python-visible op entry points (used by pbc's Python modules) ------------------------
cdef dict OP_CODES = {name: code for code, name in enumerate(OP_NAMES)}

def op_unary(str name, ArrayBase a):
    return unop(OP_CODES[name], a)

def op_binary(str name, a, b):
    cdef uint16_t op = OP_CODES[name]
    r = binop(op, a, b, COMPARISON if OP_FLAGS[op] & OPF_COMPARISON else
              SHIFT if OP_FLAGS[op] & OPF_SHIFT else ARITHMETIC)
    if r is NotImplemented:
        raise TypeError(f"pbc.{name}: unsupported operand types {type(a).__name__} and "
                        f"{type(b).__name__}")
    return r

def op_fma(a, b, c):
    return fma3(a, b, c)

cdef object fma3(object a, object b, object c):
    """a * b + c, one rounding; at least one of them is an array."""
    cdef ArrayBase ref
    if isinstance(a, ArrayBase):
        ref = <ArrayBase> a
    elif isinstance(b, ArrayBase):
        ref = <ArrayBase> b
    elif isinstance(c, ArrayBase):
        ref = <ArrayBase> c
    else:
        raise TypeError('pbc.fma: needs at least one JIT array')
    cdef int k, vt = 0
    for x in (a, b, c):
        k = kind_of(x)
        if k < 0:
            raise TypeError('pbc.fma: arguments must be JIT arrays, Python scalars or '
                            'sequences')
        vt = promote(vt, k)
    check_allowed(OP_FMA, vt)
    cdef uint32_t ia = operand(a, vt, ref._backend), ib = 0, ic = 0
    try:
        ib = operand(b, vt, ref._backend)
        ic = operand(c, vt, ref._backend)
        return result(OP_FMA, ref._backend, vt, var_op(OP_FMA, vt, ia, ib, ic, 0), a, b, c, ia,
                      ib, ic)
    finally:
        dec_ext(ia); dec_ext(ib); dec_ext(ic)

def op_select(m, t, f):
    return select3(m, t, f)

def op_cast(ArrayBase a, cls, bint bitcast=False):
    """a as type cls: a conversion (differentiable between float types) or a reinterpretation
    of its bits (which cuts derivatives)."""
    cdef uint8_t vt = cls._vt_code
    if vt == a._vt and not bitcast:
        return share(a)
    return result(OP_BITCAST if bitcast else OP_CAST, cls._backend_code, vt,
                  var_cast(a._index, vt, bitcast), a, None, None, a._index, 0, 0)

def literal(cls, value, uint32_t size=1):
    cdef uint8_t vt = cls._vt_code
    return wrap(cls._backend_code, vt, var_literal(vt, size, scalar_bits(value, vt),
                                                   cls._backend_code))

def unfilled(cls, uint32_t size):
    """An evaluated array of `size` lanes whose memory holds whatever it held: for a result
    that scatters then write in full (the targets of an evaluated call, when they cover
    every lane), which a fill would only make write twice."""
    cdef uint8_t vt = cls._vt_code
    return wrap(cls._backend_code, vt, var_buffer(vt, size, cls._backend_code))

cdef uint32_t counter_var(uint32_t size, uint8_t backend) except 0:
    """New reference to 0, 1, ..., size-1 as UInt32 (the kernel's lane index). A counter of
    width 0 or 1 is a literal: in a kernel it would be rendered as the lane index of a wider
    launch."""
    if size <= 1:
        return var_literal(T_UINT32, size, 0, backend)
    return var_new(OP_COUNTER, T_UINT32, size, 0, 0, 0, 0, 0, 0, backend)

def counter(cls, uint32_t size):
    """0, 1, ..., size-1 as UInt32 (see counter_var)."""
    return wrap(cls._backend_code, T_UINT32, counter_var(size, cls._backend_code))

def data_address(ArrayBase a):
    """Address of the evaluated buffer (evaluates, and waits for the kernel that writes it;
    0 for literals): on the device for arrays there (buffer_location)."""
    eval_for_host(a._index)
    return <uintptr_t> vars[a._index].data

def make_opaque(ArrayBase a):
    """Turns a literal into a memory-backed variable in place (changing it won't recompile)."""
    cdef Var* v = &vars[a._index]
    if v.op == OP_DATA and not (v.flags & F_DIRTY):
        return
    if v.op != OP_LITERAL:
        eval_var(a._index)
        return
    cdef uint32_t idx = materialize(a._index)
    dec_ext(a._index)
    a._index = idx

cdef uint32_t materialize(uint32_t lit) except 0:
    """A new evaluated variable filled with the value of literal `lit`."""
    cdef Var* v = &vars[lit]
    cdef uint8_t vt = v.vtype
    cdef uint32_t n = v.size
    cdef uint64_t bits = v.literal
    cdef void* p = mem_alloc(vt, n)
    fill(p, vt, n, bits)
    return var_data(vt, n, p, vars[lit].backend)

cdef void fill(void* p, uint8_t vt, uint32_t n, uint64_t bits) noexcept nogil:
    cdef uint32_t i, b32 = <uint32_t> bits
    cdef uint8_t b8 = <uint8_t> bits
    if TYPE_SIZE[vt] == 1:
        memset(p, b8, n)
    elif TYPE_SIZE[vt] == 4:
        for i in range(n):
            (<uint32_t*> p)[i] = b32
    else:
        for i in range(n):
            (<uint64_t*> p)[i] = bits
