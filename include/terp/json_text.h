/* json_text: a cJSON tree written as JSON text into a buf, byte for byte
 * what cJSON_PrintUnformatted prints, without its costs on the hot
 * paths (the journal's lines, the --json events): no intermediate
 * string sized twice, integers without printf and sscanf. */
#ifndef TERP_JSON_TEXT_H
#define TERP_JSON_TEXT_H

#include <cjson/cJSON.h>

#include "terp/buf.h"

/* Appends v as JSON text to b. Returns 0, or -1 when b's maximum would
 * be passed (b holds part of it then). */
int json_text(struct buf *b, const cJSON *v);

/* Appends s as a JSON string, escaped as cJSON escapes it (", \ and the
 * C0 controls; UTF-8 as it is); NULL as "". Returns 0, or -1 as
 * json_text does. */
int json_text_str(struct buf *b, const char *s);

/* Links item into array before the item at index at (0 <= at <= the
 * length; at the length it is appended); array owns item then. Not
 * cJSON_InsertItemInArray: Debian 12's libcjson 1.7.15 returns false and
 * inserts nothing at every place but the first and the end. */
void json_array_insert(cJSON *array, int at, cJSON *item);

/* Reading members: one family for every module that reads JSON it did
 * not write (replies, frames, journals). Each takes NULL or a non-object
 * for o and answers as for a missing member; the pointers returned are
 * o's (valid while o lives). */

/* Member k of o, whatever its type, or NULL. */
const cJSON *json_get(const cJSON *o, const char *k);

/* Member k when it is a string, else NULL. */
const char *json_str(const cJSON *o, const char *k);

/* Member k when it is an object, else NULL. */
const cJSON *json_obj(const cJSON *o, const char *k);

/* Member k when it is an array, else NULL. */
const cJSON *json_arr(const cJSON *o, const char *k);

/* Member k when it is a number: 0 and *out set, else -1 (*out as it
 * was). */
int json_num(const cJSON *o, const char *k, double *out);

/* Member k when it is a number in [lo, hi], else dflt. */
double json_num_in(const cJSON *o, const char *k, double lo, double hi,
    double dflt);

#endif
