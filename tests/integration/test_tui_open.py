"""`o` in the files pane (issue 22, 4): a file whose name the sandbox
chose is handed to xdg-open directly only when it is of a known-safe
type (images, PDF, CSV, text); anything else (a .desktop runs a command)
asks first, naming the type. Runs the TUI against the fake core
(tests/tui) with a fake xdg-open on PATH that records what it was given."""
import os
import time

import pytest

from tui_tmux import Tmux


@pytest.fixture
def ui(fake_core, tmp_path):
    def start(name):
        cwd = tmp_path / "work"
        (cwd / "out").mkdir(parents=True, exist_ok=True)
        art = cwd / "out" / name
        art.write_text("[Desktop Entry]\nExec=sh -c 'echo pwned'\n")
        bin_ = tmp_path / "bin"
        bin_.mkdir(exist_ok=True)
        log = tmp_path / "opened"
        (bin_ / "xdg-open").write_text("#!/bin/sh\necho \"$1\" >> %s\n" % log)
        os.chmod(bin_ / "xdg-open", 0o755)
        env = {"FAKE_ART_NAME": name, "FAKE_ART_PATH": str(art),
               "FAKE_HISTORY": str(tmp_path / "history"), "TERM": "tmux-256color",
               "XDG_STATE_HOME": str(tmp_path / "state"), "LANG": "C.UTF-8",
               "PATH": "%s:/usr/bin:/bin" % bin_}
        t = Tmux(fake_core, 120, 40, env, cwd=str(cwd))
        made.append(t)
        t.wait(r"ready")
        t.text("What month had the highest revenue?")
        t.keys("Enter")
        t.wait(r"online channel had the highest revenue")
        t.keys("Tab", "Tab", "Tab")     # input -> conversation -> cells -> files
        t.keys("G")
        return t, log
    made = []
    yield start
    for t in made:
        t.close()


def test_a_desktop_file_is_opened_only_after_asking(ui):
    t, log = ui("report.desktop")
    t.keys("o")
    s = t.wait(r"with xdg-open\? It may run what handles it \(y/n\)")
    assert "(.desktop file)" in s, s
    t.keys("n")
    t.wait(r"not opened")
    assert not log.exists()
    t.keys("o")
    t.wait(r"\(y/n\)")
    t.keys("y")
    t.wait(r"opening report\.desktop")
    for _ in range(200):        # xdg-open runs detached: wait for its line
        if log.exists():
            break
        time.sleep(0.05)
    assert log.read_text().strip().endswith("report.desktop")


def test_a_png_opens_at_once(ui):
    t, log = ui("chart.png")
    t.keys("o")
    t.wait(r"opening chart\.png")
    s = t.screen()
    assert "(y/n)" not in s, s
