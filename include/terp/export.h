/* export: a notebook as a file other tools read: a Jupyter notebook
 * (nbformat 4.5, python3 kernel) or Markdown. Reads the notebook only;
 * files are written to a temporary name and renamed into place. */
#ifndef TERP_EXPORT_H
#define TERP_EXPORT_H

#include <stddef.h>

#include "terp/notebook.h"

/* Largest PNG embedded in an .ipynb; larger ones are named, not shown. */
#define EXPORT_IMAGE_MAX	(8u << 20)
/* Bytes of each output stream kept in Markdown (head and tail). */
#define EXPORT_MD_OUTPUT	4000

/* Questions and answers become markdown cells; cells become code cells
 * with stream, execute_result, error and display_data (PNG artifacts,
 * base64) outputs. Returns 0 or -1 with *err (caller frees). */
int export_ipynb(const struct notebook *nb, const char *path, char **err);
/* Questions, answers, fenced code, outputs cut to EXPORT_MD_OUTPUT and
 * sanitized, images linked relative to the .md file's folder. Returns 0
 * or -1 with *err. */
int export_markdown(const struct notebook *nb, const char *path, char **err);
/* export_markdown for names ending in .md or .markdown, export_ipynb
 * for .ipynb; anything else is an error. */
int export_file(const struct notebook *nb, const char *path, char **err);

/* The notebook in reading order, as both exports and a resumed TUI
 * show it: each question (the agent's notes before it left out), each
 * non-empty answer, and each cell where the model called it (cells run
 * by hand before the next question). text is set for questions and
 * answers, c for cells; both are borrowed for the call. */
/* EXPORT_REASONING: the model's reasoning before a reply (its text, from
 * notebook_reasoning_text), never an answer: not traced, shown folded. */
enum export_item { EXPORT_QUESTION, EXPORT_REPLY, EXPORT_CELL, EXPORT_REASONING };
typedef void (*export_walk_fn)(void *arg, enum export_item k, const char *text,
    const struct cell *c);
void export_walk(const struct notebook *nb, export_walk_fn fn, void *arg);

/* The notebook as an nbformat 4 JSON text: a new string. */
char *export_ipynb_string(const struct notebook *nb);
/* The path of target relative to the folder base_dir (both absolute,
 * normalised): a new string. */
char *export_relpath(const char *base_dir, const char *target);

#endif
