"""Issue 24, real pixels: the full-pane preview of a chart goes out in
the graphics protocol the terminal declares (kitty's APC, iTerm2's OSC
1337, sixel), through tmux's passthrough when allowed, and falls back to
block characters. terp runs under script(1) inside tmux, which records
every byte it writes to the terminal."""
import base64
import re

import pytest

from tui_tmux import BLOCKS, TERP, start_in_script, written

CHART = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
         "plt.bar(['north', 'south', 'east', 'west'], [3, 5, 9, 4])\n"
         "plt.savefig('/workspace/out/bars.png')")
SCRIPT = {"turns": [{"openai": {"tool_calls": [{"id": "c1", "code": CHART}]}},
                    {"openai": {"text": "East is largest."}}]}
PNG64 = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()[:10]


@pytest.fixture
def run(fake_model, tmp_path, tmux, request):
    def start(env_extra, *args, keep_tmux=False, passthrough=False):
        t, log = start_in_script(tmux, fake_model, tmp_path, request, SCRIPT, env_extra,
                                 args, keep_tmux=keep_tmux, passthrough=passthrough)
        t.keys("Tab")
        t.keys("Tab")
        t.keys("Tab")          # input -> conversation -> cells -> files
        t.wait(r"─ files 1")
        t.keys("Enter")
        t.wait(r"bars\.png  \(")
        return t, log
    return start


def output(log, needle, t):
    """The bytes terp wrote once needle is among them."""
    return written(log, t, lambda d: needle in d, repr(needle))


def test_kitty_gets_the_png_in_chunked_apc_and_a_delete_on_close(run):
    t, log = run({"KITTY_WINDOW_ID": "1"})
    data = output(log, b"\x1b_Gm=0;", t)
    first = re.search(rb"\x1b_Ga=T,f=100,q=2,C=1,c=(\d+),r=(\d+),m=1;([A-Za-z0-9+/=]+)\x1b\\", data)
    assert first, data[-400:]
    assert first.group(3).startswith(PNG64.encode())
    assert len(first.group(3)) == 4096
    assert int(first.group(1)) <= 98 and int(first.group(2)) <= 26
    # then chunks with m=1, the last m=0
    assert re.search(rb"\x1b_Gm=0;[A-Za-z0-9+/=]+\x1b\\", data), data[-400:]
    # the cursor is saved and restored around it
    assert b"\x1b7\x1b[2;2H\x1b_Ga=T" in data
    s = t.screen()
    assert not any(ch in BLOCKS for ch in "".join(s.splitlines()[1:-3])), s
    t.keys("q")
    output(log, b"\x1b_Ga=d,d=a,q=2\x1b\\", t)


def test_iterm_gets_an_osc_1337_inline_file(run):
    t, log = run({"TERM_PROGRAM": "iTerm.app"})
    data = output(log, b"\x1b]1337;File=", t)
    m = re.search(rb"\x1b\]1337;File=inline=1;size=(\d+);width=(\d+);height=(\d+);"
                  rb"preserveAspectRatio=1:([A-Za-z0-9+/=]+)\x07", data)
    assert m, data[-300:]
    assert m.group(4).startswith(PNG64.encode())
    assert len(base64.b64decode(m.group(4))) == int(m.group(1))


def test_sixel_when_forced(run):
    t, log = run({}, "--images", "sixel")
    data = output(log, b"-\x1b\\\x1b8", t)     # the last band, ST, the cursor back
    m = re.search(rb'\x1bP7;1;0q"1;1;(\d+);(\d+)((?:#\d+;2;\d+;\d+;\d+)+)(.*?)\x1b\\', data, re.S)
    assert m, data[-300:]
    w, h = int(m.group(1)), int(m.group(2))
    # 10x20-pixel cells when the terminal does not say: within 98x26
    assert 0 < w <= 980 and 0 < h <= 520
    # bands of six rows: one '-' per band
    assert m.group(4).count(b"-") == (h + 5) // 6


def test_inside_tmux_kitty_goes_through_passthrough_when_allowed(run):
    t, log = run({"KITTY_WINDOW_ID": "1"}, keep_tmux=True, passthrough=True)
    data = output(log, b"\x1bPtmux;", t)
    # every ESC inside doubled
    assert b"\x1bPtmux;\x1b\x1b_Ga=T,f=100" in data, data[-300:]


def test_inside_tmux_without_passthrough_it_is_blocks(run):
    t, log = run({"KITTY_WINDOW_ID": "1"}, keep_tmux=True)
    s = t.wait(r"[▘▝▀▖▌▞▛▗▚▐▜▄▙▟█]{3}")
    data = log.read_bytes()
    assert b"\x1b_G" not in data and b"Ptmux;" not in data
    assert "bars.png" in s


def test_images_off_shows_no_picture_and_a_bad_mode_is_one_line(run, tmp_path):
    t, log = run({"KITTY_WINDOW_ID": "1"}, "--images", "off")
    s = t.wait(r"pictures are off \(--images off\)")
    assert not any(ch in BLOCKS for ch in s), s
    assert b"\x1b_G" not in log.read_bytes()
    import subprocess
    r = subprocess.run([TERP, "--images", "pixels"], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr == ("terp: --images: 'pixels' is not one of auto, kitty, iterm, "
                        "sixel, blocks, off\n")
