"""Sessions through the real binary: the journal of `terp exec`, then
--list, --export, --delete, a kill -9 mid-cell read back, --resume with
a changed data file, and --replay rebuilding a dataframe."""
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import TERP as _TERP, wait_until

TERP = str(_TERP)


def terp(env, *args, timeout=120, cwd=None):
    return subprocess.run([TERP, *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=cwd)


def sessions(env):
    d = os.path.join(env["XDG_STATE_HOME"], "terp", "sessions")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def test_list_export_delete(env, tmp_path):
    r = terp(env, "exec", "-c", "print(6*7)", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    ids = sessions(env)
    assert len(ids) == 1
    r = terp(env, "--list")
    assert r.returncode == 0 and ids[0] in r.stdout
    out = tmp_path / "s.ipynb"
    r = terp(env, "--export", ids[0], str(out))
    assert r.returncode == 0, r.stderr
    import nbformat
    nb = nbformat.read(str(out), as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "".join(code[0].outputs[0].text) == "42\n"
    assert terp(env, "--delete", "../etc").returncode != 0
    assert terp(env, "--delete", ids[0]).returncode == 0
    assert sessions(env) == []


def test_kill_9_mid_cell_then_read_back(env, tmp_path):
    p = subprocess.Popen([TERP, "exec", "-c",
                          "print('started', flush=True)\nimport time\ntime.sleep(60)"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env, cwd=tmp_path)
    # the cell's output is on the screen first, then wait for the journal
    assert p.stdout.readline() == b"started\n"

    def journal_has_it():
        ids = sessions(env)
        if not ids:
            return None
        j = os.path.join(env["XDG_STATE_HOME"], "terp", "sessions", ids[0], "notebook.jsonl")
        return j if os.path.exists(j) and "started" in open(j).read() else None
    journal = wait_until(journal_has_it, "the cell's output reaching the journal")
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    p.stdout.close()
    p.stderr.close()
    lines = [json.loads(l) for l in open(journal) if l.endswith("\n")]
    assert lines[0]["t"] == "meta"
    out = tmp_path / "k.ipynb"
    r = terp(env, "--export", sessions(env)[0], str(out))
    assert r.returncode == 0, r.stderr
    import nbformat
    nb = nbformat.read(str(out), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"][0]
    assert code.metadata["terp"]["status"] == "interrupted"
    assert "".join(code.outputs[0].text) == "started\n"


def test_resume_warns_about_a_changed_file_and_replay_rebuilds(env, tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("a\n1\n2\n3\n")
    r = terp(env, "exec", "-c",
             "import pandas as pd\ndf = pd.read_csv('/workspace/data/d.csv')",
             str(data), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    sid = sessions(env)[0]
    r = terp(env, "exec", "--resume", sid, "--replay", "-c",
             "print(int(df['a'].sum()))", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "6\n" in r.stdout
    data.write_text("a\n1\n2\n4\n")
    r = terp(env, "exec", "--resume", sid, "-c", "print(1)", cwd=tmp_path)
    assert "d.csv changed" in r.stderr


VAR_SESSIONS = "/var/lib/terp/sessions"
SWEPT = "/var/lib/terp/sessions-swept"


def sweep_due():
    """The next root session sweeps: the stamp of the last sweep made
    two hours old (a sweep holds for an hour)."""
    if os.path.exists(SWEPT):
        t = time.time() - 2 * 3600
        os.utime(SWEPT, (t, t))


def test_root_sandbox_folders_of_removed_sessions_are_swept(env, tmp_path):
    """As root, a session whose state folder the sandbox's uid cannot pass
    (a 0700 home) keeps its sandbox folders under /var/lib/terp/sessions.
    A session folder removed by hand (rm -rf of a temporary folder, not
    terp --delete) left them there for good; the next root session that
    makes one sweeps them, and only them: a kept session's stay, and so do
    a live session's whose folder was removed under it, until it ends. A
    sweep holds for an hour (its stamp's mtime): a start within it walks
    nothing."""
    import shutil
    if os.geteuid() != 0:
        pytest.fail("sandbox folders under /var/lib/terp are made by a root terp: "
                    "run the tests as root", pytrace=False)

    def private(name):
        d = tmp_path / name
        d.mkdir(mode=0o700)
        os.chmod(d, 0o700)   # the sandbox's uid cannot pass: /var it is
        e = dict(env)
        e["XDG_STATE_HOME"] = str(d / "state")
        return e

    def run(e):
        before = set(sessions(e))
        r = terp(e, "exec", "-c", "print(1)", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        (sid,) = set(sessions(e)) - before
        assert os.path.isdir(os.path.join(VAR_SESSIONS, sid)), sid
        return sid

    def var(sid):
        return os.path.isdir(os.path.join(VAR_SESSIONS, sid))

    kept_env, gone_env, live_env = private("kept"), private("gone"), private("live")
    kept, gone = run(kept_env), run(gone_env)
    live = subprocess.Popen([TERP, "exec", "-c", "print('up', flush=True)\n"
                             "import time\ntime.sleep(120)"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=live_env, cwd=tmp_path)
    try:
        assert live.stdout.readline() == b"up\n"
        (live_id,) = sessions(live_env)
        shutil.rmtree(live_env["XDG_STATE_HOME"])
        shutil.rmtree(gone_env["XDG_STATE_HOME"])
        assert var(gone) and var(live_id)
        # a sweep within the hour holds: the next start walks nothing
        # (every start walked every folder there, six calls each)
        os.utime(SWEPT, None) if os.path.exists(SWEPT) else open(SWEPT, "w").close()
        held = run(kept_env)
        assert var(gone), "swept again within the hour of the last sweep"
        sweep_due()
        sweeper = run(kept_env)
        assert not var(gone), "the removed session's sandbox folder stayed"
        assert var(kept), "a kept session's sandbox folder was swept"
        assert var(live_id), "a live session's sandbox folder was swept under it"
    finally:
        live.terminate()
        live.wait(timeout=60)
    # its uid given back, the live session's folders go with the next sweep
    sweep_due()
    last = run(kept_env)
    assert not var(live_id)
    for sid in (kept, held, sweeper, last):
        r = terp(kept_env, "--delete", sid)
        assert r.returncode == 0, r.stderr
        assert not var(sid)
