/* tui_spawn: the one way the notebook UI runs another program: $EDITOR
 * with the terminal handed over, a clipboard tool fed on stdin, and
 * xdg-open detached. The child drops terp's signal set-up first
 * (loop_signal_reset_child), so the program starts as from a shell. */
#include "tui_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "terp/loop.h"
#include "terp/util.h"

int
tui_spawn_found(const char *prog)
{
	const char *path = getenv("PATH");
	if (!path)
		return 0;
	char *dup = xstrdup(path), *save = NULL;
	int found = 0;
	for (char *d = strtok_r(dup, ":", &save); d && !found;
	    d = strtok_r(NULL, ":", &save)) {
		char *f = xasprintf("%s/%s", *d ? d : ".", prog);
		found = access(f, X_OK) == 0;
		free(f);
	}
	free(dup);
	return found;
}

/* Leaves curses for a program that needs the terminal. */
static void
screen_suspend(void)
{
	fputs("\033[?2004l", stdout);
	fflush(stdout);
	def_prog_mode();
	endwin();
}

static void
screen_resume(struct tui *t)
{
	reset_prog_mode();
	fputs("\033[?2004h", stdout);
	fflush(stdout);
	clearok(curscr, TRUE);
	t->lay.rows = -1;	/* force a relayout: the size may have changed */
	tui_mark(t);
}

void
tui_spawn_suspend(struct tui *t)
{
	struct sigaction dfl, old;

	screen_suspend();
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(SIGTSTP, &dfl, &old);
	/* the whole job, as a shell's ^Z would (vim does the same); in
	 * an orphaned process group (no job control) the kernel drops it
	 * and the screen simply comes back */
	kill(0, SIGTSTP);
	sigaction(SIGTSTP, &old, NULL);
	screen_resume(t);
}

/* The child's stdin, stdout and stderr. */
static void
child_stdio(const struct tui *t, enum tui_spawn_how how, int in_fd)
{
	if (how == TUI_SPAWN_TERMINAL) {
		/* the terminal's ^C and ^\ are the program's now */
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		if (t->saved_stderr >= 0)	/* the tty, not the memfd */
			dup2(t->saved_stderr, 2);
		return;
	}
	int fd = open("/dev/null", O_RDWR);
	dup2(in_fd >= 0 ? in_fd : fd, 0);
	dup2(fd, 1);
	dup2(fd, 2);
}

/* In the forked child: never returns. */
static void
child_exec(const struct tui *t, const char *const argv[],
    enum tui_spawn_how how, int in_fd)
{
	loop_signal_reset_child();
	if (how == TUI_SPAWN_DETACHED) {
		setsid();
		if (fork() != 0)
			_exit(0);	/* the grandchild runs on, adopted by init */
	}
	child_stdio(t, how, in_fd);
	execvp(argv[0], (char *const *)argv);
	_exit(127);
}

/* Writes input to the child's stdin and closes both ends of the pipe. */
static void
feed(int p[2], pid_t pid, const char *input)
{
	close(p[0]);
	if (pid > 0) {
		struct sigaction ign = { .sa_handler = SIG_IGN }, op;
		sigaction(SIGPIPE, &ign, &op);
		write_all(p[1], input, strlen(input));
		sigaction(SIGPIPE, &op, NULL);
	}
	close(p[1]);
}

int
tui_spawn(struct tui *t, const char *const argv[], enum tui_spawn_how how,
    const char *input)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, oint, oquit;
	int p[2] = { -1, -1 }, status = -1, saved;

	if (input && pipe2(p, O_CLOEXEC) < 0)
		return -1;
	if (how == TUI_SPAWN_TERMINAL) {
		screen_suspend();
		/* the ^C typed for the program must not cancel terp's work */
		sigaction(SIGINT, &ign, &oint);
		sigaction(SIGQUIT, &ign, &oquit);
	}
	pid_t pid = fork();
	if (pid == 0)
		child_exec(t, argv, how, p[0]);
	saved = errno;
	if (input)
		feed(p, pid, input);
	if (pid > 0)
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	if (how == TUI_SPAWN_TERMINAL) {
		sigaction(SIGINT, &oint, NULL);
		sigaction(SIGQUIT, &oquit, NULL);
		screen_resume(t);
	}
	if (pid < 0) {
		errno = saved;
		return -1;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int
tui_spawn_editor(struct tui *t, const char *path)
{
	const char *ed = getenv("VISUAL");
	if (!ed || !*ed)
		ed = getenv("EDITOR");
	if (!ed || !*ed)
		ed = "vi";
	/* through sh: $EDITOR may hold arguments ("code -w") */
	char *cmd = xasprintf("%s \"$1\"", ed);
	const char *argv[] = { "/bin/sh", "-c", cmd, "sh", path, NULL };
	int st = tui_spawn(t, argv, TUI_SPAWN_TERMINAL, NULL);
	free(cmd);
	return st;
}

/* Whether the environment variable is set to something. */
static int
env_set(const char *name)
{
	const char *v = getenv(name);
	return v != NULL && *v != '\0';
}

int
tui_spawn_clipboard(struct tui *t, const char *text)
{
	const char *argv[4] = { NULL };
	if (env_set("WAYLAND_DISPLAY") && tui_spawn_found("wl-copy"))
		argv[0] = "wl-copy";
	else if (env_set("DISPLAY") && tui_spawn_found("xclip")) {
		argv[0] = "xclip";
		argv[1] = "-selection";
		argv[2] = "clipboard";
	} else if (env_set("DISPLAY") && tui_spawn_found("xsel")) {
		argv[0] = "xsel";
		argv[1] = "-b";
		argv[2] = "-i";
	} else
		return -1;
	return tui_spawn(t, argv, TUI_SPAWN_PIPE, text) == 0 ? 0 : -1;
}
