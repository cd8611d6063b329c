"""Issue 24 (results people can read), in the notebook UI through tmux:
the real binary, the real sandbox and a scripted fake model
(tests/fake_model.py) on 127.0.0.1."""
import re

import pytest

from tui_tmux import SALES, TERP, model_args, model_env

BIG = "for i in range(500):\n    print('row %03d ' % i + 'x' * 60)"

SCRIPT = {"turns": [
    {"openai": {"tool_calls": [{"id": "c1", "code": BIG}]}},
    {"openai": {"text": "It printed 500 rows."}},
]}


@pytest.fixture
def tui(fake_model, tmp_path, tmux):
    def start(script, *args, width=100, height=30):
        port = fake_model(script)
        env = dict(model_env(tmp_path), PATH="/usr/bin:/bin")
        cmd = " ".join([TERP, *model_args(port, tmp_path / "out"), *args, SALES])
        return tmux(cmd, env, tmp_path, width, height, ready=r"│ ready", timeout=30)
    return start


def test_the_cell_line_says_what_the_model_saw_and_w_shows_it(tui):
    t = tui(SCRIPT, height=60)
    t.text("Print many rows")
    t.keys("Enter")
    t.wait(r"It printed 500 rows", timeout=60)
    # 500 lines of 69 bytes: 34,500 bytes of stdout, the model got 4 KiB
    s = t.wait(r"model saw 4 KiB of 33\.\d KiB", timeout=30)
    assert re.search(r"▸ ran cell \[1\] · ok [0-9.]+s · 500 lines · "
                     r"model saw 4 KiB of 33\.\d KiB", s), s
    t.keys("Tab")
    t.keys("Tab")          # input -> conversation -> cells
    t.wait(r"▸\[1\]")
    t.keys("w")
    s = t.wait(r"cell \[1\] as the model saw it: 4 KiB of 33\.\d KiB \(cut\)", timeout=30)
    # the text as sent: its status line, the head of stdout and the marker
    assert "status: ok" in s and "stdout:" in s, s
    assert "row 000 xxxx" in s, s
    assert re.search(r"\[\.\.\. \d+ bytes cut; the full output is in the notebook \.\.\.\]", s), s
    t.keys("G")
    t.wait(r"row 499 x", timeout=30)
    t.keys("q")
    t.wait(r"▸\[1\]")
