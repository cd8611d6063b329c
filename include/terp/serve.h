/* serve: `terp serve`, one sandbox session over stdin and stdout, so
 * that terp on another machine can run its Python here. The protocol is
 * serve_wire.h's (shared with the ssh backend). */
#ifndef TERP_SERVE_H
#define TERP_SERVE_H

#include "terp/cli.h"
#include "terp/serve_wire.h"

/* Runs the session until stdin closes; returns the exit status. */
int serve_run(struct cli *c);

#endif
