/* sandbox_tree: the sandbox's processes through /proc (see
 * sandbox_tree.h). comm fields may hold anything the sandbox chose
 * (spaces, parens): they are parsed from the last ')'. */
#include "terp/sandbox_tree.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "terp/util.h"

/* Reads a small /proc file into buf (NUL-terminated); -1 when absent. */
static ssize_t
proc_read(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/* The state letter and the parent of pid from /proc/pid/stat; 0 when
 * it is gone. comm may hold spaces and parens: parse after the last ')'. */
static char
proc_state(pid_t pid, pid_t *ppid)
{
	char path[64], buf[512], *rp, st = 0;
	int pp = 0;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (proc_read(path, buf, sizeof buf) <= 0 || (rp = strrchr(buf, ')')) == NULL ||
	    sscanf(rp + 1, " %c %d", &st, &pp) != 2)
		return 0;
	if (ppid)
		*ppid = (pid_t)pp;
	return st;
}

/* Appends the numbers of a space-separated list to out. */
static int
add_pids(const char *text, pid_t *out, int n, int max)
{
	while (*text && n < max) {
		char *end;
		long v = strtol(text, &end, 10);
		if (end == text)
			break;
		if (v > 0)
			out[n++] = (pid_t)v;
		text = end;
	}
	return n;
}

/* Reads /proc/pid/task/T/children; without CONFIG_PROC_CHILDREN,
 * scans /proc for processes whose parent is pid. */
int
sandbox_tree_children(pid_t pid, pid_t *out, int max)
{
	char path[64], buf[4096], dents[4096];
	int n = 0, dfd, found_file = 0;
	long got;

	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	if ((dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return 0;
	while ((got = syscall(SYS_getdents64, dfd, dents, sizeof dents)) > 0) {
		for (long off = 0; off < got; ) {
			struct { uint64_t ino; int64_t off; unsigned short reclen;
			    unsigned char type; char name[]; } *d = (void *)(dents + off);
			off += d->reclen;
			if (d->name[0] < '0' || d->name[0] > '9')
				continue;
			snprintf(path, sizeof path, "/proc/%d/task/%.16s/children",
			    (int)pid, d->name);
			if (proc_read(path, buf, sizeof buf) < 0)
				continue;
			found_file = 1;
			n = add_pids(buf, out, n, max);
		}
	}
	close(dfd);
	if (found_file)
		return n;
	/* No children files: every process whose parent is pid. */
	if ((dfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return n;
	while ((got = syscall(SYS_getdents64, dfd, dents, sizeof dents)) > 0) {
		for (long off = 0; off < got && n < max; ) {
			struct { uint64_t ino; int64_t off; unsigned short reclen;
			    unsigned char type; char name[]; } *d = (void *)(dents + off);
			pid_t pp = 0, c;
			off += d->reclen;
			if (d->name[0] < '1' || d->name[0] > '9')
				continue;
			c = (pid_t)atoi(d->name);
			if (proc_state(c, &pp) != 0 && pp == pid)
				out[n++] = c;
		}
	}
	close(dfd);
	return n;
}

int
sandbox_tree_list(pid_t root, pid_t *out, int max)
{
	int n = 0;

	if (max <= 0 || root <= 0)
		return 0;
	out[n++] = root;
	/* Breadth first over the list itself. */
	for (int i = 0; i < n && n < max; i++)
		n = sandbox_tree_children(out[i], out + n, max - n) + n;
	return n;
}

pid_t
sandbox_tree_python(pid_t init)
{
	pid_t kids[4];

	/* bwrap's init has one child, the command. */
	if (init <= 0 || sandbox_tree_children(init, kids, 4) < 1)
		return -1;
	return kids[0];
}

void
sandbox_tree_pin_only_child(struct sandbox_pinned *p, pid_t parent)
{
	pid_t kids[4];

	sandbox_tree_unpin(p);
	if (parent <= 0 || sandbox_tree_children(parent, kids, 4) != 1)
		return;
	p->pidfd = (int)syscall(SYS_pidfd_open, kids[0], 0);
	if (p->pidfd >= 0)
		p->pid = kids[0];
}

int
sandbox_tree_pinned_alive(const struct sandbox_pinned *p)
{
	struct pollfd pf = { .fd = p->pidfd, .events = POLLIN };

	return p->pid > 0 && p->pidfd >= 0 && poll(&pf, 1, 0) == 0;
}

void
sandbox_tree_unpin(struct sandbox_pinned *p)
{
	if (p->pidfd >= 0)
		close(p->pidfd);
	p->pidfd = -1;
	p->pid = 0;
}

int
sandbox_tree_kill_strays(pid_t init, const pid_t *keep, int nkeep, int wait_ms)
{
	enum { MAX = 1024 };
	pid_t *all = xmalloc(MAX * sizeof *all);
	int *pfds = xmalloc(MAX * sizeof *pfds);
	int killed = 0, npfd = 0;
	int64_t end;

	if (init <= 0) {
		free(all);
		free(pfds);
		return 0;
	}
	/* Repeat: a process may fork between our look and our kill; its
	 * child then shows up (under it, or under init) in the next pass. */
	for (int pass = 0; pass < 64; pass++) {
		int n = sandbox_tree_list(init, all, MAX), found = 0;
		for (int i = 1; i < n; i++) {
			pid_t pp = 0, want = 0;
			int pfd, kept = 0;
			char st;

			for (int k = 0; k < nkeep; k++)
				kept |= keep[k] > 0 && all[i] == keep[k];
			if (kept)
				continue;
			/* Pin it, then check it is still the process we saw (a
			 * live child of a sandbox process): no signal to a pid
			 * that was recycled meanwhile. */
			if ((pfd = (int)syscall(SYS_pidfd_open, all[i], 0)) < 0)
				continue;
			st = proc_state(all[i], &pp);
			for (int j = 0; j < i; j++)
				if (all[j] == pp)
					want = pp;
			if (st == 0 || st == 'Z' || want == 0 ||
			    syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0) < 0) {
				close(pfd);
				continue;
			}
			found++;
			killed++;
			if (npfd < MAX)
				pfds[npfd++] = pfd;
			else
				close(pfd);
		}
		if (found == 0)
			break;
	}
	/* Wait for them to be gone, so the next cell does not see them. */
	end = now_ms() + wait_ms;
	for (int i = 0; i < npfd; i++) {
		struct pollfd pf = { .fd = pfds[i], .events = POLLIN };
		int left = (int)(end - now_ms());
		poll(&pf, 1, left > 0 ? left : 0);
		close(pfds[i]);
	}
	free(all);
	free(pfds);
	return killed;
}


void
sandbox_tree_known_init(struct sandbox_tree_known *q)
{
	q->n = 0;
	for (int i = 0; i < SANDBOX_TREE_KNOWN; i++) {
		q->pid[i] = 0;
		q->task_fd[i] = q->kids_fd[i] = -1;
	}
}

void
sandbox_tree_known_reset(struct sandbox_tree_known *q)
{
	for (int i = 0; i < q->n; i++) {
		if (q->task_fd[i] >= 0)
			close(q->task_fd[i]);
		if (q->kids_fd[i] >= 0)
			close(q->kids_fd[i]);
	}
	sandbox_tree_known_init(q);
}

/* Opens the handles of want[0..n) unless they are open already. */
static int
known_open(struct sandbox_tree_known *q, const pid_t *want, int n)
{
	char path[80];

	if (q->n == n && memcmp(q->pid, want, (size_t)n * sizeof *want) == 0)
		return 0;
	sandbox_tree_known_reset(q);
	for (int i = 0; i < n; i++) {
		q->pid[i] = want[i];
		q->n = i + 1;
		snprintf(path, sizeof path, "/proc/%d/task", (int)want[i]);
		q->task_fd[i] = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)want[i],
		    (int)want[i]);
		q->kids_fd[i] = open(path, O_RDONLY | O_CLOEXEC);
		if (q->task_fd[i] < 0 || q->kids_fd[i] < 0) {
			sandbox_tree_known_reset(q);
			return -1;
		}
	}
	return 0;
}

int
sandbox_tree_quiet(struct sandbox_tree_known *q, pid_t root, const pid_t *keep, int nkeep)
{
	pid_t want[SANDBOX_TREE_KNOWN];
	int n = 0, kids = 0;

	if (root <= 0)
		return 0;
	want[n++] = root;
	for (int i = 0; i < nkeep; i++) {
		int dup = keep[i] <= 0;
		for (int j = 0; j < n && !dup; j++)
			dup = want[j] == keep[i];
		if (dup)
			continue;
		if (n == SANDBOX_TREE_KNOWN)
			return 0;
		want[n++] = keep[i];
	}
	if (known_open(q, want, n) < 0)
		return 0;
	for (int i = 0; i < n; i++) {
		struct stat st;
		char buf[512];
		ssize_t got;
		const char *p = buf;

		/* one thread: its main thread's children are all its
		 * children (a dead process has 2 links, no thread) */
		if (fstat(q->task_fd[i], &st) < 0 || st.st_nlink != 3)
			return 0;
		got = pread(q->kids_fd[i], buf, sizeof buf - 1, 0);
		if (got < 0 || (size_t)got >= sizeof buf - 1)
			return 0;
		buf[got] = '\0';
		for (;;) {
			char *end;
			long v = strtol(p, &end, 10);
			int known = 0;
			if (end == p)
				break;
			p = end;
			for (int j = 1; j < n; j++)
				known |= v == want[j];
			if (!known)
				return 0;
			kids++;
		}
	}
	/* each known one (but root) the child of another: nothing else */
	return kids == n - 1;
}
