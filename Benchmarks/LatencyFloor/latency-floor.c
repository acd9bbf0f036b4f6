// latency-floor: what this machine's kernel and scheduler alone give a paced request/response pair.
//
//   latency-floor RATE SECONDS STEP_US [MESSAGE_BYTES]
//
// A client thread and an echo thread talk over one loopback TCP connection, with nothing else: no
// HTTP/2, no encoding, no histograms. The client wakes every STEP_US (timerfd, absolute), sends every
// message whose intended time t0 + k/RATE has come in one write, and takes the latency of each echoed
// message from its intended time, as pushbench's corrected latency is taken. scripts/bench-latency runs
// it between pushbench runs, at the same rate and pacing step, so pushbench's percentiles can be quoted
// against the floor measured in the same minutes (on a shared VM the floor itself moves with host steal).
//
// Prints one line: `floor rps R p50 A p99 B p999 C max D service_p99 E` (microseconds). Exits 1 on
// any socket or timer error, naming the call that failed.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static size_t message_bytes = 128;

static void die(const char *what) {
    fprintf(stderr, "latency-floor: %s: %s\n", what, strerror(errno));
    exit(1);
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) die("write");
        p += w;
        n -= (size_t)w;
    }
}

static void *echo(void *arg) {
    int fd = accept(*(int *)arg, NULL, NULL), one = 1;
    if (fd < 0) die("accept");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // Blocking in epoll_wait rather than read mirrors an event loop's wakeups.
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll (echo)");
    static char buf[1 << 16];
    for (;;) {
        struct epoll_event e;
        if (epoll_wait(ep, &e, 1, -1) < 1) continue;
        ssize_t n = read(fd, buf, sizeof buf);
        if (n == 0) return NULL;
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            die("read (echo)");
        }
        write_all(fd, buf, (size_t)n);
    }
}

static int by_value(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static uint32_t rank(const uint32_t *sorted, size_t n, double q) {
    size_t i = (size_t)(q * (double)n + 0.999999);
    return sorted[i == 0 ? 0 : (i > n ? n : i) - 1];
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: latency-floor RATE SECONDS STEP_US [MESSAGE_BYTES]\n");
        return 2;
    }
    double rate = atof(argv[1]), seconds = atof(argv[2]);
    long step_us = atol(argv[3]);
    if (argc > 4) message_bytes = (size_t)atol(argv[4]);
    if (rate <= 0 || seconds <= 0 || step_us <= 0 || message_bytes < 16 || message_bytes > 4096) {
        fprintf(stderr, "latency-floor: need RATE > 0, SECONDS > 0, STEP_US > 0, 16 <= MESSAGE_BYTES <= 4096\n");
        return 2;
    }

    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    if (listener < 0 || bind(listener, (struct sockaddr *)&addr, len) < 0 || listen(listener, 1) < 0 ||
        getsockname(listener, (struct sockaddr *)&addr, &len) < 0)
        die("listen on 127.0.0.1");
    pthread_t thread;
    if (pthread_create(&thread, NULL, echo, &listener) != 0) die("pthread_create");
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, len) < 0) die("connect");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

    size_t total = (size_t)(rate * seconds);
    uint32_t *latency = calloc(total, sizeof *latency), *service = calloc(total, sizeof *service);
    size_t batch_cap = 1 << 20;
    char *out = malloc(batch_cap), *in = malloc(1 << 17);
    if (!latency || !service || !out || !in) die("malloc");

    int timer = timerfd_create(CLOCK_MONOTONIC, 0), ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = timer};
    if (timer < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, timer, &ev) < 0) die("timerfd");
    ev.data.fd = fd;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll (client)");
    uint64_t t0 = now_ns() + 10000000;
    struct itimerspec spec = {.it_interval = {step_us / 1000000, (step_us % 1000000) * 1000},
                              .it_value = {(time_t)(t0 / 1000000000u), (long)(t0 % 1000000000u)}};
    if (timerfd_settime(timer, TFD_TIMER_ABSTIME, &spec, NULL) < 0) die("timerfd_settime");

    size_t sent = 0, answered = 0, have = 0;
    // A bound on the whole run: the schedule plus 10 s to drain, so a lost echo cannot hang a script.
    uint64_t give_up = t0 + (uint64_t)(seconds * 1e9) + 10000000000u;
    while (answered < total) {
        struct epoll_event events[2];
        int k = epoll_wait(ep, events, 2, 1000);
        if (k < 0 && errno != EINTR) die("epoll_wait");
        if (now_ns() > give_up) {
            fprintf(stderr, "latency-floor: %zu of %zu messages unanswered after the drain time\n", total - answered, total);
            return 1;
        }
        for (int i = 0; i < k; i++) {
            if (events[i].data.fd == timer) {
                uint64_t expirations, now;
                if (read(timer, &expirations, sizeof expirations) < 0 && errno != EAGAIN) die("read (timerfd)");
                now = now_ns();
                size_t used = 0;
                while (sent < total && used + message_bytes <= batch_cap) {
                    uint64_t intended = t0 + (uint64_t)((double)sent * 1e9 / rate);
                    if (intended > now) break;
                    memset(out + used, 0, message_bytes);
                    memcpy(out + used, &intended, 8);
                    memcpy(out + used + 8, &now, 8);
                    used += message_bytes;
                    sent++;
                }
                write_all(fd, out, used);
            } else {
                ssize_t n = read(fd, in + have, (1 << 17) - have);
                if (n == 0) { errno = ECONNRESET; die("read (client)"); }
                if (n < 0) {
                    if (errno == EINTR || errno == EAGAIN) continue;
                    die("read (client)");
                }
                have += (size_t)n;
                uint64_t now = now_ns();
                size_t used = 0;
                for (; have - used >= message_bytes && answered < total; used += message_bytes) {
                    uint64_t intended, sent_at;
                    memcpy(&intended, in + used, 8);
                    memcpy(&sent_at, in + used + 8, 8);
                    latency[answered] = (uint32_t)((now - intended) / 1000);
                    service[answered] = (uint32_t)((now - sent_at) / 1000);
                    answered++;
                }
                memmove(in, in + used, have - used);
                have -= used;
            }
        }
    }
    double elapsed = (double)(now_ns() - t0) / 1e9;
    qsort(latency, total, sizeof *latency, by_value);
    qsort(service, total, sizeof *service, by_value);
    printf("floor rps %.1f p50 %u p99 %u p999 %u max %u service_p99 %u\n", (double)total / elapsed,
           rank(latency, total, 0.50), rank(latency, total, 0.99), rank(latency, total, 0.999), latency[total - 1],
           rank(service, total, 0.99));
    return 0;
}
