/* tui_termquery: the start-up questions to the terminal (OSC 11, DA1),
 * with a short raw mode of its own on the tty (curses is not up yet). */
#include "tui_termquery.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "terp/tui_gfx.h"
#include "terp/tui_theme.h"
#include "terp/util.h"

/* The length of the DA1 answer (ESC [ ? digits and ; ... c) at in[i],
 * 0 when none is there, or -1 when it is cut short by the end. */
static long
da1_at(const char *in, size_t n, size_t i)
{
	size_t j;

	if (i + 1 >= n)
		return in[i] == '\033' && i + 1 == n ? -1 : 0;
	if (in[i] != '\033' || in[i + 1] != '[')
		return 0;
	if (i + 2 == n)
		return -1;
	if (in[i + 2] != '?')
		return 0;
	for (j = i + 3; j < n; j++) {
		if (in[j] == 'c')
			return (long)(j + 1 - i);
		if (!(in[j] >= '0' && in[j] <= '9') && in[j] != ';')
			return 0;
	}
	return -1;
}

/* The length of an OSC string (ESC ] ... BEL or ESC \) at in[i], 0 when
 * none starts there, -1 when it is cut short by the end. */
static long
osc_at(const char *in, size_t n, size_t i)
{
	if (i + 1 >= n || in[i] != '\033' || in[i + 1] != ']')
		return 0;
	for (size_t j = i + 2; j < n; j++) {
		if (in[j] == '\a')
			return (long)(j + 1 - i);
		if (in[j] == '\033')
			return j + 1 < n ? (in[j + 1] == '\\' ? (long)(j + 2 - i) : 0) : -1;
	}
	return -1;
}

size_t
tui_termquery_keys(const char *in, size_t n, char *keys, size_t max)
{
	size_t i = 0, k = 0;

	while (i < n) {
		long a = osc_at(in, n, i);
		if (a == 0)
			a = da1_at(in, n, i);
		if (a < 0)
			break;		/* an answer cut short: not keys */
		if (a > 0) {
			i += (size_t)a;
			continue;
		}
		if (k < max)
			keys[k++] = in[i];
		i++;
	}
	return k;
}

/* Where the DA1 answer in buf[0..n) starts, or -1. */
static long
da1_find(const char *buf, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (da1_at(buf, n, i) > 0)
			return (long)i;
	return -1;
}

/* Reads into buf until the DA1 answer or the deadline; returns the
 * length. What the user types after the answer stays in the tty for
 * curses. */
static size_t
tq_read(int fd, char *buf, size_t max, int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;
	size_t n = 0;

	while (n < max && da1_find(buf, n) < 0) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = end - now_ms();
		if (left <= 0)
			break;
		int rc = poll(&p, 1, (int)left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0)
			break;
		ssize_t r = read(fd, buf + n, max - n);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	return n;
}

void
tui_termquery(int fd, int out_fd, int ask_bg, int timeout_ms, struct tui_termquery *q)
{
	struct termios old, raw;
	char buf[TUI_TERMQUERY_MAX];
	size_t n = 0;
	long d;

	q->light = q->sixel = -1;
	q->nkeys = 0;
	if (isatty(fd) && isatty(out_fd) && tcgetattr(fd, &old) == 0) {
		raw = old;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		if (tcsetattr(fd, TCSANOW, &raw) == 0) {
			const char *ask = ask_bg ? "\033]11;?\033\\\033[c" : "\033[c";
			if (write_all(out_fd, ask, strlen(ask)) == 0)
				n = tq_read(fd, buf, sizeof buf, timeout_ms);
			tcsetattr(fd, TCSANOW, &old);
		}
	}
	if ((d = da1_find(buf, n)) >= 0)
		q->sixel = tui_gfx_da1_sixel(buf + d, n - (size_t)d);
	if (ask_bg) {
		q->light = tui_theme_bg_reply(buf, n);
		if (q->light < 0)
			q->light = tui_theme_colorfgbg(getenv("COLORFGBG"));
	}
	q->nkeys = tui_termquery_keys(buf, n, q->keys, sizeof q->keys);
}
