"""Issue 19 items 3, 5, 6: output as a notebook shows it (carriage
returns, coalesced events), files beside the data, input()."""
import json
import os
import re

import pytest


# ---------------------------------------------------------------- input()

def test_input_refuses_at_once_headless(terp):
    cells = ["x = input('name? ')",
             "import sys; sys.stdin.readline()",
             "import getpass; getpass.getpass()",
             "import sys\nfor line in sys.stdin: pass",
             # a subprocess reading fd 0 gets EOF, not a hang
             "import subprocess; print(subprocess.run(['cat'], capture_output=True).returncode)"]
    args = ["exec", "--json", "--timeout", "30"]
    for c in cells:
        args += ["-c", c]
    r = terp(*args)
    res = r.results()
    assert [e["status"] for e in res] == ["error"] * 4 + ["ok"], r
    for e in res[:4]:
        assert e["error"]["ename"] == "StdinNotImplementedError", e
        assert "cannot ask for input here" in e["error"]["evalue"], e
        # at once, not at the time limit
        assert e["duration_ms"] < 20000, e
    assert r.stdout_of(5) == "0\n"


# ---------------------------------------------------------------- \r and coalescing

KEY = "sk-terp-test-0123456789"

# A progress bar as tqdm draws it: 100 rewrites of one line on stderr,
# slow enough to span several flushes, then a newline.
BAR = """
import sys, time
for i in range(101):
    sys.stderr.write("\\r%3d%%|%-10s|" % (i, "#" * (i // 10)))
    sys.stderr.flush()
    time.sleep(0.004)
sys.stderr.write("\\n")
print("done")
"""


def _resolve(text):
    """What a notebook shows of text (Jupyter's carriage returns)."""
    lines = []
    for raw in text.replace("\r\n", "\n").split("\n"):
        line = ""
        for part in raw.split("\r"):
            line = part + line[len(part):]
        lines.append(line)
    return "\n".join(lines)


def test_json_events_are_whole_lines(terp):
    r = terp("exec", "--json", "-c", "for x in range(3): print('IDX', x)")
    assert r.rc == 0, r
    outs = [e["text"] for e in r.of("stdout")]
    # print('IDX', x) is four write()s: one event for all three lines
    # (they came within one flush), never a piece of a line
    assert "".join(outs) == "IDX 0\nIDX 1\nIDX 2\n", outs
    assert all(t.endswith("\n") for t in outs), outs
    assert len(outs) <= 3, outs


def test_progress_bar_json_and_text(terp):
    r = terp("exec", "--json", "-c", BAR)
    assert r.rc == 0, r
    errs = [e["text"] for e in r.of("stderr")]
    # one event per flush interval at most, not one per update
    assert 1 <= len(errs) < 30, errs
    assert _resolve("".join(errs)) == "100%|##########|\n", errs
    assert r.stdout_of(1) == "done\n"
    t = terp("exec", "-c", BAR)
    assert t.rc == 0, t
    assert t.out == "done\n"
    assert t.err.splitlines()[0] == "100%|##########|", t.err


def test_progress_bar_is_one_line_for_the_model(terp, fake, tmp_path):
    srv = fake([{"openai": {"tool_calls": [{"id": "c1", "code": BAR}]}},
                {"openai": {"text": "ok"}}])
    r = terp("-p", "run it", "--json", "--provider", "openai", "--base-url", srv.url,
             extra_env={"OPENAI_API_KEY": KEY})
    assert r.rc == 0, r
    msgs = srv.requests()[1]["body"]["messages"]
    [tool] = [m for m in msgs if m["role"] == "tool"]
    content = tool["content"]
    assert "stderr:\n100%|##########|\n" in content, content
    assert " 50%" not in content and "\r" not in content, content


# ---------------------------------------------------------------- input() in the notebook

NOTED = {"turns": [{"openai": {"text": "Noted."}, "repeat": True}]}
ASK_MODEL = {"turns": [
    {"openai": {"tool_calls": [{"id": "call_1", "name": "python_exec",
                                "code": "who = input('model asks: ')\nprint('got', who)"}]}},
    {"openai": {"text": "Done."}, "repeat": True},
]}


def _notebook(fake_model, tmux, tmp_path, script, *extra):
    from tui_tmux import TERP as T, model_args, model_env
    port = fake_model(script)
    cmd = " ".join([T, *model_args(port, tmp_path / "out"), *extra])
    return tmux(cmd, model_env(tmp_path), tmp_path, 120, 40, ready=r"│ ready", timeout=30)


def test_input_asks_on_the_input_line(fake_model, tmux, tmp_path):
    t = _notebook(fake_model, tmux, tmp_path, NOTED)
    t.text("/py name = input('your name? '); print('hello', name)")
    t.keys("Enter")
    s = t.wait(r"(?m)^your name\?", timeout=30)
    # on the input line, under the status bar
    rows = s.rstrip("\n").splitlines()
    assert rows[-1].startswith("your name?") and "running cell [1]" in rows[-2], s
    t.text("Ada")
    t.keys("Enter")
    s = t.wait(r"\[1\] you · ok", timeout=30)
    assert re.search(r"hello Ada", s), s
    # getpass: asked the same way, not echoed
    t.text("/py import getpass; pw = getpass.getpass('secret: '); print(len(pw))")
    t.keys("Enter")
    # the prompt at the start of the input line: "secret: " anywhere also
    # matches the code still echoed there, and keys typed before the
    # prompt is up went to the question line (a CI run lost them so)
    t.wait(r"(?m)^secret:", timeout=30)
    t.text("hunter2")
    # the seven typed characters drawn (the screen is read after the
    # redraw, not at once), and none of them as itself
    s = t.wait(r"secret: \*{7}", timeout=30)
    assert "hunter2" not in s, s
    t.keys("Enter")
    s = t.wait(r"\[2\] you · ok", timeout=30)
    assert re.search(r"^\s+7\s+│", s, re.M), s
    # Ctrl-C cancels the question: the cell gets KeyboardInterrupt
    t.text("/py input('never answered: ')")
    t.keys("Enter")
    t.wait(r"never answered: ", timeout=30)
    t.keys("C-c")
    s = t.wait(r"\[3\] you · interrupted", timeout=30)
    assert "KeyboardInterrupt" in s, s
    assert not s.rstrip("\n").splitlines()[-1].startswith("never answered"), s
    t.text("/quit")
    t.keys("Enter")
    t.wait(r"EXITED rc=0", timeout=30)


def test_model_cell_asks_unless_no_input(fake_model, tmux, tmp_path):
    t = _notebook(fake_model, tmux, tmp_path, ASK_MODEL)
    t.text("Ask me")
    t.keys("Enter")
    t.wait(r"model asks: ", timeout=30)
    t.text("Grace")
    t.keys("Enter")
    t.wait(r"Done\.", timeout=30)
    [_, req] = [json.loads(l) for l in open(tmp_path / "log.jsonl")][:2]
    tool = [m for m in req["body"]["messages"] if m["role"] == "tool"][0]["content"]
    assert "got Grace" in tool, tool
    t.text("/quit")
    t.keys("Enter")
    t.wait(r"EXITED rc=0", timeout=30)


@pytest.mark.parametrize("how", ["--no-input", "model_input = off"])
def test_model_cell_refused_with_no_input(fake_model, tmux, tmp_path, how):
    extra = []
    if how.startswith("--"):
        extra.append(how)
    else:
        (tmp_path / "config" / "terp").mkdir(parents=True)
        (tmp_path / "config" / "terp" / "config").write_text(how + "\n")
    t = _notebook(fake_model, tmux, tmp_path, ASK_MODEL, *extra)
    t.text("Ask me")
    t.keys("Enter")
    t.wait(r"Done\.", timeout=30)
    [_, req] = [json.loads(l) for l in open(tmp_path / "log.jsonl")][:2]
    tool = [m for m in req["body"]["messages"] if m["role"] == "tool"][0]["content"]
    assert "StdinNotImplementedError" in tool and "cannot ask for input here" in tool, tool
    # the user's own cells still ask
    t.text("/py print('typed', input('you? '))")
    t.keys("Enter")
    t.wait(r"you\? ", timeout=30)
    t.text("yes")
    t.keys("Enter")
    t.wait(r"typed yes", timeout=30)
    t.text("/quit")
    t.keys("Enter")
    t.wait(r"EXITED rc=0", timeout=30)


# ---------------------------------------------------------------- files beside the data

def test_files_beside_the_data_count_against_the_disk(terp, tmp_path):
    """What code writes in /workspace/data is the workspace's: a notebook's
    sqlite file beside its CSV works, and filling the folder stops the
    cell at the session's disk limit as anywhere in the workspace."""
    csv = tmp_path / "sales.csv"
    csv.write_text("a,b\n1,2\n")
    r = terp("exec", "--json", "--disk", "64M", "--max-file-size", "16M", csv,
             "-c", "import sqlite3, pandas as pd\n"
                   "pd.read_csv('/workspace/data/sales.csv').to_sql('t', sqlite3.connect("
                   "'/workspace/data/test.sqlite'))\n"
                   "print(sqlite3.connect('/workspace/data/test.sqlite').execute("
                   "'select sum(b) from t').fetchone()[0])",
             "-c", "import os\nchunk = os.urandom(1 << 20)\n"
                   "for i in range(100000):\n"
                   "    with open('/workspace/data/junk%d' % i, 'wb') as f:\n"
                   "        for j in range(4): f.write(chunk)",
             timeout=300)
    res = r.results()
    assert res[0]["status"] == "ok" and r.stdout_of(1) == "2\n", r
    assert res[1]["status"] == "crashed", res
    assert "disk limit of 64 MiB" in res[1]["reason"], res
    assert csv.read_text() == "a,b\n1,2\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("junk")) == []
    # in the session's workspace; dropped now, not written back later
    (ev,) = r.of("session")
    data = os.path.realpath(os.path.join(ev["workspace"], "workspace", "data"))
    junk = [n for n in os.listdir(data) if n.startswith("junk")]
    assert junk and "test.sqlite" in os.listdir(data), os.listdir(data)
    for n in junk:
        os.unlink(os.path.join(data, n))


# ---------------------------------------------------------------- displays in the pane

def test_markdown_and_updated_displays_in_the_cells_pane(fake_model, tmux, tmp_path):
    t = _notebook(fake_model, tmux, tmp_path, NOTED)
    t.text("/py from IPython.display import Markdown; "
           "h = display('step 0', display_id=True); "
           "[h.update('step %d' % i) for i in range(1, 6)]; "
           "display(Markdown('## Findings\\n\\n- **west** leads')); print('tail line')")
    t.keys("Enter")
    s = t.wait(r"\[1\] you · ok.*tail line", timeout=60)
    # the output, below the code (which says all of this as source)
    lines = s.splitlines()
    first = next(i for i, l in enumerate(lines) if "'step 5'" in l)
    out = "\n".join(lines[first:])
    # the display shows its last update only, in its place
    assert "'step 1'" not in out and "'step 0'" not in out, s
    # the Markdown rendered as answers are: no '##' nor '**', a bullet
    assert "Findings" in out and "## Findings" not in out, s
    assert "\u2022 west leads" in out and "**west**" not in out, s
    at = [next(i for i, l in enumerate(lines) if i >= first and k in l)
          for k in ("Findings", "tail line")]
    assert first < at[0] < at[1], s
