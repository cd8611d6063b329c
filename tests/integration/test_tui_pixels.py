"""Issue 24, real pixels inline: a chart in the cells pane goes out in
pixels where the terminal can place pictures in a grid: kitty by Unicode
placeholders (the PNG sent once as an image id with a virtual placement,
then U+10EEEE cells in that id's colour which curses draws and scrolls as
text), sixel outside tmux (drawn at the chart's rows after each update,
drawn again where it moved, the rows it left repainted). terp runs under
script(1) inside tmux, which records every byte it writes."""
import base64
import re
import time

import pytest

from tui_tmux import BLOCKS, start_in_script, written

CHART = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
         "plt.bar(['north', 'south', 'east', 'west'], [3, 5, 9, 4], color='tab:blue')\n"
         "plt.title('revenue by region')\n"
         "plt.savefig('/workspace/out/bars.png')")
LONG = "for i in range(40):\n    print('row', i)"
ONE = {"turns": [{"openai": {"tool_calls": [{"id": "c1", "code": CHART}]}},
                 {"openai": {"text": "East is largest."}}]}
TWO = {"turns": [{"openai": {"tool_calls": [{"id": "c1", "code": CHART}]}},
                 {"openai": {"tool_calls": [{"id": "c2", "code": LONG}]}},
                 {"openai": {"text": "East is largest."}}]}
PNG64 = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()[:10].encode()
PH = "\U0010EEEE"
# kitty's rowcolumn diacritics (its rowcolumn-diacritics.txt): row/column i
DIA = [0x0305, 0x030D, 0x030E, 0x0310, 0x0312, 0x033D, 0x033E, 0x033F,
       0x0346, 0x034A, 0x034B, 0x034C, 0x0350, 0x0351, 0x0352, 0x0357,
       0x035B, 0x0363, 0x0364, 0x0365, 0x0366, 0x0367, 0x0368, 0x0369,
       0x036A, 0x036B, 0x036C, 0x036D, 0x036E, 0x036F, 0x0483, 0x0484,
       0x0485, 0x0486, 0x0487, 0x0592, 0x0593, 0x0594, 0x0595, 0x0597,
       0x0598, 0x0599, 0x059C, 0x059D, 0x059E, 0x059F, 0x05A0, 0x05A1,
       0x05A8, 0x05A9, 0x05AB, 0x05AC, 0x05AF, 0x05C4, 0x0610, 0x0611,
       0x0612, 0x0613, 0x0614, 0x0615, 0x0616, 0x0617, 0x0657, 0x0658,
       0x0659, 0x065A, 0x065B, 0x065D, 0x065E, 0x06D6, 0x06D7, 0x06D8,
       0x06D9, 0x06DA, 0x06DB, 0x06DC, 0x06DF, 0x06E0, 0x06E1, 0x06E2,
       0x06E4, 0x06E7, 0x06E8, 0x06EB, 0x06EC, 0x0730, 0x0732, 0x0733,
       0x0735, 0x0736, 0x073A, 0x073D, 0x073F, 0x0740, 0x0741, 0x0743,
       0x0745, 0x0747, 0x0749, 0x074A]


@pytest.fixture
def run(fake_model, tmp_path, tmux, request):
    def start(script, env_extra, *args, width=100, height=30, keep_tmux=False,
              passthrough=False):
        t, log = start_in_script(tmux, fake_model, tmp_path, request, script, env_extra,
                                 args, width, height, keep_tmux, passthrough)
        if script is ONE:
            t.wait(r"▪ bars\.png")
        return t, log
    return start


def placeholder_rows(screen):
    """(screen row, row index, column indexes, colour) of each screen row
    holding kitty placeholders, from capture-pane -e."""
    out = []
    for y, line in enumerate(screen.splitlines()):
        if PH not in line:
            continue
        m = re.search(r"\x1b\[38;5;(\d+)m" + PH, line)
        cells = re.findall(PH + "(.)(.)", line)
        rows = {DIA.index(ord(r)) for r, _ in cells}
        assert len(rows) == 1, repr(line)
        out.append((y, rows.pop(), [DIA.index(ord(c)) for _, c in cells],
                    int(m.group(1)) if m else None))
    return out


def test_kitty_inline_chart_is_placeholders_of_one_transmitted_png(run):
    t, log = run(ONE, {}, "--images", "kitty")
    data = written(log, t, lambda d: re.search(rb"\x1b_Ga=T,U=1,.*?m=0;", d, re.S),
                   "the inline picture")
    t.wait_for(lambda x: len(placeholder_rows(t.screen(escapes=True))) >= 10)
    data = log.read_bytes()
    # the last sent (while the answer streamed, the pane was smaller)
    ms = list(re.finditer(rb"\x1b_Ga=T,U=1,f=100,q=2,i=(\d+),c=(\d+),r=(\d+),m=1;"
                          rb"([A-Za-z0-9+/=]+)\x1b\\", data))
    assert ms, data[-400:]
    m = ms[-1]
    pid, cols, rows = int(m.group(1)), int(m.group(2)), int(m.group(3))
    assert m.group(4).startswith(PNG64)
    s = t.screen(escapes=True)
    plain = t.screen()
    left = [l.split("│")[0] for l in plain.splitlines()]
    # the header stays, the picture is the chart's whole PNG over a box
    # big enough to read at 100x30 (it was 16x6 cells of blocks before)
    assert any(re.search(r"\[1\] .*model", l) for l in left), plain
    assert rows >= 10 and cols >= 2 * rows * 0.6, (cols, rows)
    ph = placeholder_rows(s)
    assert [r for _, r, _, _ in ph] == list(range(rows)), plain
    assert all(c == list(range(cols)) for _, _, c, _ in ph)
    assert all(col == pid for _, _, _, col in ph), ph
    # right under the file's line, in order
    y0 = next(i for i, l in enumerate(left) if "▪ bars.png" in l)
    assert [y for y, _, _, _ in ph] == list(range(y0 + 1, y0 + 1 + rows))
    assert not any(ch in BLOCKS for ch in "".join(left[y0:])), plain
    # leaving deletes the picture
    t.text("/quit")
    t.keys("Enter")
    written(log, t, lambda d: b"\x1b_Ga=d,d=I,i=%d,q=2\x1b\\" % pid in d, "the delete")


def test_kitty_placeholders_scroll_with_the_text_without_sending_again(run):
    t, log = run(TWO, {}, "--images", "kitty")
    t.keys("Tab")
    t.keys("Tab")          # input -> conversation -> cells
    t.keys("g")            # to the top: the chart's cell whole
    s = t.wait(r"▸\[1\] model")
    ph = placeholder_rows(t.screen(escapes=True))
    assert ph and ph[0][1] == 0, s
    top = ph[0][0]
    sent = len(re.findall(rb"\x1b_Ga=T,U=1,", log.read_bytes()))
    t.keys("C-d")          # half a page down: the chart's top scrolls off
    s2 = t.wait_for(lambda x: placeholder_rows(t.screen(escapes=True)) != ph)
    ph2 = placeholder_rows(t.screen(escapes=True))
    # the picture moved up with its text: its top is cut, not squeezed,
    # its rows in order from the pane's top
    assert ph2, s2
    assert ph2[0][1] > 0 and ph2[0][0] <= top, s2
    assert [r for _, r, _, _ in ph2] == list(range(ph2[0][1], ph2[0][1] + len(ph2)))
    assert ph2[-1][1] == ph[-1][1]
    data = log.read_bytes()
    assert len(re.findall(rb"\x1b_Ga=T,U=1,", data)) == sent, "not sent again"


def test_kitty_through_tmux_passthrough(run):
    t, log = run(ONE, {"KITTY_WINDOW_ID": "1"}, keep_tmux=True, passthrough=True)
    written(log, t, lambda d: b"\x1bPtmux;\x1b\x1b_Ga=T,U=1," in d, "the wrapped picture")
    assert placeholder_rows(t.screen(escapes=True))


def sixels(data):
    """Each sixel image written: (row, col, width, height, its pixels as
    rows of colour indexes, the palette)."""
    out = []
    for m in re.finditer(rb'\x1b7\x1b\[(\d+);(\d+)H\x1bP7;1;0q"1;1;(\d+);(\d+)(.*?)\x1b\\',
                         data, re.S):
        w, h = int(m.group(3)), int(m.group(4))
        body = m.group(5).decode()
        pal = {int(a): (int(r), int(g), int(b)) for a, r, g, b in
               re.findall(r"#(\d+);2;(\d+);(\d+);(\d+)", body)}
        body = re.sub(r"#(\d+);2;\d+;\d+;\d+", "", body)
        px = [[-1] * w for _ in range(h)]
        x = y = 0
        c = 0
        for tok in re.finditer(r"#(\d+)|!(\d+)(.)|([?-~])|(\$)|(-)", body):
            if tok.group(1):
                c = int(tok.group(1))
                continue
            if tok.group(5):
                x = 0
                continue
            if tok.group(6):
                x = 0
                y += 6
                continue
            n, ch = (int(tok.group(2)), tok.group(3)) if tok.group(2) else (1, tok.group(4))
            bits = ord(ch) - 63
            for _ in range(n):
                for k in range(6):
                    if bits >> k & 1 and y + k < h and x < w:
                        px[y + k][x] = c
                x += 1
        out.append((int(m.group(1)), int(m.group(2)), w, h, px, pal))
    return out


def bars(px, pal):
    """The blue bars: [(x0, x1, height in pixels)] left to right."""
    def blue(c):
        r, g, b = pal.get(c, (100, 100, 100))
        return b > 50 and r < 40
    w = len(px[0])
    hcol = [sum(blue(row[x]) for row in px) for x in range(w)]
    out, x = [], 0
    while x < w:
        if hcol[x] > 3:
            x0 = x
            while x < w and hcol[x] > 3:
                x += 1
            out.append((x0, x, max(hcol[x0:x])))
        x += 1
    return out


def test_sixel_inline_chart_shows_which_bar_is_largest_and_its_label(run):
    t, log = run(ONE, {}, "--images", "sixel")
    written(log, t, lambda d: len(sixels(d)) > 0, "a sixel")
    # The pane may still scroll as the answer lands; the chart is drawn
    # again where it moves to: compare the last one with the screen once
    # both agree, or fail on what was seen last.
    for _ in range(20):
        plain = t.screen()
        data = log.read_bytes()
        left = [l.split("│")[0] for l in plain.splitlines()]
        y0 = next(i for i, l in enumerate(left) if "▪ bars.png" in l)
        row, col, w, h, px, pal = sixels(data)[-1]
        if (row, col) == (y0 + 2, 5):
            break
        time.sleep(0.25)
    # at the row under the file's line, the pane's indent of 4
    assert (row, col) == (y0 + 2, 5), (row, col, plain)
    b = bars(px, pal)
    print("bars (x0, x1, height px):", b, "image", w, "x", h)
    assert len(b) == 4, b
    hs = [x[2] for x in b]
    assert hs.index(max(hs)) == 2          # east, the third, is largest
    # the heights keep their ratio 3:5:9:4 within a pixel or two each
    for v, want in zip(hs, (3, 5, 9, 4)):
        assert abs(v - hs[2] * want / 9) <= 2, hs
    # its label under it: below the axis and its tick, dark glyph
    # pixels tall enough to read (6 pixels or more)
    base = max(y for y in range(h) if any(
        pal.get(px[y][x], (99, 99, 99))[2] > 50 and pal[px[y][x]][0] < 40
        for x in range(b[2][0], b[2][1])))
    dark = [y for y in range(base + 2, h) if any(
        px[y][x] >= 0 and sum(pal.get(px[y][x], (99, 99, 99))) < 120
        for x in range(b[2][0], b[2][1]))]
    assert dark, "no label under the bar"
    runs, y = [], dark[0]
    for a, c in zip(dark, dark[1:] + [None]):
        if c != a + 1:
            runs.append(a - y + 1)
            y = c
    print("dark rows under the axis (the tick, the label):", runs)
    assert len(runs) >= 2 and runs[-1] >= 6, runs


def test_sixel_is_drawn_again_where_the_chart_moves_and_cut_at_the_pane(run):
    t, log = run(TWO, {}, "--images", "sixel")
    t.keys("Tab")
    t.keys("Tab")
    t.keys("g")
    t.wait(r"▸\[1\] model")
    before = written(log, t, lambda d: len(sixels(d)) > 0, "a sixel")
    n0 = len(sixels(before))
    row0, _, _, h0, _, _ = sixels(before)[-1]
    t.keys("C-d")          # half a page down: the chart's top scrolls off
    data = written(log, t, lambda d: len(sixels(d)) > n0, "the moved sixel")
    row1, _, w1, h1, _, _ = sixels(data)[-1]
    # drawn again from the pane's top, only the rows still on screen
    assert row1 < row0 and h1 < h0, (row0, h0, row1, h1)


def test_no_pixels_inline_when_nothing_is_declared(run):
    t, log = run(ONE, {})
    s = t.wait(r"[▘▝▀▖▌▞▛▗▚▐▜▄▙▟█]{3}")
    data = log.read_bytes()
    assert b"\x1b_G" not in data and b"\x1bP7;1;0q" not in data
    assert PH not in s
