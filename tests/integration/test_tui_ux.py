"""Issue 12 (the notebook as a Jupyter and euporie user judges it): the
items that live in the notebook UI, each driven through tmux. Most run
the TUI against the fake core (tests/tui/fake_agent.c: "long answer",
"print N lines" and "long loop" in a question choose its script); the
ones that need a session folder or the command line run the real binary
with the recorded demo model."""
import os
import re
import subprocess
import sys

import pytest

from conftest import private_env, traversable
from tui_tmux import Tmux

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HARNESS = os.path.join(ROOT, "build", "tui-harness")
TERP = os.path.join(ROOT, "terp")
BLOCKS = "▘▝▀▖▌▞▛▗▚▐▜▄▙▟█"


@pytest.fixture(scope="module")
def harness():
    subprocess.run([os.path.join(ROOT, "tests", "tui", "build.sh")], check=True,
                   capture_output=True, stdin=subprocess.DEVNULL)
    return HARNESS


@pytest.fixture(scope="module")
def line_chart(tmp_path_factory):
    """A line chart as matplotlib draws one with a grid: two series,
    grid lines, a legend."""
    path = str(tmp_path_factory.mktemp("png") / "line.png")
    subprocess.run([sys.executable, "-c", """
import matplotlib; matplotlib.use('Agg')
import matplotlib.pyplot as plt
import numpy as np
x = np.arange(24)
fig, ax = plt.subplots(figsize=(8, 4.5))
ax.plot(x, 1000 + 300 * np.sin(x / 3) + 20 * x, label='online')
ax.plot(x, 800 + 100 * np.cos(x / 4), label='retail')
ax.grid(True); ax.legend(); ax.set_title('revenue by month')
fig.savefig(%r, dpi=100)
""" % path], check=True, stdin=subprocess.DEVNULL)
    return path


@pytest.fixture
def tui(harness, line_chart, tmp_path):
    sessions = []

    def start(width=100, height=30, **env):
        e = {"FAKE_PNG": line_chart, "FAKE_HISTORY": str(tmp_path / "history"),
             "TERM": "tmux-256color", "XDG_STATE_HOME": str(tmp_path / "state"),
             "XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path),
             "LANG": "C.UTF-8", "DISPLAY": "", "WAYLAND_DISPLAY": ""}
        e.update(env)
        t = Tmux(harness, width, height, e, cwd=str(tmp_path))
        sessions.append(t)
        t.wait(r"ready")
        return t
    yield start
    for t in sessions:
        t.close()


@pytest.fixture
def real(tmp_path):
    """The real binary with the recorded demo model, in tmp_path."""
    started = []
    traversable(str(tmp_path))

    def start(*args, width=100, height=30, ready=True):
        env = private_env(tmp_path, {"PATH": os.environ.get("PATH", "")})
        env.update({"TERM": "tmux-256color", "LANG": "C.UTF-8", "DISPLAY": "",
                    "WAYLAND_DISPLAY": ""})
        t = Tmux("%s --provider demo %s" % (TERP, " ".join(args)), width, height,
                 env, cwd=str(tmp_path))
        started.append(t)
        if ready:
            t.wait(r"│ ready", timeout=60)
        return t
    yield start
    for t in started:
        t.close()


def ask(t, q):
    t.text(q)
    t.keys("Enter")


def status(s):
    """The status bar: the row above the one-row input line."""
    return s.splitlines()[-2]


def left(s, w):
    """The left column of the split screen (conversation and cells)."""
    return "\n".join(l[:w] for l in s.splitlines())


# ---- item 6: themes ----

def test_light_theme_works_from_any_folder(tui):
    # the harness runs in a folder of its own, far from themes/
    t = tui(FAKE_THEME="light")
    ask(t, "What month had the highest revenue?")
    s = t.wait(r"online channel")
    assert "not found" not in s, s
    # light's conversation.user is bold blue; default's is bold cyan
    e = t.screen(escapes=True)
    assert re.search(r"\x1b\[34m(\x1b\[49m)?› What month", e), e


def test_an_unknown_theme_is_one_line_before_the_screen(tmp_path):
    env = private_env(tmp_path)
    r = subprocess.run([TERP, "--provider", "demo", "--theme", "nosuch"],
                       cwd=str(tmp_path), env=env, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 2, r
    assert r.stderr.startswith("terp: theme 'nosuch' not found (built in: "
                               "default, light, mono; your own goes in "), r.stderr
    assert r.stderr.count("\n") == 1 and r.stdout == "", r
    # nothing was started: no session was saved
    assert not (tmp_path / "state" / "terp" / "sessions").exists()


# ---- item 8: folding by the room there is ----

def left_lines(s, w=75):
    return [l[:w].strip() for l in s.splitlines()]


def test_streaming_output_fills_the_pane_before_it_folds(tui):
    t = tui(100, 40)
    ask(t, "run a long loop")
    t.wait(r"running cell \[1\]")
    # 22 rows in the cells pane: a dozen lines of output fit unfolded
    s = t.wait_for(lambda s: left_lines(s).count("tick") >= 12)
    assert "lines hidden" not in s, s
    # and once they no longer fit, the fold keeps the pane full: header,
    # code, head, marker, tail
    s = t.wait(r"lines hidden")
    assert "[1] model · running" in s, s
    assert left_lines(s).count("tick") >= 12, s
    t.keys("C-c")
    t.wait(r"interrupted")


def test_a_finished_output_is_not_folded_when_it_fits(tui):
    t = tui(100, 40, FAKE_PNG="/nonexistent")
    ask(t, "print 15 lines")
    s = t.wait(r"online channel")
    assert "lines hidden" not in s, s
    for i in range(1, 16):
        assert "output line %d" % i in left_lines(s), s


# ---- item 9: the user's own cells ----

def test_hand_run_cells_are_the_users_own_block(tui):
    t = tui()
    ask(t, "What month had the highest revenue?")
    t.wait(r"online channel")
    ask(t, "/py print(1)")
    s = t.wait(r"\[2\] you · ok")
    assert "› you ran cell [2] · ok" in s, s
    assert "▸ ran cell [2]" not in s
    # a re-run says which cell it copied, in both panes
    t.keys("Tab", "Tab", "g")            # cells pane, cell [1]
    t.wait(r"▸\[1\]")
    t.keys("r")
    s = t.wait(r"\[3\] you · re-run of \[1\] · ok")
    assert "› you ran cell [3] (re-run of [1]) · ok" in s, s
    # in the user's colour (bold cyan, as the question), not underlined
    # as the links to the model's cells
    e = t.screen(escapes=True)
    assert re.search(r"\x1b\[1m\x1b\[36m(\x1b\[49m)?› you ran cell \[3\]", e), e


# ---- item 10: copying ----

def buffer(t):
    return t.tmux("show-buffer", check=False)


# ---- item 17: what the status bar says ----

def test_a_new_command_clears_what_the_bar_said_before(tui, tmp_path):
    t = tui()
    ask(t, "/load nothing.csv")
    s = t.wait(r"load: cannot read data file nothing\.csv")
    assert "load: cannot read" in status(s)
    (tmp_path / "second.csv").write_text("a,b\n1,2\n")
    ask(t, "/load second.csv")
    s = t.wait(r"loaded second\.csv as /workspace/data/second\.csv")
    assert "cannot read" not in status(s), s
    ask(t, "/model")
    t.wait(r"model: fake-1")
    ask(t, "/model gpt-4o")
    s = t.wait(r"model set to gpt-4o")
    assert "fake-1" not in status(s), s
    assert "fake · gpt-4o" in status(s), s


# ---- item 19: smaller ----

def test_load_tab_completion_then_enter(tui, tmp_path):
    t = tui()
    (tmp_path / "second.csv").write_text("a,b\n1,2\n")
    t.text("/load sec")
    t.keys("Tab")
    t.wait(r"› /load second\.csv")
    t.keys("Enter")
    s = t.wait(r"loaded second\.csv as|load: ")
    assert "loaded second.csv as /workspace/data/second.csv" in s, s


# ---- item 12: thumbnails ----

def thumb_rows(s, x0, x1):
    return [l[x0:x1] for l in s.splitlines() if sum(ch in BLOCKS for ch in l[x0:x1]) >= 3]


@pytest.fixture(scope="module")
def tall_chart(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("png") / "tall.png")
    subprocess.run([sys.executable, "-c", """
import matplotlib; matplotlib.use('Agg')
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(6, 4))
ax.plot([1, 2, 3, 4, 5], [3, 1, 4, 1, 5]); ax.set_title('revenue')
fig.savefig(%r, dpi=80)
""" % path], check=True, stdin=subprocess.DEVNULL)
    return path
