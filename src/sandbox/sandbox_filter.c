/* sandbox_filter: builds terp's two stacked seccomp programs with libseccomp
 * and exports them as BPF for bwrap's --add-seccomp-fd.
 * A = allowlist with default ENOSYS; B = denylist with default ALLOW that
 * carries the argument rules (TIOCSTI, clone flags, socket families). */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "terp/sandbox_filter.h"
#include "terp/util.h"

/* The programs as the build made them (scripts/seccomp_gen.c), and the
 * libseccomp version and API level they were made with. */
#ifndef TERP_SECCOMP_GEN
#include "seccomp_bpf.h"
#endif

/* The largest program we accept back from libseccomp (BPF_MAXINSNS). */
#define FILTER_MAX_BYTES	(4096 * sizeof(struct sock_filter))

/* Docker's default profile (moby/profiles seccomp/default.json, the
 * unconditional group plus amd64's arch_prctl), minus ptrace,
 * process_vm_readv/writev, kcmp, pidfd_getfd, process_madvise,
 * modify_ldt, io_uring_* and userfaultfd, which are not listed here at
 * all. socket, socketpair, clone and personality get argument rules
 * below. Names libseccomp does not know, or that are not syscalls of the
 * native architecture (the 32-bit ones), are skipped. */
/* libseccomp's SCMP_A0() leaves datum_b out of the initializer for
 * two-operand compares; this spells out both. */
static struct scmp_arg_cmp
cmp_arg(unsigned arg, enum scmp_compare op, uint64_t a, uint64_t b)
{
	struct scmp_arg_cmp c = { .arg = arg, .op = op, .datum_a = a, .datum_b = b };
	return c;
}

static const char *const allow_names[] = {
	"accept", "accept4", "access", "adjtimex", "alarm", "bind", "brk",
	"cachestat", "capget", "capset", "chdir", "chmod", "chown", "chown32",
	"clock_adjtime", "clock_adjtime64", "clock_getres",
	"clock_getres_time64", "clock_gettime", "clock_gettime64",
	"clock_nanosleep", "clock_nanosleep_time64", "close", "close_range",
	"connect", "copy_file_range", "creat", "dup", "dup2", "dup3",
	"epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old",
	"epoll_pwait", "epoll_pwait2", "epoll_wait", "epoll_wait_old",
	"eventfd", "eventfd2", "execve", "execveat", "exit", "exit_group",
	"faccessat", "faccessat2", "fadvise64", "fadvise64_64", "fallocate",
	"fanotify_mark", "fchdir", "fchmod", "fchmodat", "fchmodat2",
	"fchown", "fchown32", "fchownat", "fcntl", "fcntl64", "fdatasync",
	"fgetxattr", "flistxattr", "flock", "fork", "fremovexattr",
	"fsetxattr", "fstat", "fstat64", "fstatat64", "fstatfs", "fstatfs64",
	"fsync", "ftruncate", "ftruncate64", "futex", "futex_requeue",
	"futex_time64", "futex_wait", "futex_waitv", "futex_wake",
	"futimesat", "getcpu", "getcwd", "getdents", "getdents64", "getegid",
	"getegid32", "geteuid", "geteuid32", "getgid", "getgid32",
	"getgroups", "getgroups32", "getitimer", "getpeername", "getpgid",
	"getpgrp", "getpid", "getppid", "getpriority", "getrandom",
	"getresgid", "getresgid32", "getresuid", "getresuid32", "getrlimit",
	"get_robust_list", "getrusage", "getsid", "getsockname", "getsockopt",
	"get_thread_area", "gettid", "gettimeofday", "getuid", "getuid32",
	"getxattr", "getxattrat", "inotify_add_watch", "inotify_init",
	"inotify_init1", "inotify_rm_watch", "io_cancel", "ioctl",
	"io_destroy", "io_getevents", "io_pgetevents", "io_pgetevents_time64",
	"ioprio_get", "ioprio_set", "io_setup", "io_submit", "ipc", "kill",
	"landlock_add_rule", "landlock_create_ruleset",
	"landlock_restrict_self", "lchown", "lchown32", "lgetxattr", "link",
	"linkat", "listen", "listmount", "listxattr", "listxattrat",
	"llistxattr", "_llseek", "lremovexattr", "lseek", "lsetxattr",
	"lstat", "lstat64", "madvise", "map_shadow_stack", "membarrier",
	"memfd_secret", "mincore", "mkdir", "mkdirat",
	"mknod", "mknodat", "mlock", "mlock2", "mlockall", "mmap", "mmap2",
	"mprotect", "mq_getsetattr", "mq_notify", "mq_open",
	"mq_timedreceive", "mq_timedreceive_time64", "mq_timedsend",
	"mq_timedsend_time64", "mq_unlink", "mremap", "mseal", "msgctl",
	"msgrcv", "msgsnd", "msync", "munlock", "munlockall",
	"munmap", "name_to_handle_at", "nanosleep", "newfstatat",
	"_newselect", "open", "openat", "openat2", "pause", "pidfd_open",
	"pidfd_send_signal", "pipe", "pipe2", "pkey_alloc", "pkey_free",
	"pkey_mprotect", "poll", "ppoll", "ppoll_time64", "prctl", "pread64",
	"preadv", "preadv2", "prlimit64", "process_mrelease", "pselect6",
	"pselect6_time64", "pwrite64", "pwritev", "pwritev2", "read",
	"readahead", "readlink", "readlinkat", "readv", "recv", "recvfrom",
	"recvmmsg", "recvmmsg_time64", "recvmsg", "remap_file_pages",
	"removexattr", "removexattrat", "rename", "renameat", "renameat2",
	"restart_syscall", "riscv_hwprobe", "rmdir", "rseq", "rt_sigaction",
	"rt_sigpending", "rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn",
	"rt_sigsuspend", "rt_sigtimedwait", "rt_sigtimedwait_time64",
	"rt_tgsigqueueinfo", "sched_getaffinity", "sched_getattr",
	"sched_getparam", "sched_get_priority_max", "sched_get_priority_min",
	"sched_getscheduler", "sched_rr_get_interval",
	"sched_rr_get_interval_time64", "sched_setaffinity", "sched_setattr",
	"sched_setparam", "sched_setscheduler", "sched_yield", "seccomp",
	"select", "semctl", "semop", "semtimedop",
	"semtimedop_time64", "send", "sendfile", "sendfile64", "sendmmsg",
	"sendmsg", "sendto", "setfsgid", "setfsgid32", "setfsuid",
	"setfsuid32", "setgid", "setgid32", "setgroups", "setgroups32",
	"setitimer", "setpgid", "setpriority", "setregid", "setregid32",
	"setresgid", "setresgid32", "setresuid", "setresuid32", "setreuid",
	"setreuid32", "setrlimit", "set_robust_list", "setsid", "setsockopt",
	"set_thread_area", "set_tid_address", "setuid", "setuid32",
	"setxattr", "setxattrat", "shmat", "shmctl", "shmdt",
	"shutdown", "sigaltstack", "signalfd", "signalfd4", "sigprocmask",
	"sigreturn", "socketcall", "splice", "stat", "stat64", "statfs",
	"statfs64", "statmount", "statx", "symlink", "symlinkat", "sync",
	"sync_file_range", "syncfs", "sysinfo", "tee", "tgkill", "time",
	"timer_create", "timer_delete", "timer_getoverrun", "timer_gettime",
	"timer_gettime64", "timer_settime", "timer_settime64",
	"timerfd_create", "timerfd_gettime", "timerfd_gettime64",
	"timerfd_settime", "timerfd_settime64", "times", "tkill", "truncate",
	"truncate64", "ugetrlimit", "umask", "uname", "unlink", "unlinkat",
	"uretprobe", "utime", "utimensat", "utimensat_time64", "utimes",
	"vfork", "vmsplice", "wait4", "waitid", "waitpid", "write", "writev",
	"arch_prctl",
};

/* Denied outright in both programs. In A these are added before the
 * allowlist, so a name that is ever listed in both stays denied
 * (libseccomp keeps the first unconditional rule: -EEXIST). ENOSYS where
 * user space must fall back (clone3: seccomp cannot read its struct;
 * the new mount API, CVE-2021-41133); EPERM for everything forbidden. */
static const struct {
	const char	*name;
	int		 err;
} deny_names[] = {
	/* process inspection */
	{ "ptrace", EPERM }, { "process_vm_readv", EPERM },
	{ "process_vm_writev", EPERM }, { "kcmp", EPERM },
	{ "pidfd_getfd", EPERM }, { "process_madvise", EPERM },
	/* kernel attack surface and exploit primitives */
	{ "modify_ldt", EPERM }, { "userfaultfd", EPERM },
	{ "io_uring_setup", EPERM }, { "io_uring_enter", EPERM },
	{ "io_uring_register", EPERM }, { "bpf", EPERM },
	{ "perf_event_open", EPERM }, { "lookup_dcookie", EPERM },
	{ "fanotify_init", EPERM }, { "open_by_handle_at", EPERM },
	{ "uselib", EPERM }, { "ioperm", EPERM }, { "iopl", EPERM },
	/* keyring (not namespaced) */
	{ "add_key", EPERM }, { "keyctl", EPERM }, { "request_key", EPERM },
	/* namespaces and mounts */
	{ "unshare", EPERM }, { "setns", EPERM }, { "mount", EPERM },
	{ "umount", EPERM }, { "umount2", EPERM }, { "pivot_root", EPERM },
	{ "chroot", EPERM },
	/* kernel modules, kexec, reboot, swap */
	{ "init_module", EPERM }, { "finit_module", EPERM },
	{ "delete_module", EPERM }, { "create_module", EPERM },
	{ "kexec_load", EPERM }, { "kexec_file_load", EPERM },
	{ "reboot", EPERM }, { "swapon", EPERM }, { "swapoff", EPERM },
	/* host-global state */
	{ "syslog", EPERM }, { "acct", EPERM }, { "quotactl", EPERM },
	{ "quotactl_fd", EPERM }, { "settimeofday", EPERM },
	{ "clock_settime", EPERM }, { "sethostname", EPERM },
	{ "setdomainname", EPERM }, { "vhangup", EPERM },
	/* NUMA memory policy */
	{ "move_pages", EPERM }, { "mbind", EPERM },
	{ "get_mempolicy", EPERM }, { "set_mempolicy", EPERM },
	{ "set_mempolicy_home_node", EPERM }, { "migrate_pages", EPERM },
	/* Memory no rlimit counts and no tmpfs cap bounds: without a
	 * cgroup, a memfd (closed after mmap) and SysV shared memory,
	 * message queues and semaphore sets (the IPC namespace keeps the
	 * kernel's near-unlimited shmmax/shmall/msgmni/semmns) would hold
	 * gigabytes past --memory. ENOSYS, as on a kernel built without
	 * them: libraries that use them fall back (POSIX shared memory in
	 * the capped /dev/shm stays). */
	{ "memfd_create", ENOSYS }, { "shmget", ENOSYS },
	{ "msgget", ENOSYS }, { "semget", ENOSYS },
	/* fall back to the older call */
	{ "clone3", ENOSYS },
	{ "open_tree", ENOSYS }, { "move_mount", ENOSYS },
	{ "fsopen", ENOSYS }, { "fsconfig", ENOSYS }, { "fsmount", ENOSYS },
	{ "fspick", ENOSYS }, { "mount_setattr", ENOSYS },
};

/* clone(2) flags that create namespaces (Docker's 0x7E020000). */
static const uint64_t clone_ns_flags[] = {
	CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
	CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
};

/* personality(2) values Docker allows: PER_LINUX, UNAME26, PER_LINUX32,
 * UNAME26|PER_LINUX32 and the 0xffffffff query. */
static const uint64_t personality_ok[] = {
	0x0, 0x8, 0x20000, 0x20008, 0xffffffff,
};

/* Adds one rule. -EACCES (the action equals the filter's default) is a
 * no-op and -EEXIST (an unconditional rule for the name exists) means
 * the first rule wins; both count as success. */
static int
filter_add(scmp_filter_ctx ctx, uint32_t action, int nr, unsigned int n,
    const struct scmp_arg_cmp *cmp, const char *what, char **err)
{
	int	rc;

	rc = seccomp_rule_add_array(ctx, action, nr, n, cmp);
	if (rc == 0 || rc == -EACCES || rc == -EEXIST)
		return 0;
	*err = xasprintf("seccomp rule for %s: %s", what, strerror(-rc));
	return -1;
}

/* Resolves a name for the native architecture; -1 when libseccomp does
 * not know it or it is not a native syscall (negative pseudo numbers). */
static int
filter_nr(const char *name)
{
	int	nr;

	nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR || nr < 0)
		return -1;
	return nr;
}

static int
filter_add_cmp(scmp_filter_ctx ctx, uint32_t action, const char *name,
    struct scmp_arg_cmp cmp, char **err)
{
	int	nr;

	if ((nr = filter_nr(name)) < 0)
		return 0;
	return filter_add(ctx, action, nr, 1, &cmp, name, err);
}

static int
filter_add_denylist(scmp_filter_ctx ctx, char **err)
{
	size_t	i;
	int	nr;

	for (i = 0; i < sizeof deny_names / sizeof deny_names[0]; i++) {
		if ((nr = filter_nr(deny_names[i].name)) < 0)
			continue;
		if (filter_add(ctx, SCMP_ACT_ERRNO(deny_names[i].err), nr, 0,
		    NULL, deny_names[i].name, err) == -1)
			return -1;
	}
	return 0;
}

/*
 * Socket families: only AF_UNIX, AF_INET and AF_INET6. libseccomp cannot
 * put two comparisons on one argument in a rule, so "everything else"
 * is written as disjoint single comparisons: 0, each gap value, and
 * above the last allowed family. The comparisons are on all 64 bits, so
 * a family with high garbage bits (which the kernel truncates to int)
 * falls in "above" and is refused. AF_VSOCK (40) is refused: it is not
 * confined by network namespaces.
 */
static int
filter_add_sockets(scmp_filter_ctx ctx, int allow, char **err)
{
	const uint32_t	nope = SCMP_ACT_ERRNO(EAFNOSUPPORT);
	uint64_t	f;

	if (allow) {
		if (filter_add_cmp(ctx, SCMP_ACT_ALLOW, "socket",
		    cmp_arg(0, SCMP_CMP_EQ, AF_UNIX, 0), err) == -1 ||
		    filter_add_cmp(ctx, SCMP_ACT_ALLOW, "socket",
		    cmp_arg(0, SCMP_CMP_EQ, AF_INET, 0), err) == -1 ||
		    filter_add_cmp(ctx, SCMP_ACT_ALLOW, "socket",
		    cmp_arg(0, SCMP_CMP_EQ, AF_INET6, 0), err) == -1 ||
		    filter_add_cmp(ctx, SCMP_ACT_ALLOW, "socketpair",
		    cmp_arg(0, SCMP_CMP_EQ, AF_UNIX, 0), err) == -1)
			return -1;
	}
	if (filter_add_cmp(ctx, nope, "socket",
	    cmp_arg(0, SCMP_CMP_EQ, AF_UNSPEC, 0), err) == -1)
		return -1;
	for (f = AF_INET + 1; f < AF_INET6; f++) {
		if (filter_add_cmp(ctx, nope, "socket",
		    cmp_arg(0, SCMP_CMP_EQ, f, 0), err) == -1)
			return -1;
	}
	if (filter_add_cmp(ctx, nope, "socket",
	    cmp_arg(0, SCMP_CMP_GT, AF_INET6, 0), err) == -1 ||
	    filter_add_cmp(ctx, nope, "socketpair",
	    cmp_arg(0, SCMP_CMP_EQ, AF_UNSPEC, 0), err) == -1 ||
	    filter_add_cmp(ctx, nope, "socketpair",
	    cmp_arg(0, SCMP_CMP_GT, AF_UNIX, 0), err) == -1)
		return -1;
	return 0;
}

/* clone(2) with any namespace flag is EPERM (one rule per flag, since
 * "any of" cannot be one masked compare); A also allows clone when none
 * is set. clone3 is ENOSYS via the deny list. x86_64 order: flags are
 * argument 0 (s390 is not a target). */
static int
filter_add_clone(scmp_filter_ctx ctx, int allow, char **err)
{
	uint64_t	mask = 0;
	size_t		i;

	for (i = 0; i < sizeof clone_ns_flags / sizeof clone_ns_flags[0];
	    i++) {
		mask |= clone_ns_flags[i];
		if (filter_add_cmp(ctx, SCMP_ACT_ERRNO(EPERM), "clone",
		    cmp_arg(0, SCMP_CMP_MASKED_EQ, clone_ns_flags[i], clone_ns_flags[i]), err) == -1)
			return -1;
	}
	if (allow && filter_add_cmp(ctx, SCMP_ACT_ALLOW, "clone",
	    cmp_arg(0, SCMP_CMP_MASKED_EQ, mask, 0), err) == -1)
		return -1;
	return 0;
}

/*
 * personality(2): EPERM for every value but personality_ok. Without
 * "v != a && v != b" in one rule, the forbidden set is covered by
 * disjoint masked compares on pairs of bits, none of which matches an
 * allowed value:
 *   - above 32 bits;
 *   - bit 0 clear and some bit b other than 3 and 17 set (covers every
 *     v < 2^32 with bit 0 clear except 0, 8, 0x20000, 0x20008);
 *   - bit 0 set and some bit c of 1..31 clear (covers every v < 2^32
 *     with bit 0 set except 0xffffffff).
 */
static int
filter_add_personality(scmp_filter_ctx ctx, int allow, char **err)
{
	const uint32_t	eperm = SCMP_ACT_ERRNO(EPERM);
	uint64_t	bit;
	size_t		i;
	int		b;

	if (allow) {
		for (i = 0; i < sizeof personality_ok /
		    sizeof personality_ok[0]; i++) {
			if (filter_add_cmp(ctx, SCMP_ACT_ALLOW, "personality",
			    cmp_arg(0, SCMP_CMP_EQ, personality_ok[i], 0),
			    err) == -1)
				return -1;
		}
	}
	if (filter_add_cmp(ctx, eperm, "personality",
	    cmp_arg(0, SCMP_CMP_GT, 0xffffffffULL, 0), err) == -1)
		return -1;
	for (b = 1; b < 32; b++) {
		bit = 1ULL << b;
		if (b != 3 && b != 17 && filter_add_cmp(ctx, eperm,
		    "personality", cmp_arg(0, SCMP_CMP_MASKED_EQ, bit | 1, bit),
		    err) == -1)
			return -1;
		if (filter_add_cmp(ctx, eperm, "personality",
		    cmp_arg(0, SCMP_CMP_MASKED_EQ, bit | 1, 1), err) == -1)
			return -1;
	}
	return 0;
}

/* TIOCSTI and TIOCLINUX push input into a terminal (CVE-2017-5226,
 * CVE-2023-28100). The command is compared on its low 32 bits only, as
 * the kernel truncates it: TIOCSTI|1<<32 is refused too (CVE-2019-10063).
 * Only in B: next to A's unconditional ioctl rule libseccomp would drop
 * these silently. */
static int
filter_add_ioctl(scmp_filter_ctx ctx, char **err)
{
	if (filter_add_cmp(ctx, SCMP_ACT_ERRNO(EPERM), "ioctl",
	    cmp_arg(1, SCMP_CMP_MASKED_EQ, 0xffffffffULL, TIOCSTI), err) == -1 ||
	    filter_add_cmp(ctx, SCMP_ACT_ERRNO(EPERM), "ioctl",
	    cmp_arg(1, SCMP_CMP_MASKED_EQ, 0xffffffffULL, TIOCLINUX), err) == -1)
		return -1;
	return 0;
}

/* setsockopt(SOL_SOCKET, SO_SNDBUF/SO_RCVBUF and their FORCE forms)
 * returns 0 and does nothing: a socket keeps the default buffer size
 * (net.core.wmem_default, 208 KiB on most systems) instead of growing to
 * wmem_max, which a host may set to megabytes; socket memory is kernel
 * memory no rlimit counts. Success, not an error, so a library that
 * tunes its buffers goes on working. Level and name are compared on
 * their low 32 bits, as the kernel reads them. Only in B: next to A's
 * unconditional setsockopt rule libseccomp would drop them. */
static int
filter_add_sockopt(scmp_filter_ctx ctx, char **err)
{
	static const uint64_t names[] = { SO_SNDBUF, SO_RCVBUF, SO_SNDBUFFORCE,
	    SO_RCVBUFFORCE };
	int nr = filter_nr("setsockopt");

	if (nr < 0)
		return 0;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		struct scmp_arg_cmp c[2] = {
			cmp_arg(1, SCMP_CMP_MASKED_EQ, 0xffffffffULL, SOL_SOCKET),
			cmp_arg(2, SCMP_CMP_MASKED_EQ, 0xffffffffULL, names[i]),
		};
		if (filter_add(ctx, SCMP_ACT_ERRNO(0), nr, 2, c, "setsockopt", err) == -1)
			return -1;
	}
	return 0;
}

/* fcntl(F_SETLEASE) is refused: a lease makes the host's opener of
 * the file wait (lease-break-time, 45 s by default), and through the
 * idmapped mount of a data file (workspace_mount.h) the sandbox's uid
 * is that file's owner, whom the kernel lets take one. Only in B, as
 * above. */
static int
filter_add_lease(scmp_filter_ctx ctx, char **err)
{
	static const char *const names[] = { "fcntl", "fcntl64" };

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (filter_nr(names[i]) < 0)
			continue;
		if (filter_add_cmp(ctx, SCMP_ACT_ERRNO(EPERM), names[i],
		    cmp_arg(1, SCMP_CMP_MASKED_EQ, 0xffffffffULL, F_SETLEASE), err) == -1)
			return -1;
	}
	return 0;
}

static int
filter_add_allowlist(scmp_filter_ctx ctx, char **err)
{
	size_t	i;
	int	nr;

	for (i = 0; i < sizeof allow_names / sizeof allow_names[0]; i++) {
		if ((nr = filter_nr(allow_names[i])) < 0)
			continue;
		if (filter_add(ctx, SCMP_ACT_ALLOW, nr, 0, NULL,
		    allow_names[i], err) == -1)
			return -1;
	}
	return 0;
}

/* Returns a new libseccomp context for kind, or NULL with *err set. */
static scmp_filter_ctx
filter_ctx(enum sandbox_filter_kind kind, char **err)
{
	scmp_filter_ctx	ctx;
	int		allow = kind == SANDBOX_FILTER_ALLOW;
	int		rc;

	ctx = seccomp_init(allow ? SCMP_ACT_ERRNO(ENOSYS) : SCMP_ACT_ALLOW);
	if (ctx == NULL) {
		*err = xstrdup("seccomp_init failed");
		return NULL;
	}
	/* A foreign ABI (i386 int 0x80, x32) would bypass every rule. */
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH,
	    SCMP_ACT_KILL_PROCESS);
	if (rc != 0) {
		*err = xasprintf("seccomp bad-arch action: %s", strerror(-rc));
		goto fail;
	}
	/* A binary tree instead of ~300 linear compares per syscall; older
	 * libseccomp lacks the attribute, which only costs speed. */
	(void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (filter_add_denylist(ctx, err) == -1 ||
	    filter_add_sockets(ctx, allow, err) == -1 ||
	    filter_add_clone(ctx, allow, err) == -1 ||
	    filter_add_personality(ctx, allow, err) == -1)
		goto fail;
	if (allow) {
		if (filter_add_allowlist(ctx, err) == -1)
			goto fail;
	} else if (filter_add_ioctl(ctx, err) == -1 ||
	    filter_add_sockopt(ctx, err) == -1 || filter_add_lease(ctx, err) == -1)
		goto fail;
	return ctx;
fail:
	seccomp_release(ctx);
	return NULL;
}

/* Seals fd (written, at offset 0 after this) so that nothing that later
 * shares it can alter the policy before bwrap reads it. */
static int
seal(int fd, char **err)
{
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
	    F_SEAL_WRITE | F_SEAL_SEAL) == -1 ||
	    lseek(fd, 0, SEEK_SET) == -1) {
		*err = xasprintf("sealing the seccomp memfd: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* Exports kind into a new sealed memfd at offset 0; -1 with *err. */
static int
filter_memfd(enum sandbox_filter_kind kind, char **err)
{
	scmp_filter_ctx	ctx;
	int		fd, rc;

	if ((ctx = filter_ctx(kind, err)) == NULL)
		return -1;
	fd = memfd_create(kind == SANDBOX_FILTER_ALLOW ? "terp-seccomp-a" :
	    "terp-seccomp-b", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd == -1) {
		*err = xasprintf("memfd_create: %s", strerror(errno));
		seccomp_release(ctx);
		return -1;
	}
	rc = seccomp_export_bpf(ctx, fd);
	seccomp_release(ctx);
	if (rc != 0) {
		*err = xasprintf("seccomp_export_bpf: %s", strerror(-rc));
		close(fd);
		return -1;
	}
	return seal(fd, err);
}

int
sandbox_filter_builtin(enum sandbox_filter_kind kind, const unsigned char **bpf,
    size_t *len)
{
#if defined(SECCOMP_BUILT_VERSION) && SECCOMP_BUILT_VERSION > 0
	const struct scmp_version *v = seccomp_version();

	/* Another libseccomp, or a kernel with other seccomp features,
	 * may build other programs: then they are built here. */
	if (v == NULL || v->major * 10000u + v->minor * 100u + v->micro != SECCOMP_BUILT_VERSION ||
	    seccomp_api_get() != SECCOMP_BUILT_API)
		return -1;
	*bpf = kind == SANDBOX_FILTER_ALLOW ? seccomp_built_a : seccomp_built_b;
	*len = kind == SANDBOX_FILTER_ALLOW ? sizeof seccomp_built_a : sizeof seccomp_built_b;
	return 0;
#else
	(void)kind;
	(void)bpf;
	(void)len;
	return -1;
#endif
}

/* The built-in program of kind in a new sealed memfd, or -1 (*err set
 * only when a memfd could not be made). */
static int
builtin_memfd(enum sandbox_filter_kind kind, char **err)
{
	const unsigned char *bpf;
	size_t len;
	int fd;

	if (sandbox_filter_builtin(kind, &bpf, &len) < 0)
		return -1;
	fd = memfd_create(kind == SANDBOX_FILTER_ALLOW ? "terp-seccomp-a" :
	    "terp-seccomp-b", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd == -1) {
		*err = xasprintf("memfd_create: %s", strerror(errno));
		return -1;
	}
	if (write_all(fd, bpf, len) < 0) {
		*err = xasprintf("writing the seccomp memfd: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return seal(fd, err);
}

/* The built-in program when it is usable, else one built now. */
static int
program_memfd(enum sandbox_filter_kind kind, char **err)
{
	int fd;

	*err = NULL;
	if ((fd = builtin_memfd(kind, err)) >= 0 || *err != NULL)
		return fd;
	return filter_memfd(kind, err);
}

int
sandbox_filter_build(int *fd_a, int *fd_b, char **err)
{
	int	a, b;

	if ((a = program_memfd(SANDBOX_FILTER_ALLOW, err)) == -1)
		return -1;
	if ((b = program_memfd(SANDBOX_FILTER_DENY, err)) == -1) {
		close(a);
		return -1;
	}
	*fd_a = a;
	*fd_b = b;
	return 0;
}

int
sandbox_filter_bpf(enum sandbox_filter_kind kind, unsigned char **bpf, size_t *len,
    char **err)
{
	unsigned char	*p;
	size_t		 have = 0;
	ssize_t		 n;
	int		 fd;

	if ((fd = filter_memfd(kind, err)) == -1)
		return -1;
	p = xmalloc(FILTER_MAX_BYTES + 1);
	for (;;) {
		n = read(fd, p + have, FILTER_MAX_BYTES + 1 - have);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
		if (have > FILTER_MAX_BYTES)
			break;
	}
	close(fd);
	if (n == -1 || have == 0 || have > FILTER_MAX_BYTES ||
	    have % sizeof(struct sock_filter) != 0) {
		*err = n == -1 ? xasprintf("reading the seccomp program: %s",
		    strerror(errno)) : xasprintf("seccomp program has a bad "
		    "size (%zu bytes)", have);
		free(p);
		return -1;
	}
	*bpf = p;
	*len = have;
	return 0;
}

int
sandbox_filter_load_bpf(const unsigned char *bpf, size_t len)
{
	struct sock_fprog	prog;

	if (len == 0 || len % sizeof(struct sock_filter) != 0 ||
	    len / sizeof(struct sock_filter) > 0xffff) {
		errno = EINVAL;
		return -1;
	}
	prog.len = (unsigned short)(len / sizeof(struct sock_filter));
	prog.filter = (struct sock_filter *)(uintptr_t)bpf;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

int
sandbox_filter_apply_self(char **err)
{
	unsigned char	*a, *b;
	size_t		 alen, blen;
	int		 rc = -1;

	if (sandbox_filter_bpf(SANDBOX_FILTER_ALLOW, &a, &alen, err) == -1)
		return -1;
	if (sandbox_filter_bpf(SANDBOX_FILTER_DENY, &b, &blen, err) == -1) {
		free(a);
		return -1;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		*err = xasprintf("PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
	else if (sandbox_filter_load_bpf(a, alen) == -1)
		*err = xasprintf("installing seccomp filter A: %s",
		    strerror(errno));
	else if (sandbox_filter_load_bpf(b, blen) == -1)
		*err = xasprintf("installing seccomp filter B: %s",
		    strerror(errno));
	else
		rc = 0;
	free(a);
	free(b);
	return rc;
}
