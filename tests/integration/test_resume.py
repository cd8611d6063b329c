"""Sessions of `terp -p` through the real binary, a scripted fake model
(tests/fake_model.py on 127.0.0.1) and the real sandbox: kill -9 in the
middle of a turn, then --resume (the journal holds everything that was
shown; the model gets the conversation back and is told the sandbox is
new); a torn last journal line; a changed data file; --replay rebuilding
a dataframe that the follow-up question uses; --max-session; the export
of a real session validated by nbformat and re-executed by Jupyter; a
journal that cannot be written."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TERP = os.path.join(ROOT, "terp")
sys.path.insert(0, os.path.join(ROOT, "tests"))
from fake_model import FakeModel  # noqa: E402


@pytest.fixture
def model(tmp_path):
    """model(turns) -> (flags for terp, function returning the logged
    request bodies)."""
    servers = []

    def start(turns):
        log = tmp_path / ("model-%d.jsonl" % len(servers))
        srv = FakeModel({"turns": turns}, str(log))
        port = srv.start()
        servers.append(srv)
        flags = ["--provider", "openai", "--model", "fake",
                 "--base-url", "http://127.0.0.1:%d/v1" % port]

        def requests():
            if not log.exists():
                return []
            return [json.loads(l)["body"] for l in log.read_text().splitlines()]
        return flags, requests
    yield start
    for s in servers:
        s.stop()


@pytest.fixture
def menv(env):
    e = dict(env)
    e["OPENAI_API_KEY"] = "test-key-not-real"
    return e


def run(env, cwd, *args, timeout=120):
    return subprocess.run([TERP, *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout)


def sessions_dir(env):
    return os.path.join(env["XDG_STATE_HOME"], "terp", "sessions")


def only_session(env):
    ids = sorted(os.listdir(sessions_dir(env)))
    assert len(ids) == 1, ids
    return ids[0]


def journal_lines(env, sid):
    path = os.path.join(sessions_dir(env), sid, "notebook.jsonl")
    with open(path) as f:
        text = f.read()
    return [json.loads(l) for l in text.splitlines(keepends=True) if l.endswith("\n")]


def tool_call(code, id="call_1"):
    return {"openai": {"tool_calls": [{"id": id, "code": code}]}}


def answer(text):
    return {"openai": {"text": text}}


def user_texts(body):
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


def tool_texts(body):
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def test_kill_9_mid_turn_then_resume(model, menv, tmp_path):
    code = "x = 6 * 7\nprint('x is', x, flush=True)\nimport time\ntime.sleep(60)"
    flags, requests = model([tool_call(code), answer("Resumed: x is gone.")])
    p = subprocess.Popen([TERP, "--json", *flags, "-p", "What is x?"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=menv, cwd=tmp_path, text=True)
    shown = []
    deadline = time.time() + 60
    while time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        shown.append(json.loads(line))
        # print() may arrive in pieces ("x is 42", "\n"): wait for the line
        if "x is 42\n" in "".join(e["text"] for e in shown if e["type"] == "stdout"):
            break
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    rest = p.stdout.read()
    shown += [json.loads(l) for l in rest.splitlines() if l.strip()]
    p.stdout.close()
    p.stderr.close()
    assert "".join(e["text"] for e in shown if e["type"] == "stdout") == "x is 42\n", shown

    # Everything that was shown is in the journal, in the same order.
    sid = only_session(menv)
    lines = journal_lines(menv, sid)
    assert lines[0]["t"] == "meta"
    want = []
    for e in shown:
        if e["type"] == "question":
            want.append(("question", e["text"]))
        elif e["type"] == "cell":
            want.append(("cell", e["code"]))
        elif e["type"] == "stdout":
            want.append(("out", e["text"]))
    got = []
    for l in lines:
        if l["t"] == "question":
            got.append(("question", l["text"]))
        elif l["t"] == "cell":
            got.append(("cell", l["code"]))
        elif l["t"] == "out":
            got.append(("out", l["d"]))
    def joined(items):	# output pieces as one, however they were split
        out = [t for t in items if t[0] != "out"]
        return out + [("out", "".join(t[1] for t in items if t[0] == "out"))]
    assert joined(want) == [("question", "What is x?"), ("cell", code), ("out", "x is 42\n")]
    assert got == want

    # Resume: the conversation goes to the model again, the interrupted
    # call has a result, and the model is told its sandbox is new.
    r = run(menv, tmp_path, *flags, "--resume", sid, "-p", "And now?")
    assert r.returncode == 0, r.stderr
    assert "Resumed: x is gone." in r.stdout
    assert "resuming session " + sid in r.stderr
    body = requests()[1]
    users = user_texts(body)
    assert users[0] == "What is x?"
    assert "resumed in a new Python sandbox" in users[1]
    assert users[1].endswith("\nQuestion: And now?")
    assert len(tool_texts(body)) == 1
    assert [c["id"] for m in body["messages"] if m["role"] == "assistant"
            for c in m.get("tool_calls", [])] == ["call_1"]
    # The cell came back interrupted, with the output it printed.
    out = tmp_path / "k.ipynb"
    r = run(menv, tmp_path, "--export", sid, out)
    assert r.returncode == 0, r.stderr
    nb = json.loads(out.read_text())
    code_cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code_cells[0]["metadata"]["terp"]["status"] == "interrupted"
    assert "".join(code_cells[0]["outputs"][0]["text"]) == "x is 42\n"
    # Both questions and the answer are in the export.
    md = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "What is x?" in md and "And now?" in md and "Resumed: x is gone." in md


def test_torn_last_line_is_cut_and_the_session_goes_on(env, tmp_path):
    r = run(env, tmp_path, "exec", "-c", "print(6 * 7)")
    assert r.returncode == 0, r.stderr
    sid = only_session(env)
    path = os.path.join(sessions_dir(env), sid, "notebook.jsonl")
    with open(path, "a") as f:
        f.write('{"t":"cell","n":2,"by":"user","code":"print(')
    r = run(env, tmp_path, "--list")
    assert r.returncode == 0 and sid in r.stdout
    r = run(env, tmp_path, "exec", "--resume", sid, "-c", "print(7 * 8)")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "56\n"
    assert "last line was cut short" in r.stderr
    # The torn bytes are gone; every line is whole JSON again.
    with open(path) as f:
        text = f.read()
    assert text.endswith("\n")
    lines = [json.loads(l) for l in text.splitlines()]
    assert [l["t"] for l in lines].count("resume") == 1
    assert [l["code"] for l in lines if l["t"] == "cell"] == ["print(6 * 7)", "print(7 * 8)"]
    r = run(env, tmp_path, "exec", "--resume", sid, "-c", "print(1)")
    assert "cut short" not in r.stderr


def test_resume_with_changed_and_vanished_data_files(model, menv, tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("v\n1\n2\n")
    b.write_text("w\n5\n")
    flags, requests = model([answer("first"), answer("second")])
    r = run(menv, tmp_path, *flags, "-p", "Hello?", a, b)
    assert r.returncode == 0, r.stderr
    sid = only_session(menv)
    a.write_text("v\n1\n2\n3\n")
    b.unlink()
    r = run(menv, tmp_path, *flags, "--resume", "-p", "Again?")
    assert r.returncode == 0, r.stderr
    assert "a.csv changed" in r.stderr and "results may differ" in r.stderr
    assert "b.csv" in r.stderr and "not staged" in r.stderr
    note = user_texts(requests()[1])[-1]
    assert "a.csv changed" in note and "b.csv" in note
    # The changed file is staged again with its new contents, under its
    # old name; the vanished one is not offered to the model.
    sysmsg = requests()[1]["messages"][0]
    assert sysmsg["role"] == "system"
    assert "/workspace/data/a.csv" in sysmsg["content"]
    assert "b.csv" not in sysmsg["content"]
    # the file as it is now: its three rows (issue 23 item 8 describes a
    # CSV by its columns and rows, not its first four lines)
    assert "rows: 3 (after the header)" in sysmsg["content"]
    assert sid in r.stderr


def test_replay_rebuilds_the_dataframe_a_follow_up_uses(model, menv, tmp_path):
    data = tmp_path / "sales.csv"
    rows = [(m, 100 + 7 * m) for m in range(1, 13)]
    data.write_text("month,revenue\n" + "".join("%d,%d\n" % r for r in rows))
    total = sum(v for _, v in rows)
    load = "import pandas as pd\ndf = pd.read_csv('/workspace/data/sales.csv')\nprint(len(df))"
    follow = "print(int(df['revenue'].sum()))"
    flags, requests = model([
        tool_call(load), answer("Loaded 12 rows."),
        tool_call(load, "call_1b"), answer("Loaded 12 rows."),
        tool_call(follow, "call_2"), answer("Without the dataframe."),
        tool_call(follow, "call_3"), answer("The total is %d." % total),
    ])
    # Two sessions that loaded the same data.
    for _ in range(2):
        r = run(menv, tmp_path, *flags, "--json", "-p", "Load the data.", data)
        assert r.returncode == 0, r.stderr
    first, second = sorted(os.listdir(sessions_dir(menv)))

    # Without --replay the follow-up's cell fails: df is gone.
    r = run(menv, tmp_path, *flags, "--json", "--resume", first, "-p", "Total revenue?")
    ev = [json.loads(l) for l in r.stdout.splitlines()]
    res = [e for e in ev if e["type"] == "result"]
    assert [e["error"]["ename"] for e in res] == ["NameError"]

    # With it, the cell that loaded df runs first, then the question.
    r = run(menv, tmp_path, *flags, "--json", "--resume", second, "--replay", "-p",
            "Total revenue?")
    assert r.returncode == 0, r.stderr
    ev = [json.loads(l) for l in r.stdout.splitlines()]
    cells = [e for e in ev if e["type"] == "cell"]
    assert [(c["author"], c["code"]) for c in cells] == [("user", load), ("model", follow)]
    outs = ["".join(e["text"] for e in ev if e["type"] == "stdout" and e["cell"] == c["cell"])
            for c in cells]
    assert outs == ["12\n", "%d\n" % total]
    assert ev.index(cells[0]) < [i for i, e in enumerate(ev) if e["type"] == "question"][0]
    notices = [e["message"] for e in ev if e["type"] == "notice"]
    assert any("replay done: 1 cell re-ran" in n for n in notices)
    # The model was told what was re-run, and saw the result.
    body = requests()[6]
    assert "terp re-ran these earlier cells in the new sandbox: [1]" in user_texts(body)[-1]
    last = requests()[7]
    assert tool_texts(last)[-1].startswith("status: ok")
    assert "%d" % total in tool_texts(last)[-1]
    assert "The total is %d." % total in "".join(e.get("text", "") for e in ev
                                                 if e["type"] == "answer")


def test_replay_needs_resume(env, tmp_path):
    r = run(env, tmp_path, "exec", "--replay", "-c", "1")
    assert r.returncode == 2 and "--replay" in r.stderr


def test_max_session_ends_a_long_cell(env, tmp_path):
    # (the cell would sleep far past the timeout, a safety net that fails
    # a terp which does not end the session). 10 s, not 1: the limit must
    # land while the cell runs, not while a loaded machine still starts
    # the sandbox (a run in which no cell ran is not kept, by design).
    r = run(env, tmp_path, "exec", "--max-session", "10s", "-c",
            "print('running', flush=True)\nimport time\ntime.sleep(600)",
            timeout=120)
    assert r.returncode == 3
    assert "running" in r.stdout, r.stdout
    assert "--max-session limit of 10 s" in r.stderr
    lines = journal_lines(env, only_session(env))
    assert any(l["t"] == "note" and l["kind"] == "max-session" for l in lines)


def test_bad_durations_and_unknown_sessions(env, tmp_path):
    assert run(env, tmp_path, "exec", "--idle-timeout", "soon", "-c", "1").returncode == 2
    assert run(env, tmp_path, "exec", "--max-session", "x", "-c", "1").returncode == 2
    r = run(env, tmp_path, "--export", "20990101-000000-0000", tmp_path / "x.ipynb")
    assert r.returncode == 1 and "no session" in r.stderr
    r = run(env, tmp_path, "exec", "--resume", "-c", "1")
    assert r.returncode == 1 and "no session to resume" in r.stderr
    r = run(env, tmp_path, "--export", "../../etc", tmp_path / "x.ipynb")
    assert r.returncode == 1 and "not a session id" in r.stderr


def test_journal_write_failure_warns_once_and_the_run_goes_on(env, tmp_path):
    import resource

    def small_files():
        # Writes past 128 KiB (more than the sandbox's own files need)
        # fail with EFBIG instead of killing terp.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE,
                           (128 << 10, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    r = subprocess.run([TERP, "exec", "-c", "print('x' * 200000)", "-c", "print(6 * 7)",
                        "-c", "print('y' * 200000)"],
                       capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=120, preexec_fn=small_files)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "x" * 200000 + "\n42\n" + "y" * 200000 + "\n"
    assert r.stderr.count("no longer saved") == 1, r.stderr


def test_export_of_a_real_session_validates_and_reexecutes(env, tmp_path):
    import nbformat
    cells = [
        "import numpy as np\nrng = np.random.default_rng(7)\nv = rng.integers(0, 1000, 200)",
        "print(int(v.sum()), int(v.max()))",
        "round(float(v.mean()), 3)",
        "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "plt.plot(v[:20])\nplt.savefig('/workspace/out/v.png')\nprint('saved')",
    ]
    args = ["exec"]
    for c in cells:
        args += ["-c", c]
    r = run(env, tmp_path, *args)
    assert r.returncode == 0, r.stderr
    sid = only_session(env)
    ipynb, md = tmp_path / "s.ipynb", tmp_path / "s.md"
    assert run(env, tmp_path, "--export", sid, ipynb).returncode == 0
    r = run(env, tmp_path, "--export", sid, md)
    assert r.returncode == 0, r.stderr
    assert "```python\nprint(int(v.sum()), int(v.max()))\n```" in md.read_text()
    assert run(env, tmp_path, "--export", sid, tmp_path / "s.txt").returncode == 1
    nb = nbformat.read(str(ipynb), as_version=4)
    nbformat.validate(nb)
    # (issue 12: a first cell and the sandbox's paths rewritten, the
    # code as it ran kept in the metadata)
    code = [c for c in nb.cells if c.cell_type == "code" and c.id != "terp-paths"]
    assert [c.metadata.terp.get("sandbox_source", c.source) for c in code] == cells
    printed = "".join(code[1].outputs[0].text)
    value = code[2].outputs[0].data["text/plain"]
    assert any(o.output_type == "display_data" and "image/png" in o.data
               for o in code[3].outputs)
    if shutil.which("jupyter-nbconvert", path="/usr/bin") is None:
        pytest.fail("jupyter-nbconvert is not installed: `make deps` installs it",
                    pytrace=False)
    jenv = dict(os.environ)
    jenv["JUPYTER_RUNTIME_DIR"] = str(tmp_path / "rt")
    jenv["PATH"] = "/usr/bin:/bin"
    # As exported: it runs where it is written (issue 12), its chart in
    # out/ beside it (not the copy terp made, removed first)
    shutil.rmtree(tmp_path / "out")
    runnable = ipynb
    executed = tmp_path / "executed.ipynb"
    r = subprocess.run(["/usr/bin/jupyter-nbconvert", "--to", "notebook", "--execute",
                        "--ExecutePreprocessor.timeout=120", "--output", str(executed),
                        str(runnable)], capture_output=True, text=True, env=jenv,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    after = nbformat.read(str(executed), as_version=4)
    nbformat.validate(after)
    acode = [c for c in after.cells if c.cell_type == "code" and c.id != "terp-paths"]
    assert "".join(o.text for o in acode[1].outputs if o.output_type == "stream") == printed
    assert [o.data["text/plain"] for o in acode[2].outputs
            if o.output_type == "execute_result"] == [value]
    assert (tmp_path / "out" / "v.png").stat().st_size > 0


def test_a_question_that_looks_like_a_note_is_exported_whole(model, menv, tmp_path):
    # The notebook keeps the question apart from the notes sent with it;
    # nothing is recovered from the prompt's text by its look.
    flags, _ = model([{"openai": {"text": "Fine."}}])
    q = "Note: the file changed.\nQuestion: which month?"
    p = run(menv, tmp_path, *flags, "--out", "out", "-p", q)
    assert p.returncode == 0, p.stderr
    sid = only_session(menv)
    p = run(menv, tmp_path, "--export", sid, "q.md")
    assert p.returncode == 0, p.stderr
    text = (tmp_path / "q.md").read_text()
    assert "## Question\n\n> Note: the file changed.\n> Question: which month?\n" in text, text


def test_the_journal_records_each_fact_once_and_states_by_name(model, menv, tmp_path):
    # The journal is told what changed in the notebook: the answer is one
    # reply record (not streamed text, a message and an answer record as
    # well), the code one cell record beside the model's call, and the
    # sandbox's states are names, not the enum's values.
    code = "print(6 * 7)"
    answer_text = "The answer is 42, computed in the sandbox."
    flags, requests = model([tool_call(code), answer(answer_text), answer("Still 42.")])
    p = run(menv, tmp_path, *flags, "--out", "out", "-p", "What is 6 * 7?")
    assert p.returncode == 0, p.stderr
    sid = only_session(menv)
    path = os.path.join(sessions_dir(menv), sid, "notebook.jsonl")
    text = open(path).read()
    # the model's requests quote the conversation, and the text as it
    # streamed is kept for a kill before the reply (issue 21); the rest, once
    rest = "".join(l for l in text.splitlines(keepends=True)
                   if not l.startswith(('{"t":"sent"', '{"t":"stream"')))
    assert rest.count(answer_text) == 1, rest
    assert rest.count(json.dumps(code)[1:-1]) == 2, rest    # the cell; the call
    lines = journal_lines(menv, sid)
    assert [l["code"] for l in lines if l["t"] == "cell"] == [code]
    states = [l["state"] for l in lines if l["t"] == "kernel"]
    assert states and all(isinstance(s, str) for s in states), states
    assert "starting" in states
    # and it reads back: the resumed conversation is the one sent before
    p = run(menv, tmp_path, *flags, "--resume", sid, "-p", "Again?")
    assert p.returncode == 0 and p.stdout == "Still 42.\n", p.stderr
    body = requests()[-1]
    assert [m["role"] for m in body["messages"]][:5] == [
        "system", "user", "assistant", "tool", "assistant"], body
    assert body["messages"][1]["content"] == "What is 6 * 7?"
    assert body["messages"][4]["content"] == answer_text


def test_replay_in_the_same_folder_replaces_its_own_files(env, tmp_path):
    """A replayed cell's file is the session's own: it replaces out/c.txt
    (no c-2.txt, no "not this session's"), unless the user changed the
    file since, which is then kept and the copy takes c-2.txt."""
    code = "open('/workspace/out/c.txt', 'w').write('chart v1')"
    r = run(env, tmp_path, "exec", "-c", code)
    assert r.returncode == 0, r.stderr
    sid = only_session(env)
    r = run(env, tmp_path, "exec", "--resume", sid, "--replay", "-c", "print(2)")
    assert r.returncode == 0, r.stderr
    assert "not this session's" not in r.stderr, r.stderr
    assert sorted(os.listdir(tmp_path / "out")) == ["c.txt"]
    (tmp_path / "out" / "c.txt").write_text("the user's edit")
    r = run(env, tmp_path, "exec", "--resume", sid, "--replay", "-c", "print(3)")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "c.txt").read_text() == "the user's edit"
    assert (tmp_path / "out" / "c-2.txt").read_text() == "chart v1"


def test_resume_tells_an_unchanged_folder_from_a_changed_one(model, menv, tmp_path):
    """A folder given as data (issue 25 item 13) has a fingerprint of its
    entries: a resume with nothing changed says nothing, one with a file
    added to the folder says it changed."""
    d = tmp_path / "monthly"
    d.mkdir()
    (d / "jan.csv").write_text("v\n1\n")
    flags, requests = model([answer("first"), answer("second"), answer("third")])
    r = run(menv, tmp_path, *flags, "-p", "Hello?", d)
    assert r.returncode == 0, r.stderr
    r = run(menv, tmp_path, *flags, "--resume", "-p", "Again?")
    assert r.returncode == 0, r.stderr
    assert "monthly" not in r.stderr, r.stderr
    (d / "feb.csv").write_text("v\n2\n")
    r = run(menv, tmp_path, *flags, "--resume", "-p", "Once more?")
    assert r.returncode == 0, r.stderr
    assert "monthly changed" in r.stderr, r.stderr
    sysmsg = requests()[2]["messages"][0]["content"]
    assert "a folder (read-only): 2 files" in sysmsg, sysmsg
