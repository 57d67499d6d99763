# Symbolic loops: a loop body is recorded once into the graph and wired in with loop nodes
#   loop_start                        marks the loop (its id names the loop's scope)
#   loop_phi(start, init)             a state variable's value at the top of an iteration
#   loop_cond(start, cond[, outer])   the lanes that run the iteration (outer: enclosing mask)
#   loop_end(start, cond; phis, updates, side effects)   closes the body (literal: #phis)
#   loop_output(end)                  a state variable's value after the loop (literal: which)
# While a body is recorded, each new node belongs to the innermost loop any operand belongs
# to (nodes that depend on no phi stay outside: they are loop-invariant), and side effects
# belong to the innermost loop being recorded. Kernel assembly places nodes by these scopes.
# The mask stack restricts side effects (scatters, prints) to the lanes of the enclosing
# loop iterations and conditional branches.

cdef vector[vector[uint32_t]] scope_effects   # side effects of each open loop (a ref each)
cdef vector[uint32_t] mask_stack              # innermost last (a ref each)
cdef dict scope_targets = {}                  # scatter target -> open loop that writes it
cdef dict scope_reads = {}                    # gather source -> open loop that reads it
cdef uint64_t loop_serial = 0
# The outputs of each queued loop that has side effects. Whatever kernel runs such a loop
# also computes its outputs that are still alive: run again later for an output, the loop
# would repeat its scatters and prints.
cdef unordered_map[uint32_t, vector[uint32_t]] effect_loop_outputs

LOOP_LEAK = ('pbc: a value computed inside a symbolic loop body is used outside of it. '
             'Only loop state carries values out of a loop: make the variable part of the '
             'state (assign it before the loop)')

cdef int scope_depth(uint32_t s) noexcept:
    """1 + position of loop s on the recording stack; 0 for the top level; -1 if closed."""
    cdef int k
    if s == 0:
        return 0
    for k in range(<int> scope_stack.size() - 1, -1, -1):
        if scope_stack[k] == s:
            return k + 1
    return -1

cdef inline uint32_t node_scope(uint32_t i) noexcept:
    if scope_of.empty():
        return 0
    it = scope_of.find(i)
    return 0 if it == scope_of.end() else deref(it).second

cdef uint32_t scope_for(uint16_t op, uint32_t* dep) except? 0:
    """The loop a new node belongs to (0: top level); raises on a value leaked from a loop."""
    cdef uint32_t s = 0, ds
    cdef int k, depth, best = 0
    if OP_FLAGS[op] & (OPF_LOOP | OPF_CALL):
        return 0                              # set by the loop functions below
    if op == OP_SCATTER or op == OP_PRINT:
        return scope_stack.back() if not scope_stack.empty() else 0
    for k in range(4):
        if dep[k] == 0:
            continue
        ds = node_scope(dep[k])
        if ds == 0:
            continue
        depth = scope_depth(ds)
        if depth < 0:
            raise RuntimeError(LOOP_LEAK)
        if depth > best:
            best = depth
            s = ds
    return s

cdef void check_evaluable(uint32_t i) except *:
    """Raises if variable i cannot be computed now: it belongs to a loop body."""
    cdef uint32_t s = node_scope(i)
    if s == 0:
        return
    if scope_depth(s) < 0:
        raise RuntimeError(LOOP_LEAK)
    if vars[s].op == OP_CALL_START:
        raise RuntimeError(
            'pbc: cannot read the value of a variable while the symbolic call it belongs to '
            'is being recorded (e.g. converting it or an instance attribute to a Python or '
            'NumPy value, printing it, a horizontal reduction such as pbc.any or pbc.sum, or '
            'a gather from it): its value differs per lane. Use pbc.print() inside calls, '
            "or dispatch in evaluated mode (mode='evaluated' or JitFlag.SymbolicCalls off)")
    raise RuntimeError(
        'pbc: cannot read the value of a variable while its symbolic loop is being recorded '
        '(e.g. printing it, converting it to NumPy, a horizontal reduction such as pbc.any or '
        'pbc.sum, or a gather from it). Use pbc.print() inside loops, or run this loop in '
        "evaluated mode: pbc.hint(cond, mode='evaluated') or JitFlag.SymbolicLoops off")

cdef void check_dirty_read(uint32_t t) except *:
    if t in scope_targets and scope_depth(scope_targets[t]) > 0:
        raise RuntimeError(
            'pbc: this symbolic loop body reads an array that it also writes with a scatter; '
            "reads cannot be ordered after writes inside one kernel. Run the loop in evaluated "
            "mode (pbc.hint(cond, mode='evaluated')) or read before the first write")

cdef void check_write_after_read(uint32_t t) except *:
    if t in scope_reads and scope_depth(scope_reads[t]) > 0:
        raise RuntimeError(
            'pbc: this symbolic loop body writes (scatters into) an array that it also reads '
            'with a gather: the reads of later iterations would not see the writes of '
            "earlier ones. Run the loop in evaluated mode (pbc.hint(cond, mode='evaluated')), "
            'or use pbc.scatter_reduce if the body only accumulates')

cdef void note_read(uint32_t src) noexcept:
    if not scope_stack.empty() and src not in scope_reads:
        scope_reads[src] = scope_stack.back()

cdef void move_scope_entries(dict table, uint32_t start, uint32_t parent, bint drop):
    for t in [t for t, s in table.items() if s == start]:
        if parent and not drop:
            table[t] = parent
        else:
            del table[t]

# While a loop's derivative records the body again (pbc/ad/loop.py), the body's side effects
# (scatters, prints) are not recorded: the loop itself performed them.
cdef int effects_suppressed = 0

def suppress_effects(bint on):
    global effects_suppressed
    effects_suppressed += 1 if on else -1

cdef void queue_effect(uint32_t s) noexcept:
    """Queues side effect s (taking over its reference): into the innermost loop being
    recorded, or for the next eval."""
    if scope_stack.empty():
        side_effects.push_back(s)
    else:
        scope_effects.back().push_back(s)

cdef void apply_mask(uint32_t* m) except *:
    """m &= the innermost mask (m is an owned reference, replaced)."""
    cdef uint32_t r
    if mask_stack.empty():
        return
    r = var_op(OP_AND, T_BOOL, m[0], mask_stack.back(), 0, 0)
    dec_ext(m[0])
    m[0] = r

# ---- masks (Python side: conditionals and evaluated loops) --------------------------------
def mask_push(ArrayBase m):
    """Restricts side effects to lanes where m (and every enclosing mask) is set."""
    cdef uint32_t r = operand(m, T_BOOL, m._backend)
    apply_mask(&r)
    mask_stack.push_back(r)

def mask_pop():
    dec_ext(mask_stack.back())
    mask_stack.pop_back()

def mask_top(cls):
    """The innermost mask as a Bool array of class cls, or None."""
    if mask_stack.empty():
        return None
    inc_ext(mask_stack.back())
    return wrap(cls._backend_code, T_BOOL, mask_stack.back())

def mask_depth():
    return mask_stack.size()

# ---- recording -----------------------------------------------------------------------------
def loop_begin(list inits, uint32_t size, int backend):
    """Opens a symbolic loop of `size` lanes whose state starts as the variables `inits`.
    Returns (start, phis): the loop (its recording holds the reference; loop_end or
    loop_abort gives it back) and new references to one phi per state variable, which the
    condition and body must read instead of the initial values."""
    global loop_serial
    cdef uint32_t start, p, init
    # (the loop reads its initial state: writes queued into it run first, as before any op)
    for x in inits:
        flush_if_dirty(x, 0, 0, 0)
    loop_serial += 1
    start = open_scope(OP_LOOP_START, size, loop_serial, backend)
    phis = []
    for k, x in enumerate(inits):
        init = x
        p = var_new(OP_LOOP_PHI, vars[init].vtype, size, start, init, 0, 0, k, 0, backend)
        scope_of[p] = start
        phis.append(p)
    return start, phis

cdef uint32_t open_scope(uint16_t op, uint32_t size, uint64_t lit, int backend) except 0:
    """Creates the start node of a loop or call target (in the enclosing scope) and opens
    its scope: nodes that depend on its placeholders, and side effects, now belong to it."""
    cdef uint32_t start = var_new(op, T_VOID, size, 0, 0, 0, 0, lit, 0, backend)
    if not scope_stack.empty():
        scope_of[start] = scope_stack.back()
    scope_stack.push_back(start)
    scope_effects.push_back(vector[uint32_t]())
    return start

cdef bint has_cond(uint32_t start) noexcept:
    return (not mask_stack.empty() and vars[mask_stack.back()].op == OP_LOOP_COND
            and vars[mask_stack.back()].dep[0] == start)

def loop_cond(uint32_t start, ArrayBase cond):
    """Marks the end of the loop test: lanes where `cond` holds (within the enclosing mask)
    run the body, whose side effects the loop's mask (pushed here) restricts to them."""
    if scope_stack.empty() or scope_stack.back() != start or has_cond(start):
        raise RuntimeError('pbc: loop_cond outside of its loop')
    cdef uint32_t outer = mask_stack.back() if not mask_stack.empty() else 0
    cdef uint32_t c = operand(cond, T_BOOL, cond._backend), r, n = vars[start].size
    if n == 1 and vars[c].size != 1:
        # State of width 1 under a wider test (pbc.Loop, which cannot record again): the
        # loop runs over the test's lanes; its phis stay width 1, like broadcast operands.
        vars[start].size = vars[c].size
    elif vars[c].size != 1 and vars[c].size != n:
        dec_ext(c)
        raise ValueError(f'pbc: the loop condition has width {vars[c].size}, its state {n}')
    try:
        r = var_new(OP_LOOP_COND, T_BOOL, vars[start].size, start, c, outer, 0, 0, 0,
                    vars[start].backend)
    finally:
        dec_ext(c)
    scope_of[r] = start
    mask_stack.push_back(r)            # the stack owns the reference

cdef void close_scope(uint32_t start) except *:
    """Pops loop `start` off the recording stacks; its scatter targets now belong to the
    enclosing loop (or to the top level, where release_roots clears them)."""
    scope_stack.pop_back()
    cdef uint32_t parent = scope_stack.back() if not scope_stack.empty() else 0
    move_scope_entries(scope_targets, start, parent, False)
    move_scope_entries(scope_reads, start, parent, False)

def loop_end(uint32_t start, list phis, list updates):
    """Closes loop `start`: `updates` are the state at the end of an iteration, one per phi.
    Returns new references to the loop outputs (the state after the loop)."""
    if scope_stack.empty() or scope_stack.back() != start or not has_cond(start):
        raise RuntimeError('pbc: loop_end without loop_begin and loop_cond')
    cdef vector[uint32_t] deps
    cdef vector[uint32_t] effects = scope_effects.back()
    cdef uint32_t end, o, n = len(phis), size = vars[start].size, x
    cdef uint32_t cond = mask_stack.back()
    cdef uint8_t be = vars[start].backend
    for x in phis:
        deps.push_back(x)
    for x in updates:
        deps.push_back(x)
    for x in effects:
        deps.push_back(x)
    for x in effects:
        if vars[x].size != size and vars[x].size != 1:
            if size != 1:
                raise ValueError(f'pbc: a side effect of width {vars[x].size} in a loop of '
                                 f'width {size}')
            size = vars[start].size = vars[x].size     # as in loop_cond (pbc.Loop)
    end = var_new(OP_LOOP_END, T_VOID, size, start, cond, 0, 0, n, 0, be)
    set_extra_deps(end, deps)
    scope_effects.pop_back()
    mask_pop()
    close_scope(start)
    dec_ext(start)
    for x in effects:
        dec_ext(x)
    cdef uint32_t parent = scope_stack.back() if not scope_stack.empty() else 0
    if parent:
        scope_of[end] = parent
    outs = []
    for k in range(n):
        o = var_new(OP_LOOP_OUTPUT, vars[<uint32_t> phis[k]].vtype, size, end, 0, 0, 0, k, 0,
                    be)
        if parent:
            scope_of[o] = parent
        outs.append(o)
    if effects.empty():
        dec_ext(end)                 # the outputs hold it
    else:
        queue_effect(end)            # it has side effects: it runs even if nothing is read
        if not parent:
            for o in outs:
                effect_loop_outputs[end].push_back(o)
    return outs

cdef void add_effect_loop_outputs(vector[uint32_t]& roots) noexcept:
    """Adds the live outputs of the queued loops with side effects among `roots` (a new
    reference each), so that they are computed by the kernel that runs the loop."""
    cdef uint32_t i, o
    cdef size_t k, n = roots.size()
    for k in range(n):
        i = roots[k]
        if vars[i].op != OP_LOOP_END and vars[i].op != OP_CALL:
            continue
        it = effect_loop_outputs.find(i)
        if it == effect_loop_outputs.end():
            continue
        for o in deref(it).second:
            if not (vars[o].flags & F_FREE) and vars[o].dep[0] == i and (
                    vars[o].op == OP_LOOP_OUTPUT or vars[o].op == OP_CALL_RESULT):
                inc_ext(o)
                roots.push_back(o)
        effect_loop_outputs.erase(it)

def loop_effect_width(uint32_t start):
    """The widest side effect recorded so far in the body of loop `start` (0: none)."""
    cdef uint32_t w = 0, x
    for x in scope_effects.back():
        w = max(w, vars[x].size)
    return w

def loop_abort(uint32_t start):
    """Discards the loop being recorded (after an error in its body, or to record it again):
    its side effects are dropped and the arrays they targeted are left as they were."""
    if scope_stack.empty() or scope_stack.back() != start:
        raise RuntimeError('pbc: loop_abort of a loop that is not being recorded')
    cdef vector[uint32_t] effects = scope_effects.back()
    cdef uint32_t x
    scope_effects.pop_back()
    if has_cond(start):
        mask_pop()
    for t in [t for t, s in scope_targets.items() if s == start]:
        del scope_targets[t]
        vars[<uint32_t> t].flags &= ~F_DIRTY
        pending_reduce.pop(t, None)
    move_scope_entries(scope_reads, start, 0, True)
    scope_stack.pop_back()
    dec_ext(start)
    for x in effects:
        dec_ext(x)

def dec_ref(uint32_t i):
    """Gives back a reference that a loop function returned."""
    dec_ext(i)

def recording_depth():
    """How many symbolic loops are being recorded."""
    return scope_stack.size()

def wrap_index(cls, uint32_t i):
    """An array of class cls for variable i, taking over a reference the caller owns."""
    return wrap(cls._backend_code, cls._vt_code, i)

def masks_take():
    """Empties the mask stack and returns its entries (for masks_restore): code that runs on
    compressed lanes (evaluated dispatch) must not be restricted by masks of all lanes."""
    saved = [m for m in mask_stack]
    mask_stack.clear()
    return saved

def masks_restore(list saved):
    cdef uint32_t m
    for m in mask_stack:
        dec_ext(m)
    mask_stack.clear()
    for m in saved:
        mask_stack.push_back(m)


# ---- evaluated loops: the outside values a body reads -----------------------------------------
def serial_now():
    """The creation serial the next variable gets (see outside_reads)."""
    return serial_counter

def outside_reads(list roots, uint32_t since):
    """The unevaluated variables created before serial `since` that variables created since
    read directly, among everything `roots` (variable ids, 0 skipped) and the queued side
    effects depend on: for an evaluated loop, the values from outside its body that the
    body reads. Evaluated once, they are read from memory by the later iterations' kernels
    instead of computed again in each (a loop reading the result of a symbolic call: once
    per iteration). Only nodes outside recorded loop bodies and calls, which are not
    values of their own."""
    cdef vector[uint32_t] order
    cdef uint32_t r, i, j, span = serial_counter - since
    cdef int k
    cdef Var* v
    cdef Var* w
    begin_traversal()
    for r in roots:
        if r:
            postorder(r, order, <size_t> -1)
    for r in side_effects:
        postorder(r, order, <size_t> -1)
    found, seen = [], set()
    for i in order:
        v = &vars[i]
        if <uint32_t> (v.serial - since) >= span or v.op == OP_PTR:
            continue                            # (made before `since`; a pointer's target)
        deps = [v.dep[k] for k in range(4) if v.dep[k]]
        if v.flags & F_EXTRA:
            deps += list(extra_deps[i])
        for j in deps:
            w = &vars[j]
            if <uint32_t> (w.serial - since) < span or w.op == OP_DATA or \
                    w.op == OP_LITERAL or w.op == OP_COUNTER or w.op == OP_PTR or \
                    node_scope(j) or j in seen:
                continue
            seen.add(j)
            found.append(j)
    return found
