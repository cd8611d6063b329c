/* tui_bgquery: the OSC 11 background query, with its own short raw
 * mode on the tty (curses is not up yet). */
#include "tui_bgquery.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "terp/tui_theme.h"
#include "terp/util.h"

#define BGQ_MAX	512

/* Whether buf holds the DA1 reply (ESC [ ? ... c) that ends the wait. */
static int
bgq_da1_seen(const char *buf, size_t n)
{
	for (size_t i = 0; i + 2 < n; i++) {
		if (buf[i] != '\033' || buf[i + 1] != '[' || buf[i + 2] != '?')
			continue;
		for (size_t j = i + 3; j < n; j++) {
			if (buf[j] == 'c')
				return 1;
			if (!(buf[j] >= '0' && buf[j] <= '9') && buf[j] != ';')
				break;
		}
	}
	return 0;
}

static int
bgq_write(int fd, const char *s)
{
	size_t n = strlen(s), off = 0;

	while (off < n) {
		ssize_t w = write(fd, s + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	return 0;
}

/* Reads replies into buf until DA1 or the deadline; returns the length. */
static size_t
bgq_read(int fd, char *buf, int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;
	size_t n = 0;

	while (n < BGQ_MAX && !bgq_da1_seen(buf, n)) {
		int64_t left = end - now_ms();
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (left <= 0)
			break;
		int rc = poll(&p, 1, (int)left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0)
			break;
		ssize_t r = read(fd, buf + n, BGQ_MAX - n);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	return n;
}

int
tui_bgquery(int fd, int out_fd, int timeout_ms)
{
	struct termios old, raw;
	char buf[BGQ_MAX];
	size_t n;
	int light;

	if (!isatty(fd) || !isatty(out_fd) || tcgetattr(fd, &old) != 0)
		return tui_theme_colorfgbg(getenv("COLORFGBG"));
	raw = old;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	if (tcsetattr(fd, TCSANOW, &raw) != 0)
		return tui_theme_colorfgbg(getenv("COLORFGBG"));
	n = 0;
	if (bgq_write(out_fd, "\033]11;?\033\\\033[c") == 0)
		n = bgq_read(fd, buf, timeout_ms);
	/* what arrived after the replies (keys typed) is dropped with them */
	tcsetattr(fd, TCSANOW, &old);
	light = tui_theme_bg_reply(buf, n);
	return light >= 0 ? light : tui_theme_colorfgbg(getenv("COLORFGBG"));
}
