/* tui_priv: what the notebook UI's own files (tui.c, tui_*.c) share and
 * nothing else may use: the UI's state, struct tui, passed to their
 * functions as `t` (tui.c holds the one instance), its types and limits.
 * Each tui_X.c declares what it offers the others in tui_X.h. */
#ifndef TERP_TUI_PRIV_H
#define TERP_TUI_PRIV_H

#include <stdint.h>

#include <curses.h>

#include "terp/buf.h"
#include "terp/notebook.h"
#include "terp/thumb.h"
#include "terp/tui.h"
#include "terp/tui_colorpair.h"
#include "terp/tui_theme.h"
#include "terp/tui_tlines.h"

#include "tui_termquery.h"

/* Style roles; the theme maps each to colours and attributes. */
enum role {
	R_TEXT, R_DIM, R_USER, R_USER_MARK, R_ASSIST, R_NOTICE, R_ERROR,
	R_LINK, R_CELL_HDR, R_STDOUT, R_STDERR, R_VALUE, R_TRACE, R_GOOD,
	R_RUNNING, R_FAIL, R_TITLE, R_TITLE_FOCUS, R_BORDER, R_STATUS,
	R_STATUS_KEY, R_SEL, R_PROMPT, R_INPUT, R_HIDDEN, R_HEADING,
	R_NROLES,
	/* R_THEME + an enum theme_role: the spans of highlighted code and
	 * Markdown (tui_pyhl, tui_mdlite) keep the theme's own roles */
	R_THEME = 1000
};

enum pane { P_INPUT, P_CONV, P_CELLS, P_ARTS, P_NPANES };

enum item_kind { IT_USER, IT_ANSWER, IT_CELL, IT_NOTICE, IT_ERROR, IT_INFO,
	IT_REASONING,	/* the model's reasoning: folded, dimmed; r expands */
	IT_PENDING };	/* a cell the model is still writing (EV_CODE): its
			 * code as it came, unsanitized; cell = the part of
			 * the reply; closed: its call came whole */

#define ITEM_TEXT_MAX	(1024 * 1024)	/* per conversation item */
#define PENDING_MAX	(256 * 1024)	/* code shown while it streams */
#define ITEMS_MAX	4000		/* oldest dropped beyond this */
#define OUT_SHOW_HEAD	3		/* collapsed output: head lines */
#define OUT_SHOW_TAIL	5		/* and tail lines, at the least */
#define CODE_SHOW	12		/* collapsed code lines */
#define INPUT_ROWS_MAX	6
#define FRAME_MS	16
#define PREVIEW_MAX	(256 * 1024)	/* text artifact preview bytes */
#define NTHUMBS		24		/* rendered thumbnails kept */
#define HELD_MAX	32		/* input lines held during a replay */
#define IDLE_SHOW_MS	(5 * 60 * 1000)	/* idle countdown shown below this */

struct item {
	enum item_kind	 kind;
	struct buf	 text;		/* sanitized */
	int		 cell;		/* IT_CELL */
	int		 closed;	/* IT_ANSWER: no more deltas */
	unsigned	 version;
	/* IT_ANSWER: its traced numbers, styled in place (tui_trace.c) */
	struct item_mark {
		char	*text;		/* the number as written (owned) */
		int	 traced;
	}		*marks;		/* owned, in answer order */
	int		 nmarks;
	/* cache of the wrapped lines */
	unsigned	 cver;
	int		 cw;
	struct tlines	 lines;
};

#define ORDER_RUNS_MAX	4096	/* stream switches kept per cell */
#define ORDER_CELLS_MAX	(1 << 20)	/* cells whose order is kept */

struct corder {			/* how a cell's stdout and stderr interleave */
	int		 n, cap;
	int		 over;		/* more switches than kept: stdout first */
	struct orun {
		int	 st;		/* 0 stdout, 1 stderr */
		uint64_t end;		/* the stream's byte count at its end */
	}		*run;
};

struct cblock {			/* cached body of one cell */
	int		 valid, width, expanded, status, nart, fold;
	uint64_t	 tot[2];
	int		 has_value;
	uint64_t	 net_gen;	/* the cell's ledger summary's gen */
	struct tlines	 lines;
};

struct tcache {			/* a rendered thumbnail */
	char		*path;
	int		 cols, rows_max;
	struct thumb	*t;		/* NULL: not a decodable PNG */
	char		*err;
	unsigned	 stamp;
};

#define NPICS		32		/* inline pictures in pixels kept */
#define NPLACES		16		/* sixel pictures on screen at once */

struct pic {			/* an inline picture in pixels (tui_pics.c) */
	char		*path;		/* NULL: the slot is free */
	int		 cols, rows;	/* the cells it takes */
	int		 indent;	/* its column in the pane */
	int		 sent;		/* kitty: transmitted */
	unsigned	 stamp;
	uint8_t		*px;		/* sixel: cols*cellw x rows*cellh RGBA */
	int		 pw, ph;
};

struct place {			/* rows r0..r1 of pic at screen row y, col x */
	int		 pic, y, x, r0, r1;
};

struct view {			/* a scrollable list */
	int	 top;		/* first line shown */
	int	 follow;	/* stick to the bottom */
	int	 sel;		/* selected cell / artifact index */
	int	 ensure_sel;	/* scroll so the selection shows */
	int	 sel_from_top;	/* select what is at the top (after paging) */
};

#define TAGROWS 512		/* rows remembered for mouse clicks */

enum modal { M_NONE, M_CONFIRM_QUIT, M_SAVE_AS, M_SAVE_CONFIRM, M_SEARCH, M_INPUT,
	M_OPEN_CONFIRM,
	M_APPROVE,	/* --ask: the model's cell waits (EV_APPROVE) */
	M_DROP_CONFIRM };	/* `d` on a cell: drop it? (save_art: the cell) */

/* What the status bar says the core is doing. */
enum phase { PH_IDLE, PH_THINKING, PH_ANSWERING, PH_CELL,
	PH_CODE };	/* the model writes a cell */

/* The UI's state, passed to every function of the tui_*.c files as
 * `struct tui *t`. Each part says which file writes it; the others
 * only read it. */
struct tui_trace;

struct tui {
	/* the answers' numbers (tui_trace.c); NULL until the first */
	struct tui_trace	*trace;
	/* set up by tui_run (tui.c) */
	struct loop		*loop;
	struct session		*session;	/* the one door to the core */
	struct notebook		*nb;
	struct tui_opts		 o;
	int			 active;	/* the screen is up */
	int			 quit;
	int			 quit_signo;	/* SIGTERM or SIGHUP ended it, or 0 */
	int			 dirty;		/* redraw at the next frame */
	int64_t			 last_draw;
	int			 saved_stderr;
	int			 err_fd;

	/* what the panes show and where the keys go (tui_input.c, and
	 * the event sink and commands that follow new output) */
	struct view		 v[P_NPANES];
	enum pane		 focus, last_pane;

	struct {		/* the conversation (tui_items.c) */
		struct item	*items;
		int		 nitems, citems;
		int		 question_text;	/* got text since the question */
		int		 show_reasoning; /* IT_REASONING unfolded (r) */
		/* an answer just ended: the pane shows its start when it
		 * is taller than the pane (tui_draw.c), else -1 */
		int		 anchor;
		/* the top the anchor set (the view stopped following for
		 * the answer's start, not for the user), else -1 */
		int		 pin_top;
	} conv;

	struct {		/* the data files, described (tui_data.c) */
		struct tdata {
			char	*name, *shape, *cols;
		}		*v;
		int		 n, done;
	} data;

	struct {		/* `/` in a pane (tui_search.c) */
		char		*pat;		/* NULL: no search */
		enum pane	 pane;
		int		 line;		/* the current match's line, -1 */
	} srch;

	struct {		/* the cells' bodies (tui_cells.c) */
		struct cblock	*cb;
		int		 ncb;
		int		*expanded;	/* by cell number */
		int		 nexp;
		int		 fold_rows;	/* a collapsed output's room */
		struct corder	*ord;		/* by cell number: the order
						 * stdout and stderr came in */
		int		 nord;
		struct tlines	 pend;		/* the cells the model writes */
		unsigned	 pend_key;	/* what pend was built from */
		int		 pend_w;
	} cells;

	struct {		/* rendered thumbnails (tui_thumbs.c) */
		struct tcache	 slot[NTHUMBS];
		unsigned	 stamp;
	} thumbs;

	struct {		/* help, previews, /sent N (tui_draw.c) */
		int		 on;
		char		*title;
		struct tlines	 lines;
		int		 top;
		char		*png;	/* preview of a PNG: its path */
		char		*shown;	/* the image drawn in pixels: path@size */
		int		 hscroll;	/* lines whole, scrolled sideways */
		int		 left;	/* columns scrolled off to the left */
		int		 art;	/* artifact index or -1 */
	} ov;

	struct {		/* real pixels (tui_gfx.c; drawn by tui_draw.c) */
		enum tui_gfx_mode mode;	/* KITTY, ITERM, SIXEL or BLOCKS */
		int		 passthrough;	/* wrapped for tmux */
		int		 cellw, cellh;	/* a cell's pixels (sixel) */
	} gfx;

	struct {		/* inline pictures in pixels (tui_pics.c) */
		struct pic	 slot[NPICS];
		unsigned	 stamp;
		struct place	 now[NPLACES], drawn[NPLACES];
		int		 nnow, ndrawn;
	} pics;

	struct {		/* the status bar (tui_event.c, tui_items.c) */
		int		 kstate;
		int		 busy;		/* between a request and EV_IDLE */
		enum phase	 phase;
		int		 run_cell;
		int64_t		 step_ms;
		struct usage	 total;
		char		*flash;		/* transient status message */
		int64_t		 flash_until;
		char		*session_id, *workspace;
		char		*where;		/* a remote session's (kernel_where) */
		int		 idle_down;	/* the idle timeout stopped the sandbox */
		int		 ticking;	/* a countdown is on the status bar */
		int		 live;		/* cells that ran ok in this Python
						 * state (0 after a crash or a
						 * restart): what Ctrl-D would lose */
	} st;

	struct {		/* commands' state (tui_cmd.c) */
		/* lines typed while a replay runs, run once it is over */
		char		*held[HELD_MAX];
		int		 nheld;
	} cmd;

	struct {		/* the input line (tui_input.c) */
		enum modal	 modal;
		int		 save_art;	/* M_SAVE_AS: artifact index */
		char		*save_name;	/* M_SAVE_CONFIRM: the typed name */
		char		 save_prompt[128];	/* M_SAVE_CONFIRM, M_OPEN_CONFIRM */
		unsigned char	 q[8192];	/* bytes for readline */
		size_t		 qh, qt;
		int		 paste;		/* inside a bracketed paste */
		struct buf	 pastebuf;
		char		 esc[8];	/* possible paste marker prefix */
		int		 nesc;
		FILE		*rl_null;
		/* typed while the terminal was asked (tui_termquery),
		 * fed to the line once it is up */
		char		 typeahead[TUI_TERMQUERY_MAX];
		size_t		 ntypeahead;
		char		*history;
		int		 mouse;		/* the mouse is captured */
		int		 copy_told;	/* the no-clipboard notice was shown */
		char		*search_saved;	/* M_SEARCH: the line typed before */
		int		 search_point;
		/* M_INPUT: a cell's input() on the input line (EV_INPUT) */
		int		 ask_cell, ask_password;
		char		 ask_prompt[256];
		char		*ask_saved;	/* the line typed before */
		char		*approve_code;	/* M_APPROVE: the cell's code */
	} in;

	struct {		/* the layout, computed per frame (tui_draw.c) */
		int		 rows, cols, inrows;
		int		 py[P_NPANES], px[P_NPANES], ph[P_NPANES], pw[P_NPANES];
		int		 compact;	/* one pane at a time */
		int		 zoom;		/* `z`: the focused pane alone */
		int		 files_hidden;	/* `f`: no files pane */
		int		 told_w;	/* session_set_width's last */
		WINDOW		*mainw, *inw;
		int		 tagmap[P_NPANES][TAGROWS];	/* row -> tag */
		const char	*hl;		/* the search pattern, while
						 * its pane is drawn */
	} lay;

	struct {		/* colours and attributes (tui_style.c) */
		int		 colors, ncolors;
		int		 light;		/* a light background */
		struct colorpair *cp;
		int		 role_pair[R_NROLES];
		int		 theme_pair[THEME_NROLES];
		attr_t		 theme_attr[THEME_NROLES];
		attr_t		 role_attr[R_NROLES];
	} sty;
};

/* Something changed: redraw at the next frame. */
static inline void
tui_mark(struct tui *t)
{
	t->dirty = 1;
}

/* Forgets every cached cell body (the terminal changed size, a chart
 * moved): here, so that the files that draw into the cells pane do not
 * call back up into tui_cells.c for it. */
static inline void
tui_cells_invalidate(struct tui *t)
{
	for (int i = 0; i < t->cells.ncb; i++)
		t->cells.cb[i].valid = 0;
}

#endif
