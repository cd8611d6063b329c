"""tui_tmux: drives a program inside a private tmux server (its own -L
socket, so nothing else running tmux is touched) for the TUI tests, and
the setup those tests share: the fake-core harness, the environments and
command lines, and small readers of the screen. The fixtures built on
these (fake_core, tmux, fake_model) are in conftest.py."""
import os
import re
import shlex
import subprocess
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TERP = os.path.join(ROOT, "terp")
SALES = os.path.join(ROOT, "examples", "sales.csv")
# the TUI against a scripted fake core (tests/tui/fake_agent.c)
FAKE_CORE = os.path.join(ROOT, "build", "tui-harness")
# the quadrant block characters a thumbnail is drawn with
BLOCKS = "▘▝▀▖▌▞▛▗▚▐▜▄▙▟█"

# A cell that charts examples/sales.csv: the first tool call of the
# fake-model scripts of the real-binary TUI tests.
CHART_CODE = """import pandas as pd
import matplotlib.pyplot as plt
df = pd.read_csv("/workspace/data/sales.csv")
m = df.groupby("channel")["revenue"].sum()
print(m.round(0).to_string())
m.plot(kind="bar", color=["tab:blue", "tab:orange", "tab:green"])
plt.title("revenue by channel")
plt.savefig("/workspace/out/revenue.png", dpi=80)
len(df)"""


def build_fake_core():
    """Builds FAKE_CORE (tests/tui/build.sh) and returns its path."""
    subprocess.run([os.path.join(ROOT, "tests", "tui", "build.sh")], check=True,
                   capture_output=True, stdin=subprocess.DEVNULL)
    return FAKE_CORE


def fake_core_env(tmp_path, png):
    """The fake core's environment in tmp_path: FAKE_PNG is the chart its
    scripted cell "saves"; no display, so no clipboard tool is found."""
    return {"FAKE_PNG": png, "FAKE_HISTORY": str(tmp_path / "history"),
            "TERM": "tmux-256color", "XDG_STATE_HOME": str(tmp_path / "state"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path),
            "LANG": "C.UTF-8", "DISPLAY": "", "WAYLAND_DISPLAY": ""}


def model_env(tmp_path):
    """The real binary's environment in tmp_path, with a key for the fake
    model (tests/fake_model.py)."""
    return {"TERM": "tmux-256color", "LANG": "C.UTF-8",
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "HOME": str(tmp_path), "OPENAI_API_KEY": "test-key"}


def model_args(port, out):
    """terp's options that talk to the fake model on port and write
    artifacts to out."""
    return ["--provider", "openai", "--model", "fake-model", "--base-url",
            "http://127.0.0.1:%d/v1" % port, "--out", str(out)]


def ask(t, line):
    """Types line on the input line and presses Enter."""
    t.text(line)
    t.keys("Enter")


def words(text):
    """A regex for text wherever the pane wraps it."""
    return r"\s+".join(re.escape(w) for w in text.split())


def status(s):
    """The status bar: the row above the one-row input line."""
    return s.splitlines()[-2]


class Tmux:
    def __init__(self, cmd, width=100, height=30, env=None, cwd=None):
        self.sock = "terp-test-" + uuid.uuid4().hex[:8]
        self.cwd = cwd
        envs = " ".join("%s=%s" % (k, shlex.quote(v)) for k, v in (env or {}).items())
        # the shell line reports the exit status and the tty modes after exit
        line = ("env %s %s; echo EXITED rc=$?; stty -a | tr '\\n' ' '; echo; sleep 600"
                % (envs, cmd))
        self.tmux("new-session", "-d", "-s", "t", "-x", str(width), "-y",
                  str(height), line)

    def tmux(self, *args, check=True):
        return subprocess.run(["tmux", "-L", self.sock, "-f", "/dev/null"] + list(args),
                              cwd=self.cwd, check=check, capture_output=True,
                              text=True).stdout

    def keys(self, *keys):
        self.tmux("send-keys", "-t", "t", *keys)

    def text(self, s):
        self.tmux("send-keys", "-t", "t", "-l", s)

    def screen(self, escapes=False):
        args = ["capture-pane", "-p", "-t", "t"]
        if escapes:
            args.append("-e")
        return self.tmux(*args)

    # The timeouts are safety nets (a screen that never comes fails the
    # test); the tests wait for what they expect to see, never for time.
    def wait(self, pattern, timeout=60.0, escapes=False):
        """Waits until the screen matches the regex; returns the screen."""
        end = time.monotonic() + timeout
        rx = re.compile(pattern, re.S)
        while True:
            s = self.screen(escapes)
            if rx.search(s):
                return s
            if time.monotonic() > end:
                raise AssertionError("screen never matched %r:\n%s" % (pattern, s))
            time.sleep(0.05)

    def wait_for(self, pred, timeout=60.0):
        """Waits until pred(screen) is true; returns the screen."""
        end = time.monotonic() + timeout
        while True:
            s = self.screen()
            if pred(s):
                return s
            if time.monotonic() > end:
                raise AssertionError("screen never satisfied the test:\n%s" % s)
            time.sleep(0.05)

    def resize(self, w, h):
        self.tmux("resize-window", "-t", "t", "-x", str(w), "-y", str(h))

    def pid(self):
        return int(self.tmux("display", "-p", "-t", "t", "#{pane_pid}").strip())

    def close(self):
        self.tmux("kill-server", check=False)


def stop_script(log):
    """script(1) outlives tmux's kill-server (it holds terp's pty): stop
    it, which hangs terp up, and wait until both are gone."""
    import signal
    from conftest import children, command_lines, pids_gone
    mine = [p for p, cmd in command_lines() if cmd.startswith("script ") and str(log) in cmd]
    kids = [k for p in mine for k in children(p)]
    for p in mine:
        try:
            os.kill(int(p), signal.SIGTERM)
        except OSError:
            pass
    assert pids_gone(mine + kids), "script(1) or terp did not exit: %s" % (mine + kids)


def start_in_script(tmux, fake_model, tmp_path, request, script, env_extra, args,
                    width=100, height=30, keep_tmux=False, passthrough=False):
    """terp on SALES against the fake model playing script, inside
    script(1) so that every byte it writes lands in tty.log; the question
    of the image tests asked and answered ("East is largest"). keep_tmux
    leaves $TMUX set (terp then wraps its images for tmux); passthrough
    lets tmux pass them on. Returns (tmux, log); script(1) is stopped at
    the test's end."""
    port = fake_model(script)
    env = dict(model_env(tmp_path), PATH="/usr/bin:/bin", **env_extra)
    terp = " ".join([TERP, *model_args(port, tmp_path / "out"), *args, SALES])
    log = tmp_path / "tty.log"
    request.addfinalizer(lambda: stop_script(log))
    line = "script -qfc %s %s" % (shlex.quote(terp), shlex.quote(str(log)))
    if not keep_tmux:
        line = "env -u TMUX " + line
    if passthrough:
        line = "sh -c " + shlex.quote("tmux set -g allow-passthrough on; " + line)
    t = tmux(line, env, tmp_path, width, height, ready=r"│ ready", timeout=30)
    t.text("Plot the regions")
    t.keys("Enter")
    t.wait(r"East is largest", timeout=90)
    return t, log


def written(log, t, pred, what):
    """The bytes terp wrote (tty.log) once pred(bytes) holds (within
    30 s)."""
    end = time.monotonic() + 30
    while True:
        data = log.read_bytes()
        if pred(data):
            return data
        if time.monotonic() > end:
            break
        time.sleep(0.05)
    raise AssertionError("%s never written; the screen:\n%s" % (what, t.screen()))
