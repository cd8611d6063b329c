#!/usr/bin/env python3
"""bench/egress.py: what terp's egress proxy costs on loopback.

Paths to the same upstream (a plain TCP server on 127.0.0.1, in its own
process):
  direct   client -> upstream
  proxy    client -> egress proxy (Unix socket, CONNECT) -> upstream
  fwd      client -> egress_fwd.py (127.0.0.1) -> proxy -> upstream, the
           in-sandbox path without the sandbox; the forwarder relays
           the bytes (its only way: handing sockets over let a cell
           block the proxy, issue 22)
  relay    the same with --relay given (the same path; kept so that
           figures compare with older runs)
  sandbox  a cell in `terp exec --allow-host 127.0.0.1:PORT`: the client
           inside the sandbox, through the forwarder terp's driver starts
           and the proxy in terp's loop (the whole thing; needs ./terp)
Measures time to first byte (connect, CONNECT and its 200 where there is
a proxy, one request byte, the first response byte) and the throughput of
a download, and the CPU time the relays (proxy and forwarder) spend per
GiB moved. Targets (issue 10): <= 1 ms added to the first byte, >= 80 %
of direct throughput. Uses build/egress-bench (make build/egress-bench).
Wall-clock figures follow the machine's load; CPU per GiB does not.

Usage: bench/egress.py [--iters N] [--mb N] [--runs N] [--no-sandbox]
                       [--json FILE]
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "build" / "egress-bench"
FWD = ROOT / "src" / "egress" / "egress_fwd.py"

UPSTREAM = r"""
import socket, sys
mb = int(sys.argv[1])
chunk = b"d" * (1 << 20)
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", 0))
ls.listen(128)
print(ls.getsockname()[1], flush=True)
while True:
    c, _ = ls.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    op = c.recv(1)
    if op == b"T":
        c.sendall(b"x")
    elif op == b"D":
        for _ in range(mb):
            c.sendall(chunk)
    c.close()
"""


def start_upstream(mb):
    p = subprocess.Popen([sys.executable, "-c", UPSTREAM, str(mb)],
                         stdout=subprocess.PIPE, text=True)
    return p, int(p.stdout.readline())


def start_proxy(tmp, port):
    sock = os.path.join(tmp, "egress.sock")
    log = open(os.path.join(tmp, "ledger.jsonl"), "w+")
    p = subprocess.Popen([str(HARNESS), "--socket", sock, "--allow",
                          "127.0.0.1:%d" % port, "--progress", "-1"],
                         stdin=subprocess.PIPE, stdout=log)
    deadline = time.monotonic() + 30
    while True:
        log.seek(0)
        if '"ready"' in log.read():
            break
        if p.poll() is not None or time.monotonic() > deadline:
            sys.exit("egress.py: the proxy did not start")
        time.sleep(0.01)
    return p, sock


def start_fwd(sock, *mode):
    p = subprocess.Popen([sys.executable, str(FWD), sock, *mode],
                         stdout=subprocess.PIPE, text=True)
    return p, int(p.stdout.readline())


# The client side of ttfb() and download() as a cell: it runs inside
# terp's sandbox, through the forwarder on 127.0.0.1:3128.
CELL = r"""
import json, socket, statistics, sys, time
PORT, ITERS, RUNS, MB = %d, %d, %d, %d
def open_conn():
    s = socket.create_connection(("127.0.0.1", 3128))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(b"CONNECT 127.0.0.1:%%d HTTP/1.1\r\n\r\n" %% PORT)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            sys.exit("closed: %%r" %% data)
        data += chunk
    if not data.startswith(b"HTTP/1.1 200"):
        sys.exit("refused: %%r" %% data)
    return s
def ttfb(n):
    out = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        s = open_conn()
        s.sendall(b"T")
        assert s.recv(1) == b"x"
        out.append(time.perf_counter_ns() - t0)
        s.close()
    return out
def download():
    view = memoryview(bytearray(1 << 20))
    t0 = time.perf_counter()
    s = open_conn()
    s.sendall(b"D")
    got = 0
    while True:
        n = s.recv_into(view)
        if n == 0:
            break
        got += n
    dt = time.perf_counter() - t0
    s.close()
    assert got == MB << 20, got
    return (MB << 20) / dt
ttfb(50)
lat = ttfb(ITERS)
thr = [download() for _ in range(RUNS)]
print("BENCH " + json.dumps({"lat": lat, "thr": thr}))
"""


def run_sandbox(port, a, tmp):
    """The sandbox path: latencies (ns) and throughputs (B/s), and the
    CPU the terp process (its proxy among the rest) spent meanwhile."""
    terp = ROOT / "terp"
    if not os.access(terp, os.X_OK):
        sys.exit("egress.py: build terp first (make), or pass --no-sandbox")
    env = {"PATH": "/usr/bin:/bin", "HOME": tmp, "XDG_STATE_HOME": tmp + "/state",
           "XDG_CACHE_HOME": tmp + "/cache", "LANG": "C.UTF-8", "TERP_NO_PRELOAD": "1"}
    os.chmod(tmp, 0o711)
    p = subprocess.Popen([str(terp), "exec", "--json", "--timeout", "0",
                          "--allow-host", "127.0.0.1:%d" % port,
                          "-c", CELL % (port, a.iters, a.runs, a.mb)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env, cwd=tmp)
    out, err = p.communicate()
    text = "".join(json.loads(l).get("text", "") for l in out.splitlines()
                   if '"stdout"' in l)
    for line in text.splitlines():
        if line.startswith("BENCH "):
            r = json.loads(line[6:])
            return r["lat"], r["thr"]
    sys.exit("egress.py: the sandbox run failed: %s %s" % (out[-2000:], err[-2000:]))


def cpu_s(pid):
    """User + system CPU seconds of a process so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def read_200(s):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            sys.exit("egress.py: the proxy closed: %r" % data)
        data += chunk
    if not data.startswith(b"HTTP/1.1 200"):
        sys.exit("egress.py: the proxy refused: %r" % data)


def open_conn(path, port):
    """A connection to the upstream along path: direct, proxy or fwd."""
    kind, where = path
    if kind == "direct":
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s
    if kind == "proxy":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(where)
    else:
        s = socket.create_connection(("127.0.0.1", where))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % port)
    read_200(s)
    return s


def ttfb(path, port, iters):
    out = []
    for _ in range(iters):
        t0 = time.perf_counter_ns()
        s = open_conn(path, port)
        s.sendall(b"T")
        if s.recv(1) != b"x":
            sys.exit("egress.py: bad first byte")
        out.append(time.perf_counter_ns() - t0)
        s.close()
    return out


def download(path, port, mb):
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    t0 = time.perf_counter()
    s = open_conn(path, port)
    s.sendall(b"D")
    got = 0
    while True:
        n = s.recv_into(view)
        if n == 0:
            break
        got += n
    dt = time.perf_counter() - t0
    s.close()
    if got != mb << 20:
        sys.exit("egress.py: got %d of %d bytes" % (got, mb << 20))
    return (mb << 20) / dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--no-sandbox", action="store_true",
                    help="skip the path through terp's sandbox")
    a = ap.parse_args()
    if not HARNESS.exists():
        sys.exit("egress.py: build it first: make build/egress-bench")
    tmp = tempfile.mkdtemp(prefix="terp-egress-bench.")
    os.chmod(tmp, 0o755)  # see kernel.py: the sandbox folders stay in here
    up, port = start_upstream(a.mb)
    px, sock = start_proxy(tmp, port)
    fw, fport = start_fwd(sock)
    rl, rport = start_fwd(sock, "--relay")
    paths = {"direct": ("direct", None), "proxy": ("proxy", sock),
             "fwd": ("fwd", fport), "relay": ("fwd", rport)}
    res = {}
    try:
        for name, path in paths.items():
            ttfb(path, port, 50)                    # warm up
        # Interleaved, so drift in machine load hits every path alike.
        lat = {n: [] for n in paths}
        for _ in range(a.runs):
            for name, path in paths.items():
                lat[name] += ttfb(path, port, a.iters // a.runs)
        thr = {n: [] for n in paths}
        cpu = {n: 0.0 for n in paths}
        for _ in range(a.runs):
            for name, path in paths.items():
                c0 = cpu_s(px.pid) + cpu_s(fw.pid) + cpu_s(rl.pid)
                thr[name].append(download(path, port, a.mb))
                cpu[name] += cpu_s(px.pid) + cpu_s(fw.pid) + cpu_s(rl.pid) - c0
        for n in paths:
            res[n] = {"ttfb_us_median": statistics.median(lat[n]) / 1000,
                      "ttfb_us_p90": sorted(lat[n])[len(lat[n]) * 9 // 10] / 1000,
                      "mib_s_best": max(thr[n]) / (1 << 20),
                      "mib_s_median": statistics.median(thr[n]) / (1 << 20),
                      "relay_cpu_s_per_gib": cpu[n] / (a.runs * a.mb / 1024)}
        if not a.no_sandbox:
            # direct again right after: the load may have moved
            dlat = ttfb(paths["direct"], port, a.iters)
            dthr = [download(paths["direct"], port, a.mb) for _ in range(a.runs)]
            lat_s, thr_s = run_sandbox(port, a, tempfile.mkdtemp(prefix="terp-egress-sbx."))
            res["direct2"] = {"ttfb_us_median": statistics.median(dlat) / 1000,
                              "mib_s_median": statistics.median(dthr) / (1 << 20)}
            res["sandbox"] = {"ttfb_us_median": statistics.median(lat_s) / 1000,
                              "ttfb_us_p90": sorted(lat_s)[len(lat_s) * 9 // 10] / 1000,
                              "mib_s_best": max(thr_s) / (1 << 20),
                              "mib_s_median": statistics.median(thr_s) / (1 << 20),
                              "relay_cpu_s_per_gib": float("nan")}
    finally:
        for p in (rl, fw, px, up):
            p.kill()
            p.wait()
    d = res["direct"]
    print("egress proxy on loopback (%d connections, %d x %d MiB per path, %d CPUs)"
          % (a.iters, a.runs, a.mb, os.cpu_count()))
    print("  %-7s %14s %12s %16s %10s %14s" % ("path", "TTFB median", "added",
          "download median", "of direct", "relay CPU/GiB"))
    for n in list(paths) + (["sandbox"] if "sandbox" in res else []):
        r = res[n]
        # the sandbox is compared with the direct run made just before it
        base = res["direct2"] if n == "sandbox" else d
        r["ttfb_added_us"] = r["ttfb_us_median"] - base["ttfb_us_median"]
        r["throughput_ratio"] = r["mib_s_median"] / base["mib_s_median"]
        print("  %-7s %11.0f us %9.0f us %11.0f MiB/s %9.0f %% %12s"
              % (n, r["ttfb_us_median"], r["ttfb_added_us"], r["mib_s_median"],
                 100 * r["throughput_ratio"],
                 "%.2f s" % r["relay_cpu_s_per_gib"] if n != "sandbox" else "-"))
    if "sandbox" in res:
        print("  (sandbox: against a direct run just before it, %.0f us and %.0f MiB/s)"
              % (res["direct2"]["ttfb_us_median"], res["direct2"]["mib_s_median"]))
    print("  targets: <= 1000 us added, >= 80 % of direct")
    print("  relay CPU: the proxy's and the forwarder's CPU time per GiB moved;")
    print("  the wall-clock figures move with the machine's load (now %.1f)"
          % os.getloadavg()[0])
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
