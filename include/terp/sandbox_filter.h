/* sandbox_filter: the two stacked seccomp programs of terp's sandbox,
 * built with libseccomp. Filter A is an allowlist (default ENOSYS),
 * filter B a denylist (default ALLOW) holding the argument rules that
 * libseccomp would drop next to A's unconditional rules. */
#ifndef TERP_SANDBOX_FILTER_H
#define TERP_SANDBOX_FILTER_H

#include <stddef.h>

enum sandbox_filter_kind {
	SANDBOX_FILTER_ALLOW,		/* A: Docker-derived allowlist */
	SANDBOX_FILTER_DENY,		/* B: Flatpak-style denylist, argument rules */
};

/* Builds both programs and exports each (seccomp_export_bpf) into its
 * own sealed memfd, positioned at offset 0, ready for bwrap's
 * `--add-seccomp-fd`. Pass them in this order: *fd_a first, then *fd_b
 * (bwrap installs them in argv order; A must be installed first because
 * it allows the prctl/seccomp calls that install B). The fds are
 * O_CLOEXEC: the launcher dup2()s them to the fixed numbers it passes to
 * bwrap. The caller owns and closes both fds. Returns 0, or -1 with a new
 * message in *err (the caller frees it) and no fd left open. */
int sandbox_filter_build(int *fd_a, int *fd_b, char **err);

/* Builds one program and returns its raw BPF (an array of struct
 * sock_filter) in a new buffer *bpf of *len bytes; the caller frees it.
 * Returns 0, or -1 with a new message in *err. */
int sandbox_filter_bpf(enum sandbox_filter_kind kind, unsigned char **bpf, size_t *len,
    char **err);

/* Installs one exported program in the calling thread exactly as bwrap
 * does (prctl PR_SET_SECCOMP). No_new_privs must be set already.
 * Allocates nothing, so it is safe in a forked child. Returns 0 or -1
 * with errno set (EINVAL when len is not a whole number of insns). */
int sandbox_filter_load_bpf(const unsigned char *bpf, size_t len);

/* For tests and for running without bwrap: sets PR_SET_NO_NEW_PRIVS and
 * installs A then B in the calling process, the order bwrap uses. This is
 * irreversible. Returns 0, or -1 with a new message in *err. */
int sandbox_filter_apply_self(char **err);

#endif
