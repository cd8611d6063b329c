"""The protocol between terp and its driver (issue 8, section 2).

The driver shares its Python process with the cell, so a cell can call
the driver's send() (or write to the channel) and forge any frame terp
reads. These tests forge them from inside the sandbox and check that terp
never blocks, never writes where the sandbox says, never grows memory or
disk without bound, and says why whenever an artifact is not copied.
They also cover the driver's own bugs (item 13) and the frame cap
(item 9).

Hostile code: every cell here runs only in terp's sandbox, and only once
test_hostile.py's isolation proof (the `sbx` fixture) has passed for this
module; if it fails, every test here fails."""
import ast
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import ROOT, TERP, Result
from test_hostile import base, plant, sbx, sbx_raw  # noqa: F401 (fixtures)

sys.path.insert(0, str(ROOT / "tests"))
from fake_model import FakeModel, read_log  # noqa: E402

KEY = "sk-terp-test-0123456789"
SAFETY = 120    # a subprocess timeout as the safety net, never the assertion

# The driver's module: its send() writes a frame as terp's driver would.
FORGE = 'import sys, os, time, threading\nM = sys.modules["__main__"]\n'


@pytest.fixture(autouse=True, scope="module")
def _isolated(sbx):  # noqa: F811
    """The sandbox is proven to isolate before any cell here runs."""


def forge(body):
    """A cell that can forge frames: M is the driver's module."""
    return FORGE + textwrap.dedent(body)


def cells(*codes):
    out = []
    for c in codes:
        out += ["-c", textwrap.dedent(c)]
    return out


def hidden(out):
    return sorted(p.name for p in out.iterdir() if p.name.startswith(".")) if out.exists() else []


def stderr_of(r, cell):
    return "".join(e["text"] for e in r.of("stderr") if e["cell"] == cell)


# ---------------------------------------------------------------- blocking writes (item 2)

def test_forged_result_then_sleep_does_not_freeze_terp(env, tmp_path):
    """A cell forges its own result and sleeps; the model's next cell is
    2 MiB, far more than the command pipe holds. terp used to block in
    the write: no timeout, no Ctrl-C. Now the cell times out."""
    forge = FORGE + 'M.send({"ev": "result", "id": 1, "status": "ok"})\ntime.sleep(3600)\n'
    big = "x = '" + "a" * (2 << 20) + "'\nprint(len(x))\n"
    turns = [{"openai": {"tool_calls": [{"id": "c1", "code": forge}]}},
             {"openai": {"tool_calls": [{"id": "c2", "code": big}]}},
             {"openai": {"tool_calls": [{"id": "c3", "code": "print('fresh')"}]}},
             {"openai": {"text": "done"}}]
    srv = FakeModel({"turns": turns}, str(tmp_path / "model.jsonl"))
    port = srv.start()
    try:
        e = dict(env, OPENAI_API_KEY=KEY)
        p = subprocess.run([str(TERP), "-p", "q", "--json", "--timeout", "2", "--grace", "1",
                            "--provider", "openai", "--base-url", "http://127.0.0.1:%d/v1" % port],
                           capture_output=True, text=True, timeout=SAFETY, cwd=tmp_path, env=e)
    finally:
        srv.stop()
    r = Result(p)
    assert r.rc == 0, r
    res = {x["cell"]: x for x in r.results()}
    assert res[2]["status"] == "timeout", r
    assert "did not take the cell within its time limit of 2 s" in res[2]["reason"]
    # the model is told, and the session goes on
    tool = [m for m in read_log(str(tmp_path / "model.jsonl"))[2]["body"]["messages"]
            if m["role"] == "tool"][-1]
    assert "status: timeout" in tool["content"], tool
    assert r.stdout_of(3) == "fresh\n" and res[3]["status"] == "ok"


def test_shrunk_command_pipe_does_not_freeze_terp(terp):
    """Same with the command pipe shrunk to one page (F_SETPIPE_SZ on the
    driver's command fd) and a next cell of 120 KiB."""
    shrink = forge("""
    import fcntl
    fcntl.fcntl(M.CIN, fcntl.F_SETPIPE_SZ, 4096)
    M.send({"ev": "result", "id": 1, "status": "ok"})
    time.sleep(3600)
    """)
    big = "x = '" + "b" * (120 << 10) + "'"
    r = terp("exec", "--json", "--timeout", "2", "--grace", "1",
             *cells(shrink, big, "print('fresh')"), timeout=SAFETY)
    res = r.results()
    assert [x["status"] for x in res] == ["ok", "timeout", "ok"], r
    assert "did not take the cell" in res[1]["reason"]
    assert r.stdout_of(3) == "fresh\n"


def test_ctrl_c_reaches_a_cell_the_driver_never_took(env, tmp_path):
    """No time limit: Ctrl-C alone must get terp out of a stuck hand-over."""
    shrink = forge("""
    import fcntl
    fcntl.fcntl(M.CIN, fcntl.F_SETPIPE_SZ, 4096)
    M.send({"ev": "result", "id": 1, "status": "ok"})
    time.sleep(3600)
    """)
    big = "x = '" + "c" * (120 << 10) + "'"
    p = subprocess.Popen([str(TERP), "exec", "--json", "--timeout", "0",
                          *cells(shrink, big)], stdout=subprocess.PIPE, text=True,
                         cwd=tmp_path, env=env)
    try:
        for line in p.stdout:
            ev = json.loads(line)
            if ev["type"] == "cell" and ev["cell"] == 2:
                break
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=SAFETY)
    finally:
        p.kill()
    res = [json.loads(x) for x in out.splitlines() if '"type":"result"' in x]
    [r2] = [x for x in res if x["cell"] == 2]
    assert r2["status"] == "interrupted", res
    assert "had not taken the cell when it was interrupted" in r2["reason"]


# ---------------------------------------------------------------- artifact caps (item 6)

FLOOD = forge("""
for i in range(N):
    M.send({"ev": "artifact", "id": CELL, "name": "f%d-%d.txt" % (CELL, i), "size": 1})
    M.send({"ev": "chunk", "data": "eA=="})
    M.send({"ev": "artifact_end", "size": 1})
""")


def test_forged_artifact_flood_is_capped_per_cell(terp, tmp_path):
    r = terp("exec", "--json", *cells(FLOOD.replace("N", "5000").replace("CELL", "1")),
             timeout=SAFETY)
    assert r.results()[0]["status"] == "ok", r
    files = list((tmp_path / "out").iterdir())
    assert len(files) == 64, len(files)
    assert len(r.of("artifact")) == 64
    err = stderr_of(r, 1)
    assert "not copied: cap reached (64 artifacts per cell)" in err, err[-2000:]
    assert "more artifacts not copied" in err
    assert err.count("\n") <= 25        # bounded, however many were refused
    assert hidden(tmp_path / "out") == []


def test_forged_artifacts_are_capped_per_session(terp, tmp_path):
    codes = [FLOOD.replace("N", "64").replace("CELL", str(c)) for c in range(1, 18)]
    r = terp("exec", "--json", *cells(*codes), timeout=SAFETY)
    assert all(x["status"] == "ok" for x in r.results()), r
    assert len(list((tmp_path / "out").iterdir())) == 1000
    assert "cap reached (1000 artifact files per session)" in stderr_of(r, 16)


def test_real_files_past_the_caps_are_reported(terp, tmp_path):
    code = """
    import os
    for i in range(70):
        open('/workspace/out/f%02d.txt' % i, 'w').write('x')
    os.makedirs('/workspace/out/a/b/c/d/e')
    open('/workspace/out/a/b/c/d/e/deep.txt', 'w').write('x')
    """
    r = terp("exec", "--json", *cells(code), timeout=SAFETY)
    assert len(r.of("artifact")) == 64, r
    err = stderr_of(r, 1)
    assert "artifact f69.txt not copied: cap reached (64 artifacts per cell)" in err, err
    assert "artifact a/b/c/d/e/ not copied: folder not searched" in err, err


# ---------------------------------------------------------------- partial files (item 6)

BEGIN = forge("""
M.send({"ev": "artifact", "id": 1, "name": "half.bin", "size": 10})
M.send({"ev": "chunk", "data": "eHh4eA=="})
""")


@pytest.mark.parametrize("then,status", [
    ("", "ok"),                                                        # the cell ends
    ('M.send({"ev": "artifact", "id": 1, "name": "other.bin", "size": 100})\n', "ok"),
    ("os._exit(5)\n", "crashed"),                                      # the session dies
])
def test_abandoned_artifact_leaves_no_partial_file(then, status, terp, tmp_path):
    r = terp("exec", "--json", *cells(BEGIN + then), timeout=SAFETY)
    assert r.results()[0]["status"] == status, r
    assert hidden(tmp_path / "out") == []
    assert not (tmp_path / "out" / "half.bin").exists()
    if status == "ok":
        assert "artifact half.bin not copied: incomplete" in stderr_of(r, 1), r


def test_partial_artifact_is_removed_when_terp_exits(env, tmp_path):
    # The refused "marker" comes on the same channel after the artifact
    # began, so its report says terp has created the partial file.
    code = BEGIN + ('M.send({"ev": "artifact_skip", "id": 1, "name": "marker", "reason": "m"})\n'
                    "time.sleep(3600)\n")
    p = subprocess.Popen([str(TERP), "exec", "--json", *cells(code)], stdout=subprocess.PIPE,
                         text=True, cwd=tmp_path, env=env)
    try:
        for line in p.stdout:
            if "artifact marker not copied" in line:
                break
        assert list((tmp_path / "out").glob(".terp-*.part")), "the artifact had not begun"
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=SAFETY)
    finally:
        p.kill()
    assert hidden(tmp_path / "out") == []


def test_full_output_folder_is_reported(env, tmp_path):
    """terp's own file size limit stands for a full ./out (EFBIG, like
    ENOSPC or EDQUOT): the artifact is reported, not dropped silently.
    The limit (4 MiB) leaves room for what terp itself writes at start
    (the driver's code into the sandbox, over 64 KiB since the IPython
    subset), the artifact is over it."""
    import resource

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4 << 20, resource.RLIM_INFINITY))

    code = "open('/workspace/out/big.bin', 'wb').write(b'z' * (6 << 20))"
    p = subprocess.run([str(TERP), "exec", "--json", "-c", code], capture_output=True,
                       text=True, timeout=SAFETY, cwd=tmp_path, env=env, preexec_fn=limit)
    r = Result(p)
    assert r.results()[0]["status"] == "ok", r
    assert r.of("artifact") == []
    assert "artifact big.bin not copied: it is over the output folder's file size limit" \
        in stderr_of(r, 1), r
    assert hidden(tmp_path / "out") == [] and not (tmp_path / "out" / "big.bin").exists()


def test_file_growing_while_copied_is_reported(terp, tmp_path):
    code = forge("""
    M.send({"ev": "artifact", "id": 1, "name": "grow.log", "size": 2})
    M.send({"ev": "chunk", "data": "eHh4eA=="})
    M.send({"ev": "artifact_end", "size": 4})
    """)
    r = terp("exec", "--json", *cells(code), timeout=SAFETY)
    assert "artifact grow.log not copied: it grew while it was copied" in stderr_of(r, 1), r
    assert list((tmp_path / "out").iterdir()) == []


# ---------------------------------------------------------------- host names (items 1, 6)

def test_forged_names_become_safe_host_names(terp, tmp_path):
    code = forge("""
    for name in ["../.bash_aliases", "/etc/cron.d/x", "-rf", "sub/../../up.txt"]:
        M.send({"ev": "artifact", "id": 1, "name": name, "size": 2})
        M.send({"ev": "chunk", "data": "aGk="})
        M.send({"ev": "artifact_end", "size": 2})
    M.send({"ev": "artifact", "id": 1, "name": "bad\\x1b]0;x\\x07.png", "size": 2})
    """)
    r = terp("exec", "--json", *cells(code), timeout=SAFETY)
    arts = r.of("artifact")
    names = [a["name"] for a in arts]
    assert names == ["_.bash_aliases", "_etc_cron.d_x", "_rf", "sub_.._.._up.txt"], names
    for a in arts:
        assert a["path"] == "out/" + a["name"]
        assert (tmp_path / a["path"]).read_text() == "hi"
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())
    assert not (tmp_path.parent / "up.txt").exists()
    assert "not copied: its name has control characters" in stderr_of(r, 1)
    assert "\x1b" not in stderr_of(r, 1)


def test_artifact_is_named_by_its_host_file(terp, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "chart.png").write_text("the user's own chart")
    r = terp("exec", "--json", "-c", "open('/workspace/out/chart.png', 'w').write('new')")
    [a] = r.of("artifact")
    assert a["name"] == "chart-2.png" and a["path"] == "out/chart-2.png", a
    r = terp("exec", "-c", "open('/workspace/out/chart.png', 'w').write('newer')")
    assert "artifact out/chart-3.png" in r.err, r


def test_tool_result_names_the_host_file(env, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "chart.png").write_text("mine")
    turns = [{"openai": {"tool_calls": [{"id": "c1", "code":
              "open('/workspace/out/chart.png', 'w').write('x' * 10)"}]}},
             {"openai": {"text": "done"}}]
    srv = FakeModel({"turns": turns}, str(tmp_path / "model.jsonl"))
    port = srv.start()
    try:
        p = subprocess.run([str(TERP), "-p", "q", "--json", "--provider", "openai",
                            "--base-url", "http://127.0.0.1:%d/v1" % port],
                           capture_output=True, text=True, timeout=SAFETY, cwd=tmp_path,
                           env=dict(env, OPENAI_API_KEY=KEY))
    finally:
        srv.stop()
    assert p.returncode == 0, p.stderr
    tool = [m for m in read_log(str(tmp_path / "model.jsonl"))[1]["body"]["messages"]
            if m["role"] == "tool"][-1]
    assert "  chart-2.png (10 bytes)" in tool["content"], tool


# ---------------------------------------------------------------- frame sizes (item 9)

def test_huge_exception_is_cut_and_the_session_lives(terp):
    r = terp("exec", "--json", "-c", "x = 7", "-c", 'raise ValueError("v" * 9_000_000)',
             "-c", "print(x)", timeout=SAFETY)
    res = r.results()
    assert res[1]["status"] == "error", r
    err = res[1]["error"]
    assert err["ename"] == "ValueError"
    assert len(err["evalue"]) < 70_000 and "[exception text cut at 64 KiB]" in err["evalue"]
    tb = err["traceback"]
    assert len(tb) < 70_000 and "[traceback cut: " in tb, tb[:300]
    assert tb.startswith("Traceback (most recent call last):") and tb.rstrip().endswith("vvvv")
    assert r.stdout_of(3) == "7\n" and res[2]["status"] == "ok"


def test_oversized_frame_is_reported_as_such(terp):
    code = FORGE + 'M.send({"ev": "pong", "pad": "p" * (9 << 20)})\n'
    r = terp("exec", "--json", "-c", code, "-c", "print('fresh')", timeout=SAFETY)
    res = r.results()
    assert res[0]["status"] == "crashed", r
    assert res[0]["reason"].startswith("the sandbox sent a protocol frame over 8 MiB"), res[0]
    assert "out of memory" not in res[0]["reason"]
    assert r.stdout_of(2) == "fresh\n"


def test_garbage_frame_is_reported_as_such(terp):
    code = FORGE + "os.write(M.COUT, b'not json\\n')\ntime.sleep(3600)\n"
    r = terp("exec", "--json", "-c", code, "-c", "print('fresh')", timeout=SAFETY)
    res = r.results()
    assert res[0]["status"] == "crashed", r
    assert res[0]["reason"].startswith("the sandbox sent a protocol frame that is not JSON")
    assert r.stdout_of(2) == "fresh\n"


def test_results_for_other_cells_are_ignored(terp):
    code = forge("""
    for i in (0, 2, 99, -1, "1", 1.5, None):
        M.send({"ev": "result", "id": i, "status": "ok", "value": "forged"})
    M.send({"ev": "chunk", "data": "eA=="})
    M.send({"ev": "artifact_end", "size": 1})
    M.send({"ev": "ready"})
    M.send({"ev": "whatever"})
    'real'
    """)
    r = terp("exec", "--json", *cells(code, "1 + 1"), timeout=SAFETY)
    assert [x["value"] for x in r.results()] == ["'real'", "2"], r


# ---------------------------------------------------------------- driver bugs (item 13)

def test_closing_sys_stdout_does_not_break_later_cells(terp):
    r = terp("exec", "--json", "-c", "import sys; sys.stdout.close(); sys.stderr.close()",
             "-c", "import sys; print('back'); print('err', file=sys.stderr)")
    assert r.stdout_of(2) == "back\n", r
    assert stderr_of(r, 2) == "err\n"


def test_non_object_command_lines_are_ignored(terp):
    # The cell puts lines of its own in front of terp's next commands.
    code = forge("""
    x = 5
    r, w = os.pipe()
    orig = os.dup(M.CIN)
    os.dup2(r, M.CIN)
    def relay():
        os.write(w, b'[]\\n1\\n"op"\\nnull\\n{"op": "exec", "id": "z"}\\n' + b'[' * 100000 + b'\\n')
        while True:
            data = os.read(orig, 65536)
            if not data:
                break
            os.write(w, data)
    threading.Thread(target=relay, daemon=True).start()
    """)
    r = terp("exec", "--json", *cells(code, "print(x)"), timeout=SAFETY)
    res = r.results()
    assert [x["status"] for x in res] == ["ok", "ok"], r
    assert r.stdout_of(2) == "5\n"


def test_preload_holding_fd_1_is_not_robbed(terp):
    """The preload thread imports while a cell has closed fd 1: its next
    open() gets fd 1. The driver used to dup2 the stdout pipe over it at
    the next cell, and the import's close() then closed the pipe. Here
    the cell makes the preload hold fd 1 for 2 s (a stand-in for a slow
    import); the driver must wait for it, however long it takes."""
    hold = forge("""
    import builtins
    opened, done = threading.Event(), threading.Event()
    real = builtins.__import__
    def imp(name, *a, **k):
        if threading.current_thread().name == "terp-preload" and name == "numpy" \\
                and not done.is_set():
            done.set()
            fd = os.open(os.devnull, os.O_RDONLY)    # the lowest free fd: 1
            opened.set()
            threading.Event().wait(2)               # held like a slow read
            os.close(fd)
        return real(name, *a, **k)
    builtins.__import__ = imp
    sys.stdout = open(os.devnull, "w")
    os.close(1)
    M._preload_pending = True
    M._start_preload_when_idle()
    opened.wait(60)
    builtins.__import__ = real
    """)
    after = """
    import threading
    for t in threading.enumerate():
        if t.name == "terp-preload":
            t.join()
    print('back')
    """
    r = terp("exec", "--json", *cells(hold, after, "import numpy; print('np')"),
             timeout=SAFETY)
    assert [x["status"] for x in r.results()] == ["ok", "ok", "ok"], r
    assert r.stdout_of(2) == "back\n" and r.stdout_of(3) == "np\n", r


def _driver_function(name):
    tree = ast.parse((ROOT / "src" / "kernel" / "local" / "driver.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            ns = {}
            exec(compile(ast.Module([node], []), "driver.py", "exec"), ns)
            return ns[name]
    pytest.fail("src/kernel/local/driver.py has no function %s" % name)


def test_command_reader_is_linear():
    """The driver's command reader, fed a 16 MiB line in 64 KiB reads, must
    cost about what one pass over the bytes costs (joining and splitting
    them), not a pass per read: it was `buf += data` and a search of the
    whole buffer per read (4.5 s for a 12 MB cell; here 12x the pass,
    now 0.1x). CPU time of this process, best of 5, compared with the
    pass over the same bytes, so the machine's speed cancels out."""
    lines = _driver_function("_lines")
    n = 16 << 20
    data = b"a" * n + b"\n" + b"x\n" * 1000
    chunks = [data[i:i + 65536] for i in range(0, len(data), 65536)] + [b""]

    def best(f):
        times = []
        for _ in range(5):
            t = time.process_time()
            f()
            times.append(time.process_time() - t)
        return min(times)

    def read_all():
        it = iter(chunks)
        got = list(lines(lambda: next(it)))
        assert len(got) == 1001 and len(got[0]) == n

    one_pass = best(lambda: b"".join(chunks).split(b"\n"))
    reader = best(read_all)
    assert reader < 4 * one_pass, (reader, one_pass)
