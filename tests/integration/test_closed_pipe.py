"""A closed pipe (issue 25, item 8): `terp --json -p ... | head -1` stops
at the first write that fails with EPIPE, calls the model no more, runs
no more cells, and exits as a pipeline's writer does (128 + SIGPIPE)."""
import signal
import subprocess

from conftest import TERP
from test_headless import KEY

CELL = {"openai": {"text": "Another look.", "tool_calls": [
    {"id": "c", "code": "import time\nprint('row ' * 20)\ntime.sleep(0.2)"}]},
    "repeat": True}


def run_into_closed_pipe(env, tmp_path, fake, args, both=False):
    srv = fake([CELL])
    e = dict(env, OPENAI_API_KEY=KEY)
    with open(tmp_path / "stderr.txt", "w") as err:
        p = subprocess.Popen([str(TERP), "--provider", "openai", "--base-url", srv.url,
                              "--max-turns", "40", *args], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT if both else err, env=e, cwd=tmp_path)
        first = p.stdout.readline()      # what head -1 reads, then it exits
        p.stdout.close()
        rc = p.wait(timeout=120)
    return first, rc, srv.requests(), (tmp_path / "stderr.txt").read_text()


def test_json_into_head_stops_at_the_first_failed_write(env, tmp_path, fake):
    first, rc, reqs, err = run_into_closed_pipe(env, tmp_path, fake,
                                                ["--json", "-p", "Look at it forever."])
    assert first.startswith(b"{"), first
    assert rc == 128 + signal.SIGPIPE, (rc, err)
    # The model was called at most for the turn under way when the pipe
    # closed, not for the 40 the run would take.
    assert len(reqs) <= 2, (len(reqs), err)


def test_combined_log_into_head_stops_too(env, tmp_path, fake):
    """`terp -p ... 2>&1 | head -1`: the cells go to stderr, the pipe."""
    first, rc, reqs, err = run_into_closed_pipe(env, tmp_path, fake,
                                                ["-p", "Look at it forever."], both=True)
    assert rc == 128 + signal.SIGPIPE, (rc, err)
    assert len(reqs) <= 3, (len(reqs), err)
