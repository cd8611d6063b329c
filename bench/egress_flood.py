#!/usr/bin/python3
"""bench/egress_flood.py: does a flood of refused egress attempts freeze
the notebook? (issue 22 item 3). The real terp binary in tmux, a fake
model (tests/fake_model.py) whose one tool call is a cell that asks the
egress proxy for ATTEMPTS distinct hosts, none allowed, one connection
each (through the in-sandbox forwarder, as any library would); a host
is allowed (--allow-host) only so that the proxy runs.

While the cell runs, a letter is typed on the input line every PERIOD
seconds and the time until it shows in the pane (tmux capture-pane,
polled) is its keypress latency; then it is erased. The same is measured
before the question, with terp idle, as the floor (tmux and capture-pane
cost a few ms per look). Prints the figures; asserts nothing.

Usage: /usr/bin/python3 bench/egress_flood.py [--attempts N] [--json FILE]
       TERP_BIN=/path/to/terp to measure another build.
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from fake_model import FakeModel  # noqa: E402
from tui_tmux import Tmux, model_args, model_env  # noqa: E402

TERP = os.environ.get("TERP_BIN", os.path.join(ROOT, "terp"))
LETTERS = "qzjxkvwy"

CODE = r'''import os, socket, time
t0 = time.time()
host, port = os.environ["HTTPS_PROXY"].rsplit("/", 1)[1].split(":")
refused = 0
for i in range(N):
    s = socket.create_connection((host, int(port)))
    s.sendall(b"CONNECT h%d.flood.invalid:443 HTTP/1.1\r\n\r\n" % i)
    refused += s.recv(4096).startswith(b"HTTP/1.1 403")
    s.close()
    if i % 1000 == 999:
        print("attempts", i + 1, flush=True)
print("flood over:", refused, "refused in", round(time.time() - t0, 1), "s")
'''


def pct(xs, p):
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))] if s else float("nan")


def input_line(t):
    return t.screen().rstrip("\n").splitlines()[-1]


def one_key(t, letter, timeout):
    """Types letter; seconds until the input line shows it (None: never
    within timeout); then erases it and waits for that too."""
    before = input_line(t).count(letter)
    t0 = time.monotonic()
    t.text(letter)
    took = None
    while time.monotonic() - t0 < timeout:
        if input_line(t).count(letter) > before:
            took = time.monotonic() - t0
            break
        time.sleep(0.002)
    t.keys("BSpace")
    end = time.monotonic() + timeout
    while time.monotonic() < end and input_line(t).count(letter) > before:
        time.sleep(0.005)
    return took


def series(t, until, period, timeout):
    lat, lost, i = [], 0, 0
    while not until():
        took = one_key(t, LETTERS[i % len(LETTERS)], timeout)
        i += 1
        if took is None:
            lost += 1
        else:
            lat.append(took * 1000.0)
        time.sleep(period)
    return lat, lost


def show(name, lat, lost):
    if not lat:
        print("%-8s no key shown (%d lost)" % (name, lost))
        return {}
    row = {"keys": len(lat), "lost": lost, "median_ms": statistics.median(lat),
           "p90_ms": pct(lat, 90), "max_ms": max(lat)}
    print("%-8s %4d keys  median %7.1f ms  p90 %7.1f ms  max %7.1f ms  not shown within "
          "the timeout: %d" % (name, row["keys"], row["median_ms"], row["p90_ms"],
                               row["max_ms"], lost))
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attempts", type=int, default=20000)
    ap.add_argument("--period", type=float, default=0.1, help="seconds between keys")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds a key may take")
    ap.add_argument("--json")
    a = ap.parse_args()
    if shutil.which("tmux") is None:
        sys.exit("bench/egress_flood.py: tmux is needed")
    tmp = tempfile.mkdtemp(prefix="terp-flood-")
    os.chmod(tmp, 0o755)  # see kernel.py: the sandbox folders stay in here
    code = CODE.replace("range(N)", "range(%d)" % a.attempts)
    script = {"turns": [
        {"openai": {"tool_calls": [{"id": "call_1", "name": "python_exec", "code": code}]}},
        {"openai": {"text": "The flood is over."}, "repeat": True}]}
    srv = FakeModel(script, os.path.join(tmp, "log.jsonl"))
    port = srv.start()
    cmd = " ".join([TERP, *model_args(port, os.path.join(tmp, "out")),
                    "--allow-host", "allowed.flood.invalid", "--no-save"])
    t = Tmux(cmd, 100, 40, model_env(pathlib.Path(tmp)), cwd=tmp)
    res = {"attempts": a.attempts, "terp": TERP}
    try:
        t.wait(r"│ ready", timeout=60)
        looks = []
        for _ in range(20):
            t1 = time.monotonic()
            input_line(t)
            looks.append((time.monotonic() - t1) * 1000.0)
        res["look_ms"] = statistics.median(looks)
        print("one look at the pane (tmux capture-pane): median %.1f ms" % res["look_ms"])
        t_idle = time.monotonic()
        lat, lost = series(t, lambda: time.monotonic() - t_idle > 3, a.period, a.timeout)
        res["idle"] = show("idle", lat, lost)
        t.text("Flood the proxy")
        t.keys("Enter")
        t.wait(r"attempts \d+|flood over: \d+", timeout=120)
        t0 = time.monotonic()

        def over():
            s = t.screen()
            return (re.search(r"flood over: \d+", s) is not None or
                    "The flood is over." in s or time.monotonic() - t0 > 600)
        lat, lost = series(t, over, a.period, a.timeout)
        res["flood"] = show("flood", lat, lost)
        try:
            t.wait(r"flood over: \d+|The flood is over\.", 120)
        except AssertionError:
            pass
        m = re.search(r"flood over: (\d+) refused in ([0-9.]+) s", t.screen())
        if m:
            res["refused"], res["cell_s"] = int(m.group(1)), float(m.group(2))
            print("the cell: %d refused attempts in %.1f s (%.0f per s)" %
                  (res["refused"], res["cell_s"], res["refused"] / max(res["cell_s"], 0.1)))
        try:
            t.wait(r"The flood is over\.", timeout=120)
        except AssertionError:
            print("the answer never showed")
        t_after = time.monotonic()
        lat, lost = series(t, lambda: time.monotonic() - t_after > 3, a.period, a.timeout)
        res["after"] = show("after", lat, lost)
        print(t.screen())
    finally:
        t.close()
        srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
