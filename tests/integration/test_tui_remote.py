"""The TUI on a remote backend (issue 13 §1, §3), driven through tmux:
the real binary with the recorded demo model and --sandbox on a real
Jupyter Server (test_jupyter.Server). The status bar names where the
session runs, and the line on the server's isolation is shown once,
when connecting: not again after a cell or a restart."""
import os
import re
import signal

import pytest

from conftest import children, private_env, traversable
from test_jupyter import TOKEN
from tui_tmux import Tmux

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TERP = os.path.join(ROOT, "terp")
NOTICE = "The session runs on jupyter 127.0.0.1:"


@pytest.fixture
def tui(tmp_path, jupyter):
    started = []
    traversable(str(tmp_path))

    def start(*args, width=120, height=40):
        env = private_env(tmp_path, {"PATH": os.environ.get("PATH", "")})
        env.update({"TERM": "tmux-256color", "LANG": "C.UTF-8", "DISPLAY": "",
                    "WAYLAND_DISPLAY": "", "JUPYTER_TOKEN": TOKEN})
        t = Tmux("%s --provider demo --sandbox jupyter+%s %s"
                 % (TERP, jupyter.url, " ".join(args)), width, height, env, cwd=str(tmp_path))
        started.append(t)
        return t
    yield start
    for t in started:
        t.close()


def status(s):
    """The status bar: the row above the one-row input line."""
    return s.splitlines()[-2]


def words(text):
    """A regex for text wherever the pane wraps it."""
    return r"\s+".join(re.escape(w) for w in text.split())


def left(s, w=87):
    """The left column of the split screen (conversation and cells)."""
    return "\n".join(l[:w] for l in s.splitlines())


def ask(t, q):
    t.text(q)
    t.keys("Enter")


def test_status_bar_names_the_server_and_the_isolation_is_said_once(tui, jupyter):
    port = jupyter.url.rsplit(":", 1)[1]
    # tall enough that the notice stays on screen to be counted
    t = tui(height=60)
    s = t.wait(r"ready on jupyter 127\.0\.0\.1:%s" % port, timeout=120)
    assert "ready on jupyter 127.0.0.1:%s" % port in status(s), status(s)
    assert s.count(NOTICE) == 1, s
    assert "whatever isolation that server gives" in s, s
    ask(t, "/py x = 6 * 7; print(x)")
    s = t.wait(r"\[1\] you · ok", timeout=120)
    assert "42" in s, s
    ask(t, "/restart")
    s = t.wait(r"ready on jupyter 127\.0\.0\.1:%s" % port, timeout=120)
    ask(t, "/py print('x' in dir())")
    s = t.wait(r"\[2\] you · ok", timeout=120)
    assert re.search(r"False", s), s
    s = t.wait_for(lambda s: "ready on jupyter 127.0.0.1:%s" % port in status(s), timeout=120)
    assert s.count(NOTICE) == 1, s
    ask(t, "/quit")
    t.wait(r"EXITED rc=0", timeout=120)


def test_resume_in_the_tui_reaches_the_same_kernel(tui, jupyter, tmp_path):
    """terp killed with the kernel alive: the resumed notebook says the
    remote session is reached again (not that the sandbox is new), and
    the variable is there."""
    port = jupyter.url.rsplit(":", 1)[1]
    t = tui()
    t.wait(r"ready on jupyter 127\.0\.0\.1:%s" % port, timeout=120)
    ask(t, "/py x = 41")
    t.wait(r"\[1\] you · ok", timeout=120)
    [terp] = [p for p in children(t.pid()) if "terp" in open("/proc/%s/comm" % p).read()]
    os.kill(int(terp), signal.SIGKILL)
    t.wait_for(lambda s: "EXITEDrc=137" in re.sub(r"\s", "", s), timeout=120)
    [sid] = os.listdir(tmp_path / "state" / "terp" / "sessions")
    t = tui("--resume", sid)
    s = t.wait(r"ready on jupyter 127\.0\.0\.1:%s" % port, timeout=120)
    assert re.search(words("terp reaches the same remote session again: variables and "
                           "imports from before are kept"), left(s)), s
    assert "The sandbox is new" not in s, s
    ask(t, "/py print(x + 1)")
    s = t.wait(r"\[2\] you · ok", timeout=120)
    assert "42" in s and "was lost" not in s, s
    # reached with its state: nothing to re-run is offered
    assert "/replay" not in re.sub(r"\s", "", left(s)), s
    ask(t, "/quit")
    t.wait(r"EXITED rc=0", timeout=120)
    # the clean exit shut the kernel down: the next resume finds it
    # gone, and offers then to re-run the cells that succeeded
    t = tui("--resume", sid)
    s = t.wait(words("the remote session's state was lost: /replay re-runs the 2 cells "
                     "that succeeded"), timeout=120)
    assert "restarted the Jupyter kernel" in re.sub(r"\s+", " ", s), s
    ask(t, "/quit")
    t.wait(r"EXITED rc=0", timeout=120)
