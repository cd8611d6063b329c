"""The egress proxy (src/egress/egress.c) alone, run by tests/integration/
egress_harness.c (ASan+UBSan) on a Unix socket, with upstream servers
on 127.0.0.1 in this process and the in-sandbox forwarder
(src/egress/egress_fwd.py) run outside the sandbox.

127.0.0.1 is loopback, which the proxy refuses unless that address is
allowed by itself: the tests allow `127.0.0.1:PORT` where an upstream must
be reached, and check that the name `localhost` (which resolves to it)
stays refused when only the name is allowed.

Timeouts below (HANG) only stop a hung test; nothing is measured against
the clock and nothing sleeps to synchronise."""
import array
import http.server
import json
import os
import queue
import select
import socket
import socketserver
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "build" / "egress-harness"
FWD = ROOT / "src" / "egress" / "egress_fwd.py"
HANG = 60


@pytest.fixture(scope="module")
def harness_bin():
    subprocess.run(["make", "-s", "build/egress-harness"], cwd=ROOT, check=True)
    return HARNESS


class Proxy:
    def __init__(self, exe, sock, args):
        self.sock = str(sock)
        env = dict(os.environ,
                   ASAN_OPTIONS="detect_leaks=1:abort_on_error=1",
                   UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
        self.p = subprocess.Popen([str(exe), "--socket", self.sock, *args],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)
        self.q = queue.Queue()
        self.pending = []       # events not yet consumed by wait_event
        self.events = []        # every event
        threading.Thread(target=self._read, daemon=True).start()
        first = self._next()
        assert first["type"] == "ready", first
        self.tcp = int(first["tcp"]) if first["tcp"] else None

    def _read(self):
        for line in self.p.stdout:
            self.q.put(json.loads(line))
        self.q.put(None)

    def _next(self):
        o = self.q.get(timeout=HANG)
        if o is None:
            raise AssertionError("harness exited: " + self.p.stderr.read())
        if o["type"] == "event":
            self.pending.append(o)
            self.events.append(o)
        return o

    def wait_event(self, **kw):
        """The first unconsumed event whose fields equal kw."""
        while True:
            for o in self.pending:
                if all(o[k] == v for k, v in kw.items()):
                    self.pending.remove(o)
                    return o
            self._next()

    def end(self, **kw):
        return self.wait_event(phase="end", **kw)

    def cmd(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        while True:
            o = self._next()
            if o["type"] in ("ok", "error", "stats"):
                return o

    def close(self):
        self.p.stdin.close()
        while self._next()["type"] != "bye":
            pass
        rc = self.p.wait(timeout=HANG)
        err = self.p.stderr.read()
        assert rc == 0 and "Sanitizer" not in err and "runtime error" not in err, err
        assert not os.path.exists(self.sock), "egress_free left the socket"


@pytest.fixture
def proxy(harness_bin, tmp_path):
    made = []

    def start(*args):
        p = Proxy(harness_bin, tmp_path / ("egress%d.sock" % len(made)), args)
        made.append(p)
        return p
    yield start
    for p in made:
        p.close()


# ---- upstream servers --------------------------------------------------

class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, handler):
        super().__init__(("127.0.0.1", 0), handler)
        self.port = self.server_address[1]
        self.accepted = 0
        self.received = 0
        self.lock = threading.Lock()
        self.release = threading.Event()
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()

    def count(self, n):
        with self.lock:
            self.received += n

    def process_request(self, request, client_address):
        with self.lock:
            self.accepted += 1
        super().process_request(request, client_address)


class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while True:
            data = self.request.recv(65536)
            if not data:
                return
            self.server.count(len(data))
            self.request.sendall(data)


class Sink(socketserver.BaseRequestHandler):
    def handle(self):
        while True:
            data = self.request.recv(65536)
            if not data:
                return
            self.server.count(len(data))


class Stall(socketserver.BaseRequestHandler):
    """Accepts, then neither reads nor writes until released."""
    def handle(self):
        self.server.release.wait(HANG)


@pytest.fixture
def servers():
    made = []

    def start(handler):
        s = Server(handler)
        made.append(s)
        return s
    yield start
    for s in made:
        s.release.set()
        s.shutdown()
        s.server_close()


class HTTPUpstream(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        self.seen = []

        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(h):
                self.seen.append((h.requestline, dict(h.headers.items())))
                body = b"hello from upstream\n"
                h.send_response(200)
                h.send_header("Content-Length", str(len(body)))
                h.end_headers()
                h.wfile.write(body)

            def log_message(h, *a):
                pass
        super().__init__(("127.0.0.1", 0), H)
        self.port = self.server_address[1]
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()


@pytest.fixture
def http_upstream():
    s = HTTPUpstream()
    yield s
    s.shutdown()
    s.server_close()


# ---- clients -------------------------------------------------------------

def dial(p):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(HANG)
    s.connect(p.sock)
    return s


def read_head(s):
    """(status, headers, bytes after the head)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            raise AssertionError("EOF in response head: %r" % data)
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    hdrs = {k.lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
    return status, hdrs, rest


def read_all(s, rest=b""):
    data = rest
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return data
        data += chunk


def recv_exactly(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise AssertionError("EOF after %d of %d bytes" % (len(data), n))
        data += chunk
    return data


def connect(p, target):
    s = dial(p)
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
    status, hdrs, rest = read_head(s)
    return s, status, hdrs, rest


def refused(p, target, status=403):
    """CONNECTs to target and expects a refusal; returns (code, body)."""
    s, st, hdrs, rest = connect(p, target)
    body = read_all(s, rest).decode()
    s.close()
    assert st == status, (target, st, body)
    assert body.startswith("terp egress: ") and body.count("\n") == 1, body
    return hdrs["x-terp-egress"], body


def need_localhost():
    """These tests need the name localhost to resolve to loopback, as on
    every installed system (its /etc/hosts line); say so if it does not."""
    try:
        socket.getaddrinfo("localhost", None)
    except socket.gaierror as e:
        pytest.fail("this machine does not resolve localhost (%s): add "
                    "'127.0.0.1 localhost' to /etc/hosts" % e, pytrace=False)


# ---- tests -----------------------------------------------------------------

def test_connect_to_allowed_address_tunnels_and_counts_bytes(proxy, servers):
    echo = servers(Echo)
    p = proxy("--allow", "127.0.0.1:%d" % echo.port)
    s, st, _, rest = connect(p, "127.0.0.1:%d" % echo.port)
    assert st == 200 and rest == b""
    payload = os.urandom(5000)
    s.sendall(payload)
    assert recv_exactly(s, len(payload)) == payload
    opened = p.wait_event(phase="open")
    assert (opened["verdict"], opened["method"], opened["host"], opened["port"],
            opened["addr"]) == ("allowed", "CONNECT", "127.0.0.1", echo.port,
                                "127.0.0.1")
    s.shutdown(socket.SHUT_WR)
    assert read_all(s) == b""
    s.close()
    end = p.end(id=opened["id"])
    assert (end["verdict"], end["code"], end["up"], end["down"]) == \
        ("allowed", "done", 5000, 5000)
    assert p.cmd("stats")["up"] == 5000


def test_name_resolving_to_loopback_is_refused(proxy, servers):
    need_localhost()
    echo = servers(Echo)
    p = proxy("--allow", "localhost:%d" % echo.port)
    code, body = refused(p, "localhost:%d" % echo.port)
    # 127.0.0.1 (or ::1, where /etc/hosts lists it first)
    assert code == "address" and "a loopback address" in body
    ev = p.end()
    assert (ev["verdict"], ev["code"], ev["host"]) == ("refused", "address", "localhost")
    assert ev["reason"].startswith("resolves to loopback ")
    assert echo.accepted == 0


def test_name_reaches_an_address_allowed_by_itself(proxy, servers):
    need_localhost()
    echo = servers(Echo)
    p = proxy("--allow", "localhost:%d" % echo.port,
              "--allow", "127.0.0.1:%d" % echo.port)
    s, st, _, _ = connect(p, "LocalHost.:%d" % echo.port)
    assert st == 200
    s.sendall(b"ping")
    assert recv_exactly(s, 4) == b"ping"
    ev = p.wait_event(phase="open")
    assert (ev["host"], ev["addr"]) == ("localhost", "127.0.0.1")
    s.close()


@pytest.mark.parametrize("target", [
    "127.0.0.1:{port}", "127.1:{port}", "2130706433:{port}", "0x7f.0.0.1:{port}",
    "[::1]:{port}", "[::ffff:127.0.0.1]:{port}", "10.1.2.3:443",
    "169.254.169.254:80", "[fd00:ec2::254]:80"])
def test_ip_literal_is_refused(proxy, servers, target):
    echo = servers(Echo)
    p = proxy("--allow", "localhost:%d" % echo.port)
    code, _ = refused(p, target.format(port=echo.port))
    assert code == "ip-literal"
    assert p.end()["verdict"] == "refused"
    assert echo.accepted == 0


def test_other_port_on_allowed_host_is_refused(proxy, servers):
    allowed, model = servers(Echo), servers(Echo)   # model: "the fake model server"
    p = proxy("--allow", "127.0.0.1:%d" % allowed.port, "--allow", "example.invalid")
    code, body = refused(p, "127.0.0.1:%d" % model.port)
    assert code == "port" and str(model.port) in body
    assert p.end()["reason"] == "port %d not allowed" % model.port
    # a name alone allows 80 and 443 only
    assert refused(p, "example.invalid:8080")[0] == "port"
    assert refused(p, "example.invalid:443", 502)[0] == "no-resolve"
    assert model.accepted == 0


def test_names_wildcards_and_unresolvable(proxy):
    p = proxy("--allow", "*.example.invalid", "--allow", "nosuch.example.invalid:8443")
    assert refused(p, "evil.example:443")[0] == "not-allowed"
    assert p.end()["reason"] == "not allowed"
    assert refused(p, "example.invalid:443")[0] == "not-allowed"    # not the apex
    code, body = refused(p, "a.b.example.invalid:443", 502)
    assert code == "no-resolve" and "does not resolve" in body
    ev = p.end(code="no-resolve")
    assert (ev["verdict"], ev["host"]) == ("failed", "a.b.example.invalid")
    assert refused(p, "nosuch.example.invalid:8443", 502)[0] == "no-resolve"


def test_plain_http_is_forwarded_in_origin_form(proxy, http_upstream):
    port = http_upstream.port
    p = proxy("--allow", "127.0.0.1:%d" % port)
    s = dial(p)
    s.sendall(("GET http://127.0.0.1:%d/x/y?q=1#frag HTTP/1.1\r\n"
               "Host: evil.example\r\nProxy-Connection: keep-alive\r\n"
               "Proxy-Authorization: Basic c2VjcmV0\r\nX-Keep: yes\r\n\r\n"
               % port).encode())
    st, hdrs, rest = read_head(s)
    body = rest
    while len(body) < int(hdrs["content-length"]):
        body += s.recv(65536)
    assert st == 200 and body == b"hello from upstream\n"
    s.close()
    line, seen = http_upstream.seen[0]
    assert line == "GET /x/y?q=1 HTTP/1.1"
    assert seen["Host"] == "127.0.0.1:%d" % port
    assert seen["Connection"] == "close" and seen["X-Keep"] == "yes"
    assert "Proxy-Connection" not in seen and "Proxy-Authorization" not in seen
    ev = p.end()
    assert (ev["verdict"], ev["method"], ev["host"], ev["port"]) == \
        ("allowed", "GET", "127.0.0.1", port)
    assert ev["up"] > 0 and ev["down"] > len(body)


def test_plain_http_refusals(proxy):
    p = proxy("--allow", "ok.example.invalid")
    for req, status, code in [
            ("GET http://evil.example/ HTTP/1.1", 403, "not-allowed"),
            ("GET http://10.0.0.1/ HTTP/1.1", 403, "ip-literal"),
            ("GET https://ok.example.invalid/ HTTP/1.1", 400, "bad-request"),
            ("GET / HTTP/1.1", 400, "bad-request"),
            ("GET http://user@ok.example.invalid/ HTTP/1.1", 400, "bad-request"),
            ("BREW coffee://pot HTTP/1.1", 400, "bad-request"),
            ("CONNECT ok.example.invalid HTTP/1.1", 400, "bad-request"),
            ("garbage", 400, "bad-request")]:
        s = dial(p)
        s.sendall((req + "\r\nHost: x\r\n\r\n").encode())
        st, hdrs, rest = read_head(s)
        read_all(s, rest)
        s.close()
        assert (st, hdrs["x-terp-egress"]) == (status, code), req
        assert p.end()["code"] == code


def test_head_too_big_is_refused(proxy, servers):
    echo = servers(Echo)
    p = proxy("--allow", "127.0.0.1:%d" % echo.port)
    s = dial(p)
    s.sendall(("CONNECT 127.0.0.1:%d HTTP/1.1\r\n" % echo.port).encode() +
              b"X-Pad: " + b"a" * 20000 + b"\r\n\r\n")
    st, hdrs, rest = read_head(s)
    read_all(s, rest)
    assert (st, hdrs["x-terp-egress"]) == (431, "head-too-big")
    assert p.end()["code"] == "head-too-big"
    assert echo.accepted == 0


def test_bytes_up_cap_closes_tunnels_and_refuses_new_ones(proxy, servers):
    sink = servers(Sink)
    target = "127.0.0.1:%d" % sink.port
    p = proxy("--allow", target, "--max-up", "100000")
    idle, st, _, _ = connect(p, target)
    assert st == 200
    first = p.wait_event(phase="open")
    s, st, _, _ = connect(p, target)
    assert st == 200
    second = p.wait_event(phase="open")
    with pytest.raises(OSError):
        # the proxy closes the tunnel once the cap is passed
        for _ in range(100):
            s.sendall(b"x" * 10000)
    assert 0 < first["id"] < second["id"]
    for ev in (p.end(id=second["id"]), p.end(id=first["id"])):
        assert (ev["verdict"], ev["code"], ev["reason"]) == \
            ("allowed", "cap", "egress cap reached")
    assert read_all(idle) == b""
    up = p.cmd("stats")["up"]
    assert up <= 100000
    code, body = refused(p, target)
    assert code == "cap" and "--egress-max" in body
    s.close()
    idle.close()
    with sink.lock:
        assert sink.received <= 100000


def test_stalled_upstream_does_not_delay_another_connection(proxy, servers):
    stall, echo = servers(Stall), servers(Echo)
    p = proxy("--allow", "127.0.0.1:%d" % stall.port,
              "--allow", "127.0.0.1:%d" % echo.port)
    stuck, st, _, _ = connect(p, "127.0.0.1:%d" % stall.port)
    assert st == 200
    blob = b"s" * (64 << 20)
    done = threading.Event()

    def push():
        try:
            stuck.sendall(blob)     # blocks: nobody reads upstream
        except OSError:
            pass
        done.set()
    threading.Thread(target=push, daemon=True).start()
    # Round trips on a second connection while the first is stuck with
    # every buffer between it and the stalled server full.
    for _ in range(20):
        s, st, _, _ = connect(p, "127.0.0.1:%d" % echo.port)
        assert st == 200
        s.sendall(b"ping")
        assert recv_exactly(s, 4) == b"ping"
        s.close()
    assert not done.is_set(), "the stalled upstream took the whole blob"
    stuck.close()


def test_connect_timeout_is_504_and_other_connections_go_on(proxy, servers):
    echo = servers(Echo)
    # A listener whose accept queue is full: Linux drops further SYNs,
    # so a connect to it neither succeeds nor fails.
    full = socket.socket()
    full.bind(("127.0.0.1", 0))
    full.listen(0)
    port = full.getsockname()[1]
    fillers = []
    for _ in range(3):
        f = socket.socket()
        f.setblocking(False)
        f.connect_ex(("127.0.0.1", port))
        fillers.append(f)
    p = proxy("--allow", "127.0.0.1:%d" % port, "--allow", "127.0.0.1:%d" % echo.port,
              "--connect-timeout", "500")
    slow = dial(p)
    slow.sendall(("CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % port).encode())
    s, st, _, _ = connect(p, "127.0.0.1:%d" % echo.port)
    assert st == 200
    s.sendall(b"ping")
    assert recv_exactly(s, 4) == b"ping"
    s.close()
    st, hdrs, rest = read_head(slow)
    assert (st, hdrs["x-terp-egress"]) == (504, "timeout")
    ev = p.end(code="timeout")
    assert (ev["verdict"], ev["port"]) == ("failed", port)
    for f in fillers:
        f.close()
    full.close()


def test_runtime_allow_deny_and_cell_tag(proxy, servers):
    echo = servers(Echo)
    target = "127.0.0.1:%d" % echo.port
    p = proxy()
    assert refused(p, target)[0] == "ip-literal"
    assert p.end()["cell"] == 0
    assert p.cmd("allow " + target)["type"] == "ok"
    assert p.cmd("tag 7")["type"] == "ok"
    s, st, _, _ = connect(p, target)
    assert st == 200
    assert p.wait_event(phase="open")["cell"] == 7
    assert p.cmd("deny 127.0.0.1")["type"] == "ok"
    ev = p.end()
    assert (ev["verdict"], ev["code"], ev["cell"]) == ("allowed", "denied", 7)
    assert read_all(s) == b""
    s.close()
    assert refused(p, target)[0] == "denied"
    assert p.cmd("allow " + target)["type"] == "ok"
    s, st, _, _ = connect(p, target)
    assert st == 200
    s.close()
    assert p.cmd("allow http://x")["type"] == "error"
    assert p.cmd("allow *")["type"] == "error"
    assert p.cmd("allow 127.1")["type"] == "error"


def test_deny_from_inside_the_ledger_callback(proxy, servers):
    echo = servers(Echo)
    target = "127.0.0.1:%d" % echo.port
    p = proxy("--allow", target, "--deny-in-callback", "127.0.0.1")
    s = dial(p)
    s.sendall(("CONNECT %s HTTP/1.1\r\n\r\n" % target).encode())
    opened = p.wait_event(phase="open")
    ev = p.end(id=opened["id"])
    assert (ev["verdict"], ev["code"]) == ("allowed", "denied")
    read_all(s)
    s.close()
    # A refusal's callback denying again must not touch the ended attempt.
    assert refused(p, target)[0] == "denied"
    assert refused(p, "evil.example.invalid:443")[0] == "not-allowed"
    # Nor a failure's, reported while the attempt was still connecting.
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    p2 = proxy("--allow", "127.0.0.1:%d" % port, "--deny-in-callback", "127.0.0.1")
    code, body = refused(p2, "127.0.0.1:%d" % port, 502)
    assert code == "connect" and "refused" in body


def test_socket_mode_owner_and_a_handed_in_listener(proxy, servers):
    echo = servers(Echo)
    uid = 4242 if os.geteuid() == 0 else os.getuid()    # chown needs root
    p = proxy("--socket-uid", str(uid), "--tcp", "1",
              "--allow", "127.0.0.1:%d" % echo.port)
    st = os.stat(p.sock)
    assert (oct(st.st_mode & 0o777), st.st_uid) == ("0o600", uid)
    s = socket.create_connection(("127.0.0.1", p.tcp), timeout=HANG)
    s.sendall(("CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % echo.port).encode())
    assert read_head(s)[0] == 200
    s.sendall(b"ok")
    assert recv_exactly(s, 2) == b"ok"
    s.close()


def test_connection_limit(proxy):
    p = proxy("--max-conns", "2")
    a, b = dial(p), dial(p)
    c = dial(p)
    c.sendall(b"CONNECT x.example.invalid:443 HTTP/1.1\r\n\r\n")
    st, hdrs, rest = read_head(c)
    assert (st, hdrs["x-terp-egress"]) == (503, "too-many")
    assert p.end()["code"] == "too-many"
    for s in (a, b, c):
        s.close()


def test_idle_tunnel_is_closed(proxy, servers):
    echo = servers(Echo)
    target = "127.0.0.1:%d" % echo.port
    p = proxy("--allow", target, "--idle-timeout", "200")
    s, st, _, _ = connect(p, target)
    assert st == 200
    assert read_all(s) == b""
    assert p.end()["code"] == "idle"
    s.close()


def test_progress_events_report_bytes(proxy, servers):
    echo = servers(Echo)
    target = "127.0.0.1:%d" % echo.port
    p = proxy("--allow", target, "--progress", "20")
    s, st, _, _ = connect(p, target)
    s.sendall(b"z" * 1000)
    recv_exactly(s, 1000)
    ev = p.wait_event(phase="progress")
    assert (ev["up"], ev["down"]) == (1000, 1000)
    s.close()
    assert p.end()["code"] == "done"


def test_connect_inside_a_tunnel_is_only_bytes(proxy, servers):
    echo = servers(Echo)
    target = "127.0.0.1:%d" % echo.port
    p = proxy("--allow", target)
    s, st, _, _ = connect(p, target)
    inner = b"CONNECT evil.example.invalid:443 HTTP/1.1\r\n\r\n"
    s.sendall(inner)
    assert recv_exactly(s, len(inner)) == inner
    s.close()
    p.end()
    assert len([e for e in p.events if e["phase"] == "end"]) == 1


# ---- the in-sandbox forwarder, run outside the sandbox -----------------------

@pytest.fixture
def fwd():
    made = []

    def start(p, *args):
        f = subprocess.Popen([sys.executable, str(FWD), p.sock, *args],
                             stdout=subprocess.PIPE, text=True)
        made.append(f)
        r, _, _ = select.select([f.stdout], [], [], HANG)
        assert r, "egress_fwd.py did not start"
        return int(f.stdout.readline())
    yield start
    for f in made:
        f.kill()
        f.wait()


@pytest.mark.parametrize("mode", [[], ["--relay"], ["--copy"]], ids=["default", "splice", "copy"])
def test_forwarder_relays_http_and_connect(proxy, fwd, servers, http_upstream, mode):
    echo = servers(Echo)
    p = proxy("--allow", "127.0.0.1:%d" % echo.port,
              "--allow", "127.0.0.1:%d" % http_upstream.port)
    port = fwd(p, *mode)
    via = "http://127.0.0.1:%d" % port
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": via}))
    with opener.open("http://127.0.0.1:%d/hello" % http_upstream.port,
                     timeout=HANG) as r:
        assert r.read() == b"hello from upstream\n"
    assert http_upstream.seen[0][0] == "GET /hello HTTP/1.1"
    s = socket.create_connection(("127.0.0.1", port), timeout=HANG)
    s.sendall(("CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % echo.port).encode())
    st, _, rest = read_head(s)
    assert st == 200 and rest == b""
    blob = os.urandom(1 << 20)
    threading.Thread(target=s.sendall, args=(blob,), daemon=True).start()
    assert recv_exactly(s, len(blob)) == blob
    s.close()
    ends = [p.end(), p.end()]
    assert sorted(e["method"] for e in ends) == ["CONNECT", "GET"]


def relay(listen_port_cb, upstream, wrap=None):
    """A relay as a cell could write one: accepts one connection and pipes
    it to upstream (host, port); with wrap, it first sends its own
    CONNECT wrap through upstream and expects 200."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    listen_port_cb(ls.getsockname()[1])
    c, _ = ls.accept()
    u = socket.create_connection(upstream, timeout=HANG)
    if wrap:
        u.sendall(("CONNECT %s HTTP/1.1\r\n\r\n" % wrap).encode())
    for a, b in ((c, u), (u, c)):
        def pipe(a=a, b=b):
            try:
                while True:
                    d = a.recv(65536)
                    if not d:
                        break
                    b.sendall(d)
                b.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        threading.Thread(target=pipe, daemon=True).start()
    ls.close()


@pytest.mark.parametrize("wrap", [None, "evil.example.invalid:443"])
def test_chained_connect_through_a_relay_is_checked(proxy, fwd, servers, wrap):
    echo = servers(Echo)
    p = proxy("--allow", "127.0.0.1:%d" % echo.port)
    fport = fwd(p)
    got = queue.Queue()
    threading.Thread(target=relay, args=(got.put, ("127.0.0.1", fport), wrap),
                     daemon=True).start()
    rport = got.get(timeout=HANG)
    s = socket.create_connection(("127.0.0.1", rport), timeout=HANG)
    # Through relay and forwarder: the final target is checked like a
    # direct request, whichever hop wrote the CONNECT.
    s.sendall(b"CONNECT evil.example.invalid:443 HTTP/1.1\r\n\r\n")
    st, hdrs, rest = read_head(s)
    assert (st, hdrs["x-terp-egress"]) == (403, "not-allowed")
    ev = p.end()
    assert (ev["verdict"], ev["host"]) == ("refused", "evil.example.invalid")
    s.close()
    # The forwarder's own port (loopback, in the sandbox): 127.0.0.1 is
    # allowed here on the echo server's port only.
    assert refused(p, "127.0.0.1:%d" % fport)[0] == "port"
    assert echo.accepted == 0


# ---- descriptors handed over (SCM_RIGHTS) are never taken -------------------
# A socket handed over shares its open file description with whoever sent
# it (in terp, the sandbox), who could clear O_NONBLOCK on it and block the
# proxy's one thread: the proxy reads with plain recv(), so the kernel
# closes anything sent along, and the forwarder relays bytes instead.

def hand(p, fd, data=b"\0"):
    """Sends data with fd attached over a new connection to the proxy;
    returns that connection."""
    u = dial(p)
    u.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
    return u


def test_a_handed_over_tcp_socket_is_never_used(proxy, servers):
    """The handed socket is closed unread (its peer sees the end, nothing
    else), and the Unix connection that brought it is one more client:
    the NUL byte makes what follows a bad request."""
    echo = servers(Echo)
    p = proxy("--allow", "127.0.0.1:%d" % echo.port)
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    t = socket.create_connection(ls.getsockname(), timeout=HANG)
    peer, _ = ls.accept()
    peer.settimeout(HANG)
    u = hand(p, t.fileno())
    t.close()                   # the copy in the message was the last one
    assert read_all(peer) == b""
    peer.close()
    ls.close()
    u.sendall(("CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % echo.port).encode())
    status, hdrs, _ = read_head(u)
    assert (status, hdrs["x-terp-egress"]) == (400, "bad-request")
    u.close()
    ev = p.end()
    assert (ev["verdict"], ev["code"]) == ("refused", "bad-request")


def test_forwarder_relays_the_request_on_its_own_connection(proxy, fwd, servers):
    """The forwarder's way, end to end: it relays, the client's socket
    stays in the forwarder."""
    echo = servers(Echo)
    p = proxy("--allow", "127.0.0.1:%d" % echo.port)
    port = fwd(p)
    s = socket.create_connection(("127.0.0.1", port), timeout=HANG)
    s.sendall(("CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % echo.port).encode())
    st, _, rest = read_head(s)
    assert st == 200 and rest == b""
    s.sendall(b"ping")
    assert recv_exactly(s, 4) == b"ping"
    s.close()
    assert p.end()["code"] == "done"


@pytest.mark.parametrize("what", ["pipe", "unix", "listener", "extra-bytes"])
def test_any_descriptor_handed_over_is_dropped_and_the_rest_refused(proxy, what):
    p = proxy("--allow", "127.0.0.1:9")
    keep = []
    data = b"\0"
    if what == "pipe":
        r, w = os.pipe()
        keep += [r, w]
        fd = r
    elif what == "unix":
        a, b = socket.socketpair()
        keep += [a, b]
        fd = a.fileno()
    elif what == "listener":
        ls = socket.socket()
        ls.bind(("127.0.0.1", 0))
        ls.listen(1)
        keep.append(ls)
        fd = ls.fileno()
    else:
        c = socket.create_connection(("127.0.0.1", servers_port(keep)), timeout=HANG)
        keep.append(c)
        fd = c.fileno()
        data = b"\0CONNECT"
    u = hand(p, fd, data)
    u.sendall(b" 127.0.0.1:9 HTTP/1.1\r\n\r\n")
    status, hdrs, _ = read_head(u)
    assert (status, hdrs["x-terp-egress"]) == (400, "bad-request")
    u.close()
    assert p.end()["code"] == "bad-request"
    for k in keep:
        k.close() if hasattr(k, "close") else os.close(k)


def servers_port(keep):
    """A listening TCP socket to connect to (kept open in keep)."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    keep.append(ls)
    return ls.getsockname()[1]
