"""Sessions through the real binary: the journal of `terp exec`, then
--list, --export, --delete, a kill -9 mid-cell read back, --resume with
a changed data file, and --replay rebuilding a dataframe. Skipped until
main.c has the session options (see the journal branch's report)."""
import json
import os
import signal
import subprocess
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TERP = os.path.join(ROOT, "terp")


def has_session_options():
    if not os.path.exists(TERP):
        subprocess.run(["make", "-s", "terp"], cwd=ROOT, check=False)
    try:
        out = subprocess.run([TERP, "--help"], capture_output=True, text=True,
                             timeout=10).stdout
    except OSError:
        return False
    return all(o in out for o in ("--list", "--resume", "--export", "--replay"))


pytestmark = pytest.mark.skipif(not has_session_options(),
                                reason="terp has no session options yet")


@pytest.fixture
def env(tmp_path):
    e = dict(os.environ)
    e["XDG_STATE_HOME"] = str(tmp_path / "state")
    e["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    return e


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
    deadline = time.time() + 60
    journal = None
    while time.time() < deadline:
        ids = sessions(env)
        if ids:
            journal = os.path.join(env["XDG_STATE_HOME"], "terp", "sessions",
                                   ids[0], "notebook.jsonl")
            # the cell's output line: the meta line holds "started" too
            if os.path.exists(journal) and '"d":"started' in open(journal).read():
                break
        time.sleep(0.1)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    assert journal is not None
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
