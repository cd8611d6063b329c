"""The Jupyter server backend (src/kernel/jupyter/kernel_jupyter.c, src/net/ws.c) against a
real Jupyter Server (Debian's python3-jupyter-server and python3-ipykernel)
started here on a loopback port with a token and a temporary root, and
against a hostile fake (fake_jupyter.py). Driven through
build/jupyter-harness (ASan+UBSan), which prints the backend's callbacks
as JSON lines; terp's CLI does not reach this backend yet."""
import base64
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

from conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "build" / "jupyter-harness"
FAKE = Path(__file__).resolve().parent / "fake_jupyter.py"
PY = "/usr/bin/python3"
TOKEN = "terp-test-token"
# Bounds on waiting for an event that must come; generous, so that ASan
# and a loaded machine do not turn slowness into failures.
WAIT = 180

TOKEN_LINE = "the Jupyter server refused the token: check JUPYTER_TOKEN (or --sandbox-token-env, --sandbox-token-cmd)"


@pytest.fixture(scope="module")
def harness_bin():
    r = subprocess.run([PY, "-c", "import jupyter_server, ipykernel"], capture_output=True)
    if r.returncode != 0:
        pytest.fail("python3-jupyter-server or python3-ipykernel is missing: "
                    "run make integration (scripts/deps.sh installs them)", pytrace=False)
    subprocess.run(["make", "-s", "build/jupyter-harness"], cwd=ROOT, check=True)
    return HARNESS


def jupyter_env(base):
    """Jupyter's and IPython's folders inside base, not the machine's."""
    e = dict(os.environ)
    for k, sub in [("HOME", "home"), ("JUPYTER_CONFIG_DIR", "jcfg"),
                   ("JUPYTER_DATA_DIR", "jdata"), ("JUPYTER_RUNTIME_DIR", "jrun"),
                   ("IPYTHONDIR", "ipy"), ("MPLCONFIGDIR", "mpl")]:
        e[k] = str(base / sub)
        os.makedirs(e[k], exist_ok=True)
    e.pop("JUPYTER_TOKEN", None)
    e.pop("MPLBACKEND", None)
    return e


class Server:
    """A Jupyter Server on 127.0.0.1:port, ready when it says it runs."""

    def __init__(self, base, port=None, token=TOKEN, tls=None):
        self.base = Path(base)
        self.root = self.base / "root"
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.token = token
        self.url = "%s://127.0.0.1:%d" % ("https" if tls else "http", self.port)
        self.log = []
        extra = ["--ServerApp.certfile=" + str(tls[0]), "--ServerApp.keyfile=" + str(tls[1])] \
            if tls else []
        self.p = subprocess.Popen(
            [PY, "-m", "jupyter_server", "--ServerApp.token=" + token,
             "--ServerApp.port=%d" % self.port, "--ServerApp.port_retries=0",
             "--ServerApp.ip=127.0.0.1", "--ServerApp.root_dir=" + str(self.root),
             "--ServerApp.open_browser=False", "--allow-root", *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env=jupyter_env(self.base), start_new_session=True)
        ready = threading.Event()

        def read():
            for line in self.p.stderr:
                self.log.append(line)
                if "is running at" in line:
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        ready.wait(WAIT)
        if self.p.poll() is not None or not ready.is_set():
            self.stop()
            pytest.fail("the Jupyter server did not start:\n" + "".join(self.log[-20:]),
                        pytrace=False)

    def rest(self, method, path, body=None):
        req = urllib.request.Request(
            self.url + path, method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": "token " + self.token})
        with urllib.request.urlopen(req, timeout=WAIT) as r:
            d = r.read()
            return json.loads(d) if d else None

    def kill(self):
        """Gone at once, as a crashed or rebooted server is (its kernels
        exit when they see their parent gone)."""
        if self.p.poll() is None:
            os.killpg(self.p.pid, signal.SIGKILL)
        self.p.wait()

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(WAIT)
            except subprocess.TimeoutExpired:
                self.kill()
        try:
            os.killpg(self.p.pid, signal.SIGKILL)   # kernels left by a failure
        except ProcessLookupError:
            pass


class Harness:
    def __init__(self, exe, url, out, *args, token=TOKEN):
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=1",
                   UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
        env.pop("JUPYTER_TOKEN", None)
        cmd = [str(exe), "--url", url, "--out", str(out), *args]
        if token is not None:
            cmd += ["--token", token]
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)
        self.q = queue.Queue()
        self.events = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.q.put(json.loads(line))
        self.q.put(None)

    def send(self, **cmd):
        self.p.stdin.write(json.dumps(cmd) + "\n")
        self.p.stdin.flush()

    def next(self):
        try:
            e = self.q.get(timeout=WAIT)
        except queue.Empty:
            pytest.fail("no event from the harness in %d s; so far: %s" % (WAIT, self.events[-20:]))
        if e is None:
            pytest.fail("the harness ended: %s\nstderr: %s" % (self.events[-20:], self.p.stderr.read()))
        self.events.append(e)
        return e

    def until(self, pred):
        while True:
            e = self.next()
            if pred(e):
                return e

    def state(self, name):
        return self.until(lambda e: e["ev"] == "state" and e["state"] == name)

    def cell(self, n, code):
        """Runs code as cell n; returns its result with the cell's
        stdout, stderr and artifacts."""
        self.send(op="run", n=n, code=code)
        return self.collect(n)

    def collect(self, n):
        out, err, arts = [], [], []
        while True:
            e = self.next()
            if e.get("cell") != n:
                continue
            if e["ev"] == "output":
                (err if e["stream"] else out).append(e["text"])
            elif e["ev"] == "artifact":
                arts.append(e)
            elif e["ev"] == "result":
                e["out"], e["err"], e["artifacts"] = "".join(out), "".join(err), arts
                return e

    def quit(self):
        """Quits; the harness must exit 0 with nothing on stderr (no
        sanitizer report)."""
        self.send(op="quit")
        rc = self.p.wait(WAIT)
        err = self.p.stderr.read()
        assert rc == 0 and "Sanitizer" not in err and "runtime error" not in err, err


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("jupyter"))
    yield s
    s.stop()


@pytest.fixture
def sales(tmp_path):
    p = tmp_path / "sales.csv"
    p.write_text("month,channel,revenue,marketing\n"
                 "2024-01,web,1200,300\n2024-01,store,900,100\n"
                 "2024-02,web,1500,500\n2024-02,store,1100,150\n")
    return p


def test_analysis_chart_and_out_files(harness_bin, server, tmp_path, sales):
    out = tmp_path / "out"
    h = Harness(harness_bin, server.url, out, "--data", str(sales))
    iso = h.next()
    assert iso["ev"] == "isolation" and "isolation" in iso["text"]
    ready = h.state("ready")
    assert "connected" in ready["msg"]

    r = h.cell(1, "import pandas as pd\ndf = pd.read_csv('data/sales.csv')\n"
                  "df['rpd'] = df.revenue / df.marketing\nprint(df.groupby('channel').rpd.max())\n"
                  "len(df)")
    assert r["status"] == "ok", r
    assert "store" in r["out"] and "9.0" in r["out"]
    assert r["value"] == "4"

    r = h.cell(2, "def f():\n    return 1 / 0\nf()")
    assert r["status"] == "error" and r["ename"] == "ZeroDivisionError"
    assert "return 1 / 0" in r["traceback"] and "\x1b" not in r["traceback"]

    r = h.cell(3, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [3, 1, 2])\nplt.show()")
    assert r["status"] == "ok", r
    assert len(r["artifacts"]) == 1, r
    png = Path(r["artifacts"][0]["path"])
    assert png.parent == out and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    r = h.cell(4, "open('out/report.txt', 'w').write(str(df.revenue.sum()))")
    assert [a["name"] for a in r["artifacts"]] == ["report.txt"], r
    assert (out / "report.txt").read_text() == "4700"

    # Nothing new in out/: nothing fetched; a changed file comes again.
    r = h.cell(5, "x = 1")
    assert r["status"] == "ok" and r["artifacts"] == []
    r = h.cell(6, "open('out/report.txt', 'w').write('changed')")
    assert [a["name"] for a in r["artifacts"]] == ["report.txt"]
    assert (out / "report.txt").read_text() == "changed"

    # A file staged mid-session is there for the next cell.
    more = tmp_path / "more.csv"
    more.write_text("a\n1\n2\n")
    h.send(op="stage", path=str(more))
    staged = h.until(lambda e: e["ev"] in ("staged", "error"))
    assert staged == {"ev": "staged", "path": "data/more.csv"}
    r = h.cell(7, "pd.read_csv('data/more.csv').a.sum() + len(df)")
    assert r["status"] == "ok" and r["value"] == "7", r

    # A file over the 4 MiB upload chunk goes up in chunks, whole.
    big = tmp_path / "big.bin"
    blob = os.urandom(9 << 20)
    big.write_bytes(blob)
    h.send(op="stage", path=str(big))
    assert h.until(lambda e: e["ev"] in ("staged", "error"))["path"] == "data/big.bin"
    r = h.cell(8, "import hashlib\nhashlib.sha256(open('data/big.bin', 'rb').read()).hexdigest()")
    assert r["value"] == repr(__import__("hashlib").sha256(blob).hexdigest()), r
    h.quit()
    # The kernel is shut down when the backend is freed.
    assert server.rest("GET", "/api/kernels") == []


def test_interrupt_keeps_state(harness_bin, server, tmp_path):
    h = Harness(harness_bin, server.url, tmp_path / "out")
    h.state("ready")
    assert h.cell(1, "x = 41")["status"] == "ok"
    h.send(op="run", n=2, code="import time\nprint('sleeping', flush=True)\ntime.sleep(600)")
    h.until(lambda e: e["ev"] == "output" and "sleeping" in e["text"])
    h.send(op="interrupt")
    r = h.collect(2)
    assert r["status"] == "interrupted" and not r["state_lost"], r
    assert r["reason"] == "interrupted; the session kept its state"
    r = h.cell(3, "x + 1")
    assert r["value"] == "42"
    h.quit()


def test_ignored_interrupt_restarts_the_kernel(harness_bin, server, tmp_path):
    """A cell past its time limit that swallows KeyboardInterrupt: after
    the grace the kernel is restarted and the state reported lost."""
    h = Harness(harness_bin, server.url, tmp_path / "out", "--timeout", "1000", "--grace", "500")
    h.state("ready")
    h.cell(1, "x = 1")
    r = h.cell(2, "import time\nwhile True:\n    try:\n        time.sleep(100)\n"
                  "    except KeyboardInterrupt:\n        pass")
    assert r["status"] == "timeout" and r["state_lost"], r
    assert "restarted" in r["reason"]
    ready = h.state("ready")
    assert ready.get("state_lost") is True and ready.get("restarted") is True, ready
    r = h.cell(3, "x")
    assert r["ename"] == "NameError"
    h.quit()


def test_restart_loses_state(harness_bin, server, tmp_path):
    h = Harness(harness_bin, server.url, tmp_path / "out")
    h.state("ready")
    h.cell(1, "x = 1")
    h.send(op="run", n=2, code="import time\nprint('go', flush=True)\ntime.sleep(600)")
    h.send(op="run", n=3, code="print('never')")
    h.until(lambda e: e["ev"] == "output" and e["text"] == "go\n")
    h.send(op="restart")
    r2 = h.collect(2)
    assert r2["status"] == "interrupted" and r2["state_lost"], r2
    r3 = h.collect(3)
    assert r3["status"] == "interrupted" and "not run" in r3["reason"], r3
    ready = h.state("ready")
    assert ready["msg"].startswith("restarted the Jupyter kernel; its state")
    r = h.cell(4, "x")
    assert r["ename"] == "NameError"
    h.quit()


def test_culled_kernel_is_replaced(harness_bin, server, tmp_path):
    """The server deletes the kernel (culling): the backend notices, starts
    a new one and says the state was lost."""
    h = Harness(harness_bin, server.url, tmp_path / "out")
    h.state("ready")
    h.cell(1, "x = 1")
    h.send(op="info")
    kid = h.until(lambda e: e["ev"] == "info")["kernel_id"]
    server.rest("DELETE", "/api/kernels/" + kid)
    # The server says nothing on the socket; the next cell finds out,
    # and runs on the new kernel (it never ran on the old one).
    r = h.cell(2, "x")
    assert r["ename"] == "NameError", r
    gone = [e for e in h.events if e["ev"] == "state" and e["state"] == "starting"]
    assert gone and "is gone" in gone[-1]["msg"], h.events[-8:]
    assert any(e["ev"] == "state" and e["state"] == "ready" and e.get("state_lost")
               for e in h.events)
    h.quit()


class Relay:
    """A TCP relay in front of the server whose connections the test can
    cut (a dropped network path), while new ones still go through."""

    def __init__(self, port):
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.port = self.lsock.getsockname()[1]
        self.target = port
        self.conns = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            s = socket.create_connection(("127.0.0.1", self.target))
            with self.lock:
                self.conns.append((c, s))
            for a, b in ((c, s), (s, c)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a, b):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                b.sendall(d)
        except OSError:
            pass
        for x in (a, b):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        with self.lock:
            conns, self.conns = self.conns, []
        for c, s in conns:
            for x in (c, s):
                try:
                    x.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                x.close()

    def close(self):
        self.lsock.close()
        self.cut()


def test_dropped_connection_reconnects_and_keeps_state(harness_bin, server, tmp_path):
    relay = Relay(server.port)
    try:
        h = Harness(harness_bin, "http://127.0.0.1:%d" % relay.port, tmp_path / "out")
        h.state("ready")
        h.cell(1, "x = 1")
        go = server.root / "go"
        h.send(op="run", n=2, code="import os, time\nprint('waiting', flush=True)\n"
                                   "while not os.path.exists(%r):\n    time.sleep(0.02)\n"
                                   "print('done')\nx + 1" % str(go))
        h.until(lambda e: e["ev"] == "output" and e["text"] == "waiting\n")
        relay.cut()
        lost = h.until(lambda e: e["ev"] == "state" and e["state"] == "starting")
        assert "lost the connection" in lost["msg"] and "reconnecting" in lost["msg"]
        go.write_text("")
        r = h.collect(2)
        assert r["status"] == "ok" and r["value"] == "2" and "done" in r["out"], r
        r = h.cell(3, "x")
        assert r["value"] == "1"
        assert any(e["ev"] == "state" and "its state was kept" in (e["msg"] or "")
                   for e in h.events)
        h.quit()
    finally:
        relay.close()


def test_server_gone_mid_cell_then_back(harness_bin, tmp_path):
    """The server dies mid-cell: the cell ends with its state lost and the
    backend says it lost the server, in one line; when a server answers
    there again, the next cell starts a new kernel and says so."""
    s = Server(tmp_path / "srv")
    try:
        h = Harness(harness_bin, s.url, tmp_path / "out")
        h.state("ready")
        h.cell(1, "x = 1")
        h.send(op="run", n=2, code="import time\nprint('sleeping', flush=True)\ntime.sleep(600)")
        h.until(lambda e: e["ev"] == "output" and e["text"] == "sleeping\n")
        s.kill()
        r = h.collect(2)
        assert r["status"] == "crashed" and r["state_lost"], r
        dead = h.state("dead")
        assert dead["msg"].startswith("lost the connection to the Jupyter server")
        assert "\n" not in dead["msg"]
        s = Server(tmp_path / "srv", port=s.port)
        r = h.cell(3, "x")
        assert r["ename"] == "NameError", r
        assert any(e["ev"] == "state" and e["state"] == "ready" and e.get("state_lost")
                   for e in h.events)
        h.quit()
    finally:
        s.stop()


def test_wrong_token_one_line(harness_bin, server, tmp_path):
    h = Harness(harness_bin, server.url, tmp_path / "out", token="not-the-token")
    dead = h.state("dead")
    assert dead["msg"] == TOKEN_LINE
    h.quit()


def test_no_token_one_line(harness_bin, server, tmp_path):
    h = Harness(harness_bin, server.url, tmp_path / "out", token=None)
    assert h.state("dead")["msg"] == TOKEN_LINE
    h.quit()


def test_redirect_to_login_is_a_refused_token(harness_bin, fake, tmp_path):
    h = Harness(harness_bin, fake, tmp_path / "out", token="to-login")
    assert h.state("dead")["msg"] == TOKEN_LINE
    h.quit()


def test_missing_kernel_lists_kernelspecs(harness_bin, server, tmp_path):
    h = Harness(harness_bin, server.url, tmp_path / "out", "--kernel", "nope")
    dead = h.state("dead")
    assert dead["msg"] == "the Jupyter server has no kernel named 'nope'; it has: python3", dead
    h.quit()


def test_unreachable_server_one_line(harness_bin, tmp_path):
    port = free_port()
    h = Harness(harness_bin, "http://127.0.0.1:%d/base" % port, tmp_path / "out")
    dead = h.state("dead")
    assert dead["msg"].startswith("cannot reach the Jupyter server at jupyter 127.0.0.1:%d/base: "
                                  % port), dead
    assert "\n" not in dead["msg"]
    h.quit()


def test_stop_then_run_starts_a_new_kernel(harness_bin, server, tmp_path):
    h = Harness(harness_bin, server.url, tmp_path / "out")
    h.state("ready")
    h.cell(1, "x = 1")
    h.send(op="info")
    old = h.until(lambda e: e["ev"] == "info")["kernel_id"]
    h.send(op="stop", reason="idle for 30 min")
    st = h.state("stopped")
    assert st["msg"] == "idle for 30 min"
    h.send(op="run", n=2, code="x")
    starting = h.state("starting")
    assert "stopped (idle for 30 min)" in starting["msg"]
    r = h.collect(2)
    assert r["ename"] == "NameError"
    ids = [k["id"] for k in server.rest("GET", "/api/kernels")]
    assert old not in ids
    h.quit()


def test_https_and_wss_with_the_servers_ca(harness_bin, tmp_path):
    """REST over https and the kernel channels over wss (TLS by libcurl,
    as for the model APIs), checked against the CA given; without it the
    self-signed certificate is refused in one line."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", str(key), "-out", str(cert)], capture_output=True)
    assert r.returncode == 0, r.stderr
    s = Server(tmp_path / "srv", tls=(cert, key))
    try:
        h = Harness(harness_bin, s.url, tmp_path / "out", "--ca", str(cert))
        h.state("ready")
        r = h.cell(1, "print('over tls')\n6 * 7")
        assert r["value"] == "42" and r["out"] == "over tls\n", r
        h.quit()
        h = Harness(harness_bin, s.url, tmp_path / "out")
        dead = h.state("dead")
        assert dead["msg"].startswith("cannot reach the Jupyter server at jupyter 127.0.0.1:")
        assert "certificate" in dead["msg"] and "\n" not in dead["msg"], dead
        h.quit()
    finally:
        s.stop()


# ---------------------------------------------------------------- hostile server

@pytest.fixture
def fake(tmp_path):
    port = free_port()
    p = subprocess.Popen([PY, str(FAKE), str(port), TOKEN], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "listening"
    yield "http://127.0.0.1:%d" % port
    p.kill()
    p.wait()


def test_a_cell_after_a_restart_waits_for_iopub(harness_bin, tmp_path):
    """After a restart the server's iopub may miss the first messages of
    the new kernel: the start sequence's check is sent again until iopub
    answers, so the next cell is not sent into the gap (where it got its
    reply but never its idle, and ran until its time limit)."""
    port = free_port()
    p = subprocess.Popen([PY, str(FAKE), str(port), TOKEN], stdout=subprocess.PIPE, text=True,
                         env=dict(os.environ, FAKE_JUPYTER_SLOW_JOINER="3"))
    try:
        assert p.stdout.readline().strip() == "listening"
        h = Harness(harness_bin, "http://127.0.0.1:%d" % port, tmp_path / "out",
                    "--timeout", "30000")
        h.state("ready")
        assert h.cell(1, "print(1)")["status"] == "ok"
        h.send(op="restart")
        h.state("ready")
        r = h.cell(2, "print(2)")
        assert r["status"] == "ok", r
        h.quit()
    finally:
        p.kill()
        p.wait()


def test_remote_texts_are_capped_and_tiny_streams_coalesced(harness_bin, fake, tmp_path):
    """A server's result texts are cut at 256 KiB as the local kernel's
    are, where they arrive; 20,000 one-byte stream messages reach terp
    (and its journal) as a few outputs, every byte in order."""
    h = Harness(harness_bin, fake, tmp_path / "out")
    h.state("ready")
    r = h.cell(1, "tiny")
    assert r["status"] == "ok" and r["out"] == "ab" * 10000, r["out"][:100]
    outs = [e for e in h.events if e["ev"] == "output" and e.get("cell") == 1]
    assert len(outs) <= 200, len(outs)
    r = h.cell(2, "huge")
    cut = "... [cut by terp at 256 KiB]"
    for k in ("value", "ename", "evalue", "traceback"):
        v = r.get(k) or ""
        assert v.endswith(cut) and len(v.encode()) <= (256 << 10) + len(cut), (k, len(v))
    h.quit()


def test_hostile_server_is_bounded_and_sanitized(harness_bin, fake, tmp_path):
    work = tmp_path / "work"
    out = work / "out"
    h = Harness(harness_bin, fake, out, "--max-msg", str(1 << 20),
                "--artifact-max", str(1 << 20))
    h.state("ready")

    r = h.cell(1, "oversized")
    assert r["status"] == "ok"
    assert "A" * 100 not in r["out"] and r["out"] == "after\n", r["out"][:200]
    assert "was skipped: the limit is 1 MiB" in r["err"]

    r = h.cell(2, "malformed")
    # text 5, name null: mistyped, dropped; "ghost" answers another request
    assert r["out"] == "survived\n", r
    assert r["status"] == "error" and r["ename"] == "Error"   # ename 7: not a string

    r = h.cell(3, "names")
    names = sorted(a["name"] for a in r["artifacts"])
    for a in r["artifacts"]:
        assert Path(a["path"]).parent == out
    assert "ok.txt" in names and (out / "ok.txt").read_bytes() == b"ok"
    for n in names:
        assert all(c.isalnum() or c in "._-" for c in n) and not n.startswith("."), n
    # nothing landed outside out/
    assert sorted(p.name for p in work.iterdir()) == ["out"]
    assert sorted(p.name for p in out.iterdir()) == names
    assert r["err"].count("not a plain file name") >= 3, r["err"]

    r = h.cell(4, "bigfile")
    assert r["artifacts"] == []
    assert "big.bin not copied: too large" in r["err"]
    assert "huge.bin not copied: too large" in r["err"]
    assert "badb64.bin not copied: the server sent data that is not base64" in r["err"]

    r = h.cell(5, "notpng")
    assert "is not a PNG" in r["err"]
    assert [a["name"] for a in r["artifacts"]] == ["figure-5-1.png"] or \
        [a["name"] for a in r["artifacts"]] == ["figure-5-2.png"]

    r = h.cell(6, "flood")
    assert "more than 1000 entries" in r["err"]
    h.quit()
