# Evaluation support: draining the queues into per-size groups in topological order with a
# content key each, turning kernel outputs into evaluated variables, and the multi-core
# trampoline (a pool that the horizontal primitives share).

import os

ctypedef void (*kernel_fn)(int64_t, int64_t, void*) noexcept nogil

cdef extern from "_pool.h" nogil:
    int pbc_pool_run(kernel_fn fn, void* params, int64_t n, int64_t block, int threads,
                     unsigned csr_bits, int asynchronous)
    uintptr_t pbc_thread_index_address()

cdef int n_threads = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') \
    else (os.cpu_count() or 1)

cdef void run_parallel(kernel_fn fn, void* params, int64_t n, int64_t block,
                       bint asynchronous=False, int most=0) except *:
    """Runs fn over [0, n) on the pool (GIL released), after the launch in flight (see
    join_launches), on at most `most` threads if it is not 0. `asynchronous`: returns once
    posted (launch_in_flight), and params must live until the launch is joined: the caller
    fills them after join_launches() and posts with the GIL held all along, so that no
    launch of another Python thread comes in between."""
    global launch_in_flight
    cdef int rc
    cdef int threads = n_threads if most == 0 or most > n_threads else most
    if n <= 0:
        return
    join_launches()
    cdef unsigned csr = flush_bits()
    if asynchronous:
        rc = pbc_pool_run(fn, params, n, block, threads, csr, 1)
        launch_in_flight = True
    else:
        with nogil:
            rc = pbc_pool_run(fn, params, n, block, threads, csr, 0)
        if launch_in_flight and pbc_pool_idle():
            # (another Python thread launched while this one was without the GIL: the
            # pool ran that launch to its end before this job)
            release_deferred()
    if rc != 0:
        import warnings
        warnings.warn('pbc: could not start all worker threads', RuntimeWarning)

def sync():
    """Waits until the kernel launched last has finished (see pbc.sync_thread)."""
    join_launches()

def launch_running():
    """Whether a kernel launched asynchronously is still running (for tests)."""
    return launch_in_flight and not pbc_pool_idle()

def thread_count():
    return n_threads

def thread_index_address():
    """Address of the function that kernels call for the index of the thread running them
    (see _pool.h)."""
    return pbc_thread_index_address()

def set_thread_count(int n):
    global n_threads
    if n < 1:
        raise ValueError('pbc.set_thread_count: need at least one thread')
    join_launches()
    n_threads = n

def schedule(uint32_t i):
    """Queues variable i for the next eval; returns True if there is work to do."""
    cdef Var* v = &vars[i]
    if v.op == OP_DATA or v.op == OP_LITERAL:
        return bool(v.flags & F_DIRTY)
    check_evaluable(i)
    inc_ext(i)
    todo.push_back(i)
    return True

def has_pending():
    return not todo.empty() or not side_effects.empty()

cdef tuple node_record(uint32_t i):
    """(id, op, type, size, operand positions, literal, extra, scope): what assembly needs
    of a node (memory addresses vary per launch and come from group_summary's leaves
    instead). scope: position of the loop_start of the loop body it is in, or -1."""
    cdef Var* v = &vars[i]
    cdef uint32_t* d = v.dep
    deps = ()
    if v.op != OP_DATA and v.op != OP_LITERAL and v.op != OP_COUNTER and v.op != OP_PTR \
            and d[0] != 0:
        if d[1] == 0:
            deps = (vars[d[0]].pos,)
        elif d[2] == 0:
            deps = (vars[d[0]].pos, vars[d[1]].pos)
        elif d[3] == 0:
            deps = (vars[d[0]].pos, vars[d[1]].pos, vars[d[2]].pos)
        else:
            deps = (vars[d[0]].pos, vars[d[1]].pos, vars[d[2]].pos, vars[d[3]].pos)
        if v.flags & F_EXTRA:
            deps += tuple([vars[e].pos for e in extra_deps[i]])
    cdef uint32_t s = node_scope(i)
    return (i, v.op, v.vtype, v.size, deps, v.literal, v.extra,
            <int64_t> vars[s].pos if s else -1)

cdef list topo_order(vector[uint32_t]& roots):
    """Node records of everything the roots need, dependencies first."""
    cdef vector[uint32_t] order
    cdef uint32_t r
    begin_traversal()
    for r in roots:
        postorder(r, order, <size_t> -1)
    return [node_record(i) for i in order]

def group_records(list ids):
    """The node records (see node_record) of the group whose roots are `ids`, in the same
    order as the key and leaves that take_groups computed for it."""
    cdef vector[uint32_t] roots = ids
    return topo_order(roots)

def block_signature(list records, list block, dict index, bint loose, frozenset keep,
                    int literal_op, int loop_start_op, bint with_literals):
    """(signature, literals) of a call target's code, the record positions `block` (see
    kernel._merge_targets, whose inner loop this is): two targets with equal signatures
    run the same code, but for the values of their `literals` (None unless
    `with_literals`), [(position, operand, type code, bits)] of the literal operands that
    instructions of ops not in `keep` read from outside (where `loose`). The signature
    packs, per record, its op, type, whether it is scalar, its literal (not the first
    record's, the key, nor a loop's serial number), its extra and its operands: inside the
    block by place, dead (not in `index`), a free literal by type, or another outside value
    by position."""
    cdef unordered_map[int64_t, int64_t] local
    cdef vector[uint64_t] sig
    cdef Py_ssize_t j, i, n = len(block)
    cdef int64_t d
    cdef tuple q, deps, dr
    cdef int op
    cdef bint free
    literals = [] if with_literals else None
    for j in range(n):
        local[block[j]] = j
    for j in range(n):
        p = block[j]
        q = <tuple> records[p]
        op = q[1]
        free = loose and op not in keep
        deps = <tuple> q[4]
        sig.push_back(op)
        sig.push_back(<uint64_t> q[2])
        sig.push_back(q[3] == 1)
        sig.push_back(<uint64_t> q[5] if j and op != loop_start_op else 0)
        sig.push_back(<uint64_t> q[6])
        sig.push_back(len(deps))
        for i in range(len(deps)):
            d = deps[i]
            it = local.find(d)
            if it != local.end():
                sig.push_back(0)
                sig.push_back(<uint64_t> deref(it).second)
            elif d not in index:
                sig.push_back(1)
                sig.push_back(0)
            else:
                dr = <tuple> records[d]
                if free and dr[1] == literal_op:
                    sig.push_back(2)
                    sig.push_back(<uint64_t> dr[2])
                    if with_literals:
                        literals.append((p, i, dr[2], dr[5]))
                else:
                    sig.push_back(3)
                    sig.push_back(<uint64_t> d)
    return (<char*> sig.data())[:sig.size() * sizeof(uint64_t)], literals

cdef inline uint64_t mix_b(uint64_t h, uint64_t v) noexcept nogil:
    # A second, independent mixer: the two halves of a group key never collide together.
    h = (h ^ (v * <uint64_t> 0xff51afd7ed558ccdULL))
    h = ((h << 27) | (h >> 37)) * <uint64_t> 0xc4ceb9fe1a85ec53ULL + <uint64_t> 0x52dce729ULL
    return h

def group_summaries(list groups):
    """For each group of take_groups(), its group_summary() as of now, or None where it
    reads an output of a group before it: that one is summarized once those have run (they
    turn its operands into memory). The others' summaries hold until their turn comes, so
    their kernels can be compiled ahead, together."""
    cdef unordered_set[uint32_t] produced
    cdef vector[uint32_t] roots
    result = []
    for _, size, outputs, _, ids in groups:
        roots = ids
        result.append(summarize(roots, size, outputs, &produced))
        for r in outputs:
            produced.insert(r)
    return result

def group_summary(list ids, uint32_t size, list outputs):
    """Key and leaves of the group with roots `ids`, in the graph's current state (running
    an earlier group can turn nodes this group shares into memory)."""
    cdef vector[uint32_t] roots = ids
    return summarize(roots, size, outputs, NULL)

cdef object summarize(vector[uint32_t]& roots, uint32_t size, list outputs,
                      const unordered_set[uint32_t]* produced):
    """(key, leaves) of a group, or None if it reads a node in `produced`. The key is a
    128-bit hash of everything kernel assembly reads from the records (ops, types, operand
    positions, literals, which loads are scalar, the outputs), so equal keys assemble to
    the same Kernel. Leaves are (position, address, size) of the memory the kernel reads
    and of the print sinks it writes: what varies per launch."""
    cdef vector[uint32_t] order
    cdef uint32_t r, i, d, p = 0
    cdef uint64_t h1 = 0x243F6A8885A308D3ULL, h2 = 0x13198A2E03707344ULL, w, lit
    cdef Var* v
    cdef Var* t
    cdef int k
    begin_traversal()
    for r in roots:
        postorder(r, order, <size_t> -1)
    if produced != NULL and not produced.empty():
        for i in order:
            if produced.count(i):
                return None
    leaves = []
    for i in order:
        v = &vars[i]
        w = v.op | (<uint64_t> v.vtype << 8) | (<uint64_t> v.extra << 16)
        if v.op == OP_DATA:
            w |= <uint64_t> (v.size == size and size != 1) << 24
            place_for_kernel(i)
            v = &vars[i]
            leaves.append((p, <uintptr_t> v.data, v.size))
        elif v.op == OP_PTR:
            place_for_kernel(v.dep[0])
            v = &vars[i]
            t = &vars[v.dep[0]]
            leaves.append((p, <uintptr_t> t.data, t.size))
        else:
            for k in range(4):
                if v.dep[k]:
                    w = mix(w, vars[v.dep[k]].pos + 1)
            if v.flags & F_EXTRA:
                for d in extra_deps[i]:
                    w = mix(w, vars[d].pos + 1)
            if not scope_of.empty():
                d = node_scope(i)
                if d:
                    w = mix(w, vars[d].pos + 0x10000)
        h1 = mix(h1, w)
        h2 = mix_b(h2, w)
        if v.op == OP_PRINT:
            lit = 0                   # its sink's address: a parameter, like memory
            leaves.append((p, <uintptr_t> v.literal, 0))
        elif v.op == OP_LOOP_START:
            lit = 0                   # a serial number: equal loops must share kernels
        else:
            lit = v.literal
        h1 = mix(h1, lit)
        h2 = mix_b(h2, lit)
        p += 1
    for o in outputs:
        h1 = mix(h1, vars[<uint32_t> o].pos)
        h2 = mix_b(h2, vars[<uint32_t> o].pos)
    h1 = mix(h1, order.size())
    h2 = mix_b(h2, order.size())
    return (h1, h2), leaves

def take_groups():
    """Drains the queues. Returns (roots, groups): roots hold one reference each (give them
    back with release_roots); each group is (backend, size, output ids, side-effect ids,
    root ids), for group_summary and group_records."""
    cdef vector[uint32_t] all_roots
    cdef uint32_t i
    for i in todo:
        all_roots.push_back(i)
    for i in side_effects:
        all_roots.push_back(i)
    todo.clear()
    side_effects.clear()
    if not effect_loop_outputs.empty():
        add_effect_loop_outputs(all_roots)
    by_size = {}
    for i in all_roots:
        v = &vars[i]
        if v.op == OP_DATA or v.op == OP_LITERAL:
            continue
        by_size.setdefault((v.backend, v.size), []).append(i)
    groups = []
    for (backend, size), ids in by_size.items():
        # Side effects (scatters, prints, loops that write memory) have no value.
        outputs = list(dict.fromkeys([i for i in ids if vars[i].vtype != T_VOID]))
        effects = [i for i in ids if vars[i].vtype == T_VOID]
        groups.append((backend, size, outputs, effects, ids))
    return [i for i in all_roots], groups

def requeue(list roots):
    """Puts the roots that take_groups() returned back into the queues, with their
    references: nothing was evaluated."""
    for i in roots:
        if vars[<uint32_t> i].vtype == T_VOID:
            side_effects.push_back(i)
        else:
            todo.push_back(i)

def release_roots(list roots):
    """Gives back the queue references; clears the dirty marks of executed scatter targets."""
    cdef uint32_t i, t, k
    cdef vector[uint32_t] stack
    for i in roots:
        stack.push_back(i)
    while not stack.empty():          # scatters, also those inside loops
        i = stack.back()
        stack.pop_back()
        if vars[i].op == OP_SCATTER:
            t = vars[i].dep[0]
            if vars[t].op == OP_LANE_PTR:           # into the arrays of a lane pointer
                for k in range(extra_deps[t].size()):
                    vars[vars[extra_deps[t][k]].dep[0]].flags &= ~F_DIRTY
                    pending_reduce.pop(vars[extra_deps[t][k]].dep[0], None)
            else:
                vars[vars[t].dep[0]].flags &= ~F_DIRTY
                pending_reduce.pop(vars[t].dep[0], None)
        elif vars[i].op == OP_LOOP_END:
            for k in range(2 * <uint32_t> vars[i].literal, extra_deps[i].size()):
                stack.push_back(extra_deps[i][k])
        elif vars[i].op == OP_CALL_END:
            for k in range(<uint32_t> vars[i].literal, extra_deps[i].size()):
                stack.push_back(extra_deps[i][k])
        elif vars[i].op == OP_CALL:
            for k in range(extra_deps[i].size()):
                stack.push_back(extra_deps[i][k])
    for i in roots:
        dec_ext(i)

def alloc(int vt, uint32_t n, uint8_t backend):
    """An output buffer of a kernel of `backend` (on its device, for a device backend)."""
    return <uintptr_t> buffer_alloc(backend, vt, n)

def free_buffer(uintptr_t p, int vt, uint32_t n, uint8_t backend):
    buffer_free(backend, <void*> p, vt, n)

def become_evaluated(uint32_t i, uintptr_t data):
    """Variable i now lives in `data` (owned; from alloc()): it drops its expression and
    dependencies."""
    cdef Var* v = &vars[i]
    cdef uint32_t deps[4]
    cdef int k
    vn_remove(i)
    for k in range(4):
        deps[k] = v.dep[k]
        v.dep[k] = 0
    v.op = OP_DATA
    v.data = <void*> data
    v.flags |= F_OWNS
    if DEVICE_MEMORY[v.backend]:
        v.flags |= F_DEVICE
    v.literal = 0
    v.extra = 0
    for k in range(4):
        if deps[k]:
            vars[deps[k]].ref_int -= 1
            maybe_free(deps[k])

# ---- the trampoline ------------------------------------------------------------------------
cdef vector[uint64_t] param_words(list params) except *:
    """A kernel's parameter block: its parameters as 64-bit words, then a 0."""
    cdef vector[uint64_t] p
    for x in params:
        p.push_back(<uint64_t> x)
    p.push_back(0)
    return p

# Layout sources other than a node's memory (see kernel.Layout).
PARAM_OUTPUT, PARAM_CONSTANT = -1, -2

def param_values(list sources, list leaves, list buffers):
    """A kernel's launch arguments: per Layout source (node position, 0 = address | 1 =
    size) the leaf's value, (PARAM_OUTPUT, k) output buffer k, or (PARAM_CONSTANT, value)
    the value itself."""
    cdef unordered_map[int64_t, Py_ssize_t] at
    cdef Py_ssize_t k, n = len(leaves)
    cdef int64_t pos
    cdef tuple leaf, src
    for k in range(n):
        at[<int64_t> (<tuple> leaves[k])[0]] = k
    out = [None] * len(sources)
    for k in range(len(sources)):
        src = <tuple> sources[k]
        pos = src[0]
        if pos >= 0:
            it = at.find(pos)
            if it == at.end():
                raise KeyError(f'pbc: no leaf for the kernel parameter of node {pos}')
            leaf = <tuple> leaves[deref(it).second]
            out[k] = leaf[2] if src[1] else leaf[1]
        elif pos == PARAM_OUTPUT:
            out[k] = buffers[src[1]]
        else:
            out[k] = src[1]
    return out

cdef inline int64_t launch_block(int64_t n, int64_t least) noexcept nogil:
    # Blocks are multiples of 64 lanes (every vector width) with several per thread.
    return max(least, ((n // (n_threads * 8)) + 63) & ~<int64_t> 63)

ctypedef struct ManyJob:
    kernel_fn* fns
    void** params
    int64_t* n
    int32_t* kernel         # per block of the job: the kernel it belongs to ...
    int64_t* start          # ... and its first lane

cdef enum:
    # Blocks of kernels launched together (see launch_many): shorter than launch_block's,
    # and like them a multiple of every vector width.
    MANY_BLOCK = 1024

cdef void many_cb(int64_t start, int64_t end, void* params) noexcept nogil:
    """Pool callback over the blocks of several kernels (see launch_many)."""
    cdef ManyJob* job = <ManyJob*> params
    cdef int64_t b, s
    cdef int k
    for b in range(start, end):
        k = job.kernel[b]
        s = job.start[b]
        job.fns[k](s, min(s + MANY_BLOCK, job.n[k]), job.params[k])

cdef class LaunchJob:
    """The parameter blocks and block table of a launch, which must live as long as it
    runs: a local one for a launch that waits, `in_flight` for the one that does not (the
    next launch joins it before filling it again)."""
    cdef vector[vector[uint64_t]] words
    cdef vector[kernel_fn] fns
    cdef vector[void*] params
    cdef vector[int64_t] ns, starts
    cdef vector[int32_t] kernel
    cdef ManyJob job

    cdef void fill(self, list kernels) except *:
        """The job of launch_many for [(fn, n, params)]."""
        cdef int count = len(kernels), k
        cdef int64_t s, most = 0
        self.words.resize(count)
        self.fns.clear()
        self.ns.clear()
        self.params.clear()
        self.kernel.clear()
        self.starts.clear()
        for k in range(count):
            fn, n, params = kernels[k]
            self.words[k] = param_words(params)
            self.fns.push_back(<kernel_fn> <uintptr_t> fn)
            self.ns.push_back(n)
            most = max(most, <int64_t> n)
        for s in range(0, most, MANY_BLOCK):
            for k in range(count):
                if s < self.ns[k]:
                    self.kernel.push_back(k)
                    self.starts.push_back(s)
        for k in range(count):
            self.params.push_back(self.words[k].data())
        self.job.fns, self.job.params, self.job.n = (self.fns.data(), self.params.data(),
                                                     self.ns.data())
        self.job.kernel, self.job.start = self.kernel.data(), self.starts.data()

cdef LaunchJob in_flight = LaunchJob()

def launch_many(list kernels, bint wait=True, int threads=0):
    """Runs the kernels [(fn, n, params)] as one job of the thread pool (GIL released):
    threads take blocks of any kernel. The kernels must not read what the others write.
    With `wait` False, returns once the job is posted (see launch).

    Such kernels are mostly the targets of one evaluated call, each on the lanes that call
    it, which lie all over the caller's arrays in increasing order. Taking the first blocks
    of every kernel, then their second blocks, and so on, keeps the threads within one
    stretch of those arrays at a time (their gathers and scatters then hit a core's cache
    rather than the last level), and short blocks keep that stretch small: 64 targets
    of 15.6k lanes out of 10^6, 3.6-3.9 -> 3.4 ms (AMD Zen 5, 2 threads). `threads`, if
    not 0: the most threads any of them may run on (see launch)."""
    cdef LaunchJob job = LaunchJob() if wait else in_flight
    if not wait:
        join_launches()
    job.fill(kernels)
    run_parallel(many_cb, &job.job, job.kernel.size(), 1, not wait, threads)

def launch(uintptr_t fn, int64_t n, list params, bint serial=False, bint wait=True,
           int threads=0):
    """Runs kernel `fn(start, end, params)` over [0, n) on the thread pool, GIL released;
    `serial` keeps lane order (kernels that print). With `wait` False, returns once the job
    is posted: the kernel runs while the caller goes on tracing, and whatever reads or
    writes memory from the host, or frees it, waits for it first (join_launches).
    `threads`, if not 0, is the most threads it may run on: a kernel that scatters into
    a copy per thread (scatter_add_local) has as many copies as there were threads when it
    was traced."""
    # (launched asynchronously, a kernel is joined by the caller once it has traced the
    # next: short blocks let it take a fair share of what is left)
    cdef int64_t block = launch_block(n, 8192 if wait else MANY_BLOCK)
    cdef vector[uint64_t] words
    if serial:
        block = n if n > 0 else 1
    if wait or serial:
        words = param_words(params)
        run_parallel(<kernel_fn> fn, words.data(), n, block, False, threads)
        return
    join_launches()
    in_flight.words.resize(1)
    in_flight.words[0] = param_words(params)
    run_parallel(<kernel_fn> fn, in_flight.words[0].data(), n, block, True, threads)
