# Symbolic calls: each target of a dispatch is recorded once, in a scope of its own (as a
# loop body is), and the targets are tied together by one call node:
#   call_start                  a target (literal: its key; its id names the target's scope)
#   call_arg(start, value)      an argument as the target sees it
#   call_mask(start)            the lanes that run the target (its side effects' mask)
#   call_end(start; outputs, side effects)      (literal: the number of outputs)
#   call(selector, active; call_ends)           the call site (literal: number of outputs)
#   call_result(call)           an output of the call (literal: which)
# Kernel assembly keeps each target's code together, and the backends run a target only
# for the lanes (and, in vector code, only the vectors) that select it.

def call_begin(uint64_t key, uint32_t size, int backend):
    """Opens the recording of one call target; returns its call_start (the recording holds
    the reference; call_end or call_abort gives it back)."""
    return open_scope(OP_CALL_START, size, key, backend)

def call_arg(uint32_t start, ArrayBase value):
    """A new reference to the argument `value` as seen inside target `start`."""
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

def call_end(uint32_t start, list outputs):
    """Closes target `start` with its output variables; returns its call_end (a new
    reference), which has side effects if its extra field is 1."""
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
                  1 if not effects.empty() else 0, vars[start].backend)
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

def call_abort(uint32_t start):
    """Discards the target being recorded (after an error in it)."""
    if has_call_mask(start):
        mask_pop()
    loop_abort(start)

def call_site(ArrayBase selector, ArrayBase active, list ends, list types):
    """The call of the recorded targets `ends` (their references are taken over) on the lanes
    of `active`, each where `selector` equals its key. Returns new references to its outputs
    (of the type names `types`)."""
    cdef vector[uint32_t] deps
    cdef uint32_t c, x, r
    cdef uint32_t size = vars[selector._index].size
    cdef uint8_t be = selector._backend
    cdef bint effects = False
    for x in ends:
        deps.push_back(x)
        effects |= vars[x].extra == 1
    c = var_new(OP_CALL, T_VOID, size, selector._index, active._index, 0, 0, len(types), 0, be)
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
