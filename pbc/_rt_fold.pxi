# Constant folding, bit-exact with what a compiled kernel computes. Literals are stored as
# their bit pattern, zero-extended to 64 bits. Integer arithmetic runs on unsigned C types
# (wrap-around, no undefined behaviour); float arithmetic on C float/double, which the
# extension is compiled for with -ffp-contract=off so nothing is silently fused. The
# semantics chosen for cases that C or LLVM leave undefined (division by zero, shifts by
# the bit width or more, out-of-range float-to-int casts) are pbc's own, documented in
# docs/semantics.md and rendered identically by every backend.

from libc.math cimport (sqrtf, sqrt, floorf, floor, ceilf, ceil, truncf, trunc, rintf, rint,
                        fmaf, fma, fmodf, fmod, isnan, ldexpf, ldexp, fmin, fmax)

cdef extern from *:
    """
    typedef __int128 pbc_i128;
    typedef unsigned __int128 pbc_u128;
    """
    ctypedef long long pbc_i128
    ctypedef unsigned long long pbc_u128

cdef inline float as_f32(uint64_t b) noexcept nogil:
    cdef uint32_t u = <uint32_t> b
    cdef float f
    memcpy(&f, &u, 4)
    return f

cdef inline double as_f64(uint64_t b) noexcept nogil:
    cdef double f
    memcpy(&f, &b, 8)
    return f

cdef inline uint64_t from_f32(float f) noexcept nogil:
    cdef uint32_t u
    memcpy(&u, &f, 4)
    return u

cdef inline uint64_t from_f64(double f) noexcept nogil:
    cdef uint64_t u
    memcpy(&u, &f, 8)
    return u

cdef inline uint64_t canon(uint8_t vt, uint64_t b) noexcept nogil:
    """Masks bits to the width of the type: the one representation value numbering sees."""
    if vt == T_BOOL:
        return 1 if b else 0
    if vt == T_INT32 or vt == T_UINT32 or vt == T_FLOAT32:
        return b & 0xFFFFFFFFULL
    return b

cdef inline int64_t as_signed(uint8_t vt, uint64_t b) noexcept nogil:
    if vt == T_INT32:
        return <int32_t> <uint32_t> b
    return <int64_t> b

cdef inline uint32_t type_bits(uint8_t vt) noexcept nogil:
    return TYPE_SIZE[vt] * 8

cdef inline double to_double(uint8_t vt, uint64_t b) noexcept nogil:
    if vt == T_FLOAT32:
        return as_f32(b)
    if vt == T_FLOAT64:
        return as_f64(b)
    if vt == T_INT32 or vt == T_INT64:
        return <double> as_signed(vt, b)
    return <double> b

cdef uint64_t float_to_int_sat(double f, uint8_t rt) noexcept nogil:
    """Saturating float->int conversion (LLVM's fptosi.sat / fptoui.sat; NaN gives 0)."""
    cdef double lo, hi
    if isnan(f):
        return 0
    if rt == T_INT32:
        if f <= -2147483648.0: return canon(rt, <uint64_t> <int64_t> -2147483648LL)
        if f >= 2147483647.0: return 2147483647
        return canon(rt, <uint64_t> <int64_t> <int32_t> f)
    if rt == T_UINT32:
        if f <= 0: return 0
        if f >= 4294967295.0: return 4294967295ULL
        return <uint32_t> f
    if rt == T_INT64:
        if f <= -9223372036854775808.0: return 0x8000000000000000ULL
        if f >= 9223372036854775807.0: return 0x7FFFFFFFFFFFFFFFULL
        return <uint64_t> <int64_t> f
    if f <= 0: return 0
    if f >= 18446744073709551615.0: return 0xFFFFFFFFFFFFFFFFULL
    return <uint64_t> f

cdef uint64_t fold_cast(uint8_t st, uint8_t rt, uint64_t a) noexcept nogil:
    cdef double d
    if rt == T_BOOL:
        if st == T_FLOAT32:
            return as_f32(a) != 0
        if st == T_FLOAT64:
            return as_f64(a) != 0
        return a != 0
    if st == T_FLOAT32 or st == T_FLOAT64:
        d = to_double(st, a)
        if rt == T_FLOAT32:
            return from_f32(<float> (as_f32(a) if st == T_FLOAT32 else as_f64(a)))
        if rt == T_FLOAT64:
            return from_f64(d)
        return float_to_int_sat(d, rt)
    # integer or bool source
    if rt == T_FLOAT32:
        if st == T_INT32 or st == T_INT64:
            return from_f32(<float> as_signed(st, a))
        return from_f32(<float> a)
    if rt == T_FLOAT64:
        if st == T_INT32 or st == T_INT64:
            return from_f64(<double> as_signed(st, a))
        return from_f64(<double> a)
    if is_signed(st):
        return canon(rt, <uint64_t> as_signed(st, a))
    return canon(rt, a)

cdef inline int clz64(uint64_t x, uint32_t bits) noexcept nogil:
    if x == 0:
        return bits
    return __builtin_clzll(x) - (64 - bits)

cdef extern from *:
    int __builtin_clzll(unsigned long long) nogil
    int __builtin_ctzll(unsigned long long) nogil
    int __builtin_popcountll(unsigned long long) nogil

cdef bint fold_unary(uint16_t op, uint8_t ot, uint8_t rt, uint64_t a, uint64_t* out) noexcept nogil:
    cdef uint32_t bits = type_bits(ot)
    if op == OP_CAST:
        out[0] = fold_cast(ot, rt, a)
        return True
    if op == OP_BITCAST:
        out[0] = canon(rt, a)
        return True
    if ot == T_FLOAT32:
        if op == OP_NEG: out[0] = a ^ 0x80000000ULL
        elif op == OP_ABS: out[0] = a & 0x7FFFFFFF
        elif op == OP_SQRT: out[0] = from_f32(sqrtf(as_f32(a)))
        elif op == OP_FLOOR: out[0] = from_f32(floorf(as_f32(a)))
        elif op == OP_CEIL: out[0] = from_f32(ceilf(as_f32(a)))
        elif op == OP_ROUND: out[0] = from_f32(rintf(as_f32(a)))
        elif op == OP_TRUNC: out[0] = from_f32(truncf(as_f32(a)))
        else: return False
        return True
    if ot == T_FLOAT64:
        if op == OP_NEG: out[0] = a ^ 0x8000000000000000ULL
        elif op == OP_ABS: out[0] = a & 0x7FFFFFFFFFFFFFFFULL
        elif op == OP_SQRT: out[0] = from_f64(sqrt(as_f64(a)))
        elif op == OP_FLOOR: out[0] = from_f64(floor(as_f64(a)))
        elif op == OP_CEIL: out[0] = from_f64(ceil(as_f64(a)))
        elif op == OP_ROUND: out[0] = from_f64(rint(as_f64(a)))
        elif op == OP_TRUNC: out[0] = from_f64(trunc(as_f64(a)))
        else: return False
        return True
    if ot == T_BOOL:
        if op == OP_NOT:
            out[0] = a ^ 1
            return True
        if op == OP_SUBGROUP_ANY:    # (a lane is in its own subgroup)
            out[0] = a
            return True
        return False
    if op == OP_NEG: out[0] = canon(ot, 0 - a)
    elif op == OP_NOT: out[0] = canon(ot, ~a)
    elif op == OP_ABS:
        out[0] = canon(ot, 0 - a) if (is_signed(ot) and as_signed(ot, a) < 0) else a
    elif op == OP_POPC: out[0] = __builtin_popcountll(a)
    elif op == OP_CLZ: out[0] = clz64(a, bits)
    elif op == OP_CTZ: out[0] = bits if a == 0 else __builtin_ctzll(a)
    elif op == OP_FLOOR or op == OP_CEIL or op == OP_ROUND or op == OP_TRUNC: out[0] = a
    else: return False
    return True

cdef inline bint cmp_result(uint16_t op, int c, bint unordered) noexcept nogil:
    # c: -1, 0, 1 (a<b, a==b, a>b); unordered: a float NaN was involved.
    if unordered:
        return op == OP_NE
    if op == OP_EQ: return c == 0
    if op == OP_NE: return c != 0
    if op == OP_LT: return c < 0
    if op == OP_LE: return c <= 0
    if op == OP_GT: return c > 0
    return c >= 0

cdef uint64_t minimum_bits(uint8_t ot, uint64_t a, uint64_t b, bint is_max) noexcept nogil:
    """IEEE 754-2019 minimum/maximum: a NaN operand gives the canonical quiet NaN, and -0 is
    smaller than +0."""
    cdef double da = to_double(ot, a), db = to_double(ot, b)
    cdef bint negative_a
    if isnan(da) or isnan(db):
        return 0x7FC00000 if ot == T_FLOAT32 else 0x7FF8000000000000
    if da == db:                          # equal, or zeros of either sign
        negative_a = (a >> (31 if ot == T_FLOAT32 else 63)) & 1
        return (b if negative_a else a) if is_max else (a if negative_a else b)
    return a if (da > db) == is_max else b

cdef bint fold_binary(uint16_t op, uint8_t ot, uint64_t a, uint64_t b, uint64_t* out) noexcept nogil:
    cdef uint32_t bits = type_bits(ot)
    cdef float fa, fb
    cdef double da, db
    cdef int64_t sa, sb
    cdef int c
    if OP_FLAGS[op] & OPF_COMPARISON:
        if ot == T_FLOAT32 or ot == T_FLOAT64:
            da = to_double(ot, a); db = to_double(ot, b)
            c = -1 if da < db else (1 if da > db else 0)
            out[0] = cmp_result(op, c, isnan(da) or isnan(db))
        elif is_signed(ot):
            sa = as_signed(ot, a); sb = as_signed(ot, b)
            out[0] = cmp_result(op, -1 if sa < sb else (1 if sa > sb else 0), False)
        else:
            out[0] = cmp_result(op, -1 if a < b else (1 if a > b else 0), False)
        return True
    if ot == T_FLOAT32:
        fa = as_f32(a); fb = as_f32(b)
        if op == OP_ADD: out[0] = from_f32(fa + fb)
        elif op == OP_SUB: out[0] = from_f32(fa - fb)
        elif op == OP_MUL: out[0] = from_f32(fa * fb)
        elif op == OP_DIV: out[0] = from_f32(fa / fb)
        elif op == OP_MOD: out[0] = from_f32(fmodf(fa, fb))
        elif op == OP_LDEXP: out[0] = from_f32(ldexpf(fa, <int> fmax(fmin(fb, 1e4), -1e4)))
        elif op == OP_MIN: out[0] = b if isnan(fa) else (a if (isnan(fb) or fa < fb) else b)
        elif op == OP_MAX: out[0] = b if isnan(fa) else (a if (isnan(fb) or fa > fb) else b)
        elif op == OP_MINIMUM or op == OP_MAXIMUM:
            out[0] = minimum_bits(T_FLOAT32, a, b, op == OP_MAXIMUM)
        elif op == OP_AND: out[0] = a & b
        elif op == OP_OR: out[0] = a | b
        elif op == OP_XOR: out[0] = a ^ b
        else: return False
        return True
    if ot == T_FLOAT64:
        da = as_f64(a); db = as_f64(b)
        if op == OP_ADD: out[0] = from_f64(da + db)
        elif op == OP_SUB: out[0] = from_f64(da - db)
        elif op == OP_MUL: out[0] = from_f64(da * db)
        elif op == OP_DIV: out[0] = from_f64(da / db)
        elif op == OP_MOD: out[0] = from_f64(fmod(da, db))
        elif op == OP_LDEXP: out[0] = from_f64(ldexp(da, <int> fmax(fmin(db, 1e4), -1e4)))
        elif op == OP_MIN: out[0] = b if isnan(da) else (a if (isnan(db) or da < db) else b)
        elif op == OP_MAX: out[0] = b if isnan(da) else (a if (isnan(db) or da > db) else b)
        elif op == OP_MINIMUM or op == OP_MAXIMUM:
            out[0] = minimum_bits(T_FLOAT64, a, b, op == OP_MAXIMUM)
        elif op == OP_AND: out[0] = a & b
        elif op == OP_OR: out[0] = a | b
        elif op == OP_XOR: out[0] = a ^ b
        else: return False
        return True
    if ot == T_BOOL:
        if op == OP_AND: out[0] = a & b
        elif op == OP_OR: out[0] = a | b
        elif op == OP_XOR: out[0] = a ^ b
        else: return False
        return True
    sa = as_signed(ot, a); sb = as_signed(ot, b)
    if op == OP_ADD: out[0] = canon(ot, a + b)
    elif op == OP_SUB: out[0] = canon(ot, a - b)
    elif op == OP_MUL: out[0] = canon(ot, a * b)
    elif op == OP_DIV or op == OP_MOD:
        # Division by zero gives 0 (as NumPy); INT_MIN / -1 wraps to INT_MIN, remainder 0.
        if b == 0:
            out[0] = 0
        elif is_signed(ot):
            if sb == -1:
                out[0] = canon(ot, 0 - a) if op == OP_DIV else 0
            elif op == OP_DIV:
                out[0] = canon(ot, <uint64_t> (sa / sb))
            else:
                out[0] = canon(ot, <uint64_t> (sa % sb))
        else:
            out[0] = (a / b) if op == OP_DIV else (a % b)
    elif op == OP_MIN:
        out[0] = (a if sa < sb else b) if is_signed(ot) else (a if a < b else b)
    elif op == OP_MAX:
        out[0] = (a if sa > sb else b) if is_signed(ot) else (a if a > b else b)
    elif op == OP_AND: out[0] = a & b
    elif op == OP_OR: out[0] = a | b
    elif op == OP_XOR: out[0] = a ^ b
    elif op == OP_SHL:
        out[0] = 0 if b >= bits else canon(ot, a << b)
    elif op == OP_SHR:
        if is_signed(ot):
            out[0] = canon(ot, <uint64_t> ((-1 if sa < 0 else 0) if b >= bits else (sa >> b)))
        else:
            out[0] = 0 if b >= bits else (a >> b)
    elif op == OP_MULHI:
        if bits == 32:
            if is_signed(ot):
                out[0] = canon(ot, <uint64_t> ((sa * sb) >> 32))
            else:
                out[0] = (a * b) >> 32
        elif is_signed(ot):
            out[0] = <uint64_t> ((<pbc_i128> sa * <pbc_i128> sb) >> 64)
        else:
            out[0] = <uint64_t> ((<pbc_u128> a * <pbc_u128> b) >> 64)
    else:
        return False
    return True

cdef bint fold_ternary(uint16_t op, uint8_t ot, uint64_t a, uint64_t b, uint64_t c,
                       uint64_t* out) noexcept nogil:
    if op == OP_SELECT:
        out[0] = b if a else c
        return True
    if op == OP_FMA:
        if ot == T_FLOAT32:
            out[0] = from_f32(fmaf(as_f32(a), as_f32(b), as_f32(c)))
        elif ot == T_FLOAT64:
            out[0] = from_f64(fma(as_f64(a), as_f64(b), as_f64(c)))
        else:
            out[0] = canon(ot, a * b + c)
        return True
    return False

# ---- algebraic simplification ------------------------------------------------------------
cdef inline bint is_lit(uint32_t i) noexcept:
    return vars[i].op == OP_LITERAL

cdef inline bint lit_is(uint32_t i, double value) noexcept:
    """True if variable i is a literal equal to `value` (in its own type)."""
    cdef Var* v = &vars[i]
    if v.op != OP_LITERAL:
        return False
    if v.vtype == T_FLOAT32:
        return as_f32(v.literal) == value
    if v.vtype == T_FLOAT64:
        return as_f64(v.literal) == value
    if value == -1:
        return v.literal == canon(v.vtype, <uint64_t> -1)
    return <double> v.literal == value

cdef inline bint is_neg_zero(uint32_t i) noexcept:
    cdef Var* v = &vars[i]
    return v.op == OP_LITERAL and (
        (v.vtype == T_FLOAT32 and v.literal == 0x80000000ULL) or
        (v.vtype == T_FLOAT64 and v.literal == 0x8000000000000000ULL))

cdef uint32_t simplify(uint16_t op, uint8_t vt, uint32_t a, uint32_t b, uint32_t c) except *:
    """Returns an equivalent existing variable (with a new reference), or 0 if none applies.
    Rules that IEEE makes inexact for floats (x*0, x-x) apply to integers only."""
    cdef bint fl = is_float(vt)
    cdef uint32_t r = 0
    if op == OP_ADD:
        # For floats only -0 is an identity of addition (-0 + +0 = +0).
        if (not fl and lit_is(b, 0)) or is_neg_zero(b): r = a
        elif (not fl and lit_is(a, 0)) or is_neg_zero(a): r = b
    elif op == OP_SUB:
        # x - (+0) = x, but x - (-0) = x + 0 turns -0 into +0.
        if lit_is(b, 0) and (not fl or vars[b].literal == 0): r = a
    elif op == OP_MUL:
        if lit_is(b, 1): r = a
        elif lit_is(a, 1): r = b
        elif not fl and lit_is(b, 0): r = b
        elif not fl and lit_is(a, 0): r = a
    elif op == OP_DIV:
        if lit_is(b, 1): r = a
    elif op == OP_AND:
        if a == b: r = a
        elif vt == T_BOOL:
            if lit_is(b, 1): r = a
            elif lit_is(a, 1): r = b
        elif not fl:
            if lit_is(b, -1): r = a
            elif lit_is(a, -1): r = b
    elif op == OP_OR or op == OP_XOR:
        if op == OP_OR and a == b: r = a
        elif lit_is(b, 0) and not fl: r = a
        elif lit_is(a, 0) and not fl: r = b
    elif op == OP_SHL or op == OP_SHR:
        if lit_is(b, 0): r = a
    elif op == OP_MIN or op == OP_MAX or op == OP_MINIMUM or op == OP_MAXIMUM:
        if a == b: r = a
    elif op == OP_NEG or op == OP_NOT:
        if vars[a].op == op: r = vars[a].dep[0]
    elif op == OP_SELECT:
        if b == c: r = b
        elif is_lit(a): r = b if vars[a].literal else c
    if r == 0:
        return 0
    # A simplification must not change the result's width (e.g. x + zeros(n) with x of width 1).
    cdef uint32_t want = vars[a].size
    if b and vars[b].size > want: want = vars[b].size
    if c and vars[c].size > want: want = vars[c].size
    if vars[r].size != want:
        if vars[r].op == OP_LITERAL and vars[r].size == 1:     # e.g. x * 0 -> zeros(width)
            return var_literal(vt, want, vars[r].literal, vars[r].backend)
        return 0
    inc_ext(r)
    return r
