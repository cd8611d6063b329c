"""Issue 24 (results people can read), in the notebook UI through tmux:
the real binary, the real sandbox and a scripted fake model
(tests/fake_model.py) on 127.0.0.1."""
import os
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
    def start(script, *args, width=100, height=30, path="/usr/bin:/bin"):
        port = fake_model(script)
        env = dict(model_env(tmp_path), PATH=path)
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
    t.wait(r"cell \[1\] as the model saw it: 4 KiB of 33\.\d KiB \(cut\)", timeout=30)
    # the text as sent: its status line, the head of stdout and the marker
    # (waited for: the title can be on the screen before the rows below
    # it are, as a loaded CI run caught once)
    s = t.wait(r"\[\.\.\. \d+ bytes cut; the full output is in the notebook \.\.\.\]",
               timeout=30)
    assert "status: ok" in s and "stdout:" in s, s
    assert "row 000 xxxx" in s, s
    assert re.search(r"\[\.\.\. \d+ bytes cut; the full output is in the notebook \.\.\.\]", s), s
    t.keys("G")
    t.wait(r"row 499 x", timeout=30)
    t.keys("q")
    t.wait(r"▸\[1\]")


LONG = ("total = 0\n"
        "values = [" + ", ".join(str(i * 1111) for i in range(30)) + "]\n"
        "print(sum(values))")


def test_a_long_code_line_wraps_with_a_marker_not_cut(tui):
    t = tui({"turns": [{"openai": {"tool_calls": [{"id": "c1", "code": LONG}]}},
                       {"openai": {"text": "The sum is 483285."}}]}, width=80, height=24)
    t.text("Sum them")
    t.keys("Enter")
    s = t.wait(r"The sum is 483285", timeout=60)
    s = t.wait(r"↪ ", timeout=30)
    code = [l for l in s.splitlines() if "│ " in l and ("values" in l or "↪" in l)]
    # the line's rest is on the next rows after the marker, to its last
    # number: nothing cut with "…"
    assert code[0].split("│ ", 1)[1].startswith("values = [0, 1111, 2222"), s
    assert any("↪ " in l for l in code[1:]), s
    joined = "".join(l.split("│ ", 1)[1].replace("↪ ", "").rstrip() for l in code
                     if "│ " in l)
    assert "32219]" in joined, s
    assert not any(l.rstrip().endswith("…") for l in code), s


CHART = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
         "plt.bar(['north', 'south', 'east', 'west'], [3, 5, 9, 4])\n"
         "plt.savefig('/workspace/out/bars.png')")


def test_o_without_xdg_open_says_where_the_file_is_and_how_to_view_it(tui, tmp_path):
    # a chafa of our own first on PATH (whether the machine has one must
    # not matter), and no xdg-open in /usr/bin:/bin
    bin_ = tmp_path / "viewers"
    bin_.mkdir()
    (bin_ / "chafa").write_text("#!/bin/sh\nexit 0\n")
    os.chmod(bin_ / "chafa", 0o755)
    t = tui({"turns": [{"openai": {"tool_calls": [{"id": "c1", "code": CHART}]}},
                       {"openai": {"text": "East is largest."}}]}, width=100, height=30,
            path="%s:/usr/bin:/bin" % bin_)
    t.text("Plot the regions")
    t.keys("Enter")
    t.wait(r"East is largest", timeout=90)
    t.keys("Tab")
    t.keys("Tab")
    t.keys("Tab")          # input -> conversation -> cells -> files
    t.wait(r"─ files 1")
    t.keys("o")
    s = t.wait(r"xdg-open is not installed here\.", timeout=30)
    # the notice wraps the long path anywhere: compare without spaces
    flat = "".join(l.split("│")[0].strip() for l in s.splitlines())
    flat = re.sub(r"\s", "", flat)
    assert re.search(r"bars\.pngisat\S*/out/bars\.png\(Enterinthefilespane"
                     r"previewsit\);toviewit:chafa'\S*/out/bars\.png'", flat), s


BLOCKS = set("▘▝▀▖▌▞▛▗▚▐▜▄▙▟█")


def chart_rows(s):
    """The rows of the cells pane's thumbnail below '▪ bars.png', and the
    cells pane's part of the screen (left of the files pane's border)."""
    lines = s.splitlines()
    x1 = lines[1].index("│") if "│" in lines[1] else len(lines[1])
    left = [l[:x1] for l in lines]
    start = next(i for i, l in enumerate(left) if "▪ bars.png" in l)
    rows = [l for l in left[start + 1:] if sum(ch in BLOCKS for ch in l) >= 3]
    return left, rows


@pytest.mark.parametrize("width,height", [(160, 50), (100, 30), (80, 24)])
def test_the_inline_chart_grows_with_the_pane_and_keeps_its_header(tui, width, height):
    t = tui({"turns": [{"openai": {"tool_calls": [{"id": "c1", "code": CHART}]}},
                       {"openai": {"text": "East is largest."}}]}, width=width, height=height)
    t.text("Plot the regions")
    t.keys("Enter")
    t.wait(r"East is largest", timeout=90)
    s = t.wait(r"▪ bars\.png", timeout=30)
    print(s)
    left, rows = chart_rows(s)
    # the cell's header line stays on screen above its chart
    assert any(re.search(r"\[1\] .*model", l) for l in left), s
    assert rows, s
    wd = max(len(r.strip()) for r in rows)
    if width == 160:
        # the cells pane is 124 columns wide and 30 rows high: the chart
        # was at most 64x14 (37 columns at this aspect); now up to two
        # thirds of the pane's rows, the cell still fitting, and the
        # width they give (31 columns of it drawn before, 13 rows)
        assert wd > 35 and len(rows) > 14, s


LONG_CHART = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
              "regions = ['north', 'south', 'east', 'west']\n"
              "revenue = [3, 5, 9, 4]\n"
              "plt.bar(regions, revenue, color='tab:blue')\n"
              "plt.title('revenue by region')\n"
              "plt.savefig('/workspace/out/bars.png')")


def test_at_80x24_the_chart_gets_rows_and_its_header_stays(tui):
    # 8 lines of code: the chart had 4 rows, which did not fit under
    # them, so the pane (following the cell's end) hid the header
    t = tui({"turns": [{"openai": {"tool_calls": [{"id": "c1", "code": LONG_CHART}]}},
                       {"openai": {"text": "East is largest."}}]}, width=80, height=24)
    t.text("Plot the regions")
    t.keys("Enter")
    t.wait(r"East is largest", timeout=90)
    s = t.wait(r"▪ bars\.png", timeout=30)
    print(s)
    left, rows = chart_rows(s)
    assert any(re.search(r"\[1\] .*model", l) for l in left), s
    # the code folds to its first lines for the chart (Enter shows all)
    assert re.search(r"│ … \d+ more lines", s), s
    assert len(rows) >= 7, s
    wd = max(len(r.strip()) for r in rows)
    assert wd >= 16, s


def test_a_chart_cell_with_output_keeps_its_header_under_a_long_answer(tui):
    # 6 lines of stdout: the chart's rows were reckoned with 3 for it,
    # so the cell outgrew the pane by the difference and lost its header
    code = LONG_CHART + "\nfor r in ['lowest', 'north', 'south', 'east', 'west', 'end']:\n    print(r)"
    answer = " ".join("East has the most revenue, %d units more than west." % i
                      for i in range(12))
    t = tui({"turns": [{"openai": {"tool_calls": [{"id": "c1", "code": code}]}},
                       {"openai": {"text": answer}}]}, width=100, height=32)
    t.text("Plot the regions")
    t.keys("Enter")
    t.wait(r"11 units more", timeout=90)
    s = t.wait(r"▪ bars\.png", timeout=30)
    left, rows = chart_rows(s)
    assert any(re.search(r"\[1\] .*model", l) for l in left), s
    assert "  end" in "\n".join(left) and rows, s


WIDE = ("import pandas as pd\n"
        "pd.set_option('display.width', 100000)\n"
        "pd.set_option('display.max_columns', 100)\n"
        "pd.set_option('display.max_rows', 100)\n"
        "df = pd.DataFrame({'col%02d' % i: range(i * 1000, i * 1000 + 60) for i in range(31)})\n"
        "print(df)")


def test_v_on_a_cell_views_a_wide_frame_scrolling_both_ways(tui):
    t = tui({"turns": [{"openai": {"tool_calls": [{"id": "c1", "code": WIDE}]}},
                       {"openai": {"text": "31 columns."}}]}, width=80, height=24)
    t.text("Make a wide frame")
    t.keys("Enter")
    t.wait(r"31 columns\.", timeout=90)
    t.keys("Tab")
    t.keys("Tab")          # input -> conversation -> cells (its header
    t.keys("v")            # is above the pane's top: the output is long)
    s = t.wait(r"cell \[1\] output")
    assert "col00" in s and "col30" not in s, s
    assert re.search(r"col 1 of \d+", s), s
    # sideways, half a screen a step, to the last column
    for _ in range(12):
        t.keys("l")
    s = t.wait(r"col30")
    assert "col00" not in s, s
    body = s.splitlines()[1:]
    # the lines are whole, not wrapped: row 0's last value on row 0's line
    assert any(re.search(r"30000\s*$", l) for l in body), s
    t.keys("h")
    t.keys("Home")
    s = t.wait(r"col 1 of")
    assert "col00" in s, s
    t.keys("NPage")
    t.keys("NPage")
    t.keys("NPage")
    s = t.wait(r"\b59 ")
    t.keys("q")
    s = t.wait(r"─ cells 1")
    assert "cell [1] output" not in s, s
