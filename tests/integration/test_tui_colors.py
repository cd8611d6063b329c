"""Colours on 8- and 16-colour terminals and light backgrounds (issue 25,
item 5): every role stays visible against the background, and a light
background, answered to the OSC 11 query or chosen in the config, picks
the light theme. Against build/tui-harness and the real binary, in tmux;
capture-pane -e shows the SGR codes drawn."""
import os
import re
import shlex

import pytest

from tui_tmux import TERP, fake_core_env

BORDER = "─│┌┐└┘├┤┬┴"
SGR = re.compile(r"\x1b\[([0-9;]*)m")


def cell_colours(escaped):
    """(char, fg) for every character of a capture-pane -e screen; fg is
    a colour index, or None for the terminal's default."""
    out, fg = [], None
    for line in escaped.splitlines():
        pos = 0
        for m in list(SGR.finditer(line)) + [None]:
            end = m.start() if m else len(line)
            out.extend((c, fg) for c in line[pos:end])
            if m is None:
                break
            pos = m.end()
            ps = [int(p) if p else 0 for p in m.group(1).split(";")]
            i = 0
            while i < len(ps):
                p = ps[i]
                if p == 0 or p == 39:
                    fg = None
                elif 30 <= p <= 37:
                    fg = p - 30
                elif 90 <= p <= 97:
                    fg = p - 90 + 8
                elif p == 38 and i + 2 < len(ps) and ps[i + 1] == 5:
                    fg = ps[i + 2]
                    i += 2
                elif p in (48, 58) and i + 2 < len(ps):
                    i += 2
                i += 1
    return out


def border_colours(escaped):
    return {fg for c, fg in cell_colours(escaped) if c in BORDER}


@pytest.fixture
def harness(fake_core, tmux, tmp_path):
    """The harness in tmux; light=True first sets the pane's background
    to white in tmux, which then answers OSC 11 with it."""
    def start(term, light=False, **env):
        e = fake_core_env(tmp_path, "/dev/null")
        e["TERM"] = term
        e.update(env)
        cmd = shlex.quote(fake_core)
        if light:
            cmd = "sh -c %s" % shlex.quote(
                "tmux set -g window-style 'bg=#ffffff' && exec " + cmd)
        return tmux(cmd, e, tmp_path, ready=r"ready")
    return start


@pytest.mark.parametrize("term", ["screen", "linux"])
def test_borders_are_not_black_on_a_dark_8_colour_terminal(harness, term):
    t = harness(term)
    fgs = border_colours(t.screen(escapes=True))
    assert fgs, "no border drawn:\n" + t.screen()
    # the background is presumed black: black (0) borders would vanish
    assert 0 not in fgs and 8 not in fgs, fgs


@pytest.mark.parametrize("term", ["screen", "linux"])
def test_a_light_background_answered_to_osc_11_keeps_borders_visible(harness, term):
    t = harness(term, light=True)
    fgs = border_colours(t.screen(escapes=True))
    assert fgs, "no border drawn:\n" + t.screen()
    assert not fgs & {7, 15}, fgs       # not white on white
    assert fgs <= {0, None}, fgs


def test_a_light_background_answered_to_osc_11_picks_the_light_theme(harness):
    t = harness("tmux-256color", light=True)
    e = t.screen(escapes=True)
    # light.theme's pane.border is #a8a8a8 (248); default's bright-black
    fgs = border_colours(e)
    assert 248 in fgs and 8 not in fgs, fgs
    t2 = harness("tmux-256color")
    fgs = border_colours(t2.screen(escapes=True))
    assert 8 in fgs and 248 not in fgs, fgs


def test_a_chosen_background_wins_over_the_terminals_answer(harness):
    t = harness("tmux-256color", light=True, FAKE_BACKGROUND="dark")
    fgs = border_colours(t.screen(escapes=True))
    assert 8 in fgs and 248 not in fgs, fgs


def test_background_light_in_the_config_picks_the_light_theme(tmux, tmp_path):
    conf = tmp_path / "config" / "terp"
    conf.mkdir(parents=True)
    (conf / "config").write_text("background = light\n")
    env = {"TERM": "tmux-256color", "LANG": "C.UTF-8", "HOME": str(tmp_path),
           "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_STATE_HOME": str(tmp_path / "state"),
           "PATH": os.environ.get("PATH", "")}
    t = tmux("%s --provider demo" % TERP, env, tmp_path, ready=r"│ ready")
    fgs = border_colours(t.screen(escapes=True))
    assert 248 in fgs and 8 not in fgs, fgs


def test_a_bad_background_in_the_config_is_one_line(tmp_path):
    import subprocess
    conf = tmp_path / "config" / "terp"
    conf.mkdir(parents=True)
    (conf / "config").write_text("background = beige\n")
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "PATH": os.environ.get("PATH", "")}
    r = subprocess.run([TERP, "--provider", "demo", "-p", "hi"], env=env,
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert r.returncode == 2, r
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "terp: background in the config file is auto, dark or light, not 'beige'"), r.stderr
