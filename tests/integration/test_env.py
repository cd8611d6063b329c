"""The user's Python, packages mid-session and egress host by host
(issue 10), through the real binary: `terp exec --json` with cells that
report what they saw, the egress ledger written by the kernel's test
seam (TERP_EGRESS_LEDGER, see include/terp/kernel_net.h), and servers of
the test's own on the host's 127.0.0.1.

Real parts: venvs made here with `python3 -m venv` (with and without
system site packages, one with pip) holding a package built here from a
local wheel; a PEP 503 "simple" index served over HTTP by the test,
holding another wheel built here. Needs Debian's python3-venv,
python3-pip, python3-setuptools and python3-wheel (make check installs
them).

127.0.0.1 seen from the sandbox is the sandbox's own loopback; the
host's is reached only through terp's proxy, which refuses loopback
unless that very address (with its port) is allowed: the tests allow
`127.0.0.1:PORT` where a server of theirs must be reached.

The refusal tests run code that tries to get out, so they sit behind
test_hostile.py's isolation gate (its `sbx` fixture: every test that
uses `gate` fails when the sandbox does not isolate), plus a check of
their own that the sandbox with egress on still has only `lo`. Nothing
here waits on the clock: HANG only stops a hung test."""
import fcntl
import http.server
import json
import os
import re
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import termios
import textwrap
import threading
from pathlib import Path

import pytest

from conftest import TERP, traversable
from test_hostile import base, plant, sbx, sbx_raw  # noqa: F401  (the gate's fixtures)

HANG = 180
SYSPY = "/usr/bin/python3"
VER = subprocess.run([SYSPY, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                     capture_output=True, text=True, check=True).stdout.strip()
NEEDS = ("Debian's python3-venv, python3-pip, python3-setuptools and python3-wheel "
         "are needed: apt-get install python3-venv python3-pip python3-setuptools "
         "python3-wheel")

# Before every cell: small helpers that report as JSON lines.
PRELUDE = r'''
import json, os, socket, sys, urllib.request, urllib.error
def report(**kw):
    sys.stdout.write("RESULT " + json.dumps(kw) + "\n")
    sys.stdout.flush()
def fetch(url):
    """A GET through the proxy variables (urllib reads HTTP_PROXY)."""
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            return {"kind": "ok", "status": r.status, "body": r.read().decode(errors="replace")[:200]}
    except urllib.error.HTTPError as e:
        return {"kind": "http", "status": e.code, "code": e.headers.get("X-Terp-Egress")}
    except Exception as e:
        return {"kind": "error", "error": "%s: %s" % (type(e).__name__, str(e)[:200])}
def connect(target, via=("127.0.0.1", 3128), unix=None):
    """A CONNECT to target through the forwarder (or any relay, or the
    proxy's socket itself): (socket, status, X-Terp-Egress)."""
    if unix:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(60)
        s.connect(unix)
    else:
        s = socket.create_connection(via, timeout=60)
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
    data = b""
    while b"\r\n\r\n" not in data:
        c = s.recv(65536)
        if not c:
            break
        data += c
    head = data.split(b"\r\n\r\n")[0].decode(errors="replace").split("\r\n")
    status = int(head[0].split()[1]) if head[0] else 0
    hdrs = dict((l.split(":", 1)[0].lower(), l.split(":", 1)[1].strip()) for l in head[1:] if ":" in l)
    return s, status, hdrs.get("x-terp-egress")
def tryop(fn, *a, **k):
    try:
        r = fn(*a, **k)
        if hasattr(r, "close"):
            r.close()
        return "OK"
    except OSError as e:
        import errno
        return errno.errorcode.get(e.errno, str(e.errno)) if e.errno else type(e).__name__
'''


# ---------------------------------------------------------------- running terp

class Run:
    """One `terp exec --json` run: events, and per cell its output."""

    def __init__(self, p):
        self.rc, self.err = p.returncode, p.stderr
        self.events = []
        for line in p.stdout.splitlines():
            try:
                self.events.append(json.loads(line))
            except ValueError:
                pass
        self.results = [e for e in self.events if e.get("type") == "result"]

    def text(self, cell, stream="stdout"):
        return "".join(e["text"] for e in self.events
                       if e.get("type") == stream and e.get("cell") == cell)

    def reports(self, cell):
        rs = [json.loads(l[len("RESULT "):]) for l in self.text(cell).splitlines()
              if l.startswith("RESULT ")]
        assert rs, "cell %d reported nothing: %r" % (cell, self)
        return rs

    def report(self, cell):
        return self.reports(cell)[-1]

    def __repr__(self):
        return "rc=%r\nevents=%s\nstderr=%s" % (self.rc, json.dumps(self.events)[-4000:],
                                                 self.err[-3000:])


def run(env, cwd, *cells, args=(), extra=None):
    e = dict(env)
    e.update(extra or {})
    argv = [str(TERP), "exec", "--json", *map(str, args)]
    for c in cells:
        argv += ["-c", PRELUDE + textwrap.dedent(c)]
    p = subprocess.run(argv, capture_output=True, text=True, env=e, cwd=cwd,
                       timeout=HANG, errors="replace")
    return Run(p)


def ledger(path):
    try:
        with open(path) as f:
            return [json.loads(l) for l in f if l.strip()]
    except FileNotFoundError:
        return []


def ends(led):
    return [e for e in led if e["phase"] == "end"]


def sh(*cmd, **kw):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert p.returncode == 0, "%s failed:\n%s\n%s\n%s" % (cmd, p.stdout, p.stderr, NEEDS)
    return p


# ---------------------------------------------------------------- packages and venvs

def build_wheel(src_root, out, name, version, body):
    src = src_root / name
    (src / name).mkdir(parents=True)
    (src / name / "__init__.py").write_text(body)
    (src / "setup.py").write_text(
        "from setuptools import setup\n"
        "setup(name=%r, version=%r, packages=[%r])\n" % (name, version, name))
    sh(SYSPY, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
       "--no-cache-dir", "-w", out, str(src) + "/",
       env={**os.environ, "PIP_NO_INPUT": "1", "PIP_FIND_LINKS": ""})
    (whl,) = out.glob("%s-%s-*.whl" % (name, version))
    return whl


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    """Two wheels built here with setuptools and wheel (nothing from any
    index): a package named polars, version 0.0.1, so that the probe of
    the venvs holding it names it; and terp_idx_pkg 1.0 for the index."""
    d = tmp_path_factory.mktemp("wheels")
    out = d / "dist"
    out.mkdir()
    return {
        "polars": build_wheel(d, out, "polars", "0.0.1", "__version__ = '0.0.1'\n"),
        "idx": build_wheel(d, out, "terp_idx_pkg", "1.0", "ANSWER = 42\n"),
    }


@pytest.fixture(scope="module")
def envs(tmp_path_factory, wheels):
    """Under a folder the sandbox's uid can get through (traversable):
    home/ with a secret and home/proj/.venv (pip inside, no system site
    packages, polars 0.0.1 installed from the wheel), and sv/ (system
    site packages, no pip, the same polars)."""
    d = Path(traversable(tmp_path_factory.mktemp("envs")))
    home = d / "home"
    (home / "proj").mkdir(parents=True)
    (home / "secret.txt").write_text("HOME-SECRET\n")
    venv = home / "proj" / ".venv"
    sh(SYSPY, "-m", "venv", venv)
    sh(venv / "bin" / "python", "-m", "pip", "install", "--no-index", "--no-deps",
       "--no-cache-dir", wheels["polars"], env={**os.environ, "PIP_NO_INPUT": "1"})
    sv = d / "sv"
    sh(SYSPY, "-m", "venv", "--without-pip", "--system-site-packages", sv)
    sh(SYSPY, "-m", "pip", "--python", sv / "bin" / "python", "install", "--no-index",
       "--no-deps", "--no-cache-dir", wheels["polars"], env={**os.environ, "PIP_NO_INPUT": "1"})
    for p in (d, home, home / "proj"):
        os.chmod(p, 0o755)
    return {"home": home, "venv": venv, "sv": sv}


def venv_env(env, tmp_path, envs):
    """env with the venv activated and HOME the one holding it; the
    probe's cache outside HOME, so HOME holds only what the test made."""
    return {**env, "VIRTUAL_ENV": str(envs["venv"]), "HOME": str(envs["home"]),
            "XDG_CACHE_HOME": str(tmp_path / "cache")}


# ---------------------------------------------------------------- servers on the host

class Index(http.server.ThreadingHTTPServer):
    """A PEP 503 simple index on 127.0.0.1 holding one wheel."""
    daemon_threads = True

    def __init__(self, root, whl, project):
        simple = root / "simple" / project
        simple.mkdir(parents=True)
        shutil.copy(whl, simple / whl.name)
        (simple / "index.html").write_text(
            '<!DOCTYPE html><html><body><a href="%s">%s</a></body></html>\n'
            % (whl.name, whl.name))
        self.hits = []
        srv = self

        class H(http.server.SimpleHTTPRequestHandler):
            def __init__(h, *a, **k):
                super().__init__(*a, directory=str(root), **k)

            def log_message(h, fmt, *a):
                srv.hits.append(h.path)
        super().__init__(("127.0.0.1", 0), H)
        self.port = self.server_address[1]
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()


@pytest.fixture
def index(tmp_path, wheels):
    s = Index(tmp_path / "index", wheels["idx"], "terp-idx-pkg")
    yield s
    s.shutdown()
    s.server_close()


class Plain(socketserver.ThreadingTCPServer):
    """A TCP server on 127.0.0.1 that counts what it accepts and
    receives. mode: "http" answers one GET, "sink" reads and counts,
    "stall" never reads."""
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, mode):
        self.mode, self.accepted, self.received = mode, 0, 0
        self.conns = []
        self.lock = threading.Lock()
        self.release = threading.Event()
        srv = self

        class H(socketserver.BaseRequestHandler):
            def handle(h):
                with srv.lock:
                    srv.accepted += 1
                    srv.conns.append(h.request)
                if srv.mode == "stall":
                    srv.release.wait(HANG)
                    return
                data = b""
                while True:
                    c = h.request.recv(65536)
                    if not c:
                        return
                    with srv.lock:
                        srv.received += len(c)
                    data += c
                    if srv.mode == "http" and b"\r\n\r\n" in data:
                        body = b"hello from the host\n"
                        h.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n"
                                          b"Connection: close\r\n\r\n%s" % (len(body), body))
                        return
        super().__init__(("127.0.0.1", 0), H)
        self.port = self.server_address[1]
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()

    def queued(self):
        """Bytes received by the kernel but not read (a stalled server)."""
        with self.lock:
            conns = list(self.conns)
        n = 0
        for c in conns:
            b = fcntl.ioctl(c.fileno(), termios.FIONREAD, b"\0\0\0\0")
            n += int.from_bytes(b, sys.byteorder)
        return n


@pytest.fixture
def server():
    made = []

    def start(mode="http"):
        s = Plain(mode)
        made.append(s)
        return s
    yield start
    for s in made:
        s.release.set()
        s.shutdown()
        s.server_close()


# ---------------------------------------------------------------- the gate

@pytest.fixture(scope="module")
def gate(sbx, tmp_path_factory):
    """test_hostile's proof that the sandbox isolates (sbx), and the same
    with egress on: pid 1 is bwrap, the uid is not 0, the only network
    interface is lo, the proxy variables name the forwarder, and the
    proxy's socket is there, read-only. Fails every test that uses it
    otherwise."""
    from conftest import private_env
    d = Path(traversable(tmp_path_factory.mktemp("gate")))
    r = run(private_env(d), d, r'''
        import stat
        ifaces = [l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:]]
        st = os.stat("/run/terp/egress.sock")
        report(pid1=open("/proc/1/cmdline", "rb").read().split(b"\0")[0].decode(),
               uid=os.getuid(), ifaces=ifaces, proxy=os.environ.get("HTTPS_PROXY"),
               sock=stat.S_ISSOCK(st.st_mode), ro=tryop(open, "/run/terp/x", "w"))
    ''', args=["--allow-host", "example.invalid"])
    from conftest import check_nothing_left
    check_nothing_left(d)
    assert r.results and r.results[0]["status"] == "ok", r
    g = r.report(1)
    problems = []
    if os.path.basename(g["pid1"]) != "bwrap":
        problems.append("pid 1 is %r" % g["pid1"])
    if g["uid"] == 0:
        problems.append("uid 0")
    if g["ifaces"] != ["lo"]:
        problems.append("interfaces %r with egress on" % g["ifaces"])
    if g["proxy"] != "http://127.0.0.1:3128" or not g["sock"]:
        problems.append("no proxy inside: %r" % g)
    if g["ro"] != "EROFS":
        problems.append("/run/terp is writable (%s)" % g["ro"])
    if problems:
        pytest.fail("SANDBOX WITH EGRESS DOES NOT ISOLATE; egress tests not run: "
                    + "; ".join(problems), pytrace=False)


# ================================================================ 1. the interpreter

def test_venv_package_imports_read_only_and_nothing_else_of_home(envs, env, tmp_path):
    """VIRTUAL_ENV picks the venv (one line says so); its package imports;
    the venv is read-only inside; of HOME only the venv's own path is
    there, the secret beside it is not."""
    home = envs["home"]
    r = run(venv_env(env, tmp_path, envs), tmp_path, r'''
        import polars
        home = HOME
        def ls(p):
            try:
                return sorted(os.listdir(p))
            except OSError as e:
                return e.strerror
        report(exe=sys.executable, prefix=sys.prefix, polars=polars.__version__,
               pfile=polars.__file__,
               write=tryop(open, os.path.join(sys.prefix, "x"), "w"),
               site=tryop(open, os.path.join(os.path.dirname(polars.__file__), "y"), "w"),
               home=ls(home), proj=ls(home + "/proj"),
               secret=tryop(open, home + "/secret.txt"))
    '''.replace("HOME", repr(str(home))))
    assert r.rc == 0, r
    g = r.report(1)
    venv = str(envs["venv"])
    assert g["exe"] == venv + "/bin/python" and g["prefix"] == venv
    assert g["polars"] == "0.0.1" and g["pfile"].startswith(venv + "/lib/")
    assert g["write"] == "EROFS" and g["site"] == "EROFS"
    assert g["home"] == ["proj"] and g["proj"] == [".venv"]
    assert g["secret"] == "ENOENT"
    assert "terp: using the virtualenv %s (VIRTUAL_ENV)\n" % venv in r.err, r
    assert not (envs["venv"] / "x").exists()


def test_venv_with_system_site_packages_sees_both(envs, env, tmp_path):
    r = run(env, tmp_path, r'''
        import polars, pandas
        report(polars=polars.__version__, pandas=pandas.__file__, prefix=sys.prefix)
    ''', args=["--python", envs["sv"]])
    assert r.rc == 0, r
    g = r.report(1)
    assert g["polars"] == "0.0.1" and g["prefix"] == str(envs["sv"])
    assert g["pandas"].startswith("/usr/lib/")
    assert "terp: using the virtualenv %s (--python)\n" % envs["sv"] in r.err


# issue 19: --version says which machinery runs IPython's syntax
IPY_LINE = ("IPython syntax: terp's built-in subset (magics, shell escapes, display) "
            "in the local and ssh sandboxes; a Jupyter server's kernel runs IPython itself")


def test_probe_runs_in_the_sandbox_and_is_cached(envs, env, tmp_path):
    """The packages are learnt from the driver's "ready" (inside the
    sandbox) and cached for the interpreter: the cache then answers
    --version with the full version, without running the interpreter."""
    e = venv_env(env, tmp_path, envs)
    before = subprocess.run([str(TERP), "--version"], capture_output=True, text=True,
                            env=e, timeout=HANG)
    assert before.stdout.splitlines() == [
        before.stdout.splitlines()[0], "Python %s (virtualenv %s)" % (VER, envs["venv"]),
        IPY_LINE]
    r = run(e, tmp_path, "print(1)")
    assert r.rc == 0, r
    (cache,) = (tmp_path / "cache" / "terp" / "pyenv").glob("*.json")
    probe = json.loads(cache.read_text())["probe"]
    assert probe["packages"]["polars"] == "0.0.1"
    assert probe["packages"]["pandas"] is None and probe["packages"]["matplotlib"] is None
    after = subprocess.run([str(TERP), "--version"], capture_output=True, text=True,
                           env=e, timeout=HANG)
    assert after.stdout.splitlines()[1] == "Python %s (virtualenv %s)" % (
        probe["version"], envs["venv"])
    assert probe["version"].startswith(VER + ".")


def test_missing_pandas_and_matplotlib_do_not_break_the_preload(envs, env, tmp_path):
    """The driver's preload (run here in the cell, to see it finish)
    imports only what is there: no error, no traceback."""
    r = run(venv_env(env, tmp_path, envs), tmp_path, r'''
        import __main__
        frames, send = [], __main__.send
        __main__.send = frames.append
        try:
            __main__._preload()
        finally:
            __main__.send = send
        report(frames=frames,
               mods=sorted(m for m in ("numpy", "pandas", "matplotlib") if m in sys.modules))
    ''', "print('next')")
    assert [x["status"] for x in r.results] == ["ok", "ok"], r
    g = r.report(1)
    assert g["mods"] == []
    assert len(g["frames"]) == 1 and g["frames"][0]["ev"] == "loaded", g
    assert "error" not in g["frames"][0], g
    assert r.text(1, "stderr") == "" and "Traceback" not in r.err


def ask(env, cwd, turns, *args, question="what can you import?"):
    """`terp -p --json` against a fake model playing turns: (Run, the
    requests the model got)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from fake_model import FakeModel, read_log
    log = Path(cwd) / ("model-%d.jsonl" % len(list(Path(cwd).glob("model-*.jsonl"))))
    srv = FakeModel({"turns": turns}, str(log))
    port = srv.start()
    try:
        p = subprocess.run([str(TERP), "-p", question, "--json", "--provider", "openai",
                            "--base-url", "http://127.0.0.1:%d/v1" % port, *map(str, args)],
                           capture_output=True, text=True, cwd=cwd, timeout=HANG,
                           env={**env, "OPENAI_API_KEY": "sk-terp-test-0123"},
                           errors="replace")
    finally:
        srv.stop()
    return Run(p), read_log(str(log))


def system_of(req):
    (m,) = [m for m in req["body"]["messages"] if m["role"] == "system"]
    return m["content"]


def test_system_prompt_says_what_the_probe_found(envs, env, tmp_path):
    """The model is told the session's Python version and which common
    packages import, from the first request of the first session with
    this interpreter (terp waits for the sandbox's probe then), and again
    from the cache: the venv has polars and neither pandas nor
    matplotlib, so charts are said to be unavailable and no savefig rule
    is given. The system Python has pandas and matplotlib: the chart
    rule is there."""
    answer = [{"openai": {"text": "ok"}}]
    e = venv_env(env, tmp_path, envs)
    for round_ in ("probed", "cached"):
        r, reqs = ask(e, tmp_path, answer)
        assert r.rc == 0, r
        sys_ = system_of(reqs[0])
        assert "The session runs Python %s." % VER in sys_ and " with polars 0.0.1" in sys_, \
            (round_, sys_)
        assert "not installed: pandas, numpy," in sys_ and "matplotlib" in sys_
        assert "Charts are unavailable" in sys_ and "savefig" not in sys_, sys_
        assert "pandas, numpy and matplotlib are installed" not in sys_
        assert "The network is off" in sys_ and "/allow HOST" in sys_
    assert list((tmp_path / "cache" / "terp" / "pyenv").glob("*.json"))
    r, reqs = ask(env, tmp_path, answer, "--allow-host", "example.invalid")
    assert r.rc == 0, r
    sys_ = system_of(reqs[0])
    assert "The session runs Python %s." % VER in sys_ and " with pandas " in sys_, sys_
    assert "matplotlib" in sys_.split("not installed:")[0] and "savefig" in sys_
    assert "Charts are unavailable" not in sys_
    assert "reaches only these hosts" in sys_ and "example.invalid" in sys_
    # the tool's description does not contradict it
    (tool,) = reqs[0]["body"]["tools"]
    desc = tool["function"]["description"]
    assert "no network access" not in desc and "unless the user allowed hosts" in desc, desc


@pytest.mark.parametrize("what", ["missing", "no-bin", "script"])
def test_a_python_that_cannot_be_used_is_one_line(env, tmp_path, what):
    if what == "missing":
        arg, words = tmp_path / "nope" / "python3", "does not exist"
    elif what == "no-bin":
        (tmp_path / "empty").mkdir()
        arg, words = tmp_path / "empty", "no bin/python"
    else:
        arg = tmp_path / "python3"
        arg.write_text("#!/bin/sh\nexec /usr/bin/python3 \"$@\"\n")
        arg.chmod(0o755)
        words = "a script"
    p = subprocess.run([str(TERP), "exec", "--python", str(arg), "-c", "print(1)"],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=HANG)
    assert p.returncode == 2 and p.stdout == "", p
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and str(arg) in lines[0], p.stderr


# ================================================================ 2. packages

PIP = r'''
import subprocess
r = subprocess.run([sys.executable, "-m", "pip", "install", "--index-url",
                    "http://127.0.0.1:PORT/simple", "terp-idx-pkg"],
                   capture_output=True, text=True)
sys.stderr.write(r.stdout + r.stderr)
report(rc=r.returncode, out=r.stdout[-2000:], err=r.stderr[-2000:])
'''


def test_pip_install_from_an_allowed_index_then_import(env, tmp_path, index):
    """Allowed by address: pip (the system's, PEP 668 "externally
    managed") installs into the session's own site directory, the next
    cell imports it without a restart, the ledger has the downloads under
    the cell, and another session does not see the package."""
    led = tmp_path / "ledger.jsonl"
    # pip in the second cell: the forwarder outlives the end of the first
    # (whose stray processes terp kills).
    r = run(env, tmp_path, "print(0)", PIP.replace("PORT", str(index.port)), r'''
        import terp_idx_pkg
        report(answer=terp_idx_pkg.ANSWER, file=terp_idx_pkg.__file__)
    ''', args=["--allow-host", "127.0.0.1:%d" % index.port],
        extra={"TERP_EGRESS_LEDGER": str(led)})
    assert [x["status"] for x in r.results] == ["ok", "ok", "ok"], r
    assert r.report(2)["rc"] == 0, r
    g = r.report(3)
    assert g["answer"] == 42
    assert g["file"] == "/workspace/.terp/site/python%s/terp_idx_pkg/__init__.py" % VER
    assert any(h.startswith("/simple/terp-idx-pkg") for h in index.hits)
    assert any(h.endswith(".whl") for h in index.hits)
    got = ends(ledger(led))
    # (a connection pip left open ends when terp does: "shutdown")
    assert got and all((e["verdict"], e["cell"], e["host"], e["port"]) ==
                       ("allowed", 2, "127.0.0.1", index.port) and
                       e["code"] in ("done", "shutdown") for e in got), got
    assert sum(e["down"] for e in got) > 1000
    # The user's environment is untouched, and another session has none of it.
    assert subprocess.run([SYSPY, "-c", "import terp_idx_pkg"]).returncode != 0
    other = run({**env, "XDG_STATE_HOME": str(tmp_path / "other")}, tmp_path, r'''
        import importlib.util
        report(found=importlib.util.find_spec("terp_idx_pkg") is not None)
    ''')
    assert other.report(1)["found"] is False, other


def test_pip_install_inside_a_venv_goes_to_the_session(envs, env, tmp_path, index):
    """The venv's own pip, with the venv read-only: the package lands in
    the session's site directory and imports next cell."""
    r = run(venv_env(env, tmp_path, envs), tmp_path, PIP.replace("PORT", str(index.port)),
            r'''
        import terp_idx_pkg
        report(file=terp_idx_pkg.__file__, pip=__import__("pip").__file__)
    ''', args=["--allow-host", "127.0.0.1:%d" % index.port])
    assert [x["status"] for x in r.results] == ["ok", "ok"], r
    assert r.report(1)["rc"] == 0, r
    g = r.report(2)
    assert g["file"].startswith("/workspace/.terp/site/python%s/" % VER)
    assert g["pip"].startswith(str(envs["venv"]) + "/")
    assert not list(envs["venv"].glob("lib/python*/site-packages/terp_idx_pkg"))


def test_pip_without_egress_fails_at_once_naming_the_setting(env, tmp_path, index):
    """No host allowed: no proxy, no forwarder; pip does not even try
    (PIP_NO_INDEX) and the cell is told which setting to change."""
    led = tmp_path / "ledger.jsonl"
    r = run(env, tmp_path, PIP.replace("PORT", str(index.port)) + r'''
report(proxy=os.environ.get("HTTPS_PROXY"), sock=os.path.exists("/run/terp/egress.sock"))
''', extra={"TERP_EGRESS_LEDGER": str(led)})
    assert r.results[0]["status"] == "ok", r
    g, h = r.reports(1)
    assert g["rc"] != 0 and "from versions: none" in g["err"], g
    assert h["proxy"] is None and h["sock"] is False
    note = r.text(1, "stderr")
    assert "no network access, so pip cannot download packages" in note
    assert "--allow-host HOST" in note and "/allow HOST" in note
    assert note.count("terp: this sandbox has no network") == 1
    assert index.hits == [] and ledger(led) == []


def test_pip_from_an_index_not_allowed_is_refused_with_the_flag(env, tmp_path, index,
                                                               server):
    """Egress on, but not for the index's port: the proxy refuses at once
    (one attempt, no retries), and the cell gets the exact flag."""
    other = server("http")
    led = tmp_path / "ledger.jsonl"
    r = run(env, tmp_path, PIP.replace("PORT", str(index.port)),
            args=["--allow-host", "127.0.0.1:%d" % other.port],
            extra={"TERP_EGRESS_LEDGER": str(led)})
    assert r.results[0]["status"] == "ok", r
    assert r.report(1)["rc"] != 0
    note = r.text(1, "stderr")
    flag = "--allow-host 127.0.0.1:%d" % index.port
    assert flag in note, r
    got = ends(ledger(led))
    assert len(got) == 1, got
    assert (got[0]["verdict"], got[0]["code"], got[0]["port"], got[0]["cell"]) == \
        ("refused", "port", index.port, 1)
    assert index.hits == []


# ================================================================ 3. refusals

def test_another_port_on_an_allowed_host_is_refused(gate, env, tmp_path, server):
    ok, other = server("http"), server("http")
    led = tmp_path / "ledger.jsonl"
    r = run(env, tmp_path, r'''
        report(ok=fetch("http://127.0.0.1:%d/" % OK), other=fetch("http://127.0.0.1:%d/" % OTHER),
               tunnel=connect("127.0.0.1:%d" % OTHER)[1:])
    '''.replace("OTHER", str(other.port)).replace("OK", str(ok.port)),
        args=["--allow-host", "127.0.0.1:%d" % ok.port], extra={"TERP_EGRESS_LEDGER": str(led)})
    g = r.report(1)
    assert g["ok"] == {"kind": "ok", "status": 200, "body": "hello from the host\n"}, g
    assert (g["other"]["status"], g["other"]["code"]) == (403, "port")
    assert g["tunnel"] == [403, "port"]
    assert other.accepted == 0 and ok.accepted == 1
    assert sorted(e["code"] for e in ends(ledger(led))) == ["done", "port", "port"]


def test_ip_literal_is_refused_when_only_the_name_is_allowed(gate, env, tmp_path, server):
    srv = server("http")
    r = run(env, tmp_path, r'''
        report(lit=fetch("http://127.0.0.1:%d/" % PORT), tun=connect("127.0.0.1:%d" % PORT)[1:])
    '''.replace("PORT", str(srv.port)), args=["--allow-host", "localhost:%d" % srv.port])
    g = r.report(1)
    assert (g["lit"]["status"], g["lit"]["code"]) == (403, "ip-literal"), g
    assert g["tun"] == [403, "ip-literal"]
    assert srv.accepted == 0
    assert "--allow-host 127.0.0.1:%d" % srv.port in r.text(1, "stderr")


def test_name_resolving_to_loopback_is_refused(gate, env, tmp_path, server):
    srv = server("http")
    led = tmp_path / "ledger.jsonl"
    r = run(env, tmp_path, r'''
        report(name=fetch("http://localhost:%d/" % PORT), tun=connect("localhost:%d" % PORT)[1:])
    '''.replace("PORT", str(srv.port)), args=["--allow-host", "localhost:%d" % srv.port],
        extra={"TERP_EGRESS_LEDGER": str(led)})
    g = r.report(1)
    assert (g["name"]["status"], g["name"]["code"]) == (403, "address"), g
    assert g["tun"] == [403, "address"]
    assert srv.accepted == 0
    assert all("loopback" in e["reason"] for e in ends(ledger(led)))


def test_chained_connect_through_a_relay_in_the_cell_is_checked(gate, env, tmp_path, server):
    """A relay written in the cell, in front of the forwarder, and the
    proxy's socket reached directly: the final target is checked the
    same whichever hop wrote the CONNECT."""
    srv = server("http")
    led = tmp_path / "ledger.jsonl"
    r = run(env, tmp_path, r'''
        import threading
        ls = socket.socket()
        ls.bind(("127.0.0.1", 0))
        ls.listen(1)
        def pipe(a, b):
            try:
                while True:
                    d = a.recv(65536)
                    if not d:
                        break
                    b.sendall(d)
                b.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        def relay():
            c, _ = ls.accept()
            u = socket.create_connection(("127.0.0.1", 3128), timeout=60)
            threading.Thread(target=pipe, args=(c, u), daemon=True).start()
            pipe(u, c)
        threading.Thread(target=relay, daemon=True).start()
        relayed = connect("evil.example.invalid:443", via=ls.getsockname())[1:]
        direct = connect("evil.example.invalid:443", unix="/run/terp/egress.sock")[1:]
        inner = connect("127.0.0.1:%d" % PORT, unix="/run/terp/egress.sock")[1:]
        report(relayed=relayed, direct=direct, inner=inner)
    '''.replace("PORT", str(srv.port)), args=["--allow-host", "127.0.0.1:%d" % srv.port],
        extra={"TERP_EGRESS_LEDGER": str(led)})
    g = r.report(1)
    assert g["relayed"] == [403, "not-allowed"], g
    assert g["direct"] == [403, "not-allowed"]
    assert g["inner"][0] == 200       # the socket is the proxy, nothing more
    refused = [e for e in ends(ledger(led)) if e["verdict"] == "refused"]
    assert [(e["host"], e["code"]) for e in refused] == \
        [("evil.example.invalid", "not-allowed")] * 2


def test_plain_sockets_ignoring_the_proxy_fail(gate, env, tmp_path):
    """The sandbox's own network namespace: the host's listener on
    127.0.0.1 is not there, and nothing else is routed."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(8)
    port = ls.getsockname()[1]
    try:
        r = run(env, tmp_path, r'''
            report(lo=tryop(socket.create_connection, ("127.0.0.1", PORT), timeout=30),
                   net=tryop(socket.create_connection, ("192.0.2.1", 80), timeout=30))
        '''.replace("PORT", str(port)), args=["--allow-host", "127.0.0.1:%d" % port])
        g = r.report(1)
        assert g == {"lo": "ECONNREFUSED", "net": "ENETUNREACH"}, r
        # A connection that had reached the listener would wait in its
        # backlog: there is none.
        ls.setblocking(False)
        with pytest.raises(BlockingIOError):
            ls.accept()
    finally:
        ls.close()


def test_udp_and_dns_do_not_leave(gate, env, tmp_path):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("127.0.0.1", 0))
    port = u.getsockname()[1]
    try:
        r = run(env, tmp_path, r'''
            d = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sent = tryop(d.sendto, b"leak", ("127.0.0.1", PORT))
            far = tryop(d.sendto, b"leak", ("192.0.2.53", 53))
            try:
                socket.getaddrinfo("example.invalid", 80)
                dns = "resolved"
            except socket.gaierror as e:
                dns = "gaierror"
            report(sent=sent, far=far, dns=dns, resolv=os.path.exists("/etc/resolv.conf"))
        '''.replace("PORT", str(port)), args=["--allow-host", "example.invalid"])
        g = r.report(1)
        # The datagram goes to the sandbox's own loopback (delivered, or
        # not, within sendto): none ever reaches the host's socket.
        assert g["far"] == "ENETUNREACH" and g["dns"] == "gaierror", g
        assert g["resolv"] is False
        u.setblocking(False)
        with pytest.raises(BlockingIOError):
            u.recv(100)
    finally:
        u.close()


def test_bytes_up_cap_cuts_the_tunnel_and_refuses_more(gate, env, tmp_path, server):
    sink = server("sink")
    led = tmp_path / "ledger.jsonl"
    r = run(env, tmp_path, r'''
        s, st, _ = connect("127.0.0.1:%d" % PORT)
        sent, err = 0, None
        try:
            for _ in range(100):
                s.sendall(b"x" * 10000)
                sent += 10000
        except OSError as e:
            err = type(e).__name__
        again = connect("127.0.0.1:%d" % PORT)[1:]
        report(st=st, err=err, sent=sent, again=again)
    '''.replace("PORT", str(sink.port)),
        args=["--allow-host", "127.0.0.1:%d" % sink.port, "--egress-max", "100000"],
        extra={"TERP_EGRESS_LEDGER": str(led)})
    g = r.report(1)
    assert g["st"] == 200 and g["err"] is not None and g["sent"] < 1000000, g
    assert g["again"] == [403, "cap"]
    codes = [(e["verdict"], e["code"]) for e in ends(ledger(led))]
    assert codes == [("allowed", "cap"), ("refused", "cap")], codes
    assert sink.received <= 100000
    assert "--egress-max" in r.text(1, "stderr")


# ================================================================ 4. the loop

def test_stalled_upstream_delays_neither_output_nor_ctrl_c(gate, env, tmp_path, server):
    """A cell pushes bytes at an allowed upstream that never reads, from
    a thread, while it prints: its output keeps streaming once every
    buffer up to the upstream is full, and Ctrl-C interrupts the cell."""
    stall = server("stall")
    code = PRELUDE + textwrap.dedent(r'''
        import threading, time
        s, st, _ = connect("127.0.0.1:%d" % PORT)
        print("tunnel", st, flush=True)
        def hog():
            try:
                while True:
                    s.sendall(b"x" * 65536)
            except OSError:
                pass
        threading.Thread(target=hog, daemon=True).start()
        i = 0
        while True:
            print("tick", i, flush=True)
            i += 1
            time.sleep(0.002)
    ''').replace("PORT", str(stall.port))
    p = subprocess.Popen([str(TERP), "exec", "--json", "--allow-host",
                          "127.0.0.1:%d" % stall.port, "-c", code, "-c", "print('after')"],
                         stdout=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    events, ticks, full, sent = [], 0, None, False
    try:
        for line in p.stdout:
            ev = json.loads(line)
            events.append(ev)
            if ev["type"] != "stdout" or ev["cell"] != 1:
                continue
            ticks += ev["text"].count("tick")
            # A safety net only (about a minute of ticks), not a measure.
            assert full is not None or ticks < 30000, "the upstream never filled up"
            if full is None and stall.queued() >= 64 * 1024:
                full = ticks        # the upstream holds what it will take
            if full is not None and ticks >= full + 100 and not sent:
                p.send_signal(signal.SIGINT)
                sent = True
        p.wait(timeout=HANG)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    results = [e for e in events if e["type"] == "result"]
    assert [e["status"] for e in results] == ["interrupted", "ok"], events[-20:]
    assert "tunnel 200" in "".join(e["text"] for e in events if e["type"] == "stdout")
    assert full is not None and sent
    assert stall.accepted == 1


# ================================================================ 4. the ledger

NET_CELL = PRELUDE + r'''
report(ok=fetch("http://127.0.0.1:PORT/simple/terp-idx-pkg/"),
       evil=fetch("http://evil.example.invalid/x"))
'''


def test_ledger_under_the_cell_in_json_journal_and_tool_result(gate, env, tmp_path, index):
    """Each attempt of a cell (allowed with its bytes, refused with why)
    is a "net" event in --json, a "net" line in the journal, one line in
    the tool result the model gets next, and one line under the cell in
    -p's output."""
    cell = NET_CELL.replace("PORT", str(index.port))
    turns = [{"openai": {"tool_calls": [{"id": "c1", "code": cell}]}},
             {"openai": {"text": "done"}}]
    allow = ("--allow-host", "127.0.0.1:%d" % index.port)
    r, reqs = ask(env, tmp_path, turns, *allow)
    assert r.rc == 0, r
    g = r.report(1)
    assert g["ok"]["status"] == 200 and g["evil"]["code"] == "not-allowed", g
    net = [e for e in r.events if e.get("type") == "net"]
    ok = [e for e in net if e["host"] == "127.0.0.1"]
    evil = [e for e in net if e["host"] == "evil.example.invalid"]
    assert len(ok) == 1 and len(evil) == 1 and len(net) == 2, net
    assert (ok[0]["cell"], ok[0]["port"], ok[0]["verdict"], ok[0]["method"]) == \
        (1, index.port, "allowed", "GET")
    assert ok[0]["down"] > 100 and ok[0]["up"] > 0 and ok[0]["time_ms"] > 0
    assert (evil[0]["cell"], evil[0]["port"], evil[0]["verdict"], evil[0]["code"],
            evil[0]["reason"]) == (1, 80, "refused", "not-allowed", "not allowed")
    # the model's next request: the tool result names both, the refusal's why
    tool = [m for m in reqs[1]["body"]["messages"] if m["role"] == "tool"][-1]["content"]
    line = [l for l in tool.splitlines() if l.startswith("network: ")]
    assert len(line) == 1, tool
    assert ("127.0.0.1:%d allowed (" % index.port) in line[0], line
    assert "evil.example.invalid:80 refused (not allowed)" in line[0], line
    # the journal: one "net" line per attempt
    (sid,) = [e["id"] for e in r.events if e.get("type") == "session"]
    (jpath,) = Path(env["XDG_STATE_HOME"]).glob("terp/sessions/%s/notebook.jsonl" % sid)
    recs = [json.loads(l) for l in jpath.read_text().splitlines() if l.strip()]
    jnet = [x for x in recs if x.get("t") == "net"]
    assert sorted((x["host"], x["verdict"], x["cell"]) for x in jnet) == \
        [("127.0.0.1", "allowed", 1), ("evil.example.invalid", "refused", 1)], jnet
    # -p without --json: one line under the cell
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from fake_model import FakeModel
    srv = FakeModel({"turns": turns}, str(tmp_path / "plain.jsonl"))
    port = srv.start()
    try:
        p = subprocess.run([str(TERP), "-p", "again", "--provider", "openai", "--base-url",
                            "http://127.0.0.1:%d/v1" % port, *allow], capture_output=True,
                           text=True, cwd=tmp_path, timeout=HANG,
                           env={**env, "OPENAI_API_KEY": "sk-terp-test-0123"})
    finally:
        srv.stop()
    assert p.returncode == 0, p.stderr
    under = [l for l in p.stderr.splitlines() if l.startswith("    net: ")]
    assert len(under) == 1, p.stderr
    assert under[0].startswith("    net: 127.0.0.1:%d ✓ " % index.port), under
    assert "↓" in under[0] and under[0].endswith(" · evil.example.invalid ✗ not allowed"), under
    assert p.stderr.index("    [1] ok") < p.stderr.index("    net: "), p.stderr


# ================================================================ 5. /allow and /deny

def _get(name, port):
    """A /py line: GET the host's server on port, print NAME=status."""
    body = ("import urllib.request as u\\ntry:\\n s = u.urlopen('http://127.0.0.1:%d/', "
            "timeout=60).status\\nexcept Exception as x:\\n s = getattr(x, 'code', "
            "type(x).__name__)\\nprint('%s=%%s' %% s)" % (port, name))
    return '/py exec("%s")' % body


def test_allow_and_deny_in_the_notebook_then_resume(gate, env, tmp_path, server):
    """A session started without egress: /allow starts the proxy (the
    sandbox restarts, saying so) and the host answers; /allow then /deny
    of another host leaves it refused. The journal keeps both, so the
    resumed session (no --allow-host given) has the same rules."""
    from tui_tmux import Tmux
    from conftest import session_dir
    a, b = server("http"), server("http")
    e = {**env, "TERM": "tmux-256color", "LANG": "C.UTF-8", "OPENAI_API_KEY": "k"}
    t = Tmux("%s --provider openai --model fake --base-url http://127.0.0.1:9/v1" % TERP,
             120, 45, e, cwd=str(tmp_path))
    try:
        t.wait(r"│ ready", timeout=HANG)
        t.text(_get("A", a.port))
        t.keys("Enter")
        s = t.wait(r"\[1\] you · ok", timeout=HANG)
        assert re.search(r"^  A=URLError", s, re.M), s
        t.text("/allow 127.0.0.1:%d" % a.port)
        t.keys("Enter")
        t.wait(r"the Python session restarts for", timeout=HANG)
        t.wait(r"│ ready", timeout=HANG)
        t.text(_get("A", a.port))
        t.keys("Enter")
        s = t.wait(r"\[2\] you · ok", timeout=HANG)
        assert re.search(r"^  A=200", s, re.M), s
        for cmd in ("/allow 127.0.0.1:%d" % b.port, "/deny 127.0.0.1:%d" % b.port):
            t.text(cmd)
            t.keys("Enter")
        t.wait(r"may no longer reach 127\.0\.0\.1:%d" % b.port, timeout=HANG)
        t.text(_get("B", b.port))
        t.keys("Enter")
        s = t.wait(r"\[3\] you · ok", timeout=HANG)
        assert re.search(r"^  B=403", s, re.M), s
        t.text("/quit")
        t.keys("Enter")
        t.wait(r"EXITED rc=0", timeout=HANG)
    finally:
        t.close()
    assert a.accepted == 1 and b.accepted == 0
    sid = session_dir(env).name
    recs = [json.loads(l) for l in (session_dir(env) / "notebook.jsonl").read_text().splitlines()]
    assert [(x["kind"], x["text"]) for x in recs if x.get("t") == "note"
            and x.get("kind") in ("allow", "deny")] == [
        ("allow", "127.0.0.1:%d" % a.port), ("allow", "127.0.0.1:%d" % b.port),
        ("deny", "127.0.0.1:%d" % b.port)]
    code = PRELUDE + ("report(a=fetch('http://127.0.0.1:%d/'), b=fetch('http://127.0.0.1:%d/'))"
                      % (a.port, b.port))
    r, _ = ask(env, tmp_path, [{"openai": {"tool_calls": [{"id": "c1", "code": code}]}},
                               {"openai": {"text": "done"}}], "--resume", sid)
    assert r.rc == 0, r
    g = r.reports(4)[-1]
    assert g["a"]["status"] == 200 and g["b"]["status"] == 403, g
    assert a.accepted == 2 and b.accepted == 0


# ================================================================ 6. --resume --replay

def test_resume_replay_installs_the_packages_again_first(env, tmp_path, index):
    """A session pip-installs a package from the user's index (allowed;
    PIP_INDEX_URL) in a cell that then fails, so the replay skips it,
    and imports it in the next. The journal records the install; with
    the session's site directory gone (a cleaned workspace, another
    interpreter), --resume --replay installs it again from the same
    index first, and the replayed import works."""
    from conftest import session_dir
    allow = ("--allow-host", "127.0.0.1:%d" % index.port)
    e = {**env, "PIP_INDEX_URL": "http://127.0.0.1:%d/simple" % index.port}
    pip = ("import subprocess, sys\n"
           "r = subprocess.run([sys.executable, '-m', 'pip', 'install', 'terp-idx-pkg'])\n"
           "assert r.returncode == 0\n"
           "raise RuntimeError('after pip')\n")
    use = "import terp_idx_pkg\nprint('ANSWER=%d' % terp_idx_pkg.ANSWER)\n"
    r, _ = ask(e, tmp_path, [{"openai": {"tool_calls": [{"id": "c1", "code": pip},
                                                        {"id": "c2", "code": use}]}},
                             {"openai": {"text": "done"}}], *allow)
    assert r.rc == 0, r
    assert [x["status"] for x in r.results] == ["error", "ok"], r
    assert [(x["cell"], x["name"], x["version"]) for x in r.events
            if x.get("type") == "installed"] == [(1, "terp_idx_pkg", "1.0")], r
    sd = session_dir(e)
    recs = [json.loads(l) for l in (sd / "notebook.jsonl").read_text().splitlines()]
    assert [(x["c"], x["name"], x["version"]) for x in recs if x.get("t") == "installed"] \
        == [(1, "terp_idx_pkg", "1.0")]
    ws = sd / "workspace"
    if not ws.exists():
        ws = sd / "sandbox" / "workspace"
    shutil.rmtree(ws / ".terp" / "site")
    hits = len(index.hits)
    r, _ = ask(e, tmp_path, [{"openai": {"text": "done"}}], "--resume", sd.name, "--replay",
               *allow)
    assert r.rc == 0, r
    assert [x["status"] for x in r.results] == ["ok", "ok"], r
    assert "installed again: terp_idx_pkg==1.0" in r.text(3), r
    assert "ANSWER=42" in r.text(4), r
    assert any(h.endswith(".whl") for h in index.hits[hits:]), index.hits
    notes = [x["message"] for x in r.events if x.get("type") == "notice"]
    assert any(n.startswith("replaying 2 cells that succeeded before the state was lost: "
                            "the packages pip installed, [2]") for n in notes), notes
    assert "replay done: 2 cells re-ran" in notes, notes


# ================================================================ 7. the notebook names it

def test_notebook_names_the_python_and_offers_the_pip_index(envs, env, tmp_path, index):
    """The status bar names the interpreter (from the probe, once the
    sandbox said), and the user's pip index, not allowed, is offered in
    the notebook with the exact flag (as -p prints it on stderr)."""
    from tui_tmux import Tmux
    e = {**venv_env(env, tmp_path, envs), "TERM": "tmux-256color", "LANG": "C.UTF-8",
         "OPENAI_API_KEY": "k", "PIP_INDEX_URL": "http://127.0.0.1:%d/simple" % index.port}
    t = Tmux("%s --provider openai --model fake --base-url http://127.0.0.1:9/v1" % TERP,
             200, 40, e, cwd=str(tmp_path))
    try:
        s = t.wait(r"│ Python %s\.\d+ \(virtualenv [^)]*\) │ ready" % re.escape(VER),
                   timeout=HANG)
        assert "(virtualenv %s)" % envs["venv"] in s, s
        s = t.wait(r"add --allow-host 127\.0\.0\.1:%d" % index.port, timeout=HANG)
        assert "pip's index 127.0.0.1 (PIP_INDEX_URL) is not reachable" in s, s
        t.text("/quit")
        t.keys("Enter")
        t.wait(r"EXITED rc=0", timeout=HANG)
    finally:
        t.close()
    assert index.hits == []
