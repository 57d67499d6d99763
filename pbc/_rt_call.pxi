# Symbolic calls: each target of a dispatch is recorded once, in a scope of its own (as a
# loop body is), and the targets are tied together by one call node:
#   call_start                  a target (literal: its key; its id names the target's scope)
#   call_arg(start, value)      an argument as the target sees it
#   call_mask(start)            the lanes that run the target (its side effects' mask)
#   call_end(start; outputs, side effects)      (literal: the number of outputs)
#   call(selector, active; call_ends)           the call site (literal: #outputs | #args << 32)
#   call_result(call)           an output of the call (literal: which)
# Kernel assembly keeps each target's code together, and the backends run a target only
# for the lanes (and, in vector code, only the vectors) that select it.

def call_begin(uint64_t key, uint32_t size, int backend):
    """Opens the recording of one call target; returns its call_start (the recording holds
    the reference; call_end or call_abort gives it back)."""
    return open_scope(OP_CALL_START, size, key, backend)

def call_arg(uint32_t start, ArrayBase value):
    """A new reference to the argument `value` as seen inside target `start`."""
    flush_if_dirty(value._index, 0, 0, 0)      # (the target reads it: queued writes first)
    cdef uint32_t r = var_new(OP_CALL_ARG, value._vt, vars[value._index].size, start,
                              value._index, 0, 0, 0, 0, value._backend)
    scope_of[r] = start
    return r

def call_mask(uint32_t start):
    """Pushes the target's lane mask (for the side effects it records)."""
    cdef uint32_t r = var_new(OP_CALL_MASK, T_BOOL, vars[start].size, start, 0, 0, 0, 0, 0,
                              vars[start].backend)
    scope_of[r] = start
    mask_stack.push_back(r)            # the stack owns the reference

cdef bint has_call_mask(uint32_t start) noexcept:
    return (not mask_stack.empty() and vars[mask_stack.back()].op == OP_CALL_MASK
            and vars[mask_stack.back()].dep[0] == start)

cdef enum:
    END_WRITES = 1      # a call_end's extra: its target has side effects

def call_end(uint32_t start, list outputs):
    """Closes target `start` with its output variables; returns its call_end (a new
    reference)."""
    if scope_stack.empty() or scope_stack.back() != start:
        raise RuntimeError('pbc: call_end of a target that is not being recorded')
    cdef vector[uint32_t] deps
    cdef vector[uint32_t] effects = scope_effects.back()
    cdef uint32_t end, x
    for x in outputs:
        deps.push_back(x)
    for x in effects:
        deps.push_back(x)
    end = var_new(OP_CALL_END, T_VOID, vars[start].size, start, 0, 0, 0, len(outputs),
                  END_WRITES if not effects.empty() else 0, vars[start].backend)
    set_extra_deps(end, deps)
    scope_effects.pop_back()
    if has_call_mask(start):
        mask_pop()
    close_scope(start)
    dec_ext(start)
    for x in effects:
        dec_ext(x)
    if not scope_stack.empty():
        scope_of[end] = scope_stack.back()
    return end

def call_writes(list ends):
    """Whether any of the targets closed by `ends` (call_ends) has side effects."""
    for x in ends:
        if vars[<uint32_t> x].extra == END_WRITES:
            return True
    return False

def call_abort(uint32_t start):
    """Discards the target being recorded (after an error in it)."""
    if has_call_mask(start):
        mask_pop()
    loop_abort(start)

def call_site(ArrayBase selector, ArrayBase active, list ends, list types, uint32_t inputs):
    """The call of the recorded targets `ends` (their references are taken over) on the lanes
    of `active`, each where `selector` equals its key, with `inputs` arguments. Returns new
    references to its outputs (of the type names `types`)."""
    cdef vector[uint32_t] deps
    cdef uint32_t c, x, r
    cdef uint32_t size = vars[selector._index].size
    cdef uint8_t be = selector._backend
    cdef bint effects = call_writes(ends)
    for x in ends:
        deps.push_back(x)
    # literal: the number of outputs, and above them that of the arguments (for statistics)
    c = var_new(OP_CALL, T_VOID, size, selector._index, active._index, 0, 0,
                len(types) | (<uint64_t> inputs << 32), 0, be)
    set_extra_deps(c, deps)
    for x in ends:
        dec_ext(x)
    cdef uint32_t parent = scope_stack.back() if not scope_stack.empty() else 0
    if parent:
        scope_of[c] = parent
    outs = []
    for k, t in enumerate(types):
        r = var_new(OP_CALL_RESULT, TYPE_NAMES.index(t), size, c, 0, 0, 0, k, 0, be)
        if parent:
            scope_of[r] = parent
        outs.append(r)
    if effects:
        queue_effect(c)
        if not parent:
            for r in outs:
                effect_loop_outputs[c].push_back(r)
    else:
        dec_ext(c)
    return outs

# ---- devirtualization: outputs that every target computes alike ------------------------------
cdef bint inside_target(uint32_t i, uint32_t start) noexcept:
    """Whether node i was recorded in target `start` (or in a loop nested in it)."""
    cdef uint32_t s = i
    while True:
        it = scope_of.find(s)
        if it == scope_of.end():
            return False
        s = deref(it).second
        if s == start:
            return True

cdef inline bint pure_op(uint16_t op) noexcept:
    return OP_FLAGS[op] & OPF_PURE

cdef inline bint commutative(uint16_t op) noexcept:
    return OP_FLAGS[op] & OPF_COMMUTATIVE

cdef int alike(uint32_t a, uint32_t sa, uint32_t b, uint32_t sb, bint ops,
               unordered_map[uint64_t, int]& memo, int depth) except -1:
    """1 if value a of target sa is the same pure function of the same arguments, outside
    values and literals as value b of target sb (a may be b: then whether it is such a
    function at all); else 0. Gathers count as pure (callers pass `ops` only for calls
    that write no memory), and each target's mask as the same value. Comparing side by
    side stops at the first difference."""
    if a == b and not inside_target(a, sa):
        return 1
    cdef uint64_t key = (<uint64_t> a << 32) | b
    it = memo.find(key)
    if it != memo.end():
        return deref(it).second
    cdef Var* va = &vars[a]
    cdef Var* vb = &vars[b]
    cdef int r = 0, k
    if va.op == OP_LITERAL or vb.op == OP_LITERAL:
        r = (va.op == vb.op and va.vtype == vb.vtype and va.size == vb.size
             and va.literal == vb.literal)
    elif not inside_target(a, sa) or not inside_target(b, sb):
        r = 0                                    # outside values: the same one (a == b)
    elif va.op == OP_CALL_ARG or vb.op == OP_CALL_ARG:
        r = va.op == vb.op and va.dep[1] == vb.dep[1]
    elif va.op == OP_CALL_MASK or vb.op == OP_CALL_MASK:     # each target's own lanes
        r = va.op == vb.op and va.dep[0] == sa and vb.dep[0] == sb
    elif (ops and depth < 2000 and (pure_op(va.op) or va.op == OP_GATHER)
          and va.op == vb.op and va.vtype == vb.vtype
          and va.size == vb.size and va.literal == vb.literal and va.extra == vb.extra):
        r = 1
        for k in range(4):
            if r and (va.dep[k] != 0) != (vb.dep[k] != 0):
                r = 0
            elif r and va.dep[k]:
                r = alike(va.dep[k], sa, vb.dep[k], sb, ops, memo, depth + 1)
        if not r and commutative(va.op):         # a + b and b + a are the same value
            r = (alike(va.dep[0], sa, vb.dep[1], sb, ops, memo, depth + 1)
                 and alike(va.dep[1], sa, vb.dep[0], sb, ops, memo, depth + 1)
                 and (va.dep[2] == 0 or alike(va.dep[2], sa, vb.dep[2], sb, ops, memo,
                                                depth + 1)))
    memo[key] = r
    return r

def call_outputs_alike(uint32_t start, uint32_t value, list others, bint ops=True):
    """Whether output `value` of target `start` and the outputs `others` ((target, value)
    pairs) all compute the same pure function of the same arguments, outside values and
    literals (with `others` empty: whether it is such a function). Without `ops`, only
    outputs that are an argument, an outside value or a literal themselves qualify."""
    cdef unordered_map[uint64_t, int] memo
    if not others:
        return alike(value, start, value, start, ops, memo, 0) == 1
    for t, v in others:
        if not alike(value, start, v, t, ops, memo, 0):
            return False
    return True

def call_hoist(uint32_t start, uint32_t root):
    """Output `root` of target `start` (accepted by call_outputs_alike) computed again
    outside the call, from the caller's values. Returns a new reference."""
    cdef unordered_map[uint32_t, uint32_t] new     # node inside -> its value outside
    cdef vector[uint32_t] stack
    cdef uint32_t i, r, d[4]
    cdef Var* v
    cdef int k
    cdef bint ready
    stack.push_back(root)
    try:
        while not stack.empty():
            i = stack.back()
            if new.count(i):
                stack.pop_back()
                continue
            v = &vars[i]
            if v.op == OP_LITERAL or not inside_target(i, start):
                inc_ext(i)
                r = i
            elif v.op == OP_CALL_ARG:
                inc_ext(v.dep[1])
                r = v.dep[1]
            elif v.op == OP_CALL_MASK:             # outside, what selects lanes is the caller's
                r = var_literal(T_BOOL, 1, 1, v.backend)
            else:
                ready = True
                for k in range(4):
                    if v.dep[k] and not new.count(v.dep[k]):
                        stack.push_back(v.dep[k])
                        ready = False
                if not ready:
                    continue
                for k in range(4):
                    d[k] = new[v.dep[k]] if v.dep[k] else 0
                r = var_op(v.op, v.vtype, d[0], d[1], d[2], v.extra)
            new[i] = r
            stack.pop_back()
        r = new[root]
        inc_ext(r)
        return r
    finally:
        for it in new:
            dec_ext(it.second)

# ---- closure data by pointer: array attributes of the targets ---------------------------------
# While a call target is recorded, gathers from an array attribute of the target's instance
# (closure_sources: array variable -> a callable that returns the lane_ptr variable) go
# through a lane pointer to the lane's own instance's array, so instances that differ only
# in such arrays record the same code.

def lane_pointer(ArrayBase slot, list arrays, bint write=False):
    """A pointer per lane to arrays[slot[lane]] (and its size), for gathers or (`write`:
    the arrays must be claimed for it) for scatters. Returns a new reference."""
    return lane_pointer_to(slot, arrays, write)

cdef uint32_t lane_pointer_to(ArrayBase slot, list arrays, bint write) except 0:
    """lane_pointer, for gathers or (`write`: the arrays must be claimed) for scatters."""
    cdef vector[uint32_t] ptrs
    cdef uint32_t a, d, r
    try:
        for x in arrays:
            a = (<ArrayBase> x)._index
            if vars[a].op == OP_LITERAL:
                d = materialize(a)
            else:
                if vars[a].op != OP_DATA or (vars[a].flags & F_DIRTY and not write):
                    eval_var(a)
                inc_ext(a)
                d = a
            ptrs.push_back(var_pointer(d, write))
            dec_ext(d)
        r = var_new(OP_LANE_PTR, (<ArrayBase> arrays[0])._vt, vars[slot._index].size,
                    slot._index, 0, 0, 0, 0, 0, slot._backend)
        set_extra_deps(r, ptrs)
    finally:
        for d in ptrs:
            dec_ext(d)
    return r

def set_closure_sources(dict sources):
    """{array variable: callable returning a lane_ptr variable} for the target being
    recorded ({}: none); returns the previous ones."""
    global closure_sources
    old = closure_sources
    closure_sources = sources
    return old

cdef uint32_t gather_closure(uint32_t lane_ptr, uint32_t index, uint32_t mask) except 0:
    cdef uint32_t p
    for p in extra_deps[lane_ptr]:
        check_dirty_read(vars[p].dep[0])
        note_read(vars[p].dep[0])
    return var_op(OP_GATHER, vars[lane_ptr].vtype, lane_ptr, index, mask, 0)
