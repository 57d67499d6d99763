/* A stand-in libcuda for tests/test_cuda_driver.py: the driver entry points that
 * pbc/backend/cuda_driver.py binds, with cuda.h's signatures, on host memory. It checks
 * what a real driver would reject (no current context, unknown options) and records the
 * last launch and module so the test can read back what was passed through ctypes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
static int depth, retained;
static char last_ptx[4096];
static int last_opt_level = -1;
uint64_t fake_last_launch[10];   /* grid x y z, block x y z, shared, stream, arg0, arg1 */

const char *fake_last_ptx(void) { return last_ptx; }
int fake_last_opt_level(void) { return last_opt_level; }
int fake_depth(void) { return depth; }
int fake_retained(void) { return retained; }

CUresult cuInit(unsigned flags) { return flags == 0 ? 0 : 1; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
CUresult cuDeviceGet(int *d, int ordinal) { if (ordinal != 0) return 101; *d = 0; return 0; }
CUresult cuDeviceGetName(char *name, int len, int d) {
    strncpy(name, "Fake GPU", len); return d == 0 ? 0 : 101;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
    if (d != 0) return 101;
    switch (attr) {
        case 16: *v = 132; return 0;
        case 75: *v = 9; return 0;
        case 76: *v = 0; return 0;
        default: return 1;
    }
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, int d) { *ctx = (void *)0xC0; retained++; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { retained--; return 0; }
CUresult cuCtxPushCurrent_v2(void *ctx) { if (ctx != (void *)0xC0) return 201; depth++; return 0; }
CUresult cuCtxPopCurrent_v2(void **ctx) {
    if (!depth) return 201;
    depth--; if (ctx) *ctx = (void *)0xC0; return 0;
}
CUresult cuStreamCreate(void **s, unsigned flags) { if (!depth) return 201; *s = (void *)0x5000; return 0; }
CUresult cuStreamSynchronize(void *s) { return depth && s == (void *)0x5000 ? 0 : 400; }
CUresult cuStreamDestroy_v2(void *s) { return depth && s == (void *)0x5000 ? 0 : 400; }
CUresult cuMemAlloc_v2(uint64_t *p, size_t n) {
    if (!depth) return 201;
    if (n > ((size_t)1 << 40)) return 2;
    void *m = malloc(n); *p = (uint64_t)(uintptr_t)m; return m ? 0 : 2;
}
CUresult cuMemFree_v2(uint64_t p) { if (!depth) return 201; free((void *)(uintptr_t)p); return 0; }
CUresult cuMemGetInfo_v2(size_t *free_, size_t *total) { *free_ = 1 << 30; *total = (size_t)1 << 31; return 0; }
CUresult cuMemcpyHtoDAsync_v2(uint64_t d, const void *s, size_t n, void *st) {
    if (!depth) return 201; memcpy((void *)(uintptr_t)d, s, n); return 0;
}
CUresult cuMemcpyDtoHAsync_v2(void *d, uint64_t s, size_t n, void *st) {
    if (!depth) return 201; memcpy(d, (void *)(uintptr_t)s, n); return 0;
}
CUresult cuMemcpyDtoDAsync_v2(uint64_t d, uint64_t s, size_t n, void *st) {
    if (!depth) return 201; memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n); return 0;
}
CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned n, int *options, void **values) {
    char *error_log = NULL; size_t error_size = 0;
    if (!depth) return 201;
    for (unsigned k = 0; k < n; k++) {
        switch (options[k]) {
            case 7: last_opt_level = (int)(uintptr_t)values[k]; break;
            case 5: error_log = values[k]; break;
            case 6: error_size = (size_t)(uintptr_t)values[k]; break;
            case 3: case 4: break;
            default: return 1;
        }
    }
    strncpy(last_ptx, image, sizeof last_ptx - 1);
    if (strstr(image, "REJECT")) {
        if (error_log && error_size > 40) strcpy(error_log, "ptxas fatal: line 3; REJECT");
        return 218;
    }
    *module = (void *)0xA0;
    return 0;
}
CUresult cuModuleGetFunction(void **f, void *module, const char *name) {
    if (module != (void *)0xA0) return 400;
    if (strcmp(name, "kernel")) return 500;
    *f = (void *)0xF0; return 0;
}
CUresult cuModuleUnload(void *module) { return module == (void *)0xA0 ? 0 : 400; }
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
    if (!depth) return 201;
    if (f != (void *)0xF0 || extra) return 400;
    uint64_t v[10] = {gx, gy, gz, bx, by, bz, shared, (uint64_t)(uintptr_t)stream,
                      *(uint64_t *)params[0], *(uint64_t *)params[1]};
    memcpy(fake_last_launch, v, sizeof v);
    return 0;
}
CUresult cuGetErrorName(int code, const char **s) {
    switch (code) {
        case 2: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return 0;
        case 201: *s = "CUDA_ERROR_INVALID_CONTEXT"; return 0;
        case 218: *s = "CUDA_ERROR_INVALID_PTX"; return 0;
        case 500: *s = "CUDA_ERROR_NOT_FOUND"; return 0;
        default: return 1;
    }
}
