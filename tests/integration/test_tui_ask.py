"""The code before it runs, in the real binary's notebook UI (tmux, the
real agent and sandbox, tests/fake_model.py on 127.0.0.1): the model's
code streams into a pending cell as the model writes it."""
import json
import re

import pytest

from tui_tmux import SALES, TERP, model_env

CODE = 'total = 0\nfor i in range(10):\n    total += i\nprint("sum is", total)'
SPLIT = 6


def _pieces(raw, n):
    return [raw[i:i + n] for i in range(0, len(raw), n)]


def streaming_script(provider, gate):
    """One call streamed in pieces of SPLIT characters that stops, until
    the file gate exists, once its arguments hold "range(10):" and not
    yet "print", then the answer."""
    raw = json.dumps({"code": CODE})
    frags = _pieces(raw, SPLIT)
    k = next(i for i in range(len(frags) + 1) if "range(10):" in "".join(frags[:i]))
    assert "print" not in "".join(frags[:k])
    call = {"id": "call_1", "name": "python_exec", "fragments": frags}
    if provider == "openai":
        first = {"openai": {"tool_calls": [call]}, "pause_at": 2 + k}
        last = {"openai": {"text": "The sum is 45."}, "repeat": True}
    else:
        # message_start, the tool_use block's start, its empty delta
        call["fragments"] = [""] + frags
        first = {"anthropic": {"tool_calls": [call]}, "pause_at": 3 + k}
        last = {"anthropic": {"text": "The sum is 45."}, "repeat": True}
    first["pause_file"] = str(gate)
    return {"turns": [first, last]}


def start(tmux, tmp_path, port, provider, width=100, height=30):
    env = model_env(tmp_path)
    base = "http://127.0.0.1:%d" % port
    if provider == "openai":
        args = ["--provider", "openai", "--model", "fake-model", "--base-url", base + "/v1"]
    else:
        env["ANTHROPIC_API_KEY"] = "test-key"
        args = ["--provider", "anthropic", "--model", "fake-model", "--base-url", base]
    cmd = " ".join([TERP, *args, "--out", str(tmp_path / "out"), SALES])
    return tmux(cmd, env, tmp_path, width, height, ready=r"│ ready", timeout=30)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_code_streams_into_a_pending_cell(fake_model, tmux, tmp_path, provider):
    gate = tmp_path / "go"
    port = fake_model(streaming_script(provider, gate))
    t = start(tmux, tmp_path, port, provider)
    t.text("Add up 0 to 9")
    t.keys("Enter")
    # half the call came: its code shows, highlighted, nothing ran
    s = t.wait(r"for i in range\(10\):", timeout=30)
    assert "the model writes a cell" in s, s
    assert "total = 0" in s
    assert "writing a cell" in s.splitlines()[-2], s
    assert "print" not in s and "ran cell" not in s, s
    esc = t.screen(escapes=True)
    line = next(l for l in esc.splitlines() if "range" in l)
    assert line.count("\x1b[") >= 3, repr(line)     # styled in pieces
    gate.write_text("")
    s = t.wait(r"The sum is 45\.", timeout=60)
    assert re.search(r"▸ ran cell \[1\] · ok", s), s
    assert "the model writes a cell" not in s
    assert "sum is 45" in s


# ---------------------------------------------------------------- --ask

def call(cid, code):
    return {"openai": {"tool_calls": [{"id": cid, "name": "python_exec", "code": code}]}}


def answer(text):
    return {"openai": {"text": text}}


PROMPT = r"run\? y / e edit / n skip \(tell the model\) / a always"


def tool_results(body):
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m.get("role") == "tool"}


def test_ask_yes_no_always(fake, tmux, tmp_path):
    srv = fake([call("call_1", 'print("first", 6 * 7)'),
                call("call_2", 'print("second")'),
                answer("Done."),
                call("call_3", 'print("third")'),
                call("call_4", 'print("fourth")'),
                answer("All ran.")])
    env = model_env(tmp_path)
    cmd = " ".join([TERP, "--provider", "openai", "--model", "fake-model", "--base-url",
                    srv.url, "--out", str(tmp_path / "out"), SALES])
    t = tmux(cmd, env, tmp_path, 100, 30, ready=r"│ ready", timeout=30)
    t.text("/ask on")
    t.keys("Enter")
    t.wait(r"ask: on", timeout=10)
    t.text("Go")
    t.keys("Enter")
    # the cell waits, its code on screen, nothing ran
    s = t.wait(PROMPT, timeout=30)
    assert 'print("first", 6 * 7)' in s and "the model's cell, not run yet" in s, s
    assert "first 42" not in s and "ran cell" not in s
    t.keys("Enter")                                     # Enter is y
    s = t.wait(r'print\("second"\).*' + PROMPT, timeout=30)
    assert "first 42" in s and re.search(r"▸ ran cell \[1\] · ok", s), s
    t.keys("n")
    s = t.wait(r"Done\.", timeout=30)
    assert "you skipped it" in s, s
    assert "ran cell [2]" not in s
    body = srv.requests()[2]["body"]
    res = tool_results(body)
    assert "first 42" in res["call_1"]
    assert "declined" in res["call_2"] and "second" not in res["call_2"]
    # a: this cell runs and the next does not ask
    t.text("Again")
    t.keys("Enter")
    t.wait(r'print\("third"\).*' + PROMPT, timeout=30)
    t.keys("a")
    s = t.wait(r"All ran\.", timeout=30)
    assert "third" in s and "fourth" in s and re.search(r"ran cell \[3\] · ok", s), s
    assert not re.search(PROMPT, s)
    res = tool_results(srv.requests()[5]["body"])
    assert "fourth" in res["call_4"] and "third" in res["call_3"]
    t.text("/ask")
    t.keys("Enter")
    t.wait(r"ask: off", timeout=10)


def test_ask_edit_runs_the_edited_code(fake, tmux, tmp_path):
    srv = fake([call("call_1", 'print("model", 1)'), answer("Edited and ran.")])
    env = model_env(tmp_path)
    (tmp_path / "config" / "terp").mkdir(parents=True)
    (tmp_path / "config" / "terp" / "config").write_text("ask = on\n")
    ed = tmp_path / "ed.sh"
    ed.write_text("#!/bin/sh\nprintf 'print(\"edited\", 40 + 2)\\n' > \"$1\"\n")
    ed.chmod(0o755)
    env["EDITOR"] = str(ed)
    env["VISUAL"] = str(ed)
    cmd = " ".join([TERP, "--provider", "openai", "--model", "fake-model", "--base-url",
                    srv.url, "--out", str(tmp_path / "out"), SALES])
    t = tmux(cmd, env, tmp_path, 100, 30, ready=r"│ ready", timeout=30)
    t.text("Go")
    t.keys("Enter")
    t.wait(r'print\("model", 1\).*' + PROMPT, timeout=30)
    t.keys("e")
    s = t.wait(r"Edited and ran\.", timeout=30)
    assert "edited 42" in s and "model 1" not in s, s
    res = tool_results(srv.requests()[1]["body"])
    assert "edited your code" in res["call_1"] and "edited 42" in res["call_1"], res


def test_headless_ask_refuses(tmp_path):
    import subprocess
    r = subprocess.run([TERP, "-p", "hi", "--ask"], capture_output=True, text=True,
                       env=model_env(tmp_path), timeout=30)
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--ask" in lines[0] and "-p" in lines[0], r.stderr


# ---------------------------------------------------------------- d drops a cell

def test_drop_a_cell(fake, tmux, tmp_path):
    srv = fake([call("call_1", 'print("keep", 40 + 1)'),
                call("call_2", 'print("zapped", 6 * 111)'),
                answer("Two cells."),
                answer("Fine."),
                answer("Still fine.")])
    env = model_env(tmp_path)
    cmd = " ".join([TERP, "--provider", "openai", "--model", "fake-model", "--base-url",
                    srv.url, "--out", str(tmp_path / "out")])
    t = tmux(cmd + " " + SALES, env, tmp_path, 100, 30, ready=r"│ ready", timeout=30)
    t.text("Go")
    t.keys("Enter")
    s = t.wait(r"Two cells\..*│ ready", timeout=60)
    assert "zapped 666" in s and "keep 41" in s
    t.keys("Tab")                   # the conversation
    t.keys("Tab")                   # the cells, the newest selected
    t.wait(r"─ cells 2 ─", timeout=10)
    t.keys("d")
    s = t.wait(r"drop cell \[2\] from the notebook and from what the model is sent\? \(y/n\)",
               timeout=10)
    assert "zapped 666" in s          # asked first: still there
    t.keys("y")
    s = t.wait(r"cell \[2\] dropped", timeout=10)
    s = t.wait_for(lambda s: "zapped" not in s, timeout=10)
    assert "keep 41" in s
    assert re.search(r"ran cell \[2\] · dropped", s), s
    t.keys("i")
    t.text("And now?")
    t.keys("Enter")
    t.wait(r"Fine\.", timeout=30)

    def check(body):
        text = json.dumps(body)
        assert "zapped" not in text and "666" not in text, text
        assert "keep" in text
        msgs = body["messages"]
        calls = [c["id"] for m in msgs for c in m.get("tool_calls") or []]
        results = [m["tool_call_id"] for m in msgs if m.get("role") == "tool"]
        assert calls == results == ["call_1", "call_2"], msgs
        assert "dropped this cell" in tool_results(body)["call_2"]
    check(srv.requests()[3]["body"])
    t.text("/quit")
    t.keys("Enter")
    t.wait(r"EXITED rc=0", timeout=30)
    # the journal keeps the cell, marked
    journal = [p for p in (tmp_path / "state").rglob("*.jsonl")]
    text = "".join(p.read_text() for p in journal)
    recs = [json.loads(l) for l in text.splitlines() if l.startswith("{")]
    assert any(r.get("t") == "cell" and r.get("code") == 'print("zapped", 6 * 111)'
               for r in recs), text
    assert any(r.get("t") == "drop" and r.get("c") == 2 for r in recs), text
    # a resume keeps it dropped: not on screen, not sent
    t = tmux(cmd + " --resume", env, tmp_path, 100, 30, ready=r"│ ready", timeout=30)
    s = t.screen()
    assert "keep 41" in s and "zapped" not in s, s
    t.text("Once more?")
    t.keys("Enter")
    t.wait(r"Still fine\.", timeout=30)
    check(srv.requests()[4]["body"])


def cells_pane(s):
    """The cells pane's rows: below its title, left of the files pane."""
    lines = s.splitlines()
    top = next(i for i, l in enumerate(lines) if l.startswith("─ cells"))
    x1 = lines[top].index("│") if "│" in lines[top] else len(lines[top])
    return [l[:x1] for l in lines[top + 1:-2]]


def test_the_code_being_written_shows_in_the_cells_pane_too(fake_model, tmux, tmp_path):
    gate = tmp_path / "go"
    port = fake_model(streaming_script("openai", gate))
    t = start(tmux, tmp_path, port, "openai")
    t.text("Add up 0 to 9")
    t.keys("Enter")
    s = t.wait(r"for i in range\(10\):.*for i in range\(10\):", timeout=30)
    cells = "\n".join(cells_pane(s))
    # the pending cell, numbered as it will be, its code so far
    assert re.search(r"\[1\] model · the model writes it…", cells), s
    assert "total = 0" in cells and "for i in range(10):" in cells, s
    assert "print" not in cells and "No cells yet" not in cells, s
    gate.write_text("")
    s = t.wait(r"The sum is 45\.", timeout=60)
    cells = "\n".join(cells_pane(s))
    assert re.search(r"\[1\] model · ok", cells), s
    assert "writes it" not in cells and "not run yet" not in cells, s
    assert cells.count("for i in range(10):") == 1, s


def test_ask_the_waiting_cell_shows_in_the_cells_pane(fake, tmux, tmp_path):
    srv = fake([call("call_1", 'print("first", 6 * 7)'), answer("Done.")])
    env = model_env(tmp_path)
    cmd = " ".join([TERP, "--provider", "openai", "--model", "fake-model", "--base-url",
                    srv.url, "--out", str(tmp_path / "out"), "--ask", SALES])
    t = tmux(cmd, env, tmp_path, 100, 30, ready=r"│ ready", timeout=30)
    t.text("Go")
    t.keys("Enter")
    s = t.wait(PROMPT, timeout=30)
    cells = "\n".join(cells_pane(s))
    assert re.search(r"\[1\] model · not run yet", cells), s
    assert 'print("first", 6 * 7)' in cells, s
    t.keys("Enter")
    s = t.wait(r"Done\.", timeout=30)
    cells = "\n".join(cells_pane(s))
    assert re.search(r"\[1\] model · ok", cells) and "not run yet" not in cells, s
