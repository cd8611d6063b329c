#!/usr/bin/python3
"""bench/agent.py: what terp's agent loop adds to a turn, against a fake
model that answers instantly.

A minimal HTTP/1.1 server (its own process, keep-alive, every answer
pre-encoded) plays an OpenAI-compatible model: TURNS streamed tool calls
of `x += 1`, then a text answer. terp -p --json runs the whole question
in one session. Per turn:

  wall      arrival of the "turn" event to the next one (this script)
  server    the server's time from the request's first byte to the last
            byte of its answer (measured by the server)
  cell      the result's duration_us (terp's kernel round trip)
  overhead  wall - server - cell: encoding the conversation, curl, the
            SSE decoder, the agent, the event output, and the loopback
            wake-ups (an upper bound on terp's own share)

The peer: the same loop in a minimal Python harness (http.client, json,
a hand-written SSE reader, the cell run in an ipykernel through a bare
zmq socket), measured the same way against the same server.

Peak RSS: terp's own VmHWM from /proc (read while it runs) and wait4's
ru_maxrss at its exit; the sandbox's Python (a descendant) shown apart.

Memory: a second session of MEM_TURNS turns (1,000 by default) run the
same way; terp's own VmHWM (not its children's) read from /proc at every
turn while it runs, and the overhead per turn at its start and its end
(what grows with the conversation).

Usage: /usr/bin/python3 bench/agent.py [--turns N] [--mem-turns N] [--json FILE]
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TERP = os.environ.get("TERP_BIN", os.path.join(ROOT, "terp"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

# Targets (issue 14): terp's overhead per turn at most half the minimal
# Python loop's, median and p99; terp's own peak RSS over a 1,000-turn
# session under 30 MB.
TARGET_RATIO = 0.5
MEM_TARGET_MB = 30.0
WARM = "import numpy, pandas, matplotlib.pyplot\nx = 0"


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def pct(xs, p):
    s = sorted(xs)
    if not s:
        return float("nan")
    return s[min(len(s) - 1, max(0, int(round(p / 100.0 * (len(s) - 1)))))]


# ------------------------------------------------------------ the server

def answers(turns):
    """Pre-encoded HTTP responses: turn 0 warms the session, turns
    1..turns run `x += 1`, the last one answers in text."""
    specs = []
    for i in range(turns + 2):
        if i == 0:
            specs.append({"tool_calls": [{"id": "call_0", "code": WARM}]})
        elif i <= turns:
            specs.append({"tool_calls": [{"id": "call_%d" % i, "code": "x += 1"}]})
        else:
            specs.append({"text": "x is %d" % turns})
    return encode_answers(specs)


def encode_answers(specs):
    """Pre-encoded HTTP responses of OpenAI stream specs (fake_model's)."""
    from fake_model import encode_event, openai_events
    out = []
    for spec in specs:
        body = b"".join(encode_event(e) for e in openai_events(spec))
        head = ("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                "content-length: %d\r\n\r\n" % len(body)).encode()
        out.append(head + body)
    return out


def serve(turns, log_path, resp=None):
    """One connection at a time (curl keeps one alive); answers request i
    with resp[i] (answers(turns) by default; the last one again after the
    end); after the last, writes the timings to log_path."""
    if resp is None:
        resp = answers(turns)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(8)
    print(ls.getsockname()[1], flush=True)
    n, log = 0, []
    sink = bytearray(1 << 20)
    while True:
        c, _ = ls.accept()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = b""
        while True:
            while b"\r\n\r\n" not in buf:
                d = c.recv(1 << 16)
                if not d:
                    break
                if not buf:
                    t0 = time.perf_counter()
                buf += d
            if b"\r\n\r\n" not in buf:
                break
            head, _, buf = buf.partition(b"\r\n\r\n")
            clen = 0
            for line in head.split(b"\r\n")[1:]:
                k, _, v = line.partition(b":")
                if k.strip().lower() == b"content-length":
                    clen = int(v)
            # the body into one buffer, not appended to a growing bytes
            # object: that copied a 1 MB request 16 times over, the
            # server's CPU then taken from terp's (2 CPUs), and it read
            # slower than terp sent
            got = min(len(buf), clen)
            buf = buf[clen:]
            while got < clen:
                k = c.recv_into(sink, min(clen - got, len(sink)))
                if not k:
                    break
                got += k
            c.sendall(resp[min(n, len(resp) - 1)])
            log.append({"us": (time.perf_counter() - t0) * 1e6, "bytes": got})
            n += 1
            if n == len(resp):
                with open(log_path + ".tmp", "w") as f:
                    json.dump(log, f)
                os.rename(log_path + ".tmp", log_path)
            if buf:
                t0 = time.perf_counter()
        c.close()


class Server:
    def __init__(self, turns, tmp, tag):
        self.log = os.path.join(tmp, "server-%s.json" % tag)
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve",
                                   str(turns), self.log], stdout=subprocess.PIPE)
        self.port = int(self.p.stdout.readline())

    def timings(self):
        for _ in range(100):
            if os.path.exists(self.log):
                break
            time.sleep(0.01)
        with open(self.log) as f:
            return json.load(f)

    def stop(self):
        self.p.kill()
        self.p.wait()


# ------------------------------------------------------------ terp

def vmhwm_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def cpu_ns(pid):
    """CPU time of all threads of pid so far, in ns (schedstat: exact,
    where /proc/PID/stat counts in clock ticks); None when gone."""
    total = 0
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return total


def sandbox_python(pid):
    """The pid of the deepest descendant of pid (bwrap, its init, then
    the sandbox's Python), or None."""
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    found = None
    while kids.get(pid):
        pid = found = kids[pid][0]
    return found


def run_terp(turns, tmp):
    srv = Server(turns, tmp, "terp")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update({"XDG_STATE_HOME": os.path.join(tmp, "state"),
                "XDG_CONFIG_HOME": os.path.join(tmp, "config"),
                "OPENAI_API_KEY": "sk-bench"})
    args = [TERP, "-p", "Count to %d." % turns, "--json", "--provider", "openai",
            "--model", "fake", "--base-url", "http://127.0.0.1:%d/v1" % srv.port,
            "--max-turns", str(turns + 2), "--out", os.path.join(tmp, "out"),
            "--python", "/usr/bin/python3"]     # deps.sh's, whatever PATH says
    events, pending, hwm, py_hwm, py_pid = [], b"", None, None, None
    cpu0 = cpu1 = None
    t0 = time.perf_counter()
    p = subprocess.Popen(args, stdout=subprocess.PIPE, env=env, cwd=tmp, bufsize=0)
    fd = p.stdout.fileno()
    try:
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
                if ev["type"] in ("turn", "answer"):
                    hwm = vmhwm_kb(p.pid) or hwm
                # terp's own CPU over the loop: turns 2 .. turns + 1.
                if ev["type"] == "turn" and ev["n"] == 2:
                    cpu0 = cpu_ns(p.pid)
                if ev["type"] == "turn" and ev["n"] == turns + 2:
                    cpu1 = cpu_ns(p.pid)
                if ev["type"] == "turn" and ev["n"] == 2:
                    py_pid = sandbox_python(p.pid)
                if ev["type"] == "turn" and py_pid:
                    py_hwm = vmhwm_kb(py_pid) or py_hwm
        _, status, ru = os.wait4(p.pid, 0)
        t1 = time.perf_counter()
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError("terp -p failed: %s" % events[-3:])
        timings = srv.timings()
    finally:
        srv.stop()
    answer = [e for e in events if e["type"] == "answer"]
    assert answer and answer[0]["text"] == "x is %d" % turns, events[-3:]
    tt = [e["_t"] for e in events if e["type"] == "turn"]
    res = [e for e in events if e["type"] == "result"]
    assert len(res) == turns + 1 and all(r["status"] == "ok" for r in res), res[-1:]
    assert len(timings) == turns + 2, len(timings)
    # turn i+1 (1-based event n = i+1) holds request i and cell i; turn 0
    # is the warm-up, so the loop is turns 1..turns.
    over, wall = [], []
    for i in range(1, turns + 1):
        w = (tt[i + 1] - tt[i]) * 1e6
        wall.append(w)
        over.append(w - timings[i]["us"] - res[i]["duration_us"])
    return {"wall_us": med(wall), "server_us": med([x["us"] for x in timings[1:turns + 1]]),
            "cell_us": med([r["duration_us"] for r in res[1:]]),
            "over_us": med(over), "over_p99_us": pct(over, 99),
            "over_first20_us": med(over[:20]), "over_last20_us": med(over[-20:]),
            "over_first50_us": med(over[:50]), "over_last50_us": med(over[-50:]),
            "cpu_us": (cpu1 - cpu0) / 1e3 / turns if cpu0 and cpu1 else None,
            "last_request_bytes": timings[-1]["bytes"],
            "total_s": t1 - t0, "hwm_kb": hwm, "maxrss_kb": ru.ru_maxrss, "sandbox_hwm_kb": py_hwm}


# ------------------------------------------------------------ the peer

def sse_tool_code(resp):
    """The tool call's code (or None) from an OpenAI SSE body."""
    args, text = "", ""
    for line in resp.split(b"\n"):
        if not line.startswith(b"data: ") or line == b"data: [DONE]":
            continue
        for ch in json.loads(line[6:]).get("choices", []):
            d = ch.get("delta", {})
            text += d.get("content") or ""
            for tc in d.get("tool_calls") or []:
                args += tc.get("function", {}).get("arguments", "")
    return (json.loads(args)["code"] if args else None), text


def run_peer(turns, tmp):
    import http.client
    from jupyter_client.manager import KernelManager
    os.environ["IPYTHONDIR"] = os.path.join(tmp, "ipython")
    os.environ["JUPYTER_RUNTIME_DIR"] = os.path.join(tmp, "jrt")
    os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    srv = Server(turns, tmp, "peer")
    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=tmp)
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    kc.stop_channels()
    shell = km.connect_shell()
    sess = km.session
    conn = http.client.HTTPConnection("127.0.0.1", srv.port)
    msgs = [{"role": "system", "content": "You run Python."},
            {"role": "user", "content": "Count to %d." % turns}]
    tool = [{"type": "function", "function": {"name": "python_exec", "parameters": {
        "type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}}}]
    walls, cells, text = [], [], ""
    cpu0 = cpu1 = None
    try:
        for i in range(turns + 2):
            if i == 1:
                cpu0 = time.process_time_ns()
            if i == turns + 1:
                cpu1 = time.process_time_ns()
            t = time.perf_counter()
            body = json.dumps({"model": "fake", "stream": True, "messages": msgs,
                               "tools": tool})
            conn.request("POST", "/v1/chat/completions", body,
                         {"content-type": "application/json",
                          "authorization": "Bearer sk-bench"})
            code, text = sse_tool_code(conn.getresponse().read())
            if code is None:
                break
            tc = time.perf_counter()
            sent = sess.send(shell, "execute_request", {
                "code": code, "silent": False, "store_history": True,
                "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
            while True:
                _, m = sess.recv(shell, mode=0)
                if m["parent_header"].get("msg_id") == sent["header"]["msg_id"]:
                    break
            cells.append((time.perf_counter() - tc) * 1e6)
            msgs.append({"role": "assistant", "content": None, "tool_calls": [{
                "id": "call_%d" % i, "type": "function",
                "function": {"name": "python_exec", "arguments": json.dumps({"code": code})}}]})
            msgs.append({"role": "tool", "tool_call_id": "call_%d" % i,
                         "content": m["content"]["status"]})
            walls.append((time.perf_counter() - t) * 1e6)
        timings = srv.timings()
    finally:
        shell.close(linger=0)
        km.shutdown_kernel(now=True)
        srv.stop()
    assert text == "x is %d" % turns, text
    over = [walls[i] - timings[i]["us"] - cells[i] for i in range(1, turns + 1)]
    return {"wall_us": med(walls[1:]), "server_us": med([x["us"] for x in timings[1:turns + 1]]),
            "cell_us": med(cells[1:]), "over_us": med(over), "over_p99_us": pct(over, 99),
            "over_first20_us": med(over[:20]), "over_last20_us": med(over[-20:]),
            "cpu_us": (cpu1 - cpu0) / 1e3 / turns if cpu0 and cpu1 else None}


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--serve":
        serve(int(sys.argv[2]), sys.argv[3])
        return
    if len(sys.argv) == 4 and sys.argv[1] == "--serve-specs":  # bench/tui.py's
        with open(sys.argv[2]) as f:
            serve(0, sys.argv[3], encode_answers(json.load(f)))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--turns", type=int, default=200, help="tool-call turns (200)")
    ap.add_argument("--mem-turns", type=int, default=1000,
                    help="turns of the memory session (1000; 0: none)")
    ap.add_argument("--json", help="also write the figures as JSON to this file")
    a = ap.parse_args()
    if not os.access(TERP, os.X_OK):
        sys.exit("agent.py: build terp first (make)")
    tmp = tempfile.mkdtemp(prefix="terp-bench-agent-")
    os.chmod(tmp, 0o755)  # see kernel.py: keeps the sandbox folders in here
    try:
        t = run_terp(a.turns, tmp)
        p = run_peer(a.turns, tmp)
        m = run_terp(a.mem_turns, tmp) if a.mem_turns > 0 else None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("agent: one model call + one `x += 1` cell per turn, %d turns, instant fake model"
          % a.turns)
    print("  %-26s %9s %9s %9s %9s %9s %11s" % ("per turn (median, us)", "wall", "server",
                                               "cell", "overhead", "ovh p99", "first/last20"))
    for name, r in (("terp -p", t), ("peer: Python + ipykernel", p)):
        print("  %-26s %9.0f %9.0f %9.0f %9.0f %9.0f %5.0f/%-5.0f" % (
            name, r["wall_us"], r["server_us"], r["cell_us"], r["over_us"], r["over_p99_us"],
            r["over_first20_us"], r["over_last20_us"]))
    print("  own CPU per turn (the harness alone, not the model or the kernel): terp %s us,"
          " peer %s us" % tuple("%.0f" % r["cpu_us"] if r["cpu_us"] else "-" for r in (t, p)))
    print("  last request body: %d bytes; terp wall time for the session: %.2f s"
          % (t["last_request_bytes"], t["total_s"]))
    print("  peak RSS of terp over the session: %s KB (VmHWM), %d KB (wait4 ru_maxrss);"
          % (t["hwm_kb"], t["maxrss_kb"]))
    print("  the sandbox's Python, pandas & co loaded: %s KB (VmHWM)" % t["sandbox_hwm_kb"])
    rm = t["over_us"] / p["over_us"]
    r99 = t["over_p99_us"] / p["over_p99_us"]
    print("targets: terp overhead %.2fx the peer's (median), %.2fx (p99) <= %.1fx: %s, %s"
          % (rm, r99, TARGET_RATIO, "ok" if rm <= TARGET_RATIO else "MISS",
             "ok" if r99 <= TARGET_RATIO else "MISS"))
    if m:
        print("agent: memory over a %d-turn session (one -p question)" % a.mem_turns)
        print("  terp's own peak RSS: %.1f MB (VmHWM; wait4 ru_maxrss %.1f MB); "
              "last request body %d KB; %.1f s"
              % (m["hwm_kb"] / 1024.0, m["maxrss_kb"] / 1024.0,
                 m["last_request_bytes"] // 1024, m["total_s"]))
        print("  overhead per turn: median %.0f us, p99 %.0f us; first 50 turns %.0f us, "
              "last 50 %.0f us; terp's CPU per turn %s us"
              % (m["over_us"], m["over_p99_us"], m["over_first50_us"], m["over_last50_us"],
                 "%.0f" % m["cpu_us"] if m["cpu_us"] else "-"))
        print("target: %.1f MB < %.0f MB: %s" % (m["hwm_kb"] / 1024.0, MEM_TARGET_MB,
              "ok" if m["hwm_kb"] / 1024.0 < MEM_TARGET_MB else "MISS"))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"terp": t, "peer": p, "mem": m, "mem_turns": a.mem_turns}, f, indent=1)


if __name__ == "__main__":
    main()
