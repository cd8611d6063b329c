/* llm_cache: a codec's encoding of each message of a conversation, kept
 * from one request to the next. A conversation only grows between two
 * requests, so a codec encodes each message once and reuses its bytes
 * while it stays the same: a turn encodes what is new and copies the
 * rest. Whether a message stays the same is not taken from its address
 * (an edited, compacted, or freed and reallocated message may sit
 * where the old one was): each entry keeps a snapshot of what it was
 * encoded from, its keys and values in order, compared (byte compares,
 * no escaping) before its bytes are reused, unless the caller vouched
 * for them (llm_cache_vouch). */
#ifndef TERP_LLM_CACHE_H
#define TERP_LLM_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

struct llm_cache;

/* A new empty cache (the caller frees it with llm_cache_free). */
struct llm_cache *llm_cache_new(void);
void llm_cache_free(struct llm_cache *c);
/* Begins a request: keeps the entries of the leading messages of the
 * array that compare equal to their snapshots (all of them only when
 * key, what the encoding depends on besides the message, is the one of
 * the last call) and drops the others. Returns how many were kept: the
 * caller encodes messages from there on, in order, with llm_cache_add:
 * the first of them in *next (NULL: none), found on the way (indexing
 * the list would walk it again from its head). */
int llm_cache_sync(struct llm_cache *c, int key, const cJSON *messages,
    const cJSON **next);
/* A promise for the next llm_cache_sync (of any cache; it is used up
 * there): two syncs with the same nonzero stamp are given arrays whose
 * leading messages, as many as the earlier one had, are unchanged (the
 * conversation only grew). The sync then compares only the last of
 * them (a message completed in place) and the new ones, not the whole
 * conversation. The caller's stamp changes with every change to a
 * message already sent (an edit, a compaction, a repair); 0: none. */
void llm_cache_vouch(uint64_t stamp);
/* Adds the next entry: message m encoded as p (n bytes, copied). */
void llm_cache_add(struct llm_cache *c, const cJSON *m, const void *p, size_t n);
/* Entry i's bytes (owned by the cache, valid until the next sync or
 * add), or NULL. */
const char *llm_cache_get(const struct llm_cache *c, int i, size_t *n);
/* All entries' bytes, one after the other (owned by the cache). */
const char *llm_cache_all(const struct llm_cache *c, size_t *n);
/* The generation of the last sync (each sync is a new one), and how
 * many entries the cache holds. */
uint64_t llm_cache_gen(const struct llm_cache *c);
int llm_cache_count(const struct llm_cache *c);
/* How many leading bytes of all entries' (llm_cache_all) are the same
 * as they were when generation gen ended, within the first n entries
 * of then: the entries added in gen or before and kept by every sync
 * since. What lets a body built then be compared, or built over,
 * without reading it. */
size_t llm_cache_same(const struct llm_cache *c, uint64_t gen, int n);

/* Request bodies' storage, kept from one request to the next: a body
 * holds the whole conversation, and a fresh allocation of it each turn
 * costs a page fault per 4 KiB (or leaves a hole in the heap that the
 * next, longer body does not fit). take: storage for at least n bytes
 * and a NUL, the last given back's when there is one (the caller owns
 * it, and frees it with free() or gives it back); give: takes p (a
 * malloc'd pointer, or NULL) back, keeping one. */
char *llm_cache_body_take(size_t n, size_t *cap);
void llm_cache_body_give(char *p);
/* The same with a tag for what the storage holds: whoever built a body
 * there names it (nonzero), and gets the name back with the storage;
 * 0: bytes nobody vouches for. A tag is given only with storage nobody
 * wrote into since that body was built there (llm_wire_free, the
 * notebook's kept bodies). */
char *llm_cache_body_take_tagged(size_t n, size_t *cap, uint64_t *tag);
void llm_cache_body_give_tagged(char *p, uint64_t tag);

#endif
