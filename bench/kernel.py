#!/usr/bin/python3
"""bench/kernel.py: terp's sandbox session against the floor the machine
allows and against a Jupyter kernel (ipykernel through jupyter_client),
measured side by side in one run.

  cold start   terp: launch of `terp exec --json -c 'print(1)'` to its first
               result line, and to its exit; plus the session event to the
               first result (inside terp: sandbox + driver + the cell).
               The floor, interleaved run by run with terp: bare bubblewrap
               + `/usr/bin/python3 -I -c 'print(1)'` with terp's namespaces,
               binds and environment, run as an unprivileged uid when we
               are root (as terp's sandbox is). Wall time, and CPU: wait4's
               (what the process reaped) and the whole tree's (a cgroup).
               Jupyter: KernelManager.start_kernel() to the first
               execute_reply of print(1) (kernel_info wait included).
  round trip   `x += 1` many times in one session. terp: the result event's
               duration_us (host clock, from the command written to the
               result frame read) and the inter-arrival of result lines
               seen by this script; the floor: a pipe to a Python process
               that exec()s length-prefixed code and answers one byte;
               Jupyter: client.execute() to its execute_reply on the shell
               channel (iopub not awaited, which favours Jupyter).
  scan         the driver's scan of /workspace/out after every cell, timed
               inside the sandbox with 0 and 60 files present.

Usage: /usr/bin/python3 bench/kernel.py [--runs N] [--jruns N] [--iters N] [--json FILE]
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

# Targets (issue 14), as ratios measured in the same run.
COLD_RATIO = 1.5    # terp exec launch -> exit, against the floor
RT_RATIO = 0.1      # round trip, against Jupyter


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
        # The floor's workspace and data folder (bwrap binds them as an
        # unprivileged uid: they must let it through).
        self.floor_ws = os.path.join(self.dir, "floor-ws")
        self.floor_data = os.path.join(self.dir, "floor-data")
        for d in (self.floor_ws, self.floor_data):
            os.mkdir(d)
            os.chmod(d, 0o755)
        os.makedirs(os.path.join(self.floor_ws, "data"))
        if os.geteuid() == 0:
            os.chown(self.floor_ws, FLOOR_UID, FLOOR_UID)

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
    # Only read and timestamped while terp runs, parsed after: the
    # parse of every line as it came took this script's CPU from terp
    # (3 processes on 2 cores), which its wall per cell then counted.
    chunks = []
    t0 = time.perf_counter()
    p = subprocess.Popen(args, stdout=subprocess.PIPE, env=e, cwd=env.dir, bufsize=0)
    fd = p.stdout.fileno()
    while True:
        data = os.read(fd, 1 << 16)
        t = time.perf_counter()
        if not data:
            break
        chunks.append((t, data))
    rc = p.wait()
    events = []
    pending = b""
    for t, data in chunks:
        pending += data
        *lines, pending = pending.split(b"\n")
        for line in lines:
            ev = json.loads(line)
            ev["_t"] = t
            events.append(ev)
    t1 = time.perf_counter()
    if rc != 0:
        raise RuntimeError("terp exec exited %d: %s" % (rc, events[-3:]))
    return events, t0, t1


# ------------------------------------------------------------ cold start

class CpuGroup:
    """A cgroup that the measured process is moved into (in its preexec
    function), so that the CPU time of its whole tree is counted: wait4's
    rusage misses whatever runs in bwrap's pid namespace (bwrap does not
    reap its init's children into its own rusage). cgroup v1 cpuacct
    where mounted (it does not change what terp sees of cgroup v2), else a
    v2 child of our own cgroup. usage_ms() is None where neither works."""

    def __init__(self, tag):
        self.path, self.kind = None, None
        name = "terp-bench-%d-%s" % (os.getpid(), tag)
        cands = [("v1", "/sys/fs/cgroup/cpuacct"), ("v1", "/sys/fs/cgroup/cpu,cpuacct")]
        try:
            own = [l.split(":", 2)[2].strip() for l in open("/proc/self/cgroup")
                   if l.startswith("0::")]
            for line in open("/proc/self/mountinfo"):
                f = line.split()
                if f[f.index("-") + 1] == "cgroup2":
                    cands.append(("v2", f[4] + (own[0] if own else "")))
        except (OSError, ValueError, IndexError):
            pass
        for kind, base in cands:
            path = os.path.join(base, name)
            try:
                os.mkdir(path)
                self.path, self.kind = path, kind
                break
            except OSError:
                continue

    def enter(self):
        """In the child, before exec (a preexec_fn)."""
        if self.path:
            with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

    def usage_ms(self):
        try:
            if self.kind == "v1":
                return int(open(os.path.join(self.path, "cpuacct.usage")).read()) / 1e6
            if self.kind == "v2":
                for line in open(os.path.join(self.path, "cpu.stat")):
                    if line.startswith("usage_usec"):
                        return int(line.split()[1]) / 1e3
        except (OSError, ValueError, TypeError):
            pass
        return None

    def close(self):
        if self.path:
            for _ in range(200):  # the last processes may still be exiting
                try:
                    os.rmdir(self.path)
                    return
                except OSError:
                    time.sleep(0.01)


# The floor runs bwrap as an unprivileged uid, as terp does as root (it
# takes a uid of its own; nobody here: bwrap only needs a non-root uid).
FLOOR_UID = 65534


def floor_argv(env, fds):
    """bwrap + Python with terp's namespaces, binds, tmpfs caps and
    environment (src/sandbox/sandbox.c: bwrap_argv, sandbox_env), minus terp's
    own parts: the seccomp programs, the driver, the launcher."""
    a = ["/usr/bin/bwrap", "--unshare-user", "--unshare-ipc", "--unshare-pid",
         "--unshare-uts", "--unshare-cgroup-try", "--unshare-net", "--disable-userns",
         "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--uid", "1000",
         "--gid", "1000", "--hostname", "sandbox", "--clearenv"]
    for k, v in (("PATH", "/usr/bin:/bin"), ("HOME", "/workspace"), ("LANG", "C.UTF-8"),
                 ("MPLBACKEND", "Agg"), ("MPLCONFIGDIR", "/tmp/mpl"),
                 ("XDG_CACHE_HOME", "/tmp/.cache"), ("OPENBLAS_NUM_THREADS", "1"),
                 ("OMP_NUM_THREADS", "1"), ("MKL_NUM_THREADS", "1"),
                 ("PYTHONDONTWRITEBYTECODE", "1"), ("PYTHONUNBUFFERED", "1")):
        a += ["--setenv", k, v]
    a += ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib64", "lib32", "libx32"):
        path = "/" + name
        if os.path.islink(path):
            a += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            a += ["--ro-bind", path, path]
    for f in ("/etc/ld.so.cache", "/etc/alternatives", "/etc/localtime", "/etc/matplotlibrc",
              "/etc/fonts", "/etc/python3", "/etc/python3.11", "/etc/mime.types",
              "/etc/ssl/certs"):
        a += ["--ro-bind-try", f, f]
    for fd, dest in zip(fds, ("/etc/passwd", "/etc/group", "/etc/hosts")):
        a += ["--ro-bind-data", str(fd), dest]
    a += ["--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", "--dev", "/dev",
          "--perms", "1777", "--size", str(64 << 20), "--tmpfs", "/dev/shm",
          "--perms", "1777", "--size", str(256 << 20), "--tmpfs", "/tmp",
          "--bind", env.floor_ws, "/workspace", "--ro-bind", env.floor_data, "/workspace/data",
          "--remount-ro", "/", "--chdir", "/workspace",
          "--", "/usr/bin/python3", "-I", "-c", "print(1)"]
    return a


def floor_fds():
    """The memfds bwrap's --ro-bind-data reads (it consumes them: fresh
    ones every run)."""
    fds = []
    for text in (b"sandbox:x:1000:1000:terp sandbox:/workspace:/usr/sbin/nologin\n",
                 b"sandbox:x:1000:\n", b"127.0.0.1 localhost\n::1 localhost\n"):
        fd = os.memfd_create("floor")
        os.write(fd, text)
        os.lseek(fd, 0, os.SEEK_SET)
        fds.append(fd)
    return fds


def run_floor(env, cg):
    """One run of the floor: (first output ms, exit ms, wait4 CPU ms,
    whole-tree CPU ms or None)."""
    fds = floor_fds()
    root = os.geteuid() == 0

    def pre():
        cg.enter()
        if root:
            os.setgroups([])
            os.setresgid(FLOOR_UID, FLOOR_UID, FLOOR_UID)
            os.setresuid(FLOOR_UID, FLOOR_UID, FLOOR_UID)
    e = {"PATH": "/usr/bin:/bin"}
    u0 = cg.usage_ms()
    t0 = time.perf_counter()
    p = subprocess.Popen(floor_argv(env, fds), stdout=subprocess.PIPE, env=e, cwd=env.dir,
                         pass_fds=fds, preexec_fn=pre, bufsize=0)
    for fd in fds:
        os.close(fd)
    out, first = b"", None
    while True:
        data = os.read(p.stdout.fileno(), 4096)
        if first is None:
            first = time.perf_counter()
        if not data:
            break
        out += data
    _, status, ru = os.wait4(p.pid, 0)
    t1 = time.perf_counter()
    if os.waitstatus_to_exitcode(status) != 0 or out != b"1\n":
        raise RuntimeError("the floor (bwrap + python3) failed: rc %d, %r"
                           % (os.waitstatus_to_exitcode(status), out))
    u1 = cg.usage_ms()
    return ((first - t0) * 1e3, (t1 - t0) * 1e3, (ru.ru_utime + ru.ru_stime) * 1e3,
            None if u0 is None or u1 is None else u1 - u0)


def run_terp_cold(env, cg, extra_env=None):
    """One `terp exec --json -c print(1)`: (first result ms, exit ms,
    session event -> result ms, wait4 CPU ms, whole-tree CPU ms or None)."""
    args = [TERP, "exec", "--json", "--python", "/usr/bin/python3", "--out", env.out,
            "-c", "print(1)"]
    e = dict(env.env)
    if extra_env:
        e.update(extra_env)
    u0 = cg.usage_ms()
    t0 = time.perf_counter()
    p = subprocess.Popen(args, stdout=subprocess.PIPE, env=e, cwd=env.dir, bufsize=0,
                         preexec_fn=cg.enter)
    events, pending = [], b""
    while True:
        data = os.read(p.stdout.fileno(), 1 << 16)
        t = time.perf_counter()
        if not data:
            break
        pending += data
        *lines, pending = pending.split(b"\n")
        for line in lines:
            ev = json.loads(line)
            ev["_t"] = t
            events.append(ev)
    _, status, ru = os.wait4(p.pid, 0)
    t1 = time.perf_counter()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("terp exec exited %d: %s" % (os.waitstatus_to_exitcode(status),
                                                         events[-3:]))
    u1 = cg.usage_ms()
    sess = next(ev for ev in events if ev["type"] == "session")
    res = next(ev for ev in events if ev["type"] == "result")
    assert res["status"] == "ok", res
    out = "".join(ev["text"] for ev in events if ev["type"] == "stdout")
    assert out == "1\n", out
    return ((res["_t"] - t0) * 1e3, (t1 - t0) * 1e3, (res["_t"] - sess["_t"]) * 1e3,
            (ru.ru_utime + ru.ru_stime) * 1e3, None if u0 is None or u1 is None else u1 - u0)


def summary(xs):
    xs = [x for x in xs if x is not None]
    return {"median": med(xs), "p90": pct(xs, 90)} if xs else {"median": None, "p90": None}


def cold_start(env, runs):
    """terp exec and the floor, interleaved run by run, so that the
    machine's load hits both alike; plus terp without the preload."""
    cgt, cgf = CpuGroup("terp"), CpuGroup("floor")
    t, f, n = [], [], []
    try:
        run_floor(env, cgf)  # warm-up of both: page cache, dentries
        run_terp_cold(env, cgt)
        for _ in range(runs):
            t.append(run_terp_cold(env, cgt))
            f.append(run_floor(env, cgf))
            n.append(run_terp_cold(env, cgt, {"TERP_NO_PRELOAD": "1"}))
    finally:
        cgt.close()
        cgf.close()
    col = lambda rows, i: [r[i] for r in rows]  # noqa: E731
    return {
        "terp": {"first": summary(col(t, 0)), "exit": summary(col(t, 1)),
                 "inside": summary(col(t, 2)), "cpu_wait4": summary(col(t, 3)),
                 "cpu_tree": summary(col(t, 4))},
        "terp_nopreload": {"first": summary(col(n, 0)), "exit": summary(col(n, 1)),
                           "cpu_tree": summary(col(n, 4))},
        "floor": {"first": summary(col(f, 0)), "exit": summary(col(f, 1)),
                  "cpu_wait4": summary(col(f, 2)), "cpu_tree": summary(col(f, 3))},
        "cpu_tree_kind": cgt.kind,
    }


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
    # exec --json hands results over a few to a write: the gaps between
    # lines say nothing alone, the span of the loop over its cells does
    wall = (loop[-1]["_t"] - loop[0]["_t"]) * 1e6 / (len(loop) - 1)
    return {"median_us": med(us), "p99_us": pct(us, 99), "mean_us": statistics.fmean(us),
            "wall_us": wall}


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


# The round trip's floor: a Python process that reads length-prefixed
# code from a pipe, exec's it in one namespace and answers one byte. What
# any kernel that runs a cell in another process must pay at least.
PIPE_SERVER = r"""
import os, struct
ns = {"__name__": "__main__"}
def readn(n):
    b = b""
    while len(b) < n:
        d = os.read(0, n - len(b))
        if not d:
            return None
        b += d
    return b
while True:
    h = readn(4)
    if h is None:
        break
    exec(readn(struct.unpack("<I", h)[0]).decode(), ns)
    os.write(1, b"k")
"""


def pipe_floor_roundtrip(iters):
    import struct
    p = subprocess.Popen([sys.executable, "-I", "-c", PIPE_SERVER], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, bufsize=0)
    w, r = p.stdin.fileno(), p.stdout.fileno()

    def cell(code):
        b = code.encode()
        t = time.perf_counter()
        os.write(w, struct.pack("<I", len(b)) + b)
        if os.read(r, 1) != b"k":
            raise RuntimeError("the pipe floor died")
        return (time.perf_counter() - t) * 1e6
    try:
        cell("x = 0")
        for _ in range(50):  # warm-up
            cell("x += 1")
        us = [cell("x += 1") for _ in range(iters)]
        cell("assert x == %d" % (iters + 50))
    finally:
        p.stdin.close()
        p.wait()
    return {"median_us": med(us), "p99_us": pct(us, 99), "mean_us": sum(us) / len(us)}


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


def fmt(v, unit="ms", w=7, d=1):
    return ("%*.*f %s" % (w, d, v, unit)) if v is not None else "%*s %s" % (w, "-", unit)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=20, help="cold starts of terp and the floor (20)")
    ap.add_argument("--jruns", type=int, default=5, help="cold starts of Jupyter (5)")
    ap.add_argument("--iters", type=int, default=2000, help="round-trip cells (2000)")
    ap.add_argument("--json", help="also write the figures as JSON to this file")
    a = ap.parse_args()
    if not os.access(TERP, os.X_OK):
        sys.exit("kernel.py: build terp first (make)")
    env = Env()
    try:
        run_terp(env, ["1"])  # warm the page cache for both sides alike
        cs = cold_start(env, a.runs)
        jc = jupyter_cold(env, a.jruns)
        tr = terp_roundtrip(env, a.iters)
        trf = terp_roundtrip(env, a.iters, setup=(
            "import os\nfor i in range(60): open('/workspace/out/f%02d.txt' % i, 'w').close()"))
        ts = terp_scan(env)
        pf = pipe_floor_roundtrip(a.iters)
        jr = jupyter_roundtrip(env, a.iters)
    finally:
        env.close()

    t, f, n = cs["terp"], cs["floor"], cs["terp_nopreload"]
    cold_ratio = t["exit"]["median"] / f["exit"]["median"]
    # Against the faster of the two Jupyter clients: the conservative ratio.
    j_best = min(jr["median_us"], jr["raw_median_us"])
    rt_ratio = tr["median_us"] / j_best
    tree = cs["cpu_tree_kind"] and "cgroup %s" % cs["cpu_tree_kind"]
    print("kernel: cold start of print(1), %d runs each, interleaved; Jupyter %d runs"
          % (a.runs, a.jruns))
    print("  %-46s %10s %10s %10s %10s" % ("", "median", "p90", "CPU wait4", "CPU tree"))
    for name, r in (("terp exec: launch -> first result", t["first"]),
                    ("floor (bwrap + python3 -I): -> first output", f["first"])):
        print("  %-46s %s %s" % (name, fmt(r["median"]), fmt(r["p90"])))
    for name, r in (("terp exec: launch -> exit", t), ("floor: launch -> exit", f)):
        print("  %-46s %s %s %s %s" % (name, fmt(r["exit"]["median"]), fmt(r["exit"]["p90"]),
                                        fmt(r["cpu_wait4"]["median"]),
                                        fmt(r["cpu_tree"]["median"])))
    print("  %-46s %s %s %10s %s" % ("terp, TERP_NO_PRELOAD=1: launch -> exit",
                                     fmt(n["exit"]["median"]), fmt(n["exit"]["p90"]), "",
                                     fmt(n["cpu_tree"]["median"])))
    print("  %-46s %s" % ("terp: session event -> first result", fmt(t["inside"]["median"])))
    print("  %-46s %s %s" % ("Jupyter: start_kernel -> first reply", fmt(jc["first_ms"]),
                             fmt(jc["first_p90_ms"])))
    print("  %-46s %s" % ("Jupyter: shutdown_kernel", fmt(jc["shutdown_ms"])))
    print("  CPU wait4: user+sys of the process and the children it reaped (misses")
    print("  what runs in bwrap's pid namespace); CPU tree: the whole tree (%s)"
          % (tree or "no cgroup available: not measured"))
    print("kernel: round trip of `x += 1` (%d cells, one session)" % a.iters)
    print("  %-46s %9s %9s" % ("", "median", "p99"))
    print("  %-46s %6.0f us %6.0f us" % ("terp (duration_us, host clock)", tr["median_us"], tr["p99_us"]))
    print("  %-46s %6.0f us" % ("terp (wall per cell, this script)", tr["wall_us"]))
    print("  %-46s %6.0f us %6.0f us" % ("terp, 60 files in out/", trf["median_us"], trf["p99_us"]))
    print("  %-46s %6.0f us %6.0f us" % ("floor: pipe to a Python exec() loop", pf["median_us"], pf["p99_us"]))
    print("  %-46s %6.0f us %6.0f us" % ("Jupyter, BlockingKernelClient", jr["median_us"], jr["p99_us"]))
    print("  %-46s %6.0f us %6.0f us" % ("Jupyter, bare zmq shell socket", jr["raw_median_us"], jr["raw_p99_us"]))
    print("  driver's out/ scan per cell: %.1f us empty, %.0f us with 60 files, %.0f us with 1000"
          % (ts["empty_us"], ts["files60_us"], ts["files1000_us"]))
    print("targets: cold start (to exit) %.2fx the floor <= %.1fx: %s"
          % (cold_ratio, COLD_RATIO, verdict(cold_ratio <= COLD_RATIO)))
    print("         round trip %.3fx Jupyter <= %.1fx: %s (floor %.0f us)"
          % (rt_ratio, RT_RATIO, verdict(rt_ratio <= RT_RATIO), pf["median_us"]))
    if a.json:
        with open(a.json, "w") as fo:
            json.dump({"cold": cs, "jupyter_cold": jc, "terp_rt": tr, "terp_rt_files": trf,
                       "terp_scan": ts, "pipe_floor_rt": pf, "jupyter_rt": jr,
                       "cold_ratio": cold_ratio, "rt_ratio": rt_ratio}, fo, indent=1)


if __name__ == "__main__":
    main()
