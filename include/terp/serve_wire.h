/* serve_wire: the wire protocol between the ssh backend (kernel_ssh.c,
 * src/kernel/ssh) and `terp serve` (src/app/serve.c) on the other
 * machine, which kernel_ssh.c starts with ssh -T host terp serve. It sits
 * with the backend, below both: serve.c includes it, the backend does not
 * include the frontend. The session is the local
 * kernel (kernel.h: the same bwrap sandbox, driver and frames); this is
 * kernel.h's API carried over a byte stream, one JSON object a line.
 *
 * Host to serve ("op"):
 *   upload {name, size}, chunk {b64}..., upload_end   a data file, staged
 *   stage {path}         a file already here, staged in place
 *   start | run {n, code} | interrupt | reset | restart | stop {reason}
 * Serve to host ("ev"):
 *   hello {version}      ready for commands (first line)
 *   fatal {msg}          the sandbox cannot run here (then it exits)
 *   state {st, msg}      kernel_cbs.state
 *   out {cell, s, b64}   kernel_cbs.output (raw bytes)
 *   result {cell, status, us, value, ename, evalue, traceback, reason, lost}
 *   art {cell, name, size}, achunk {b64}..., aend   an artifact's bytes
 *   staged {name, path} | staged {name, err}   after upload_end or stage
 *   error {op, msg}      a command that failed (reset, restart, run)
 * Every line is bounded on both sides (SERVE_LINE_MAX). */
#ifndef TERP_SERVE_WIRE_H
#define TERP_SERVE_WIRE_H

#define SERVE_VERSION	1
#define SERVE_LINE_MAX	(96u << 20)	/* a cell's code is at most 64 MiB */
#define SERVE_CHUNK	(256u << 10)	/* raw bytes per chunk line */

#endif
