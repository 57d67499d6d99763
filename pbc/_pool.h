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
 * A worker joins a job only while it is unfinished, and a new job waits until every worker
 * that joined the previous one has left it, so no worker can mix the block counter of one
 * job with the function and parameters of another.
 */
#pragma once
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define PBC_SPIN_NS 200000           /* how long an idle thread polls before it sleeps */

typedef void (*pbc_fn)(int64_t start, int64_t end, void *params);

static struct {
    pthread_mutex_t mu;
    pthread_cond_t wake, finished;
    int workers;               /* threads started so far */
    int allowed;               /* how many of them may join jobs (thread_count - 1) */
    uint64_t generation;       /* bumped for every job */
    int active;                /* workers inside the current job */
    pbc_fn fn;
    void *params;
    int64_t n, block, nblocks;
    int64_t next, done;        /* accessed atomically */
    int fork_handler;          /* pbc_pool_after_fork is registered */
} pbc_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER};

static void pbc_pool_work(pbc_fn fn, void *params, int64_t n, int64_t block, int64_t nblocks) {
    for (;;) {
        int64_t b = __atomic_fetch_add(&pbc_pool.next, 1, __ATOMIC_SEQ_CST);
        if (b >= nblocks)
            return;
        int64_t start = b * block, end = start + block < n ? start + block : n;
        fn(start, end, params);
        if (__atomic_fetch_add(&pbc_pool.done, 1, __ATOMIC_SEQ_CST) + 1 == nblocks) {
            pthread_mutex_lock(&pbc_pool.mu);
            pthread_cond_broadcast(&pbc_pool.finished);
            pthread_mutex_unlock(&pbc_pool.mu);
        }
    }
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

static int pbc_job_posted(const void *seen) {
    return __atomic_load_n(&pbc_pool.generation, __ATOMIC_ACQUIRE) != *(const uint64_t *) seen;
}

static int pbc_job_done(const void *unused) {
    (void) unused;
    return __atomic_load_n(&pbc_pool.done, __ATOMIC_ACQUIRE) >=
           __atomic_load_n(&pbc_pool.nblocks, __ATOMIC_ACQUIRE);
}

static int pbc_workers_left(const void *unused) {
    (void) unused;
    return __atomic_load_n(&pbc_pool.active, __ATOMIC_ACQUIRE) == 0;
}

static void *pbc_pool_worker(void *arg) {
    int id = (int) (intptr_t) arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&pbc_pool.mu);
    for (;;) {
        while (pbc_pool.generation == seen || id >= pbc_pool.allowed ||
               __atomic_load_n(&pbc_pool.done, __ATOMIC_SEQ_CST) >= pbc_pool.nblocks)
        {
            if (pbc_pool.generation != seen && id >= pbc_pool.allowed)
                seen = pbc_pool.generation;     /* not for us: wait for the next job */
            if (pbc_pool.generation != seen && __atomic_load_n(&pbc_pool.done, __ATOMIC_SEQ_CST) >= pbc_pool.nblocks)
                seen = pbc_pool.generation;     /* woke up too late: already finished */
            if (pbc_pool.generation != seen)
                continue;
            pthread_mutex_unlock(&pbc_pool.mu);        /* poll for the next job a while, */
            int posted = pbc_poll(pbc_job_posted, &seen);
            pthread_mutex_lock(&pbc_pool.mu);
            if (!posted && pbc_pool.generation == seen)  /* then sleep */
                pthread_cond_wait(&pbc_pool.wake, &pbc_pool.mu);
        }
        seen = pbc_pool.generation;
        pbc_fn fn = pbc_pool.fn;
        void *params = pbc_pool.params;
        int64_t n = pbc_pool.n, block = pbc_pool.block, nblocks = pbc_pool.nblocks;
        __atomic_add_fetch(&pbc_pool.active, 1, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&pbc_pool.mu);
        pbc_pool_work(fn, params, n, block, nblocks);
        pthread_mutex_lock(&pbc_pool.mu);
        if (__atomic_sub_fetch(&pbc_pool.active, 1, __ATOMIC_RELEASE) == 0)
            pthread_cond_broadcast(&pbc_pool.finished);
    }
    return NULL;
}

/* A forked child has none of the parent's threads, and a worker may have held the lock
 * at the fork: start over with fresh state (workers are started again on demand). */
static void pbc_pool_after_fork(void) {
    pthread_mutex_init(&pbc_pool.mu, NULL);
    pthread_cond_init(&pbc_pool.wake, NULL);
    pthread_cond_init(&pbc_pool.finished, NULL);
    pbc_pool.workers = pbc_pool.allowed = pbc_pool.active = 0;
}

/* Runs fn over [0, n) in blocks of `block` lanes on up to `threads` threads (the caller is
 * one of them). Returns 0, or -1 if a worker thread could not be started (the job then
 * still completes on the threads that exist). */
static int pbc_pool_run(pbc_fn fn, void *params, int64_t n, int64_t block, int threads) {
    int64_t nblocks = (n + block - 1) / block;
    int rc = 0;
    if (nblocks <= 1 || threads <= 1) {
        /* One call per block, as on several threads: callbacks keep state per block. */
        for (int64_t b = 0; b < nblocks; b++)
            fn(b * block, (b + 1) * block < n ? (b + 1) * block : n, params);
        return 0;
    }
    pthread_mutex_lock(&pbc_pool.mu);
    if (pbc_pool.workers == 0 && !pbc_pool.fork_handler) {
        pthread_atfork(NULL, NULL, pbc_pool_after_fork);
        pbc_pool.fork_handler = 1;
    }
    while (pbc_pool.workers < threads - 1) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, pbc_pool_worker,
                           (void *) (intptr_t) pbc_pool.workers) != 0) {
            rc = -1;
            pthread_attr_destroy(&attr);
            break;
        }
        pthread_attr_destroy(&attr);
        pbc_pool.workers++;
    }
    if (pbc_pool.active > 0) {        /* stragglers of the previous job */
        pthread_mutex_unlock(&pbc_pool.mu);
        pbc_poll(pbc_workers_left, NULL);
        pthread_mutex_lock(&pbc_pool.mu);
    }
    while (pbc_pool.active > 0)
        pthread_cond_wait(&pbc_pool.finished, &pbc_pool.mu);
    pbc_pool.allowed = threads - 1;
    pbc_pool.fn = fn;
    pbc_pool.params = params;
    pbc_pool.n = n;
    pbc_pool.block = block;
    pbc_pool.nblocks = nblocks;
    __atomic_store_n(&pbc_pool.next, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&pbc_pool.done, 0, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&pbc_pool.generation, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&pbc_pool.wake);
    pthread_mutex_unlock(&pbc_pool.mu);

    pbc_pool_work(fn, params, n, block, nblocks);

    pbc_poll(pbc_job_done, NULL);     /* blocks that workers are finishing */
    pthread_mutex_lock(&pbc_pool.mu);
    while (__atomic_load_n(&pbc_pool.done, __ATOMIC_SEQ_CST) < nblocks)
        pthread_cond_wait(&pbc_pool.finished, &pbc_pool.mu);
    pthread_mutex_unlock(&pbc_pool.mu);
    return rc;
}
