# Typed op construction on variable ids: size rules, flushing of pending side effects,
# folding/simplification at creation, gathers (symbolic where possible) and scatters.

# Operand kinds (OP_ALLOW, from the op table): 1 = Bool, 2 = integers, 4 = floats.
cdef inline uint8_t kind_bit(uint8_t vt) noexcept nogil:
    return 1 if vt == T_BOOL else (4 if is_float(vt) else 2)

cdef object eval_hook = None   # pbc.evaluate.eval_pending, set at import

def set_eval_hook(fn):
    global eval_hook
    eval_hook = fn

cdef void flush_if_dirty(uint32_t a, uint32_t b, uint32_t c, uint32_t d) except *:
    """A read of a variable with queued scatters must see them: run them first."""
    cdef uint32_t deps[4]
    deps[0] = a; deps[1] = b; deps[2] = c; deps[3] = d
    cdef int k
    if any_dirty(deps, 4):
        for k in range(4):
            if deps[k] and (vars[deps[k]].flags & F_DIRTY):
                check_dirty_read(deps[k])
        eval_hook()

cdef str op_name(uint16_t op):
    return OP_NAMES[op]

cdef uint32_t result_size(uint16_t op, uint32_t a, uint32_t b, uint32_t c, uint32_t d) except? 0:
    """The width of an op's result: operand widths must be equal or 1 (0 is a width too:
    an empty operand makes the result empty)."""
    cdef uint32_t deps[4]
    deps[0] = a; deps[1] = b; deps[2] = c; deps[3] = d
    cdef uint32_t size = 1, s
    cdef bint first = True
    cdef int k
    for k in range(4):
        if deps[k] == 0:
            continue
        s = vars[deps[k]].size
        if first or size == 1:
            size = s
            first = False
        elif s != 1 and s != size:
            sizes = [vars[deps[j]].size for j in range(4) if deps[j]]
            raise ValueError(f"pbc: operands of '{op_name(op)}' have incompatible sizes "
                             f"{sizes}: widths must be equal or 1")
    return size

cdef TemplateRecorder recorder = None    # set while a trace template records (_rt_template.pxi)

cdef uint32_t var_op(uint16_t op, uint8_t rt, uint32_t a, uint32_t b, uint32_t c,
                     uint8_t extra) except 0:
    """The one entry for new computational nodes. Operands must already have the types the
    op expects; returns a new reference."""
    if recorder is not None:
        return recorder.op(op, rt, a, b, c, extra)
    return make_op(op, rt, a, b, c, extra)

cdef bint fold_literals(uint16_t op, uint8_t ot, uint8_t rt, uint32_t a, uint32_t b,
                        uint32_t c, uint64_t* out) noexcept nogil:
    """Folds op over its literal operands (b, c: 0 if absent). With FlushDenormals the
    arithmetic runs under the MXCSR bits that kernels run under, so that folded and
    computed results agree bit for bit."""
    cdef bint folded
    cdef unsigned csr = 0
    cdef unsigned bits = flush_bits()
    if bits:                  # (folding is frequent: MXCSR is left alone where it can be)
        csr = pbc_csr_set(bits)
    if c:
        folded = fold_ternary(op, ot, vars[a].literal, vars[b].literal, vars[c].literal, out)
    elif b:
        folded = fold_binary(op, ot, vars[a].literal, vars[b].literal, out)
    else:
        folded = fold_unary(op, ot, rt, vars[a].literal, out)
    if bits:
        pbc_csr_restore(csr, out)
    return folded

cdef uint32_t make_op(uint16_t op, uint8_t rt, uint32_t a, uint32_t b, uint32_t c,
                      uint8_t extra) except 0:
    flush_if_dirty(a, b, c, 0)
    cdef uint32_t size = result_size(op, a, b, c, 0)
    cdef uint64_t out = 0
    cdef uint8_t ot = vars[a].vtype
    cdef uint32_t r
    cdef bint folded = False
    if size == 0:
        # Operations on empty arrays give empty arrays.
        return var_new(OP_LITERAL, rt, 0, 0, 0, 0, 0, 0, 0, vars[a].backend)
    if jit_flags & FLAG_CONSTANT_PROPAGATION:
        if op == OP_SELECT or op == OP_FMA:
            ot = vars[b].vtype
        if is_lit(a) and (b == 0 or is_lit(b)) and (c == 0 or is_lit(c)):
            folded = fold_literals(op, ot, rt, a, b, c, &out)
        if folded:
            return var_literal(rt, size, canon(rt, out), vars[a].backend)
        r = simplify(op, rt, a, b, c)
        if r:
            return r
        if op == OP_FMA:
            return fma_simplify(rt, a, b, c)
    return var_new(op, rt, size, a, b, c, 0, 0, extra, vars[a].backend)

cdef uint32_t fma_simplify(uint8_t rt, uint32_t a, uint32_t b, uint32_t c) except 0:
    # fma(a, b, 0) = a*b (for floats only with a -0 addend: a*b + (+0) turns -0 into +0);
    # fma(1, b, c) = b + c;  fma(a, 1, c) = a + c
    cdef uint32_t t, r
    cdef bint zero = is_neg_zero(c) if is_float(rt) else lit_is(c, 0)
    if zero and vars[c].size <= max(vars[a].size, vars[b].size):
        return var_op(OP_MUL, rt, a, b, 0, 0)
    if lit_is(a, 1) and vars[a].size <= max(vars[b].size, vars[c].size):
        return var_op(OP_ADD, rt, b, c, 0, 0)
    if lit_is(b, 1) and vars[b].size <= max(vars[a].size, vars[c].size):
        return var_op(OP_ADD, rt, a, c, 0, 0)
    return var_new(OP_FMA, rt, result_size(OP_FMA, a, b, c, 0), a, b, c, 0, 0, 0,
                   vars[a].backend)

cdef uint32_t var_cast(uint32_t a, uint8_t rt, bint bitcast) except 0:
    cdef uint8_t st = vars[a].vtype
    if st == rt:
        inc_ext(a)
        return a
    if bitcast and TYPE_SIZE[st] != TYPE_SIZE[rt]:
        raise CastError(f'pbc.reinterpret_array(): cannot reinterpret-cast between types of '
                        f'different size ({TYPE_NAMES[st]} and {TYPE_NAMES[rt]})')
    return var_op(OP_BITCAST if bitcast else OP_CAST, rt, a, 0, 0, st)

# ---- Python scalars ----------------------------------------------------------------------
cdef object int_to_float32(object value):
    """A Python int rounded once to float32 (via double it could round twice beyond 2^53):
    keep 24 significant bits, rounding half to even, then the conversion is exact."""
    shift = abs(value).bit_length() - 24          # Python ints throughout: no overflow
    if shift <= 0:
        return float(value)
    q, rem = divmod(abs(value), 2 ** shift)
    half = 2 ** (shift - 1)
    if rem > half or (rem == half and q & 1):
        q += 1
    sign = 1.0 if value > 0 else -1.0
    return sign * float(q * 2 ** shift) if q * 2 ** shift < 2 ** 128 else sign * float('inf')

cdef uint64_t scalar_bits(object value, uint8_t vt) except *:
    if vt == T_FLOAT32:
        if type(value) is int and not -(1 << 53) <= value <= (1 << 53):
            value = int_to_float32(value)
        return from_f32(<float> <double> value)
    if vt == T_FLOAT64:
        return from_f64(<double> value)
    if vt == T_BOOL:
        return 1 if value else 0
    if isinstance(value, float):
        if value != value or value in (float('inf'), float('-inf')):
            raise ValueError(f'pbc: cannot convert {value} to {TYPE_NAMES[vt]}')
        value = int(value)
    return <uint64_t> (int(value) & (0xFFFFFFFF if TYPE_SIZE[vt] == 4 else 0xFFFFFFFFFFFFFFFF))

cdef object bits_to_python(uint64_t bits, uint8_t vt):
    if vt == T_FLOAT32:
        return <double> as_f32(bits)
    if vt == T_FLOAT64:
        return as_f64(bits)
    if vt == T_BOOL:
        return bits != 0
    if is_signed(vt):
        return as_signed(vt, bits)
    return bits

# ---- gather ------------------------------------------------------------------------------
cdef uint32_t MAX_SYMBOLIC_GATHER = 512

cdef uint32_t gather_symbolic(uint32_t src, uint32_t index, uint32_t mask) except? 0:
    """Clones the unevaluated expression `src` with its lane index replaced by `index`.
    Returns 0 (nothing created) when src holds something that cannot be re-indexed."""
    cdef vector[uint32_t] order
    cdef unordered_map[uint32_t, uint32_t] new_id
    cdef uint32_t i, n = vars[src].size, k, r
    cdef Var* v
    begin_traversal()
    if not postorder(src, order, MAX_SYMBOLIC_GATHER):
        return 0
    for i in order:             # only elementwise nodes over the same lanes can be re-indexed
        v = &vars[i]
        if v.flags & F_DIRTY or (v.op == OP_PTR and (v.extra & 1)):
            return 0
        # Scatters, prints, loops and calls (their outputs): evaluate them instead.
        if OP_FLAGS[v.op] & (OPF_SIDE_EFFECT | OPF_LOOP | OPF_CALL) or v.op == OP_LANE_PTR:
            return 0
        if v.op == OP_COUNTER and v.size != n:
            return 0
    cdef uint32_t out[4]
    cdef uint8_t backend = vars[src].backend
    cdef uint32_t idx32 = var_cast(index, T_UINT32, False)
    try:
        for i in order:
            v = &vars[i]
            if v.op == OP_LITERAL:         # as wide as the index now: width 1 broadcasts
                r = var_literal(v.vtype, 1, v.literal, v.backend)
            elif v.op == OP_PTR:
                inc_ext(i); r = i
            elif v.op == OP_COUNTER:
                inc_ext(idx32); r = idx32
            elif v.op == OP_DATA:
                if v.size == 1:
                    inc_ext(i); r = i
                else:
                    r = gather_data(i, idx32, mask)
            elif v.op == OP_GATHER:
                r = var_op(OP_GATHER, v.vtype, v.dep[0], new_id[v.dep[1]],
                           new_id[v.dep[2]], 0)
            else:
                for k in range(4):
                    out[k] = new_id[v.dep[k]] if v.dep[k] else 0
                r = var_op(v.op, v.vtype, out[0], out[1], out[2], v.extra)
            new_id[i] = r
        r = new_id[src]
        inc_ext(r)
    finally:
        for it in new_id:
            dec_ext(it.second)
        dec_ext(idx32)
    return r

cdef uint32_t var_pointer(uint32_t data, bint write) except 0:
    return var_new(OP_PTR, T_PTR, 1, data, 0, 0, 0, 0, 1 if write else 0, vars[data].backend)

cdef uint32_t gather_data(uint32_t data, uint32_t index, uint32_t mask) except 0:
    note_read(data)
    cdef uint32_t ptr = var_pointer(data, False)
    cdef uint32_t r
    try:
        r = var_op(OP_GATHER, vars[data].vtype, ptr, index, mask, 0)
    finally:
        dec_ext(ptr)
    return r
