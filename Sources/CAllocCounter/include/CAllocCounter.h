// Thread-local heap allocation counter. Linked into tests and benchmarks only, never into pushbench.
#ifndef PB_CALLOCCOUNTER_H
#define PB_CALLOCCOUNTER_H
#include <stdint.h>
#include <stddef.h>

/// Allocations (malloc, calloc, realloc of a new block, posix_memalign, aligned_alloc, memalign) made by this thread so far.
uint64_t pb_alloc_count(void);
/// Frees made by this thread so far.
uint64_t pb_free_count(void);
/// Bytes requested by this thread's allocations so far.
uint64_t pb_alloc_bytes(void);
/// Resets this thread's counters to zero.
void pb_alloc_reset(void);
/// Nonzero when the interposer is active in this process (it is whenever this target is linked).
int pb_alloc_counter_active(void);
/// OpenSSL's allocations made by this thread so far (also included in pb_alloc_count).
uint64_t pb_openssl_alloc_count(void);
/// Nonzero when OpenSSL's allocations are counted (its memory functions were set before it allocated).
int pb_openssl_alloc_counter_active(void);
#endif
