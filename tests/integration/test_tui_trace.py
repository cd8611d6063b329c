"""The notebook UI's traced numbers and cost (issue 11, parts 2 and 3):
the real binary through tmux, the real sandbox, examples/sales.csv and
a scripted fake model (tests/fake_model.py) on 127.0.0.1."""
import re
import subprocess

import pytest

from tui_tmux import SALES, TERP, model_args, model_env

CODE = ("import pandas as pd\n"
        "df = pd.read_csv('/workspace/data/sales.csv')\n"
        "print(df.groupby('region').revenue.sum().round(2))")

USAGE = {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}

SCRIPT = {"turns": [
    {"openai": {"tool_calls": [{"id": "c1", "code": CODE}], "usage": USAGE}},
    {"openai": {"text": "East leads with 2,748,435.15, north has 2,270,303.71; "
                        "returns fell 12.5%.", "usage": USAGE}},
    {"openai": {"text": "Your cell printed 4242.5.", "usage": USAGE}, "repeat": True},
]}


def environ(tmp_path):
    return dict(model_env(tmp_path), PATH="/usr/bin:/bin")


@pytest.fixture
def model(fake_model, tmp_path):
    port = fake_model(SCRIPT)
    (tmp_path / "config" / "terp").mkdir(parents=True)
    (tmp_path / "config" / "terp" / "config").write_text("price = fake-model 1000 2000\n")
    return model_args(port, tmp_path / "out")


@pytest.fixture
def tui(tmp_path, model, tmux):
    def start(*args):
        return tmux(" ".join([TERP, *model, *args]), environ(tmp_path), tmp_path,
                    160, 45, ready=r"│ ready", timeout=30)
    return start


def test_answer_marks_its_numbers_and_lists_their_sources(tui):
    t = tui(SALES)
    t.text("Revenue by region?")
    t.keys("Enter")
    s = t.wait(r"returns fell 12\.5%", timeout=60)
    t.wait(r"│ ready", timeout=30)
    s = t.screen()
    # the header above the answer; the answer's words as the model wrote
    # them: no superscripts, nothing inserted
    head = s.index("2 of 3 numbers traced; 1 not in any output: 12.5%")
    assert head < s.index("East leads with 2,748,435.15, north has 2,270,303.71; "
                          "returns fell 12.5%."), s
    assert "(not in any output)" not in s and "¹" not in s, s
    # the marks are styles: traced underlined, untraced underlined bold
    # yellow (the default theme's answer.traced and answer.untraced)
    e = t.screen(escapes=True)
    line = next(l for l in e.split("\n") if "East leads" in l)
    assert "\x1b[4m2,748,435.15\x1b[0m" in line, repr(line)
    assert "\x1b[4m2,270,303.71\x1b[0m" in line, repr(line)
    assert "\x1b[1;4m\x1b[33m12.5%\x1b[0m" in line, repr(line)
    # the cost of the two calls: 2 x (1000 x $1000 + 100 x $2000) / 1M
    assert "$2.40" in s, s

    # /trace: each number with the output line it came from
    t.text("/trace")
    t.keys("Enter")
    s = t.wait(r"Numbers of the last answer: 2 of 3 traced", timeout=30)
    assert re.search(r"✓ 2,748,435\.15  cell \[1\], line 2: east\s+2748435\.15", s), s
    assert re.search(r"✓ 2,270,303\.71  cell \[1\], line 3: north\s+2270303\.71", s), s
    assert "✗ 12.5%  not in any output" in s, s

    # t in the conversation pane: the next number's source, one key away
    t.keys("Tab")
    t.keys("t")
    s = t.wait(r"1/3 ✓ 2,748,435\.15 — cell \[1\], line 2: east", timeout=30)
    t.keys("t")
    t.wait(r"2/3 ✓ 2,270,303\.71 — cell \[1\], line 3: north", timeout=30)
    t.keys("t")
    t.wait(r"3/3 ✗ 12\.5% — not in any output", timeout=30)

    # a number only a cell run by hand printed is traced to that cell
    t.keys("Escape")
    t.text("/py print(4242.5)")
    t.keys("Enter")
    t.wait(r"\[2\] you · ok", timeout=30)
    t.text("What did my cell print?")
    t.keys("Enter")
    s = t.wait(r"Your cell printed 4242\.5\.", timeout=60)
    assert "1 of 1 number traced · t: where each came from" in s, s
    t.text("/trace")
    t.keys("Enter")
    t.wait(r"✓ 4242\.5  cell \[2\], line 1: 4242\.5", timeout=30)


def test_a_resumed_notebook_shows_its_answers_traced(tui, model, tmp_path):
    """terp -p answers; the notebook resumed in the UI shows the same
    header and marks, traced against the cells before the answer."""
    r = subprocess.run([TERP, *model, "-p", "Revenue by region?", SALES],
                       env=environ(tmp_path), cwd=str(tmp_path), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "terp: 2 of 3 numbers traced; 1 not in any output: 12.5%" in r.stderr
    t = tui("--resume")
    s = t.screen()
    assert s.index("2 of 3 numbers traced") < s.index("East leads with 2,748,435.15,"), s
    assert "returns fell 12.5%." in s and "(not in any output)" not in s, s
    t.text("/trace")
    t.keys("Enter")
    t.wait(r"✓ 2,270,303\.71  cell \[1\], line 3: north\s+2270303\.71", timeout=30)


def test_p_on_a_terminal_lists_the_sources_under_the_summary(model, tmux, tmp_path):
    """Issue 24: `terp -p` on a terminal prints the answer as written and,
    under the summary, a footnote list of where each number came from."""
    t = tmux(" ".join([TERP, *model, "-p", "'Revenue by region?'", SALES,
                       "; echo EXIT=$?; sleep 60"]), environ(tmp_path), tmp_path,
             120, 30, ready=r"EXIT=0", timeout=120)
    s = t.screen()
    assert "East leads with 2,748,435.15, north has 2,270,303.71; returns fell 12.5%." in s, s
    assert "terp: 2 of 3 numbers traced; 1 not in any output: 12.5%" in s, s
    assert "  - 2,748,435.15: cell [1], line 2" in s, s
    assert "  - 2,270,303.71: cell [1], line 3" in s, s
    assert "  - 12.5%: not in any output" in s, s
    assert "(not in any output)" not in s, s
