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

#endif
