"""`terp -p` on a terminal (issue 12, item 16), under a real pty: a long
cell shows a live line (how long it has run, its latest output line once
the head is cut) redrawn in place on stderr, never in a pipe or with
--json; Ctrl-C in a cell is one interruption, reported once, exit 130,
and reaches only terp (the sandbox is not in the terminal's process
group)."""
import json
import os
import pty
import re
import select
import signal
import sys
import time

import pytest

from conftest import GATE, ROOT, TERP, children, release, wait_until

sys.path.insert(0, str(ROOT / "tests"))

KEY = "sk-terp-test-0123456789"
FORTY = "for i in range(40):\n    print('line', i, flush=True)\n"


def cell_turn(code):
    return {"openai": {"tool_calls": [{"id": "c", "code": code}]}}


class Pty:
    """terp on a pty of its own (its controlling terminal, terp the
    foreground process group), as from a shell."""

    def __init__(self, args, env, cwd):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            try:
                os.chdir(cwd)
                os.execve(str(TERP), [str(TERP), *map(str, args)], env)
            finally:
                os._exit(127)
        self.out = b""
        self.rc = None

    def pump(self):
        """Reads what is there; False at the end."""
        r, _, _ = select.select([self.fd], [], [], 0.05)
        if not r:
            return True
        try:
            b = os.read(self.fd, 65536)
        except OSError:          # EIO: the other side is closed
            return False
        self.out += b
        return bool(b)

    def wait_for(self, pattern, what):
        rx = re.compile(pattern, re.S)
        return wait_until(lambda: rx.search(self.out) or (not self.pump() and
                          rx.search(self.out)), what, timeout=120)

    def finish(self, timeout=120):
        """Reads to the end; the exit status. The deadline is a safety
        net: a terp that never ends is killed and fails the test."""
        end = time.monotonic() + timeout
        while self.pump():
            if time.monotonic() > end:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                pytest.fail("terp did not end within %d s:\n%s"
                            % (timeout, self.out.decode(errors="replace")), pytrace=False)
        _, st = os.waitpid(self.pid, 0)
        os.close(self.fd)
        self.rc = os.waitstatus_to_exitcode(st)
        return self.rc


def flags(srv):
    return ["--provider", "openai", "--base-url", srv.url]


def test_a_long_cell_shows_a_live_line_redrawn_in_place(env, fake, tmp_path):
    srv = fake([cell_turn(FORTY + GATE + "print('after')"),
                {"openai": {"text": "Done."}}])
    env = dict(env, OPENAI_API_KEY=KEY)
    t = Pty(["-p", "q", *flags(srv)], env, tmp_path)
    # the head is cut after 12 lines; the live line shows the latest one
    # and the time, and waits at the start of its line
    t.wait_for(rb"\r    \[1\] running \d+\.\d s \xe2\x94\x82 line 39\x1b\[K",
               "the live line with the cell's latest output line")
    release(env)
    assert t.finish() == 0, t.out.decode(errors="replace")
    text = t.out.decode(errors="replace")
    assert "│ line 11\r\n    │ …\r\n" in text, text
    assert "│ line 12\r\n" not in text, text
    # the line is cleared before the cell's result and never left behind;
    # the output's last line stays above the result
    last = text.rindex("running")
    rest = text[last:]
    assert re.match(r"running [^\r\n]*\x1b\[K\r\x1b\[K    │ after\r\n"
                    r"    \[1\] ok \(\d+ ms\)\r\n", rest), rest
    assert text.rstrip().endswith("Done.") or "Done." in text, text


def test_a_short_cell_has_no_live_line(env, fake, tmp_path):
    srv = fake([cell_turn("print('quick')"), {"openai": {"text": "Done."}}])
    env = dict(env, OPENAI_API_KEY=KEY)
    t = Pty(["-p", "q", *flags(srv)], env, tmp_path)
    assert t.finish() == 0
    assert b"running" not in t.out and b"\x1b[K" not in t.out, t.out


def test_no_live_line_with_json_on_a_terminal(env, fake, tmp_path):
    srv = fake([cell_turn(FORTY + GATE), {"openai": {"text": "Done."}}])
    env = dict(env, OPENAI_API_KEY=KEY)
    t = Pty(["-p", "q", "--json", *flags(srv)], env, tmp_path)
    # the stdout events' text, however the driver chunked it
    def streamed():
        t.pump()
        text = ""
        for l in t.out.decode(errors="replace").replace("\r\n", "\n").splitlines():
            try:
                e = json.loads(l)
            except ValueError:
                continue         # a line still arriving
            if e.get("type") == "stdout":
                text += e["text"]
        return "line 39\n" in text
    wait_until(streamed, "the cell's last line as an event", timeout=120)
    release(env)
    assert t.finish() == 0
    lines = t.out.decode().replace("\r\n", "\n").splitlines()
    assert all(json.loads(l)["type"] for l in lines), lines
    assert b"\x1b" not in t.out


def test_ctrl_c_in_a_cell_is_one_interruption(env, fake, tmp_path):
    srv = fake([cell_turn("import time\nprint('sleeping', flush=True)\ntime.sleep(600)"),
                {"openai": {"text": "never asked"}}])
    env = dict(env, OPENAI_API_KEY=KEY)
    t = Pty(["-p", "q", *flags(srv)], env, tmp_path)
    t.wait_for(rb"sleeping", "the cell's output")
    # The terminal's Ctrl-C goes to its foreground process group: terp's.
    # Nothing of the sandbox may be in it (without root, bwrap is not the
    # init of a pid namespace and died of the SIGINT: the cell crashed).
    fg = os.tcgetpgrp(t.fd)
    assert fg == os.getpgid(t.pid)
    tree, todo = [], [str(t.pid)]
    while todo:
        kids = children(todo.pop())
        tree += kids
        todo += kids
    assert tree, "the sandbox should be running"
    in_fg = []
    for p in tree:
        try:
            if os.getpgid(int(p)) == fg:
                in_fg.append(open("/proc/%s/cmdline" % p).read().split("\0")[0])
        except OSError:
            pass                 # gone meanwhile
    assert not in_fg, "in the terminal's process group: %s" % in_fg
    os.write(t.fd, b"\x03")
    rc = t.finish()
    text = t.out.decode(errors="replace")
    assert rc == 130, text
    assert len(re.findall(r"terp: interrupted cell \[1\] after \d+\.\d s; the session "
                          r"kept its state\r\n", text)) == 1, text
    for word in ("interrupted by the user", "crashed", "killed by signal", "restarted"):
        assert word not in text, text
    assert text.count("interrupted") == 1, text
    assert len(srv.requests()) == 1
