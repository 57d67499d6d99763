# Gathers and scatters: reads and writes of memory, with copy-on-write for shared targets
# and host-side bounds checks in Debug mode (raised at the user's call, before any write).

cdef uint32_t index_operand(object index, uint8_t backend, uint32_t* mask) except 0:
    """The index as UInt32. A 64-bit index beyond 2^32 - 1 cannot be in bounds: its lane is
    masked off (mask is updated, a new reference) rather than wrapped around."""
    cdef int k = kind_of(index)
    if k == T_BOOL or is_float(k) or k < 0:
        raise TypeError('pbc: gather/scatter indices must be integer arrays')
    if k != T_INT64 and k != T_UINT64:
        return operand(index, T_UINT32, backend)
    cdef uint32_t wide = operand(index, T_UINT64, backend), lim = 0, fits = 0, m = mask[0]
    try:
        lim = var_literal(T_UINT64, 1, 0xFFFFFFFFULL, backend)
        fits = var_op(OP_LE, T_BOOL, wide, lim, 0, 0)
        mask[0] = var_op(OP_AND, T_BOOL, m, fits, 0, 0)
        dec_ext(m)
        return var_cast(wide, T_UINT32, False)
    finally:
        dec_ext(wide); dec_ext(lim); dec_ext(fits)

cdef void check_bounds(str what, uint32_t index, uint32_t mask, uint32_t size,
                       uint8_t backend) except *:
    """Debug mode: raise if an active lane's index is out of range (nothing has run yet)."""
    inc_ext(index)
    inc_ext(mask)
    idx = wrap(backend, T_UINT32, index)
    act = wrap(backend, T_BOOL, mask)
    n = max(len(idx), len(act))
    ia = np.broadcast_to(to_numpy(idx), n)
    ma = np.broadcast_to(to_numpy(act), n)
    bad = np.flatnonzero(ma & (ia >= size))
    if bad.size:
        lane = int(bad[0])
        raise IndexError(f'pbc.{what}: index {int(ia[lane])} (lane {lane}) is out of bounds '
                         f'for an array of size {size}')

def gather(cls, ArrayBase source, index, active=True):
    """source[index] for active lanes, 0 elsewhere (see pbc.gather)."""
    if cls._vt_code != source._vt or cls._backend_code != source._backend:
        raise TypeError(f'pbc.gather: cannot gather {cls.__name__} from '
                        f'{type(source).__name__}')
    cdef uint8_t be = source._backend
    cdef uint32_t src = source._index, ii = 0, im = 0, r = 0
    try:
        im = operand(active, T_BOOL, be)
        ii = index_operand(index, be, &im)
        if closure_sources and src in closure_sources:
            # An array attribute of a call target: each lane reads its own instance's
            # array. (Its derivatives are those of the array the target is recorded with.)
            r = gather_closure(closure_sources[src](), ii, im)
        else:
            r = gather_var(src, ii, im)
    finally:
        dec_ext(ii)
        dec_ext(im)
    out = wrap(be, source._vt, r)
    if ad_live:
        ad_record_rule(OP_GATHER, out, (source,), (frozen(index), frozen(active),
                                                   vars[src].size), False)
    return out

cdef object frozen(object x):
    """x's value now, where no in-place change reaches it: a derivative rule reads the
    index and mask of its gather or scatter when it runs, after the code that made the node
    may have changed them (`i += 1` after `gather(x, i)` in a loop's iteration)."""
    if isinstance(x, ArrayBase):
        return ad_detached(x)
    if isinstance(x, (list, np.ndarray)):
        return np.array(x)
    return x

cdef uint32_t gather_var(uint32_t src, uint32_t ii, uint32_t im) except 0:
    """Variable src at lanes ii where im holds, 0 elsewhere (a new reference)."""
    cdef uint8_t be = vars[src].backend, vt = vars[src].vtype
    cdef uint32_t r = 0, lit = 0, zero = 0, inb = 0, m2 = 0, n = vars[src].size, t = 0
    try:
        if vars[src].flags & F_DIRTY:
            eval_var(src)
        if jit_flags & FLAG_DEBUG and scope_stack.empty():
            check_bounds('gather', ii, im, n, be)
        if vars[src].op != OP_DATA:
            # (read as a value, not from memory: a scatter into it later in a loop's body
            # must still find the read, which would not see its writes)
            note_read(src)
        if vars[src].op == OP_LITERAL:
            t = var_literal(vt, result_size(OP_GATHER, ii, im, 0, 0), vars[src].literal, be)
        elif n == 1 and vars[src].op != OP_DATA:
            inc_ext(src)             # one value (a broadcast): every lane in bounds reads it
            t = src
        elif vars[src].op != OP_DATA:
            t = gather_symbolic(src, ii, im)
            if t == 0:
                eval_var(src)
        if t:
            # Lanes masked off or outside [0, n) read 0, exactly as gathers from memory do.
            lit = var_literal(T_UINT32, 1, n, be)
            inb = var_op(OP_LT, T_BOOL, ii, lit, 0, 0)
            m2 = var_op(OP_AND, T_BOOL, im, inb, 0, 0)
            zero = var_literal(vt, 1, 0, be)
            r = var_op(OP_SELECT, vt, m2, t, zero, 0)
        if r == 0:
            r = gather_data(src, ii, im)
    finally:
        for x in (lit, zero, inb, m2, t):
            dec_ext(x)
    return r

cdef uint32_t copy_var(uint32_t i) except 0:
    if on_device(i):
        return copy_device_var(i)
    join_launches()
    cdef Var* v = &vars[i]
    cdef void* p = mem_alloc(v.vtype, v.size)
    memcpy(p, v.data, <size_t> v.size * TYPE_SIZE[v.vtype])
    return var_data(v.vtype, v.size, p, v.backend)

# The state of the loops and conditionals running now, as it was when they began: variable
# -> [its reference count then, the stash it belongs to, the caller's array and the copies
# of it that the bodies work on]. The copies add references. A scatter into an array that
# only the caller's array held then writes the caller's buffer (as in Dr.Jit), rather than
# a copy of it: scatters are side effects, not state. (A literal gets a buffer: the caller's
# array and its copies all take it.)
cdef dict stashed_refs = {}
cdef uint64_t stash_count = 0

def stash_refs(list arrays):
    """Records the state `arrays` (see stashed_refs); returns the stash, for unstash_refs."""
    global stash_count
    stash_count += 1
    cdef uint32_t i
    for a in arrays:
        i = (<ArrayBase> a)._index
        if i and i not in stashed_refs:
            stashed_refs[i] = [vars[i].ref_ext + vars[i].ref_int, stash_count, a]
    return stash_count

def stash_copy(ArrayBase original, ArrayBase copy):
    """`copy` (of the same variable) stands for `original` in a body (see stashed_refs)."""
    entry = stashed_refs.get(original._index) if stashed_refs else None
    if entry is not None and any(x is original for x in entry[2:]):
        entry.append(copy)

def unstash_refs(uint64_t stash):
    for i in [i for i, entry in stashed_refs.items() if entry[1] == stash]:
        del stashed_refs[i]

cdef void own_target(ArrayBase target) except *:
    """Gives `target` a buffer that no other array or pending read shares (copy-on-write)."""
    cdef uint32_t t = target._index, fresh = 0
    sole = stashed_refs.get(t) if stashed_refs else None
    if sole is not None and (sole[0] != 1 or not any(x is target for x in sole[2:])):
        # (others held it before: they must not see the write; or the target is another
        # array of the same variable, `zeros(T, n)` of a literal the state holds too)
        sole = None
    if vars[t].op == OP_LITERAL:
        fresh = materialize(t)
        if sole is not None:         # the caller's array and its copies take the buffer
            for x in sole[2:]:
                if x is not target and (<ArrayBase> x)._index == t:
                    (<ArrayBase> x)._set_index(fresh)
            del stashed_refs[t]
            stashed_refs[fresh] = sole
    else:
        if vars[t].op != OP_DATA:
            eval_var(t)
        if vars[t].ref_ext + vars[t].ref_int > 1 and sole is None:
            if vars[t].flags & F_DIRTY:
                eval_var(t)          # queued writes must land before the copy is taken
            fresh = copy_var(t)
    if fresh:
        dec_ext(t)
        target._index = fresh

REDUCE_ALLOW = {0: 7, 1: 6, 2: 6, 3: 6, 4: 6, 5: 3, 6: 3, 7: 6}    # kinds, as OP_ALLOW
cdef int REDUCE_ADD_LOCAL = REDUCE_NAMES.index('add_local')
cdef dict pending_reduce = {}      # dirty target id -> reduction of its queued scatters

cdef void scatter_obj(ArrayBase target, object value, object index, object active,
                      int reduce, bint disjoint, uint64_t literal=0) except *:
    cdef uint8_t be = target._backend, vt = target._vt
    if not (REDUCE_ALLOW[reduce] & kind_bit(vt)):
        raise TypeError(f'pbc.scatter_reduce: {REDUCE_NAMES[reduce]} is not supported on '
                        f'{TYPE_NAMES[vt]} arrays')
    if isinstance(value, ArrayBase) and (<ArrayBase> value)._vt > vt:
        raise TypeError(f'pbc.scatter: cannot write {TYPE_NAMES[(<ArrayBase> value)._vt]} '
                        f'values into a {TYPE_NAMES[vt]} array')
    # An array attribute of a call target being recorded: written through a pointer per lane
    # to each lane's own instance's array (closure data), all of which are targets then.
    closure = closure_sources.get(target._index) if closure_sources else None
    cdef list targets = closure.arrays if closure is not None else [target]
    cdef uint32_t iv = 0, ii = 0, im = 0, ptr = 0, s = 0, size
    try:
        iv = operand(value, vt, be)
        im = operand(active, T_BOOL, be)
        ii = index_operand(index, be, &im)
        flush_if_dirty(iv, ii, im, 0)
        if jit_flags & FLAG_DEBUG and scope_stack.empty():
            check_bounds('scatter' if reduce == 0 else 'scatter_reduce', ii, im,
                         vars[target._index].size, be)
        apply_mask(&im)
        size = result_size(OP_SCATTER, iv, ii, im, 0)
        in_body = [claim_target(t, reduce, disjoint) for t in targets]
        if closure is not None:        # a claimed array may have a buffer of its own now
            for t in targets:
                closure_sources[(<ArrayBase> t)._index] = closure
        if size == 0:
            return
        if closure is None:
            ptr = var_pointer(target._index, True)
        else:
            ptr = closure.write_pointer()
            inc_ext(ptr)
        s = var_new(OP_SCATTER, T_VOID, size, ptr, iv, ii, im, literal, reduce, be)
        queue_effect(s)
        for t, inside in zip(targets, in_body):
            vars[(<ArrayBase> t)._index].flags |= F_DIRTY
            pending_reduce[(<ArrayBase> t)._index] = reduce
            if not scope_stack.empty() and not inside:
                scope_targets[(<ArrayBase> t)._index] = scope_stack.back()
    finally:
        for x in (iv, ii, im, ptr):
            dec_ext(x)

cdef bint claim_target(ArrayBase target, int reduce, bint disjoint) except -1:
    """Readies `target` for a new scatter: checks it may be written here, runs what must
    come before (nothing, for a write `disjoint` from those queued), and gives it a buffer
    of its own. Returns whether a loop body being recorded already writes it."""
    if node_scope(target._index):
        raise RuntimeError(
            'pbc.scatter: the target array is loop state of (or computed in) a symbolic '
            'loop being recorded, which holds no memory to write to. Scatter into an array '
            'created before the loop and not passed as its state, or run the loop in '
            "evaluated mode (pbc.hint(cond, mode='evaluated'))")
    check_write_after_read(target._index)
    in_body = target._index in scope_targets and scope_depth(scope_targets[target._index]) > 0
    if (vars[target._index].flags & F_DIRTY) and not in_body and (
            reduce == 0 or pending_reduce.get(target._index, 0) != reduce
            or not scope_stack.empty()) and not (disjoint and scope_stack.empty()):
        # Scatters queued into one array run fused, lane packet by lane packet: only
        # the same atomic reduction commutes with what is pending. Anything else must
        # come after it, as the program says. (Writes recorded in one loop body keep
        # their order: they are ordered operands of the loop.)
        eval_var(target._index)
    own_target(target)
    return in_body

def scatter(ArrayBase target, value, index, active=True, int reduce=0, bint disjoint=False):
    """target[index] = value (or reduce into it) for active lanes; a queued side effect.
    `disjoint` promises that no lane it writes is one a queued scatter into the target
    writes: it is then queued after them without running them first (the targets of an
    evaluated call write their own lanes of one result, each in a kernel of its own).
    Where the target or the value carries derivatives, the target's new value gets a node
    whose operands are its old value and the value written (a min/max reduction's rule also
    reads both values and the result: the gradient goes to what won)."""
    cdef uint32_t st = ad_src(target) if ad_live else 0
    cdef uint32_t sv = ad_src(value) if ad_live else 0
    cdef bint minmax = reduce == 3 or reduce == 4
    if effects_suppressed:
        # (a loop's derivative records the body again: the write is not repeated, but the
        # derivative may need to know of it)
        if (st or sv) and symbolic_scatter_hook is not None:
            symbolic_scatter_hook(target, value, index, lanes_written(target, active),
                                  reduce, False)
        return
    if (st or sv) and not scope_stack.empty():
        if symbolic_scatter_hook is None or not symbolic_scatter_hook(
                target, value, index, lanes_written(target, active), reduce, True):
            raise NotImplementedError(
                'pbc.scatter: derivatives of this scatter inside a symbolic loop or call '
                'are not supported yet (its target or value carries derivatives; those of '
                "scatter_add are): run the loop or call in evaluated mode, or detach them "
                'with pbc.detach()')
        scatter_obj(target, value, index, active, reduce, disjoint)
        return
    cdef uint32_t old, n
    cdef int k
    if (st or sv) and reduce > 1 and not minmax:
        raise NotImplementedError(f'pbc.scatter_reduce: {REDUCE_NAMES[reduce]} reductions '
                                  'are not differentiable (add, min and max are)')
    cdef uint32_t src[3]
    cdef uint32_t arg[3]
    memset(arg, 0, sizeof(arg))
    if (st or sv) and minmax:          # the values the rule compares, before the write
        arg[0] = target._index
        arg[1] = operand(value, target._vt, target._backend)
        inc_ext(arg[0])
    try:
        scatter_obj(target, value, index, active, reduce, disjoint)
        if not (st or sv):
            return
        # (the lanes it wrote: a conditional's or an evaluated loop's mask applies, and
        # the derivatives, propagated after it, must see it too)
        active = lanes_written(target, active)
        old = target._ad
        src[0] = st; src[1] = sv; src[2] = 0
        target._ad = 0
        try:
            n = ad_record(AD_SCATTER_MINMAX if minmax else AD_SCATTER_ADD if reduce else
                          OP_SCATTER, target, src, arg, minmax)
            index, active = frozen(index), frozen(active)
            ad_set_payload(n, (index, active, reduce) if minmax else (index, active))
        finally:
            if old:
                ad_dec(old)
    finally:
        for k in range(2):
            if arg[k]:
                dec_ext(arg[k])

# Called for a scatter whose target or value carries derivatives inside symbolic code, as
# hook(target, value, index, active, reduce, primal): with `primal`, it is being recorded
# (a True return: the hook takes care of its derivatives, else it is an error); else a
# derivative's second run of the body meets it (pbc/ad/loop.py).
cdef object symbolic_scatter_hook = None

def set_symbolic_scatter_hook(hook):
    global symbolic_scatter_hook
    symbolic_scatter_hook = hook

cdef object lanes_written(ArrayBase target, object active):
    """`active` with the innermost mask applied (a Bool array), or as it is without one."""
    if mask_stack.empty():
        return active
    cdef uint32_t im = operand(active, T_BOOL, target._backend)
    apply_mask(&im)
    return wrap(target._backend, T_BOOL, im)

def scatter_add_local(ArrayBase target, value, index, active, uint32_t size):
    """Adds value into entry `index` (of `size` entries) of the copy of `target` (copies of
    `size` entries each, back to back, one per thread: thread_count() when traced) that
    belongs to the thread running the lane: no atomics, as no other thread writes that
    copy. The sum of the copies is the sum of every lane's additions, in an unspecified
    order. (A kernel holding it runs on at most as many threads as the target has copies.
    Without derivatives: it serves gradients, see pbc/ad/rules.py.)"""
    cdef uint32_t n = vars[target._index].size
    if size == 0 or n % size:
        raise ValueError(f'pbc: scatter_add_local: a target of {n} entries does not hold '
                         f'copies of {size}')
    scatter_obj(target, value, index, active, REDUCE_ADD_LOCAL, False,
                (<uint64_t> (n // size) << 32) | size)

cdef int AD_SCATTER_ADD = ad_rule_code('scatter_add')
cdef int AD_SCATTER_MINMAX = ad_rule_code('scatter_minmax')

# ---- symbolic printing ---------------------------------------------------------------------
cdef extern from "_print_capture.h" nogil:
    ctypedef struct pbc_print_sink:
        uint64_t count
        uint64_t limit
        uint64_t cap
        uint32_t nvalues
        uint64_t* data
    uintptr_t pbc_print_capture_address()

cdef class PrintSink:
    """The rows a symbolic print's kernel captures, and the function that formats them."""
    cdef pbc_print_sink s
    cdef object deliver

    def __dealloc__(self):
        free(self.s.data)

    @property
    def limit(self):
        """Rows kept at most."""
        return self.s.limit

    @property
    def nvalues(self):
        """Values per row."""
        return self.s.nvalues

    def store(self, rows, uint64_t count):
        """Takes the rows a device captured (a (n, nvalues) uint64 array, n <= limit) and
        the number of rows offered, as the kernel's capture on the host would have."""
        cdef uint64_t n = rows.shape[0]
        if n > self.s.limit or (n and rows.shape[1] != self.s.nvalues):
            raise ValueError('pbc: captured rows do not fit the print sink')
        rows = np.ascontiguousarray(rows, dtype=np.uint64)
        cdef uint64_t* data = <uint64_t*> malloc(max(n * self.s.nvalues, 1) * sizeof(uint64_t))
        if data == NULL:
            raise MemoryError()
        if n:
            memcpy(data, <void*> <uintptr_t> rows.ctypes.data,
                   n * self.s.nvalues * sizeof(uint64_t))
        free(self.s.data)
        self.s.data, self.s.cap, self.s.count = data, n, count

def print_sink(uintptr_t address):
    """The PrintSink of a kernel's 'sink' parameter value."""
    return print_sinks[address]

def print_capture_address():
    """Address of the function that kernels call to capture a print's values."""
    return pbc_print_capture_address()

def device_print(list values, active, deliver, uint64_t limit):
    """Queues a symbolic print of `values` (flat arrays) for every active lane. The kernel
    keeps the first `limit` rows of values; after it runs, deliver(rows, count) gets them
    as a (rows, len(values)) uint64 array of their bits and the number of rows offered."""
    if effects_suppressed:
        return
    cdef ArrayBase ref = next(x for x in values + [active] if isinstance(x, ArrayBase))
    cdef uint8_t be = ref._backend
    cdef vector[uint32_t] deps
    cdef uint32_t im = 0, p, size, s
    cdef PrintSink sink = PrintSink()
    sink.s.limit = limit
    sink.s.nvalues = len(values)
    sink.deliver = deliver
    cdef uintptr_t addr = <uintptr_t> &sink.s
    try:
        im = operand(active, T_BOOL, be)
        apply_mask(&im)
        size = vars[im].size
        for x in values:
            deps.push_back((<ArrayBase> x)._index)
            s = vars[deps.back()].size
            if size == 1:
                size = s
            elif s != 1 and s != size:
                raise RuntimeError(f'pbc.print(): arguments have incompatible sizes '
                                   f'({size} vs {s})')
        for k in range(deps.size()):
            flush_if_dirty(deps[k], 0, 0, 0)
        p = var_new(OP_PRINT, T_VOID, size, im, 0, 0, 0, addr, 0, be)
        print_sinks[addr] = sink
        set_extra_deps(p, deps)
        queue_effect(p)                # the queue owns the new reference
    finally:
        dec_ext(im)

def take_print_rows(list addresses):
    """(deliver, rows, count) of each print among the kernel leaves `addresses` whose kernel
    captured something, in that order; their sinks are done."""
    out = []
    cdef PrintSink sink
    cdef uint64_t n
    join_launches()
    for a in addresses:
        sink = print_sinks.pop(a, None)
        if sink is None or sink.s.count == 0:
            continue
        n = min(sink.s.count, sink.s.limit)
        rows = np.empty((n, sink.s.nvalues), dtype=np.uint64)
        if n:
            memcpy(<void*> <uintptr_t> rows.ctypes.data, sink.s.data,
                   n * sink.s.nvalues * sizeof(uint64_t))
        out.append((sink.deliver, rows, sink.s.count))
    return out
