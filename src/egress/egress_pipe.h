/* egress_pipe: one direction of a tunnel. Bytes are spliced socket ->
 * pipe -> socket and never copied through user space (on loopback that
 * about doubled the throughput of a copying relay). Private to
 * src/egress; every descriptor spliced is one the proxy made itself
 * (see CLIENT_RECV in egress.c), so its O_NONBLOCK holds. */
#ifndef TERP_EGRESS_PIPE_H
#define TERP_EGRESS_PIPE_H

#include <stddef.h>
#include <sys/types.h>

#define EGRESS_PIPE_SIZE	(256 * 1024)	/* asked for, per direction */
#define EGRESS_PIPE_WAIT	(-2)		/* nothing moves now */

/* len counts what is in the pipe; full is set when the pipe took less
 * than len suggests it could (its capacity is in pages, and small
 * segments take a page each). pr, pw: -1 while closed. */
struct egress_pipe {
	int	 pr, pw;
	size_t	 len, cap;
	int	 full;
};

/* Opens the pipe (a no-op when open). 0, or -1 out of descriptors. */
int egress_pipe_open(struct egress_pipe *p);
void egress_pipe_close(struct egress_pipe *p);
/* Queues our own bytes (a head, early data, the 200 line) into an empty
 * pipe: they are small, and the pipe holds at least 16 pages. 0 or -1. */
int egress_pipe_add(struct egress_pipe *p, const void *b, size_t n);
/* Splices at most want bytes from socket fd into the pipe, counted in
 * len. Returns the bytes moved, 0 at end of file, EGRESS_PIPE_WAIT when
 * nothing moves now, or -1 on an error. */
ssize_t egress_pipe_in(struct egress_pipe *p, int fd, size_t want);
/* Splices what the pipe holds into socket fd. Returns the bytes moved,
 * EGRESS_PIPE_WAIT (also when empty), or -1 on an error. splice(2) has
 * no MSG_NOSIGNAL: a peer gone gives EPIPE and SIGPIPE, which
 * egress_new makes sure is ignored. */
ssize_t egress_pipe_out(struct egress_pipe *p, int fd);

#endif
