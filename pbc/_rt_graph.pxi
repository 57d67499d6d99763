# Node arena, reference counting with immediate release, local value numbering and the
# queues that eval() drains. Nothing here recurses: graph walks use explicit stacks.

from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memset, memcpy
from libcpp.vector cimport vector
from libcpp.unordered_map cimport unordered_map
from libcpp.unordered_set cimport unordered_set
from cython.operator cimport dereference as deref

cdef extern from "stdlib.h" nogil:
    int posix_memalign(void** memptr, size_t alignment, size_t size)

# ---- types -------------------------------------------------------------------------------
# Order matters: promotion picks the larger enum value (Dr.Jit's rule).
cdef enum VarType:
    T_VOID, T_BOOL, T_INT32, T_UINT32, T_INT64, T_UINT64, T_FLOAT32, T_FLOAT64, T_PTR, T_COUNT

TYPE_NAMES = ('void', 'bool', 'int32', 'uint32', 'int64', 'uint64', 'float32', 'float64', 'ptr')
cdef uint32_t TYPE_SIZE[9]
TYPE_SIZE[:] = [0, 1, 4, 4, 8, 8, 4, 8, 8]

cdef inline bint is_float(uint8_t t) noexcept nogil:
    return t == T_FLOAT32 or t == T_FLOAT64

cdef inline bint is_signed(uint8_t t) noexcept nogil:
    return t == T_INT32 or t == T_INT64

cdef inline bint is_int(uint8_t t) noexcept nogil:
    return t >= T_INT32 and t <= T_UINT64

# ---- ops ---------------------------------------------------------------------------------
# The op enum (OP_*), OP_NAMES, OP_ALLOW and OP_FLAGS (OPF_*) come from pbc/optable.py.
include "_rt_optable.pxi"
assert len(OP_NAMES) == OP_COUNT

# Reduction kinds of scatter_reduce (stored in Var.extra of a scatter), numbered as Dr.Jit's
# ReduceOp (pbc.ReduceOp uses these values).
# ('add_local': an addition into the copy of the target that belongs to the thread running
# the kernel, without atomics: scatter_add_local)
REDUCE_NAMES = ('none', 'add', 'mul', 'min', 'max', 'and', 'or', 'add_local')

# ---- flags -------------------------------------------------------------------------------
cdef enum Flag:
    F_DIRTY = 1        # the variable is the target of queued scatters
    F_VN = 2           # the variable is registered in the value-numbering map
    F_OWNS = 4         # data points to memory this runtime allocated
    F_VN_PENDING = 8   # numbered, but kept by its anchor operand instead of the map
    F_VN_SHARED = 32   # the numbered nodes anchored on this one are in the map
    F_FREE = 16        # the slot is on the free list
    F_EXTRA = 64       # has operands beyond dep[4], kept in extra_deps
    F_DEVICE = 128     # data is device memory of the variable's backend (_rt_device.pxi)

ctypedef struct Var:
    uint32_t dep[4]
    uint64_t literal
    void* data
    uint64_t hash
    uint32_t size
    uint32_t ref_ext      # references from Python objects and runtime queues
    uint32_t ref_int      # references from other variables' dependencies
    uint32_t ref_se       # references from pending scatters (do not force copy-on-write)
    uint32_t mark         # traversal epoch that last visited this node
    uint32_t pos          # its position in that traversal's order
    uint32_t vn_user      # the F_VN_PENDING node anchored here, if still valid
    uint32_t serial       # creation order (wraps): the newest operand anchors a node
    uint16_t op
    uint8_t vtype
    uint8_t flags
    uint8_t extra         # cast source type, scatter reduction; PTR: 1 = written by scatters
                          # (holds its target by ref_se, which does not force copies)
    uint8_t backend

cdef Var* vars = NULL
cdef uint32_t vars_cap = 0
cdef vector[uint32_t] free_ids
# Operands beyond the four inline ones (device prints; later: call arguments), by node id.
cdef unordered_map[uint32_t, vector[uint32_t]] extra_deps
# Symbolic loops being recorded (their loop_start ids, innermost last), and the loop each
# node recorded in a loop body belongs to (its loop_start id; absent: the top level).
cdef vector[uint32_t] scope_stack
cdef unordered_map[uint32_t, uint32_t] scope_of
cdef dict closure_sources = {}     # see _rt_call.pxi
cdef vector[uint32_t] todo          # scheduled for the next eval (each holds one ref_ext)
cdef vector[uint32_t] side_effects  # queued scatters (each holds one ref_ext)
cdef uint64_t mem_bytes = 0
cdef uint64_t mem_peak = 0
cdef uint32_t live_count = 0

# JitFlag bits; the Python enum in pbc/flags.py mirrors these values.
cdef uint32_t jit_flags = 0
cdef enum JitFlagBit:
    FLAG_CONSTANT_PROPAGATION = 1
    FLAG_VALUE_NUMBERING = 2
    FLAG_SYMBOLIC_LOOPS = 4
    FLAG_SYMBOLIC_CONDITIONALS = 8
    FLAG_SYMBOLIC_CALLS = 16
    FLAG_OPTIMIZE_CALLS = 32
    FLAG_MERGE_FUNCTIONS = 64
    FLAG_OPTIMIZE_LOOPS = 128
    FLAG_KERNEL_HISTORY = 256
    FLAG_DEBUG = 512
    FLAG_PRINT_IR = 1024
    FLAG_LAUNCH_BLOCKING = 2048
    FLAG_FLUSH_DENORMALS = 4096     # see docs/semantics.md, "Subnormal numbers"

FLAG_BITS = dict(ConstantPropagation=FLAG_CONSTANT_PROPAGATION,
                 ValueNumbering=FLAG_VALUE_NUMBERING, SymbolicLoops=FLAG_SYMBOLIC_LOOPS,
                 SymbolicConditionals=FLAG_SYMBOLIC_CONDITIONALS,
                 SymbolicCalls=FLAG_SYMBOLIC_CALLS, OptimizeCalls=FLAG_OPTIMIZE_CALLS,
                 MergeFunctions=FLAG_MERGE_FUNCTIONS, OptimizeLoops=FLAG_OPTIMIZE_LOOPS,
                 KernelHistory=FLAG_KERNEL_HISTORY, Debug=FLAG_DEBUG, PrintIR=FLAG_PRINT_IR,
                 LaunchBlocking=FLAG_LAUNCH_BLOCKING, FlushDenormals=FLAG_FLUSH_DENORMALS)
jit_flags = (FLAG_CONSTANT_PROPAGATION | FLAG_VALUE_NUMBERING | FLAG_SYMBOLIC_LOOPS |
             FLAG_SYMBOLIC_CONDITIONALS | FLAG_SYMBOLIC_CALLS | FLAG_OPTIMIZE_CALLS |
             FLAG_MERGE_FUNCTIONS | FLAG_OPTIMIZE_LOOPS)

cdef extern from "_pool.h" nogil:
    unsigned pbc_csr_set(unsigned bits)
    void pbc_csr_restore(unsigned csr, uint64_t* result)
    unsigned PBC_FLUSH_CSR
    void pbc_pool_join()
    int pbc_pool_idle()

cdef inline unsigned flush_bits() noexcept nogil:
    """The MXCSR bits that float arithmetic runs under now: FTZ and DAZ with
    FlushDenormals (kernels, reductions and constant folding alike), else none."""
    return PBC_FLUSH_CSR if jit_flags & FLAG_FLUSH_DENORMALS else 0

def get_flags():
    return jit_flags

def set_flags(uint32_t value):
    global jit_flags
    jit_flags = value

# The trace tables start small (in the heap's small pages) and double as a trace needs: a
# table of 2 MiB and more is whole huge pages (see block_alloc). Tables that start large
# fault megabytes in at import, which most programs never use; on a virtual machine whose
# host takes freed memory back, that import also uses up the free huge pages the host still
# backs, and the first kernels' outputs then fault in at 4-5 ms per 2 MiB instead of 0.2.
cdef enum:
    VARS_START = 4096          # 320 KiB
    VN_START = 1 << 13         # 128 KiB: 4096 values before the first doubling

cdef void grow_arena() except *:
    global vars, vars_cap
    cdef uint32_t new_cap = VARS_START if vars_cap == 0 else vars_cap * 2
    cdef Var* p = <Var*> table_alloc(new_cap * sizeof(Var))
    if vars != NULL:
        memcpy(p, vars, vars_cap * sizeof(Var))
        block_free(vars, block_bytes(vars_cap * sizeof(Var)))
    memset(p + vars_cap, 0, (new_cap - vars_cap) * sizeof(Var))
    cdef uint32_t i
    # Slot 0 means "no variable" and is never handed out.
    for i in range(new_cap - 1, vars_cap - 1 if vars_cap > 0 else 0, -1):
        p[i].flags = F_FREE
        free_ids.push_back(i)
    vars = p
    vars_cap = new_cap

# The arena exists from the start: slot 0, the variable of empty arrays, reads as an empty
# literal (size 0) wherever an array's variable is looked at.
grow_arena()

# ---- memory ------------------------------------------------------------------------------
cdef extern from "sys/mman.h" nogil:
    int madvise(void* addr, size_t length, int advice)
    void* mmap(void* addr, size_t length, int prot, int flags, int fd, long offset)
    int munmap(void* addr, size_t length)
    int MADV_HUGEPAGE, PROT_READ, PROT_WRITE, MAP_PRIVATE, MAP_ANONYMOUS
    void* MAP_FAILED

cdef enum:
    LANES_MAX = 32     # kernels load and store whole vectors of up to this many lanes
MAX_LANES = LANES_MAX  # (for the renderers)

cdef inline size_t padded_bytes(uint8_t vt, size_t n) noexcept nogil:
    # Kernels load and store whole vectors of up to LANES_MAX lanes, so buffers are padded.
    return ((n + LANES_MAX - 1) & ~<size_t>(LANES_MAX - 1)) * TYPE_SIZE[vt] + 64

# Allocations from HUGE bytes up are whole transparent huge pages in a mapping of their own
# (mmap, aligned, advised): the first touch of fresh memory costs a page fault per page,
# one per 2 MiB rather than 512. Whole pages, as a buffer that ends a little past a 2 MiB
# boundary (10^6 floats, padded, are 3.8 MiB) would fault its tail page by page; a mapping
# of their own, as the heap (posix_memalign) hands back memory already mapped in small
# pages. A kernel writing 10^6 fresh floats: 1.0-1.4 -> 0.5 ms (AMD Zen 5, 2 threads).
cdef enum:
    HUGE = 2 << 20

cdef inline size_t block_bytes(size_t nb) noexcept nogil:
    """What an allocation of nb bytes takes: whole huge pages from HUGE up."""
    return (nb + HUGE - 1) & ~<size_t>(HUGE - 1) if nb >= HUGE else nb

cdef void* block_alloc(size_t nb) noexcept nogil:
    """nb bytes (a block_bytes() size), 64-byte aligned and, from HUGE up, huge-page aligned
    and advised; NULL if there is no memory. Returned by block_free."""
    cdef void* p = NULL
    cdef char* q
    cdef size_t lead
    if nb < HUGE:
        return p if posix_memalign(&p, 64, nb) == 0 else NULL
    q = <char*> mmap(NULL, nb + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0)
    if <void*> q == MAP_FAILED:
        return NULL
    lead = (HUGE - (<size_t> q & (HUGE - 1))) & (HUGE - 1)
    if lead:
        munmap(q, lead)
    munmap(q + lead + nb, HUGE - lead)
    madvise(q + lead, nb, MADV_HUGEPAGE)
    return q + lead

cdef void block_free(void* p, size_t nb) noexcept nogil:
    if nb < HUGE:
        free(p)
    else:
        munmap(p, nb)

cdef void* table_alloc(size_t nb) except NULL:
    """Memory for the runtime's own tables (block_free(p, block_bytes(nb)) returns it).
    Tracing touches them at random (value numbering) or all over (the arena): once they
    are large, huge pages spare a TLB miss on most accesses."""
    cdef void* p = block_alloc(block_bytes(nb))
    if p == NULL:
        raise MemoryError(f'pbc: cannot allocate {nb} bytes for the trace tables')
    return p

# Freed buffers are kept for reuse (by size), as fresh memory from the OS costs a page fault
# on first touch: more than streaming the data through a kernel. Buffers above
# CACHE_MAX_BUFFER, and anything beyond CACHE_MAX_TOTAL, go straight back to the OS.
cdef enum:
    CACHE_MAX_BUFFER = 256 << 20
cdef size_t CACHE_MAX_TOTAL = <size_t> 1 << 30
cdef unordered_map[size_t, vector[void*]] free_buffers
cdef size_t cached_bytes = 0

cdef inline size_t buffer_bytes(uint8_t vt, size_t n) noexcept nogil:
    return block_bytes(padded_bytes(vt, n))

cdef void* mem_alloc(uint8_t vt, size_t n) except NULL:
    global mem_bytes, mem_peak, cached_bytes
    cdef void* p = NULL
    cdef size_t nb = buffer_bytes(vt, n)
    it = free_buffers.find(nb)
    if it != free_buffers.end() and not deref(it).second.empty():
        p = deref(it).second.back()
        deref(it).second.pop_back()
        cached_bytes -= nb
    else:
        p = block_alloc(nb)
        if p == NULL:
            flush_malloc_cache()
            p = block_alloc(nb)
            if p == NULL:
                raise MemoryError(f'pbc: cannot allocate {nb} bytes')
    mem_bytes += nb
    if mem_bytes > mem_peak:
        mem_peak = mem_bytes
    return p

cdef void release_buffer(void* p, uint8_t vt, size_t n) noexcept:
    global mem_bytes, cached_bytes
    cdef size_t nb = buffer_bytes(vt, n)
    mem_bytes -= nb
    if nb <= CACHE_MAX_BUFFER and cached_bytes + nb <= CACHE_MAX_TOTAL:
        free_buffers[nb].push_back(p)
        cached_bytes += nb
    else:
        block_free(p, nb)

# A kernel launch may still run when its launch returns (see launch in _rt_launch.pxi): the
# memory it reads or writes must then be neither reused nor returned, so buffers freed
# meanwhile wait in `deferred_frees` until it is joined. Everything that reads or writes
# memory from the host joins first (join_launches).
ctypedef struct DeferredFree:
    void* p
    uint8_t vt
    size_t n

cdef bint launch_in_flight = False
cdef vector[DeferredFree] deferred_frees

cdef void release_deferred() noexcept:
    """Releases the buffers freed while a launch ran (which has finished)."""
    global launch_in_flight
    launch_in_flight = False
    cdef vector[DeferredFree] pending
    pending.swap(deferred_frees)
    for d in pending:
        release_buffer(d.p, d.vt, d.n)

cdef void join_launches() noexcept:
    """Waits for the launch in flight, if any (working on it meanwhile), then releases the
    buffers freed while it ran. On return no launch runs: another Python thread may
    launch while this one waits without the GIL, and then it waits for that one too."""
    while launch_in_flight:
        with nogil:
            pbc_pool_join()
        if pbc_pool_idle():
            release_deferred()

cdef void mem_free(void* p, uint8_t vt, size_t n) noexcept:
    cdef DeferredFree d
    if launch_in_flight:
        if not pbc_pool_idle():
            d.p, d.vt, d.n = p, vt, n
            deferred_frees.push_back(d)
            return
        # Done: what waited can go too. (Not through join_launches: frees come in the
        # middle of graph updates, where another Python thread must not run, and joining
        # releases the GIL. The pool finishes the finished job at its next use.)
        release_deferred()
    release_buffer(p, vt, n)

def flush_malloc_cache():
    """Returns the buffers kept for reuse to the operating system."""
    global cached_bytes
    for entry in free_buffers:
        for p in entry.second:
            block_free(p, entry.first)
    free_buffers.clear()
    cached_bytes = 0

# ---- value numbering ---------------------------------------------------------------------
cdef inline uint64_t mix(uint64_t h, uint64_t v) noexcept nogil:
    h ^= v + <uint64_t>0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)
    h ^= h >> 31
    h *= <uint64_t>0xbf58476d1ce4e5b9
    return h

cdef inline uint64_t var_hash(uint16_t op, uint8_t vt, uint32_t size, uint32_t* dep,
                              uint64_t lit, uint8_t extra, uint8_t backend) noexcept nogil:
    cdef uint64_t h = mix(<uint64_t>op | (<uint64_t>vt << 16) | (<uint64_t>extra << 24)
                          | (<uint64_t>backend << 32), size)
    h = mix(h, dep[0] | (<uint64_t>dep[1] << 32))
    h = mix(h, dep[2] | (<uint64_t>dep[3] << 32))
    h = mix(h, lit)
    return h ^ (h >> 32)     # the table indexes with the low bits: fold the high ones in

cdef inline bint vn_eligible(uint16_t op, uint8_t extra) noexcept nogil:
    # Side effects, loop structure and nodes with operands beyond the four hashed ones are
    # never shared; pointers are (several scatters into one array then pass its address once).
    return not (OP_FLAGS[op] & OPF_UNIQUE)

# The value-numbering table: open addressing with linear probing, one entry per hash
# (a colliding node replaces the entry), tombstones for removals. Cheaper than a node-based
# map on both paths that matter: lookups while tracing and removals while freeing traces.
ctypedef struct VNEntry:
    uint64_t hash
    uint32_t id          # 0: empty slot; VN_TOMB: removed

cdef enum:
    VN_TOMB = 0xFFFFFFFF

cdef VNEntry* vn_table = NULL
cdef size_t vn_mask = 0, vn_used = 0, vn_live = 0

cdef void vn_resize(size_t cap) except *:
    global vn_table, vn_mask, vn_used
    cdef VNEntry* old = vn_table
    cdef size_t old_cap = vn_mask + 1 if old != NULL else 0, k, j
    vn_table = <VNEntry*> table_alloc(cap * sizeof(VNEntry))
    memset(vn_table, 0, cap * sizeof(VNEntry))
    vn_mask = cap - 1
    vn_used = vn_live
    for k in range(old_cap):
        if old[k].id != 0 and old[k].id != VN_TOMB:
            j = old[k].hash & vn_mask
            while vn_table[j].id != 0:
                j = (j + 1) & vn_mask
            vn_table[j] = old[k]
    if old != NULL:
        block_free(old, block_bytes(old_cap * sizeof(VNEntry)))

cdef inline VNEntry* vn_find(uint64_t h) noexcept:
    """The live entry for hash h, or NULL."""
    cdef size_t j = h & vn_mask
    while vn_table[j].id != 0:
        if vn_table[j].hash == h and vn_table[j].id != VN_TOMB:
            return &vn_table[j]
        j = (j + 1) & vn_mask
    return NULL

cdef void vn_insert(uint64_t h, uint32_t i, VNEntry* e) except *:
    """Registers node i under hash h; e is what vn_find(h) returned just before."""
    global vn_used, vn_live
    if e != NULL:
        e.id = i               # a colliding node takes over the entry
        return
    if (vn_used + 1) * 2 > vn_mask + 1:
        vn_resize((vn_mask + 1) * (2 if vn_live * 4 > vn_mask + 1 else 1))
    cdef size_t j = h & vn_mask
    while vn_table[j].id != 0 and vn_table[j].id != VN_TOMB:
        j = (j + 1) & vn_mask
    if vn_table[j].id == 0:
        vn_used += 1
    vn_table[j].hash = h
    vn_table[j].id = i
    vn_live += 1

vn_resize(VN_START)

cdef inline void vn_remove(uint32_t i) noexcept:
    global vn_live
    cdef Var* v = &vars[i]
    cdef VNEntry* e
    v.flags &= ~F_VN_PENDING          # (its operand's vn_user goes stale)
    if v.flags & F_VN:
        e = vn_find(v.hash)
        if e != NULL and e.id == i:
            e.id = VN_TOMB
            vn_live -= 1
        v.flags &= ~F_VN

# ---- reference counting ------------------------------------------------------------------
cdef inline void inc_ext(uint32_t i) noexcept:
    if i:
        vars[i].ref_ext += 1

cdef inline void dec_ext(uint32_t i) noexcept:
    if i:
        vars[i].ref_ext -= 1
        maybe_free(i)

cdef dict print_sinks = {}     # sink address (a print node's literal) -> its PrintSink

cdef inline void maybe_free(uint32_t i) noexcept:
    cdef Var* v = &vars[i]
    if v.ref_ext == 0 and v.ref_int == 0 and v.ref_se == 0:
        release(i)

cdef void release(uint32_t root) noexcept:
    """Frees `root` and every dependency that becomes unreferenced, without recursion."""
    global live_count
    cdef vector[uint32_t] stack
    cdef uint32_t i, d, k
    cdef Var* v
    stack.push_back(root)
    while not stack.empty():
        i = stack.back()
        stack.pop_back()
        v = &vars[i]
        vn_remove(i)
        if (v.flags & F_OWNS) and v.data != NULL:
            if v.flags & F_DEVICE:
                device_free(v.backend, v.data, v.vtype, v.size)
            else:
                mem_free(v.data, v.vtype, v.size)
        for k in range(4):
            d = v.dep[k]
            if d == 0:
                continue
            if v.op == OP_PTR and (v.extra & 1):
                vars[d].ref_se -= 1
            else:
                vars[d].ref_int -= 1
            if vars[d].ref_ext == 0 and vars[d].ref_int == 0 and vars[d].ref_se == 0:
                stack.push_back(d)
        if v.flags & F_EXTRA:
            for d in extra_deps[i]:
                vars[d].ref_int -= 1
                if vars[d].ref_ext == 0 and vars[d].ref_int == 0 and vars[d].ref_se == 0:
                    stack.push_back(d)
            extra_deps.erase(i)
        if not scope_of.empty():
            scope_of.erase(i)
        if (v.op == OP_LOOP_END or v.op == OP_CALL) and not effect_loop_outputs.empty():
            effect_loop_outputs.erase(i)
        if v.op == OP_PRINT:            # a print that never ran: its sink goes too
            print_sinks.pop(v.literal, None)
        memset(v, 0, sizeof(Var))
        v.flags = F_FREE
        free_ids.push_back(i)
        live_count -= 1

cdef uint32_t serial_counter = 0

cdef inline uint32_t vn_anchor(uint32_t* dep) noexcept:
    """The operand that keeps a node's numbering until it is shared: the newest one (equal
    nodes have equal operands, so the same anchor; the newest is the likeliest to have no
    other user yet)."""
    cdef uint32_t a = dep[0], k
    for k in range(1, 4):
        if dep[k] != 0 and vars[dep[k]].serial - vars[a].serial < 0x80000000u \
                and vars[dep[k]].serial != vars[a].serial:
            a = dep[k]
    return a

cdef inline bint vn_pending_user(uint32_t d) noexcept:
    """Whether d's vn_user may be a numbered node kept by d: kept by some operand, and d is
    one of its operands (a node freed, evaluated or reused since fails this, or at worst
    moves to the map early, which is always correct)."""
    cdef uint32_t p = vars[d].vn_user
    if p == 0 or not (vars[p].flags & F_VN_PENDING):
        return False
    cdef uint32_t* q = vars[p].dep
    return q[0] == d or q[1] == d or q[2] == d or q[3] == d

cdef void vn_share(uint32_t d) except *:
    """From now on the nodes numbered with anchor d go in the map: moves the one kept by d
    there."""
    cdef uint32_t p
    cdef Var* v
    cdef uint64_t h
    if vn_pending_user(d):
        p = vars[d].vn_user
        v = &vars[p]
        h = var_hash(v.op, v.vtype, v.size, v.dep, v.literal, v.extra, v.backend)
        v.flags &= ~F_VN_PENDING
        v.hash = h
        v.flags |= F_VN
        vn_insert(h, p, vn_find(h))
    vars[d].vn_user = 0
    vars[d].flags |= F_VN_SHARED

cdef uint32_t var_new(uint16_t op, uint8_t vt, uint32_t size, uint32_t d0, uint32_t d1,
                      uint32_t d2, uint32_t d3, uint64_t lit, uint8_t extra,
                      uint8_t backend) except 0:
    """Creates a node (or finds an equal one) and returns it with one new external reference.

    An equal node has the same operands. Most nodes are the first user of a node just made
    (x = x * a + b), so the first numbered node anchored on an operand (its newest, see
    vn_anchor) stays with that operand (vn_user, F_VN_PENDING) and goes in the map only
    when a second one comes: the map's random accesses, one cache miss each, are then paid
    for operands that are shared."""
    global live_count, serial_counter
    cdef uint32_t dep[4]
    dep[0] = d0; dep[1] = d1; dep[2] = d2; dep[3] = d3
    cdef uint64_t h = 0
    cdef uint32_t i, k
    cdef Var* v
    cdef VNEntry* e = NULL
    cdef bint vn = (jit_flags & FLAG_VALUE_NUMBERING) and vn_eligible(op, extra)
    cdef bint keep = False             # numbered, but kept by its anchor
    cdef uint32_t anchor = vn_anchor(dep) if vn and d0 != 0 else 0
    if anchor != 0 and not (vars[anchor].flags & F_VN_SHARED):
        if vn_pending_user(anchor):
            vn_share(anchor)
        else:
            keep = True
    if vn and not keep:
        h = var_hash(op, vt, size, dep, lit, extra, backend)
        e = vn_find(h)          # a miss leaves e NULL, a collision an entry to take over
        if e != NULL:
            i = e.id
            v = &vars[i]
            if (v.op == op and v.vtype == vt and v.size == size and v.literal == lit
                    and v.extra == extra and v.backend == backend and v.dep[0] == d0
                    and v.dep[1] == d1 and v.dep[2] == d2 and v.dep[3] == d3):
                v.ref_ext += 1
                return i
    cdef uint32_t scope = 0
    if not scope_of.empty() or not scope_stack.empty():
        scope = scope_for(op, dep)
    if free_ids.empty():
        grow_arena()
    i = free_ids.back()
    free_ids.pop_back()
    v = &vars[i]
    v.op = op
    v.vtype = vt
    v.size = size
    v.literal = lit
    v.extra = extra
    v.backend = backend
    v.data = NULL
    v.ref_ext = 1
    v.ref_int = 0
    v.ref_se = 0
    v.flags = 0
    for k in range(4):
        v.dep[k] = dep[k]
        if dep[k]:
            if op == OP_PTR and (extra & 1):
                vars[dep[k]].ref_se += 1
            else:
                vars[dep[k]].ref_int += 1
    live_count += 1
    if scope:
        scope_of[i] = scope
    v.vn_user = 0
    v.serial = serial_counter
    serial_counter += 1
    if keep:
        v.flags |= F_VN_PENDING
        vars[anchor].vn_user = i
    elif vn:
        v.hash = h
        v.flags |= F_VN
        vn_insert(h, i, e)
    return i

cdef uint32_t var_data(uint8_t vt, uint32_t size, void* data, uint8_t backend) except 0:
    """Wraps memory that this runtime allocated (ownership moves to the new variable)."""
    cdef uint32_t i = var_new(OP_DATA, vt, size, 0, 0, 0, 0, 0, 0, backend)
    vars[i].data = data
    vars[i].flags |= F_OWNS
    return i

cdef inline uint32_t var_literal(uint8_t vt, uint32_t size, uint64_t bits,
                                 uint8_t backend) except 0:
    return var_new(OP_LITERAL, vt, size, 0, 0, 0, 0, bits, 0, backend)

# ---- Python-visible graph inspection (used by assembly, debugging and tests) -------------
def var_info(uint32_t i):
    """(op, type, size, deps, literal bits, extra, data address, ref_ext, ref_int)."""
    if i == 0 or i >= vars_cap or vars[i].flags & F_FREE:
        raise ValueError(f'pbc: variable {i} does not exist')
    cdef Var* v = &vars[i]
    deps = tuple([v.dep[k] for k in range(4) if v.dep[k]])
    return (OP_NAMES[v.op], TYPE_NAMES[v.vtype], v.size, deps, v.literal, v.extra,
            <uintptr_t> v.data, v.ref_ext, v.ref_int)

def live_variables():
    """Ids of all live variables (for whos() and graphviz)."""
    return [i for i in range(1, vars_cap) if not (vars[i].flags & F_FREE)]

def memory_usage():
    """(bytes in use, peak bytes in use, live variable count, bytes cached for reuse)."""
    return mem_bytes, mem_peak, live_count, cached_bytes

cdef bint any_dirty(uint32_t* deps, int n) noexcept:
    cdef int k
    for k in range(n):
        if deps[k] and (vars[deps[k]].flags & F_DIRTY):
            return True
    return False

cdef uint32_t epoch = 0

cdef inline void begin_traversal() noexcept:
    """Starts a new traversal: every node counts as unvisited (no clearing needed)."""
    global epoch
    epoch += 1

cdef inline bint visited(uint32_t i) noexcept:
    return vars[i].mark == epoch

cdef inline uint32_t position(uint32_t i) noexcept:
    return vars[i].pos

cdef bint postorder(uint32_t root, vector[uint32_t]& out, size_t limit) noexcept:
    """Appends the part of root's dependency closure not yet visited in the current
    traversal (see begin_traversal) to `out`, dependencies first (iterative DFS; position()
    gives a visited node's index in out). A pointer is a leaf: what it points to is memory,
    not code. Returns False once out exceeds `limit` entries."""
    cdef vector[uint32_t] stack
    cdef vector[uint8_t] expanded
    cdef uint32_t i, d
    cdef int k
    cdef Var* v
    stack.push_back(root)
    expanded.push_back(0)
    while not stack.empty():
        i = stack.back()
        v = &vars[i]
        if v.mark == epoch:
            stack.pop_back(); expanded.pop_back()
            continue
        if expanded.back() or v.op == OP_PTR or (v.dep[0] == 0 and not (v.flags & F_EXTRA)):
            stack.pop_back(); expanded.pop_back()
            v.mark = epoch
            v.pos = out.size()
            out.push_back(i)
            if out.size() > limit:
                return False
            continue
        expanded[expanded.size() - 1] = 1
        if v.flags & F_EXTRA:       # reversed, so they are emitted in order (side effects)
            for k in range(<int> extra_deps[i].size() - 1, -1, -1):
                d = extra_deps[i][k]
                if vars[d].mark != epoch:
                    stack.push_back(d)
                    expanded.push_back(0)
        for k in range(3, -1, -1):     # reversed, so dep[0] is emitted first
            d = v.dep[k]
            if d and vars[d].mark != epoch:
                stack.push_back(d)
                expanded.push_back(0)
    return True


cdef void set_extra_deps(uint32_t i, vector[uint32_t]& deps) noexcept:
    """Gives node i further operands (it takes a reference to each)."""
    cdef uint32_t d
    for d in deps:
        vars[d].ref_int += 1
    extra_deps[i] = deps
    vars[i].flags |= F_EXTRA
