"""The real terp binary's notebook UI, through tmux, with the real agent
and sandbox and a scripted fake model (tests/fake_model.py) on 127.0.0.1."""
import json
import os
import re
import subprocess

import pytest

from conftest import command_lines, wait_until
from tui_tmux import BLOCKS, CHART_CODE, SALES, TERP, model_args, model_env

LONG_CODE = """import time
x = 42
while True:
    print("tick", flush=True)
    time.sleep(0.1)"""

SCRIPT = {"turns": [
    {"openai": {"text": "Let me total the revenue per channel.",
                "tool_calls": [{"id": "call_1", "name": "python_exec",
                                "code": CHART_CODE}],
                "text_split": 5}},
    {"openai": {"text": "**Search** brings the most revenue; the chart is in out/revenue.png.",
                "text_split": 4, "usage": {"prompt_tokens": 1500,
                                           "completion_tokens": 60}}},
    {"openai": {"tool_calls": [{"id": "call_2", "name": "python_exec",
                                "code": LONG_CODE}]}},
    {"openai": {"text": "The loop was interrupted."}, "repeat": True},
]}

# a model that answers every question with one word
NOTED = {"turns": [{"openai": {"text": "Noted."}, "repeat": True}]}


@pytest.fixture
def session(fake_model, tmux, tmp_path):
    port = fake_model(SCRIPT)

    def start(width=100, height=45):
        cmd = " ".join([TERP, *model_args(port, tmp_path / "out"), SALES])
        return tmux(cmd, model_env(tmp_path), tmp_path, width, height,
                    ready=r"│ ready", timeout=30)
    return start


def sandbox_procs(tmp_path):
    return [l for _, l in command_lines() if str(tmp_path) in l
            and "tmux" not in l and "sleep 600" not in l]


def test_real_session(session, tmp_path):
    t = session()
    t.text("Which channel brings the most revenue?")
    t.keys("Enter")
    # the answer and the cell's value on one screen: a capture taken
    # while the terminal is still drawing the frame (the layout changes
    # when the answer comes) may hold the one without the other
    s = t.wait(r"Search brings the most revenue.*→ 288", timeout=60)
    assert "› Which channel brings the most revenue?" in s
    assert "Let me total the revenue per channel." in s
    assert re.search(r"▸ ran cell \[1\] · ok", s)
    # the cell, its output, its value and its chart as blocks
    assert "search" in s and "→ 288" in s
    assert "▪ revenue.png" in s
    rows = [l for l in s.splitlines() if sum(ch in BLOCKS for ch in l[:75]) >= 5]
    assert len(rows) >= 4, s
    assert re.search(r"─ files 1 ─", s)
    assert "fake-model" in s
    # usage arrives at the end of the stream, after the last words
    t.wait(r"tokens [0-9.]+k in · \d+ out", timeout=30)

    # a long cell: Ctrl-C interrupts it, the session keeps x
    t.text("Run a long loop")
    t.keys("Enter")
    t.wait(r"running cell \[2\]", timeout=30)
    t.wait_for(lambda s: s.count("tick") >= 3, timeout=30)
    t.keys("C-c")
    t.wait(r"\[2\] model · interrupted", timeout=30)
    t.wait(r"│ ready", timeout=30)
    t.text("/py print(x * 2)")
    t.keys("Enter")
    s = t.wait(r"\[3\] you · ok", timeout=30)
    assert re.search(r"^  84\s", s, re.M), s

    # /load a second file, then use it
    second = tmp_path / "second.csv"
    second.write_text("a,b\n1,2\n3,4\n")
    t.text("/load %s" % second)
    t.keys("Enter")
    t.wait(r"loaded .*second\.csv", timeout=30)
    t.text("/py import pandas as pd; print(pd.read_csv('/workspace/data/second.csv').b.sum())")
    t.keys("Enter")
    s = t.wait(r"\[4\] you · ok", timeout=30)
    assert re.search(r"^  6\s", s, re.M), s

    # /sent is the ledger of what left the machine
    t.text("/sent")
    t.keys("Enter")
    s = t.wait(r"What left this machine for the model: \d+ requests")

    # quit: the terminal is sane and no sandbox process is left
    assert sandbox_procs(tmp_path), "the sandbox should be running"
    t.text("/quit")
    t.keys("Enter")
    s = t.wait(r"EXITED rc=0.*icanon", timeout=30)
    assert "-icanon" not in s.replace("\n", "")
    wait_until(lambda: sandbox_procs(tmp_path) == [], "the sandbox's processes ending")


def test_the_notebook_is_saved_as_it_goes(session, tmp_path):
    t = session()
    t.text("Which channel brings the most revenue?")
    t.keys("Enter")
    t.wait(r"Search brings the most revenue", timeout=60)
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"),
               XDG_CONFIG_HOME=str(tmp_path / "config"), HOME=str(tmp_path))
    # Saved while the notebook is still open (and locked against --delete).
    r = subprocess.run([TERP, "--list"], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "Which channel brings the most revenue?" in r.stdout
    sid = r.stdout.splitlines()[1].split()[0]
    r = subprocess.run([TERP, "--delete", sid], capture_output=True, text=True, env=env)
    assert r.returncode == 1 and "open in another terp" in r.stderr
    t.text("/quit")
    t.keys("Enter")
    t.wait(r"EXITED rc=0", timeout=30)
    out = tmp_path / "s.md"
    r = subprocess.run([TERP, "--export", sid, str(out)], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 0, r.stderr
    md = out.read_text()
    assert "Which channel brings the most revenue?" in md
    assert 'df = pd.read_csv("/workspace/data/sales.csv")' in md
    assert "**Search** brings the most revenue" in md


def test_files_shows_the_paths_the_sandbox_has(fake_model, tmux, tmp_path):
    # Two files of the same name from different folders are staged under
    # two names; /files and the model's system prompt say which is which.
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "my sales.csv").write_text("%s,n\n1,2\n" % d)
    port = fake_model(NOTED)
    cmd = " ".join([TERP, *model_args(port, tmp_path / "out"),
                    "'a/my sales.csv'", "'b/my sales.csv'"])
    t = tmux(cmd, model_env(tmp_path), tmp_path, 160, 40, ready=r"│ ready", timeout=30)
    t.text("/files")
    t.keys("Enter")
    s = t.wait(r"Data files:.*Artifacts", timeout=30)
    assert "/a/my sales.csv → /workspace/data/my_sales.csv " in s, s
    assert "/b/my sales.csv → /workspace/data/my_sales-2.csv " in s, s
    t.text("/py print(open('/workspace/data/my_sales-2.csv').read().split(',')[0])")
    t.keys("Enter")
    s = t.wait(r"\[1\] you · ok", timeout=30)
    assert re.search(r"^  b\s", s, re.M), s
    t.text("Which is which?")
    t.keys("Enter")
    t.wait(r"Noted\.", timeout=30)
    [req] = [json.loads(l) for l in open(tmp_path / "log.jsonl")]
    system = req["body"]["messages"][0]["content"]
    assert "- /workspace/data/my_sales.csv (" in system, system
    assert "- /workspace/data/my_sales-2.csv (" in system, system
    t.text("/quit")
    t.keys("Enter")
    t.wait(r"EXITED rc=0", timeout=30)


def test_sent_reads_old_requests_back_from_the_journal(fake_model, tmux, tmp_path):
    # The notebook keeps only the last few request bodies; /sent N of an
    # older one reads it back from the session's journal.
    port = fake_model(NOTED)
    cmd = " ".join([TERP, *model_args(port, tmp_path / "out")])
    t = tmux(cmd, model_env(tmp_path), tmp_path, 160, 40, ready=r"│ ready", timeout=30)
    questions = ["alpha first question"] + ["again %d" % i for i in range(2, 13)]
    log = tmp_path / "log.jsonl"
    for i, q in enumerate(questions):
        t.text(q)
        t.keys("Enter")
        # the request went, and its answer came, before the next
        wait_until(lambda n=i + 1: log.exists() and
                   len(log.read_text().splitlines()) >= n, "request %d" % (i + 1))
        t.wait(r"│ ready", timeout=30)
    t.text("/sent 1")
    t.keys("Enter")
    s = t.wait(r"request 1 of 12", timeout=30)
    assert re.search(r"alpha first\s+question", s), s
    # no later question ("again N"; the prompt says "against")
    assert not re.search(r"\bagain \d", s), s


def test_a_hangup_exits_129_and_keeps_the_notebook(fake_model, tmux, tmp_path):
    """SIGHUP (the terminal closed) ends the notebook as it ends -p: exit
    status 128+1, the session saved for --resume."""
    import signal
    from conftest import children
    port = fake_model(NOTED)
    cmd = " ".join([TERP, *model_args(port, tmp_path / "out")])
    t = tmux(cmd, model_env(tmp_path), tmp_path, 100, 30, ready=r"│ ready", timeout=30)
    t.text("Remember 7.")
    t.keys("Enter")
    t.wait(r"Noted\.", timeout=60)
    [pid] = [p for p in children(t.pid()) if "terp" in open("/proc/%s/comm" % p).read()]
    os.kill(int(pid), signal.SIGHUP)
    t.wait(r"EXITED rc=129", timeout=30)
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"),
               XDG_CONFIG_HOME=str(tmp_path / "config"), HOME=str(tmp_path))
    r = subprocess.run([TERP, "--list"], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "Remember 7." in r.stdout, r


WIDE_CODE = ("import pandas as pd\n"
             "pd.DataFrame({'column_number_%d' % i: range(3) for i in range(12)})")


def test_a_pandas_value_fills_the_pane_and_the_model_keeps_80_columns(fake_model, tmux,
                                                                       tmp_path):
    """Issue 19: the cells pane's width reaches pandas for what the user
    sees (7 of these columns a row at 180 columns); the tool result keeps
    Jupyter's 80-column text view (4 a row)."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(TERP), "tests"))
    from fake_model import read_log
    port = fake_model({"turns": [
        {"openai": {"tool_calls": [{"id": "call_w", "name": "python_exec",
                                    "code": WIDE_CODE}]}},
        {"openai": {"text": "Twelve columns."}, "repeat": True}]})
    cmd = " ".join([TERP, *model_args(port, tmp_path / "out")])
    t = tmux(cmd, model_env(tmp_path), tmp_path, 180, 45, ready=r"│ ready", timeout=30)
    t.text("Show the frame.")
    t.keys("Enter")
    s = t.wait(r"Twelve columns\.", timeout=60)
    rows = [l for l in s.splitlines() if "column_number_0" in l]
    assert rows and "column_number_6" in rows[0], s
    log = read_log(str(tmp_path / "log.jsonl"))
    [tool] = [m["content"] for m in log[1]["body"]["messages"] if m["role"] == "tool"]
    first = [l for l in tool.splitlines() if "column_number_0" in l]
    assert first and "column_number_3" in first[0] and "column_number_4" not in first[0], tool
