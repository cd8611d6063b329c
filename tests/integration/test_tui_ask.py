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
