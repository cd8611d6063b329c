"""`--sandbox`: terp itself (`terp -p` and `terp exec`, the real binary)
running its Python session on a Jupyter server (Debian's
python3-jupyter-server, started here on a loopback port with a token)
and in a session pool (tests/fake_aca.py, which runs the code for real).
Each backend: an analysis of a staged CSV, a chart back into ./out, an
error line; the --json session event names where the session runs and
its isolation, and the token is never shown."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_model import FakeModel, read_log  # noqa: E402
from test_aca import BASE, Pool  # noqa: E402
from test_jupyter import Server  # noqa: E402

KEY = "sk-terp-test-0123456789"
JTOKEN = "terp-test-token"          # test_jupyter.Server's
ATOKEN = "tok-Secret-4f9a2c71d3e8b6a5"
PY = "/usr/bin/python3"

CSV = "region,price,qty\n" + "".join(
    "%s,%d,%d\n" % (("north", "south")[i % 2], 2 + i % 5, 1 + i % 3) for i in range(40))
NORTH = sum((2 + i % 5) * (1 + i % 3) for i in range(0, 40, 2))

CHART = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
         "plt.plot([1, 3, 2])\nplt.savefig('%s')\nprint('saved')")


@pytest.fixture(scope="module")
def jupyter(tmp_path_factory):
    r = subprocess.run([PY, "-c", "import jupyter_server, ipykernel, pandas, matplotlib"],
                       capture_output=True)
    if r.returncode != 0:
        pytest.fail("python3-jupyter-server, python3-ipykernel, pandas or matplotlib "
                    "is missing: scripts/deps.sh installs them", pytrace=False)
    s = Server(tmp_path_factory.mktemp("jupyter"))
    yield s
    s.stop()


def _pool(tmp):
    """test_aca's Pool, with /usr/bin/python3 (pandas, matplotlib)."""
    old = sys.executable
    sys.executable = PY
    try:
        return Pool(tmp, "--token", ATOKEN)
    finally:
        sys.executable = old


def where(kind, url):
    if kind == "jupyter":
        return ["--sandbox", "jupyter+" + url], {"JUPYTER_TOKEN": JTOKEN}
    return ["--sandbox", "aca:" + url], {"TERP_ACA_TOKEN": ATOKEN}


def paths(kind):
    """Where the code finds its data and saves its files, per backend."""
    return ("data/", "out/") if kind == "jupyter" else ("/mnt/data/", "/mnt/data/")


@pytest.fixture(params=["jupyter", "aca"])
def backend(request, tmp_path):
    if request.param == "jupyter":
        s = request.getfixturevalue("jupyter")
        return "jupyter", s.url
    p = _pool(tmp_path)
    request.addfinalizer(p.close)
    return "aca", p.endpoint


def test_exec_analysis_chart_and_error(terp, tmp_path, backend):
    kind, url = backend
    data, out = paths(kind)
    (tmp_path / "sales.csv").write_text(CSV)
    flags, env = where(kind, url)
    r = terp("exec", "--json", *flags,
             "-c", "import pandas as pd\ndf = pd.read_csv('%ssales.csv')\n"
                   "print('NORTH=%%d' %% (df[df.region == 'north'].price * "
                   "df[df.region == 'north'].qty).sum())" % data,
             "-c", CHART % (out + "chart.png"),
             "-c", "1/0",
             "sales.csv", extra_env=env, timeout=300)
    assert r.rc == 1, r                      # the last cell failed
    [s] = r.of("session")
    assert s["sandbox"] == ("jupyter 127.0.0.1:%s" % url.rsplit(":", 1)[1] if kind == "jupyter"
                            else "aca pool pool")
    assert "terp's sandbox does not apply" in s["isolation"] or \
        "local sandbox does not apply" in s["isolation"]
    assert [e["status"] for e in r.results()] == ["ok", "ok", "error"]
    assert r.stdout_of(1) == "NORTH=%d\n" % NORTH
    arts = r.of("artifact")
    assert [(a["cell"], a["name"]) for a in arts] == [(2, "chart.png")]
    png = (tmp_path / "out" / "chart.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    err = r.results()[2]["error"]
    assert err["ename"] == "ZeroDivisionError"
    assert JTOKEN not in r.out + r.err and ATOKEN not in r.out + r.err


def test_a_renamed_chart_is_said_on_the_cells_stderr(terp, tmp_path, backend):
    """out/chart.png is the user's: the chart comes back as chart-2.png,
    and the cell's stderr says so in the local sandbox's words (with
    where the code saved it), so that the model, the journal and an
    export carry the real name; the user's file is left as it was."""
    kind, url = backend
    _, out = paths(kind)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "chart.png").write_bytes(b"the user's older chart")
    flags, env = where(kind, url)
    r = terp("exec", "--json", *flags, "-c", CHART % (out + "chart.png"),
             extra_env=env, timeout=300)
    assert r.rc == 0, r
    assert [(a["name"], a["path"]) for a in r.of("artifact")] == \
        [("chart-2.png", "out/chart-2.png")], r
    note = ("terp: %schart.png copied as out/chart-2.png: out/chart.png was already "
            "there and is not this session's (left as it was)\n"
            % ("out/" if kind == "jupyter" else "/mnt/data/"))
    # (a pool's cell also says that its output arrives at the end)
    assert [e["text"] for e in r.of("stderr") if "copied" in e["text"]] == [note], r
    assert (tmp_path / "out" / "chart.png").read_bytes() == b"the user's older chart"
    assert (tmp_path / "out" / "chart-2.png").read_bytes().startswith(b"\x89PNG")


def test_exec_text_mode_says_where_once_and_the_error_line(terp, tmp_path, backend):
    kind, url = backend
    flags, env = where(kind, url)
    r = terp("exec", *flags, "-c", "x = 41", "-c", "print(x + 1)", "-c", "undefined_name",
             extra_env=env, timeout=300)
    assert r.rc == 1, r
    assert r.out.splitlines()[0] == "42"
    lines = r.err.splitlines()
    assert sum("the session runs on" in x for x in lines) == 1, r.err
    assert any(x.startswith("terp: [3] error") and "NameError" in x for x in lines), r.err


def test_wrong_token_is_one_line(terp, tmp_path, backend):
    kind, url = backend
    flags, env = where(kind, url)
    env = {k: "wrong-token-0123456789abcdef" for k in env}
    r = terp("exec", *flags, "-c", "print(1)", extra_env=env, timeout=300)
    assert r.rc == 4, r
    want = ("the Jupyter server refused the token" if kind == "jupyter"
            else "the session pool refused the token (401)")
    assert [x for x in r.err.splitlines() if want in x], r.err
    assert "wrong-token" not in r.err + r.out


def test_prompt_analysis_and_chart(terp, tmp_path, backend):
    """terp -p: the model's cells run on the backend, the system prompt
    names the backend's paths instead of /workspace, the chart comes
    back into ./out, the answer is printed."""
    kind, url = backend
    data, out = paths(kind)
    (tmp_path / "sales.csv").write_text(CSV)
    load = ("import pandas as pd\ndf = pd.read_csv('%ssales.csv')\n"
            "n = df[df.region == 'north']\nprint('NORTH=%%d' %% (n.price * n.qty).sum())" % data)
    log = tmp_path / "model.jsonl"
    srv = FakeModel({"turns": [
        {"openai": {"text": "Loading.", "tool_calls": [{"id": "c1", "code": load}]}},
        {"openai": {"text": "Chart.", "tool_calls": [{"id": "c2", "code": CHART % (out + "n.png")}]}},
        {"openai": {"text": "North revenue is %d." % NORTH}},
    ]}, str(log))
    port = srv.start()
    flags, env = where(kind, url)
    env["OPENAI_API_KEY"] = KEY
    r = terp("-p", "north revenue?", "--json", "--provider", "openai",
             "--base-url", "http://127.0.0.1:%d/v1" % port, *flags, "sales.csv",
             extra_env=env, timeout=300)
    assert r.rc == 0, r
    assert [e["text"] for e in r.of("answer")] == ["North revenue is %d." % NORTH]
    assert [e["status"] for e in r.results()] == ["ok", "ok"]
    assert r.stdout_of(1) == "NORTH=%d\n" % NORTH
    assert [a["name"] for a in r.of("artifact")] == ["n.png"]
    assert (tmp_path / "out" / "n.png").read_bytes().startswith(b"\x89PNG")
    reqs = read_log(str(log))
    system = reqs[0]["body"]["messages"][0]["content"]
    assert data + "sales.csv" in system
    assert "The working directory is /workspace" not in system
    assert ("Jupyter server" if kind == "jupyter" else "session pool") in system
    sent = json.dumps(reqs)
    assert JTOKEN not in sent and ATOKEN not in sent


def test_unknown_sandbox_is_a_usage_line(terp):
    r = terp("exec", "--sandbox", "ftp://example.invalid", "-c", "print(1)")
    assert r.rc == 4, r
    assert r.err.strip().splitlines() == [
        "terp: unknown sandbox ftp://example.invalid: --sandbox takes local, "
        "ssh://[user@]host[:port], jupyter+http[s]://host[:port][/base] or "
        "aca:<pool management endpoint>"]


def test_sandbox_from_the_config(terp, tmp_path, env):
    """sandbox = in the config file, with the token's variable named
    there too (sandbox_token_env)."""
    p = _pool(tmp_path)
    try:
        cfg = Path(env["XDG_CONFIG_HOME"]) / "terp"
        cfg.mkdir(parents=True, exist_ok=True)
        (cfg / "config").write_text("sandbox = aca:%s\nsandbox_token_env = MY_POOL_TOKEN\n"
                                    % p.endpoint)
        r = terp("exec", "--json", "-c", "print(6 * 7)", extra_env={"MY_POOL_TOKEN": ATOKEN},
                 timeout=300)
        assert r.rc == 0, r
        assert r.of("session")[0]["sandbox"] == "aca pool pool"
        assert r.stdout_of(1) == "42\n"
    finally:
        p.close()


def test_a_death_inside_start_ends_exec(terp):
    """The pool backend says at once (inside start) that the token is
    unusable: terp exec still ends with the one line, instead of waiting
    on a loop that was told to stop before it ran."""
    r = terp("exec", "--sandbox", "aca:http://127.0.0.1:9%s" % BASE, "-c", "print(1)",
             extra_env={"TERP_ACA_TOKEN": "bad"}, timeout=120)
    assert r.rc == 4, r
    assert "terp: the environment variable TERP_ACA_TOKEN holds no token" in r.err, r


def test_jupyter_token_from_a_command(terp, jupyter):
    """--sandbox-token-cmd: its first line is the token (run once, before
    the loop); a command that fails ends the run with one line that says
    so, instead of the server's 401."""
    spec = "jupyter+" + jupyter.url
    r = terp("exec", "--sandbox", spec, "--sandbox-token-cmd", "printf '%s\\n' " + JTOKEN,
             "-c", "print(6 * 7)", timeout=300)
    assert r.rc == 0, r
    assert r.out == "42\n"
    assert JTOKEN not in r.err
    r = terp("exec", "--sandbox", spec, "--sandbox-token-cmd", "echo " + JTOKEN + "; exit 3",
             "-c", "print(1)", timeout=300)
    assert r.rc == 4, r
    lines = [x for x in r.err.splitlines() if "token" in x]
    assert lines == ["terp: the token command (--sandbox-token-cmd) failed with exit status 3 "
                     "(it is run with sh -c; its output is not shown)"], r.err
    assert JTOKEN not in r.err + r.out
    r = terp("exec", "--sandbox", spec, "--sandbox-token-cmd", "true", "-c", "print(1)",
             timeout=300)
    assert r.rc == 4, r
    assert [x for x in r.err.splitlines() if "token" in x] == [
        "terp: the token command (--sandbox-token-cmd) printed no token"], r.err


def test_a_jupyter_servers_displays_read_as_the_local_ones(terp, tmp_path, jupyter, env):
    # the same cell through the local driver and a real ipykernel: the
    # export (the journal read back) has the same outputs, updated in
    # place, the Markdown as text/markdown
    from test_ipython_compat import PROGRESS

    clear = ("from IPython.display import clear_output\nimport sys\nprint('gone')\n"
             "for i in range(3):\n    clear_output(wait=True)\n    print('step', i)\n"
             "    print('warn', i, file=sys.stderr)")

    def outputs(*flags, extra_env=None):
        r = terp("exec", "--json", *flags, "-c", PROGRESS, "-c", clear,
                 extra_env=extra_env, timeout=300)
        assert r.rc == 0, r
        sid = r.of("session")[0]["id"]
        nb = tmp_path / ("%s.ipynb" % sid)
        e = subprocess.run([str(ROOT / "terp"), "--export", sid, str(nb)], env=env,
                           cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert e.returncode == 0, e.stderr
        cells = [c for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code"]
        return [[(o["output_type"], o.get("name"),
                  "".join(o.get("text") or o["data"]["text/plain"]),
                  sorted(o.get("data", {}))) for o in c["outputs"]] for c in cells]

    flags, jenv = where("jupyter", jupyter.url)
    remote = outputs(*flags, extra_env=jenv)
    local = outputs("--python", PY)
    assert remote == local, (remote, local)
    assert ("display_data", None, "'99%'", ["text/plain"]) in remote[0], remote
    # clear_output(): only what came after the last one is left
    assert remote[1] == [("stream", "stdout", "step 2\n", []),
                         ("stream", "stderr", "warn 2\n", [])], remote
