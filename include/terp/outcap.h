/* outcap: a bounded capture of a stream that keeps its head and its
 * tail and counts what fell in between. A cell that prints 2 GB costs
 * head+tail bytes of memory, and the reader still sees how it started
 * and how it ended. Pure: no I/O. */
#ifndef TERP_OUTCAP_H
#define TERP_OUTCAP_H

#include <stddef.h>
#include <stdint.h>

struct outcap {
	char	*head;		/* first head_max bytes */
	size_t	 head_len, head_max;
	size_t	 head_cap;	/* what head holds: grows up to head_max */
	char	*tail;		/* ring of the last tail_max bytes after head */
	size_t	 tail_max, tail_start, tail_len;
	uint64_t total;		/* every byte ever appended */
};

void outcap_init(struct outcap *c, size_t head_max, size_t tail_max);
void outcap_free(struct outcap *c);
void outcap_add(struct outcap *c, const char *p, size_t n);
/* Bytes appended but not kept. */
uint64_t outcap_dropped(const struct outcap *c);
/* Renders head, a marker line naming the dropped byte count when
 * anything was dropped, then tail. Returns a new string the caller
 * frees; *len gets its length when not NULL. */
char *outcap_render(const struct outcap *c, size_t *len);

/* For streaming a capture to a consumer without ever passing the head:
 * of the chunk of n bytes just added, how many leading bytes fell
 * within the head (0 once the head is full). */
size_t outcap_head_part(const struct outcap *c, size_t n);
/* What a streaming consumer has not seen when the stream ends: the
 * dropped-bytes marker and the tail, as a new string; NULL when the
 * head held everything. */
char *outcap_rest(const struct outcap *c, size_t *len);

/* Truncates text to at most limit bytes keeping head and tail, with a
 * line saying how much was cut; cuts only on UTF-8 boundaries. Returns a
 * new string. Used for what goes to the model. */
char *text_truncate(const char *s, size_t len, size_t limit);
/* The same for a text from which dropped bytes were already left out
 * (an outcap's, of total bytes in all): the line counts them among the
 * bytes cut and says that they are nowhere, not "in the notebook". */
char *text_truncate_of(const char *s, size_t len, size_t limit,
    uint64_t dropped, uint64_t total);

#endif
