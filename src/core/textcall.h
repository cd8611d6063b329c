/* textcall: a python_exec call that a model wrote as text, read
 * back from its reply. Pure: no I/O, no state. Private to src/core.
 *
 * Local models often write code in a fenced block, or a tool call as
 * JSON text, instead of calling the tool. When the reply holds exactly
 * one such thing, and the reply is that thing, it is run as if the
 * model had called python_exec. "Is that thing": at most one line of
 * prose around it; from a local provider (ollama: models that may not
 * call tools at all), also a short lead-in of up to 5 lines when the
 * code ends the reply ("I'll load the data:" then the code). A reply
 * with more prose is an answer, its code an example for the reader,
 * never run: a provider with tool calling calls the tool when it means
 * to run code. Returns the code (new string) or NULL. */
#ifndef TERP_CORE_TEXTCALL_H
#define TERP_CORE_TEXTCALL_H

/* text: the whole reply; local: from a local provider (ollama). */
char *textcall_code(const char *text, int local);

#endif
