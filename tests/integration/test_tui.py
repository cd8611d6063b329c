"""The terminal notebook driven through tmux: keys in, screens out.

Runs against build/tui-harness (the TUI with a scripted fake core,
tests/tui/fake_agent.c) so that the UI's behaviour is tested on its own;
test_tui_real.py runs the real binary with a fake model server."""
import re
import subprocess
import sys

import pytest

from tui_tmux import BLOCKS, ask, fake_core_env


@pytest.fixture(scope="session")
def chart(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("png") / "chart.png")
    subprocess.run([sys.executable, "-c", """
import matplotlib; matplotlib.use('Agg')
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(6, 4))
ax.plot([1, 2, 3, 4, 5], [3, 1, 4, 1, 5]); ax.set_title('revenue')
fig.savefig(%r, dpi=80)
""" % path], check=True, stdin=subprocess.DEVNULL)
    return path


@pytest.fixture
def tui(fake_core, chart, tmux, tmp_path):
    def start(width=100, height=30, **env):
        e = fake_core_env(tmp_path, chart)
        e.update(env)
        return tmux(fake_core, e, tmp_path, width, height, ready=r"ready")
    return start


def test_question_streams_answer_cell_output_and_thumbnail(tui):
    t = tui(height=50)
    ask(t, "What month had the highest revenue?")
    s = t.wait(r"online channel had the highest revenue")
    assert "› What month had the highest revenue?" in s
    assert "▸ ran cell [1] · ok" in s
    assert re.search(r"\[1\] model · ok · 0\.\d\ds", s)
    assert "print(df.head())" in s
    assert "0  2023-01  online  1200.5" in s
    assert "→ np.float64(2180.5)" in s
    # the Markdown table is laid out as a table
    assert "│ channel │ revenue │" in s
    # the chart is a grid of block characters right below its cell
    assert "▪ revenue.png" in s
    rows = [l for l in s.splitlines() if sum(ch in BLOCKS for ch in l[:70]) >= 5]
    assert len(rows) >= 5, s
    # with colours: 256-colour SGR sequences
    e = t.screen(escapes=True)
    assert "38;5;" in e
    assert "tokens 1.2k in · 321 out" in s


def test_ctrl_c_interrupts_the_running_cell_and_never_exits(tui):
    t = tui()
    ask(t, "run a long loop")
    t.wait(r"running cell \[1\]")
    t.wait_for(lambda s: s.count("tick") >= 3)
    t.keys("C-c")
    s = t.wait(r"interrupted")
    assert "✗ KeyboardInterrupt" in s
    t.wait(r"│ ready")
    # still alive and usable
    t.keys("C-c")
    ask(t, "/py x")
    s = t.wait(r"\[2\] you · ok")
    assert "EXITED" not in s


def test_edit_cell_in_editor_and_rerun(tui, tmp_path):
    ed = tmp_path / "ed.sh"
    ed.write_text("#!/bin/sh\nprintf 'print(\"edited by the editor\")\\n' > \"$1\"\n")
    ed.chmod(0o755)
    t = tui(height=50, EDITOR=str(ed), VISUAL="")
    ask(t, "What month had the highest revenue?")
    t.wait(r"online channel had the highest revenue")
    t.keys("Tab")
    t.keys("Tab")          # input -> conversation -> cells
    t.wait(r"▸\[1\]")
    t.keys("e")
    s = t.wait(r"\[2\] you · ok")
    assert 'print("edited by the editor")' in s
    assert "ran 30 bytes of code" in s


def test_load_a_second_file(tui, tmp_path):
    t = tui()
    (tmp_path / "second.csv").write_text("a,b\n1,2\n")
    ask(t, "/load second.csv")
    t.wait(r"loaded second\.csv as /workspace/data/second\.csv")
    ask(t, "/files")
    s = t.wait(r"Data files:")
    assert "second.csv → /workspace/data/second.csv" in s


def test_resize_to_40x12_and_back(tui):
    t = tui()
    ask(t, "What month had the highest revenue?")
    t.wait(r"online channel")
    t.resize(40, 12)
    s = t.wait(r"\[conversation\] cells 1  files 1")
    assert len(s.splitlines()[0]) <= 40
    t.keys("Tab", "Tab")
    t.wait(r"conversation \[cells 1\] files 1")
    t.keys("g")
    t.wait(r"\[1\] model")
    t.resize(25, 8)
    t.wait(r"›")
    t.resize(100, 30)
    s = t.wait(r"─ conversation ─")
    assert "─ files 1 ─" in s
    assert "EXITED" not in s


def test_help_overlay_lists_keys_and_commands(tui):
    t = tui()
    t.keys("F1")
    s = t.wait(r"keys and commands")
    assert "Ctrl-C" in s and "Alt-Enter" in s and "/load PATH" in s
    t.keys("q")
    t.wait(r"─ conversation ─")
    t.keys("?")
    t.wait(r"keys and commands")
    t.keys("Escape")
    t.wait(r"─ conversation ─")


def test_slash_command_tab_completion(tui):
    t = tui()
    t.text("/he")
    t.keys("Tab")
    t.wait(r"› /help")
    t.keys("Enter")
    t.wait(r"keys and commands")


def test_sent_ledger(tui):
    t = tui()
    ask(t, "What month had the highest revenue?")
    t.wait(r"online channel")
    ask(t, "/sent")
    s = t.wait(r"What left this machine for the model: 1 request, 15 bytes")
    assert "1. openai chat request  15 bytes" in s
    ask(t, "/sent 1")
    s = t.wait(r"request 1 of 1")
    # pretty-printed, one member a line
    assert re.search(r'^ *"messages": \[\]$', s, re.M), s


def test_egress_under_the_cell_and_net_lists_it(tui):
    """The cell shows its egress on one line (the allowed host with its
    bytes, the refused one with why); /net lists every attempt."""
    t = tui(width=120)
    ask(t, "download the data")
    s = t.wait(r"evil\.example\.invalid ✗ not allowed")
    assert "⇄ index.example.invalid ✓ 2.1 MiB ↓ 2.9 KiB ↑ · evil.example.invalid ✗ " \
        "not allowed" in s, s
    t.wait(r"online channel")
    ask(t, "/net")
    s = t.wait(r"What the sandbox tried to reach: 2 attempts, 1 refused")
    assert re.search(r"\[1\] \d\d:\d\d:\d\d CONNECT index\.example\.invalid:443 allowed, "
                     r"2\.9 KiB up, 2\.1 MiB down", s), s
    assert re.search(r"\[1\] \d\d:\d\d:\d\d CONNECT evil\.example\.invalid:443 refused: "
                     r"not allowed", s), s


def test_a_flood_of_refused_attempts_keeps_the_ui_responsive(tui):
    """Refused egress attempts to distinct hosts pour in (the fake core's
    proxy, 500 every 5 ms, 20,000 and on until cancelled): keys are
    handled meanwhile, and the cell's one net line sums them up (issue 22:
    every cell's summary was recomputed from the whole ledger on each
    attempt)."""
    t = tui(width=120)
    ask(t, "flood the proxy forever")
    t.wait(r"running cell \[1\]")
    t.wait(r"h0\.flood\.invalid ✗ not allowed")
    t.keys("F1")
    t.wait(r"keys and commands")
    t.keys("q")
    s = t.wait_for(lambda s: "keys and commands" not in s)
    assert "running cell [1]" in s, s
    t.keys("C-c")
    t.wait(r"\[1\] model · interrupted")
    ask(t, "/net")
    # the newest 200 listed, the last at the bottom
    s = t.wait(r"\[1\] \d\d:\d\d:\d\d CONNECT h\d+\.flood\.invalid:443 refused: "
               r"not allowed\s*│?\s*\n.*─ cells")
    assert "⇄ h0.flood.invalid ✗ not allowed · h1.flood.invalid ✗ not allowed" in s, s


def test_a_million_lines_keep_the_ui_responsive(tui):
    t = tui()
    # keys are handled while the output pours in: this flood lasts until
    # cancelled, so the help can only show up during it
    ask(t, "flood the screen forever")
    t.wait(r"running cell \[1\]")
    t.keys("F1")
    t.wait(r"keys and commands")
    t.keys("q")
    s = t.wait_for(lambda s: "keys and commands" not in s)
    assert "running cell [1]" in s, s
    t.keys("C-c")
    t.wait(r"\[1\] model · interrupted")
    # a million lines: the head and the tail are kept
    ask(t, "flood the screen")
    t.wait(r"lines hidden")
    s = t.wait(r"\[2\] model · ok")
    assert "999999" in s


def test_multiline_input_with_alt_enter_and_paste(tui):
    t = tui()
    t.text("first line")
    t.keys("M-Enter")
    t.text("second line")
    s = t.wait(r"second line")
    assert "› first line" in s
    t.keys("C-c")
    t.wait(r"›\s*\n")
    # a bracketed paste with newlines does not send anything
    t.tmux("set-buffer", "-b", "p", "pasted one\npasted two")
    t.tmux("paste-buffer", "-p", "-b", "p", "-t", "t")
    s = t.wait(r"pasted two")
    assert "› pasted one" in s
    assert "cells 0" in s


def test_no_color_honoured(tui):
    t = tui(NO_COLOR="1")
    ask(t, "What month had the highest revenue?")
    t.wait(r"online channel")
    e = t.screen(escapes=True)
    assert "38;5;" not in e and "48;5;" not in e


def test_quit_leaves_the_terminal_sane(tui):
    t = tui()
    ask(t, "/quit")
    s = t.wait(r"EXITED rc=0.*icanon")
    flat = s.replace("\n", "")
    assert re.search(r"[^-]icanon", flat) and re.search(r"[^-]echo ", flat)
    assert "-icanon" not in flat
    # Ctrl-D while something runs asks first
    t2 = tui()
    ask(t2, "run a long loop")
    t2.wait(r"running cell")
    t2.keys("C-d")
    t2.wait(r"Quit anyway\? \(y/n\)")
    t2.keys("n")
    s = t2.wait(r"running cell")
    assert "EXITED" not in s
    t2.keys("C-d")
    t2.wait(r"Quit anyway")
    t2.keys("y")
    t2.wait(r"EXITED rc=0")
