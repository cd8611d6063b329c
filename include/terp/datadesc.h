/* datadesc: what a data file holds, described as a data person would
 * for the model's system prompt: a delimited text's columns (count,
 * names, types guessed from a sample) and rows (estimated), a gzip's
 * inner format, the sheets of an .xlsx workbook, a Parquet file's
 * schema and row count from its footer. Bounded: it reads at most
 * DATADESC_READ_MAX bytes of any file (the start, or a workbook's
 * directory and a few members, or a Parquet footer), never the whole
 * file, and writes at most DATADESC_TEXT_MAX bytes. Reads the file (no
 * other I/O). */
#ifndef TERP_DATADESC_H
#define TERP_DATADESC_H

#include <stddef.h>

#include "terp/buf.h"

#define DATADESC_READ_MAX	((size_t)4 << 20)
#define DATADESC_TEXT_MAX	((size_t)6 << 10)

/* Appends the description of the file at path to b: lines, each
 * starting with indent; nothing for a file of no format it knows. A
 * file it cannot read gets one line saying why. */
void datadesc_describe(struct buf *b, const char *path, const char *indent);

#endif
