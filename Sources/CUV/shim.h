// libuv bridge. Unavoidable C casts live here as static inline helpers (pb_ prefix).
#ifndef PB_CUV_SHIM_H
#define PB_CUV_SHIM_H
#include <uv.h>
#include <malloc.h>
#include <errno.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <netinet/in.h>
#include <string.h>
#include <time.h>

// libuv's handle "inheritance" is first-member layout; Swift cannot cast between the structs.
static inline uv_stream_t *pb_tcp_as_stream(uv_tcp_t *t) { return (uv_stream_t *)t; }
static inline uv_handle_t *pb_tcp_as_handle(uv_tcp_t *t) { return (uv_handle_t *)t; }
static inline uv_handle_t *pb_timer_as_handle(uv_timer_t *t) { return (uv_handle_t *)t; }
static inline uv_handle_t *pb_async_as_handle(uv_async_t *a) { return (uv_handle_t *)a; }
static inline uv_handle_t *pb_poll_as_handle(uv_poll_t *p) { return (uv_handle_t *)p; }
static inline uv_handle_t *pb_signal_as_handle(uv_signal_t *s) { return (uv_handle_t *)s; }
static inline uv_handle_t *pb_idle_as_handle(uv_idle_t *i) { return (uv_handle_t *)i; }
static inline uv_handle_t *pb_check_as_handle(uv_check_t *c) { return (uv_handle_t *)c; }
static inline uv_handle_t *pb_prepare_as_handle(uv_prepare_t *p) { return (uv_handle_t *)p; }

// uv_loop_configure is variadic, which Swift cannot call.
static inline int pb_loop_measure_idle_time(uv_loop_t *l) { return uv_loop_configure(l, UV_METRICS_IDLE_TIME); }

// prctl is variadic and pthread_setname_np needs _GNU_SOURCE: neither reaches Swift's Glibc module.
static inline int pb_set_thread_name(const char *name) { return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0); }
static inline int pb_get_thread_name(char out[16]) { return prctl(PR_GET_NAME, (unsigned long)out, 0, 0, 0); }
// syscall is variadic: the calling thread's kernel id, as /proc/self/task names it.
#include <sys/syscall.h>
static inline int pb_gettid(void) { return (int)syscall(SYS_gettid); }

// accept4 needs _GNU_SOURCE, which Swift's Glibc module is built without: declared here when the
// headers left it out, so an accepted socket is close-on-exec from its first instant.
#ifndef __USE_GNU
extern int accept4(int fd, struct sockaddr *addr, socklen_t *addr_len, int flags);
#endif
static inline int pb_accept_cloexec_nonblocking(int fd) { return accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK); }

// Swift's Glibc module does not export mallinfo2; heap bytes in use for leak checks.
static inline size_t pb_heap_in_use(void) { struct mallinfo2 m = mallinfo2(); return m.uordblks + m.hblkhd; }

// One block per TCP connection: the handle and its requests share a lifetime, so libuv's
// ECANCELED callbacks during uv_close never touch freed memory (the block is freed in close_cb).
typedef struct pb_tcp_block {
    uv_tcp_t tcp;
    uv_write_t write;
    uv_connect_t connect;
} pb_tcp_block;
static inline uv_handle_t *pb_block_handle(pb_tcp_block *b) { return (uv_handle_t *)&b->tcp; }
static inline uv_stream_t *pb_block_stream(pb_tcp_block *b) { return (uv_stream_t *)&b->tcp; }

// The CLOCK_MONOTONIC reading in nanoseconds, without Swift's timespec bridging at every call site.
static inline uint64_t pb_monotonic_ns(void) {
    struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// timerfd with absolute first expiry + interval in ns (Swift would need itimerspec plumbing per call);
// both zero disarms it.
static inline int pb_timerfd_create(void) { return timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC); }
static inline int pb_timerfd_arm(int fd, uint64_t first_abs_ns, uint64_t interval_ns) {
    struct itimerspec its;
    its.it_value.tv_sec = (time_t)(first_abs_ns / 1000000000ull);
    its.it_value.tv_nsec = (long)(first_abs_ns % 1000000000ull);
    its.it_interval.tv_sec = (time_t)(interval_ns / 1000000000ull);
    its.it_interval.tv_nsec = (long)(interval_ns % 1000000000ull);
    return timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
}
// Reads the expiration count; 0 when nothing expired (EAGAIN), so the poll callback stays branch-light.
static inline uint64_t pb_timerfd_read(int fd) {
    uint64_t n = 0;
    if (read(fd, &n, sizeof n) != (ssize_t)sizeof n) return 0;
    return n;
}
// SO_REUSEPORT on the socket uv_tcp_init_ex created, before bind (uv has no flag for it in 1.44).
static inline int pb_tcp_set_reuseport(uv_tcp_t *t) {
    uv_os_fd_t fd;
    int r = uv_fileno((uv_handle_t *)t, &fd);
    if (r != 0) return r;
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) return -errno;
    return 0;
}
// The port a bound TCP handle really got (port 0 asks the kernel to choose).
static inline int pb_tcp_bound_port(uv_tcp_t *t) {
    struct sockaddr_storage ss; int len = sizeof ss;
    if (uv_tcp_getsockname(t, (struct sockaddr *)&ss, &len) != 0) return -1;
    if (ss.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return -1;
}
// Resolves a numeric IPv4/IPv6 literal into storage uv_tcp_bind/uv_tcp_connect accept.
static inline int pb_parse_address(const char *host, int port, struct sockaddr_storage *out) {
    memset(out, 0, sizeof *out);
    if (uv_ip4_addr(host, port, (struct sockaddr_in *)out) == 0) return 0;
    return uv_ip6_addr(host, port, (struct sockaddr_in6 *)out);
}
// The port of an IPv4/IPv6 address (host order), 0 for other families.
static inline int pb_sockaddr_port(const struct sockaddr_storage *s) {
    if (s->ss_family == AF_INET) return ntohs(((const struct sockaddr_in *)s)->sin_port);
    if (s->ss_family == AF_INET6) return ntohs(((const struct sockaddr_in6 *)s)->sin6_port);
    return 0;
}
static inline const struct sockaddr *pb_sockaddr(const struct sockaddr_storage *s) { return (const struct sockaddr *)s; }
#endif
