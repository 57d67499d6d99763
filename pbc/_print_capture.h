/* Capture of symbolic pbc.print output.
 *
 * A kernel calls pbc_print_capture(sink, v0, v1, ...) for every active lane of a print
 * statement, with each value's bits widened to 64 (floats bit-cast, not converted). The
 * sink keeps the first `limit` rows and counts them all; the host formats them after the
 * launch. Kernels that print run on one thread with their lanes in order, so a sink needs
 * no locking.
 */
#pragma once
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct {
    uint64_t count;      /* rows offered (active lanes times executions) */
    uint64_t limit;      /* rows kept at most */
    uint64_t cap;        /* rows allocated */
    uint32_t nvalues;    /* values per row */
    uint64_t *data;      /* kept rows, nvalues each */
} pbc_print_sink;

static void pbc_print_capture(pbc_print_sink *s, ...) {
    uint64_t row = s->count++;
    if (row >= s->limit)
        return;
    if (row >= s->cap) {
        uint64_t cap = s->cap ? 2 * s->cap : 64;
        if (cap > s->limit)
            cap = s->limit;
        void *p = realloc(s->data, (size_t) (cap * s->nvalues * sizeof(uint64_t)));
        if (!p) {            /* out of memory: keep the rows captured so far */
            s->limit = row;
            return;
        }
        s->data = (uint64_t *) p;
        s->cap = cap;
    }
    va_list ap;
    va_start(ap, s);
    for (uint32_t i = 0; i < s->nvalues; ++i)
        s->data[row * s->nvalues + i] = va_arg(ap, uint64_t);
    va_end(ap);
}

static uintptr_t pbc_print_capture_address(void) {
    return (uintptr_t) &pbc_print_capture;
}
