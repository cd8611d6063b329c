"""Save a copy (files pane, `s`) of an artifact whose name the sandbox
chose: the name is shown inert, the prompt offers a safe host name, and
nothing is written outside the working directory without asking
(issue 8, 2.1). Runs the TUI against the fake core (tests/tui), which
adds an artifact named by FAKE_ART_NAME, copied on the host at
FAKE_ART_PATH."""
import os

import pytest

from tui_tmux import Tmux

HOSTILE = "../.bash_aliases\n\x1b]0;pwned\x07\u202e"
CONTENT = "alias ls='echo pwned'\n"


@pytest.fixture
def ui(fake_core, tmp_path):
    # the working directory is a folder of its own, so that "above it"
    # is a place the test can watch
    cwd = tmp_path / "work"
    (cwd / "out").mkdir(parents=True)
    # the host copy itself has a hidden name: the TUI must not trust
    # the kernel's choice either
    art = cwd / "out" / ".bash_aliases"
    art.write_text(CONTENT)
    env = {"FAKE_ART_NAME": HOSTILE, "FAKE_ART_PATH": str(art),
           "FAKE_HISTORY": str(tmp_path / "history"), "TERM": "tmux-256color",
           "XDG_STATE_HOME": str(tmp_path / "state"), "LANG": "C.UTF-8"}
    t = Tmux(fake_core, 120, 40, env, cwd=str(cwd))
    try:
        t.wait(r"ready")
        t.text("What month had the highest revenue?")
        t.keys("Enter")
        t.wait(r"online channel had the highest revenue")
        yield t, cwd, tmp_path
    finally:
        t.close()


def above(tmp_path):
    """Everything written beside the working directory."""
    return sorted(p.name for p in tmp_path.iterdir()
                  if p.name not in ("work", "history", "state"))


def save_prompt(t):
    """Focus the files pane (saving leaves the focus on the input line),
    select the last artifact, press s."""
    t.keys("Tab", "Tab", "Tab")     # input -> conversation -> cells -> files
    t.keys("G")
    t.keys("s")
    return t.wait(r"save as: ")


def test_hostile_name_is_shown_inert_on_one_line(ui):
    t, cwd, tmp = ui
    s = t.screen()
    shown = "../.bash_aliases\\u000a\\u001b]0;pwned\\u0007\\u202e"
    # in the cell (with its size) and in the files pane (cut to its
    # width), each on one line
    assert shown + "  22 B" in s, s
    assert "▸ ../.bash_aliases\\u000a\\u001" in s, s
    assert "\u202e" not in s
    # the OSC never reached the terminal: the pane title is untouched
    assert "pwned" not in t.tmux("display", "-p", "-t", "t", "#{pane_title}")


def test_save_offers_a_safe_host_name_and_writes_only_here(ui):
    t, cwd, tmp = ui
    s = save_prompt(t)
    line = [l for l in s.splitlines() if "save as: " in l][0]
    assert line.split("save as: ", 1)[1].rstrip() == "_bash_aliases", s
    t.keys("Enter")
    t.wait(r"saved a copy as _bash_aliases")
    assert (cwd / "_bash_aliases").read_text() == CONTENT
    assert above(tmp) == []
    assert sorted(os.listdir(cwd)) == ["_bash_aliases", "out"]
    # saving again never overwrites
    (cwd / "_bash_aliases").write_text("mine\n")
    save_prompt(t)
    t.wait(r"save as: _bash_aliases")
    t.keys("Enter")
    t.wait(r"_bash_aliases: File exists")
    assert (cwd / "_bash_aliases").read_text() == "mine\n"


def test_a_typed_name_outside_or_hidden_asks_first(ui):
    t, cwd, tmp = ui
    save_prompt(t)
    t.keys("C-u")
    t.text("../.bash_aliases")
    t.keys("Enter")
    t.wait(r'write "\.\./\.bash_aliases" \(outside \./\)\? \(y/n\)')
    t.keys("n")
    t.wait(r"not saved")
    assert above(tmp) == []
    # a hidden name here asks too; y writes it
    save_prompt(t)
    t.keys("C-u")
    t.text(".mine")
    t.keys("Enter")
    t.wait(r'write "\.mine" \(hidden\)\? \(y/n\)')
    t.keys("y")
    t.wait(r"saved a copy as \.mine")
    # a folder under ./ is said as such, not "outside ./" (issue 25 item 16)
    (cwd / "sub").mkdir()
    save_prompt(t)
    t.keys("C-u")
    t.text("sub/copy.png")
    t.keys("Enter")
    t.wait(r'write "sub/copy\.png" \(in a folder under \./\)\? \(y/n\)')
    t.keys("y")
    t.wait(r"saved a copy as sub/copy\.png")
    assert (cwd / "sub" / "copy.png").read_text() == CONTENT
    (cwd / ".mine").unlink()
    save_prompt(t)
    t.keys("C-u")
    t.text(".mine")
    t.keys("Enter")
    t.wait(r'write "\.mine" \(hidden\)\? \(y/n\)')
    t.keys("y")
    t.wait(r"saved a copy as \.mine")
    assert (cwd / ".mine").read_text() == CONTENT
    # never through a symlink, even when confirmed
    os.symlink(str(tmp / "target"), str(cwd / ".link"))
    save_prompt(t)
    t.keys("C-u")
    t.text(".link")
    t.keys("Enter")
    t.wait(r"\(y/n\)")
    t.keys("y")
    t.wait(r"\.link: File exists")
    assert not (tmp / "target").exists()
    assert above(tmp) == []
