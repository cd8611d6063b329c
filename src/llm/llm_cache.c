/* llm_cache: the messages' encodings kept between requests, reused
 * while a message compares equal to its snapshot (llm_cache.h). */
#include "terp/llm_cache.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/util.h"

#define ENC_MAX	((size_t)1 << 31)
/* how far from the tail a vouched sync looks for the last trusted
 * message (the messages added since one request) */
#define RESUME_LOOK	256

struct entry {
	size_t	 snap_end;	/* its snapshot (snap_put) ends here in snaps */
	size_t	 end;		/* its bytes end here in enc */
	uint64_t born;		/* the generation (sync) it was added in */
	/* the message it was encoded from: only followed under a vouch
	 * (whose promise is that the leading messages are the same
	 * nodes), never compared */
	const cJSON *msg;
};

struct llm_cache {
	int		 key;
	uint64_t	 gen;	/* syncs so far */
	uint64_t	 stamp;	/* the last sync's (llm_cache_vouch), 0: none */
	struct entry	*e;
	int		 n, cap;
	struct buf	 enc;	/* every entry's bytes, one after the other */
	/* every entry's snapshot, one after the other: one buffer, not a
	 * growing allocation per message (a resumed session's first
	 * request snapshots thousands of them at once) */
	struct buf	 snaps;
};

struct llm_cache *
llm_cache_new(void)
{
	struct llm_cache *c = xcalloc(1, sizeof *c);

	buf_init(&c->enc, ENC_MAX);
	buf_init(&c->snaps, ENC_MAX);
	(void)buf_add(&c->snaps, "", 0);	/* never NULL: entries point in */
	return c;
}

static void
drop(struct llm_cache *c, int from)
{
	c->n = from;
	c->enc.len = from > 0 ? c->e[from - 1].end : 0;
	if (c->enc.data != NULL)
		c->enc.data[c->enc.len] = '\0';
	c->snaps.len = from > 0 ? c->e[from - 1].snap_end : 0;
}

void
llm_cache_free(struct llm_cache *c)
{
	if (c == NULL)
		return;
	drop(c, 0);
	free(c->e);
	buf_free(&c->enc);
	buf_free(&c->snaps);
	free(c);
}

/* The snapshot of a JSON value's children: per child its key, its
 * type, its value (a string's bytes, a number's, or the children of
 * an array or object), so two equal snapshots encode alike. Strings
 * go with their length first, so comparing needs no strlen. */
static void
snap_str(struct buf *s, const char *v)
{
	size_t n = strlen(v);

	buf_add(s, &n, sizeof n);
	buf_add(s, v, n);
}

static void
snap_put(struct buf *s, const cJSON *o)
{
	const cJSON *c;

	for (c = o->child; c != NULL; c = c->next) {
		snap_str(s, c->string ? c->string : "");
		buf_addc(s, (char)(c->type & 0xff));
		if (cJSON_IsString(c) && c->valuestring != NULL)
			snap_str(s, c->valuestring);
		else if (cJSON_IsNumber(c))
			buf_add(s, &c->valuedouble, sizeof c->valuedouble);
		else if (cJSON_IsArray(c) || cJSON_IsObject(c))
			snap_put(s, c);
		buf_addc(s, '\1');
	}
}

/* Whether the string v is the one at *p (moved past it). strncmp stops
 * at v's end, so a shorter v is never read past. */
static int
snap_str_same(const char **p, const char *end, const char *v)
{
	size_t n;

	if ((size_t)(end - *p) < sizeof n)
		return 0;
	memcpy(&n, *p, sizeof n);
	if ((size_t)(end - *p) - sizeof n < n || strncmp(*p + sizeof n, v, n) != 0 ||
	    v[n] != '\0')
		return 0;
	*p += sizeof n + n;
	return 1;
}

/* Whether o's children match the snapshot at *p (up to end); moves *p
 * past what matched. */
static int
snap_same(const char **p, const char *end, const cJSON *o)
{
	const cJSON *c;

	for (c = o->child; c != NULL; c = c->next) {
		if (!snap_str_same(p, end, c->string ? c->string : "") ||
		    *p == end || (unsigned char)**p != (unsigned char)(c->type & 0xff))
			return 0;
		(*p)++;
		if (cJSON_IsString(c) && c->valuestring != NULL) {
			if (!snap_str_same(p, end, c->valuestring))
				return 0;
		} else if (cJSON_IsNumber(c)) {
			if ((size_t)(end - *p) < sizeof c->valuedouble ||
			    memcmp(*p, &c->valuedouble, sizeof c->valuedouble) != 0)
				return 0;
			*p += sizeof c->valuedouble;
		} else if ((cJSON_IsArray(c) || cJSON_IsObject(c)) &&
		    !snap_same(p, end, c)) {
			return 0;
		}
		if (*p == end || **p != '\1')
			return 0;
		(*p)++;
	}
	return 1;
}

/* The promise for the next sync (one request at a time, from the
 * loop's thread). */
static uint64_t vouched;

void
llm_cache_vouch(uint64_t stamp)
{
	vouched = stamp;
}

int
llm_cache_sync(struct llm_cache *c, int key, const cJSON *messages,
    const cJSON **next)
{
	const cJSON *m = messages ? messages->child : NULL;
	uint64_t stamp = vouched;
	int i = 0, trusted = 0;

	vouched = 0;
	c->gen++;
	if (c->key != key)
		drop(c, 0);
	else if (stamp != 0 && stamp == c->stamp)
		trusted = c->n - 1;	/* the last one is compared still */
	c->key = key;
	c->stamp = stamp;
	/* Under the promise the trusted messages are not walked from the
	 * list's head (a pointer chase per message: most of a request's
	 * cost in a long session): the last of them is looked for from the
	 * list's tail (cJSON's head->prev), past the few messages added
	 * since. Its node is only compared, never read, until found in the
	 * list: a promise broken by a shorter list (a message freed) falls
	 * back to the walk from the head. */
	if (trusted > 0 && m != NULL) {
		const cJSON *t = m->prev;
		for (int k = 0; k < RESUME_LOOK && t != NULL; k++) {
			if (t == c->e[trusted - 1].msg) {
				m = t->next;
				i = trusted;
				break;
			}
			if (t == messages->child)
				break;
			t = t->prev;
		}
	}
	for (; m != NULL && i < trusted; m = m->next)
		i++;
	for (; m != NULL && i < c->n; m = m->next, i++) {
		const char *p = c->snaps.data + (i > 0 ? c->e[i - 1].snap_end : 0);
		const char *end = c->snaps.data + c->e[i].snap_end;
		if (!snap_same(&p, end, m) || p != end)
			break;
	}
	drop(c, i);
	*next = m;
	return i;
}

void
llm_cache_add(struct llm_cache *c, const cJSON *m, const void *p, size_t n)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 64;
		c->e = xrealloc(c->e, (size_t)c->cap * sizeof *c->e);
	}
	snap_put(&c->snaps, m);
	if (buf_add(&c->enc, p, n) < 0)
		fatal("out of memory (request body)");
	c->e[c->n].snap_end = c->snaps.len;
	c->e[c->n].end = c->enc.len;
	c->e[c->n].msg = m;
	c->e[c->n].born = c->gen;
	c->n++;
}

uint64_t
llm_cache_gen(const struct llm_cache *c)
{
	return c->gen;
}

int
llm_cache_count(const struct llm_cache *c)
{
	return c->n;
}

size_t
llm_cache_same(const struct llm_cache *c, uint64_t gen, int n)
{
	int lo = 0, hi = n < c->n ? n : c->n;

	/* entries are born in order (a sync drops a tail, adds append):
	 * the first one born after gen, by bisection */
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (c->e[mid].born <= gen)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 ? c->e[lo - 1].end : 0;
}

const char *
llm_cache_get(const struct llm_cache *c, int i, size_t *n)
{
	size_t from;

	if (i < 0 || i >= c->n)
		return NULL;
	from = i > 0 ? c->e[i - 1].end : 0;
	*n = c->e[i].end - from;
	return c->enc.data + from;
}

const char *
llm_cache_all(const struct llm_cache *c, size_t *n)
{
	*n = c->enc.len;
	return c->enc.data != NULL ? c->enc.data : "";
}

/* The one kept body (one request at a time, from the loop's thread)
 * and what it holds (malloc_usable_size: a body given back may be
 * another's storage than the one taken, add_effort's say). */
static char	*spare;
static uint64_t	 spare_tag;

char *
llm_cache_body_take_tagged(size_t n, size_t *cap, uint64_t *tag)
{
	char *p = spare;

	*tag = spare_tag;
	spare = NULL;
	spare_tag = 0;
	/* realloc keeps the bytes: the tag still says what they are */
	if (p == NULL || malloc_usable_size(p) < n + 1)
		p = xrealloc(p, n + 1);
	*cap = malloc_usable_size(p);
	return p;
}

void
llm_cache_body_give_tagged(char *p, uint64_t tag)
{
	free(spare);
	spare = p;
	spare_tag = p != NULL ? tag : 0;
}

char *
llm_cache_body_take(size_t n, size_t *cap)
{
	uint64_t tag;

	return llm_cache_body_take_tagged(n, cap, &tag);
}

void
llm_cache_body_give(char *p)
{
	llm_cache_body_give_tagged(p, 0);
}
