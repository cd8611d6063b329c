"""No process of the sandbox outlives terp (issue 8, item 3).

bwrap forks a child that waits on an eventfd and then does its whole
set-up before it sets its own parent-death signal; killing only bwrap in
that window left the child running forever, holding the workspace and the
data files. Two ways terp ends early are tried 30 times each: a `terp -p`
that fails fast (nothing listening at the base URL, or a fake server
answering 401) and a SIGKILL of terp during start-up. Half of the runs use
the real bwrap; the other half a wrapper that makes bwrap's child block in
its set-up (bwrap's own --block-fd) and reports through --info-fd that the
child exists, so that every one of those runs lands in the window instead
of some. tests/integration/subreaper.py runs them as a child subreaper:
whatever terp leaves behind becomes its child, so the count is exact and
no other process of the machine is counted.
"""
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, TERP, free_port

sys.path.insert(0, str(ROOT / "tests"))
from fake_model import FakeModel  # noqa: E402

RUNS = 30
HARNESS = Path(__file__).with_name("subreaper.py")
BWRAP = "/usr/bin/bwrap"


def blocking_bwrap(d, n):
    """A bwrap whose child blocks in its set-up, before it sets its
    parent-death signal: the FIFO on --block-fd never gets data.
    --info-fd tells the harness the child exists. The sandbox uid runs
    it: everything is world-reachable."""
    info, block = d / ("info%d" % n), d / ("block%d" % n)
    os.mkfifo(info, 0o666)
    os.mkfifo(block, 0o666)
    os.chmod(info, 0o666)
    os.chmod(block, 0o666)
    w = d / ("bwrap%d.sh" % n)
    # fds 90/91: above every fd terp hands bwrap (bash: sh only has 0-9)
    w.write_text("#!/bin/bash\nexec 90>'%s' 91<>'%s'\nexec %s --info-fd 90 --block-fd 91 \"$@\"\n"
                 % (info, block, BWRAP))
    w.chmod(0o755)
    return w, info


@pytest.fixture
def lifecycle(tmp_path, env):
    """run(runs) -> results from the subreaper harness."""
    d = tmp_path / "lc"
    d.mkdir()
    d.chmod(0o755)

    def run(runs):
        spec = d / "spec.json"
        spec.write_text(json.dumps({"runs": runs}))
        p = subprocess.run([sys.executable, str(HARNESS), str(spec)], capture_output=True,
                           text=True, timeout=1800)
        assert p.returncode == 0, p.stderr[-3000:]
        return json.loads(p.stdout)["results"]

    def mkrun(argv, i, kill=None, extra_env=None):
        e = dict(env)
        e.update(extra_env or {})
        r = {"argv": [str(TERP)] + argv, "env": e, "cwd": str(tmp_path), "kill": kill,
             "info_fifo": None}
        if i % 2 == 1:
            w, info = blocking_bwrap(d, i)
            r["env"]["TERP_BWRAP"] = str(w)
            r["info_fifo"] = str(info)
            if kill:
                r["kill"] = "info"
        return r

    run.mkrun = mkrun
    return run


def leaks(results):
    bad = [(i, r["leaked"]) for i, r in enumerate(results) if r["leaked"]]
    print("%d of %d runs left processes behind (odd runs: blocking bwrap)" % (len(bad), len(results)))
    return bad


@pytest.fixture
def answers_401(tmp_path):
    srv = FakeModel({"turns": [{"status": 401, "repeat": True,
                                "body": {"error": {"message": "invalid api key",
                                                   "type": "invalid_request_error"}}}]},
                    str(tmp_path / "model.jsonl"))
    port = srv.start()
    yield "http://127.0.0.1:%d/v1" % port
    srv.stop()


def test_fast_failing_prompts_leave_no_process(lifecycle, answers_401):
    key = {"OPENAI_API_KEY": "sk-terp-test-0123456789"}
    runs = []
    for i in range(RUNS):
        url = answers_401 if i % 4 < 2 else "http://127.0.0.1:%d/v1" % free_port()
        runs.append(lifecycle.mkrun(["-p", "hello", "--json", "--provider", "openai",
                                     "--base-url", url, "--max-retries", "0"], i,
                                    extra_env=key))
    results = lifecycle(runs)
    assert len(results) == RUNS
    assert all(r["rc"] != 0 for r in results), [r["rc"] for r in results]
    assert leaks(results) == []


def test_sigkill_during_startup_leaves_no_process(lifecycle):
    runs = [lifecycle.mkrun(["exec", "--json", "-c", "print(1)"], i, kill="starting")
            for i in range(RUNS)]
    results = lifecycle(runs)
    assert len(results) == RUNS
    assert all(r["killed"] and r["rc"] == -9 for r in results), results
    assert leaks(results) == []
