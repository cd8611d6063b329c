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

Usage: /usr/bin/python3 bench/agent.py [--turns N] [--json FILE]
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

TARGET_US = 2000.0
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
    from fake_model import encode_event, openai_events
    out = []
    for i in range(turns + 2):
        if i == 0:
            spec = {"tool_calls": [{"id": "call_0", "code": WARM}]}
        elif i <= turns:
            spec = {"tool_calls": [{"id": "call_%d" % i, "code": "x += 1"}]}
        else:
            spec = {"text": "x is %d" % turns}
        body = b"".join(encode_event(e) for e in openai_events(spec))
        head = ("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                "content-length: %d\r\n\r\n" % len(body)).encode()
        out.append(head + body)
    return out


def serve(turns, log_path):
    """One connection at a time (curl keeps one alive); answers request i
    with answers[i]; after the last, writes the timings to log_path."""
    resp = answers(turns)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(8)
    print(ls.getsockname()[1], flush=True)
    n, log = 0, []
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
            while len(buf) < clen:
                d = c.recv(1 << 16)
                if not d:
                    break
                buf += d
            body, buf = buf[:clen], buf[clen:]
            c.sendall(resp[min(n, len(resp) - 1)])
            log.append({"us": (time.perf_counter() - t0) * 1e6, "bytes": len(body)})
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
    try:
        for i in range(turns + 2):
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
            "over_first20_us": med(over[:20]), "over_last20_us": med(over[-20:])}


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--serve":
        serve(int(sys.argv[2]), sys.argv[3])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--turns", type=int, default=200, help="tool-call turns (200)")
    ap.add_argument("--json", help="also write the figures as JSON to this file")
    a = ap.parse_args()
    if not os.access(TERP, os.X_OK):
        sys.exit("agent.py: build terp first (make)")
    tmp = tempfile.mkdtemp(prefix="terp-bench-agent-")
    os.chmod(tmp, 0o755)  # see kernel.py: keeps the sandbox folders in here
    try:
        t = run_terp(a.turns, tmp)
        p = run_peer(a.turns, tmp)
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
    print("  last request body: %d bytes; terp wall time for the session: %.2f s"
          % (t["last_request_bytes"], t["total_s"]))
    print("  peak RSS of terp over the session: %s KB (VmHWM), %d KB (wait4 ru_maxrss);"
          % (t["hwm_kb"], t["maxrss_kb"]))
    print("  the sandbox's Python, pandas & co loaded: %s KB (VmHWM)" % t["sandbox_hwm_kb"])
    print("target: terp overhead %.0f us <= %.0f us per turn: %s"
          % (t["over_us"], TARGET_US, "ok" if t["over_us"] <= TARGET_US else "MISS"))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"terp": t, "peer": p}, f, indent=1)


if __name__ == "__main__":
    main()
