/* notebook: the one model of a session's state: the conversation as
 * sent to the model, the questions, the cells with their outputs, the
 * artifacts, the data files, token totals and the ledger of requests.
 * Frontends, persistence and export read it; nothing else keeps a
 * second copy. It does no I/O itself, but every update function tells
 * the one observer (notebook_observe: the session's journal, which
 * writes) exactly what changed. */
#ifndef TERP_NOTEBOOK_H
#define TERP_NOTEBOOK_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "terp/datafile.h"
#include "terp/netlog.h"
#include "terp/outcap.h"

enum cell_author { CELL_BY_MODEL, CELL_BY_USER };

enum cell_status {
	CELL_PENDING,		/* queued, not started */
	CELL_RUNNING,
	CELL_OK,
	CELL_ERROR,		/* raised an exception */
	CELL_TIMEOUT,
	CELL_INTERRUPTED,
	CELL_CRASHED,		/* the Python process died; state lost */
};

/* Bounded per-stream capture sizes: head and tail each. */
#define CELL_OUT_HEAD	(256 * 1024)
#define CELL_OUT_TAIL	(64 * 1024)

struct cell {
	int			 n;		/* 1-based, as shown: [n] */
	enum cell_author	 author;
	char			*code;
	char			*tool_call_id;	/* the model's call id, or NULL */
	enum cell_status	 status;
	struct outcap		 out[2];	/* 0 = stdout, 1 = stderr (raw bytes) */
	char			*value;		/* repr of the trailing expression */
	char			*value_wide;	/* the same at the user's pane width,
						 * for showing; NULL: as value (not
						 * journalled: a resumed cell shows value) */
	char			*ename, *evalue, *traceback;
	char			*reason;	/* timeout/crash explanation */
	int			 state_lost;	/* the session restarted */
	int64_t			 started_ms;	/* monotonic */
	int64_t			 duration_ms;
	int64_t			 duration_us;	/* this run only; not saved */
	int			 nartifacts;
	int			 told_model;	/* hand-run cell already reported */
	int			 rerun_of;	/* a re-run: the cell copied, else 0 */
	int			 dropped;	/* `d`: out of the view and of what
						 * the model is sent; kept here */
};

struct artifact {
	int		 cell;		/* the cell that made it */
	char		*name;		/* sanitized name, relative to out/ */
	char		*path;		/* host path of the copy */
	uint64_t	 bytes;
};

struct usage {
	long	input_tokens, output_tokens, cached_tokens;
	long	reasoning_tokens;	/* of output_tokens, when the API says */
	double	cost;		/* dollars (cost.h); 0 when not priced */
	int	priced;		/* the model had a price (totals: any call) */
};

/* A question the user asked, apart from the notes terp sent the model
 * with it (a restart, cells run by hand...): both make up its user
 * message in the conversation, but only the question is the user's. */
struct question {
	int	 msg;		/* index of its user message */
	char	*text;		/* as the user asked it */
	char	*notes;		/* sent before it; NULL when none */
	/* Why it got no answer ("cancelled by the user", the model's
	 * error); NULL: answered, or not ended yet. */
	char	*unanswered;
};

/* A package pip installed into the session's site directory, as pip
 * recorded it (the kernel checked both words): a resume's --replay
 * installs it again first. */
struct package {
	int	 cell;		/* the cell that installed it; 0: none */
	char	*name, *version;
};

/* The result of a cell as the kernel reports it (strings borrowed). */
struct cell_result {
	enum cell_status status;
	int64_t		 duration_ms;
	int64_t		 duration_us;
	const char	*value, *ename, *evalue, *traceback, *reason;
	const char	*value_wide;	/* kernel_result's; NULL: as value */
	int		 state_lost;
};

/* What changed, for the one observer (notebook_observe): each update
 * function below reports its change once, after it is made. Pointers
 * are the notebook's, valid at least during the call. */
enum nb_change_kind {
	NB_CELL,		/* cell added (running) */
	NB_OUTPUT,		/* cell, stream, p/len: bytes it printed */
	NB_RESULT,		/* cell got its result */
	NB_ARTIFACT,		/* artifact */
	NB_QUESTION,		/* question (and its user message, msg) */
	NB_REPLY,		/* msg: the model's reply (text, tool calls) */
	NB_TOOL_RESULT,		/* msg: what the model is told of a call */
	NB_USAGE,		/* usage: one call's tokens */
	NB_SENT,		/* sent: index of a request body; p/len */
	NB_FILE,		/* file: a data file staged (again) */
	NB_SUMMARY,		/* p: the context summary of messages [0, msg) */
	NB_NET,			/* net: an egress attempt opened, moved bytes
				 * or ended (net->open 0: its last report) */
	NB_PACKAGE,		/* package: one pip installed (a cell did) */
	NB_DROP,		/* cell: dropped by the user */
};

struct nb_change {
	enum nb_change_kind	 kind;
	const struct cell	*cell;
	int			 stream;
	const char		*p;
	size_t			 len;
	const struct artifact	*artifact;
	const struct question	*question;
	int			 msg;
	const struct usage	*usage;
	int			 sent;
	/* NB_SENT: how many leading bytes p surely shares with the
	 * request before it (sent - 1), known by whoever built both: 0,
	 * or fewer than they share (compare from there) */
	size_t			 shared;
	const struct datafile	*file;
	const struct net_attempt *net;
	const struct package	*package;
};

typedef void (*notebook_observer)(void *arg, const struct nb_change *ch);

struct notebook;

struct notebook *notebook_new(void);
void notebook_free(struct notebook *nb);

/* Sets the one observer (NULL: none): the journal, through the
 * session runner. A notebook being rebuilt has none. */
void notebook_observe(struct notebook *nb, notebook_observer fn, void *arg);

/* Adds a cell with the next number, running; the notebook owns it and
 * the pointer stays valid for the notebook's life. code and
 * tool_call_id (may be NULL) are copied. */
struct cell *notebook_add_cell(struct notebook *nb, enum cell_author who,
    const char *code, const char *tool_call_id);
/* Appends bytes cell n printed on stream (0 stdout, 1 stderr). */
void notebook_cell_output(struct notebook *nb, int n, int stream,
    const char *p, size_t len);
/* A stream cut in a record (the loader): its last len bytes, of total
 * bytes printed, after the head already added. */
void notebook_cell_tail(struct notebook *nb, int n, int stream,
    const char *p, size_t len, uint64_t total);
/* Cell n's result (strings copied). A cell gets exactly one. */
void notebook_cell_result(struct notebook *nb, int n,
    const struct cell_result *r);
/* The cell numbered n, or NULL. */
struct cell *notebook_cell(const struct notebook *nb, int n);
int notebook_ncells(const struct notebook *nb);

/* Records an artifact; strings are copied. Returns the stored one. */
const struct artifact *notebook_add_artifact(struct notebook *nb, int cell,
    const char *name, const char *path, uint64_t bytes);
int notebook_nartifacts(const struct notebook *nb);
const struct artifact *notebook_artifact(const struct notebook *nb, int i);

/* The conversation in terp's neutral form (an array the providers
 * encode): {"role":"user","content":S}
 *           {"role":"assistant","content":S|null,
 *            "tool_calls":[{"id":S,"name":S,"arguments":S}]}
 *           {"role":"tool","tool_call_id":S,"content":S,"is_error":B}
 * Owned by the notebook; changed only through the functions here. */
cJSON *notebook_messages(const struct notebook *nb);
/* The messages' generation: a number no other notebook of the process
 * has, changed by every change to a message already there (an insert
 * before the end, a replacement), not by adding one at the end. Equal
 * generations: the earlier messages are unchanged (llm_vouch). */
uint64_t notebook_gen(const struct notebook *nb);
/* Message i (the last one without walking the list), or NULL. */
const cJSON *notebook_message(const struct notebook *nb, int i);
/* How many messages, without walking the list. */
int notebook_nmessages(const struct notebook *nb);

/* Adds the user message of a question: the notes (NULL or "" for
 * none), then "Question: " and the text, or the text alone without
 * notes. Strings are copied. Returns the stored question. */
const struct question *notebook_add_question(struct notebook *nb,
    const char *text, const char *notes);
int notebook_nquestions(const struct notebook *nb);
/* The i-th question (0-based), or NULL. */
const struct question *notebook_question(const struct notebook *nb, int i);
/* The last question ended without an answer, for the reason why (a
 * line; copied). Nothing when it has its answer (a reply without tool
 * calls after it; an error after the answer is not the question's) or
 * a reason already (the first says how it ended). */
void notebook_question_unanswered(struct notebook *nb, const char *why);
/* The question whose user message is message msg, or NULL. */
const struct question *notebook_question_at(const struct notebook *nb,
    int msg);
/* Adds the model's reply: its text (NULL or "": none) and its tool
 * calls (an array of {"id","name","arguments"}, taken; NULL: none). */
void notebook_add_reply(struct notebook *nb, const char *text, cJSON *calls);
/* The same with the reply's reasoning items (taken; NULL or empty:
 * none), kept in the message as "reasoning": [...] in each provider's
 * own shape, byte for byte as they came (an Anthropic thinking block
 * with its signature must go back unchanged):
 *   {"type":"thinking","thinking":S,"signature":S}
 *   {"type":"redacted_thinking","data":S}
 *   {"type":"reasoning","id":S,"encrypted_content":S,"summary":[...]}
 *   {"type":"text","text":S}  (a local model's; shown, never sent) */
void notebook_add_reply_reasoning(struct notebook *nb, const char *text,
    cJSON *calls, cJSON *reasoning);
/* The readable reasoning of an assistant message (thinking texts and
 * summaries, one per line): a new string, or NULL when it has none. */
char *notebook_reasoning_text(const cJSON *msg);
/* Adds what the model is told of its tool call id (copied). */
void notebook_add_tool_result(struct notebook *nb, const char *id,
    const char *content, int is_error);
/* Inserts a tool result as message at (0 <= at <= count), not told to
 * the observer: the loader's repair of a conversation cut short.
 * Questions after it follow. */
void notebook_insert_tool_result(struct notebook *nb, int at, const char *id,
    const char *content, int is_error);
/* Replaces message i (< count) by m (taken), not told to the observer:
 * the loader of old journals, where a message was written again once
 * the agent completed it. */
void notebook_replace_message(struct notebook *nb, int i, cJSON *m);

/* Drops cell n (`d`): marked, and its code and output leave the
 * conversation: its call's arguments and its tool result are replaced
 * by a line saying so (the pair stays, so every provider's rules hold).
 * A cell the model was not told of yet is not told. Returns 0, or -1
 * when there is no such cell, it is dropped already or it runs. */
int notebook_drop_cell(struct notebook *nb, int n);
/* The words that replace a dropped cell's tool result. */
#define NOTEBOOK_DROPPED_RESULT "The user dropped this cell from the notebook: " \
	"its code and output are gone; do not rely on what it printed."
#define NOTEBOOK_DROPPED_ARGS "{\"code\": \"# dropped by the user\"}"

void notebook_add_usage(struct notebook *nb, const struct usage *u);
/* The session's total. */
const struct usage *notebook_usage(const struct notebook *nb);

/* What left the machine: each model request as sent. Its description
 * and size stay for the whole session; its body only while it is one
 * of the last NOTEBOOK_SENT_KEEP (the observer, the journal, gets every
 * body when it is added: journal_read_sent reads an older one back).
 * body may be NULL: an older request a loader knows only by its size
 * (the observer is not told of it). */
#define NOTEBOOK_SENT_KEEP	4	/* each holds the whole conversation: 1 MB at 3,000 questions */
void notebook_add_sent(struct notebook *nb, const char *what, const char *body,
    size_t len);
/* The same, keeping body itself instead of a copy (malloc'd, len bytes
 * then a NUL; the notebook owns it from now on and frees it when it
 * leaves the window). A copy of the whole conversation per request was
 * a tenth of a long session's CPU. Returns the storage of the body that
 * left the window (the caller's now: its next body can reuse it), or
 * NULL. */
char *notebook_add_sent_keep(struct notebook *nb, const char *what, char *body,
    size_t len);
/* notebook_add_sent_keep with what body's builder knows of it: shared
 * (nb_change's: leading bytes in common with the request before, 0:
 * unknown) and tag, a name for what the storage holds, given back in
 * *tag_back with the storage that left the window (0: a copy's, whose
 * bytes nobody vouches for; llm_cache_body_give_tagged's). */
char *notebook_add_sent_tagged(struct notebook *nb, const char *what,
    char *body, size_t len, size_t shared, uint64_t tag, uint64_t *tag_back);
int notebook_nsent(const struct notebook *nb);
/* The i-th request: description and size, and its body (owned by the
 * notebook), or NULL when it is no longer kept in memory. */
const char *notebook_sent(const struct notebook *nb, int i, const char **what,
    size_t *len);

/* The model's summary of messages [0, upto) that the context window's
 * compaction sends in their place (context.h); text is copied. Each
 * change counts up *gen (0: never set). notebook_summary returns NULL
 * when there is none; upto and gen may be NULL. */
void notebook_set_summary(struct notebook *nb, int upto, const char *text);
const char *notebook_summary(const struct notebook *nb, int *upto, int *gen);

/* The session's data files: the one record of where each is on the
 * host, where the code sees it, and what it was when first staged.
 * Adds f (strings copied), or replaces the file with the same host
 * path (staged again). Returns the stored one. */
const struct datafile *notebook_add_file(struct notebook *nb,
    const struct datafile *f);
int notebook_nfiles(const struct notebook *nb);
/* The i-th data file (0-based) in the order they came, or NULL. */
const struct datafile *notebook_file(const struct notebook *nb, int i);
/* The egress ledger: every attempt the session's proxy saw (netlog.h).
 * An entry of an attempt still open (same id) is updated in place;
 * others are appended, at most NOTEBOOK_NET_MAX, then only counted.
 * a is copied. Returns the stored entry (valid until the next add), or
 * NULL past the cap. */
#define NOTEBOOK_NET_MAX	20000
const struct net_attempt *notebook_add_net(struct notebook *nb,
    const struct net_attempt *a);
/* The entries in order (owned by the notebook), *n of them, and how
 * many the cap left out (dropped may be NULL). */
const struct net_attempt *notebook_nets(const struct notebook *nb, size_t *n,
    uint64_t *dropped);
/* The summary of cell's entries (netlog.h), kept as they come: NULL
 * when the cell has none. Its gen changes whenever it does. */
const struct netlog_sum *notebook_net_sum(const struct notebook *nb, int cell);
/* The session's, over every entry kept: NULL before the first. */
const struct netlog_sum *notebook_net_total(const struct notebook *nb);

/* Records that cell installed package name at version (copied), after
 * any earlier record of the same name (the last one counts). Returns
 * the stored one (valid until the next add), or NULL past the cap. */
#define NOTEBOOK_PACKAGES_MAX	1000
const struct package *notebook_add_package(struct notebook *nb, int cell,
    const char *name, const char *version);
int notebook_npackages(const struct notebook *nb);
/* The i-th package record (0-based, in the order they came), or NULL. */
const struct package *notebook_package(const struct notebook *nb, int i);

const char *cell_status_name(enum cell_status s);
/* The status named s (cell_status_name's), or -1. */
int cell_status_parse(const char *s);
/* The cell's stream (0 stdout, 1 stderr) as text, as a notebook shows
 * it (carriage returns resolved, outnorm.h; display regions in place
 * with their last updates, outdisp.h): a new string. */
char *cell_output(const struct cell *c, int stream, size_t *len);
/* The same, and where its display regions are (*spans: a new array the
 * caller frees, NULL when none; *nspans their count): the Markdown ones
 * are rendered, the export writes them as display_data. */
struct outdisp_span;
char *cell_output_spans(const struct cell *c, int stream, size_t *len,
    struct outdisp_span **spans, size_t *nspans);

#endif
