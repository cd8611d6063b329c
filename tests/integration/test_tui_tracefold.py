"""A folded traceback keeps the cell's own frames (issue 25, item 10):
the real binary through tmux, the real sandbox with pandas, and a
scripted fake model (tests/fake_model.py) on 127.0.0.1."""
import re

from tui_tmux import SALES, TERP, model_args, model_env

# pandas called wrongly from inside a function of the cell: the error is
# raised three pandas frames below the cell's line 4
CODE = ("import pandas as pd\n"
        "df = pd.read_csv('/workspace/data/sales.csv')\n"
        "def top(d):\n"
        "    return d.groupby('no_such_column')['revenue'].sum()\n"
        "top(df)")

SCRIPT = {"turns": [
    {"openai": {"tool_calls": [{"id": "c1", "name": "python_exec", "code": CODE}]}},
    {"openai": {"text": "There is no such column."}, "repeat": True},
]}


def test_a_folded_traceback_shows_the_cells_frames(fake_model, tmux, tmp_path):
    port = fake_model(SCRIPT)
    env = dict(model_env(tmp_path), PATH="/usr/bin:/bin")
    t = tmux(" ".join([TERP, *model_args(port, tmp_path / "out"), SALES]), env,
             tmp_path, 120, 50, ready=r"│ ready", timeout=30)
    t.text("Top channel?")
    t.keys("Enter")
    s = t.wait(r"There is no such column\..*│ ready", timeout=60)
    t.wait(r"KeyError: 'no_such_column'", timeout=30)
    s = t.screen()
    # folded: pandas' middle frames are hidden...
    assert re.search(r"… \d+ lines hidden …", s), s
    assert "groupby.py" not in s, s
    # ...the cell's own frames and their lines are not
    assert 'File "<cell 1>", line 5, in <module>' in s, s
    assert 'File "<cell 1>", line 4, in top' in s, s
    assert "return d.groupby('no_such_column')" in s, s
    # and the end still: the line that raised and the error
    assert "raise KeyError(gpr)" in s, s
