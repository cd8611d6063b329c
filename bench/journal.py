#!/usr/bin/python3
"""bench/journal.py: long sessions. What reopening and exporting a saved
session costs against its length, and what a live session costs per
question as it grows.

The journals are made by the real binary: terp -p with N questions in one
run against a fake model (bench/agent.py's pre-encoded server, so the
server parses nothing): question k is one cell, `print(k)` (or 80 lines,
about 4 KB, with --big), then a one-line answer. While it runs, terp's own
VmHWM (not the sandbox's) and its CPU time (schedstat of its threads) are
read at every answer: peak RSS over the session, and the CPU of each
question, the first tenth's median beside the last tenth's. Beside it, its
floor: every request carries the whole conversation (the APIs are
stateless), so a question's two requests grow with the session; what a
bare socket's sendall of those bytes over loopback costs the sender (the
kernel's copy and loopback delivery, which land in the sender's time) is
measured for the first and the last tenth's sizes, and terp's CPU beyond it
shown too; and a peer, a minimal libcurl client (build/bench-curlpost: one
kept-alive easy handle, CURLOPT_POSTFIELDS) POSTing bodies of the same
sizes, whose CPU grows with them as terp's does.

Then, for each session: `terp --resume ID -p "one more"` to its first
model request (the time the server sees the request's head, after the
spawn; its floor: the same at 100 questions, in the same run) and
`terp --export ID FILE.md` to its exit, each with its ru_maxrss. Linear
in the journal: the 3,000-question resume within 2x of three times the
1,000-question one.

Usage: /usr/bin/python3 bench/journal.py [--sizes 100,1000,3000] [--big 1000]
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
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TERP = os.environ.get("TERP_BIN", os.path.join(ROOT, "terp"))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import agent  # noqa: E402

RESUME_RATIO_TARGET = 2.0	# t(3,000) / (3 t(1,000))
RESUME_1000_TARGET_S = 1.0
RSS_TARGET_MB = 40.0
CPU_GROWTH_TARGET = 1.5		# last tenth / first tenth, per question
BIG_CODE = "for i in range(80):\n    print('row %04d' % i, 'x' * 40)"


def specs(nq, big):
    out = []
    for k in range(nq):
        code = BIG_CODE if big else "print(%d)" % k
        out.append({"tool_calls": [{"id": "call_%d" % k, "code": code}]})
        out.append({"text": "The answer is %d." % k})
    return out


def env_of(tmp):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update({"XDG_STATE_HOME": os.path.join(tmp, "state"),
                "XDG_CONFIG_HOME": os.path.join(tmp, "config"),
                "OPENAI_API_KEY": "sk-bench"})
    return env


def model_args(port):
    return ["--provider", "openai", "--model", "fake",
            "--base-url", "http://127.0.0.1:%d/v1" % port,
            "--context-window", "100000000", "--python", "/usr/bin/python3"]


def generate(nq, big, tmp):
    """One session of nq questions: its id, and what terp used on the way."""
    spec_file = os.path.join(tmp, "specs-%d-%d.json" % (nq, big))
    with open(spec_file, "w") as f:
        json.dump(specs(nq, big), f)
    srv = subprocess.Popen([sys.executable, os.path.join(ROOT, "bench", "agent.py"),
                            "--serve-specs", spec_file, spec_file + ".log"],
                           stdout=subprocess.PIPE)
    port = int(srv.stdout.readline())
    args = [TERP, "--json"] + model_args(port) + ["--out", os.path.join(tmp, "out")]
    for k in range(nq):
        args += ["-p", "Question %d." % k]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, env=env_of(tmp), cwd=tmp, bufsize=0)
    sid, pending, hwm, cpu, answers, errors = None, b"", 0, [], 0, []
    last = agent.cpu_ns(p.pid)
    t0 = time.monotonic()
    try:
        fd = p.stdout.fileno()
        while True:
            data = os.read(fd, 1 << 16)
            if not data:
                break
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                ev = json.loads(line)
                if ev["type"] == "session":
                    sid = ev["id"]
                elif ev["type"] == "error":
                    errors.append(ev.get("message"))
                elif ev["type"] == "answer":
                    answers += 1
                    now = agent.cpu_ns(p.pid)
                    hwm = max(hwm, agent.vmhwm_kb(p.pid) or 0)
                    if now is not None and last is not None:
                        cpu.append((now - last) / 1e3)
                    last = now
        _, status, ru = os.wait4(p.pid, 0)
    finally:
        srv.kill()
        srv.wait()
    if os.waitstatus_to_exitcode(status) != 0 or answers != nq or sid is None:
        raise RuntimeError("terp -p of %d questions: exit %s, %d answers, errors %s"
                           % (nq, os.waitstatus_to_exitcode(status), answers, errors[:3]))
    tenth = max(1, len(cpu) // 10)
    journal = os.path.join(tmp, "state", "terp", "sessions", sid, "notebook.jsonl")
    with open(spec_file + ".log") as f:
        log = json.load(f)
    reqs = [(log[2 * k]["bytes"], log[2 * k + 1]["bytes"]) for k in range(nq)]
    first = sorted(reqs[:tenth], key=sum)[len(reqs[:tenth]) // 2]
    last = sorted(reqs[-tenth:], key=sum)[len(reqs[-tenth:]) // 2]
    return {"id": sid, "questions": nq, "big": big, "wall_s": time.monotonic() - t0,
            "hwm_kb": hwm, "journal_bytes": os.path.getsize(journal),
            "cpu_first_us": statistics.median(cpu[:tenth]),
            "cpu_last_us": statistics.median(cpu[-tenth:]),
            "req_first_bytes": first, "req_last_bytes": last}


DRAIN = r"""
import socket, sys
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(1)
print(ls.getsockname()[1], flush=True)
c, _ = ls.accept()
buf = bytearray(1 << 20)
while True:
    h = c.recv(8, socket.MSG_WAITALL)
    if len(h) < 8:
        break
    n = int.from_bytes(h, "little")
    while n > 0:
        n -= c.recv_into(buf, min(n, len(buf)))
    c.sendall(b"k")
"""


def send_floor_us(sizes, reps=40):
    """The sender's CPU (this thread: user and system) for sendall of each
    of sizes over loopback to a process that drains them, one reply byte
    after each: median over reps, us."""
    srv = subprocess.Popen([sys.executable, "-I", "-c", DRAIN], stdout=subprocess.PIPE)
    try:
        c = socket.create_connection(("127.0.0.1", int(srv.stdout.readline())))
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        data = [b"x" * n for n in sizes]
        us = []
        for i in range(reps + 3):
            t = time.thread_time()
            for d in data:
                # header and body from where they are, as curl sends
                # a body it was handed: a concatenation first was a
                # 1 MB copy, and page faults, the floor then counted
                hdr = len(d).to_bytes(8, "little")
                n = c.sendmsg([hdr, d])
                if n < len(hdr):
                    c.sendall(hdr[n:])
                    n = len(hdr)
                if n - len(hdr) < len(d):
                    c.sendall(memoryview(d)[n - len(hdr):])
                c.recv(1)
            if i >= 3:  # warm-up
                us.append((time.thread_time() - t) * 1e6)
        c.close()
        return statistics.median(us)
    finally:
        srv.kill()
        srv.wait()


CURLPOST = os.path.join(ROOT, "build", "bench-curlpost")


def curl_floor_us(sizes, reps=40):
    """libcurl's own CPU (build/bench-curlpost: one kept-alive handle,
    POSTFIELDS, terp's upload buffer) for POSTing bodies of these sizes
    to the fake model terp is measured against: median over reps, us.
    None without the program (make build/bench-curlpost)."""
    if not os.access(CURLPOST, os.X_OK):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        # the fake model terp talks to, answering every request alike
        spec = os.path.join(tmp, "specs.json")
        with open(spec, "w") as f:
            json.dump([{"text": "ok"}], f)
        srv = subprocess.Popen([sys.executable, os.path.join(ROOT, "bench", "agent.py"),
                                "--serve-specs", spec, spec + ".log"], stdout=subprocess.PIPE)
        try:
            url = "http://127.0.0.1:%d/v1/chat/completions" % int(srv.stdout.readline())
            out = subprocess.run([CURLPOST, url, str(reps)] + [str(n) for n in sizes],
                                 capture_output=True, text=True, check=True)
            return float(out.stdout)
        finally:
            srv.kill()
            srv.wait()


class FirstRequest:
    """A model server in a thread: the monotonic time a request's head
    arrives, then a short text answer."""

    def __init__(self):
        self.resp = agent.encode_answers([{"text": "done"}])[0]
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(8)
        self.port = self.ls.getsockname()[1]
        self.at = None
        self.got = threading.Event()
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        while True:
            c, _ = self.ls.accept()
            buf = b""
            while b"\r\n\r\n" not in buf:
                d = c.recv(1 << 16)
                if not d:
                    break
                buf += d
            if self.at is None:
                self.at = time.monotonic()
                self.got.set()
            head, _, rest = buf.partition(b"\r\n\r\n")
            clen = 0
            for line in head.split(b"\r\n")[1:]:
                k, _, v = line.partition(b":")
                if k.strip().lower() == b"content-length":
                    clen = int(v)
            while len(rest) < clen:
                d = c.recv(1 << 16)
                if not d:
                    break
                rest += d
            try:
                c.sendall(self.resp)
            except OSError:
                pass
            c.close()


def wait_hwm(p):
    """Waits for p, reading its own VmHWM (not its children's, as
    ru_maxrss would) every few ms: its exit status and the peak."""
    hwm = 0
    while True:
        hwm = max(hwm, agent.vmhwm_kb(p.pid) or 0)
        pid, status = os.waitpid(p.pid, os.WNOHANG)
        if pid:
            return status, hwm
        time.sleep(0.003)


def resume(sid, tmp, srv, terp=TERP):
    srv.at = None
    srv.got.clear()
    t0 = time.monotonic()
    p = subprocess.Popen([terp, "--json", "--resume", sid] + model_args(srv.port) +
                         ["-p", "one more"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, env=env_of(tmp), cwd=tmp)
    status, hwm = wait_hwm(p)
    if os.waitstatus_to_exitcode(status) != 0 or srv.at is None:
        raise RuntimeError("terp --resume %s: exit %d, request %s"
                           % (sid, os.waitstatus_to_exitcode(status), srv.at))
    return {"first_request_s": srv.at - t0, "maxrss_kb": hwm}


def export(sid, tmp, terp=TERP):
    out = os.path.join(tmp, "%s.md" % sid)
    t0 = time.monotonic()
    p = subprocess.Popen([terp, "--export", sid, out], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL,
                         env=env_of(tmp), cwd=tmp)
    status, hwm = wait_hwm(p)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("terp --export %s: exit %d" % (sid, os.waitstatus_to_exitcode(status)))
    return {"s": time.monotonic() - t0, "maxrss_kb": hwm,
            "bytes": os.path.getsize(out)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="100,1000,3000",
                    help="questions of each session (100,1000,3000)")
    ap.add_argument("--big", type=int, default=1000,
                    help="questions of the session with 4 KB outputs (1000; 0: none)")
    ap.add_argument("--runs", type=int, default=3, help="resumes and exports each (3)")
    ap.add_argument("--compare", metavar="TERP",
                    help="another terp binary (an older build): its resume and export "
                    "of the same journals, once each, printed beside")
    ap.add_argument("--json", help="also write the figures as JSON to this file")
    a = ap.parse_args()
    sizes = [(int(n), 0) for n in a.sizes.split(",")] + ([(a.big, 1)] if a.big else [])
    res = []
    with tempfile.TemporaryDirectory(prefix="terp-bench-journal.") as tmp:
        os.chmod(tmp, 0o755)  # see kernel.py: the sandbox folders stay in here
        srv = FirstRequest()
        for nq, big in sizes:
            g = generate(nq, big, tmp)
            ex = [export(g["id"], tmp) for _ in range(a.runs)]
            rs = [resume(g["id"], tmp, srv) for _ in range(a.runs)]
            g["export_s"] = statistics.median(e["s"] for e in ex)
            g["export_rss_kb"] = max(e["maxrss_kb"] for e in ex)
            g["export_bytes"] = ex[0]["bytes"]
            g["resume_s"] = statistics.median(r["first_request_s"] for r in rs)
            g["resume_rss_kb"] = max(r["maxrss_kb"] for r in rs)
            if a.compare:
                e, r = export(g["id"], tmp, a.compare), resume(g["id"], tmp, srv, a.compare)
                g["compare"] = {"export_s": e["s"], "export_rss_kb": e["maxrss_kb"],
                                "resume_s": r["first_request_s"],
                                "resume_rss_kb": r["maxrss_kb"]}
            res.append(g)
    print("journal: sessions of N questions made by terp -p against a fake model; "
          "resume to the first request, export to exit (median of %d)" % a.runs)
    print("  %-22s %9s %9s %10s %9s %10s %9s %10s %10s" % (
        "session", "journal", "gen", "peak RSS", "resume", "resume RSS", "export",
        "export RSS", "CPU/q 1st,last tenth"))
    for g in res:
        print("  %-22s %8.1fM %8.1fs %8.1f M %8.3fs %8.1f M %8.3fs %8.1f M  %6.0f us %6.0f us" % (
            "%d questions%s" % (g["questions"], ", 4 KB out" if g["big"] else ""),
            g["journal_bytes"] / 1e6, g["wall_s"], g["hwm_kb"] / 1024.0, g["resume_s"],
            g["resume_rss_kb"] / 1024.0, g["export_s"], g["export_rss_kb"] / 1024.0,
            g["cpu_first_us"], g["cpu_last_us"]))
        if "compare" in g:
            c = g["compare"]
            print("  %-22s %9s %9s %10s %8.3fs %8.1f M %8.3fs %8.1f M" % (
                "  (%s)" % os.path.basename(os.path.dirname(os.path.abspath(a.compare))),
                "", "", "", c["resume_s"], c["resume_rss_kb"] / 1024.0, c["export_s"],
                c["export_rss_kb"] / 1024.0))
    small = {g["questions"]: g for g in res if not g["big"]}
    targets = {}
    if 1000 in small and 3000 in small:
        r = small[3000]["resume_s"] / (3 * small[1000]["resume_s"])
        e = small[3000]["export_s"] / (3 * small[1000]["export_s"])
        floor = small[min(small)]["resume_s"]
        print("targets: resume 3,000 / (3 x 1,000) %.2fx < %.1fx: %s; export %.2fx: %s;"
              " resume at 1,000 %.3f s < %.1f s (floor: %.3f s at %d questions): %s"
              % (r, RESUME_RATIO_TARGET, ok(r < RESUME_RATIO_TARGET), e,
                 ok(e < RESUME_RATIO_TARGET), small[1000]["resume_s"],
                 RESUME_1000_TARGET_S, floor, min(small),
                 ok(small[1000]["resume_s"] < RESUME_1000_TARGET_S)))
        g = small[3000]
        growth = g["cpu_last_us"] / g["cpu_first_us"]
        print("targets: peak RSS over 3,000 questions %.1f MB < %.0f MB: %s; CPU per "
              "question last tenth / first %.2fx < %.1fx: %s"
              % (g["hwm_kb"] / 1024.0, RSS_TARGET_MB, ok(g["hwm_kb"] / 1024.0 < RSS_TARGET_MB),
                 growth, CPU_GROWTH_TARGET, ok(growth < CPU_GROWTH_TARGET)))
        f0, f1 = send_floor_us(g["req_first_bytes"]), send_floor_us(g["req_last_bytes"])
        b0, b1 = g["cpu_first_us"] - f0, g["cpu_last_us"] - f1
        print("floor: a question's two requests (%s and %s bytes, first and last tenth) sent "
              "over loopback by a bare socket: %.0f / %.0f us of the sender's CPU; terp's CPU "
              "per question beyond it %.0f / %.0f us (%.2fx)"
              % ("+".join(map(str, g["req_first_bytes"])), "+".join(map(str, g["req_last_bytes"])),
                 f0, f1, b0, b1, b1 / b0))
        targets = {"resume_ratio": r, "export_ratio": e, "cpu_growth": growth,
                   "send_floor_first_us": f0, "send_floor_last_us": f1,
                   "cpu_beyond_first_us": b0, "cpu_beyond_last_us": b1}
        c0, c1 = curl_floor_us(g["req_first_bytes"]), curl_floor_us(g["req_last_bytes"])
        if c0 is not None:
            print("peer: libcurl POSTing the same bodies to the same fake model: "
                  "%.0f / %.0f us; terp's CPU per question beyond it %.0f / %.0f us (%.2fx)"
                  % (c0, c1, g["cpu_first_us"] - c0, g["cpu_last_us"] - c1,
                     (g["cpu_last_us"] - c1) / (g["cpu_first_us"] - c0)))
            targets.update({"curl_first_us": c0, "curl_last_us": c1})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"sessions": res, "targets": targets}, f, indent=1)


def ok(b):
    return "ok" if b else "MISS"


if __name__ == "__main__":
    main()
