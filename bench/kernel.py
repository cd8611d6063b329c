#!/usr/bin/python3
"""bench/kernel.py: terp's sandbox session against a Jupyter kernel
(ipykernel through jupyter_client), measured side by side in one run.

  cold start   terp: launch of `terp exec --json -c 'print(1)'` to its first
               result line, and to its exit; plus the session event to the
               first result (inside terp: sandbox + driver + the cell).
               Jupyter: KernelManager.start_kernel() to the first
               execute_reply of print(1) (kernel_info wait included).
  round trip   `x += 1` many times in one session. terp: the result event's
               duration_us (host clock, from the command written to the
               result frame read) and the inter-arrival of result lines
               seen by this script; Jupyter: client.execute() to its
               execute_reply on the shell channel (iopub not awaited, which
               favours Jupyter).
  scan         the driver's scan of /workspace/out after every cell, timed
               inside the sandbox with 0 and 60 files present.

Usage: /usr/bin/python3 bench/kernel.py [--runs N] [--iters N] [--json FILE]
Needs ./terp built (make). Uses private state/output folders in a temp dir.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TERP = os.environ.get("TERP_BIN", os.path.join(ROOT, "terp"))

COLD_TARGET_MS = 100.0
RT_TARGET_US = 500.0


def pct(xs, p):
    s = sorted(xs)
    if not s:
        return float("nan")
    k = min(len(s) - 1, max(0, int(round(p / 100.0 * (len(s) - 1)))))
    return s[k]


def med(xs):
    return statistics.median(xs) if xs else float("nan")


class Env:
    """Private XDG folders and output folder; no API keys."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="terp-bench-")
        # Traversable, so that terp keeps the sandbox's folders in here
        # (not under /var/lib/terp, as it does for a 0700 folder as root).
        os.chmod(self.dir, 0o755)
        self.env = {k: v for k, v in os.environ.items()
                    if not k.endswith("_API_KEY")}
        self.env["XDG_STATE_HOME"] = os.path.join(self.dir, "state")
        self.env["XDG_CONFIG_HOME"] = os.path.join(self.dir, "config")
        self.env["IPYTHONDIR"] = os.path.join(self.dir, "ipython")
        self.env["JUPYTER_RUNTIME_DIR"] = os.path.join(self.dir, "jrt")
        self.env["JUPYTER_DATA_DIR"] = os.path.join(self.dir, "jdata")
        self.out = os.path.join(self.dir, "out")

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def run_terp(env, cells, extra_env=None):
    """Runs terp exec --json over cells; returns (events, t_launch, t_exit)
    where every event carries "_t", its arrival time (perf_counter)."""
    # The sandbox runs the Python make gave pandas and numpy (deps.sh),
    # whatever python3 on PATH is: the one the peer's kernel runs in.
    args = [TERP, "exec", "--json", "--python", "/usr/bin/python3", "--out", env.out]
    for c in cells:
        args += ["-c", c]
    e = dict(env.env)
    if extra_env:
        e.update(extra_env)
    events = []
    pending = b""
    t0 = time.perf_counter()
    p = subprocess.Popen(args, stdout=subprocess.PIPE, env=e, cwd=env.dir, bufsize=0)
    fd = p.stdout.fileno()
    while True:
        data = os.read(fd, 1 << 16)
        t = time.perf_counter()
        if not data:
            break
        pending += data
        *lines, pending = pending.split(b"\n")
        for line in lines:
            ev = json.loads(line)
            ev["_t"] = t
            events.append(ev)
    rc = p.wait()
    t1 = time.perf_counter()
    if rc != 0:
        raise RuntimeError("terp exec exited %d: %s" % (rc, events[-3:]))
    return events, t0, t1


# ------------------------------------------------------------ cold start

def terp_cold(env, runs, extra_env=None):
    first, exit_, inside = [], [], []
    for _ in range(runs):
        evs, t0, t1 = run_terp(env, ["print(1)"], extra_env)
        sess = next(e for e in evs if e["type"] == "session")
        res = next(e for e in evs if e["type"] == "result")
        assert res["status"] == "ok", res
        out = "".join(e["text"] for e in evs if e["type"] == "stdout")
        assert out == "1\n", out
        first.append((res["_t"] - t0) * 1e3)
        exit_.append((t1 - t0) * 1e3)
        inside.append((res["_t"] - sess["_t"]) * 1e3)
    return {"first_ms": med(first), "exit_ms": med(exit_), "inside_ms": med(inside),
            "first_p90_ms": pct(first, 90), "exit_p90_ms": pct(exit_, 90)}


def jupyter_wait_reply(kc, msg_id, timeout=60):
    while True:
        m = kc.get_shell_msg(timeout=timeout)
        if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "execute_reply":
            return m


def jupyter_cold(env, runs):
    from jupyter_client.manager import KernelManager
    jupyter_env(env)
    first, stop = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        km = KernelManager(kernel_name="python3")
        km.start_kernel(cwd=env.dir)
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=60)
        r = jupyter_wait_reply(kc, kc.execute("print(1)"))
        t1 = time.perf_counter()
        assert r["content"]["status"] == "ok", r
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        t2 = time.perf_counter()
        first.append((t1 - t0) * 1e3)
        stop.append((t2 - t1) * 1e3)
    return {"first_ms": med(first), "first_p90_ms": pct(first, 90), "shutdown_ms": med(stop)}


# ------------------------------------------------------------ round trip

# The first cell waits for the preload thread (an import of a module being
# imported blocks on its lock), so the loop measures the steady state.
WARM = "import numpy, pandas, matplotlib.pyplot\nx = 0"


def terp_roundtrip(env, iters, setup=None):
    cells = [WARM] + ([setup] if setup else []) + ["x += 1"] * iters + ["x"]
    evs, _, _ = run_terp(env, cells)
    res = [e for e in evs if e["type"] == "result"]
    assert all(r["status"] == "ok" for r in res), [r for r in res if r["status"] != "ok"][:1]
    assert res[-1]["value"] == str(iters), res[-1]
    loop = res[len(cells) - iters - 1:-1]
    assert len(loop) == iters
    us = [r["duration_us"] for r in loop]
    gaps = [(b["_t"] - a["_t"]) * 1e6 for a, b in zip(loop, loop[1:])]
    return {"median_us": med(us), "p99_us": pct(us, 99), "mean_us": statistics.fmean(us),
            "gap_median_us": med(gaps), "gap_p99_us": pct(gaps, 99)}


SCAN_CELL = r"""
import sys, time
_m = sys.modules["__main__"]
def _t(n=2000):
    xs = []
    for _ in range(n):
        t = time.perf_counter_ns()
        _m._close_all(_m._scan_out()[1])
        xs.append(time.perf_counter_ns() - t)
    xs.sort()
    return xs[len(xs) // 2] / 1000.0
empty = _t()
import os
for i in range(60):
    with open("/workspace/out/f%02d.txt" % i, "w") as f:
        f.write("x")
_m._close_all(_m._scan_out()[1])
full = _t()
for i in range(60, 1000):
    with open("/workspace/out/f%02d.txt" % i, "w") as f:
        f.write("x")
_m._close_all(_m._scan_out()[1])
many = _t(200)
for i in range(1000):
    os.unlink("/workspace/out/f%02d.txt" % i)
_m._close_all(_m._scan_out()[1])
print("%.1f %.1f %.1f" % (empty, full, many))
"""


def terp_scan(env):
    """The driver's out/ scan, timed inside the sandbox (median us)."""
    evs, _, _ = run_terp(env, [SCAN_CELL])
    res = next(e for e in evs if e["type"] == "result")
    assert res["status"] == "ok", res
    text = "".join(e["text"] for e in evs if e["type"] == "stdout")
    empty, full, many = (float(v) for v in text.split())
    return {"empty_us": empty, "files60_us": full, "files1000_us": many}


def jupyter_env(env):
    os.environ.update({k: env.env[k] for k in
                       ("IPYTHONDIR", "JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR")})
    os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"


def exec_content(code):
    return {"code": code, "silent": False, "store_history": True,
            "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}


def jupyter_roundtrip(env, iters):
    """Two clients of one kernel: jupyter_client's BlockingKernelClient
    (what a script would use), and a bare zmq socket speaking the same
    messages through jupyter_client.session (the least client overhead:
    what the kernel itself costs)."""
    from queue import Empty
    from jupyter_client.manager import KernelManager
    jupyter_env(env)
    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=env.dir)
    kc = km.client()
    kc.start_channels()
    shell = None
    try:
        kc.wait_for_ready(timeout=60)
        jupyter_wait_reply(kc, kc.execute("x = 0"))
        us = []
        for _ in range(iters):
            t = time.perf_counter()
            r = jupyter_wait_reply(kc, kc.execute("x += 1"))
            us.append((time.perf_counter() - t) * 1e6)
            assert r["content"]["status"] == "ok", r
            # iopub traffic is drained outside the timed part.
            try:
                while True:
                    kc.get_iopub_msg(timeout=0)
            except Empty:
                pass
        r = jupyter_wait_reply(kc, kc.execute("assert x == %d" % iters))
        assert r["content"]["status"] == "ok", r

        shell = km.connect_shell()
        sess = km.session
        raw = []
        for _ in range(iters):
            t = time.perf_counter()
            sent = sess.send(shell, "execute_request", exec_content("x += 1"))
            while True:
                _, m = sess.recv(shell, mode=0)
                if m["parent_header"].get("msg_id") == sent["header"]["msg_id"]:
                    break
            raw.append((time.perf_counter() - t) * 1e6)
            assert m["content"]["status"] == "ok", m
        r = jupyter_wait_reply(kc, kc.execute("assert x == %d" % (2 * iters)))
        assert r["content"]["status"] == "ok", r
    finally:
        if shell is not None:
            shell.close(linger=0)
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return {"median_us": med(us), "p99_us": pct(us, 99), "mean_us": statistics.fmean(us),
            "raw_median_us": med(raw), "raw_p99_us": pct(raw, 99)}


# ------------------------------------------------------------ report

def verdict(ok):
    return "ok" if ok else "MISS"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=20, help="cold starts of terp (20)")
    ap.add_argument("--jruns", type=int, default=5, help="cold starts of Jupyter (5)")
    ap.add_argument("--iters", type=int, default=2000, help="round-trip cells (2000)")
    ap.add_argument("--json", help="also write the figures as JSON to this file")
    a = ap.parse_args()
    if not os.access(TERP, os.X_OK):
        sys.exit("kernel.py: build terp first (make)")
    env = Env()
    try:
        run_terp(env, ["1"])  # warm the page cache for both sides alike
        tc = terp_cold(env, a.runs)
        tcn = terp_cold(env, a.runs, {"TERP_NO_PRELOAD": "1"})
        jc = jupyter_cold(env, a.jruns)
        tr = terp_roundtrip(env, a.iters)
        trf = terp_roundtrip(env, a.iters, setup=(
            "import os\nfor i in range(60): open('/workspace/out/f%02d.txt' % i, 'w').close()"))
        ts = terp_scan(env)
        jr = jupyter_roundtrip(env, a.iters)
    finally:
        env.close()

    cold_x = jc["first_ms"] / tc["first_ms"]
    # Against the faster of the two Jupyter clients: the conservative ratio.
    j_best = min(jr["median_us"], jr["raw_median_us"])
    rt_x = j_best / tr["median_us"]
    print("kernel: cold start (median; terp %d runs, Jupyter %d runs)" % (a.runs, a.jruns))
    print("  %-44s %9s %9s" % ("", "median", "p90"))
    print("  %-44s %7.1f ms %6.1f ms" % ("terp exec: launch -> first result", tc["first_ms"], tc["first_p90_ms"]))
    print("  %-44s %7.1f ms %6.1f ms" % ("terp exec: launch -> exit", tc["exit_ms"], tc["exit_p90_ms"]))
    print("  %-44s %7.1f ms" % ("terp: session event -> first result", tc["inside_ms"]))
    print("  %-44s %7.1f ms" % ("terp, TERP_NO_PRELOAD=1: launch -> result", tcn["first_ms"]))
    print("  %-44s %7.1f ms %6.1f ms" % ("Jupyter: start_kernel -> first reply", jc["first_ms"], jc["first_p90_ms"]))
    print("  %-44s %7.1f ms" % ("Jupyter: shutdown_kernel", jc["shutdown_ms"]))
    print("kernel: round trip of `x += 1` (%d cells, one session)" % a.iters)
    print("  %-44s %9s %9s" % ("", "median", "p99"))
    print("  %-44s %6.0f us %6.0f us" % ("terp (duration_us, host clock)", tr["median_us"], tr["p99_us"]))
    print("  %-44s %6.0f us %6.0f us" % ("terp (result inter-arrival, this script)", tr["gap_median_us"], tr["gap_p99_us"]))
    print("  %-44s %6.0f us %6.0f us" % ("terp, 60 files in out/", trf["median_us"], trf["p99_us"]))
    print("  %-44s %6.0f us %6.0f us" % ("Jupyter, BlockingKernelClient", jr["median_us"], jr["p99_us"]))
    print("  %-44s %6.0f us %6.0f us" % ("Jupyter, bare zmq shell socket", jr["raw_median_us"], jr["raw_p99_us"]))
    print("  driver's out/ scan per cell: %.1f us empty, %.0f us with 60 files, %.0f us with 1000"
          % (ts["empty_us"], ts["files60_us"], ts["files1000_us"]))
    print("targets: cold start %.1f ms <= %.0f ms: %s; %.1fx Jupyter >= 10x: %s"
          % (tc["first_ms"], COLD_TARGET_MS, verdict(tc["first_ms"] <= COLD_TARGET_MS),
             cold_x, verdict(cold_x >= 10)))
    print("         round trip %.0f us <= %.0f us: %s; %.1fx Jupyter >= 10x: %s"
          % (tr["median_us"], RT_TARGET_US, verdict(tr["median_us"] <= RT_TARGET_US),
             rt_x, verdict(rt_x >= 10)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"terp_cold": tc, "terp_cold_nopreload": tcn, "jupyter_cold": jc,
                       "terp_rt": tr, "terp_rt_files": trf, "terp_scan": ts,
                       "jupyter_rt": jr, "cold_x": cold_x, "rt_x": rt_x}, f, indent=1)


if __name__ == "__main__":
    main()
