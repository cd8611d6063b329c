/* tui_colorpair: ncurses colour pairs for thumbnails and themes (TUI.md
 * section 2). A fixed map when the terminal has pairs enough, else a hash
 * from (fg,bg) to pair with an LRU list stamped by frame: a pair drawn in
 * the current frame is never re-initialised, since ncurses would recolour
 * every cell on screen that uses it. */
#include "terp/tui_colorpair.h"

#include <curses.h>
#include <stdlib.h>
#include <string.h>

#include "terp/palette.h"
#include "terp/util.h"

#define CP_STATIC_N	(240 * 240)	/* colours 16..255 squared */

struct cp_entry {
	int	fg, bg;		/* -2 when free */
	long	frame;		/* last frame it was used in */
	int	prev, next;	/* LRU list: head = most recent */
	int	hnext;		/* hash chain */
};

struct colorpair {
	int			 first, last;
	/* The fixed region: pairs static_first + (fg-16)*240 + (bg-16). */
	int			 static_first;	/* 0 when there is none */
	unsigned char		*static_init;	/* bitset */
	/* The LRU region: pairs lru_first .. lru_first + n - 1. */
	int			 lru_first, n;
	struct cp_entry		*e;
	int			*hash;		/* bucket heads; -1 = empty */
	int			 nhash;
	int			 head, tail, nfree;
	long			 frame;
	struct tui_colorpair_stats	 st;
};

static unsigned
cp_hash(const struct colorpair *cp, int fg, int bg)
{
	return (unsigned)((fg + 1) * 263 + (bg + 1)) % (unsigned)cp->nhash;
}

struct colorpair *
tui_colorpair_new(int first, int last)
{
	struct colorpair *cp;
	int n = last - first + 1;

	if (first < 1 || n < 1)
		return NULL;
	cp = xcalloc(1, sizeof *cp);
	cp->first = first;
	cp->last = last;
	cp->lru_first = first;
	if (COLORS >= 256 && n >= CP_STATIC_N + 256) {
		cp->static_first = first;
		cp->static_init = xcalloc(CP_STATIC_N / 8 + 1, 1);
		cp->lru_first = first + CP_STATIC_N;
	}
	cp->n = last - cp->lru_first + 1;
	cp->e = xcalloc((size_t)cp->n, sizeof *cp->e);
	cp->nhash = cp->n * 2 + 1;
	cp->hash = xmalloc((size_t)cp->nhash * sizeof *cp->hash);
	for (int i = 0; i < cp->nhash; i++)
		cp->hash[i] = -1;
	/* All entries free, chained in order as the LRU list. */
	for (int i = 0; i < cp->n; i++) {
		cp->e[i].fg = cp->e[i].bg = -2;
		cp->e[i].frame = -1;
		cp->e[i].prev = i - 1;
		cp->e[i].next = i + 1 < cp->n ? i + 1 : -1;
		cp->e[i].hnext = -1;
	}
	cp->head = 0;
	cp->tail = cp->n - 1;
	cp->frame = 1;
	return cp;
}

void
tui_colorpair_free(struct colorpair *cp)
{
	if (cp == NULL)
		return;
	free(cp->static_init);
	free(cp->e);
	free(cp->hash);
	free(cp);
}

void
tui_colorpair_frame(struct colorpair *cp)
{
	cp->frame++;
}

static void
cp_unlink(struct colorpair *cp, int i)
{
	struct cp_entry *e = &cp->e[i];

	if (e->prev >= 0)
		cp->e[e->prev].next = e->next;
	else
		cp->head = e->next;
	if (e->next >= 0)
		cp->e[e->next].prev = e->prev;
	else
		cp->tail = e->prev;
}

static void
cp_push_front(struct colorpair *cp, int i)
{
	struct cp_entry *e = &cp->e[i];

	e->prev = -1;
	e->next = cp->head;
	if (cp->head >= 0)
		cp->e[cp->head].prev = i;
	cp->head = i;
	if (cp->tail < 0)
		cp->tail = i;
}

static void
cp_hash_remove(struct colorpair *cp, int i)
{
	int *pp = &cp->hash[cp_hash(cp, cp->e[i].fg, cp->e[i].bg)];

	while (*pp >= 0 && *pp != i)
		pp = &cp->e[*pp].hnext;
	if (*pp == i)
		*pp = cp->e[i].hnext;
	cp->e[i].hnext = -1;
}

static int
cp_rgb_dist(int fg1, int bg1, int fg2, int bg2)
{
	uint8_t a[3], b[3];
	int d = 0;

	/* The default colour is far from every real one. */
	if ((fg1 < 0) != (fg2 < 0) || (bg1 < 0) != (bg2 < 0))
		return 1 << 28;
	if (fg1 >= 0) {
		palette_rgb(fg1, a);
		palette_rgb(fg2, b);
		d += palette_dist(a[0], a[1], a[2], b[0], b[1], b[2]);
	}
	if (bg1 >= 0) {
		palette_rgb(bg1, a);
		palette_rgb(bg2, b);
		/* The background covers more of a cell: weigh it more. */
		d += 2 * palette_dist(a[0], a[1], a[2], b[0], b[1], b[2]);
	}
	return d;
}

int
tui_colorpair_get(struct colorpair *cp, int fg, int bg)
{
	int i, best = -1, bestd = 0;

	if (fg < -1 || fg >= COLORS)
		fg = -1;
	if (bg < -1 || bg >= COLORS)
		bg = -1;
	if (cp->static_first > 0 && fg >= 16 && fg < 256 && bg >= 16 &&
	    bg < 256) {
		int k = (fg - 16) * 240 + (bg - 16);
		if (!(cp->static_init[k / 8] & (1 << (k % 8)))) {
			init_extended_pair(cp->static_first + k, fg, bg);
			cp->static_init[k / 8] |= (unsigned char)(1 << (k % 8));
			cp->st.inits++;
		}
		return cp->static_first + k;
	}
	if (cp->n < 1)
		return 0;
	for (i = cp->hash[cp_hash(cp, fg, bg)]; i >= 0; i = cp->e[i].hnext)
		if (cp->e[i].fg == fg && cp->e[i].bg == bg)
			break;
	if (i < 0) {
		/* The least recently used pair, unless it is on screen in
		 * this frame: then nothing may be evicted. */
		i = cp->tail;
		if (cp->e[i].fg != -2 && cp->e[i].frame >= cp->frame) {
			for (int j = 0; j < cp->n; j++) {
				int d = cp_rgb_dist(fg, bg, cp->e[j].fg,
				    cp->e[j].bg);
				if (best < 0 || d < bestd) {
					best = j;
					bestd = d;
				}
			}
			cp->st.fallbacks++;
			return cp->lru_first + best;
		}
		if (cp->e[i].fg != -2) {
			cp_hash_remove(cp, i);
			cp->st.evictions++;
		}
		cp->e[i].fg = fg;
		cp->e[i].bg = bg;
		cp->e[i].hnext = cp->hash[cp_hash(cp, fg, bg)];
		cp->hash[cp_hash(cp, fg, bg)] = i;
		init_extended_pair(cp->lru_first + i, fg, bg);
		cp->st.inits++;
	}
	cp->e[i].frame = cp->frame;
	cp_unlink(cp, i);
	cp_push_front(cp, i);
	return cp->lru_first + i;
}

void
tui_colorpair_stats(const struct colorpair *cp, struct tui_colorpair_stats *st)
{
	*st = cp->st;
}

void
tui_colorpair_apply_theme(const struct theme *t, int ncolors, int light)
{
	if (ncolors <= 0)
		return;
	for (int r = 0; r < THEME_NROLES && r + 1 < COLOR_PAIRS; r++) {
		int fg, bg;
		tui_theme_style_resolve(&t->role[r], ncolors, light, &fg, &bg);
		init_extended_pair(r + 1, fg, bg);
	}
}

void
tui_colorpair_role(const struct theme *t, enum theme_role role, int ncolors,
    unsigned long *attrs, int *pair)
{
	unsigned a = t->role[role].attrs;
	attr_t at = A_NORMAL;

	if (a & THEME_BOLD)
		at |= A_BOLD;
	if (a & THEME_DIM)
		at |= A_DIM;
	if (a & THEME_ITALIC)
		at |= A_ITALIC;
	if (a & THEME_UNDERLINE)
		at |= A_UNDERLINE;
	if (a & THEME_REVERSE)
		at |= A_REVERSE;
	*attrs = at;
	*pair = ncolors > 0 && (int)role + 1 < COLOR_PAIRS ? (int)role + 1 : 0;
}
