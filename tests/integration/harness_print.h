/* harness_print: the JSON lines the backend harnesses (aca_harness,
 * jupyter_harness, egress_harness) print on stdout, one object a line,
 * flushed at once so a test reading the pipe sees each event as it
 * happens. The kernel callbacks are printed here once, for both kernel
 * backends, so their tests read the same fields:
 *   {TAG:"state","state":S,"msg":M[,"restarted":true][,"state_lost":true]}
 *   {TAG:"output","cell":N,"stream":0|1,"text":T}
 *   {TAG:"artifact","cell":N,"name":F,"path":P,"bytes":B}
 *   {TAG:"result","cell":N,"status":S,"value":V,"ename":E,"evalue":E,
 *    "traceback":T,"reason":R,"state_lost":true|false,"duration_ms":D,
 *    "us":U}
 * where TAG is the key each harness's tests read ("type" or "ev"). */
#ifndef TERP_HARNESS_PRINT_H
#define TERP_HARNESS_PRINT_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "terp/kernel.h"

/* Names the key that says what an event is ("type" or "ev"); the
 * string must outlive the program (a literal). Default "type". */
void	harness_print_tag(const char *key);

/* Prints o as one line on stdout and frees it. */
void	harness_emit(cJSON *o);

/* Adds p[0..n) under k as valid UTF-8 (the backends pass raw bytes), or
 * null when p is NULL. */
void	harness_add_text(cJSON *o, const char *k, const char *p, size_t n);

/* harness_add_text of a NUL-terminated string or NULL. */
void	harness_add_opt(cJSON *o, const char *k, const char *v);

/* Prints {TAG:type} with key:val added (harness_add_opt) when key is
 * not NULL: a harness's answer to a command. */
void	harness_reply(const char *type, const char *key, const char *val);

/* The struct kernel_cbs callbacks; arg is not used. */
void	harness_on_output(void *arg, int cell, int stream, const char *p, size_t n);
void	harness_on_result(void *arg, int cell, const struct kernel_result *r);
void	harness_on_artifact(void *arg, int cell, const char *name,
	    const char *path, uint64_t bytes);
void	harness_on_state(void *arg, const struct kernel_status *ks);

#endif
