/* util: the leaf helpers every module may use: allocation that never
 * fails (it calls fatal()), fatal() itself, string helpers and a
 * monotonic clock. Nothing here knows about the rest of terp. */
#ifndef TERP_UTIL_H
#define TERP_UTIL_H

/* terp's version: --version, the User-Agent of its requests. */
#define TERP_VERSION "0.1.0"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* Allocation never returns NULL: on failure fatal() is called. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* Returns a new string the caller frees. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* xasprintf over a va_list (the caller's va_start/va_end). */
char *xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* Prints "terp: <message>" to stderr after running the fatal hook (the
 * TUI installs one that restores the terminal), then exits 70. */
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void fatal_set_hook(void (*hook)(void));

/* Monotonic milliseconds and microseconds since an arbitrary origin. */
int64_t now_ms(void);
/* Edit distance of a[0..na) and b (insertions, deletions, changes and
 * swaps of neighbours count 1), capped at 9: for "did you mean". */
int edit_distance(const char *a, size_t na, const char *b);
int64_t now_us(void);

/* Milliseconds since the epoch (CLOCK_REALTIME): for times written down
 * (the journal's stamps, the egress ledger), never to measure intervals. */
int64_t wall_ms(void);

/* Parses a size like "4G", "512M", "100k" or "1048576" (bytes, 1024
 * based). Returns 0, or -1 when the text is not a size. */
int parse_size(const char *s, uint64_t *out);
/* Parses a duration like "120", "120s", "2m", "500ms" into milliseconds. */
int parse_duration_ms(const char *s, int64_t *out);
/* Formats a byte count for people ("4 GiB", "1.5 MiB", "12 B") into buf. */
void fmt_bytes(char *buf, size_t len, uint64_t n);

/* Writes all of buf to fd, retrying on EINTR and short writes.
 * Returns 0, or -1 with errno set. */
int write_all(int fd, const void *buf, size_t len);
/* Replaces path with len bytes of data, atomically: a temporary file
 * beside it (created exclusively, never through a symlink) with the
 * given mode, written whole (fsync'ed with WRITE_SYNC), then renamed
 * over path. A reader sees the old file or the new one, never half; on
 * failure nothing is left behind. Returns 0, or -1 with errno set. */
#define WRITE_SYNC	1
int write_file_atomic(const char *path, const void *data, size_t len,
    unsigned mode, int flags);
/* Sets O_NONBLOCK / FD_CLOEXEC on fd. Return 0 or -1. */
int fd_set_nonblock(int fd);
int fd_set_cloexec(int fd);

/* Reads a whole file into a new NUL-terminated buffer of at most max
 * bytes. Returns NULL (errno set, EFBIG when too big) on failure. */
char *read_file(const char *path, size_t max, size_t *len);
/* read_file for a file that configures terp (as ssh treats its config):
 * refused unless a regular file (a FIFO does not hang) owned by the user
 * or root, that no one else can write, in folders that no one else can
 * write either. NULL with errno (ENOENT: none) and, when refused, the
 * reason in *why (a new string; NULL otherwise). */
char *read_trusted_file(const char *path, size_t max, size_t *len, char **why);

/* The user's home: $HOME when absolute, else the password database's
 * entry for the real uid; NULL when neither. New string. */
char *user_home(void);
/* mkdir -p with mode for each created component; never creates the
 * user's home itself (fails with ENOENT). Returns 0 or -1. */
int mkdir_p(const char *path, unsigned mode);

/* XDG base directories, with the spec's defaults. New strings. */
char *xdg_state_home(void);
char *xdg_config_home(void);

/* The value of key in envp ("KEY=value" strings, NULL-terminated; NULL:
 * this process's environment), or NULL. Borrowed from envp. */
const char *env_lookup(const char *const *envp, const char *key);

/* Removes the tree at path (a folder; a file or link is just unlinked)
 * depth first through descriptors: every step is openat(O_NOFOLLOW)
 * from the folder above, going back up by "..", so a link is never
 * followed, no path is ever longer than one name (trees deeper than
 * PATH_MAX go too), and two descriptors are open at any time. Folders
 * made read-only are opened up first. For a tree nothing else changes
 * any more (a finished sandbox's). Returns 0, or -1 with errno when
 * something stayed. */
int rm_tree(const char *path);

#endif
