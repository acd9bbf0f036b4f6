// libuv bridge. Unavoidable C casts live here as static inline helpers (pb_ prefix).
#ifndef PB_CUV_SHIM_H
#define PB_CUV_SHIM_H
#include <uv.h>
#include <malloc.h>
#include <sys/resource.h>

// libuv's handle "inheritance" is first-member layout; Swift cannot cast between the structs.
static inline uv_stream_t *pb_tcp_as_stream(uv_tcp_t *t) { return (uv_stream_t *)t; }
static inline uv_handle_t *pb_tcp_as_handle(uv_tcp_t *t) { return (uv_handle_t *)t; }
static inline uv_handle_t *pb_stream_as_handle(uv_stream_t *s) { return (uv_handle_t *)s; }
static inline uv_handle_t *pb_timer_as_handle(uv_timer_t *t) { return (uv_handle_t *)t; }
static inline uv_handle_t *pb_async_as_handle(uv_async_t *a) { return (uv_handle_t *)a; }
static inline uv_handle_t *pb_poll_as_handle(uv_poll_t *p) { return (uv_handle_t *)p; }
static inline uv_handle_t *pb_signal_as_handle(uv_signal_t *s) { return (uv_handle_t *)s; }
static inline uv_handle_t *pb_idle_as_handle(uv_idle_t *i) { return (uv_handle_t *)i; }
static inline uv_handle_t *pb_check_as_handle(uv_check_t *c) { return (uv_handle_t *)c; }
static inline uv_handle_t *pb_prepare_as_handle(uv_prepare_t *p) { return (uv_handle_t *)p; }

// Swift's Glibc module does not export mallinfo2 (style.md §3); heap bytes in use for leak checks.
static inline size_t pb_heap_in_use(void) { struct mallinfo2 m = mallinfo2(); return m.uordblks + m.hblkhd; }
#endif
