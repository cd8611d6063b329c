"""The Azure Container Apps session pool backend (src/kernel/aca/kernel_aca.c), run
alone by tests/integration/aca_harness.c (ASan+UBSan) against
tests/fake_aca.py, a fake pool on 127.0.0.1 that follows
shared/PROTOCOLS.md §7 and runs the code for real (one Python child per
session identifier).

Timeouts below (HANG) only stop a hung test; nothing sleeps to
synchronise: the tests wait for the harness's JSON lines and for the
fake's own event lines ("exec" when a code execution starts)."""
import base64
import json
import os
import queue
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "build" / "aca-harness"
FAKE = ROOT / "tests" / "fake_aca.py"
BASE = "/subscriptions/sub/resourceGroups/rg/sessionPools/pool"
HANG = 120
TOKEN = "tok-Secret-4f9a2c71d3e8b6a5"
PROPS = "2024-02-02-preview"
EXECS = "2025-02-02-preview"
SAN_ENV = {"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=1",
           "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}


@pytest.fixture(scope="module")
def harness_bin():
    subprocess.run(["make", "-s", "build/aca-harness"], cwd=ROOT, check=True)
    return HARNESS


def jwt(exp, aud="api://pool-audience.example.invalid", sig="sig"):
    def b64(o):
        return base64.urlsafe_b64encode(json.dumps(o).encode()).rstrip(b"=").decode()
    return "%s.%s.%s" % (b64({"alg": "none", "typ": "JWT"}), b64({"aud": aud, "exp": exp}), sig)


class Pool:
    """tests/fake_aca.py in a subprocess, with its events in a queue."""

    def __init__(self, tmp, *args):
        self.p = subprocess.Popen([sys.executable, str(FAKE), *args], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, cwd=tmp)
        self.q = queue.Queue()
        first = json.loads(self.p.stdout.readline())
        self.port = first["port"]
        self.endpoint = "http://127.0.0.1:%d%s" % (self.port, BASE)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.q.put(json.loads(line))

    def wait_event(self, name):
        while True:
            ev = self.q.get(timeout=HANG)
            if ev["ev"] == name:
                return ev

    def wait_exec(self, needle):
        """Blocks until an execution whose code holds needle starts."""
        while True:
            ev = self.q.get(timeout=HANG)
            if ev["ev"] == "exec" and needle in ev["code"]:
                return ev

    def _call(self, path, body=None):
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path),
                                     data=None if body is None else json.dumps(body).encode(),
                                     method="GET" if body is None else "POST")
        with urllib.request.urlopen(req, timeout=HANG) as r:
            return json.loads(r.read())

    def config(self, **kw):
        self._call("/_fake/config", kw)

    def recycle(self):
        self._call("/_fake/recycle", {})

    def log(self):
        return self._call("/_fake/log")

    def close(self):
        self.p.terminate()
        self.p.wait(timeout=HANG)


@pytest.fixture
def pool(tmp_path):
    made = []

    def start(*args):
        p = Pool(tmp_path, "--token", TOKEN, *args)
        made.append(p)
        return p
    yield start
    for p in made:
        p.close()


class Harness:
    def __init__(self, exe, args, env_extra=None, cwd=None):
        env = dict(os.environ, **SAN_ENV)
        env.update(env_extra or {})
        self.p = subprocess.Popen([str(exe), *args], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=env, cwd=cwd)
        self.q = queue.Queue()
        self.raw = []           # every byte of stdout, for the secret checks
        self.lines = []         # every JSON line
        self.pending = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.raw.append(line)
            self.q.put(json.loads(line))
        self.q.put(None)

    def _next(self):
        o = self.q.get(timeout=HANG)
        if o is None:
            raise AssertionError("harness exited: " + self.p.stderr.read().decode(errors="replace"))
        self.lines.append(o)
        return o

    def send(self, line):
        self.p.stdin.write((line + "\n").encode())
        self.p.stdin.flush()

    def expect(self, pred):
        """The first unconsumed line for which pred holds."""
        while True:
            for o in self.pending:
                if pred(o):
                    self.pending.remove(o)
                    return o
            self.pending.append(self._next())

    def reply(self, line, types=("ok", "error", "queued", "staged", "status", "note")):
        self.send(line)
        return self.expect(lambda o: o["type"] in types)

    def run(self, n, code):
        r = self.reply("run %d %s" % (n, json.dumps(code)))
        assert r["type"] == "queued", r

    def result(self, n):
        return self.expect(lambda o: o["type"] == "result" and o["cell"] == n)

    def cell(self, n, code):
        """Runs a cell; returns (result, stdout, stderr, artifacts)."""
        self.run(n, code)
        r = self.result(n)
        return r, self.out(n, 0), self.out(n, 1), self.arts(n)

    def out(self, n, stream):
        return "".join(o["text"] for o in self.lines
                       if o["type"] == "output" and o["cell"] == n and o["stream"] == stream)

    def arts(self, n):
        return [o for o in self.lines if o["type"] == "artifact" and o["cell"] == n]

    def states(self):
        return [o for o in self.lines if o["type"] == "state"]

    def wait_state(self, state):
        return self.expect(lambda o: o["type"] == "state" and o["state"] == state)

    def idle(self):
        self.send("wait")
        self.expect(lambda o: o["type"] == "idle")

    def close(self):
        self.send("quit")
        self.p.stdin.close()
        while True:
            o = self.q.get(timeout=HANG)
            if o is None:
                break
            self.lines.append(o)
        rc = self.p.wait(timeout=HANG)
        self.err = self.p.stderr.read()
        assert rc == 0, self.err.decode(errors="replace")
        assert b"Sanitizer" not in self.err and b"runtime error" not in self.err, self.err
        assert self.lines[-1]["type"] == "bye"
        return b"".join(self.raw) + self.err


@pytest.fixture
def harness(harness_bin, tmp_path):
    made = []

    def start(pool_, *args, env=None, token_env=True, api=PROPS, out=None):
        a = ["--endpoint", pool_.endpoint, "--api-version", api,
             "--out", str(out or tmp_path / "out"), *args]
        e = dict(env or {})
        if token_env:
            a += ["--token-env", "ACA_TEST_TOKEN"]
            e.setdefault("ACA_TEST_TOKEN", TOKEN)
        h = Harness(harness_bin, a, e, cwd=tmp_path)
        made.append(h)
        return h
    yield start
    for h in made:
        if h.p.poll() is None:
            h.p.kill()
            h.p.wait()


def connected(h):
    st = h.expect(lambda o: o["type"] == "state" and o["state"] in ("ready", "dead"))
    assert st["state"] == "ready", st
    return st


SALES = "month,channel,revenue,spend\n" + "".join(
    "2024-%02d,%s,%d,%d\n" % (m, ch, 1000 + 37 * m * (i + 1), 100 + 11 * m)
    for m in range(1, 13) for i, ch in enumerate(["web", "store"]))


# ---------------------------------------------------------------- analyses

@pytest.mark.parametrize("api", [PROPS, EXECS])
def test_analysis_with_staged_csv_and_chart(pool, harness, tmp_path, api):
    """The same analysis through both response shapes: a staged CSV read
    with pandas, a value, a chart saved to /mnt/data and copied to the
    out folder under a terp-chosen name, the data file not copied back."""
    pytest.importorskip("pandas")
    csv = tmp_path / "sales.csv"
    csv.write_text(SALES)
    fp = pool()
    h = harness(fp, "--data", str(csv), api=api)
    connected(h)
    r, out, err, arts = h.cell(1, "import pandas as pd\n"
                                  "df = pd.read_csv('/mnt/data/sales.csv')\n"
                                  "print(df.groupby('channel').revenue.sum().to_dict())\n"
                                  "int(df.revenue.sum())")
    assert r["status"] == "ok", r
    want = sum(1000 + 37 * m * (i + 1) for m in range(1, 13) for i in range(2))
    assert r["value"] == str(want)
    assert "'store'" in out and "'web'" in out
    assert "output arrives when the cell ends" in err
    assert arts == []
    r, out, err, arts = h.cell(2, "import matplotlib\nmatplotlib.use('Agg')\n"
                                  "import matplotlib.pyplot as plt\n"
                                  "df.plot(x='month', y='revenue')\n"
                                  "plt.savefig('/mnt/data/chart.png')\nprint('saved')")
    assert r["status"] == "ok", (r, err)
    assert out == "saved\n"
    assert "output arrives" not in err          # said once per session
    assert [a["name"] for a in arts] == ["chart.png"]
    png = (tmp_path / "out" / "chart.png").read_bytes()
    assert png.startswith(b"\x89PNG") and arts[0]["bytes"] == len(png)
    assert arts[0]["path"] == str(tmp_path / "out" / "chart.png")
    # state persists between cells; an unchanged chart is not copied again
    r, out, _, arts = h.cell(3, "len(df)")
    assert r["value"] == "24" and arts == []
    h.close()
    assert sorted(os.listdir(tmp_path / "out")) == ["chart.png"]


def test_exception(pool, harness):
    """An exception: the cell's own stderr stays output, the traceback
    and the exception's name and message go to the result."""
    fp = pool()
    h = harness(fp)
    connected(h)
    r, out, err, _ = h.cell(1, "import sys\nprint('before')\n"
                               "print('warn', file=sys.stderr)\n"
                               "d = {}\nd['missing']")
    assert r["status"] == "error", r
    assert r["ename"] == "KeyError" and r["evalue"] == "'missing'"
    assert "Traceback (most recent call last)" in r["traceback"]
    assert out == "before\n"
    assert "warn\n" in err and "Traceback" not in err
    r, _, _, _ = h.cell(2, "1 + 1")
    assert r["status"] == "ok" and r["value"] == "2"
    h.close()


def test_exception_executions_shape(pool, harness):
    fp = pool()
    h = harness(fp, api=EXECS)
    connected(h)
    r, _, _, _ = h.cell(1, "raise ValueError('bad input')")
    assert r["status"] == "error" and r["ename"] == "ValueError"
    assert r["evalue"] == "bad input"
    h.close()


def test_image_result_becomes_artifact(pool, harness, tmp_path):
    """A figure as the last expression comes back as an image result:
    it is written as an artifact, not shown as text."""
    pytest.importorskip("matplotlib")
    fp = pool()
    h = harness(fp)
    connected(h)
    r, _, _, arts = h.cell(1, "import matplotlib\nmatplotlib.use('Agg')\n"
                              "import matplotlib.pyplot as plt\n"
                              "fig = plt.figure()\nplt.plot([3, 1, 2])\nfig")
    assert r["status"] == "ok" and r["value"] is None, r
    assert [a["name"] for a in arts] == ["result-1.png"]
    assert (tmp_path / "out" / "result-1.png").read_bytes().startswith(b"\x89PNG")
    h.close()


# ---------------------------------------------------------------- time limits, Ctrl-C

@pytest.mark.parametrize("style", ["http408", "status"])
def test_execution_timeout(pool, harness, style):
    """The pool stops a cell past its limit (1 s here, 220 s for real):
    CELL_TIMEOUT with the fix; the fake kills the session's kernel, so the
    next cell reports the state lost."""
    fp = pool("--limit-s", "1")
    fp.config(timeout_style=style)
    h = harness(fp, "--timeout-ms", "1000", "--grace-ms", "60000")
    connected(h)
    h.cell(1, "x = 41")
    r, _, _, _ = h.cell(2, "while True:\n    pass")
    assert r["status"] == "timeout", r
    assert "execution limit (1 s)" in r["reason"] and "smaller cells" in r["reason"]
    r, _, _, _ = h.cell(3, "'x' in globals()")
    assert r["state_lost"] == 1 and r["value"] == "False", r
    h.close()


def test_no_answer_in_time(pool, harness):
    """A pool that never answers: terp stops waiting after the limit and
    the grace, and says the remote cell may still run."""
    fp = pool()
    h = harness(fp, "--timeout-ms", "1000", "--grace-ms", "500")
    connected(h)
    r, _, _, _ = h.cell(1, "#hang")
    assert r["status"] == "timeout", r
    assert "may still run" in r["reason"]
    h.close()


def test_interrupt_abandons_the_wait(pool, harness, tmp_path):
    """Ctrl-C: the cell ends interrupted at once, saying the remote cell
    may still run (it does: it finishes later, and the session kept the
    variables it set before)."""
    flag = tmp_path / "go"
    fp = pool()
    h = harness(fp)
    connected(h)
    h.cell(1, "x = 7")
    h.run(2, "import os, time\nwhile not os.path.exists(%r):\n    time.sleep(0.01)\n"
             "y = 5\nprint('finished')" % str(flag))
    fp.wait_exec("finished")
    h.reply("interrupt")
    r = h.result(2)
    assert r["status"] == "interrupted", r
    assert "may still run" in r["reason"] and r["state_lost"] == 0
    assert h.out(2, 0) == ""
    flag.write_text("")
    r, _, _, _ = h.cell(3, "x + y")      # runs after the abandoned cell ends
    assert r["status"] == "ok" and r["value"] == "12", r
    assert r["state_lost"] == 0
    h.close()


def test_interrupt_while_copying_files(pool, harness, tmp_path):
    """Ctrl-C after the cell ran, while its files are downloaded: the
    cell keeps its real result and output; the copy stops (no partial
    file is left) and the cell's stderr says so."""
    fp = pool()
    h = harness(fp)
    connected(h)
    fp.config(hang_content=True)
    h.run(1, "open('/mnt/data/r.csv', 'w').write('a,b')\nprint('done')\n6 * 7")
    assert fp.wait_event("content")["name"] == "r.csv"
    h.reply("interrupt")
    r = h.result(1)
    assert r["status"] == "ok" and r["value"] == "42", r
    assert h.out(1, 0) == "done\n"
    assert "stopped copying the cell's files (Ctrl-C)" in h.out(1, 1)
    assert os.listdir(tmp_path / "out") == []
    h.close()


def test_queue_order_and_exactly_once(pool, harness):
    """Cells queued at once run in order; each gets one result; stop and
    restart end the running and the queued cells with one result each."""
    fp = pool()
    h = harness(fp)
    for i in range(1, 6):
        h.run(i, "v = %d\nv" % i)
    h.idle()
    res = [o for o in h.lines if o["type"] == "result"]
    assert [(o["cell"], o["value"]) for o in res] == [(i, str(i)) for i in range(1, 6)]
    h.run(6, "#hang")
    h.run(7, "1")
    fp.wait_exec("#hang")
    h.reply("stop idle for 30 min")
    r6, r7 = h.result(6), h.result(7)
    assert r6["status"] == "interrupted" and "may still run" in r6["reason"]
    assert r7["status"] == "interrupted" and "did not run" in r7["reason"]
    st = h.wait_state("stopped")
    assert st["msg"] == "idle for 30 min"
    # the next cell reconnects to the same session, which kept its state
    r, _, _, _ = h.cell(8, "v")
    assert r["value"] == "5" and r["state_lost"] == 0
    assert any("kept its state" in (s["msg"] or "") for s in h.states())
    h.idle()
    assert sum(1 for o in h.lines if o["type"] == "result") == 8
    h.close()


def test_restart_is_a_fresh_session(pool, harness, tmp_path):
    idf = tmp_path / "id"
    fp = pool()
    h = harness(fp, "--identifier-file", str(idf))
    connected(h)
    first = idf.read_text()
    h.cell(1, "z = 1")
    h.reply("restart")
    st = h.expect(lambda o: o["type"] == "state" and "restarted" in (o["msg"] or ""))
    assert st["state"] == "starting" and "lost" in st["msg"]
    connected(h)
    r, _, _, _ = h.cell(2, "'z' in globals()")
    assert r["value"] == "False"
    assert idf.read_text() != first          # the journal gets the new identifier
    h.close()


# ---------------------------------------------------------------- recycle and resume

def test_cooldown_recycle_reports_state_lost(pool, harness, tmp_path):
    """The pool destroys the session (its cooldown ended): the next cell's
    check finds no marker, reports the state lost (a "restarted" state
    report and state_lost on the cell), uploads the data files again
    and runs the cell in the fresh session."""
    csv = tmp_path / "d.csv"
    csv.write_text("a\n1\n2\n")
    fp = pool()
    h = harness(fp, "--data", str(csv))
    connected(h)
    h.cell(1, "x = 1")
    fp.recycle()
    r, _, _, _ = h.cell(2, "print(open('/mnt/data/d.csv').read().split())\n"
                           "'x' in globals()")
    assert r["status"] == "ok", r
    assert r["state_lost"] == 1 and "recycled" in r["reason"], r
    assert r["value"] == "False"
    assert h.out(2, 0) == "['a', '1', '2']\n"
    lost = [s for s in h.states() if s["state"] == "starting" and "recycled" in (s["msg"] or "")]
    assert len(lost) == 1 and "restarted" in lost[0]["msg"]
    h.close()


def test_resume_reaches_the_same_session(pool, harness, tmp_path):
    """The identifier kept in the journal (here a file) brings a new terp
    back to the same remote session while the pool keeps it; once the
    pool recycled it, the resume reports the state lost."""
    idf = tmp_path / "id"
    fp = pool()
    h = harness(fp, "--identifier-file", str(idf))
    connected(h)
    h.cell(1, "kept = 41")
    h.close()
    assert (idf.stat().st_mode & 0o777) == 0o600
    h = harness(fp, "--identifier-file", str(idf))
    st = connected(h)
    assert "kept its state" in st["msg"]
    r, _, _, _ = h.cell(1, "kept + 1")
    assert r["value"] == "42" and r["state_lost"] == 0
    h.close()
    fp.recycle()
    h = harness(fp, "--identifier-file", str(idf))
    connected(h)
    assert any(s["state"] == "starting" and "restarted" in (s["msg"] or "")
               and "recycled" in s["msg"] for s in h.states())
    r, _, _, _ = h.cell(1, "'kept' in globals()")
    assert r["value"] == "False"
    h.close()


def test_resume_does_not_copy_old_files(pool, harness, tmp_path):
    """Files already in /mnt/data when terp comes back are the baseline,
    not new artifacts."""
    idf = tmp_path / "id"
    fp = pool()
    h = harness(fp, "--identifier-file", str(idf), out=tmp_path / "o1")
    connected(h)
    _, _, _, arts = h.cell(1, "open('/mnt/data/a.txt', 'w').write('hi')")
    assert [a["name"] for a in arts] == ["a.txt"]
    h.close()
    h = harness(fp, "--identifier-file", str(idf), out=tmp_path / "o2")
    connected(h)
    _, _, _, arts = h.cell(1, "open('/mnt/data/b.txt', 'w').write('yo')")
    assert [a["name"] for a in arts] == ["b.txt"]
    h.close()


# ---------------------------------------------------------------- errors users hit

def error_of(h):
    st = h.expect(lambda o: o["type"] == "state" and o["state"] in ("ready", "dead"))
    assert st["state"] == "dead", st
    return st["msg"]


def test_wrong_token_401(pool, harness):
    fp = pool()
    h = harness(fp, "--audience", "api://pool-audience.example.invalid",
                env={"ACA_TEST_TOKEN": jwt(4102444800, aud="api://other.example.invalid")})
    msg = error_of(h)
    assert "refused the token (401)" in msg
    assert "api://other.example.invalid" in msg and "wants api://pool-audience" in msg
    # a cell asked for now reconnects, and fails with the same line
    h.run(1, "1")
    r = h.result(1)
    assert r["status"] == "crashed" and "401" in r["reason"]
    h.close()


def test_forbidden_403(pool, harness):
    fp = pool()
    fp.config(forbid=True)
    h = harness(fp)
    msg = error_of(h)
    assert "(403)" in msg and "Azure ContainerApps Session Executor" in msg


def test_pool_full_or_wrong_endpoint_404(pool, harness, harness_bin, tmp_path):
    fp = pool("--max-sessions", "0")
    h = harness(fp)
    msg = error_of(h)
    assert "404" in msg and "pool is full" in msg and "endpoint is wrong" in msg
    h.close()
    fp2 = pool()
    h = Harness(harness_bin, ["--endpoint", "http://127.0.0.1:%d/wrong/path" % fp2.port,
                              "--token-env", "T", "--out", str(tmp_path / "out")],
                {"T": TOKEN}, cwd=tmp_path)
    msg = error_of(h)
    assert "404" in msg and "endpoint is wrong" in msg
    h.close()


def test_upload_limit_413(pool, harness, tmp_path):
    """Over the limit before sending: one line from aca_stage. Over the
    pool's own limit: the 413 becomes one line in the next cell."""
    big = tmp_path / "big.csv"
    big.write_bytes(b"x" * 3000)
    fp = pool("--upload-max", "2000")
    h = harness(fp, "--upload-max", "1000")
    connected(h)
    r = h.reply("stage " + str(big))
    assert r["type"] == "error"
    assert "over the session pool's upload limit" in r["msg"] and "big.csv" in r["msg"]
    h.close()
    h = harness(fp, "--upload-max", "1000000")
    connected(h)
    r = h.reply("stage " + str(big))
    assert r["type"] == "staged" and r["path"] == "/mnt/data/big.csv"
    _, _, err, _ = h.cell(1, "import os\nos.path.exists('/mnt/data/big.csv')")
    assert "big.csv was not uploaded: it is over the session pool's upload limit" in err
    h.close()


def test_throttled_429_then_success(pool, harness):
    """429s with Retry-After are retried after the wait they ask for."""
    fp = pool()
    h = harness(fp)
    connected(h)
    fp.config(throttle={"count": 2, "retry_after": "1"})
    t0 = time.monotonic()
    r, _, _, _ = h.cell(1, "6 * 7")
    assert r["status"] == "ok" and r["value"] == "42"
    assert time.monotonic() - t0 >= 1.9     # two waits of at least 1 s each
    assert any("(429)" in (s["msg"] or "") for s in h.states())
    h.close()


def test_throttled_429_gives_up_with_a_line(pool, harness):
    fp = pool()
    h = harness(fp, "--retries", "2", "--retry-max-ms", "0")
    connected(h)
    fp.config(throttle={"count": 100, "retry_after": "0"})
    r, _, _, _ = h.cell(1, "1")
    assert r["status"] == "crashed"
    assert "throttling requests (429)" in r["reason"] and "after 2 tries" in r["reason"]
    h.close()


def test_unreachable_endpoint(harness_bin, tmp_path):
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()                               # nothing listens there now
    h = Harness(harness_bin, ["--endpoint", "http://127.0.0.1:%d%s" % (port, BASE),
                              "--token-env", "T", "--out", str(tmp_path / "out")],
                {"T": TOKEN}, cwd=tmp_path)
    msg = error_of(h)
    assert msg.startswith("cannot reach the session pool") and "check the endpoint" in msg
    h.close()


@pytest.mark.parametrize("endpoint,words", [
    ("http://10.0.0.1/x", "must use https"),
    ("https://user:pw@pool.example.invalid/x", "must not hold credentials"),
    ("https://pool.example.invalid/x?a=b", "must not have a query"),
    ("not a url", "not a URL"),
])
def test_bad_endpoint(harness_bin, tmp_path, endpoint, words):
    h = Harness(harness_bin, ["--endpoint", endpoint, "--token-env", "T",
                              "--out", str(tmp_path / "out")], {"T": TOKEN}, cwd=tmp_path)
    r = h.expect(lambda o: o["type"] == "error")
    assert words in r["msg"]
    h.close()


def test_unsupported_api_version(pool, harness):
    fp = pool()
    h = harness(fp, api="2023-01-01")
    r = h.expect(lambda o: o["type"] == "error")
    assert "unsupported session pool api-version 2023-01-01" in r["msg"]
    h.close()


# ---------------------------------------------------------------- the token

def token_cmd(tmp_path, exp=None, fail=None, out=None):
    """A token command that counts its runs in tmp/count."""
    script = tmp_path / "tok.py"
    cfg = tmp_path / "tokcfg.json"
    cfg.write_text(json.dumps({"exp": exp, "fail": fail, "out": out}))
    script.write_text(
        "import json, sys\n"
        "c = json.load(open(%r))\n"
        "open(%r, 'a').write('x')\n"
        "if c['fail']:\n"
        "    sys.stderr.write(c['fail'])\n"
        "    sys.exit(3)\n"
        "print(c['out'] if c['out'] is not None else %r)\n"
        % (str(cfg), str(tmp_path / "count"), TOKEN))
    return "%s %s" % (sys.executable, script), cfg


def runs(tmp_path):
    try:
        return len((tmp_path / "count").read_text())
    except FileNotFoundError:
        return 0


def test_token_command_cached_and_refreshed(pool, harness, tmp_path):
    """The command runs once for the connect and N cells while its token
    is valid, and again once the clock passes its expiry."""
    now = int(time.time())
    t = jwt(now + 3600)
    cmd, cfg = token_cmd(tmp_path, out=t)
    fp = pool()
    fp.config(tokens=[t])
    h = harness(fp, "--token-cmd", cmd, token_env=False)
    connected(h)
    for i in range(1, 5):
        r, _, _, _ = h.cell(i, "%d" % i)
        assert r["value"] == str(i)
    assert runs(tmp_path) == 1
    t2 = jwt(now + 7200, sig="two")
    cfg.write_text(json.dumps({"exp": None, "fail": None, "out": t2}))
    fp.config(tokens=[t, t2])
    h.reply("advance 3600")
    for i in range(5, 8):
        r, _, _, _ = h.cell(i, "%d" % i)
        assert r["value"] == str(i)
    assert runs(tmp_path) == 2
    # a token the command gives already expired (clocks differ) is used
    # for a minute, not fetched again for every request
    t3 = jwt(now, sig="three")
    cfg.write_text(json.dumps({"exp": None, "fail": None, "out": t3}))
    fp.config(tokens=[t3])
    h.reply("advance 7200")
    for i in range(8, 11):
        r, _, _, _ = h.cell(i, "%d" % i)
        assert r["value"] == str(i)
    assert runs(tmp_path) == 3
    h.close()


def test_token_command_az_json_and_rotation(pool, harness, tmp_path):
    """az's JSON output is understood; a 401 with a cached token gets one
    fresh token and one more try."""
    now = int(time.time())
    t1, t2 = jwt(now + 3600, sig="one"), jwt(now + 3600, sig="two")
    cmd, cfg = token_cmd(tmp_path, out=json.dumps({"accessToken": t1,
                                                   "expires_on": now + 3600}))
    fp = pool()
    fp.config(tokens=[t1])
    h = harness(fp, "--token-cmd", cmd, token_env=False)
    connected(h)
    h.cell(1, "1")
    assert runs(tmp_path) == 1
    cfg.write_text(json.dumps({"exp": None, "fail": None, "out": t2}))
    fp.config(tokens=[t2])                  # t1 revoked
    r, _, _, _ = h.cell(2, "2")
    assert r["status"] == "ok" and r["value"] == "2"
    assert runs(tmp_path) == 2
    h.close()


def test_token_command_fails(pool, harness, tmp_path):
    """A failing command: its first stderr line, with anything token-like
    redacted; the token it may have printed is never shown."""
    leak = jwt(4102444800, sig="LEAKED-SIGNATURE")
    cmd, cfg = token_cmd(tmp_path, fail="\nERROR: Please run 'az login' to set up "
                         "an account. (got %s)\nsecond line\n" % leak)
    fp = pool()
    h = harness(fp, "--token-cmd", cmd, token_env=False)
    msg = error_of(h)
    assert msg.startswith("the token command failed (exit 3): ERROR: Please run 'az login'")
    assert "[redacted]" in msg and "LEAKED" not in msg and "second line" not in msg
    data = h.close()
    assert b"LEAKED-SIGNATURE" not in data


def test_token_command_timeout_and_garbage(pool, harness, tmp_path):
    fp = pool()
    h = harness(fp, "--token-cmd", "sleep 1000", "--token-timeout-ms", "300",
                token_env=False)
    msg = error_of(h)
    assert "did not finish in 0 s" in msg or "did not finish" in msg
    h.close()
    h = harness(fp, "--token-cmd", "echo 'two words'", token_env=False)
    assert "output is no token" in error_of(h)
    h.close()
    h = harness(fp, "--token-cmd", "echo '{\"tokenType\": \"Bearer\"}'", token_env=False)
    assert "--query accessToken -o tsv" in error_of(h)
    h.close()


def test_token_env_missing_and_expired(pool, harness):
    fp = pool()
    h = harness(fp, env={"ACA_TEST_TOKEN": ""})
    assert "ACA_TEST_TOKEN holds no token" in error_of(h)
    h.close()
    h = harness(fp, env={"ACA_TEST_TOKEN": jwt(1000)})
    assert "has expired" in error_of(h)
    h.close()


def test_token_and_identifier_never_shown(pool, harness, tmp_path):
    """Every byte the harness printed (stdout and stderr) and every file it
    wrote is searched for the token and the identifier; the code the pool
    received never holds the token either."""
    csv = tmp_path / "d.csv"
    csv.write_text("a\n1\n")
    idf = tmp_path / "id"
    fp = pool()
    h = harness(fp, "--data", str(csv), "--identifier-file", str(idf))
    connected(h)
    h.cell(1, "import os\nprint(sorted(os.environ))\nopen('/mnt/data/o.txt','w').write('1')")
    h.cell(2, "1/0")
    fp.config(forbid=True)
    h.cell(3, "1")
    fp.config(forbid=False, tokens=["other"])
    h.cell(4, "1")
    data = h.close()
    ident = idf.read_text()
    assert len(ident) == 36
    assert TOKEN.encode() not in data and ident.encode() not in data
    for p in (tmp_path / "out").rglob("*"):
        b = p.read_bytes()
        assert TOKEN.encode() not in b and ident.encode() not in b
    log = fp.log()
    assert all(e["auth"] in ("Bearer " + TOKEN, None) for e in log[:-2])
    assert all(TOKEN not in (e["code"] or "") for e in log)
    assert all(ident in e["query"] for e in log)


# ---------------------------------------------------------------- hostile pool

def test_hostile_answers(pool, harness, tmp_path):
    """What the pool returns is bounded and checked: an answer over the
    cap, broken JSON, wrong types, an image that is not base64. Each ends
    the cell with one line; the session goes on."""
    fp = pool()
    h = harness(fp, "--response-max", "100000")
    connected(h)
    r, _, _, _ = h.cell(1, "#hostile:big")
    assert r["status"] == "crashed" and "over 97.7 KiB" in r["reason"], r
    r, _, _, _ = h.cell(2, "#hostile:badjson")
    assert r["status"] == "crashed" and "not understood" in r["reason"]
    r, out, err, _ = h.cell(3, "#hostile:types")
    assert r["status"] == "ok" and out == "" and r["value"] == '{"a":[1,2]}', r
    r, _, err, arts = h.cell(4, "#hostile:image")
    assert arts == [] and "not base64" in err
    r, _, _, _ = h.cell(5, "2 + 2")
    assert r["value"] == "4"
    h.close()
    assert os.listdir(tmp_path / "out") == []


@pytest.mark.parametrize("api", [PROPS, EXECS])
def test_hostile_listing(pool, harness, tmp_path, api):
    """Traversal and control-character names, bad sizes, duplicates and
    a flood of entries: only usable names are looked at, under caps; the
    file that sends more than it listed is dropped; names on the host are
    terp's and stay inside the out folder."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "chart.png").write_text("the user's own file")
    os.symlink("/etc/passwd", out / "evil.png")
    fp = pool()
    h = harness(fp, "--per-cell", "3", api=api)
    connected(h)
    fp.config(list_mode="hostile")
    r, _, err, arts = h.cell(1, "open('/mnt/data/chart.png', 'w').write('new chart')\n"
                                "open('/mnt/data/evil\\x1b]0;title\\x07.png', 'w').write('e')")
    names = sorted(a["name"] for a in arts)
    assert "chart-2.png" in names, (names, err)
    assert (out / "chart.png").read_text() == "the user's own file"
    assert os.readlink(out / "evil.png") == "/etc/passwd"
    for a in arts:
        assert "/" not in a["name"] and not a["name"].startswith(".")
        assert Path(a["path"]).parent == out
    assert "not looked at" in err
    assert "more bytes than it listed" in err or "cap reached (3 artifacts per cell)" in err
    assert "\x1b" not in json.dumps(h.lines)
    assert not [p for p in os.listdir(out) if p.startswith(".terp-")]
    h.close()


def test_artifact_caps(pool, harness, tmp_path):
    fp = pool()
    h = harness(fp, "--per-cell", "2", "--artifact-max", "100")
    connected(h)
    r, _, err, arts = h.cell(1, "for i in range(5):\n"
                                "    open('/mnt/data/f%d.txt' % i, 'w').write('x' * 10)\n"
                                "open('/mnt/data/big.bin', 'w').write('y' * 1000)")
    assert len(arts) == 2
    assert "cap reached (2 artifacts per cell)" in err
    assert "big.bin not copied: too large" in err
    h.close()


def test_note_for_the_model(pool, harness):
    fp = pool()
    h = harness(fp)
    r = h.reply("note")
    assert "/mnt/data/" in r["text"] and "output folder" in r["text"]
    h.close()


def test_stage_while_connected(pool, harness, tmp_path):
    """A data file staged mid-session is uploaded before the cells queued
    after it; a name the pool would refuse is made safe."""
    f = tmp_path / 'we"ird:name.csv'
    f.write_text("q\n9\n")
    fp = pool()
    h = harness(fp)
    connected(h)
    h.run(1, "x = 1")
    r = h.reply("stage " + str(f))
    assert r["type"] == "staged" and r["path"] == "/mnt/data/we_ird_name.csv", r
    res, out, _, arts = h.cell(2, "print(open(%r).read().split())" % r["path"])
    assert res["status"] == "ok" and out == "['q', '9']\n", res
    assert arts == []                       # a data file is not an artifact
    r = h.reply("stage " + str(tmp_path))
    assert r["type"] == "error" and "not a regular file" in r["msg"]
    h.close()


def test_interrupt_while_connecting(pool, harness):
    """Ctrl-C while the connect hangs (here on a token command that never
    ends) gives up the connect: the waiting cell ends interrupted and the
    session is stopped; nothing is left running."""
    fp = pool()
    h = harness(fp, "--token-cmd", "sleep 1000", "--token-timeout-ms", "600000",
                token_env=False)
    h.run(1, "1")
    h.reply("interrupt")
    r = h.result(1)
    assert r["status"] == "interrupted" and "while terp was connecting" in r["reason"]
    assert h.wait_state("stopped")["msg"] == "interrupted while connecting"
    h.close()
