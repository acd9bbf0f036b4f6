// malloc interposer: forwards to glibc's exported __libc_* entry points (no dlsym bootstrap, no
// recursive-malloc trap) and counts per thread in initial-exec TLS, so reading a counter never
// allocates and parallel tests do not disturb each other (docs/architecture.md "The hot path").
#define _GNU_SOURCE
#include "CAllocCounter.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

static __thread uint64_t pb_allocs __attribute__((tls_model("initial-exec")));
static __thread uint64_t pb_frees __attribute__((tls_model("initial-exec")));
static __thread uint64_t pb_bytes __attribute__((tls_model("initial-exec")));

uint64_t pb_alloc_count(void) { return pb_allocs; }
uint64_t pb_free_count(void) { return pb_frees; }
uint64_t pb_alloc_bytes(void) { return pb_bytes; }
void pb_alloc_reset(void) { pb_allocs = 0; pb_frees = 0; pb_bytes = 0; }
int pb_alloc_counter_active(void) { return 1; }

// OpenSSL's allocations, counted apart (they also count above): OpenSSL 3.0 allocates a few small
// blocks per record it writes, which a test reports as OpenSSL's, not the Swift side's. Installed
// before main, when OpenSSL has allocated nothing yet (it refuses later).
static __thread uint64_t pb_openssl_allocs __attribute__((tls_model("initial-exec")));
static int pb_openssl_hooked;
static void *pb_ossl_malloc(size_t n, const char *file, int line) { (void)file; (void)line; pb_openssl_allocs++; return malloc(n); }
static void *pb_ossl_realloc(void *p, size_t n, const char *file, int line) { (void)file; (void)line; pb_openssl_allocs++; return realloc(p, n); }
static void pb_ossl_free(void *p, const char *file, int line) { (void)file; (void)line; free(p); }
__attribute__((constructor)) static void pb_hook_openssl(void) {
    pb_openssl_hooked = CRYPTO_set_mem_functions(pb_ossl_malloc, pb_ossl_realloc, pb_ossl_free);
}
uint64_t pb_openssl_alloc_count(void) { return pb_openssl_allocs; }
int pb_openssl_alloc_counter_active(void) { return pb_openssl_hooked; }

void *malloc(size_t n) { pb_allocs++; pb_bytes += n; return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { pb_allocs++; pb_bytes += a * b; return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) {
    // realloc(NULL) is a fresh allocation; an in-place resize is still a heap operation worth counting.
    pb_allocs++; pb_bytes += n;
    return __libc_realloc(p, n);
}
void free(void *p) { if (p) pb_frees++; __libc_free(p); }
int posix_memalign(void **out, size_t align, size_t n) {
    if (align < sizeof(void *) || (align & (align - 1)) != 0) return EINVAL;
    void *p = __libc_memalign(align, n);
    if (!p) return ENOMEM;
    pb_allocs++; pb_bytes += n;
    *out = p;
    return 0;
}
void *aligned_alloc(size_t align, size_t n) { pb_allocs++; pb_bytes += n; return __libc_memalign(align, n); }
void *memalign(size_t align, size_t n) { pb_allocs++; pb_bytes += n; return __libc_memalign(align, n); }
