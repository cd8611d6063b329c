"""Notebooks that last, in the notebook UI: the real terp binary through
tmux, with the real sandbox and a scripted fake model on 127.0.0.1.
A resumed notebook is back on screen, /replay rebuilds the variables,
/export and /save write files other tools read, and the idle timeout
shows on the status bar."""
import glob
import os
import re

import pytest

from conftest import release
from tui_tmux import BLOCKS, CHART_CODE, SALES, TERP, model_args, model_env

SCRIPT = {"turns": [
    {"openai": {"text": "Let me total the revenue per channel.",
                "tool_calls": [{"id": "call_1", "name": "python_exec",
                                "code": CHART_CODE}]}},
    {"openai": {"text": "Search brings the most revenue; see out/revenue.png.",
                "usage": {"prompt_tokens": 1500, "completion_tokens": 60}}},
    {"openai": {"text": "Noted."}, "repeat": True},
]}

QUESTION = "Which channel brings the most revenue?"
# waits until the test creates /workspace/.release, then takes it away
GATED_CELL = ("/py import os, time; [time.sleep(0.01) for _ in iter(lambda: "
              "os.path.exists('/workspace/.release'), True)]; "
              "os.remove('/workspace/.release'); y = 7")


@pytest.fixture
def terp(fake_model, tmux, tmp_path):
    port = fake_model(SCRIPT)

    def start(*args, width=110, height=50, ready=True):
        cmd = " ".join([TERP, *model_args(port, tmp_path / "out"), *args])
        return tmux(cmd, model_env(tmp_path), tmp_path, width, height,
                    ready=r"│ ready" if ready else None, timeout=30)
    return start


def run(t, line):
    t.text(line)
    t.keys("Enter")


def quit_(t):
    run(t, "/quit")
    t.wait(r"EXITED rc=0", timeout=30)


def left(s):
    """The screen's left column (conversation and cells), without the
    file pane beside it, so wrapped lines read on."""
    lines = s.splitlines()
    col = lines[0].find("│") if lines else -1
    return "\n".join(l[:col] if col > 0 else l for l in lines)


def words(phrase):
    """A regex for phrase wherever the pane wraps it."""
    return r"\s+".join(re.escape(w) for w in phrase.split())


def chart_rows(s):
    return [l for l in s.splitlines() if sum(ch in BLOCKS for ch in l) >= 5]


def test_resume_redraws_the_notebook_and_replay_rebuilds_it(terp, tmp_path):
    second = tmp_path / "second.csv"
    second.write_text("a,b\n1,2\n3,4\n")
    t = terp(SALES)
    run(t, QUESTION)
    t.wait(r"Search brings the most revenue", timeout=60)
    run(t, "/load second.csv")
    t.wait(r"loaded second\.csv as /workspace/data/second\.csv", timeout=30)
    # a cell that waits for the test (a file it creates in the workspace),
    # so that the replay's progress can be seen while it runs
    state = {"XDG_STATE_HOME": str(tmp_path / "state")}
    run(t, GATED_CELL)
    release(state)
    t.wait(r"\[2\] you · ok", timeout=30)
    quit_(t)
    t.close()

    t = terp("--resume", ready=False)
    s = t.wait(r"resumed session .*: 1 question, 2 cells", timeout=30)
    # the conversation is drawn again: question, answers, the cell link
    assert "› " + QUESTION in s
    assert "Let me total the revenue per channel." in s
    assert "Search brings the most revenue; see out/revenue.png." in s
    assert re.search(r"▸ ran cell \[1\] · ok", s), s
    # cell 2 was run by hand: the user's own block (issue 12, item 9)
    assert re.search(r"› you ran cell \[2\] · ok", s), s
    # the new sandbox and how to get the variables back
    assert re.search(words("The sandbox is new: variables and imports from before "
                           "are gone; /replay re-runs the 2 cells that succeeded."), left(s)), s
    # the cells with their outputs, and the chart as a thumbnail
    assert re.search(r"^\s+search\s+\d+", s, re.M), s
    assert "→ 288" in s
    assert re.search(r"─ files 1 ─", s)
    assert "revenue.png" in s
    assert len(chart_rows(s)) >= 4, s
    # the token totals came back too
    assert re.search(r"tokens 1\.5k in · \d+ out", s), s
    t.wait(r"│ ready", timeout=30)

    # /replay re-runs [1] and [2]; a /py typed meanwhile is held, then
    # sees the variables both made
    run(t, "/replay")
    run(t, "/py print(len(df) + y)")
    s = t.wait(r"replaying 2/2", timeout=30)
    assert re.search(words("held until the replay is over: /py print(len(df) + y)"), s), s
    release(state)
    s = t.wait(r"\[5\] you · ok", timeout=60)
    assert re.search(r"replay done: 2 cells re-ran", s), s
    assert re.search(r"^  295\s", s, re.M), s
    # the file /load-ed before the resume was staged again
    run(t, "/py import pandas as pd; print(pd.read_csv('/workspace/data/second.csv').b.sum())")
    s = t.wait(r"\[6\] you · ok", timeout=30)
    assert re.search(r"^  6\s", s, re.M), s
    quit_(t)


def test_export_and_save(terp, tmp_path):
    import nbformat
    t = terp(SALES)
    run(t, QUESTION)
    t.wait(r"Search brings the most revenue", timeout=60)

    # Tab completes the new commands; ? lists them
    t.text("/rep")
    t.keys("Tab")
    t.wait(r"› /replay")
    t.keys("C-u")
    t.text("/exp")
    t.keys("Tab")
    t.wait(r"› /export")
    t.keys("C-u")
    t.text("?")
    s = t.wait(r"Commands \(Tab completes\)")
    assert re.search(r"/replay \[N-M\]\s+re-run the cells that succeeded", s), s
    assert re.search(r"/export FILE\s+write the notebook as FILE", s), s
    assert re.search(r"/save\s+write both", s), s
    t.keys("q")
    t.wait_for(lambda s: "Commands (Tab completes)" not in s)

    run(t, "/export nb.ipynb")
    t.wait(r"exported the notebook to nb\.ipynb", timeout=30)
    nb = nbformat.read(str(tmp_path / "nb.ipynb"), as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code" and c.id != "terp-paths"]
    assert len(code) == 1 and "groupby" in code[0].source
    assert any(o.get("output_type") == "display_data" and "image/png" in o.get("data", {})
               for o in code[0].outputs)
    md = [c.source for c in nb.cells if c.cell_type == "markdown"]
    assert any(QUESTION in m for m in md) and any("Search brings" in m for m in md)

    run(t, "/export nb.txt")
    t.wait(r"export: .*", timeout=30)
    assert not (tmp_path / "nb.txt").exists()

    run(t, "/save")
    s = t.wait_for(lambda s: "saved the notebook as" in left(s), timeout=30)
    ipynbs = glob.glob(str(tmp_path / "out" / "terp-*.ipynb"))
    mds = glob.glob(str(tmp_path / "out" / "terp-*.md"))
    assert len(ipynbs) == 1 and len(mds) == 1, os.listdir(tmp_path / "out")
    sid = os.path.basename(ipynbs[0])[len("terp-"):-len(".ipynb")]
    assert os.path.isdir(tmp_path / "state" / "terp" / "sessions" / sid)
    assert mds[0] == ipynbs[0][:-len(".ipynb")] + ".md"
    # where they went, on screen (the long paths wrap)
    flat = re.sub(r"\s+", "", left(s))
    assert ("savedthenotebookas%sand%s" % (ipynbs[0], mds[0])) in flat, s
    nbformat.validate(nbformat.read(ipynbs[0], as_version=4))
    text = open(mds[0]).read()
    assert QUESTION in text and "```python" in text
    assert "](revenue.png)" in text   # the chart, next to the .md
    quit_(t)


def test_idle_timeout_on_the_status_bar(terp, tmp_path):
    # 8 s: long enough that the countdown is still on screen when the
    # test looks, however slow the machine (the stop is awaited, not timed)
    t = terp("--idle-timeout", "8s", SALES)
    run(t, "/py x = 6 * 7")
    t.wait(r"\[1\] you · ok", timeout=30)
    t.wait(r"│ ready │ idle stop in 0:0[1-8]")
    s = t.wait(r"│ sandbox stopped \(idle\)")
    assert re.search(words("stopped the sandbox after 8 s idle"), left(s)), s
    # the next cell starts a new sandbox, and the UI says what was lost
    run(t, "/py print('after', 6 * 7)")
    s = t.wait(r"\[2\] you · ok", timeout=30)
    assert re.search(r"^  after 42\s", s, re.M), s
    assert re.search(words("restarted the sandbox, which was stopped (idle for 8 s): "
                           "variables from before are gone; /replay re-runs the "
                           "cells that succeeded"), left(s)), s
    # said before the cell that needed the new sandbox, not under it
    conv = left(s)
    assert conv.index("restarted the sandbox") < conv.index("ran cell [2]"), s
    # and the countdown starts again
    t.wait(r"│ ready │ idle stop in 0:0[1-8]")
    quit_(t)
