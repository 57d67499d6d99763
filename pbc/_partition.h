/* The two passes of the runtime's partition (see _rt_horizontal.pxi) over one block.
 *
 * Scalar passes, for keys that a table maps to slots (pbc_part_*_dense): a block is cut
 * into PBC_PART_WAYS consecutive parts, each with its own count (and so its own write
 * offset) per slot, and the passes walk the parts side by side, a lane of each in turn:
 * the counter a lane increments is then never the one the previous lane just
 * incremented, so the increments overlap instead of forming one chain through memory (a
 * chain made a single-key partition 10x slower). In C, specialized for consecutive keys
 * (no table): 64 keys of 10^6 lanes, 1.43 -> 1.25 ms on one thread of AMD Zen 5 (0.73
 * -> 0.67 ms on two) against the same loops in Cython.
 *
 * Vector passes (pbc_part_*_simd), for up to PBC_PART_SIMD_KEYS keys that are consecutive
 * from `base` (slot = key - base), over one part, 16 lanes at a time with AVX-512 where
 * the build targets it (PBC_NATIVE). Per key: one compare of the 16 lanes' keys; counting
 * adds its popcount, writing compresses the matching lanes' indices to the front of a
 * register and stores just those with a mask, so that no byte outside the key's range of
 * the output is touched (parts of other threads lie next to it). The scalar passes cost
 * about 12 instructions per lane, these about 8 per key per 16 lanes: 8 keys of 10^6
 * lanes, 0.86 -> 0.63 ms (AMD Zen 5), a key alone (count only) 0.24 -> 0.07 ms.
 */
#pragma once
#include <stdint.h>
#include <string.h>

#define PBC_PART_WAYS 4
#define PBC_PART_LOCAL 256   /* the most slots of the dense passes (their tables: stack) */

/* The slot of lane k's key, or -1; `table` NULL: the keys are consecutive from `base`
 * (slot = key - base), which spares a dependent load per lane. */
static inline __attribute__((always_inline)) int
pbc_part_slot(const uint32_t *sel, int64_t k, uint32_t base, uint32_t tsize,
              const int32_t *table) {
    uint32_t d = sel[k] - base;             /* (wraps around for keys below the first) */
    if (d >= tsize)
        return -1;
    return table ? table[d] : (int) d;
}

/* The parts of one block: lo[j] .. lo[j + 1] for j < PBC_PART_WAYS, the last the shortest. */
static inline __attribute__((always_inline)) void
pbc_part_walk_count(const uint32_t *sel, const int64_t *lo, uint32_t base, uint32_t tsize,
                    const int32_t *table, int m, int64_t *count) {
    int32_t h[PBC_PART_WAYS][PBC_PART_LOCAL];
    int64_t common = lo[PBC_PART_WAYS] - lo[PBC_PART_WAYS - 1];
    for (int j = 0; j < PBC_PART_WAYS; j++)
        memset(h[j], 0, (size_t) m * sizeof(int32_t));
    for (int64_t k = 0; k < common; k++)
        for (int j = 0; j < PBC_PART_WAYS; j++) {
            int s = pbc_part_slot(sel, lo[j] + k, base, tsize, table);
            if (s >= 0)
                h[j][s]++;
        }
    for (int j = 0; j < PBC_PART_WAYS; j++) {
        for (int64_t k = lo[j] + common; k < lo[j + 1]; k++) {
            int s = pbc_part_slot(sel, k, base, tsize, table);
            if (s >= 0)
                h[j][s]++;
        }
        for (int s = 0; s < m; s++)
            count[j * m + s] = h[j][s];
    }
}

/* count[j * m + s] = lanes of part j whose key has slot s (m <= PBC_PART_LOCAL slots;
 * `table` maps key - base to a slot or -1, NULL: slot = key - base, tsize = m). */
static inline void pbc_part_count_dense(const uint32_t *sel, const int64_t *lo,
                                        uint32_t base, uint32_t tsize,
                                        const int32_t *table, int m, int64_t *count) {
    if (table)
        pbc_part_walk_count(sel, lo, base, tsize, table, m, count);
    else
        pbc_part_walk_count(sel, lo, base, tsize, NULL, m, count);
}

static inline __attribute__((always_inline)) void
pbc_part_walk_write(const uint32_t *sel, const int64_t *lo, uint32_t base, uint32_t tsize,
                    const int32_t *table, int m, uint32_t **out, const int64_t *pos) {
    uint32_t *dst[PBC_PART_WAYS][PBC_PART_LOCAL];     /* where each part writes next */
    int64_t common = lo[PBC_PART_WAYS] - lo[PBC_PART_WAYS - 1];
    for (int j = 0; j < PBC_PART_WAYS; j++)
        for (int s = 0; s < m; s++)
            dst[j][s] = out[s] + pos[j * m + s];
    for (int64_t k = 0; k < common; k++)
        for (int j = 0; j < PBC_PART_WAYS; j++) {
            int s = pbc_part_slot(sel, lo[j] + k, base, tsize, table);
            if (s >= 0)
                *dst[j][s]++ = (uint32_t) (lo[j] + k);
        }
    for (int j = 0; j < PBC_PART_WAYS; j++)
        for (int64_t k = lo[j] + common; k < lo[j + 1]; k++) {
            int s = pbc_part_slot(sel, k, base, tsize, table);
            if (s >= 0)
                *dst[j][s]++ = (uint32_t) k;
        }
}

/* Writes each lane index k of part j whose key has slot s at out[s][pos[j * m + s]++]
 * (the counts' offsets; the same slots as pbc_part_count_dense). */
static inline void pbc_part_write_dense(const uint32_t *sel, const int64_t *lo,
                                        uint32_t base, uint32_t tsize,
                                        const int32_t *table, int m, uint32_t **out,
                                        const int64_t *pos) {
    if (table)
        pbc_part_walk_write(sel, lo, base, tsize, table, m, out, pos);
    else
        pbc_part_walk_write(sel, lo, base, tsize, NULL, m, out, pos);
}

#ifdef __AVX512F__
#include <immintrin.h>

/* (the scalar passes cost the same for any number of keys, and from 16 keys on less than
   these: 10^6 lanes, 2 threads of AMD Zen 5, 8 keys 0.65 ms either way, 16 keys 1.2 against
   0.67 ms) */
#define PBC_PART_SIMD_KEYS 8

static inline __mmask16 pbc_part_valid(int64_t k, int64_t hi) {
    return hi - k >= 16 ? (__mmask16) 0xFFFF : (__mmask16) ((1u << (hi - k)) - 1);
}

/* count[s] = lanes in [lo, hi) whose key is base + s, for s < m. */
static inline void pbc_part_count_simd(const uint32_t *sel, int64_t lo, int64_t hi,
                                       uint32_t base, int m, int64_t *count) {
    const __m512i vbase = _mm512_set1_epi32((int) base);
    for (int s = 0; s < m; s++)
        count[s] = 0;
    for (int64_t k = lo; k < hi; k += 16) {
        __mmask16 valid = pbc_part_valid(k, hi);
        __m512i slot = _mm512_sub_epi32(_mm512_maskz_loadu_epi32(valid, sel + k), vbase);
        for (int s = 0; s < m; s++)
            count[s] += __builtin_popcount(
                _mm512_mask_cmpeq_epi32_mask(valid, slot, _mm512_set1_epi32(s)));
    }
}

/* Writes each lane index k in [lo, hi) whose key is base + s at out[s][pos[s]++]. */
static inline void pbc_part_write_simd(const uint32_t *sel, int64_t lo, int64_t hi,
                                       uint32_t base, int m, uint32_t **out, int64_t *pos) {
    const __m512i vbase = _mm512_set1_epi32((int) base);
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                                           14, 15);
    for (int64_t k = lo; k < hi; k += 16) {
        __mmask16 valid = pbc_part_valid(k, hi);
        __m512i slot = _mm512_sub_epi32(_mm512_maskz_loadu_epi32(valid, sel + k), vbase);
        /* (lane indices are below 2^32: their low 32 bits are the index) */
        __m512i index = _mm512_add_epi32(iota, _mm512_set1_epi32((int) (uint32_t) k));
        for (int s = 0; s < m; s++) {
            __mmask16 hit = _mm512_mask_cmpeq_epi32_mask(valid, slot, _mm512_set1_epi32(s));
            int n = __builtin_popcount(hit);
            _mm512_mask_storeu_epi32(out[s] + pos[s], (__mmask16) ((1u << n) - 1),
                                     _mm512_maskz_compress_epi32(hit, index));
            pos[s] += n;
        }
    }
}

#else

#define PBC_PART_SIMD_KEYS 0       /* (never called: the scalar passes run instead) */

static inline void pbc_part_count_simd(const uint32_t *sel, int64_t lo, int64_t hi,
                                       uint32_t base, int m, int64_t *count) {
    (void) sel; (void) lo; (void) hi; (void) base; (void) m; (void) count;
}

static inline void pbc_part_write_simd(const uint32_t *sel, int64_t lo, int64_t hi,
                                       uint32_t base, int m, uint32_t **out, int64_t *pos) {
    (void) sel; (void) lo; (void) hi; (void) base; (void) m; (void) out; (void) pos;
}

#endif
