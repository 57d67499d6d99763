# Evaluation support: draining the queues into per-size groups in topological order, turning
# kernel outputs into evaluated variables, the multi-core trampoline, and the parallel
# horizontal primitives (reductions, scans, compress) that run on evaluated memory.

from cython.parallel cimport prange
cimport openmp

ctypedef void (*kernel_fn)(int64_t, int64_t, void*) noexcept nogil

cdef int n_threads = openmp.omp_get_num_procs()

def thread_count():
    return n_threads

def set_thread_count(int n):
    global n_threads
    if n < 1:
        raise ValueError('pbc.set_thread_count: need at least one thread')
    n_threads = n

def schedule(uint32_t i):
    """Queues variable i for the next eval; returns True if there is work to do."""
    cdef Var* v = &vars[i]
    if v.op == OP_DATA or v.op == OP_LITERAL:
        return bool(v.flags & F_DIRTY)
    inc_ext(i)
    todo.push_back(i)
    return True

def has_pending():
    return not todo.empty() or not side_effects.empty()

cdef tuple node_record(uint32_t i):
    cdef Var* v = &vars[i]
    cdef Var* t
    deps = ()
    if v.op == OP_PTR:
        t = &vars[v.dep[0]]
        return (i, v.op, v.vtype, v.size, deps, v.literal, v.extra, <uintptr_t> t.data, t.size)
    if v.op != OP_DATA and v.op != OP_LITERAL and v.op != OP_COUNTER:
        deps = tuple([vars[v.dep[k]].pos for k in range(4) if v.dep[k]])
        if v.flags & F_EXTRA:
            deps += tuple([vars[d].pos for d in extra_deps[i]])
    return (i, v.op, v.vtype, v.size, deps, v.literal, v.extra, <uintptr_t> v.data, v.size)

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

cdef inline uint64_t mix_b(uint64_t h, uint64_t v) noexcept nogil:
    # A second, independent mixer: the two halves of a group key never collide together.
    h = (h ^ (v * <uint64_t> 0xff51afd7ed558ccdULL))
    h = ((h << 27) | (h >> 37)) * <uint64_t> 0xc4ceb9fe1a85ec53ULL + <uint64_t> 0x52dce729ULL
    return h

cdef tuple group_summary(vector[uint32_t]& roots, uint32_t size, list outputs):
    """(key, leaves) of a group. The key is a 128-bit hash of everything kernel assembly
    reads from the records (ops, types, operand positions, literals, print formats, which
    loads are scalar, the outputs), so equal keys assemble to the same Kernel. Leaves are
    (position, address, size) of the memory the kernel reads: what varies per launch."""
    cdef vector[uint32_t] order
    cdef uint32_t r, i, d, p = 0
    cdef uint64_t h1 = 0x243F6A8885A308D3ULL, h2 = 0x13198A2E03707344ULL, w, lit
    cdef Var* v
    cdef Var* t
    cdef int k
    begin_traversal()
    for r in roots:
        postorder(r, order, <size_t> -1)
    leaves = []
    for i in order:
        v = &vars[i]
        w = v.op | (<uint64_t> v.vtype << 8) | (<uint64_t> v.extra << 16)
        if v.op == OP_DATA:
            w |= <uint64_t> (v.size == size and size != 1) << 24
            leaves.append((p, <uintptr_t> v.data, v.size))
        elif v.op == OP_PTR:
            t = &vars[v.dep[0]]
            leaves.append((p, <uintptr_t> t.data, t.size))
        else:
            for k in range(4):
                if v.dep[k]:
                    w = mix(w, vars[v.dep[k]].pos + 1)
            if v.flags & F_EXTRA:
                for d in extra_deps[i]:
                    w = mix(w, vars[d].pos + 1)
        h1 = mix(h1, w)
        h2 = mix_b(h2, w)
        if v.op == OP_PRINT:
            lit = <uint64_t> <int64_t> hash(print_formats[v.literal])
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
    key, leaves, root ids) — see group_summary and group_records."""
    cdef vector[uint32_t] all_roots
    cdef uint32_t i
    for i in todo:
        all_roots.push_back(i)
    for i in side_effects:
        all_roots.push_back(i)
    todo.clear()
    side_effects.clear()
    by_size = {}
    for i in all_roots:
        v = &vars[i]
        if v.op == OP_DATA or v.op == OP_LITERAL:
            continue
        by_size.setdefault((v.backend, v.size), []).append(i)
    groups = []
    cdef vector[uint32_t] roots
    for (backend, size), ids in by_size.items():
        roots = ids
        outputs = list(dict.fromkeys(
            [i for i in ids if vars[i].op != OP_SCATTER and vars[i].op != OP_PRINT]))
        effects = [i for i in ids if vars[i].op == OP_SCATTER or vars[i].op == OP_PRINT]
        key, leaves = group_summary(roots, size, outputs)
        groups.append((backend, size, outputs, effects, key, leaves, ids))
    return [i for i in all_roots], groups

def release_roots(list roots):
    """Gives back the queue references; clears the dirty marks of executed scatter targets."""
    cdef uint32_t i
    for i in roots:
        if vars[i].op == OP_SCATTER:
            vars[vars[vars[i].dep[0]].dep[0]].flags &= ~F_DIRTY
    for i in roots:
        dec_ext(i)

def alloc(int vt, uint32_t n):
    return <uintptr_t> mem_alloc(vt, n)

def free_buffer(uintptr_t p, int vt, uint32_t n):
    mem_free(<void*> p, vt, n)

def become_evaluated(uint32_t i, uintptr_t data):
    """Variable i now lives in `data` (owned): it drops its expression and dependencies."""
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
    v.literal = 0
    v.extra = 0
    for k in range(4):
        if deps[k]:
            vars[deps[k]].ref_int -= 1
            maybe_free(deps[k])

# ---- the trampoline ------------------------------------------------------------------------
cdef void run_blocks(kernel_fn f, int64_t n, void* params, int64_t block, int threads) noexcept nogil:
    cdef int64_t nblocks = (n + block - 1) // block, b, start, end
    if nblocks <= 1 or threads <= 1:
        f(0, n, params)
        return
    for b in prange(nblocks, schedule='dynamic', num_threads=threads):
        start = b * block
        end = start + block
        if end > n:
            end = n
        f(start, end, params)

cdef extern from "stdio.h" nogil:
    int fflush(void*)

def flush_c_stdout():
    """Device prints go through C's stdio; flush it so output appears in order."""
    fflush(NULL)

def launch(uintptr_t fn, int64_t n, list params, bint serial=False):
    """Runs kernel `fn(start, end, params)` over [0, n) on the thread pool, GIL released;
    `serial` keeps lane order (kernels that print)."""
    cdef vector[uint64_t] p
    for x in params:
        p.push_back(<uint64_t> x)
    p.push_back(0)
    # Blocks are multiples of 64 lanes (every vector width) with several per thread.
    cdef int64_t block = max(<int64_t> 8192, ((n // (n_threads * 8)) + 63) & ~<int64_t> 63)
    cdef kernel_fn f = <kernel_fn> fn
    with nogil:
        run_blocks(f, n, p.data(), block, 1 if serial else n_threads)

# ---- horizontal primitives -----------------------------------------------------------------
ctypedef fused num_t:
    uint8_t
    int32_t
    uint32_t
    int64_t
    uint64_t
    float
    double

cdef enum Red:
    R_SUM, R_PROD, R_MIN, R_MAX, R_AND, R_OR

cdef inline num_t combine(int op, num_t a, num_t b) noexcept nogil:
    if op == R_SUM:
        return a + b
    if op == R_PROD:
        return a * b
    if num_t is float or num_t is double:
        # NaN-ignoring like the kernels' minnum/maxnum
        if a != a:
            return b
        if b != b:
            return a
    if op == R_MIN:
        return a if a < b else b
    if op == R_MAX:
        return a if a > b else b
    if num_t is float or num_t is double:
        return a
    else:
        if op == R_AND:
            return a & b
        return a | b

cdef num_t reduce_block(int op, num_t* p, int64_t n) noexcept nogil:
    """Reduces n >= 1 values with 16 independent accumulators (vectorizes without reassociating
    anything the caller could observe differently between runs)."""
    cdef num_t acc[16]
    cdef int64_t i, j, full = n - n % 16
    if n < 16:
        acc[0] = p[0]
        for i in range(1, n):
            acc[0] = combine(op, acc[0], p[i])
        return acc[0]
    for j in range(16):
        acc[j] = p[j]
    for i in range(16, full, 16):
        for j in range(16):
            acc[j] = combine(op, acc[j], p[i + j])
    for i in range(full, n):
        acc[i - full] = combine(op, acc[i - full], p[i])
    j = 8
    while j >= 1:
        for i in range(j):
            acc[i] = combine(op, acc[i], acc[i + j])
        j //= 2
    return acc[0]

cdef enum:
    RED_BLOCK = 16384   # elements per block of the horizontal primitives

cdef num_t reduce_all(int op, num_t* p, int64_t n, int threads) noexcept nogil:
    cdef int64_t nb = (n + RED_BLOCK - 1) // RED_BLOCK, b, s, e, w
    cdef num_t* part = <num_t*> malloc(nb * sizeof(num_t))
    for b in prange(nb, schedule='static', num_threads=threads if nb > 1 else 1):
        s = b * RED_BLOCK
        e = s + RED_BLOCK
        if e > n:
            e = n
        part[b] = reduce_block(op, p + s, e - s)
    # pairwise combination of the block results: deterministic for any thread count
    w = 1
    while w < nb:
        b = 0
        while b + w < nb:
            part[b] = combine(op, part[b], part[b + w])
            b += 2 * w
        w *= 2
    cdef num_t r = part[0]
    free(part)
    return r

cdef uint64_t reduce_dispatch(int op, uint8_t vt, void* p, int64_t n) noexcept:
    cdef float rf
    cdef double rd
    if vt == T_BOOL: return reduce_all[uint8_t](op, <uint8_t*> p, n, n_threads)
    if vt == T_INT32: return canon(vt, <uint64_t> reduce_all[int32_t](op, <int32_t*> p, n, n_threads))
    if vt == T_UINT32: return reduce_all[uint32_t](op, <uint32_t*> p, n, n_threads)
    if vt == T_INT64: return <uint64_t> reduce_all[int64_t](op, <int64_t*> p, n, n_threads)
    if vt == T_UINT64: return reduce_all[uint64_t](op, <uint64_t*> p, n, n_threads)
    if vt == T_FLOAT32:
        rf = reduce_all[float](op, <float*> p, n, n_threads)
        return from_f32(rf)
    rd = reduce_all[double](op, <double*> p, n, n_threads)
    return from_f64(rd)

RED_NAMES = ('sum', 'prod', 'min', 'max', 'and', 'or')

def reduce(ArrayBase a, str name):
    """Horizontal reduction of all lanes into an evaluated width-1 array of the same type."""
    cdef int op = RED_NAMES.index(name)
    cdef uint8_t vt = a._vt
    if (op == R_AND or op == R_OR) and is_float(vt):
        raise TypeError(f'pbc: {name} reduction is not defined for float arrays')
    if vt == T_BOOL and op < R_MIN:
        raise TypeError(f'pbc: {name} of a Bool array: use pbc.count()')
    eval_var(a._index)
    cdef uint32_t i = a._index
    cdef Var* v = &vars[i]
    cdef uint64_t bits
    if v.size == 0:
        bits = scalar_bits({R_SUM: 0, R_PROD: 1, R_AND: True, R_OR: False}.get(op, 0), vt) \
            if op in (R_SUM, R_PROD, R_AND, R_OR) else 0
        if op in (R_MIN, R_MAX):
            raise ValueError(f'pbc.{name}: empty array')
    else:
        if v.op == OP_LITERAL:
            i = materialize(i)
        else:
            inc_ext(i)
        bits = reduce_dispatch(op, vt, vars[i].data, vars[i].size)
        dec_ext(i)
    cdef void* out = mem_alloc(vt, 1)
    fill(out, vt, 1, bits)
    return wrap(a._backend, vt, var_data(vt, 1, out, a._backend))

cdef void scan_impl(num_t* src, num_t* dst, int64_t n, bint inclusive, bint reverse,
                    int threads) noexcept nogil:
    """Blocked three-pass parallel scan; reverse scans from the end."""
    cdef int64_t nb = (n + RED_BLOCK - 1) // RED_BLOCK, b, s, e, i, j
    cdef num_t* part = <num_t*> malloc((nb + 1) * sizeof(num_t))
    cdef num_t acc, x
    for b in prange(nb, schedule='static', num_threads=threads if nb > 1 else 1):
        s = b * RED_BLOCK
        e = s + RED_BLOCK
        if e > n:
            e = n
        part[b] = reduce_block(R_SUM, (src + n - e) if reverse else (src + s), e - s)
    acc = 0
    for b in range(nb):
        x = part[b]
        part[b] = acc
        acc = acc + x
    for b in prange(nb, schedule='static', num_threads=threads if nb > 1 else 1):
        s = b * RED_BLOCK
        e = s + RED_BLOCK
        if e > n:
            e = n
        acc = part[b]
        for i in range(s, e):
            j = (n - 1 - i) if reverse else i
            x = src[j]
            if inclusive:
                acc = acc + x
                dst[j] = acc
            else:
                dst[j] = acc
                acc = acc + x
    free(part)

def prefix_sum(ArrayBase a, bint inclusive, bint reverse):
    cdef uint8_t vt = a._vt
    if vt == T_BOOL:
        raise TypeError('pbc.prefix_sum: not defined for Bool arrays')
    eval_var(a._index)
    cdef uint32_t i = a._index
    if vars[i].op == OP_LITERAL:
        i = materialize(i)
    else:
        inc_ext(i)
    cdef int64_t n = vars[i].size
    cdef void* src = vars[i].data
    cdef void* dst = mem_alloc(vt, n)
    with nogil:
        if vt == T_INT32: scan_impl[int32_t](<int32_t*> src, <int32_t*> dst, n, inclusive, reverse, n_threads)
        elif vt == T_UINT32: scan_impl[uint32_t](<uint32_t*> src, <uint32_t*> dst, n, inclusive, reverse, n_threads)
        elif vt == T_INT64: scan_impl[int64_t](<int64_t*> src, <int64_t*> dst, n, inclusive, reverse, n_threads)
        elif vt == T_UINT64: scan_impl[uint64_t](<uint64_t*> src, <uint64_t*> dst, n, inclusive, reverse, n_threads)
        elif vt == T_FLOAT32: scan_impl[float](<float*> src, <float*> dst, n, inclusive, reverse, n_threads)
        else: scan_impl[double](<double*> src, <double*> dst, n, inclusive, reverse, n_threads)
    dec_ext(i)
    return wrap(a._backend, vt, var_data(vt, n, dst, a._backend))

def compress(ArrayBase mask):
    """UInt32 indices of the true lanes of a Bool array, in increasing order."""
    if mask._vt != T_BOOL:
        raise TypeError('pbc.compress: expects a Bool array')
    eval_var(mask._index)
    cdef uint32_t i = mask._index
    if vars[i].op == OP_LITERAL:
        i = materialize(i)
    else:
        inc_ext(i)
    cdef int64_t n = vars[i].size, nb = (n + RED_BLOCK - 1) // RED_BLOCK, b, s, e, k, total = 0
    cdef uint8_t* m = <uint8_t*> vars[i].data
    cdef int64_t* count = <int64_t*> malloc((nb + 1) * sizeof(int64_t))
    cdef uint32_t* out
    cdef int64_t c
    with nogil:
        for b in prange(nb, schedule='static', num_threads=n_threads if nb > 1 else 1):
            s = b * RED_BLOCK
            e = min(s + RED_BLOCK, n)
            c = 0
            for k in range(s, e):
                c = c + m[k]
            count[b] = c
        for b in range(nb):
            c = count[b]
            count[b] = total
            total += c
    out = <uint32_t*> mem_alloc(T_UINT32, total)
    with nogil:
        for b in prange(nb, schedule='static', num_threads=n_threads if nb > 1 else 1):
            s = b * RED_BLOCK
            e = min(s + RED_BLOCK, n)
            c = count[b]
            for k in range(s, e):
                if m[k]:
                    out[c] = <uint32_t> k
                    c = c + 1
    free(count)
    dec_ext(i)
    return wrap(mask._backend, T_UINT32, var_data(T_UINT32, total, out, mask._backend))
