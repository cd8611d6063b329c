/* loop: the one poll loop of terp (redis's ae.c in spirit). Terminal
 * input, the kernel's pipes, libcurl's sockets, signals and timers all
 * come through here, so nothing ever blocks the UI. Single-threaded. */
#ifndef TERP_LOOP_H
#define TERP_LOOP_H

#include <poll.h>
#include <stdint.h>

struct loop;

/* revents is poll()'s (POLLIN, POLLOUT, POLLHUP, POLLERR...). */
typedef void (*loop_fd_cb)(struct loop *l, int fd, int revents, void *arg);
typedef void (*loop_timer_cb)(struct loop *l, void *arg);
typedef void (*loop_signal_cb)(struct loop *l, int signo, void *arg);

struct loop *loop_new(void);
/* Frees the loop; watched fds are not closed (their owners close them). */
void loop_free(struct loop *l);

/* Watches fd for events (POLLIN and/or POLLOUT); a second call for the
 * same fd replaces the first. events == 0 keeps the watch but pauses it. */
void loop_watch(struct loop *l, int fd, int events, loop_fd_cb cb, void *arg);
void loop_unwatch(struct loop *l, int fd);

/* One-shot timer after ms milliseconds. Returns an id > 0 for
 * loop_timer_cancel (cancelling a fired or unknown id is harmless). */
uint64_t loop_timer_add(struct loop *l, int64_t ms, loop_timer_cb cb, void *arg);
void loop_timer_cancel(struct loop *l, uint64_t id);

/* Routes signo to cb through a self-pipe, so the handler runs in the
 * loop, not in signal context. SA_RESTART is not set: poll wakes. */
int loop_signal(struct loop *l, int signo, loop_signal_cb cb, void *arg);
/* Restores the default disposition for every routed signal (call in a
 * forked child before exec). Async-signal-safe. */
void loop_signal_reset_child(void);

/* cb(arg) runs before every poll (one hook: a second call replaces it,
 * NULL removes it): a writer that batches its output writes it there,
 * so nothing waits in a buffer while the loop sleeps. It returns -1
 * when it holds nothing, or the ms it holds output for: the poll then
 * waits at most that long, and cb runs again after it. */
void loop_before_wait(struct loop *l, int64_t (*cb)(void *arg), void *arg);

/* Polls once, waiting at most max_wait_ms (-1: until something
 * happens), and runs the callbacks that are due. Returns the number of
 * callbacks run, or -1 on a poll error other than EINTR. */
int loop_run_once(struct loop *l, int64_t max_wait_ms);

/* Runs until loop_stop is called. */
void loop_run(struct loop *l);
void loop_stop(struct loop *l);
int loop_stopped(const struct loop *l);

#endif
