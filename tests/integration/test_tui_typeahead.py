"""Keys typed while terp asks the terminal what it is (OSC 11 for the
background, DA1 for sixel, before curses starts) reach the input line,
in order, and the terminal's answers never do. terp runs in a pty of the
test's own, which plays the terminal: one that answers nothing (the
questions wait out their time), and one that answers after the user has
typed."""
import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import termios
import time

from tui_tmux import TERP, model_args, model_env

ANSWER = "It is four."
SCRIPT = {"turns": [{"openai": {"text": ANSWER}}]}


class Pty:
    """terp on a pty of 100x30 that the test reads and writes."""

    def __init__(self, args, env, cwd):
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        self.p = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env,
                                  cwd=cwd, start_new_session=True,
                                  preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        os.close(slave)
        self.fd, self.buf = master, b""

    def read_until(self, pred, what, timeout=60):
        end = time.monotonic() + timeout
        while not pred(self.buf):
            left = end - time.monotonic()
            assert left > 0, "%s never came; terp wrote: %r" % (what, self.buf[-800:])
            r, _, _ = select.select([self.fd], [], [], min(left, 0.2))
            if r:
                try:
                    data = os.read(self.fd, 1 << 16)
                except OSError:
                    data = b""
                assert data, "terp exited: %r" % self.buf[-800:]
                self.buf += data

    def write(self, data):
        os.write(self.fd, data)

    def close(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        os.close(self.fd)


def start(fake, tmp_path):
    srv = fake(SCRIPT)
    env = dict(model_env(tmp_path), TERM="xterm-256color", PATH="/usr/bin:/bin")
    env.pop("TMUX", None)
    port = int(srv.root.rsplit(":", 1)[1])
    return srv, Pty([TERP, *model_args(port, tmp_path / "out")], env, tmp_path)


def question_of(srv):
    """The user's text of the first request the model got."""
    for _ in range(100):
        reqs = srv.requests()
        if reqs:
            msgs = reqs[0]["body"]["messages"]
            return [m["content"] for m in msgs if m["role"] == "user"][-1]
        time.sleep(0.1)
    raise AssertionError("the model got no request")


def test_a_question_typed_before_the_screen_is_up_is_asked(fake, tmp_path):
    """A terminal that answers nothing: the question and Enter, typed as
    soon as terp writes its first byte (the question to the terminal), are
    what the model gets. They were lost with the unanswered query."""
    srv, t = start(fake, tmp_path)
    try:
        t.read_until(lambda b: b"\033[c" in b, "the DA1 question")
        t.write(b"What is 2+2?\r")
        t.read_until(lambda b: ANSWER.encode() in b, "the answer")
        assert question_of(srv) == "What is 2+2?"
    finally:
        t.close()


def test_keys_before_the_terminals_answer_are_kept_and_the_answer_is_not(fake, tmp_path):
    """A terminal that answers after the user typed: the keys stay, in
    order, and the answers (a white background, DA1 with sixel) are not
    taken as keys."""
    srv, t = start(fake, tmp_path)
    try:
        t.read_until(lambda b: b"\033]11;?" in b and b"\033[c" in b, "the two questions")
        t.write(b"Sum the q")
        t.write(b"\033]11;rgb:ffff/ffff/ffff\033\\\033[?62;4;22c")
        t.write(b"ty column\r")
        t.read_until(lambda b: ANSWER.encode() in b, "the answer")
        assert question_of(srv) == "Sum the qty column"
    finally:
        t.close()
