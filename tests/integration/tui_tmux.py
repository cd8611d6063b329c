"""tui_tmux: drives a program inside a private tmux server (its own -L
socket, so nothing else running tmux is touched) for the TUI tests."""
import os
import re
import shlex
import subprocess
import time
import uuid


class Tmux:
    def __init__(self, cmd, width=100, height=30, env=None, cwd=None):
        self.sock = "terp-test-" + uuid.uuid4().hex[:8]
        self.cwd = cwd
        envs = " ".join("%s=%s" % (k, shlex.quote(v)) for k, v in (env or {}).items())
        # the shell line reports the exit status and the tty modes after exit
        line = ("env %s %s; echo EXITED rc=$?; stty -a | tr '\\n' ' '; echo; sleep 600"
                % (envs, cmd))
        self.tmux("new-session", "-d", "-s", "t", "-x", str(width), "-y",
                  str(height), line)

    def tmux(self, *args, check=True):
        return subprocess.run(["tmux", "-L", self.sock, "-f", "/dev/null"] + list(args),
                              cwd=self.cwd, check=check, capture_output=True,
                              text=True).stdout

    def keys(self, *keys):
        self.tmux("send-keys", "-t", "t", *keys)

    def text(self, s):
        self.tmux("send-keys", "-t", "t", "-l", s)

    def screen(self, escapes=False):
        args = ["capture-pane", "-p", "-t", "t"]
        if escapes:
            args.append("-e")
        return self.tmux(*args)

    # The timeouts are safety nets (a screen that never comes fails the
    # test); the tests wait for what they expect to see, never for time.
    def wait(self, pattern, timeout=60.0, escapes=False):
        """Waits until the screen matches the regex; returns the screen."""
        end = time.monotonic() + timeout
        rx = re.compile(pattern, re.S)
        while True:
            s = self.screen(escapes)
            if rx.search(s):
                return s
            if time.monotonic() > end:
                raise AssertionError("screen never matched %r:\n%s" % (pattern, s))
            time.sleep(0.05)

    def wait_for(self, pred, timeout=60.0):
        """Waits until pred(screen) is true; returns the screen."""
        end = time.monotonic() + timeout
        while True:
            s = self.screen()
            if pred(s):
                return s
            if time.monotonic() > end:
                raise AssertionError("screen never satisfied the test:\n%s" % s)
            time.sleep(0.05)

    def resize(self, w, h):
        self.tmux("resize-window", "-t", "t", "-x", str(w), "-y", str(h))

    def pid(self):
        return int(self.tmux("display", "-p", "-t", "t", "#{pane_pid}").strip())

    def close(self):
        self.tmux("kill-server", check=False)
