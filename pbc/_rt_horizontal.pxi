# Horizontal primitives on evaluated memory: reductions, prefix sums and compress. Each is
# a few passes over fixed-size blocks run on the kernel pool, so results do not depend on
# the number of threads.

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

cdef enum:
    RED_BLOCK = 16384   # elements per block

RED_NAMES = ('sum', 'prod', 'min', 'max', 'and', 'or')

ctypedef struct HJob:          # what a block callback needs
    int op
    uint8_t vt
    bint inclusive, reverse
    int64_t n
    void* src
    void* dst
    void* part                 # one value per block
    int64_t* count             # compress: true lanes per block, then their offsets

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
    """Reduces n >= 1 values. Each call below passes `op` as a constant, so the compiler
    inlines reduce_block_op with the operation known and vectorizes its loop (with `op` a
    variable, it tested the operation per element: 5x slower for a Bool any)."""
    if op == R_SUM:
        return reduce_block_op(R_SUM, p, n)
    if op == R_PROD:
        return reduce_block_op(R_PROD, p, n)
    if op == R_MIN:
        return reduce_block_op(R_MIN, p, n)
    if op == R_MAX:
        return reduce_block_op(R_MAX, p, n)
    if op == R_AND:
        return reduce_block_op(R_AND, p, n)
    return reduce_block_op(R_OR, p, n)

cdef inline num_t reduce_block_op(int op, num_t* p, int64_t n) noexcept nogil:
    """Reduces n >= 1 values with 16 independent accumulators (the compiler vectorizes them
    without reassociating anything)."""
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

cdef void reduce_typed(HJob* job, int64_t start, int64_t end, num_t* src) noexcept nogil:
    cdef int64_t b = start // RED_BLOCK
    (<num_t*> job.part)[b] = reduce_block(job.op, (src + job.n - end) if job.reverse
                                          else (src + start), end - start)

cdef void reduce_cb(int64_t start, int64_t end, void* params) noexcept nogil:
    """Pool callback: one block's reduction into job.part."""
    cdef HJob* job = <HJob*> params
    if job.vt == T_BOOL: reduce_typed(job, start, end, <uint8_t*> job.src)
    elif job.vt == T_INT32: reduce_typed(job, start, end, <int32_t*> job.src)
    elif job.vt == T_UINT32: reduce_typed(job, start, end, <uint32_t*> job.src)
    elif job.vt == T_INT64: reduce_typed(job, start, end, <int64_t*> job.src)
    elif job.vt == T_UINT64: reduce_typed(job, start, end, <uint64_t*> job.src)
    elif job.vt == T_FLOAT32: reduce_typed(job, start, end, <float*> job.src)
    else: reduce_typed(job, start, end, <double*> job.src)

cdef num_t combine_blocks(int op, num_t* part, int64_t nb) noexcept nogil:
    """Pairwise combination of the block results."""
    cdef int64_t w = 1, b
    while w < nb:
        b = 0
        while b + w < nb:
            part[b] = combine(op, part[b], part[b + w])
            b += 2 * w
        w *= 2
    return part[0]

cdef uint64_t reduce_memory(int op, uint8_t vt, void* p, int64_t n) except *:
    cdef int64_t nb = (n + RED_BLOCK - 1) // RED_BLOCK
    cdef HJob job
    job.op = op; job.vt = vt; job.n = n; job.src = p; job.reverse = False
    job.part = malloc(nb * 8)
    if job.part == NULL:
        raise MemoryError()
    run_parallel(reduce_cb, &job, n, RED_BLOCK)
    cdef uint64_t r = 0
    cdef unsigned csr = pbc_csr_set(flush_bits())     # (blocks combine on this thread)
    if vt == T_BOOL: r = combine_blocks(op, <uint8_t*> job.part, nb)
    elif vt == T_INT32: r = canon(vt, <uint64_t> combine_blocks(op, <int32_t*> job.part, nb))
    elif vt == T_UINT32: r = combine_blocks(op, <uint32_t*> job.part, nb)
    elif vt == T_INT64: r = <uint64_t> combine_blocks(op, <int64_t*> job.part, nb)
    elif vt == T_UINT64: r = combine_blocks(op, <uint64_t*> job.part, nb)
    elif vt == T_FLOAT32: r = from_f32(combine_blocks(op, <float*> job.part, nb))
    else: r = from_f64(combine_blocks(op, <double*> job.part, nb))
    pbc_csr_restore(csr, &r)
    free(job.part)
    return r

# Horizontal operations of device arrays with lanes run as kernels: the module
# pbc/device_horizontal.py, with reduce(a, name), prefix_sum(a, inclusive, reverse) and
# compress(mask) (set when pbc.cuda is imported)
cdef object device_horizontal = None

def set_device_horizontal(module):
    global device_horizontal
    device_horizontal = module

cdef uint32_t evaluated_copy_of(ArrayBase a) except 0:
    """A new reference to a's variable as host memory (literals are materialized)."""
    eval_var(a._index)
    if vars[a._index].op == OP_LITERAL:
        return materialize(a._index)
    to_host(a._index)
    inc_ext(a._index)
    return a._index

def reduce(ArrayBase a, str name):
    """Horizontal reduction of all lanes into an evaluated width-1 array of the same type."""
    cdef int op = RED_NAMES.index(name)
    cdef uint8_t vt = a._vt
    if (op == R_AND or op == R_OR) and is_float(vt):
        raise TypeError(f'pbc: {name} reduction is not defined for float arrays')
    if vt == T_BOOL and op < R_MIN:
        raise TypeError(f'pbc: {name} of a Bool array: use pbc.count()')
    cdef uint64_t bits
    cdef uint32_t i
    if len(a) == 0:
        if op == R_MIN or op == R_MAX:
            raise ValueError(f'pbc.{name}: empty array')
        bits = scalar_bits({R_SUM: 0, R_PROD: 1, R_AND: -1, R_OR: 0}[op], vt)
    elif DEVICE_MEMORY[a._backend]:
        return device_horizontal.reduce(a, name)
    else:
        i = evaluated_copy_of(a)
        try:
            bits = reduce_memory(op, vt, vars[i].data, vars[i].size)
        finally:
            dec_ext(i)
    cdef void* out = mem_alloc(vt, 1)
    fill(out, vt, 1, bits)
    return wrap(a._backend, vt, var_data(vt, 1, out, a._backend))

cdef void scan_typed(HJob* job, int64_t start, int64_t end, num_t* src) noexcept nogil:
    cdef num_t* dst = <num_t*> job.dst
    cdef num_t acc = (<num_t*> job.part)[start // RED_BLOCK], x
    cdef int64_t i, j, n = job.n
    for i in range(start, end):
        j = (n - 1 - i) if job.reverse else i
        x = src[j]
        if job.inclusive:
            acc = acc + x
            dst[j] = acc
        else:
            dst[j] = acc
            acc = acc + x

cdef void scan_cb(int64_t start, int64_t end, void* params) noexcept nogil:
    """Pool callback: one block's scan, starting from the block's offset in job.part."""
    cdef HJob* job = <HJob*> params
    if job.vt == T_INT32: scan_typed(job, start, end, <int32_t*> job.src)
    elif job.vt == T_UINT32: scan_typed(job, start, end, <uint32_t*> job.src)
    elif job.vt == T_INT64: scan_typed(job, start, end, <int64_t*> job.src)
    elif job.vt == T_UINT64: scan_typed(job, start, end, <uint64_t*> job.src)
    elif job.vt == T_FLOAT32: scan_typed(job, start, end, <float*> job.src)
    else: scan_typed(job, start, end, <double*> job.src)

cdef void block_offsets(num_t* part, int64_t nb) noexcept nogil:
    """Block sums -> exclusive prefix sums of the block sums."""
    cdef num_t acc = 0, x
    cdef int64_t b
    for b in range(nb):
        x = part[b]
        part[b] = acc
        acc = acc + x

def prefix_sum(ArrayBase a, bint inclusive, bint reverse):
    """Exclusive (or inclusive) prefix sum, optionally from the end, as a new array."""
    cdef uint8_t vt = a._vt
    if vt == T_BOOL:
        raise TypeError('pbc.prefix_sum: not defined for Bool arrays')
    if DEVICE_MEMORY[a._backend] and len(a):
        return device_horizontal.prefix_sum(a, inclusive, reverse)
    cdef uint32_t i = evaluated_copy_of(a)
    cdef int64_t n = vars[i].size, nb = (n + RED_BLOCK - 1) // RED_BLOCK
    cdef HJob job
    cdef unsigned csr
    job.op = R_SUM; job.vt = vt; job.n = n; job.src = vars[i].data
    job.inclusive = inclusive; job.reverse = reverse
    job.part = malloc((nb + 1) * 8)
    try:
        job.dst = mem_alloc(vt, n)
        run_parallel(reduce_cb, &job, n, RED_BLOCK)
        csr = pbc_csr_set(flush_bits())     # (blocks combine on this thread)
        if vt == T_INT32: block_offsets(<int32_t*> job.part, nb)
        elif vt == T_UINT32: block_offsets(<uint32_t*> job.part, nb)
        elif vt == T_INT64: block_offsets(<int64_t*> job.part, nb)
        elif vt == T_UINT64: block_offsets(<uint64_t*> job.part, nb)
        elif vt == T_FLOAT32: block_offsets(<float*> job.part, nb)
        else: block_offsets(<double*> job.part, nb)
        pbc_csr_restore(csr, <uint64_t*> job.part)
        run_parallel(scan_cb, &job, n, RED_BLOCK)
    finally:
        free(job.part)
        dec_ext(i)
    return wrap(a._backend, vt, var_data(vt, n, job.dst, a._backend))

cdef void count_cb(int64_t start, int64_t end, void* params) noexcept nogil:
    cdef HJob* job = <HJob*> params
    cdef uint8_t* m = <uint8_t*> job.src
    cdef int64_t k, c = 0
    for k in range(start, end):
        c += m[k]
    job.count[start // RED_BLOCK] = c

cdef void compress_cb(int64_t start, int64_t end, void* params) noexcept nogil:
    cdef HJob* job = <HJob*> params
    cdef uint8_t* m = <uint8_t*> job.src
    cdef uint32_t* out = <uint32_t*> job.dst
    cdef int64_t k, c = job.count[start // RED_BLOCK]
    for k in range(start, end):
        if m[k]:
            out[c] = <uint32_t> k
            c += 1

def count_true(ArrayBase a):
    """The number of set lanes of Bool array a, as an evaluated width-1 UInt32 array (one
    pass over its bytes, instead of a conversion to UInt32 and a sum)."""
    if a._vt != T_BOOL:
        raise TypeError('pbc.count(): needs a Bool array')
    if DEVICE_MEMORY[a._backend] and len(a):
        return device_horizontal.reduce(a, 'count')
    cdef uint32_t i = evaluated_copy_of(a) if len(a) else 0
    cdef int64_t n = vars[i].size if i else 0, nb = (n + RED_BLOCK - 1) // RED_BLOCK, b
    cdef uint64_t total = 0
    cdef HJob job
    job.n = n
    job.count = NULL
    try:
        if n:
            job.src = vars[i].data
            job.count = <int64_t*> malloc(nb * sizeof(int64_t))
            if job.count == NULL:
                raise MemoryError()
            run_parallel(count_cb, &job, n, RED_BLOCK)
            for b in range(nb):
                total += job.count[b]
    finally:
        free(job.count)
        if i:
            dec_ext(i)
    cdef void* out = mem_alloc(T_UINT32, 1)
    fill(out, T_UINT32, 1, total)
    return wrap(a._backend, T_UINT32, var_data(T_UINT32, 1, out, a._backend))

def compress(ArrayBase mask):
    """UInt32 indices of the true lanes of a Bool array, in increasing order."""
    if mask._vt != T_BOOL:
        raise TypeError('pbc.compress: expects a Bool array')
    if DEVICE_MEMORY[mask._backend] and len(mask):
        return device_horizontal.compress(mask)
    cdef uint32_t i = evaluated_copy_of(mask)
    cdef int64_t n = vars[i].size, nb = (n + RED_BLOCK - 1) // RED_BLOCK, b, c, total = 0
    cdef HJob job
    job.n = n; job.src = vars[i].data
    job.count = <int64_t*> malloc((nb + 1) * sizeof(int64_t))
    try:
        run_parallel(count_cb, &job, n, RED_BLOCK)
        for b in range(nb):
            c = job.count[b]
            job.count[b] = total
            total += c
        job.dst = mem_alloc(T_UINT32, total)
        run_parallel(compress_cb, &job, n, RED_BLOCK)
    finally:
        free(job.count)
        dec_ext(i)
    return wrap(mask._backend, T_UINT32, var_data(T_UINT32, total, job.dst, mask._backend))

# ---- partition: the lanes of each key, in one counting pass and one writing pass ---------
cdef extern from "_partition.h" nogil:
    enum:
        PART_WAYS "PBC_PART_WAYS"
        PART_LOCAL "PBC_PART_LOCAL"
    int PBC_PART_SIMD_KEYS     # 0 where the build has no AVX-512
    void pbc_part_count_dense(const uint32_t* sel, const int64_t* lo, uint32_t base,
                              uint32_t tsize, const int32_t* table, int m, int64_t* count)
    void pbc_part_write_dense(const uint32_t* sel, const int64_t* lo, uint32_t base,
                              uint32_t tsize, const int32_t* table, int m, uint32_t** out,
                              const int64_t* pos)
    void pbc_part_count_simd(const uint32_t* sel, int64_t lo, int64_t hi, uint32_t base,
                             int m, int64_t* count)
    void pbc_part_write_simd(const uint32_t* sel, int64_t lo, int64_t hi, uint32_t base,
                             int m, uint32_t** out, int64_t* pos)

cdef bint partition_simd = True    # (tests turn it off to check the scalar passes)

def set_partition_simd(bint on):
    """Whether partition may use its vector passes (where the build has them); returns
    the previous setting."""
    global partition_simd
    old = partition_simd
    partition_simd = on
    return old

ctypedef struct PJob:
    uint32_t* sel              # a key per lane
    uint32_t* keys             # sorted
    int nkeys
    int32_t* table             # slot of key - keys[0], or -1 (NULL: keys too spread out)
    uint32_t tsize
    bint simd                  # few keys, consecutive: the vector passes (_partition.h)
    int64_t* count             # [part * nkeys + slot]: lanes, then write offsets
    uint32_t** out             # one index buffer per key

cdef inline int key_slot(PJob* job, uint32_t key) noexcept nogil:
    cdef int lo = 0, hi = job.nkeys - 1, mid
    cdef uint32_t d
    if job.table != NULL:
        d = key - job.keys[0]             # wraps around for keys below the first
        return job.table[d] if d < job.tsize else -1
    while lo <= hi:
        mid = (lo + hi) >> 1
        if job.keys[mid] == key:
            return mid
        if job.keys[mid] < key:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1

cdef inline void part_bounds(int64_t start, int64_t end, int64_t* lo) noexcept nogil:
    """lo[j]: where part j of [start, end) begins (lo[PART_WAYS] = end); the last part is
    the shortest (see _partition.h)."""
    cdef int64_t q = (end - start + PART_WAYS - 1) // PART_WAYS
    cdef int j
    for j in range(PART_WAYS + 1):
        lo[j] = min(start + j * q, end)

cdef inline const int32_t* dense_table(PJob* job) noexcept nogil:
    """The slot table of the dense passes: NULL where the keys are consecutive."""
    return <const int32_t*> NULL if job.tsize == <uint32_t> job.nkeys else job.table

cdef void part_count_cb(int64_t start, int64_t end, void* params) noexcept nogil:
    """Pool callback: lanes per key in each part of one block."""
    cdef PJob* job = <PJob*> params
    cdef int m = job.nkeys, s, j
    cdef int64_t* c = job.count + (start // RED_BLOCK) * PART_WAYS * m
    cdef int64_t k
    cdef int64_t lo[PART_WAYS + 1]
    part_bounds(start, end, lo)
    if job.simd:
        for j in range(PART_WAYS):
            pbc_part_count_simd(job.sel, lo[j], lo[j + 1], job.keys[0], m, c + j * m)
    elif job.table != NULL and m <= PART_LOCAL:
        pbc_part_count_dense(job.sel, lo, job.keys[0], job.tsize, dense_table(job), m, c)
    else:                                    # keys spread out: a binary search per lane
        for s in range(PART_WAYS * m):
            c[s] = 0
        for j in range(PART_WAYS):
            for k in range(lo[j], lo[j + 1]):
                s = key_slot(job, job.sel[k])
                if s >= 0:
                    c[j * m + s] += 1

cdef void part_write_cb(int64_t start, int64_t end, void* params) noexcept nogil:
    """Pool callback: each lane's index into its key's buffer, at its part's offsets."""
    cdef PJob* job = <PJob*> params
    cdef int m = job.nkeys, s, j
    cdef int64_t* c = job.count + (start // RED_BLOCK) * PART_WAYS * m
    cdef int64_t k
    cdef int64_t lo[PART_WAYS + 1]
    part_bounds(start, end, lo)
    if job.simd:
        for j in range(PART_WAYS):
            pbc_part_write_simd(job.sel, lo[j], lo[j + 1], job.keys[0], m, job.out,
                                c + j * m)
    elif job.table != NULL and m <= PART_LOCAL:
        pbc_part_write_dense(job.sel, lo, job.keys[0], job.tsize, dense_table(job), m,
                             job.out, c)
    else:
        for j in range(PART_WAYS):
            for k in range(lo[j], lo[j + 1]):
                s = key_slot(job, job.sel[k])
                if s >= 0:
                    job.out[s][c[j * m + s]] = <uint32_t> k
                    c[j * m + s] += 1

cdef uint32_t keys_source(ArrayBase selector, uint32_t* offset) except 0:
    """A new reference to memory whose lanes plus `offset` are the selector's lanes. A
    selector x + c (a literal c) of evaluated x is read as x, against keys - c: it spares a
    kernel that would only add c (pbc.switch selects with index + 1)."""
    cdef uint32_t i = selector._index, a, b
    cdef Var* v = &vars[i]
    if v.op == OP_ADD:
        a, b = v.dep[0], v.dep[1]
        if vars[a].op == OP_LITERAL:
            a, b = b, a
        if vars[b].op == OP_LITERAL and vars[a].op == OP_DATA and vars[a].size == v.size \
                and not vars[a].flags & F_DIRTY:
            offset[0] = <uint32_t> vars[b].literal
            to_host(a)
            inc_ext(a)
            return a
    offset[0] = 0
    return evaluated_copy_of(selector)

def partition(ArrayBase selector, list keys):
    """For each key (distinct integers), the UInt32 indices of the lanes of `selector`
    (a UInt32 array) equal to it, in increasing order: the lane groups of evaluated
    dispatch, found in two passes instead of one compress per key. A key that every lane
    selects gets the lazy counter 0, 1, ..., n-1 and the second pass is skipped."""
    if selector._vt != T_UINT32:
        raise TypeError('pbc.partition: expects a UInt32 array')
    cdef uint32_t offset
    cdef uint32_t i = keys_source(selector, &offset)
    shifted = [(k - offset) & 0xFFFFFFFF for k in keys]
    order = sorted(range(len(keys)), key=lambda j: shifted[j])
    cdef int64_t n = vars[i].size, b, c, total
    cdef int64_t nparts = (n + RED_BLOCK - 1) // RED_BLOCK * PART_WAYS
    cdef int m = len(keys), s, everyone = -1
    cdef PJob job
    job.sel = <uint32_t*> vars[i].data
    job.nkeys = m
    job.keys = <uint32_t*> malloc((m + 1) * sizeof(uint32_t))
    job.count = <int64_t*> malloc((nparts * m + 1) * sizeof(int64_t))
    job.out = <uint32_t**> malloc((m + 1) * sizeof(uint32_t*))
    sizes = [0] * m
    job.table = NULL
    job.tsize = 0
    job.simd = False
    try:
        for s in range(m):
            job.keys[s] = shifted[order[s]]
            job.out[s] = NULL
        if m and job.keys[m - 1] - job.keys[0] < (1 << 20):
            job.tsize = job.keys[m - 1] - job.keys[0] + 1
            job.table = <int32_t*> malloc(job.tsize * sizeof(int32_t))
            memset(job.table, 0xFF, job.tsize * sizeof(int32_t))
            for s in range(m):
                job.table[job.keys[s] - job.keys[0]] = s
        job.simd = partition_simd and job.table != NULL and job.tsize == <uint32_t> m \
            and m <= PBC_PART_SIMD_KEYS
        if n and m:
            run_parallel(part_count_cb, &job, n, RED_BLOCK)
        for s in range(m):
            total = 0
            for b in range(nparts):
                c = job.count[b * m + s]
                job.count[b * m + s] = total
                total += c
            sizes[s] = total
            if total == n and n > 0:
                everyone = s
        for s in range(m):
            if s != everyone:
                job.out[s] = <uint32_t*> mem_alloc(T_UINT32, sizes[s])
        if n and m and everyone < 0:
            run_parallel(part_write_cb, &job, n, RED_BLOCK)
        result = [None] * m
        for s in range(m):
            if s == everyone:
                result[order[s]] = wrap(selector._backend, T_UINT32,
                                        counter_var(n, selector._backend))
            else:
                result[order[s]] = wrap(selector._backend, T_UINT32, var_data(
                    T_UINT32, sizes[s], job.out[s], selector._backend))
            job.out[s] = NULL
    finally:
        for s in range(m):
            if job.out[s] != NULL:
                mem_free(job.out[s], T_UINT32, sizes[s])
        free(job.keys)
        free(job.count)
        free(job.out)
        free(job.table)
        dec_ext(i)
    return result
