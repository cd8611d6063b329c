"""/replay in the notebook (issue 12, item 5), through tmux with the real
binary and the recorded demo model: after a state in which every cell
failed is lost, /replay still rebuilds the one before it, and the user
can name the cells to re-run (/replay 3, 1-5, 2,4-6)."""
import os
import re

import pytest

from conftest import private_env, traversable
from tui_tmux import Tmux

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TERP = os.path.join(ROOT, "terp")
SALES = os.path.join(ROOT, "examples", "sales.csv")


@pytest.fixture
def real(tmp_path):
    started = []
    traversable(str(tmp_path))

    def start(*args, width=100, height=40):
        env = private_env(tmp_path, {"PATH": os.environ.get("PATH", "")})
        env.update({"TERM": "tmux-256color", "LANG": "C.UTF-8", "DISPLAY": "",
                    "WAYLAND_DISPLAY": ""})
        t = Tmux("%s --provider demo %s" % (TERP, " ".join(args)), width, height,
                 env, cwd=str(tmp_path))
        started.append(t)
        t.wait(r"│ ready", timeout=60)
        return t
    yield start
    for t in started:
        t.close()


def ask(t, line):
    t.text(line)
    t.keys("Enter")


def words(text):
    """A regex for text wherever the pane wraps it."""
    return r"\s+".join(re.escape(w) for w in text.split())


def test_replay_after_a_failed_cell_and_a_restart(real):
    t = real(SALES)
    ask(t, "/py y = 42")
    t.wait(r"\[1\] you · ok")
    ask(t, "/reset")
    t.wait(r"the Python namespace was reset")
    ask(t, "/py print(y)")
    t.wait(r"\[2\] you · error")
    ask(t, "/restart")
    t.wait(r"restarting the sandbox")
    t.wait(r"│ ready", timeout=60)
    # the restart lost a state in which every cell failed: y = 42's is
    # still the one to rebuild
    ask(t, "/replay")
    s = t.wait(r"replay done: 1 cell re-ran", timeout=60)
    assert re.search(words("replaying 1 cell that succeeded before the state was "
                           "lost: [1]"), s), s
    assert "nothing to replay" not in s, s
    t.wait(r"\[3\] you · re-run of \[1\] · ok")
    ask(t, "/py print(y + 1)")
    s = t.wait(r"\[4\] you · ok")
    assert re.search(r"│\s+43\s", s) or re.search(r"^\s+43\s", s, re.M), s


def test_replay_the_cells_you_name(real):
    t = real(SALES)
    ask(t, "/py a = 1")
    t.wait(r"\[1\] you · ok")
    ask(t, "/py b = a + 1")
    t.wait(r"\[2\] you · ok")
    ask(t, "/py 1/0")
    t.wait(r"\[3\] you · error")
    ask(t, "/py c = 10")
    t.wait(r"\[4\] you · ok")
    ask(t, "/restart")
    t.wait(r"restarting the sandbox")
    t.wait(r"│ ready", timeout=60)
    # a bad list is one line, and nothing runs
    ask(t, "/replay 2-x")
    s = t.wait(r"replay: not a cell list")
    assert re.search(words("replay: not a cell list: use N, N-M or a list like 2,4-6"), s), s
    ask(t, "/replay 9")
    t.wait(r"replay: no cell \[9\]: the last is \[4\]")
    ask(t, "/replay 3")
    t.wait(r"replay: nothing to replay: \[3\] failed the first time")
    # 1-2,3 names a failed cell: skipped, and said so
    ask(t, "/replay 1-2,3")
    s = t.wait(r"replay done: 2 cells re-ran", timeout=60)
    assert re.search(words("replaying 2 cells you chose: [1], [2] (not [3]: failed "
                           "the first time)"), s), s
    s = t.wait(r"\[6\] you · re-run of \[2\] · ok")
    assert "re-run of [3]" not in s and "re-run of [4]" not in s, s
    ask(t, "/py print(a + b, 'c' in dir())")
    s = t.wait(r"\[7\] you · ok")
    assert re.search(r"3 False", s), s


def test_help_and_manual_give_the_syntax(real):
    t = real(SALES, width=120)
    ask(t, "/help")
    s = t.wait(r"/replay \[N-M\]")
    assert "/replay 2,4-6" in s, s
    man = open(os.path.join(ROOT, "man", "terp.1")).read()
    assert ".B /replay 2,4\\-6" in man, "man/terp.1 lacks the cell list"
