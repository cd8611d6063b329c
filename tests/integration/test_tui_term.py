"""The notebook as a good citizen of the terminal (issue 25): Ctrl-D,
Ctrl-Z, keys. Against build/tui-harness (the TUI with the scripted fake
core, tests/tui/fake_agent.c), driven through tmux."""
import re
import subprocess
import sys

import pytest

from tui_tmux import ask, fake_core_env, status


@pytest.fixture(scope="session")
def chart(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("png") / "chart.png")
    subprocess.run([sys.executable, "-c", """
import matplotlib; matplotlib.use('Agg')
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(6, 4))
ax.plot([1, 2, 3]); fig.savefig(%r, dpi=60)
""" % path], check=True, stdin=subprocess.DEVNULL)
    return path


@pytest.fixture
def tui(fake_core, chart, tmux, tmp_path):
    def start(width=100, height=30, **env):
        e = fake_core_env(tmp_path, chart)
        e.update(env)
        return tmux(fake_core, e, tmp_path, width, height, ready=r"ready")
    return start


def conv_title(s):
    m = re.search(r"─ conversation (\d+)/(\d+)", s)
    return (int(m.group(1)), int(m.group(2))) if m else None


# ---- item 2: Ctrl-D ----------------------------------------------------

def test_ctrl_d_in_a_pane_scrolls_half_a_page(tui):
    t = tui()
    for q in ("first question", "second question", "third question"):
        ask(t, q)
        t.wait(r"%s.*online channel had the highest revenue" % q)
    t.keys("Tab")               # the conversation pane
    t.keys("C-u")
    s = t.wait(r"─ conversation \d+/\d+  End: follow")
    up = conv_title(s)
    assert up[0] < up[1], s
    t.keys("C-d")
    s = t.wait_for(lambda s: conv_title(s) and conv_title(s)[0] > up[0])
    assert "EXITED" not in s and "Quit?" not in s, s
    # nothing was typed into the question either
    assert s.splitlines()[-1].strip() == "›", s


def test_ctrl_d_with_live_variables_asks_first(tui):
    t = tui()
    # nothing ran yet: Ctrl-D quits at once (tested below after the cells)
    ask(t, "What month had the highest revenue?")
    t.wait(r"online channel had the highest revenue")
    t.keys("C-d")
    t.wait(r"The variables of 1 cell go with the sandbox\. Quit\? \(y/n\)")
    t.keys("n")
    s = t.wait(r"›\s*$")
    assert "EXITED" not in s
    t.text("half typed")
    t.keys("C-d")                # not an empty line: an edit, not a quit
    s = t.wait(r"› half typed")
    assert "Quit?" not in s
    t.keys("C-u")                # readline: kill the line
    t.wait(r"›\s*$")
    t.keys("C-d")
    t.wait(r"Quit\? \(y/n\)")
    t.keys("y")
    t.wait(r"EXITED rc=0")


def test_ctrl_d_with_nothing_run_quits_at_once(tui):
    t = tui()
    t.keys("C-d")
    t.wait(r"EXITED rc=0")


def test_slash_quit_does_not_ask(tui):
    t = tui()
    ask(t, "What month had the highest revenue?")
    t.wait(r"online channel had the highest revenue")
    ask(t, "/quit")
    t.wait(r"EXITED rc=0")


# ---- item 4: Ctrl-Z ----------------------------------------------------

def test_ctrl_z_suspends_to_the_shell_and_fg_redraws(fake_core, chart, tmux, tmp_path):
    """In a job-control shell on tmux's pty: Ctrl-Z stops the notebook
    (the shell says Stopped and takes commands), fg brings it back drawn
    in full, still working."""
    e = fake_core_env(tmp_path, chart)
    e["PS1"] = "SHELL$ "
    t = tmux("bash --norc --noprofile -i", e, tmp_path, ready=r"SHELL\$")
    ask(t, fake_core)
    t.wait(r"ready")
    ask(t, "What month had the highest revenue?")
    t.wait(r"online channel had the highest revenue")
    t.keys("C-z")
    s = t.wait(r"Stopped.*\nSHELL\$")
    assert "conversation" not in s, s        # the shell's screen, not ours
    ask(t, "echo typed-at-the-shell")
    t.wait(r"\ntyped-at-the-shell\n")
    ask(t, "fg")
    s = t.wait(r"─ conversation.*› What month had the highest revenue\?.*cells 1")
    assert "tokens 1.2k in" in s
    ask(t, "/quit")
    t.wait(r"SHELL\$ $|SHELL\$\s*\n", timeout=30)


# ---- item 3: a locale that is not UTF-8 --------------------------------

@pytest.mark.parametrize("term", ["linux", "tmux-256color"])
def test_c_locale_draws_ascii_that_keeps_the_layout(tui, term):
    """LANG=C: every glyph in ASCII, one column each as the layout
    counted it: the borders stay straight, the question line whole, no
    raw UTF-8 bytes on the screen."""
    t = tui(height=40, LANG="C", LC_ALL="C", TERM=term)
    ask(t, "What month had the highest revenue?")
    s = t.wait(r"online channel had the highest revenue.*\+---------\+---------\+")
    assert all(ord(ch) < 0x80 for ch in s), [ch for ch in s if ord(ch) >= 0x80][:10]
    assert "~T" not in s and "~@" not in s
    rows = s.splitlines()
    assert rows[0].startswith("- conversation --"), rows[0]
    # the files pane's border: one column, the same on every pane row
    col = rows[0].index("|- files")
    assert all(len(r) > col and r[col] == "|" for r in rows[:-2]), s
    assert "> What month had the highest revenue?" in s
    assert "| channel | revenue |" in s
    assert "> ran cell [1] . ok" in s
    # the chart in the thumbnails' ASCII symbols, inside its pane (its
    # shape depends on its size, which grows with the pane: issue 24)
    start = next(i for i, r in enumerate(rows) if "* revenue.png" in r[:col])
    assert sum(1 for r in rows[start + 1:] if sum(ch in "'\",[/P.\\]7_LJ#" for ch in r[:col]) >= 6) >= 5, s
    assert rows[-1].startswith(">"), rows[-1]


# ---- item 9: keys ------------------------------------------------------

def three_questions(t):
    for q in ("first question", "second question", "third question"):
        ask(t, q)
        t.wait(r"%s.*online channel had the highest revenue" % q)


def test_home_end_with_xterm_terminfo_inside_tmux(tui):
    """tmux sends \\e[1~ and \\e[4~ for Home and End; xterm-256color's
    terminfo names others: they still scroll, and type nothing."""
    t = tui(TERM="xterm-256color")
    three_questions(t)
    t.keys("End")                       # on the input line: nothing typed
    t.keys("Tab")
    t.keys("Home")
    s = t.wait(r"─ conversation \d+/\d+  End: follow")
    assert conv_title(s)[0] < conv_title(s)[1] // 2, s
    assert "› first question" in s
    t.keys("End")
    s = t.wait(r"─ conversation ─")
    assert "[4~" not in s and "[1~" not in s, s
    assert s.splitlines()[-1].strip() == "›", s


def test_q_in_a_pane_quits_and_the_bar_says_so(tui):
    t = tui(width=120)
    ask(t, "What month had the highest revenue?")
    t.wait(r"online channel had the highest revenue")
    t.keys("Tab")
    s = t.wait(r"q quit")
    t.keys("q")
    t.wait(r"Quit\? \(y/n\)")           # cells ran: asks, as Ctrl-D
    t.keys("n")
    s = t.wait(r"›\s*$")
    assert "q" not in s.splitlines()[-1], s   # nothing typed
    t.keys("Tab", "q", "y")
    t.wait(r"EXITED rc=0")


def test_search_says_which_match_of_how_many(tui):
    t = tui(height=50)
    three_questions(t)
    t.keys("Tab")
    t.keys("g")                         # the top of the conversation
    t.text("/")
    t.text("question")                  # no capital: ignores case
    t.keys("Enter")
    t.wait(r"match 1 of 3")
    t.keys("n")
    t.wait(r"match 2 of 3")
    t.keys("N", "N")
    t.wait(r"search went round the start · match 3 of 3")
    t.keys("Escape")
    t.text("/")
    t.text("Question")                  # a capital: exact case, none
    t.keys("Enter")
    t.wait(r"pattern not found: Question")


# ---- item 6: history ---------------------------------------------------

def test_history_keeps_a_multiline_question_whole_and_up_works_at_once(tui, tmp_path):
    t = tui()
    ask(t, "first question")
    t.wait(r"online channel had the highest revenue")
    # a 200-line paste, sent as one question
    t.tmux("set-buffer", "-b", "p", "\n".join("pasted line %d" % i for i in range(200)))
    t.tmux("paste-buffer", "-p", "-b", "p", "-t", "t")
    t.wait(r"pasted line 199")
    t.keys("Enter")
    t.wait(r"pasted line 199\s.*online channel had the highest revenue.*cells 2")
    t.keys("C-d")
    t.wait(r"Quit\? \(y/n\)")
    t.keys("y")
    t.wait(r"EXITED rc=0")
    entries = (tmp_path / "history").read_text().splitlines()
    assert len(entries) == 3, entries[:5]       # the header and two questions
    assert entries[1] == "first question"
    # after a restart, Up at once: the whole pasted question, then the first
    t2 = tui()
    t2.keys("Up")
    s = t2.wait(r"┆ pasted line 198\n┆ pasted line 199\s*$")
    t2.keys("Up")
    s = t2.wait(r"› first question\s*$")
    # Ctrl-R: the reverse search shows what it searches
    t2.keys("C-c", "C-r")
    t2.text("first")
    s = t2.wait(r"\(reverse-i-search\)`first': first question")


# ---- item 16: polish ---------------------------------------------------

def test_a_running_cell_is_not_said_to_have_run(tui):
    t = tui()
    ask(t, "run a long loop")
    s = t.wait(r"▸ running cell \[1\]")
    assert "ran cell [1]" not in s, s
    t.keys("C-c")
    t.wait(r"▸ ran cell \[1\] · interrupted")


def test_help_rows_never_run_into_their_keys(tui):
    t = tui(height=80)
    t.keys("F1")
    s = t.wait(r"Commands \(Tab completes\).*/quit")
    rows = s.splitlines()
    i = [k for k, r in enumerate(rows) if r.startswith("  /allow HOST[:PORT]")][0]
    assert rows[i].rstrip() == "  /allow HOST[:PORT]", rows[i]
    assert rows[i + 1].startswith(" " * 20 + "let the sandbox reach HOST"), rows[i + 1]


def test_help_lines_fit_80_columns_and_the_man_page_has_no_raw_glyphs():
    from conftest import ROOT, TERP
    out = subprocess.run([str(TERP), "--help"], capture_output=True, text=True).stdout
    assert [l for l in out.splitlines() if len(l) > 80] == []
    p = subprocess.run(["groff", "-ww", "-man", "-Tutf8", str(ROOT / "man" / "terp.1")],
                       capture_output=True, text=True)
    assert p.returncode == 0 and "warning" not in p.stderr, p.stderr[:500]


# ---- item 12: a queued follow-up's reply is followed ------------------

def test_a_queued_follow_ups_answer_is_on_screen(tui, tmp_path):
    go = tmp_path / "go"
    t = tui(height=24, FAKE_GO=str(go), FAKE_PNG="/nonexistent")
    ask(t, "run a long loop")
    t.wait(r"running cell \[1\]")
    ask(t, "What month had the highest revenue?")
    t.wait(r"queued, runs when this one is done")
    go.write_text("")            # the first ends (its answer is tall)
    t.wait_for(lambda s: "─ cells 2 " in s and "ready" in status(s))
    s = t.wait(r"› What month had the highest revenue\?.*online channel had the "
               r"highest revenue")
    # the pane follows the newest reply: not stopped at the first answer
    assert "End: follow" not in s.splitlines()[0], s


def test_a_queued_follow_up_leaves_a_user_who_scrolled_up_in_place(tui, tmp_path):
    go = tmp_path / "go"
    go.write_text("")
    t = tui(height=24, FAKE_GO=str(go), FAKE_PNG="/nonexistent")
    for q in ("first question", "second question"):
        ask(t, q)
        t.wait(r"%s.*online channel had the highest revenue" % q)
    go.unlink()
    ask(t, "run a long loop")
    t.wait(r"running cell \[3\]")
    ask(t, "What month had the highest revenue?")
    t.wait(r"queued, runs when this one is done")
    t.keys("Tab")                # the conversation pane
    t.keys("C-u")
    s = t.wait(r"─ conversation \d+/\d+  End: follow")
    up, top = conv_title(s), s.splitlines()[1][:70]
    go.write_text("")
    s = t.wait_for(lambda s: "─ cells 4 " in s and "ready" in status(s))
    # still where the user put it (the same first row), with more below
    now = conv_title(s)
    assert now is not None and now[1] > up[1], (up, now, s)
    assert s.splitlines()[1][:70] == top, (top, s)
    assert "End: follow" in s.splitlines()[0], s
