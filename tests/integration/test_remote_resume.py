"""`terp --resume` on a remote backend reaches the same remote session
(issue 13 §3, §4): the journal keeps the session's identity (a "remote"
line: a Jupyter kernel's id and folder, a pool's session identifier),
a resume on the same --sandbox reaches that session again with its
variables, and starts a new one, reported as lost state, only when it
is gone. A pool's identifier is never shown: not in any output stream,
not in an export, not in what the model is sent. Against the real
Jupyter Server (test_jupyter.Server) and tests/fake_aca.py."""
import json
import os
import signal
import subprocess
import sys
from pathlib import Path


from conftest import ROOT, TERP, _state_sessions

sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_model import FakeModel, read_log  # noqa: E402
from test_backends import ATOKEN, JTOKEN, KEY, _pool  # noqa: E402



def sessions_dir(env):
    return str(_state_sessions(env))


def only_session(env):
    ids = sorted(os.listdir(sessions_dir(env)))
    assert len(ids) == 1, ids
    return ids[0]


def journal(env, sid):
    with open(os.path.join(sessions_dir(env), sid, "notebook.jsonl")) as f:
        return [json.loads(l) for l in f.read().splitlines()]


def remotes(env, sid):
    return [l for l in journal(env, sid) if l["t"] == "remote"]


def last_out(r):
    """The stdout of the run's last cell (a resume numbers on)."""
    n = max(e["cell"] for e in r.results())
    return r.stdout_of(n)


def lost_events(r):
    """The kernel events that say the Python state was lost (their
    flag: the message is for people)."""
    return [e for e in r.of("kernel") if e.get("state_lost") is True]


def killed_with_x(env, tmp_path, spec):
    """A session that set x = 41 on the Jupyter server, then had terp
    killed (-9) by its own cell, the kernel left alive; its id."""
    pidfile = tmp_path / "terp.pid"
    e = dict(env, JUPYTER_TOKEN=JTOKEN)
    kill = ("import os, signal\n"
            "os.kill(int(open(%r).read()), signal.SIGKILL)" % str(pidfile))
    p = subprocess.Popen([str(TERP), "exec", "--json", "--sandbox", spec, "-c", "x = 41",
                          "-c", kill], cwd=tmp_path, env=e, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    pidfile.write_text(str(p.pid))
    out, err = p.communicate(timeout=300)
    assert p.returncode == -signal.SIGKILL, (out, err)
    return only_session(env)


def test_jupyter_resume_reaches_the_same_kernel(terp, env, tmp_path, jupyter):
    """terp is killed (-9) with the kernel alive on the server: the
    resume finds it (GET /api/kernels/ID) and x is still there; after a
    clean exit, which shuts the kernel down, the next resume starts a
    new kernel and says the state was lost."""
    spec = "jupyter+" + jupyter.url
    sid = killed_with_x(env, tmp_path, spec)
    [rec] = remotes(env, sid)
    assert rec["sandbox"] == spec
    folder, kid = rec["session"].split("/")
    assert (jupyter.root / ("terp-" + folder)).is_dir()
    r = terp("exec", "--json", "--resume", sid, "--sandbox", spec, "-c", "print(x + 1)",
             extra_env={"JUPYTER_TOKEN": JTOKEN}, timeout=300)
    assert r.rc == 0, r
    assert last_out(r) == "42\n"
    assert lost_events(r) == [], r
    assert [x["session"] for x in remotes(env, sid)] == [rec["session"]]
    # terp exec ended cleanly and shut the kernel down: the next resume
    # finds it gone, starts a new kernel in the same folder, and says so.
    r = terp("exec", "--json", "--resume", sid, "--sandbox", spec,
             "-c", "print('x' in globals())", extra_env={"JUPYTER_TOKEN": JTOKEN},
             timeout=300)
    assert r.rc == 0, r
    assert last_out(r) == "False\n"
    [ev] = lost_events(r)
    assert ev["restarted"] is True and ev["state"] == "ready", r
    assert ev["message"] == "restarted the Jupyter kernel; its state (variables, imports) was lost"
    new = remotes(env, sid)[-1]["session"]
    assert new.split("/")[0] == folder and new.split("/")[1] != kid
    assert JTOKEN not in json.dumps(journal(env, sid))


def test_a_kept_state_is_not_replayed_a_lost_one_is(terp, env, tmp_path, jupyter):
    """--replay after a resume that reached the kernel with its state:
    nothing lost, nothing to replay (the journal does not take the
    resume as a loss; x is there). After a clean exit (the kernel shut
    down), the next --resume --replay finds it gone: the backend's loss
    is the journal's, and the cells that succeeded are re-run."""
    spec = "jupyter+" + jupyter.url
    sid = killed_with_x(env, tmp_path, spec)
    r = terp("exec", "--json", "--resume", sid, "--replay", "--sandbox", spec,
             "-c", "print(x + 1)", extra_env={"JUPYTER_TOKEN": JTOKEN}, timeout=300)
    assert r.rc == 0, r
    assert lost_events(r) == [], r
    notes = [n["message"] for n in r.of("notice")]
    assert "nothing to replay: no cell that succeeded lost its state" in notes, notes
    assert not [n for n in notes if n.startswith("replaying")], notes
    assert [c["cell"] for c in r.of("cell")] == [3] and last_out(r) == "42\n", r
    # the clean exit shut the kernel down: lost, and replayed
    r = terp("exec", "--json", "--resume", sid, "--replay", "--sandbox", spec,
             "-c", "print(x + 2)", extra_env={"JUPYTER_TOKEN": JTOKEN}, timeout=300)
    assert r.rc == 0, r
    assert len(lost_events(r)) == 1, r
    notes = [n["message"] for n in r.of("notice")]
    assert [n for n in notes if n.startswith("replaying")] == [
        "replaying 2 cells that succeeded before the state was lost: [1], [3]"], notes
    assert last_out(r) == "43\n", r


def test_jupyter_resume_elsewhere_starts_fresh(terp, env, tmp_path, jupyter):
    """The journal's kernel is only looked for on the server it ran on:
    a resume with --sandbox local is a new local sandbox, and since it
    ran here last, the next --resume without --sandbox runs here too;
    a session that never ran elsewhere has no remote line."""
    spec = "jupyter+" + jupyter.url
    r = terp("exec", "--sandbox", spec, "-c", "x = 1", extra_env={"JUPYTER_TOKEN": JTOKEN},
             timeout=300)
    assert r.rc == 0, r
    sid = only_session(env)
    assert len(remotes(env, sid)) == 1
    r = terp("exec", "--resume", sid, "--sandbox", "local", "-c", "print('x' in globals())",
             timeout=300)
    assert r.rc == 0, r
    assert r.out == "False\n"
    assert "resuming it there" not in r.err
    assert [(x["sandbox"], x["session"]) for x in remotes(env, sid)][1:] == [("local", "")]
    r = terp("exec", "--resume", sid, "-c", "import os; print(os.getcwd())", timeout=300)
    assert r.rc == 0, r
    assert r.out == "/workspace\n" and "resuming it there" not in r.err, r
    assert len(remotes(env, sid)) == 2
    r = terp("exec", "-c", "1", timeout=300)
    assert r.rc == 0, r
    [other] = [s for s in os.listdir(sessions_dir(env)) if s != sid]
    assert remotes(env, other) == []


def test_pool_resume_reuses_the_identifier_and_never_shows_it(terp, env, tmp_path):
    """The pool's session identifier is random per terp session, kept in
    the journal, reused by --resume (the pool's session and its
    variables are reached again), and appears in no output stream, no
    export and nothing sent to the model."""
    pool = _pool(tmp_path)
    try:
        log = tmp_path / "model.jsonl"
        srv = FakeModel({"turns": [
            {"openai": {"text": "Setting.", "tool_calls": [{"id": "c1", "code": "y = 7"}]}},
            {"openai": {"text": "Set."}},
            {"openai": {"text": "Using.", "tool_calls": [{"id": "c2", "code": "print(y * 6)"}]}},
            {"openai": {"text": "It is 42."}},
        ]}, str(log))
        port = srv.start()
        flags = ["--provider", "openai", "--base-url", "http://127.0.0.1:%d/v1" % port,
                 "--sandbox", "aca:" + pool.endpoint]
        ee = {"TERP_ACA_TOKEN": ATOKEN, "OPENAI_API_KEY": KEY}
        r1 = terp("-p", "set y", "--json", *flags, extra_env=ee, timeout=300)
        assert r1.rc == 0, r1
        sid = only_session(env)
        r2 = terp("-p", "use y", "--json", "--resume", sid, *flags, extra_env=ee,
                  timeout=300)
        assert r2.rc == 0, r2
        assert last_out(r2) == "42\n"
        assert lost_events(r2) == [], r2
        # without --sandbox: where the session ran, said in one line
        r3 = terp("exec", "--resume", sid, "-c", "print(y + 1)", extra_env=ee, timeout=300)
        assert r3.rc == 0, r3
        assert r3.out == "8\n"
        assert "terp: the session ran on aca:%s; resuming it there (--sandbox local runs "\
            "it here)" % pool.endpoint in r3.err.splitlines(), r3
        exp = tmp_path / "nb.ipynb"
        r4 = terp("--export", sid, exp)
        assert r4.rc == 0, r4
        srv.stop()
        idents = {q.split("identifier=")[1].split("&")[0]
                  for q in (x["query"] for x in pool.log()) if "identifier=" in q}
        assert len(idents) == 1, idents
        [ident] = idents
        assert [x["session"] for x in remotes(env, sid)] == [ident]
        shown = r1.out + r1.err + r2.out + r2.err + r3.out + r3.err + r4.out + r4.err
        assert ident not in shown
        assert ident not in exp.read_text()
        reqs = read_log(str(log))
        assert ident not in json.dumps(reqs)
        # the model is told the state may still be there
        users = [m["content"] for m in reqs[2]["body"]["messages"] if m["role"] == "user"]
        assert "reaches the same remote Python session again" in json.dumps(users)
        assert ATOKEN not in json.dumps(journal(env, sid))
    finally:
        pool.close()


def test_a_damaged_remote_line_is_a_new_kernel(terp, env, tmp_path, jupyter):
    """A remote line that does not have the form (a damaged journal) is
    not sent to the server: the resume starts a new kernel."""
    spec = "jupyter+" + jupyter.url
    r = terp("exec", "--sandbox", spec, "-c", "x = 1", extra_env={"JUPYTER_TOKEN": JTOKEN},
             timeout=300)
    assert r.rc == 0, r
    sid = only_session(env)
    path = os.path.join(sessions_dir(env), sid, "notebook.jsonl")
    with open(path, "a") as f:
        f.write(json.dumps({"t": "remote", "sandbox": spec, "session": "../x/../y"}) + "\n")
    r = terp("exec", "--resume", sid, "--sandbox", spec, "-c", "print('x' in globals())",
             extra_env={"JUPYTER_TOKEN": JTOKEN}, timeout=300)
    assert r.rc == 0, r
    assert r.out == "False\n"
