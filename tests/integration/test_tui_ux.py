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
from tui_tmux import BLOCKS, SALES, TERP, ask, fake_core_env, status, words


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
def tui(fake_core, line_chart, tmux, tmp_path):
    def start(width=100, height=30, **env):
        e = fake_core_env(tmp_path, line_chart)
        e.update(env)
        return tmux(fake_core, e, tmp_path, width, height, ready=r"ready")
    return start


@pytest.fixture
def real(tmux, tmp_path):
    """The real binary with the recorded demo model, in tmp_path."""
    traversable(str(tmp_path))

    def start(*args, width=100, height=30, ready=True, provider="demo"):
        env = private_env(tmp_path, {"PATH": os.environ.get("PATH", "")})
        env.update({"TERM": "tmux-256color", "LANG": "C.UTF-8", "DISPLAY": "",
                    "WAYLAND_DISPLAY": ""})
        flags = "--provider %s " % provider if provider else ""
        return tmux("%s %s%s" % (TERP, flags, " ".join(args)), env, tmp_path,
                    width, height, ready=r"│ ready" if ready else None)
    return start


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


# ---- item 7: the answer gets the room ----

def test_a_final_answer_is_fully_visible_at_80x24(tui):
    t = tui(80, 24)
    ask(t, "give me a long answer")
    s = t.wait(r"That is the end of the answer\.")
    conv = s.split("─ cells")[0]
    # every line of the answer, from its heading to its last, above the
    # cells pane
    for want in ("Revenue per channel", "The online channel had the highest",
                 "│ channel │ revenue │ share │", "│ retail  │ 980.0",
                 "That is the end of the answer."):
        assert want in conv, s
    assert "End: follow" not in s, s


def test_an_answer_taller_than_the_pane_shows_its_start_and_end_follows(tui):
    t = tui(80, 20)
    ask(t, "give me a long answer")
    s = t.wait(r"End: follow")
    # the answer starts at the top of the pane, not half scrolled off
    assert s.splitlines()[1].strip().startswith("Revenue per channel"), s
    assert "That is the end of the answer." not in s
    # End on the (empty) input line follows again: the answer's end
    t.keys("End")
    s = t.wait(r"That is the end of the answer\.")
    assert "End: follow" not in s, s


def test_wrapped_text_keeps_a_right_margin(tui):
    t = tui(80, 24)
    # one long word: the wrap breaks it at the width itself
    ask(t, "x" * 120)
    t.wait(r"online channel")
    s = t.screen()
    convw = 80 - 24 - 1
    rows = s.split("─ cells")[0].splitlines()[1:]
    # the question wraps a column short of the files pane's border (a
    # line cut short ends in "…" there)
    assert sum(l.startswith("› x") or l.startswith("  xxx") for l in rows) == 3, s
    for l in rows:
        assert l[convw - 1] == " " or l[convw - 1] == "…", s


def cells_bg(e):
    """Per row of a `capture-pane -e` screen, each column's background
    (None: the terminal's own)."""
    rows = []
    for line in e.split("\n"):
        bg, row, i = None, [], 0
        while i < len(line):
            m = re.match(r"\x1b\[([0-9;]*)m", line[i:])
            if m:
                ps = [int(x) if x else 0 for x in m.group(1).split(";")]
                k = 0
                while k < len(ps):
                    p = ps[k]
                    if p == 0 or p == 49:
                        bg = None
                    elif 40 <= p <= 47 or 100 <= p <= 107:
                        bg = p
                    elif p == 48 and k + 2 < len(ps) and ps[k + 1] == 5:
                        bg = ps[k + 2]
                        k += 2
                    elif p == 38 and k + 2 < len(ps) and ps[k + 1] == 5:
                        k += 2
                    k += 1
                i += m.end()
                continue
            row.append(bg)
            i += 1
        rows.append(row)
    return rows


@pytest.fixture(scope="module")
def wide_chart(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("png") / "wide.png")
    subprocess.run([sys.executable, "-c", """
import matplotlib; matplotlib.use('Agg')
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(12, 3))
ax.plot(range(24), [i %% 5 for i in range(24)]); ax.grid(True)
fig.savefig(%r, dpi=80)
""" % path], check=True, stdin=subprocess.DEVNULL)
    return path


def test_a_cells_chart_keeps_the_right_margin(tui, wide_chart):
    t = tui(80, 40, FAKE_PNG=wide_chart)
    ask(t, "What month had the highest revenue?")
    s = t.wait(r"online channel")
    assert "▪ revenue.png" in s, s
    convw = 80 - 24 - 1
    rows = cells_bg(t.screen(escapes=True))
    lines = s.splitlines()
    top = next(i for i, l in enumerate(lines) if l.startswith("─ cells"))
    chart = [y for y in range(top + 1, len(lines) - 2)
             if sum(ch in BLOCKS for ch in lines[y][:convw]) >= 5]
    assert len(chart) >= 3, s
    # the chart is painted up to a column short of the border, no further
    assert any(rows[y][convw - 2] is not None for y in chart), s
    assert all(rows[y][convw - 1] is None for y in chart), s


def test_z_maximises_the_pane_and_f_hides_the_files(tui):
    t = tui()
    ask(t, "What month had the highest revenue?")
    t.wait(r"online channel")
    t.keys("Tab", "Tab")                 # the cells pane
    t.wait(r"Enter expand")
    t.keys("z")
    s = t.wait(r"cells pane maximised")
    assert s.splitlines()[0].startswith("─ cells 1 ─"), s
    assert "─ conversation" not in s and "─ files" not in s, s
    assert len(s.splitlines()[0]) == 100
    t.keys("z")
    s = t.wait(r"panes restored")
    assert "─ conversation" in s and "─ files 1 ─" in s
    t.keys("f")
    s = t.wait(r"files pane hidden")
    assert "─ files" not in s and "│" not in s.splitlines()[0], s
    assert re.match(r"─ conversation ─{80,}", s.splitlines()[0]), s
    # Tab skips the hidden pane: cells -> input
    t.keys("Tab")
    s = t.wait(r"Tab panes")
    t.keys("Tab", "Tab", "f")            # conversation, cells; f shows it
    s = t.wait(r"files pane shown")
    assert "─ files 1 ─" in s


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


def test_stderr_keeps_its_place_among_stdout(tui):
    t = tui(100, 40, FAKE_PNG="/nonexistent")
    ask(t, "mixed streams")
    s = t.wait(r"online channel")
    rows = left_lines(s)
    order = [next(i for i, l in enumerate(rows) if l == want) for want in (
        "1  2023-01  retail   980.0", "UserWarning: the first warning",
        "between the warnings", "UserWarning: the second warning",
        "after the warnings")]
    # as they were written (Jupyter's order), not stderr after all stdout
    assert order == sorted(order), s
    # stderr keeps its colour (yellow) in its place
    e = t.screen(escapes=True)
    assert re.search(r"\x1b\[33m(\x1b\[49m)?UserWarning: the first", e), e


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


def test_copy_code_output_and_answer_through_osc52(tui, tmp_path):
    t = tui(80, 24)
    # tmux keeps what an application sets with OSC 52 as a buffer
    t.tmux("set", "-s", "set-clipboard", "on")
    ask(t, "What month had the highest revenue?")
    t.wait(r"online channel")
    t.keys("Tab", "Tab")                 # the cells pane, cell [1]
    t.wait(r"Enter expand")
    t.keys("y")
    s = t.wait(r"copied the code of cell \[1\] \(OSC 52, cell-1\.py\)")
    assert buffer(t).startswith("import pandas as pd\ndf = pd.read_csv("), buffer(t)
    # once: where copies go without a clipboard tool
    assert "no clipboard tool" in s
    # the message fits the status bar at 80 columns (the token count
    # makes room)
    assert status(s).rstrip().endswith("(OSC 52, cell-1.py)"), s
    t.keys("Y")
    s = t.wait(r"copied the output of cell \[1\] \(OSC 52, out-1\.txt\)")
    assert "…" not in status(s), s
    assert buffer(t) == ("  month channel  revenue\n0  2023-01  online  1200.5\n"
                         "1  2023-01  retail   980.0\nnp.float64(2180.5)\n"), buffer(t)
    t.keys("BTab")                       # the conversation
    t.wait(r"y copy answer")
    t.keys("y")
    s = t.wait(r"copied the answer to question 1 \(OSC 52, answer-1\.md\)")
    assert "…" not in status(s), s
    assert buffer(t).startswith("The **online** channel had the highest revenue"), buffer(t)
    # without a session (the fake core) the copies land in the state folder
    assert (tmp_path / "state" / "terp" / "cell-1.py").exists()


def test_m_lets_the_terminal_have_the_mouse(tui):
    t = tui()
    flag = lambda: t.tmux("display", "-p", "-t", "t", "#{mouse_any_flag}").strip()
    assert flag() == "1"
    t.keys("Tab")
    t.wait(r"y copy answer")
    t.keys("m")
    t.wait(r"mouse off: the terminal selects text")
    assert flag() == "0"
    t.keys("m")
    t.wait(r"mouse on")
    assert flag() == "1"


def test_y_without_a_clipboard_writes_into_the_sessions_own_folder(real, tmp_path):
    t = real()
    t.tmux("set", "-s", "set-clipboard", "on")
    ask(t, "/py print(41 + 1)")
    t.wait(r"\[1\] you · ok")
    t.keys("Tab", "Tab")
    t.wait(r"Enter expand")
    t.keys("y")
    t.wait(r"copied the code of cell \[1\]")
    root = tmp_path / "state" / "terp" / "sessions"
    sessions = [p for p in root.iterdir() if p.is_dir()]
    assert len(sessions) == 1
    # in the session's folder, never in the folder of all sessions
    assert not (root / "cell-1.py").exists(), sorted(os.listdir(root))
    assert (sessions[0] / "cell-1.py").read_text() == "print(41 + 1)"
    t.keys("Escape")                     # back to the input line
    t.text("/quit")
    t.keys("Enter")
    t.wait(r"EXITED rc=0")


# ---- item 11: search ----

def test_search_the_cells_and_their_outputs(tui):
    t = tui()
    ask(t, "print 60 lines")
    s = t.wait(r"online channel")
    assert "output line 42" not in s     # folded away
    t.keys("Tab", "Tab")
    t.wait(r"Enter expand")
    t.keys("/")
    t.wait(r"\n/\s*\n")                  # the prompt
    t.text("line 42")
    t.keys("Enter")
    s = t.wait(r"output line 42")
    # the cell was expanded to show it (it was folded away), the view
    # moved there, and the match is highlighted
    assert "lines hidden" not in s and "End: follow" in s, s
    e = t.screen(escapes=True)
    assert re.search(r"\x1b\[7m[^\x1b]*line 42", e), e
    assert "n/N next" in status(s)
    # n: the only match again, round the end
    t.keys("n")
    t.wait(r"search went round the end")
    # Esc ends the search: no highlight; the pane keeps the focus
    t.keys("Escape")
    t.wait_for(lambda s: "n/N next" not in status(s))
    e = t.screen(escapes=True)
    assert not re.search(r"\x1b\[7m[^\x1b]*line 42", e), e
    # in the conversation, case ignored; N goes backwards
    t.keys("BTab", "/")
    t.wait(r"\n/\s*\n")
    t.text("ONLINE")
    t.keys("Enter")
    t.wait(r"pattern not found: ONLINE")
    t.keys("/")
    t.text("online")
    t.keys("Enter")
    t.wait(r"n/N next")
    e = t.screen(escapes=True)
    assert re.search(r"\x1b\[7m[^\x1b]*online", e), e


# ---- item 17: what the status bar says ----

def test_key_hints_follow_the_focused_pane(tui):
    t = tui()
    ask(t, "What month had the highest revenue?")
    t.wait(r"online channel")
    assert "Tab panes" in status(t.screen())
    t.keys("Tab")
    s = t.wait(r"y copy answer")
    assert "/ search" in status(s)
    t.keys("Tab")
    s = t.wait(r"Enter expand")
    assert "Enter expand · e edit · r re-run · y/Y copy" in status(s), s
    t.keys("Tab")
    s = t.wait(r"Enter preview")
    assert "o open · s save" in status(s), s


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


def test_a_question_typed_while_another_runs_is_queued(tui, tmp_path):
    go = tmp_path / "go"
    t = tui(FAKE_GO=str(go), FAKE_PNG="/nonexistent")
    ask(t, "run a long loop")
    t.wait(r"running cell \[1\]")
    ask(t, "What month had the highest revenue?")
    s = t.wait(r"queued, runs when this one is done")
    assert "already running" not in s and "busy" not in s, s
    assert "1 held" in status(s), s
    # the first ends; the queued question runs after it, by itself
    go.write_text("")
    s = t.wait(r"\[2\] model · ok")
    assert "› What month had the highest revenue?" in s, s
    assert "held" not in status(s), s
    # Ctrl-C cancels the running question and drops what was queued
    go.unlink()
    ask(t, "run a long loop again")
    t.wait(r"running cell \[3\]")
    ask(t, "a question that never runs")
    t.wait(r"queued, runs when")
    t.keys("C-c")
    s = t.wait(r"1 queued line dropped")
    s = t.wait_for(lambda s: "ready" in status(s))
    assert "› a question that never runs" not in s, s


# ---- item 13: first contact ----

def test_the_empty_notebook_shows_the_data_and_example_questions(real, tmp_path):
    (tmp_path / "notes.tsv").write_text('a\tb\n1\t"two\nlines"\n3\t4\n')
    t = real(SALES, str(tmp_path / "notes.tsv"), width=80, height=24)
    s = t.screen()
    # each file with rows x columns (a quoted newline is not a row) and
    # its columns, and questions to start with
    assert re.search(r"sales\.csv  288 rows × 6 columns · 11\.\d KiB", s), s
    assert "month, channel, region, revenue" in s, s
    assert re.search(r"notes\.tsv  2 rows × 2 columns · \d+ B", s), s
    # the demo answers only its recorded questions: those are suggested
    # (issue 25, 15), not general ones it would refuse
    assert re.search(words("› What month had the highest revenue per dollar "
                           "of marketing spend, per channel?"), left(s, 55)), s
    assert "› Plot monthly revenue per marketing dollar" in s, s
    assert "each column of" not in s, s


def test_without_a_model_the_notebook_opens_for_hand_run_cells(real):
    t = real(SALES, provider=None, width=80, height=24)
    s = t.screen()
    assert re.search(words("No model is configured, so questions cannot be "
                           "asked yet; /py CODE runs your own cells."), left(s, 55)), s
    assert "OPENAI_API_KEY" in s and "288 rows × 6 columns" in s, s
    assert status(s).startswith(" no model │"), s
    ask(t, "/py print(len(open('/workspace/data/sales.csv').readlines()))")
    s = t.wait(r"\[1\] you · ok")
    assert "289" in s, s
    ask(t, "which month was best?")
    s = t.wait(r"│ no model is configured")
    ask(t, "/quit")
    t.wait(r"EXITED rc=0")


# ---- item 19: smaller ----

def test_esc_on_the_input_line_does_not_eat_the_next_key(tui):
    t = tui()
    t.text("abc")
    t.wait(r"› abc")
    t.keys("Escape")
    # Esc leaves the input line for the last pane (Jupyter's command
    # mode); typing goes back and keeps every key
    t.wait(r"y copy answer")
    t.text("x")
    t.wait(r"› abcx")
    t.text("d")
    t.wait(r"› abcxd")


def test_load_tab_completion_then_enter(tui, tmp_path):
    t = tui()
    (tmp_path / "second.csv").write_text("a,b\n1,2\n")
    t.text("/load sec")
    t.keys("Tab")
    t.wait(r"› /load second\.csv")
    t.keys("Enter")
    s = t.wait(r"loaded second\.csv as|load: ")
    assert "loaded second.csv as /workspace/data/second.csv" in s, s


def test_a_long_code_line_wraps_with_a_marker(tui):
    t = tui()
    ask(t, "/py x = '%s'" % ("a" * 150))
    s = t.wait(r"\[1\] you · ok")
    rows = s.splitlines()
    i = next(k for k, l in enumerate(rows) if "x = 'aaa" in l and "│ x" in l)
    # issue 24: the code line wraps at the cells pane's edge, its rest on
    # the next rows after "↪ ", to its end; nothing is cut
    assert not rows[i][:75].rstrip().endswith("…"), s
    assert "│ ↪ aaa" in rows[i + 1], s
    x1 = rows[0].index("│")          # the files pane's border
    code = "".join(l[:x1].split("│ ", 1)[1].replace("↪ ", "").strip()
                   for l in rows[i:i + 4] if "│ " in l[:x1])
    assert "x = '%s'" % ("a" * 150) in code, s


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


def test_files_pane_thumbnail_fills_the_pane(tui, tall_chart):
    t = tui(120, 40, FAKE_PNG=tall_chart)
    ask(t, "What month had the highest revenue?")
    t.wait(r"online channel")
    s = t.screen()
    x0 = s.splitlines()[0].index("│") + 1
    rows = thumb_rows(s, x0, 120)
    # the pane is 32 columns wide and 37 rows high: the chart takes its
    # width (it was at most 6 rows, 18 columns)
    assert len(rows) >= 9, s
    assert max(len(r.rstrip()) for r in rows) >= 26, s
    # zoomed, the chart gets the whole screen
    t.keys("Tab", "Tab", "Tab", "z")
    s = t.wait(r"files pane maximised")
    rows = thumb_rows(s, 0, 120)
    assert len(rows) >= 30, s


def test_no_color_line_chart_shows_its_series_not_the_grid(tui):
    t = tui(100, 32, NO_COLOR="1")
    ask(t, "What month had the highest revenue?")
    t.wait(r"online channel")
    t.keys("Tab", "Tab", "Tab", "z")
    s = t.wait(r"files pane maximised")
    rows = thumb_rows(s, 0, 100)
    # matplotlib's grid (8 vertical, 7 horizontal lines) is gone: no
    # row and no column of the plot area is covered in blocks
    inner = [r[12:88] for r in rows[2:-2]]
    full = [r for r in inner if sum(ch != " " for ch in r) > 0.6 * len(r)]
    assert len(full) <= 1, s
    cols = [c for c in range(len(inner[0]))
            if sum(r[c:c + 1] not in ("", " ") for r in inner) > 0.8 * len(inner)]
    assert len(cols) <= 2, s
