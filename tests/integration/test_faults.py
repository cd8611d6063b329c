"""Fault injection (issue 21): the real ./terp against damaged journals,
full disks (small tmpfs mounts filled mid-session, in a private mount
namespace so nothing leaks), a missing or unset HOME with a planted
/tmp/.config, /dev/full as stdout and FIFOs where terp opens files.
Each case names the item of issue 21 it covers. A case that needs root
or a mount fails with one clear line where it cannot run."""
import tempfile
import json
import os
import random
import shutil
import stat
import subprocess
import sys
import threading

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TERP = os.path.join(ROOT, "terp")
sys.path.insert(0, os.path.join(ROOT, "tests"))
from fake_model import FakeModel, read_log  # noqa: E402

SEED = int(os.environ.get("TERP_FAULT_SEED", "21"))


@pytest.fixture
def menv(env):
    e = dict(env)
    e["OPENAI_API_KEY"] = "test-key-not-real"
    return e


@pytest.fixture
def model(tmp_path):
    """model(turns) -> (flags, requests()): the fake OpenAI server."""
    servers = []

    def start(turns):
        log = str(tmp_path / ("model-%d.jsonl" % len(servers)))
        srv = FakeModel({"turns": turns}, log)
        port = srv.start()
        servers.append(srv)
        flags = ["--provider", "openai", "--model", "fake",
                 "--base-url", "http://127.0.0.1:%d/v1" % port]
        return flags, lambda: [r["body"] for r in read_log(log)] if os.path.exists(log) else []
    yield start
    for s in servers:
        s.stop()


def run(env, cwd, *args, timeout=120, **kw):
    return subprocess.run([TERP, *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout, errors="replace", **kw)


def sessions(env):
    return os.path.join(env["XDG_STATE_HOME"], "terp", "sessions")


def journal_path(env):
    ids = sorted(os.listdir(sessions(env)))
    assert len(ids) == 1, ids
    return ids[0], os.path.join(sessions(env), ids[0], "notebook.jsonl")


def tool_call(code, id):
    return {"openai": {"tool_calls": [{"id": id, "code": code}]}}


def answer(text):
    return {"openai": {"text": text}}


def need_root():
    if os.geteuid() != 0:
        pytest.fail("this case needs root (a private mount namespace): run it as root")


def in_namespace(script, env, cwd, timeout=120):
    """sh -c script in a private mount namespace (unshare -m): mounts made
    there vanish with it."""
    need_root()
    if shutil.which("unshare") is None:
        pytest.fail("unshare (util-linux) is needed for the mount namespace cases")
    p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                       capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout,
                       errors="replace")
    if "unshare:" in p.stderr and p.returncode != 0:
        pytest.fail("cannot make a private mount namespace: " + p.stderr.strip())
    return p


def five_cells(env, cwd):
    """A real session of five hand-run cells; returns (id, journal path)."""
    cells = ["print('cell %s')" % w for w in ("one", "two", "three", "four", "five")]
    args = ["exec"]
    for c in cells:
        args += ["-c", c]
    r = run(env, cwd, *args)
    assert r.returncode == 0, r.stderr
    return journal_path(env)


def export_md(env, cwd, sid):
    out = os.path.join(str(cwd), "x-%d.md" % random.randrange(1 << 30))
    r = run(env, cwd, "--export", sid, out)
    assert r.returncode == 0, r.stderr
    with open(out) as f:
        return f.read()


# ---- item 3: a damaged cell line costs that cell only -----------------

def test_damaged_cell_line_skips_only_that_cell(env, tmp_path):
    sid, path = five_cells(env, tmp_path)
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    rnd = random.Random(SEED)
    k = next(i for i, l in enumerate(lines) if l.startswith(b'{"t":"cell","n":3'))
    # a flipped byte that breaks the line's JSON (a quote or brace)
    line = bytearray(lines[k])
    at = rnd.choice([i for i, c in enumerate(line) if c in b'"{}:'])
    line[at] ^= 0x40
    lines[k] = bytes(line)
    with open(path, "wb") as f:
        f.write(b"\n".join(lines))
    md = export_md(env, tmp_path, sid)
    for w in ("one", "two", "four", "five"):
        assert "print('cell %s')" % w in md, md
        assert "cell %s\n" % w in md
    # the damaged cell keeps its place (the numbers stay right) and its output
    assert "cell three\n" in md
    assert "record in the journal was damaged" in md


# ---- item 5: a damaged reply line leaves a resumable conversation -----

def consistent(body):
    """Every tool result right after the reply that made its call, and
    every call answered: what the OpenAI API insists on."""
    msgs = body["messages"]
    open_calls = None
    for m in msgs:
        if m["role"] == "tool":
            assert open_calls is not None and m["tool_call_id"] in open_calls, (m, msgs)
            open_calls.discard(m["tool_call_id"])
            continue
        assert not open_calls, ("unanswered calls", open_calls, msgs)
        open_calls = None
        if m["role"] == "assistant" and m.get("tool_calls"):
            open_calls = {c["id"] for c in m["tool_calls"]}
    assert not open_calls, ("unanswered calls", open_calls)


def three_calls(model, menv, tmp_path):
    flags, _ = model([tool_call("print('a')", "call_1"), tool_call("print('b')", "call_2"),
                      tool_call("print('c')", "call_3"), answer("done")])
    r = run(menv, tmp_path, *flags, "-p", "first?")
    assert r.returncode == 0, r.stderr
    return journal_path(menv)


@pytest.mark.parametrize("which", ["reply", "tool", "cell", "question"])
def test_damaged_line_leaves_a_resumable_conversation(model, menv, tmp_path, which):
    sid, path = three_calls(model, menv, tmp_path)
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    rnd = random.Random(SEED)
    hits = [i for i, l in enumerate(lines) if l.startswith(b'{"t":"%s"' % which.encode())]
    k = hits[1] if len(hits) > 1 else hits[0]
    lines[k] = lines[k][:rnd.randrange(5, len(lines[k]) - 1)]  # cut: not JSON
    with open(path, "wb") as f:
        f.write(b"\n".join(lines))
    flags, requests = model([answer("again")])
    r = run(menv, tmp_path, *flags, "--resume", sid, "-p", "second?")
    assert r.returncode == 0, r.stderr
    (body,) = requests()
    consistent(body)
    assert any("second?" in (m.get("content") or "") for m in body["messages"])


def test_random_damage_never_breaks_the_conversation(model, menv, tmp_path):
    """Seeded single byte flips and truncations of a real journal: every
    resume sends a conversation the provider accepts."""
    sid, path = three_calls(model, menv, tmp_path)
    with open(path, "rb") as f:
        orig = f.read()
    rnd = random.Random(SEED)
    lines = orig.split(b"\n")
    idx = [i for i, l in enumerate(lines) if l.startswith((b'{"t":"reply"', b'{"t":"tool"',
                                                          b'{"t":"cell"', b'{"t":"question"'))]
    for round_ in range(6):
        damaged = list(lines)
        k = rnd.choice(idx)
        line = bytearray(damaged[k])
        if round_ % 2:
            line = line[:rnd.randrange(1, len(line))]
        else:
            line[rnd.randrange(len(line))] ^= 1 << rnd.randrange(8)
        damaged[k] = bytes(line)
        with open(path, "wb") as f:
            f.write(b"\n".join(damaged))
        flags, requests = model([answer("again")])
        r = run(menv, tmp_path, *flags, "--resume", sid, "-p", "again?")
        assert r.returncode == 0, (round_, k, r.stderr)
        (body,) = requests()
        consistent(body)


# ---- item 4: a full disk mid-session leaves whole lines ---------------

FILL = ("import os\n"
        "f = open('/workspace/fill', 'wb', buffering=0)\n"
        "try:\n"
        "    while True:\n"
        "        f.write(b'x' * 4096)\n"
        "except OSError as e:\n"
        "    print('full:', e.errno, flush=True)\n"
        "f.close()\n")


def test_full_disk_mid_session_then_space_again(env, tmp_path):
    state = tmp_path / "small"
    state.mkdir()
    e = dict(env)
    e["XDG_STATE_HOME"] = str(state)
    # the journal's last page may have room for a few lines: 16 KB more
    cells = ["print('before')", FILL,
             "for i in range(32): print('while full', i, '.' * 500, flush=True)",
             "import os; os.remove('/workspace/fill'); print('freed')",
             "print('after ' + 'a' * 300)", "print('last')"]
    args = [TERP, "exec"]
    for c in cells:
        args += ["-c", c]
    need_root()
    # the journal is read back inside the namespace (the tmpfs goes with it)
    wrap = ('mount -t tmpfs -o size=4m tmpfs "$SMALL" || exit 97; '
            '"$@"; rc=$?; cat "$SMALL"/terp/sessions/*/notebook.jsonl > "$COPY"; '
            '"$1" --export "$(ls "$SMALL"/terp/sessions)" "$MD" || exit 98; exit $rc')
    e["SMALL"] = str(state)
    e["COPY"] = str(tmp_path / "journal.copy")
    e["MD"] = str(tmp_path / "out.md")
    p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", wrap, "sh",
                        *args], capture_output=True, text=True, env=e, cwd=tmp_path,
                       timeout=180, errors="replace")
    assert p.returncode != 97, "cannot mount a tmpfs in a private mount namespace: " + p.stderr
    assert p.returncode != 98, p.stderr
    assert "no longer saved" in p.stderr, p.stderr
    assert "saved again" in p.stderr, p.stderr
    with open(tmp_path / "journal.copy", "rb") as f:
        text = f.read()
    # every line whole: nothing merged
    for line in text.split(b"\n")[:-1]:
        if line:
            json.loads(line)
    recs = [json.loads(l) for l in text.split(b"\n") if l]
    outs = "".join(r.get("d", "") for r in recs if r["t"] == "out")
    assert "before\n" in outs and "last\n" in outs and ("after " + "a" * 300) in outs
    assert any(r["t"] == "notice" and "saved again" in r.get("text", "") for r in recs)
    with open(tmp_path / "out.md") as f:
        md = f.read()
    assert "print('last')" in md and "last\n" in md, md


# ---- item 1: no HOME, or a home that does not exist --------------------

def namespace_with_tmp(body, env, timeout=120):
    """body (sh) run with a fresh tmpfs on /tmp in a private mount
    namespace: what it plants there and what terp makes there vanish
    with it. Its stdout comes back (the test's own /tmp is hidden)."""
    script = 'mount -t tmpfs tmpfs /tmp || { echo "MOUNT FAILED"; exit 97; }; cd /tmp; ' + body
    e = dict(env)
    # a copy outside /tmp: a checkout under /tmp is hidden by the tmpfs
    fd, copy = tempfile.mkstemp(prefix="terp-faults-", dir="/dev/shm")
    os.close(fd)
    shutil.copy(TERP, copy)
    os.chmod(copy, 0o755)
    e["TERPB"] = copy
    try:
        p = in_namespace(script, e, "/", timeout=timeout)
    finally:
        os.unlink(copy)
    assert p.returncode != 97, "cannot mount a tmpfs on /tmp in a private mount namespace: " + \
        p.stdout + p.stderr
    return p


def test_home_unset_takes_no_config_from_tmp(env):
    """As root with HOME unset, a /tmp/.config/terp/config planted by
    another user is not read (its api_key_cmd not run), and nothing is
    written under /tmp."""
    body = ('mkdir -p /tmp/.config/terp; '
            'printf "provider = openai\\nmodel = x\\nbase_url = http://127.0.0.1:9/v1\\n'
            'api_key_cmd = touch /tmp/PWNED; echo k\\n" > /tmp/.config/terp/config; '
            'chown -R 4321:4321 /tmp/.config; '
            'env -u HOME -u XDG_CONFIG_HOME -u XDG_STATE_HOME PATH=/usr/bin:/bin '
            '"$TERPB" -p hi; echo "rc=$?"; '
            'ls -a /tmp; test -e /tmp/PWNED && echo RAN-PLANTED-COMMAND; true')
    p = namespace_with_tmp(body, env)
    assert "RAN-PLANTED-COMMAND" not in p.stdout, p.stdout + p.stderr
    listing = p.stdout.split("rc=")[1].split()[1:]
    assert sorted(listing) == [".", "..", ".config"], p.stdout


def test_config_of_another_user_is_refused(env, tmp_path):
    """A config file that another user owns, or that others can write, is
    refused with one line naming it (as ssh refuses such a config)."""
    need_root()
    cfg = tmp_path / "config" / "terp"
    cfg.mkdir(parents=True)
    (cfg / "config").write_text("api_key_cmd = touch %s/PWNED; echo k\n" % tmp_path)
    os.chown(cfg / "config", 4321, 4321)
    r = run(env, tmp_path, "-p", "hi", "--provider", "openai", "--model", "x",
            "--base-url", "http://127.0.0.1:9/v1")
    assert not (tmp_path / "PWNED").exists()
    assert r.returncode != 0 and "owned by another user" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    os.chown(cfg / "config", 0, 0)
    os.chmod(cfg / "config", 0o666)
    r = run(env, tmp_path, "-p", "hi", "--provider", "openai", "--model", "x",
            "--base-url", "http://127.0.0.1:9/v1")
    assert not (tmp_path / "PWNED").exists()
    assert "writable by other users" in r.stderr, r.stderr


def test_missing_home_is_not_created(env):
    body = ('env -u XDG_CONFIG_HOME -u XDG_STATE_HOME HOME=/tmp/nohome PATH=/usr/bin:/bin '
            '"$TERPB" exec -c "print(1)"; echo "rc=$?"; '
            'test -e /tmp/nohome && echo HOME-CREATED; true')
    p = namespace_with_tmp(body, env)
    assert "HOME-CREATED" not in p.stdout, p.stdout + p.stderr
    assert "rc=0" not in p.stdout
    assert "home folder /tmp/nohome does not exist" in p.stderr, p.stderr


# ---- item 10: FIFOs where terp reads files -----------------------------

def test_fifo_as_journal_or_config_does_not_hang(env, tmp_path):
    sid, path = five_cells(env, tmp_path)
    os.unlink(path)
    os.mkfifo(path)
    for args in (["--list"], ["--export", sid, str(tmp_path / "x.md")],
                 ["exec", "--resume", sid, "-c", "print(1)"]):
        try:
            r = run(env, tmp_path, *args, timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail("terp %s hangs on a FIFO journal" % " ".join(args))
        if args[0] != "--list":
            assert r.returncode != 0 and "not a regular file" in r.stderr, (args, r.stderr)
    os.unlink(path)
    cfg = tmp_path / "config" / "terp"
    cfg.mkdir(parents=True)
    os.mkfifo(cfg / "config")
    try:
        r = run(env, tmp_path, "exec", "-c", "print(1)", timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("terp exec hangs on a FIFO config file")
    assert r.returncode != 0 and "not a regular file" in r.stderr, r.stderr


# ---- item 9: every write to stdout checked ----------------------------

def to_dev_full(env, cwd, *args):
    with open("/dev/full", "w") as full:
        p = subprocess.run([TERP, *map(str, args)], stdout=full, stderr=subprocess.PIPE,
                           text=True, env=env, cwd=cwd, timeout=120, errors="replace")
    return p


def test_dev_full_as_stdout_is_an_error(model, menv, tmp_path):
    flags, _ = model([answer("The answer is " + "long " * 2000)])
    cases = [[*flags, "-p", "q?"], ["exec", "-c", "print('x' * 100000)"],
             ["exec", "--json", "-c", "print(1)"], ["--list"]]
    for args in cases:
        p = to_dev_full(menv, tmp_path, *args)
        assert p.returncode != 0, (args, p.stderr)
        lines = [l for l in p.stderr.splitlines() if "cannot write the output" in l]
        assert len(lines) == 1, (args, p.stderr)


# ---- item 6: a question that is not UTF-8, or holds a NUL -------------

@pytest.mark.parametrize("raw, says", [(b"caf\xe9 prices?\n", "not valid UTF-8"),
                                       (b"sum of a\x00 and b?\n", "NUL byte at offset 8")])
def test_question_bytes_that_json_cannot_carry_are_refused(model, menv, tmp_path, raw, says):
    flags, requests = model([answer("fine")])
    p = subprocess.run([TERP, *flags, "-p", "-"], input=raw, capture_output=True, env=menv,
                       cwd=tmp_path, timeout=120)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 2 and says in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert requests() == []


# ---- item 2: artifacts found from any folder, or a loud failure ------

CHART = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
         "plt.plot([1, 3, 2])\nplt.savefig('/workspace/out/chart.png')\nprint('saved')")


def test_export_from_another_folder_embeds_the_chart(env, tmp_path):
    ran, elsewhere = tmp_path / "ran", tmp_path / "elsewhere"
    ran.mkdir()
    elsewhere.mkdir()
    r = run(env, ran, "exec", "-c", CHART)
    assert r.returncode == 0, r.stderr
    sid, _ = journal_path(env)
    r = run(env, elsewhere, "--export", sid, "s.ipynb")
    assert r.returncode == 0, r.stderr
    nb = json.loads((elsewhere / "s.ipynb").read_text())
    outs = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c["outputs"]]
    assert any("image/png" in o.get("data", {}) for o in outs), outs
    r = run(env, elsewhere, "--export", sid, "s.md")
    assert r.returncode == 0, r.stderr
    md = (elsewhere / "s.md").read_text()
    assert "../ran/out/chart.png" in md, md
    # the chart gone: the export says so and fails
    os.unlink(ran / "out" / "chart.png")
    r = run(env, elsewhere, "--export", sid, "t.ipynb")
    assert r.returncode != 0 and "could not be embedded" in r.stderr, r.stderr
    assert "chart.png" in r.stderr


# ---- item 7: kill -9 while an answer streams ---------------------------

@pytest.mark.parametrize("round_", range(3))
def test_kill_9_while_the_answer_streams_keeps_what_was_shown(model, menv, tmp_path, round_):
    """Seeded: the kill lands a random number of events after the second
    line was shown; the resumed session has both lines, marked as cut."""
    rnd = random.Random(SEED * 100 + round_)
    text = "Line one of the answer.\nLine two of it.\n" + "more words " * 400
    flags, _ = model([{"openai": {"text": text, "text_split": 7}, "chunk_delay": 0.005}])
    p = subprocess.Popen([TERP, "--json", *flags, "-p", "Tell me."], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=menv, cwd=tmp_path, text=True)
    shown, extra = "", rnd.randrange(0, 40)
    try:
        for line in p.stdout:
            ev = json.loads(line)
            if ev["type"] == "text":
                shown += ev["delta"]
                if "Line two of it.\n" in shown:
                    if extra == 0:
                        break
                    extra -= 1
        else:
            pytest.fail("the answer ended before the kill: %r" % shown[-200:])
    finally:
        p.kill()
        p.wait()
        p.stdout.close()
    sid, _ = journal_path(menv)
    md = export_md(menv, tmp_path, sid)
    assert "Line one of the answer.\nLine two of it." in md, md
    assert "[cut: terp stopped while this answer was streaming]" in md, md
    flags, requests = model([answer("again")])
    r = run(menv, tmp_path, *flags, "--resume", sid, "-p", "go on?")
    assert r.returncode == 0, r.stderr
    (body,) = requests()
    consistent(body)
    assert any("Line two of it." in (m.get("content") or "") for m in body["messages"]
               if m["role"] == "assistant")


# ---- item 11: the small ones ------------------------------------------

def test_list_says_how_many_sessions_it_left_out(env, tmp_path):
    sid, path = five_cells(env, tmp_path)
    broken = os.path.join(sessions(env), "20200101-000000-dead")
    os.makedirs(broken)
    with open(os.path.join(broken, "notebook.jsonl"), "w") as f:
        f.write("not a journal\n")
    r = run(env, tmp_path, "--list")
    assert r.returncode == 0 and sid in r.stdout, r.stderr
    assert "1 session folder not listed" in r.stderr, r.stderr


def test_a_fractional_time_limit_is_reported_as_given(env, tmp_path):
    r = run(env, tmp_path, "exec", "--timeout", "0.5", "-c", "import time; time.sleep(5)")
    assert r.returncode == 3, r.stderr
    assert "time limit of 0.5 s" in r.stderr, r.stderr


def test_a_huge_unknown_tool_name_is_capped(model, menv, tmp_path):
    name = "x" * 100000
    flags, requests = model([{"openai": {"tool_calls": [{"id": "c1", "name": name,
                                                         "arguments": "{}"}]}},
                             answer("ok")])
    r = run(menv, tmp_path, *flags, "-p", "q?")
    assert r.returncode == 0, r.stderr[-500:]
    assert len(r.stderr) < 5000, len(r.stderr)
    tool = [m for m in requests()[1]["messages"] if m["role"] == "tool"]
    assert len(tool) == 1 and "unknown tool" in tool[0]["content"]
    assert len(tool[0]["content"]) < 1000, len(tool[0]["content"])


def test_an_html_page_with_200_is_said_and_not_retried(model, menv, tmp_path):
    """A captive portal answers the model's POST with its login page and a
    200: one request, one line saying the server sent HTML."""
    page = "<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>login</body></html>\n"
    flags, requests = model([{"body": page, "repeat": True}])
    r = run(menv, tmp_path, *flags, "-p", "q?")
    assert r.returncode != 0, r.stderr
    assert "HTML page" in r.stderr and "captive portal" in r.stderr, r.stderr
    assert "retrying" not in r.stderr, r.stderr
    assert len(requests()) == 1, len(requests())


def test_a_tls_version_mismatch_is_not_retried(menv, tmp_path):
    """A server that speaks only TLS 1.0/1.1 (Python's ssl, a self-made
    certificate, OpenSSL's security level 0 to allow them): no common
    version, so one attempt and a line saying asking again cannot help."""
    import socket
    import ssl
    import warnings
    if shutil.which("openssl") is None:
        pytest.fail("openssl is needed to make the test server's certificate")
    key, cert = str(tmp_path / "k.pem"), str(tmp_path / "c.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1"],
                   check=True, capture_output=True)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        ctx.minimum_version = ssl.TLSVersion.TLSv1
        ctx.maximum_version = ssl.TLSVersion.TLSv1_1
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    port = srv.getsockname()[1]
    tries, stop = [], threading.Event()

    def serve():
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except OSError:
                continue
            tries.append(1)
            try:
                ctx.wrap_socket(c, server_side=True)
            except (OSError, ssl.SSLError):
                pass
            c.close()
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        r = run(menv, tmp_path, "--provider", "openai", "--model", "fake", "--base-url",
                "https://127.0.0.1:%d/v1" % port, "-p", "q?")
    finally:
        stop.set()
        t.join()
        srv.close()
    assert r.returncode != 0, r.stderr
    assert "retrying" not in r.stderr, r.stderr
    assert "TLS version" in r.stderr and "cannot help" in r.stderr, r.stderr
    assert len(tries) == 1, len(tries)


def test_a_memory_limit_too_small_for_python_says_so(env, tmp_path):
    r = run(env, tmp_path, "exec", "--memory", "1M", "-c", "print(1)")
    assert r.returncode != 0, r.stderr
    assert "memory limit of 1 MiB is too small to start Python" in r.stderr, r.stderr
    assert "16M" in r.stderr, r.stderr


def test_a_session_folder_deleted_while_terp_runs_is_said_once(env, tmp_path):
    """The folder goes while a cell runs (rm -rf from another shell): the
    next journal line says the session is no longer saved, once, and the
    run goes on."""
    p = subprocess.Popen([TERP, "exec", "--json", "-c",
                          "import time\nprint('ready', flush=True)\ntime.sleep(60)",
                          "-c", "print('after')", "-c", "print('later')"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                         cwd=tmp_path, text=True)
    evs = []
    for line in p.stdout:
        ev = json.loads(line)
        evs.append(ev)
        if ev["type"] == "stdout" and "ready" in ev["text"]:
            [sid] = os.listdir(sessions(env))
            shutil.rmtree(os.path.join(sessions(env), sid))
            p.send_signal(2)
    err = p.stderr.read()
    p.wait(timeout=60)
    notes = [e["message"] for e in evs if e["type"] == "notice"]
    gone = [n for n in notes if "no longer saved" in n]
    assert len(gone) == 1 and "was deleted" in gone[0], notes
    assert any(e["type"] == "stdout" and "later" in e["text"] for e in evs), err


def test_too_many_tool_calls_in_one_reply_are_told_to_the_model(model, menv, tmp_path):
    """200 calls in one reply: the first 64 run, every other one is
    answered "not run: at most 64 ..." so the model can ask again."""
    calls = [{"id": "c%d" % i, "code": "x%d = %d" % (i, i)} for i in range(200)]
    flags, requests = model([{"openai": {"tool_calls": calls}}, answer("ok")])
    r = run(menv, tmp_path, *flags, "-p", "q?")
    assert r.returncode == 0, r.stderr[-800:]
    assert "made 200 tool calls in one reply" in r.stderr, r.stderr[-800:]
    tool = [m for m in requests()[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool] == ["c%d" % i for i in range(200)]
    told = [m for m in tool if "at most 64 tool calls of one reply" in m["content"]]
    assert len(told) == 136 and told[0]["tool_call_id"] == "c64", len(told)


def test_a_probe_cache_others_may_write_is_not_read(model, menv, tmp_path):
    """Issue 22 item 10: the interpreter probe's cache gets the driver
    cache's check (ours, no group/other write): a planted answer in a
    world-writable cache file never reaches the model's system prompt."""
    menv = dict(menv, XDG_CACHE_HOME=str(tmp_path / "cache"))
    assert run(menv, tmp_path, "exec", "-c", "1").returncode == 0
    pdir = tmp_path / "cache" / "terp" / "pyenv"
    [cache] = [p for p in pdir.iterdir() if p.suffix == ".json"]
    doc = json.loads(cache.read_text())
    real = doc["probe"]["version"]
    doc["probe"]["version"] = "3.99.1"
    cache.write_text(json.dumps(doc))

    def system_prompt(mode):
        os.chmod(cache, mode)
        flags, requests = model([answer("ok")])
        r = run(menv, tmp_path, *flags, "-p", "q?")
        assert r.returncode == 0, r.stderr[-500:]
        [sysm] = [m for m in requests()[0]["messages"] if m["role"] == "system"]
        return sysm["content"]
    # the planted version is what a trusted cache says (the test is live)...
    assert "3.99.1" in system_prompt(0o600)
    # ...and never when others may write the file: probed again instead
    s = system_prompt(0o666)
    assert "3.99.1" not in s and real in s, s[:2000]


# ---- item 8: Ctrl-C before the cell's code runs -----------------------

def test_sigint_at_the_first_instant_of_the_first_cell_interrupts_it(env, tmp_path):
    """SIGINT the moment the first cell is shown (the sandbox still
    loading its libraries), under CPU contention (two busy loops): the
    interrupt is held and delivered when the cell starts; never lost (the
    cell running on to its end or ignoring it until killed)."""
    burn = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        for round_ in range(5):
            p = subprocess.Popen([TERP, "exec", "--json", "-c",
                                  "import time\nfor i in range(100): time.sleep(0.1)\n"
                                  "print('ran to the end')"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                 cwd=tmp_path, text=True)
            evs = []
            for line in p.stdout:
                ev = json.loads(line)
                evs.append(ev)
                if ev["type"] == "cell":
                    p.send_signal(2)
            p.wait(timeout=120)
            p.stderr.close()
            p.stdout.close()
            (res,) = [e for e in evs if e["type"] == "result"]
            assert p.returncode == 3, (round_, evs)
            assert res["status"] == "interrupted", (round_, res)
            assert "kept its state" in res.get("reason", ""), (round_, res)
            assert not [e for e in evs if e["type"] == "stdout"], (round_, evs)
    finally:
        for b in burn:
            b.kill()
            b.wait()
