"""Shared fixtures for the integration tests: the built binary, a private
XDG state/config per test, and helpers to run terp and parse --json.

And the run's guards, so that the tests hold on any machine and leave it
as they found it:
- the process's own HOME and XDG folders point into a private folder for
  the whole run (API keys removed), so nothing a test starts can read the
  developer's config or write to the real state;
- before the first test, terp must start its sandbox once
  (`terp exec -c 'print(1)'`) and loopback must work; if not, the whole
  run stops with one line that says why (terp's own reason) instead of
  failing or skipping every test one by one;
- no test may leave a session behind: each test's sessions must not have
  a sandbox folder left under /var/lib/terp/sessions, none may land in
  the run's shared default state, and at the end nothing of this run may
  have appeared in the real state folder or /var/lib/terp/sessions."""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TERP = ROOT / "terp"
VAR_SESSIONS = Path("/var/lib/terp/sessions")
PROBE_TIMEOUT = 120


def _state_sessions(environ):
    """Where terp keeps sessions under environ (util.c's xdg_dir)."""
    st = environ.get("XDG_STATE_HOME") or ""
    if not st.startswith("/"):
        home = environ.get("HOME") or ""
        st = os.path.join(home if home.startswith("/") else "/tmp", ".local/state")
    return Path(st) / "terp" / "sessions"


def _listdir(p):
    try:
        return set(os.listdir(p))
    except OSError:
        return set()


def traversable(path):
    """As root, terp runs the sandbox under its own uid, which must reach
    the session folder; pytest makes its folders 0700, so terp would put
    the sandbox's folders under /var/lib/terp instead and leave them
    there. Search permission (not read) for others on path and every
    folder above it up to /tmp avoids that."""
    if os.geteuid() != 0:
        return path
    p = Path(path).resolve()
    for q in [p, *p.parents]:
        if q in (Path("/"), Path("/tmp")):
            break
        st = os.stat(q)
        os.chmod(q, st.st_mode | 0o011)
    return path


def private_env(base, environ=None):
    """environ (default: this process's) with no API keys, PATH
    /usr/bin:/bin, and HOME and the XDG folders inside base."""
    src = os.environ if environ is None else environ
    e = {k: v for k, v in src.items()
         if not k.endswith("_API_KEY") and not k.startswith(("OPENAI_", "AZURE_", "ANTHROPIC_"))}
    base = Path(base)
    # The sandbox runs python3 on PATH (pyenv.c): the system's, which
    # has what the tests need (a pyenv shim under a 0700 /root would be
    # refused as root, an activated venv would lack pandas). Tests that want
    # another Python say so.
    e["PATH"] = "/usr/bin:/bin"
    e.pop("VIRTUAL_ENV", None)
    e.pop("CONDA_PREFIX", None)
    e["XDG_STATE_HOME"] = str(base / "state")
    e["XDG_CONFIG_HOME"] = str(base / "config")
    e["HOME"] = str(base / "home")
    os.makedirs(e["HOME"], exist_ok=True)
    return e


# ---------------------------------------------------------------- the run's private home

_run = {}


def pytest_configure(config):
    """The whole run's HOME and XDG folders: a private folder, so that a
    test that forgets its own cannot touch the real ones."""
    if _run:
        return
    _run["real_state"] = _state_sessions(os.environ)
    _run["var_before"] = _listdir(VAR_SESSIONS)
    _run["state_before"] = _listdir(_run["real_state"])
    _run["top_before"] = {d: _listdir(d) for d in {str(ROOT), os.getcwd()}}
    root = Path(tempfile.mkdtemp(prefix="terp-test-run-", dir="/tmp"))
    os.chmod(root, 0o711)
    _run["root"] = root
    _run["ours"] = set()
    env = private_env(root / "default")
    os.environ.clear()
    os.environ.update(env)
    _run["default_state"] = _state_sessions(os.environ)


def _session_ids(under):
    """Ids of the terp sessions anywhere under the folder."""
    out = set()
    for d in Path(under).rglob("terp/sessions"):
        out |= _listdir(d)
    return out


def left_behind(ids):
    """The sandbox folders of these sessions still under /var/lib/terp,
    removed once named (so one leak is reported once)."""
    found = []
    for i in sorted(ids):
        p = VAR_SESSIONS / i
        if os.path.lexists(p):
            found.append(str(p))
            shutil.rmtree(p, ignore_errors=True)
    return found


def check_nothing_left(under):
    """Fails naming what the sessions under a test's folder left in
    /var/lib/terp. For fixtures with folders of their own (test_hostile's
    module folder) to call before they remove them."""
    ids = _session_ids(under)
    _run.setdefault("ours", set()).update(ids)
    found = left_behind(ids)
    if found:
        pytest.fail("left behind by terp sessions of this test: " + ", ".join(found),
                    pytrace=False)


@pytest.fixture(autouse=True)
def _leaves_nothing_behind(tmp_path):
    """Runs first and ends last around every test: the test's sessions
    may leave nothing in /var/lib/terp, and none may fall into the run's
    shared default state (a test that ran terp without its own
    XDG_STATE_HOME)."""
    traversable(tmp_path)
    before = _listdir(_run["default_state"])
    var_before = _listdir(VAR_SESSIONS)
    yield
    new_var = _listdir(VAR_SESSIONS) - var_before
    strays = _listdir(_run["default_state"]) - before
    for s in strays:
        shutil.rmtree(_run["default_state"] / s, ignore_errors=True)
    ids = _session_ids(tmp_path) | strays
    _run["ours"] |= ids
    problems = []
    if strays:
        problems.append("ran terp without a private XDG_STATE_HOME (sessions %s)"
                        % ", ".join(sorted(strays)))
    found = left_behind(ids)
    if found:
        problems.append("left behind " + ", ".join(found))
    # made while this test ran, by no session of its own: a helper it
    # ran (bench/numbers_fp.py) or another terp; named in the run's note
    for i in new_var - ids:
        _run.setdefault("var_during", {})[i] = os.environ.get(
            "PYTEST_CURRENT_TEST", "?").rsplit(" ", 1)[0]
    if problems:
        pytest.fail("this test " + "; ".join(problems), pytrace=False)


def pytest_sessionfinish(session, exitstatus):
    """Nothing of this run in the real state folder, /var/lib/terp, the
    checkout or the folder pytest ran in. Entries that appeared there but belong to no
    session of this run (another terp on the machine) are only noted."""
    if not _run or "root" not in _run:
        return
    ours_paths = [str(_run["root"])] + ([_run["basetemp"]] if "basetemp" in _run else [])
    problems, notes = [], []
    new_var = _listdir(VAR_SESSIONS) - _run["var_before"]
    during = _run.get("var_during", {})
    for i in sorted(new_var):
        (problems if i in _run["ours"] else notes).append(
            str(VAR_SESSIONS / i) + (" (during %s)" % during[i] if i in during else ""))
    for i in sorted(_listdir(_run["real_state"]) - _run["state_before"]):
        journal = _run["real_state"] / i / "notebook.jsonl"
        try:
            text = journal.read_text(errors="replace")[:1 << 20]
        except OSError:
            text = ""
        mine = i in _run["ours"] or any(p in text for p in ours_paths)
        (problems if mine else notes).append(str(_run["real_state"] / i))
    # terp's default --out folder, made by a test that ran terp without
    # its own working folder
    for d, before in _run["top_before"].items():
        if "out" in _listdir(d) - before:
            problems.append(os.path.join(d, "out"))
    strays = _listdir(_run["default_state"])
    problems += [str(_run["default_state"] / s) for s in sorted(strays)]
    _run["report"] = (problems, notes)
    if problems and session.exitstatus == 0:
        session.exitstatus = 1
    if not problems:
        shutil.rmtree(_run["root"], ignore_errors=True)


def pytest_terminal_summary(terminalreporter):
    problems, notes = _run.get("report", ([], []))
    if problems:
        terminalreporter.write_line(
            "FAILED: the tests left behind: " + ", ".join(problems), red=True, bold=True)
    if notes:
        terminalreporter.write_line(
            "note: %d session folder(s) appeared during the run but belong to no test of "
            "this run (another terp on this machine), e.g. %s"
            % (len(notes), ", ".join(notes[:3])))


# ---------------------------------------------------------------- the machine can run this

def _loopback_error():
    """None, or why a TCP connection over 127.0.0.1 does not work."""
    try:
        with socket.socket() as srv:
            srv.bind(("127.0.0.1", 0))
            srv.listen(1)
            with socket.create_connection(srv.getsockname(), timeout=30) as c:
                a, _ = srv.accept()
                with a:
                    c.sendall(b"x")
                    if a.recv(1) != b"x":
                        return "a byte sent over it did not arrive"
    except OSError as e:
        return str(e)
    return None


def _outer_filters():
    """How many seccomp filters this process already runs under."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Seccomp_filters:"):
                return int(line.split(":", 1)[1])
    return 0


@pytest.fixture(scope="session", autouse=True)
def _machine_runs_the_sandbox(tmp_path_factory):
    """Once, before the first test: terp is built, loopback works and the
    sandbox starts. Otherwise no test can say anything (the security
    tests least of all), so the run stops here with one line that says
    why, instead of a page of failures or, worse, skips."""
    if not os.access(TERP, os.X_OK):
        pytest.exit("terp is not built (%s): run `make terp`, or `make check`" % TERP,
                    returncode=1)
    why = _loopback_error()
    if why:
        pytest.exit("loopback networking does not work here (127.0.0.1: %s), and the "
                    "tests' fake servers need it: bring it up (ip link set lo up)" % why,
                    returncode=1)
    _run["basetemp"] = str(tmp_path_factory.getbasetemp())
    d = traversable(tmp_path_factory.mktemp("sandbox-probe"))
    try:
        p = subprocess.run([str(TERP), "exec", "-c", "print(1)"], capture_output=True,
                           text=True, errors="replace", timeout=PROBE_TIMEOUT, cwd=d,
                           env=private_env(d))
    except subprocess.TimeoutExpired:
        pytest.exit("terp's sandbox did not start here: `terp exec -c 'print(1)'` did not "
                    "finish in %d s" % PROBE_TIMEOUT, returncode=1)
    if p.returncode != 0 or p.stdout != "1\n":
        lines = [l.strip() for l in p.stderr.splitlines() if l.strip()]
        reason = lines[-1][:400] if lines else (
            "`terp exec -c 'print(1)'` exited with status %d and printed %r"
            % (p.returncode, p.stdout[:200]))
        outer = _outer_filters()
        if outer:
            reason += ("; note: this process already runs under %d seccomp filter(s) of "
                       "the machine's (a container's profile?), which may refuse what bwrap "
                       "needs (mount, unshare, clone with namespaces): allow those" % outer)
        pytest.exit("terp's sandbox cannot start on this machine, so the integration and "
                    "security tests cannot run: " + reason, returncode=1)
    _run["ours"] |= _session_ids(d)
    left = left_behind(_session_ids(d))
    if left:
        pytest.exit("the sandbox probe left behind " + ", ".join(left), returncode=1)


# ---------------------------------------------------------------- helpers for tests

def wait_until(pred, what, timeout=60, every=0.02):
    """Polls pred() until it is true; a generous deadline as a safety net
    only (it fails the test, saying what never happened), never as the
    thing a test asserts. Returns pred()'s value."""
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > end:
            pytest.fail("%s did not happen within %d s" % (what, timeout), pytrace=False)
        time.sleep(every)


def free_port():
    """A loopback TCP port nothing listens on now (the kernel's choice of
    a free one), for a server a test starts or for a refused connect."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _procs():
    """{pid: (parent pid, command line)} from /proc: procps (pgrep, ps)
    is not on every machine (a minimal Debian has none)."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue            # gone meanwhile
        # the name (field 2) may hold spaces and ")": the fields after it
        out[d] = (st[st.rindex(")") + 2:].split()[1], cmd)
    return out


def children(pid):
    """The pids (strings) whose parent is pid."""
    return [p for p, (pp, _) in _procs().items() if pp == str(pid)]


def command_lines():
    """[(pid, command line)] of every process."""
    return [(p, cmd) for p, (_, cmd) in _procs().items()]


def pids_gone(pids, timeout=60):
    """True once none of the pids exists (a safety-net deadline)."""
    end = time.monotonic() + timeout
    while True:
        if not [p for p in pids if os.path.exists("/proc/%s" % p)]:
            return True
        if time.monotonic() > end:
            return False
        time.sleep(0.02)


# A cell that waits for the test: it polls for a file the test creates in
# the session's workspace (release()), and says whether it was released
# or gave up at its safety deadline, so that a test that never released
# it fails instead of passing late.
GATE = ("import os as _os, time as _time\n"
        "_end = _time.monotonic() + 60\n"
        "while not _os.path.exists('/workspace/.release') and _time.monotonic() < _end:\n"
        "    _time.sleep(0.01)\n"
        "print('released' if _os.path.exists('/workspace/.release') else 'gave up waiting',"
        " flush=True)\n")


def session_dir(env):
    """The one session folder under env's private state."""
    d = _state_sessions(env)
    ids = sorted(_listdir(d))
    assert len(ids) == 1, ids
    return d / ids[0]


def release(env):
    """Lets a GATE cell of the one session under env go on."""
    ws = session_dir(env) / "workspace"
    if not ws.exists():
        ws = session_dir(env) / "sandbox" / "workspace"
    (ws / ".release").write_text("")


@pytest.fixture
def env(tmp_path):
    """A clean environment: no API keys, private XDG folders."""
    e = private_env(tmp_path)
    e.pop("NO_COLOR", None)
    return e


class Result:
    def __init__(self, proc):
        self.rc = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr
        self.events = []
        for line in proc.stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                self.events.append(json.loads(line))

    def of(self, type_):
        return [e for e in self.events if e["type"] == type_]

    def results(self):
        return self.of("result")

    def stdout_of(self, cell):
        return "".join(e["text"] for e in self.events
                       if e["type"] == "stdout" and e["cell"] == cell)

    def __repr__(self):
        return "rc=%s\nstdout=%s\nstderr=%s" % (self.rc, self.out[-3000:], self.err[-3000:])


@pytest.fixture
def terp(env, tmp_path):
    """terp(*args, input=None, timeout=120) -> Result, run in tmp_path."""
    def run(*args, input=None, timeout=120, cwd=None, extra_env=None):
        e = dict(env)
        if extra_env:
            e.update(extra_env)
        p = subprocess.run([str(TERP), *map(str, args)], input=input, capture_output=True,
                           text=True, timeout=timeout, cwd=cwd or tmp_path, env=e,
                           errors="replace")
        return Result(p)
    return run


# ---------------------------------------------------------------- TUI tests (tui_tmux.py)

@pytest.fixture(scope="session")
def fake_core():
    """build/tui-harness, built once a run: the TUI against a scripted
    fake core (tests/tui/fake_agent.c)."""
    from tui_tmux import build_fake_core
    return build_fake_core()


@pytest.fixture
def tmux():
    """tmux(cmd, env, cwd, width=100, height=30, ready=None, timeout=60)
    -> tui_tmux.Tmux running cmd; waits for the regex ready when given.
    Every session started is closed at the end of the test."""
    from tui_tmux import Tmux
    started = []

    def start(cmd, env, cwd, width=100, height=30, ready=None, timeout=60):
        t = Tmux(cmd, width, height, env, cwd=str(cwd))
        started.append(t)
        if ready:
            t.wait(ready, timeout=timeout)
        return t
    yield start
    for t in started:
        t.close()


@pytest.fixture
def fake_model(tmp_path):
    """fake_model(script) -> port: tests/fake_model.py serving script on
    127.0.0.1, logging every request to tmp_path/log.jsonl; stopped at the
    end of the test (after the tmux sessions when requested before tmux)."""
    import sys
    if str(ROOT / "tests") not in sys.path:
        sys.path.insert(0, str(ROOT / "tests"))
    from fake_model import FakeModel
    servers = []

    def start(script):
        srv = FakeModel(script, str(tmp_path / "log.jsonl"))
        servers.append(srv)
        return srv.start()
    yield start
    for srv in servers:
        srv.stop()


@pytest.fixture
def fake(tmp_path):
    """fake(turns or script, respond=None) -> a started tests/fake_model.py
    server with .url (OpenAI style base), .root (no /v1) and .requests()
    (its log); a list is the script's turns. Stopped after the test."""
    import sys
    if str(ROOT / "tests") not in sys.path:
        sys.path.insert(0, str(ROOT / "tests"))
    from fake_model import FakeModel, read_log
    servers = []

    def start(turns, respond=None):
        log = tmp_path / ("model%d.jsonl" % len(servers))
        script = {"turns": turns} if isinstance(turns, list) else turns
        srv = FakeModel(script, str(log), respond=respond)
        port = srv.start()
        srv.root = "http://127.0.0.1:%d" % port
        srv.url = srv.root + "/v1"
        srv.requests = lambda: read_log(str(log))
        servers.append(srv)
        return srv

    yield start
    for s in servers:
        s.stop()


@pytest.fixture(scope="module")
def jupyter(tmp_path_factory):
    """A real Jupyter Server (test_jupyter.Server) on loopback, one per
    test module."""
    r = subprocess.run(["/usr/bin/python3", "-c", "import jupyter_server, ipykernel"],
                       capture_output=True)
    if r.returncode != 0:
        pytest.fail("python3-jupyter-server or python3-ipykernel is missing: scripts/deps.sh "
                    "installs them", pytrace=False)
    from test_jupyter import Server
    s = Server(tmp_path_factory.mktemp("jupyter"))
    yield s
    s.stop()
