/* tui_uwidth: wcwidth() under a private C.UTF-8 locale (so the answer does
 * not depend on whether main() called setlocale yet), plus the emoji
 * override tmux also needs: libc says 1 for some pictographs terminals
 * draw as 2. */
#include "terp/tui_uwidth.h"

#include <locale.h>
#include <wchar.h>

#include "terp/sanitize.h"

static locale_t uwidth_loc;
static int uwidth_tried;

int
tui_uwidth_cp(unsigned cp)
{
	int w;

	if (cp >= 0x20 && cp < 0x7f)
		return 1;
	if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
		return 0;
	/* Emoji presentation blocks are wide in every modern terminal. */
	if ((cp >= 0x1f300 && cp <= 0x1f64f) || (cp >= 0x1f900 &&
	    cp <= 0x1faff))
		return 2;
	if (!uwidth_tried) {
		uwidth_tried = 1;
		uwidth_loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	}
	if (uwidth_loc != (locale_t)0) {
		locale_t old = uselocale(uwidth_loc);
		w = wcwidth((wchar_t)cp);
		uselocale(old);
	} else {
		w = wcwidth((wchar_t)cp);
	}
	if (w < 0) {
		/* Unknown to libc: CJK ranges are wide, the rest narrow. */
		if ((cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 &&
		    cp <= 0xa4cf) || (cp >= 0xac00 && cp <= 0xd7a3) ||
		    (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0xfe30 &&
		    cp <= 0xfe4f) || (cp >= 0xff00 && cp <= 0xff60) ||
		    (cp >= 0x20000 && cp <= 0x3fffd))
			return 2;
		return 1;
	}
	return w;
}

size_t
tui_uwidth_str(const char *s, size_t n)
{
	size_t i = 0, w = 0;
	unsigned cp;

	while (i < n) {
		size_t k = utf8_decode(s + i, n - i, &cp);
		if (k == 0) {
			w++;
			i++;
			continue;
		}
		w += (size_t)tui_uwidth_cp(cp);
		i += k;
	}
	return w;
}

size_t
tui_uwidth_prefix(const char *s, size_t n, size_t maxcols, size_t *cols)
{
	size_t i = 0, w = 0;
	unsigned cp;

	while (i < n) {
		size_t k = utf8_decode(s + i, n - i, &cp);
		int cw;
		if (k == 0) {
			k = 1;
			cw = 1;
		} else {
			cw = tui_uwidth_cp(cp);
		}
		if (w + (size_t)cw > maxcols)
			break;
		w += (size_t)cw;
		i += k;
	}
	if (cols != NULL)
		*cols = w;
	return i;
}
