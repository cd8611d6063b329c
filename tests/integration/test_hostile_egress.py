"""Hostile cells against terp's egress proxy and what a bound environment
carries (issue 22), through the real `terp exec` and its sandbox, behind
test_env.py's egress gate (which stands on test_hostile.py's proof that
the sandbox isolates: every test here fails when it does not).
"""
import json
import os
import signal
import socket
import subprocess
import textwrap
import threading
import time
from pathlib import Path

import pytest

from conftest import TERP, session_dir, traversable
from test_hostile import base, plant, sbx, sbx_raw  # noqa: F401  (the gate's fixtures)
from test_env import HANG, PRELUDE, gate  # noqa: F401

# ---------------------------------------------------------------- 1. no stall through the proxy

# A cell hands the proxy a TCP socket of its own (as the old forwarder
# did, SCM_RIGHTS with one NUL byte), keeps the other copy of that open
# file description, clears O_NONBLOCK on it over and over, then drives
# the proxy into one state and sleeps. On a proxy that read and wrote
# such a socket, every recv/send/splice there blocked terp's one thread.
STALL_CELL = PRELUDE + r'''
import array, fcntl, threading, time
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(1)
t = socket.create_connection(ls.getsockname())
peer, _ = ls.accept()
u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
u.connect("/run/terp/egress.sock")
u.sendmsg([b"\0"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [t.fileno()]))])
def blocking():
    while True:
        fl = fcntl.fcntl(t.fileno(), fcntl.F_GETFL)
        fcntl.fcntl(t.fileno(), fcntl.F_SETFL, fl & ~os.O_NONBLOCK)
        time.sleep(0.005)
threading.Thread(target=blocking, daemon=True).start()
def fill():
    """Keeps the shared socket's send buffer full (peer never reads)."""
    while True:
        try:
            t.send(b"f" * 4096, socket.MSG_DONTWAIT)
        except BlockingIOError:
            time.sleep(0.001)
def nibble():
    """Reads a little now and then, so the proxy sees it writable."""
    while True:
        time.sleep(0.05)
        peer.recv(2048)
def stream():
    while True:
        peer.sendall(b"s" * 65536)
time.sleep(0.5)
print("armed", flush=True)
time.sleep(1)
STATE = "WHICH"
if STATE == "head":
    peer.sendall(b"CONNECT 127.0.0.1:PORT")
elif STATE == "reply":
    threading.Thread(target=fill, daemon=True).start()
    time.sleep(0.3)
    peer.sendall(b"GET http://evil.example.invalid/ HTTP/1.1\r\nHost: evil.example.invalid\r\n\r\n")
    threading.Thread(target=nibble, daemon=True).start()
elif STATE == "drain":
    peer.sendall(b"GET http://evil.example.invalid/ HTTP/1.1\r\nHost: evil.example.invalid\r\n\r\n")
    time.sleep(0.5)
    peer.sendall(b"x")
elif STATE == "tunnel-up":
    peer.sendall(b"CONNECT 127.0.0.1:PORT HTTP/1.1\r\n\r\n")
elif STATE == "tunnel-down":
    peer.sendall(b"CONNECT 127.0.0.1:PORT HTTP/1.1\r\n\r\n")
    threading.Thread(target=stream, daemon=True).start()
print("stalling", STATE, flush=True)
time.sleep(600)
'''


class Flood:
    """127.0.0.1: reads and drops whatever comes, sends without end."""

    def __init__(self):
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(8)
        self.port = self.ls.getsockname()[1]
        self.stop = threading.Event()
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while not self.stop.is_set():
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            threading.Thread(target=self.one, args=(c,), daemon=True).start()

    def one(self, c):
        c.setblocking(False)
        while not self.stop.is_set():
            try:
                c.recv(65536)
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                break
            try:
                c.send(b"d" * 65536)
            except (BlockingIOError, InterruptedError):
                time.sleep(0.002)
            except OSError:
                break
        c.close()

    def close(self):
        self.stop.set()
        self.ls.close()


@pytest.fixture
def flood():
    f = Flood()
    yield f
    f.close()


STATES = ["head", "reply", "drain", "tunnel-up", "tunnel-down"]


def stall_argv(state, port, *extra):
    code = STALL_CELL.replace("WHICH", state).replace("PORT", str(port))
    return [str(TERP), "exec", "--json", "--allow-host", "127.0.0.1:%d" % port, *extra,
            "-c", code, "-c", "print('after')"]


@pytest.mark.parametrize("state", STATES)
def test_a_socket_handed_to_the_proxy_cannot_stop_the_time_limit(gate, env, tmp_path,
                                                                  flood, state):
    """--timeout still ends the cell whatever the proxy was doing with a
    socket the cell shares, and the next cell runs."""
    p = subprocess.Popen(stall_argv(state, flood.port, "--timeout", "4"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env, cwd=tmp_path, errors="replace")
    try:
        stdout, stderr = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
    if p.returncode == -signal.SIGKILL:
        pytest.fail("terp was still running 60 s into a 4 s cell (proxy state %s): "
                    "its loop is blocked" % state, pytrace=False)
    evs = [json.loads(l) for l in stdout.splitlines() if l.startswith("{")]
    out = "".join(e.get("text", "") for e in evs if e.get("type") == "stdout")
    assert "stalling " + state in out, stdout[-3000:] + stderr[-2000:]
    res = [e["status"] for e in evs if e.get("type") == "result"]
    assert res == ["timeout", "ok"], (res, stderr[-2000:])
    assert "after" in out


@pytest.mark.parametrize("state", STATES)
def test_a_socket_handed_to_the_proxy_cannot_stop_sigterm(gate, env, tmp_path, flood, state):
    """SIGTERM ends terp in any proxy state (the loop is never blocked)."""
    p = subprocess.Popen(stall_argv(state, flood.port), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        seen = ""
        for line in p.stdout:
            if line.startswith("{"):
                seen += json.loads(line).get("text", "") or ""
            if "armed" in seen:
                break
        assert "armed" in seen, "the cell never started"
        time.sleep(3)           # the cell drives the proxy into its state
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pytest.fail("terp survived SIGTERM for 10 s (proxy state %s): its loop is "
                        "blocked" % state, pytrace=False)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode != -signal.SIGKILL


# ---------------------------------------------------------------- 5. remote texts capped

# A "remote" for --ssh-command: runs this tree's `terp serve` (the command
# after "--") and, as a malicious server would, swells each result's texts
# to 3 MiB on the way back.
SWELL = r'''
import json, subprocess, sys
cmd = sys.argv[sys.argv.index("--") + 1]
p = subprocess.Popen(cmd, shell=True, stdout=subprocess.PIPE)
for line in p.stdout:
    try:
        o = json.loads(line)
    except ValueError:
        o = None
    if isinstance(o, dict) and o.get("ev") == "result":
        for k in ("value", "evalue", "traceback", "reason"):
            o[k] = "\u00e9" * (3 << 19)          # 3 MiB of two-byte characters
        line = (json.dumps(o, ensure_ascii=False) + "\n").encode()
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
'''


def test_a_malicious_ssh_remote_gets_the_local_caps(gate, env, tmp_path):
    """Each text of a result from an ssh remote is cut at 256 KiB where
    it arrives (on a character boundary), so neither the JSON output nor
    the journal holds megabytes of it."""
    w = tmp_path / "swell.py"
    w.write_text(SWELL)
    p = subprocess.run([str(TERP), "exec", "--json", "--sandbox", "ssh://box",
                        "--ssh-command", "/usr/bin/python3 %s" % w,
                        "--ssh-terp", "%s --python /usr/bin/python3" % TERP,
                        "-c", "1+1"], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=HANG)
    res = [json.loads(l) for l in p.stdout.splitlines()
           if l.startswith("{") and json.loads(l).get("type") == "result"]
    assert len(res) == 1, (p.stdout[-2000:], p.stderr[-2000:])
    v = res[0]["value"]
    assert v.endswith("... [cut by terp at 256 KiB]"), v[-100:]
    assert len(v.encode()) <= (256 << 10) + 64 and set(v[:-30]) == {"\u00e9"}
    sd = session_dir(env)
    sizes = {f.name: f.stat().st_size for f in sd.rglob("*") if f.is_file()}
    assert "notebook.jsonl" in sizes, sizes
    assert max(sizes.values()) < (4 << 20), sizes


# ---------------------------------------------------------------- 2. an environment's secrets

def test_an_environments_pip_and_conda_config_stay_out(gate, env, tmp_path):
    """The venv is bound read-only and whole, but its pip.conf, pip.ini,
    .condarc and condarc.d (where an index password or a channel token
    lives) are empty inside; the rest of the venv is there."""
    d = Path(traversable(tmp_path))
    venv = d / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", str(venv)], check=True)
    secret = "s3cr3t-pass-4471"
    (venv / "pip.conf").write_text("[global]\nindex-url = http://alice:%s@127.0.0.1:9/simple\n"
                                   % secret)
    (venv / "pip.ini").write_text("[global]\nindex-url = http://127.0.0.1:9/t/%s/simple\n"
                                  % secret)
    (venv / ".condarc").write_text("channel_alias: http://127.0.0.1:9/t/%s\n" % secret)
    (venv / "condarc.d").mkdir()
    (venv / "condarc.d" / "a.yml").write_text("token: %s\n" % secret)
    (venv / "marker.txt").write_text("visible\n")
    for p in [venv / "condarc.d", *venv.glob("*.*"), venv / ".condarc",
              *(venv / "condarc.d").iterdir()]:
        if not p.is_symlink():      # venv/bin/python names the system's binary
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
    e = dict(env, VIRTUAL_ENV=str(venv))
    p = subprocess.run([str(TERP), "exec", "--json", "-c", PRELUDE + textwrap.dedent(r'''
        import sys
        got = {}
        for n in ("pip.conf", "pip.ini", ".condarc", "marker.txt"):
            try:
                got[n] = open(os.path.join(sys.prefix, n)).read()
            except OSError as e:
                got[n] = "error %s" % e.errno
        got["condarc.d"] = sorted(os.listdir(os.path.join(sys.prefix, "condarc.d")))
        report(prefix=sys.prefix, got=got)
    ''')], capture_output=True, text=True, env=e, cwd=d, timeout=HANG)
    out = "".join(json.loads(l).get("text", "") for l in p.stdout.splitlines()
                  if l.startswith("{"))
    rs = [json.loads(l[len("RESULT "):]) for l in out.splitlines() if l.startswith("RESULT ")]
    assert rs, (p.stdout[-2000:], p.stderr[-2000:])
    r = rs[-1]
    assert r["prefix"] == str(venv), r
    assert r["got"] == {"pip.conf": "", "pip.ini": "", ".condarc": "", "marker.txt": "visible\n",
                        "condarc.d": []}, r
    assert secret not in p.stdout


# ---------------------------------------------------------------- 9. unspecified addresses

@pytest.mark.parametrize("spec", ["0.0.0.0:PORT", "[::]:PORT", "0.0.0.0", "[::ffff:0.0.0.0]:PORT"])
def test_an_unspecified_address_is_not_a_rule(gate, env, tmp_path, flood, spec):
    """0.0.0.0 and :: reach this machine's loopback: as a rule they are
    refused with one line that names the loopback address instead."""
    p = subprocess.run([str(TERP), "exec", "--json", "--allow-host",
                        spec.replace("PORT", str(flood.port)), "-c", "print(1)"],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=HANG)
    assert p.returncode != 0, p.stdout[-2000:]
    err = p.stderr.strip()
    assert "\n" not in err and "unspecified address" in err and "127.0.0.1:PORT" in err, err


def test_a_request_for_an_unspecified_address_is_one_for_loopback(gate, env, tmp_path, flood):
    """A cell's CONNECT to 0.0.0.0:PORT is checked as 127.0.0.1:PORT: with
    only a name allowed it is refused, and the note suggests the loopback
    address, never 0.0.0.0."""
    p = subprocess.run([str(TERP), "exec", "--json", "--allow-host", "localhost:%d" % flood.port,
                        "-c", PRELUDE + textwrap.dedent('''
        for t in ("0.0.0.0:PORT", "[::]:PORT"):
            s, st, code = connect(t)
            report(t=t, st=st, code=code)
    ''').replace("PORT", str(flood.port))], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=HANG)
    evs = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    out = "".join(e.get("text", "") for e in evs if e.get("type") == "stdout")
    err = "".join(e.get("text", "") for e in evs if e.get("type") == "stderr")
    rs = [json.loads(l[len("RESULT "):]) for l in out.splitlines() if l.startswith("RESULT ")]
    assert [(r["st"], r["code"]) for r in rs] == [(403, "ip-literal")] * 2, (rs, err)
    assert "--allow-host 127.0.0.1:%d" % flood.port in err, err
    assert "--allow-host [::1]:%d" % flood.port in err, err
    assert "0.0.0.0" not in err and "[::]" not in err, err


# ---------------------------------------------------------------- 8. the cap is the session's

class Sink:
    """127.0.0.1: counts what it receives, answers nothing."""

    def __init__(self):
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(8)
        self.port = self.ls.getsockname()[1]
        self.received = 0
        self.lock = threading.Lock()
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            threading.Thread(target=self.one, args=(c,), daemon=True).start()

    def one(self, c):
        while True:
            try:
                d = c.recv(65536)
            except OSError:
                break
            if not d:
                break
            with self.lock:
                self.received += len(d)
        c.close()


SEND_CELL = PRELUDE + r'''
import time
s, st, code = connect("127.0.0.1:PORT")
sent = 0
try:
    for _ in range(80):
        s.sendall(b"u" * 1000)
        sent += 1000
except OSError:
    pass
time.sleep(1)
s.close()
time.sleep(1)       # the sink's close ends the attempt: its line is journalled
report(st=st, sent=sent)
'''


def test_egress_max_holds_across_resume(gate, env, tmp_path):
    """Under --egress-max 100000, a run that sends 80 KB and a resumed run
    that tries 80 KB more get 100 KB out in all: the budget is the
    session's (earlier runs' bytes come from its journal's ledger)."""
    sink = Sink()
    args = ["--allow-host", "127.0.0.1:%d" % sink.port, "--egress-max", "100000"]
    cell = SEND_CELL.replace("PORT", str(sink.port))
    p = subprocess.run([str(TERP), "exec", "--json", *args, "-c", cell],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=HANG)
    assert p.returncode == 0, p.stderr[-2000:]
    first = sink.received
    assert first == 80000, (first, p.stdout[-2000:])
    sid = session_dir(env).name
    p = subprocess.run([str(TERP), "exec", "--json", "--resume", sid, *args, "-c", cell],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=HANG)
    evs = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    nets = [e for e in evs if e.get("type") == "net"]
    time.sleep(0.5)
    assert sink.received <= 100000, (sink.received, nets)
    assert any(e.get("code") == "cap" for e in nets), nets
    sink.ls.close()


# ---------------------------------------------------------------- 7. a token in an index's path

def test_a_token_in_the_pip_index_path_stays_out(gate, env, tmp_path, flood):
    """PIP_INDEX_URL with a token in its path (as some hosted indexes
    give them) is a credential: not passed into the sandbox even with its
    host allowed, and said so in one line."""
    tok = "AbCdEf1234567890xy"
    url = "http://127.0.0.1:%d/%s/org/simple/" % (flood.port, tok)
    e = dict(env, PIP_INDEX_URL=url)
    p = subprocess.run([str(TERP), "exec", "--json", "--allow-host", "127.0.0.1:%d" % flood.port,
                        "-c", PRELUDE + "report(idx=os.environ.get('PIP_INDEX_URL'))"],
                       capture_output=True, text=True, env=e, cwd=tmp_path, timeout=HANG)
    out = "".join(json.loads(l).get("text", "") for l in p.stdout.splitlines()
                  if l.startswith("{"))
    rs = [json.loads(l[len("RESULT "):]) for l in out.splitlines() if l.startswith("RESULT ")]
    assert rs and rs[-1]["idx"] is None, (rs, p.stderr[-2000:])
    assert "holds credentials" in p.stderr, p.stderr
    assert tok not in p.stdout


def test_the_pip_index_is_never_on_bwraps_command_line(gate, env, tmp_path, flood):
    """A credential-free index, its host allowed, reaches pip in the cell
    (PIP_INDEX_URL), but no process's command line on the host holds it
    (ps shows every local user those)."""
    url = "http://127.0.0.1:%d/plain-index-marker/simple/" % flood.port
    e = dict(env, PIP_INDEX_URL=url)
    p = subprocess.Popen([str(TERP), "exec", "--json", "--allow-host",
                          "127.0.0.1:%d" % flood.port, "-c", PRELUDE + textwrap.dedent('''
        import time
        report(idx=os.environ.get("PIP_INDEX_URL"))
        time.sleep(3)
    ''')], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e, cwd=tmp_path)
    seen, lines = [], []
    try:
        for line in p.stdout:
            lines.append(line)
            if "RESULT" in line:
                break
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                cmd = open("/proc/%s/cmdline" % pid, "rb").read()
            except OSError:
                continue
            if b"plain-index-marker" in cmd and int(pid) != os.getpid():
                seen.append(cmd.replace(b"\0", b" ")[:300])
        out, _ = p.communicate(timeout=HANG)
        lines.append(out)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    text = "".join(json.loads(l).get("text", "") for l in "".join(lines).splitlines()
                   if l.startswith("{"))
    rs = [json.loads(l[len("RESULT "):]) for l in text.splitlines() if l.startswith("RESULT ")]
    assert rs and rs[-1]["idx"] == url, rs
    assert seen == [], seen


# ---------------------------------------------------------------- 6. terp serve cleans up

PASS = r'''
import os, sys
cmd = sys.argv[sys.argv.index("--") + 1]
os.execv("/bin/sh", ["sh", "-c", cmd])
'''


def test_terp_serve_removes_a_workspace_deeper_than_path_max(gate, env, tmp_path):
    """A cell (on the "remote" terp serve) leaves a tree whose paths are
    longer than PATH_MAX, with a link out and read-only folders: terp
    serve's folder in /tmp is gone all the same when the session ends,
    and what the link names is untouched."""
    keep = tmp_path / "keep.txt"
    keep.write_text("keep\n")
    w = tmp_path / "pass.py"
    w.write_text(PASS)
    before = {p for p in os.listdir("/tmp") if p.startswith("terp-serve-")}
    p = subprocess.run([str(TERP), "exec", "--json", "--sandbox", "ssh://box",
                        "--ssh-command", "/usr/bin/python3 %s" % w,
                        "--ssh-terp", "%s --python /usr/bin/python3" % TERP, "-c", textwrap.dedent('''
        import os
        fd = os.open(".", os.O_RDONLY)
        name = "deep-marker-" + "x" * 40
        for i in range(200):
            os.mkdir(name, dir_fd=fd)
            if i % 50 == 0:
                os.symlink("/tmp", "link-out", dir_fd=fd)
            nfd = os.open(name, os.O_RDONLY, dir_fd=fd)
            if i % 60 == 0:
                os.chmod(fd, 0o500)
            os.close(fd)
            fd = nfd
        print("made", 200 * len(name))
    ''')], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=HANG)
    assert '"status":"ok"' in p.stdout and "made 10400" in p.stdout, \
        (p.stdout[-2000:], p.stderr[-2000:])
    left = {q for q in os.listdir("/tmp") if q.startswith("terp-serve-")} - before
    mine = [q for q in left if any(n.startswith("deep-marker-")
                                   for _, ds, _ in os.walk("/tmp/" + q) for n in ds[:3])]
    assert mine == [], mine
    assert keep.read_text() == "keep\n"
