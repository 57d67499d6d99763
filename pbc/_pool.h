/* The kernel trampoline's thread pool.
 *
 * A job is `fn(start, end, params)` over [0, n) cut into fixed blocks. The calling thread
 * works on the job too and returns as soon as every block is done: a worker that is slow to
 * wake up (a busy machine) never holds up the launch, it just finds no blocks left. Idle
 * workers poll for a short while after a job (PBC_SPIN_NS) before they sleep on a condition
 * variable: kernels often come back to back (evaluated calls launch one per target), and
 * waking a sleeping thread costs tens of microseconds, more than a small kernel takes. The
 * caller likewise polls briefly for the blocks that workers are finishing before it sleeps.
 * Sleeping workers do not compete with the Python thread that keeps tracing.
 *
 * A job may also be posted asynchronously (kernel launches): the caller returns at once and
 * the workers run it while the caller goes on (tracing the next kernel). At most one job is
 * in flight, like a stream of depth one: posting the next job, or pbc_pool_join, first
 * finishes it, the caller working on its remaining blocks. The caller's own thread counts
 * as one of the job's threads, so an asynchronous job has one worker fewer than threads
 * until the caller joins it, and a busy core is never shared by a worker and the tracing.
 *
 * Posting and joining a job take no lock: on a machine of many cores, workers that each
 * had to pass a mutex to join made a job's start cost more than small kernels run (a
 * 64K-lane kernel on 16 threads: 83 us, now 17 us). The caller publishes the job's fields
 * inside a sequence lock (generation odd while it writes them, even once they are
 * complete); a worker copies them, counts itself `active`, and joins if the generation is
 * still the one it copied. The caller makes the generation odd before it waits for no
 * worker to be active and resets the block counters, so with sequentially consistent
 * atomics either it waits for the worker or the worker sees the odd generation and backs
 * out: no worker mixes the block counter of one job with the fields of another. The mutex
 * serves only sleeping and waking.
 */
#pragma once
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <xmmintrin.h>

/* MXCSR's flush-to-zero and denormals-are-zero bits: what JitFlag.FlushDenormals sets
 * around a job on every thread that works on it (and around constant folding). */
#define PBC_FLUSH_CSR 0x8040u

/* Sets `bits` in MXCSR; returns the old value for pbc_csr_restore. */
static inline unsigned pbc_csr_set(unsigned bits) {
    unsigned csr = _mm_getcsr();
    _mm_setcsr(csr | bits);
    __asm__ volatile("" ::: "memory");     /* (loads of the operands come after) */
    return csr;
}

/* Restores MXCSR once `*result` holds its final value (no computation of it sinks past). */
static inline void pbc_csr_restore(unsigned csr, uint64_t *result) {
    __asm__ volatile("" : "+m"(*result) : : "memory");
    _mm_setcsr(csr);
}

#define PBC_SPIN_NS 200000           /* how long an idle thread polls before it sleeps */

typedef void (*pbc_fn)(int64_t start, int64_t end, void *params);

/* The index of the thread working on a job, in [0, threads): 0 for the caller, worker w
 * counts as w + 1. Kernels read it (pbc_thread_index) to scatter into a copy of an array
 * that no other thread of the job writes (docs/semantics.md, scatter_add_local). */
static __thread int pbc_thread_id;

static int pbc_thread_index(void) { return pbc_thread_id; }

static uintptr_t pbc_thread_index_address(void) { return (uintptr_t) &pbc_thread_index; }

static struct {
    pthread_mutex_t mu;        /* sleeping and waking (and starting workers) */
    pthread_cond_t wake, finished;
    pthread_mutex_t caller;    /* one job at a time: callers on several threads queue */
    int workers;               /* threads started so far */
    int allowed;               /* how many of them may join jobs (thread_count - 1) */
    uint64_t generation;       /* sequence lock of the job fields: odd while written */
    int active;                /* workers inside the current job */
    int sleepers;              /* workers asleep (or about to be) on `wake` */
    int caller_asleep;         /* the caller sleeps on `finished` */
    pbc_fn fn;
    void *params;
    int64_t n, block, nblocks;
    unsigned csr_bits;         /* MXCSR bits set while working on the job */
    int64_t next, done;        /* blocks taken and finished */
    int in_flight;             /* a job is posted and not yet joined */
    int fork_handler;          /* pbc_pool_after_fork is registered */
    uint64_t spawned_at;       /* the generation when the newest workers were started */
} pbc_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
              PTHREAD_MUTEX_INITIALIZER};

#define PBC_LOAD(x) __atomic_load_n(&(x), __ATOMIC_SEQ_CST)
#define PBC_STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_SEQ_CST)
#define PBC_FIELD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define PBC_SET_FIELD(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

static void pbc_pool_work(pbc_fn fn, void *params, int64_t n, int64_t block, int64_t nblocks,
                          unsigned csr_bits) {
    unsigned csr = pbc_csr_set(csr_bits);
    for (;;) {
        int64_t b = __atomic_fetch_add(&pbc_pool.next, 1, __ATOMIC_SEQ_CST);
        if (b >= nblocks)
            break;
        int64_t start = b * block, end = start + block < n ? start + block : n;
        fn(start, end, params);
        if (__atomic_add_fetch(&pbc_pool.done, 1, __ATOMIC_SEQ_CST) == nblocks &&
                PBC_LOAD(pbc_pool.caller_asleep)) {
            pthread_mutex_lock(&pbc_pool.mu);
            pthread_cond_broadcast(&pbc_pool.finished);
            pthread_mutex_unlock(&pbc_pool.mu);
        }
    }
    _mm_setcsr(csr);
}

static int64_t pbc_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t) t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Polls `ready(arg)` for up to PBC_SPIN_NS; returns whether it became true. */
static int pbc_poll(int (*ready)(const void *), const void *arg) {
    int64_t deadline = pbc_now_ns() + PBC_SPIN_NS;
    for (int k = 1; !ready(arg); k++) {
        __builtin_ia32_pause();
        if ((k & 63) == 0 && pbc_now_ns() > deadline)
            return 0;
    }
    return 1;
}

/* A job other than `*seen` is published (complete: even generation). */
static int pbc_job_posted(const void *seen) {
    uint64_t g = PBC_LOAD(pbc_pool.generation);
    return g != *(const uint64_t *) seen && !(g & 1);
}

static int pbc_job_done(const void *unused) {
    (void) unused;
    return PBC_LOAD(pbc_pool.done) >= PBC_LOAD(pbc_pool.nblocks);
}

static int pbc_workers_left(const void *unused) {
    (void) unused;
    return PBC_LOAD(pbc_pool.active) == 0;
}

static void *pbc_pool_worker(void *arg) {
    int id = (int) (intptr_t) arg;
    pbc_thread_id = id + 1;
    /* (not the generation now: the job posted right after this thread was started, which
       it may begin to run only after the post, is one for it) */
    uint64_t seen = PBC_LOAD(pbc_pool.spawned_at);
    for (;;) {
        if (!pbc_poll(pbc_job_posted, &seen)) {          /* poll a while, then sleep */
            pthread_mutex_lock(&pbc_pool.mu);
            __atomic_add_fetch(&pbc_pool.sleepers, 1, __ATOMIC_SEQ_CST);
            while (!pbc_job_posted(&seen))
                pthread_cond_wait(&pbc_pool.wake, &pbc_pool.mu);
            __atomic_sub_fetch(&pbc_pool.sleepers, 1, __ATOMIC_SEQ_CST);
            pthread_mutex_unlock(&pbc_pool.mu);
        }
        /* A consistent copy of the job's fields (sequence lock), then join it if it is
           still the current one once this worker counts as active. */
        uint64_t g = PBC_LOAD(pbc_pool.generation);
        if (g & 1)
            continue;                                    /* being written: poll again */
        pbc_fn fn = PBC_FIELD(pbc_pool.fn);
        void *params = PBC_FIELD(pbc_pool.params);
        int64_t n = PBC_FIELD(pbc_pool.n), block = PBC_FIELD(pbc_pool.block);
        int64_t nblocks = PBC_FIELD(pbc_pool.nblocks);
        int allowed = PBC_FIELD(pbc_pool.allowed);
        unsigned csr_bits = PBC_FIELD(pbc_pool.csr_bits);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);          /* (the copy, then the check) */
        if (PBC_LOAD(pbc_pool.generation) != g)
            continue;
        seen = g;
        if (id >= allowed)
            continue;                                    /* not for us: wait for the next */
        __atomic_add_fetch(&pbc_pool.active, 1, __ATOMIC_SEQ_CST);
        if (PBC_LOAD(pbc_pool.generation) == g)
            pbc_pool_work(fn, params, n, block, nblocks, csr_bits);
        __atomic_sub_fetch(&pbc_pool.active, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

/* Finishes the job in flight, if any: works on its remaining blocks, then waits for those
 * that workers are finishing (the caller mutex is held). */
static void pbc_pool_finish(void) {
    if (!pbc_pool.in_flight)
        return;
    pbc_pool_work(pbc_pool.fn, pbc_pool.params, pbc_pool.n, pbc_pool.block, pbc_pool.nblocks,
                  pbc_pool.csr_bits);
    if (!pbc_poll(pbc_job_done, NULL)) {
        pthread_mutex_lock(&pbc_pool.mu);
        PBC_STORE(pbc_pool.caller_asleep, 1);
        while (!pbc_job_done(NULL))
            pthread_cond_wait(&pbc_pool.finished, &pbc_pool.mu);
        PBC_STORE(pbc_pool.caller_asleep, 0);
        pthread_mutex_unlock(&pbc_pool.mu);
    }
    PBC_STORE(pbc_pool.in_flight, 0);
}

/* Waits for the asynchronous job in flight (working on it meanwhile). */
static void pbc_pool_join(void) {
    pthread_mutex_lock(&pbc_pool.caller);
    pbc_pool_finish();
    pthread_mutex_unlock(&pbc_pool.caller);
}

/* Whether no asynchronous job is running: none was posted, or its blocks are all done
 * (then pbc_pool_join returns at once). */
static int pbc_pool_idle(void) {
    return !PBC_LOAD(pbc_pool.in_flight) || pbc_job_done(NULL);
}

/* A forked child has none of the parent's threads, and a worker may have held the lock
 * at the fork: start over with fresh state (workers are started again on demand). */
static void pbc_pool_after_fork(void) {
    pthread_mutex_init(&pbc_pool.mu, NULL);
    pthread_mutex_init(&pbc_pool.caller, NULL);
    pthread_cond_init(&pbc_pool.wake, NULL);
    pthread_cond_init(&pbc_pool.finished, NULL);
    pbc_pool.workers = pbc_pool.allowed = pbc_pool.active = pbc_pool.sleepers = 0;
    pbc_pool.caller_asleep = 0;
    pbc_pool.in_flight = 0;          /* (the parent joined it before forking) */
    pbc_pool.generation &= ~(uint64_t) 1;
}

/* Starts workers up to `count`; returns 0, or -1 if one could not be started. */
static int pbc_pool_start(int count) {
    int rc = 0;
    pthread_mutex_lock(&pbc_pool.mu);
    if (pbc_pool.workers == 0 && !pbc_pool.fork_handler) {
        pthread_atfork(pbc_pool_join, NULL, pbc_pool_after_fork);
        pbc_pool.fork_handler = 1;
    }
    PBC_STORE(pbc_pool.spawned_at, PBC_LOAD(pbc_pool.generation));
    while (pbc_pool.workers < count) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int failed = pthread_create(&t, &attr, pbc_pool_worker,
                                    (void *) (intptr_t) pbc_pool.workers) != 0;
        pthread_attr_destroy(&attr);
        if (failed) {
            rc = -1;
            break;
        }
        pbc_pool.workers++;
    }
    pthread_mutex_unlock(&pbc_pool.mu);
    return rc;
}

/* Runs fn over [0, n) in blocks of `block` lanes on up to `threads` threads (the caller is
 * one of them), each with `csr_bits` set in MXCSR meanwhile, after the job in flight. With
 * `async`, returns once the job is posted (see the top; where there is no worker to run it,
 * it runs now). Returns 0, or -1 if a worker thread could not be started (the job then
 * still completes on the threads that exist). */
static int pbc_pool_run(pbc_fn fn, void *params, int64_t n, int64_t block, int threads,
                        unsigned csr_bits, int async) {
    int64_t nblocks = (n + block - 1) / block;
    int rc = 0;
    if (threads <= 1 || nblocks < 1)
        async = 0;
    pthread_mutex_lock(&pbc_pool.caller);
    pbc_pool_finish();
    if (!async && (nblocks <= 1 || threads <= 1)) {
        /* One call per block, as on several threads: callbacks keep state per block. */
        unsigned csr = pbc_csr_set(csr_bits);
        for (int64_t b = 0; b < nblocks; b++)
            fn(b * block, (b + 1) * block < n ? (b + 1) * block : n, params);
        _mm_setcsr(csr);
        pthread_mutex_unlock(&pbc_pool.caller);
        return 0;
    }
    if (pbc_pool.workers < threads - 1)
        rc = pbc_pool_start(threads - 1);
    /* Odd: being written. Then wait for the stragglers of the previous job (those that
       joined after its blocks ran out leave at once): the block counters are reset next,
       and a worker that sees the generation still even counts as one (see the top). */
    uint64_t g = PBC_LOAD(pbc_pool.generation);
    PBC_STORE(pbc_pool.generation, g + 1);
    if (!pbc_workers_left(NULL) && !pbc_poll(pbc_workers_left, NULL))
        while (!pbc_workers_left(NULL))
            sched_yield();
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    PBC_SET_FIELD(pbc_pool.fn, fn);
    PBC_SET_FIELD(pbc_pool.params, params);
    PBC_SET_FIELD(pbc_pool.n, n);
    PBC_SET_FIELD(pbc_pool.block, block);
    PBC_SET_FIELD(pbc_pool.allowed, threads - 1);
    PBC_SET_FIELD(pbc_pool.csr_bits, csr_bits);
    PBC_STORE(pbc_pool.nblocks, nblocks);
    PBC_STORE(pbc_pool.next, 0);
    PBC_STORE(pbc_pool.done, 0);
    PBC_STORE(pbc_pool.generation, g + 2);               /* published */
    if (PBC_LOAD(pbc_pool.sleepers) > 0) {
        pthread_mutex_lock(&pbc_pool.mu);
        pthread_cond_broadcast(&pbc_pool.wake);
        pthread_mutex_unlock(&pbc_pool.mu);
    }
    PBC_STORE(pbc_pool.in_flight, 1);
    if (!async)
        pbc_pool_finish();                               /* work on it, then wait */
    pthread_mutex_unlock(&pbc_pool.caller);
    return rc;
}
