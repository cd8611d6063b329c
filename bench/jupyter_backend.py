#!/usr/bin/python3
"""bench/jupyter_backend.py: terp's Jupyter server backend
(src/kernel/jupyter/kernel_jupyter.c through build/jupyter-bench) against a Python
WebSocket client (tornado's, which Jupyter Server itself is built on),
both on kernels of one Jupyter Server started here on loopback.

  round trip  `x += 1` N times (default 500) on one kernel each. Both sides
              count a cell done when its execute_reply came and iopub went
              idle for it (what a notebook needs before the next cell).
              terp: from this script writing the run command to reading the
              result line (pipe and JSON included), and the backend's own
              duration (execute_request queued to result); peer: its
              write_message to the idle. The two alternate in blocks of 50
              so that a slow patch of the machine hits both. A second
              peer sets TCP_QUICKACK as terp's ws.c does (Jupyter Server
              leaves Nagle on, so a client that delays its ACKs waits 40 ms
              per cell): the like-for-like comparison of the clients.
  client cost the same against tests/integration/fake_jupyter.py, a server
              that answers at once (no kernel): what each client itself
              adds per cell.

Target (issue 13 §5): terp's median within 10% of the peer's.
Usage: /usr/bin/python3 bench/jupyter_backend.py [--iters N] [--json FILE]
Builds build/jupyter-bench when missing (make).
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "build", "jupyter-bench")
FAKE = os.path.join(ROOT, "tests", "integration", "fake_jupyter.py")
PY = "/usr/bin/python3"
TOKEN = "terp-bench-token"
BLOCK = 50


def pct(xs, p):
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def start_server(base):
    port = free_port()
    env = dict(os.environ)
    for k in ("HOME", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR",
              "IPYTHONDIR", "MPLCONFIGDIR"):
        env[k] = os.path.join(base, k.lower())
        os.makedirs(env[k], exist_ok=True)
    root = os.path.join(base, "root")
    os.makedirs(root)
    p = subprocess.Popen(
        [PY, "-m", "jupyter_server", "--ServerApp.token=" + TOKEN,
         "--ServerApp.port=%d" % port, "--ServerApp.port_retries=0",
         "--ServerApp.ip=127.0.0.1", "--ServerApp.root_dir=" + root,
         "--ServerApp.open_browser=False", "--allow-root"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    for line in p.stderr:
        if "is running at" in line:
            break
    else:
        sys.exit("jupyter_backend.py: the Jupyter server did not start")
    threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
    return p, "http://127.0.0.1:%d" % port


class Terp:
    def __init__(self, url, out):
        self.p = subprocess.Popen([BENCH, "--url", url, "--token", TOKEN, "--out", out],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.n = 0
        while True:
            e = self.ev()
            if e["ev"] == "state" and e["state"] in ("ready", "dead"):
                if e["state"] == "dead":
                    sys.exit("jupyter_backend.py: terp's backend: " + e["msg"])
                break

    def ev(self):
        return json.loads(self.p.stdout.readline())

    def cell(self, code):
        self.n += 1
        t = time.perf_counter()
        self.p.stdin.write(json.dumps({"op": "run", "n": self.n, "code": code}) + "\n")
        self.p.stdin.flush()
        while True:
            e = self.ev()
            if e["ev"] == "result":
                wall = (time.perf_counter() - t) * 1e6
                if e["status"] != "ok":
                    sys.exit("jupyter_backend.py: terp's cell failed: %s" % e)
                return wall, e["us"]

    def close(self):
        self.p.stdin.write('{"op":"quit"}\n')
        self.p.stdin.flush()
        self.p.wait()


class Peer:
    """execute_request over the kernel's channels with tornado's client."""

    def __init__(self, url, quickack=False):
        from tornado import httpclient, ioloop, websocket
        self.quickack = quickack
        self.loop = ioloop.IOLoop()
        self.url = url
        self.kid = self.rest("POST", "/api/kernels", {"name": "python3"})["id"]
        self.session = uuid.uuid4().hex
        req = httpclient.HTTPRequest(
            url.replace("http", "ws", 1) + "/api/kernels/%s/channels?session_id=%s"
            % (self.kid, self.session), headers={"Authorization": "token " + TOKEN})
        self.ws = self.loop.run_sync(lambda: websocket.websocket_connect(req))

    def rest(self, method, path, body=None):
        r = urllib.request.Request(self.url + path, method=method,
                                   data=None if body is None else json.dumps(body).encode(),
                                   headers={"Authorization": "token " + TOKEN})
        with urllib.request.urlopen(r) as f:
            d = f.read()
            return json.loads(d) if d else None

    async def _run(self, code):
        mid = uuid.uuid4().hex
        await self.ws.write_message(json.dumps({
            "header": {"msg_id": mid, "session": self.session, "username": "peer", "date": "",
                       "msg_type": "execute_request", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True,
                        "user_expressions": {}, "allow_stdin": False, "stop_on_error": False}}))
        reply = idle = False
        while not (reply and idle):
            m = json.loads(await self.ws.read_message())
            if self.quickack:
                self.ws.stream.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
            if m.get("parent_header", {}).get("msg_id") != mid:
                continue
            t = m["header"]["msg_type"]
            if t == "execute_reply":
                reply = True
            elif t == "status" and m["content"]["execution_state"] == "idle":
                idle = True

    def cell(self, code):
        t = time.perf_counter()
        self.loop.run_sync(lambda: self._run(code))
        return (time.perf_counter() - t) * 1e6

    def close(self):
        import asyncio
        self.ws.close()
        # lets the client's read loop see the close before the loop goes
        self.loop.run_sync(lambda: asyncio.sleep(0.05))
        self.rest("DELETE", "/api/kernels/" + self.kid)
        self.loop.close()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def measure(url, out, iters):
    terp, peer, qpeer = Terp(url, out), Peer(url), Peer(url, quickack=True)
    terp.cell("x = 0")
    peer.cell("x = 0")
    qpeer.cell("x = 0")
    tw, tin, pw, qw = [], [], [], []
    done = 0
    while done < iters:
        k = min(BLOCK, iters - done)
        for _ in range(k):
            w, us = terp.cell("x += 1")
            tw.append(w)
            tin.append(us)
        for _ in range(k):
            pw.append(peer.cell("x += 1"))
        for _ in range(k):
            qw.append(qpeer.cell("x += 1"))
        done += k
    terp.close()
    peer.close()
    qpeer.close()
    return {"terp": tw, "terp_inside": tin, "peer": pw, "peer_quickack": qw}


def show(title, r):
    print(title)
    print("%-44s %10s %10s" % ("", "median", "p99"))
    for k, label in (("terp", "terp backend (script to result line)"),
                     ("terp_inside", "terp backend (inside: queued to result)"),
                     ("peer", "peer: tornado WebSocket client"),
                     ("peer_quickack", "peer + TCP_QUICKACK after each read")):
        print("%-44s %7.0f us %7.0f us" % (label, pct(r[k], 50), pct(r[k], 99)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=500)
    ap.add_argument("--json")
    a = ap.parse_args()
    if not os.path.exists(BENCH):
        subprocess.run(["make", "-s", "build/jupyter-bench"], cwd=ROOT, check=True)
    with tempfile.TemporaryDirectory(prefix="terp-jbench-") as base:
        os.chmod(base, 0o755)  # see kernel.py: the sandbox folders stay in here
        srv, url = start_server(base)
        try:
            real = measure(url, os.path.join(base, "out"), a.iters)
        finally:
            srv.terminate()
            srv.wait()
        port = free_port()
        fake = subprocess.Popen([PY, FAKE, str(port), TOKEN], stdout=subprocess.PIPE, text=True)
        try:
            if fake.stdout.readline().strip() != "listening":
                sys.exit("jupyter_backend.py: the fake server did not start")
            bare = measure("http://127.0.0.1:%d" % port, os.path.join(base, "out2"), a.iters)
        finally:
            fake.kill()
            fake.wait()
    ratio = pct(real["terp"], 50) / pct(real["peer"], 50)
    qratio = pct(real["terp"], 50) / pct(real["peer_quickack"], 50)
    show("== Jupyter backend: round trip `x += 1`, %d cells each, Jupyter Server on loopback"
         % a.iters, real)
    print("ratio terp/peer (median): %.3f  %s (within 10%%); against the peer with "
          "TCP_QUICKACK: %.3f" % (ratio, "ok" if ratio <= 1.10 else "MISS", qratio))
    print()
    show("== client cost: the same against a server that answers at once (no kernel)", bare)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({k: {"median_us": {n: pct(v, 50) for n, v in r.items()},
                           "p99_us": {n: pct(v, 99) for n, v in r.items()}}
                       for k, r in (("server", real), ("bare", bare))} |
                      {"ratio": ratio, "ratio_quickack": qratio, "iters": a.iters}, f)


if __name__ == "__main__":
    main()
