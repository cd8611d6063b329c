"""Export round trip: a session played through the journal, loaded back,
exported to .ipynb and .md; the notebook must validate against nbformat 4
and, re-executed by Jupyter (nbconvert + ipykernel, all local), print the
same numbers the export recorded."""
import base64
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from conftest import TERP, session_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIBOBJS = ["journal", "store", "datafile", "export", "digest", "notebook",
           "outcap", "util", "buf", "sanitize", "answer_trace", "numtrace", "netlog",
           "pipindex"]


def pkg_libs(*pkgs):
    out = subprocess.run(["pkg-config", "--libs", *pkgs], check=True,
                         capture_output=True, text=True).stdout
    return out.split()


@pytest.fixture(scope="module")
def mknb(tmp_path_factory):
    subprocess.run(["make", "-s", "terp"], cwd=ROOT, check=True)
    exe = str(tmp_path_factory.mktemp("bin") / "mknb")
    # every object but main's: the journal names error kinds through
    # the model client's table, and so on down
    # (build/obj mirrors src/'s layer folders; an object whose source is
    # gone is a stale one and left out)
    src = pathlib.Path(ROOT, "src")
    objs = [str(pathlib.Path(ROOT, "build", "obj", c.relative_to(src).with_suffix(".o")))
            for c in sorted(src.rglob("*.c")) if c.name != "main.c"]
    subprocess.run(["cc", "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra",
                    "-Werror", "-I" + os.path.join(ROOT, "include"),
                    "-o", exe, os.path.join(ROOT, "tests", "integration",
                                            "mknb.c"), *objs,
                    *pkg_libs("ncursesw", "libcurl", "libcjson", "libpng", "zlib",
                              "libseccomp", "readline"), "-lwslay", "-ldl",
                    "-lpthread", "-lm"], check=True)
    return exe


@pytest.fixture
def exported(mknb, tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out = tmp_path / "out"
    out.mkdir()
    png = out / "chart.png"
    plt.figure(figsize=(2, 2))
    plt.bar([0, 1, 2], [3, 5, 34])
    plt.savefig(png)
    plt.close("all")
    ipynb, md = tmp_path / "s.ipynb", tmp_path / "s.md"
    r = subprocess.run([mknb, str(tmp_path / "sessions"), str(png), str(ipynb),
                        str(md)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return tmp_path, r.stdout.strip(), ipynb, md, png


def code_cells(nb):
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def stdout_of(cell):
    return "".join("".join(o["text"]) if isinstance(o["text"], list) else o["text"]
                   for o in cell["outputs"]
                   if o["output_type"] == "stream" and o["name"] == "stdout")


def value_of(cell):
    for o in cell["outputs"]:
        if o["output_type"] == "execute_result":
            t = o["data"]["text/plain"]
            return "".join(t) if isinstance(t, list) else t
    return None


def test_ipynb_validates_and_holds_the_session(exported):
    import nbformat
    tmp, sid, ipynb, md, png = exported
    assert len(sid) == 20 and sid[8] == "-" and sid[15] == "-"
    assert (tmp / "sessions" / sid / "notebook.jsonl").is_file()
    nb = nbformat.read(str(ipynb), as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    assert nb.metadata.language_info.name == "python"
    kinds = [c.cell_type for c in nb.cells]
    assert kinds == ["markdown", "markdown", "code", "code", "code", "markdown"]
    # first, the note that Jupyter runs the model's code unsandboxed
    assert nb.cells[0].id == "terp-unsandboxed" and "**unsandboxed**" in nb.cells[0].source
    assert "What is the total of a?" in nb.cells[1].source
    # the answer keeps its numbers' sources (issue 11)
    assert nb.cells[-1].source == ("The total is **42**.\n\nNumbers: 1 of 1 traced\n"
                                   "- 42: cell [1], line 1\n")
    cells = code_cells(nb)
    assert [c.execution_count for c in cells] == [1, 2, 3]
    assert [stdout_of(c) for c in cells] == ["42\n", "42007\n", "3\n"]
    assert value_of(cells[1]) == "21003.5"
    imgs = [o for o in cells[2].outputs if o.output_type == "display_data"]
    assert len(imgs) == 1
    assert base64.b64decode(imgs[0].data["image/png"]) == png.read_bytes()


def test_reexecuted_by_jupyter_prints_the_same_numbers(exported):
    import nbformat
    tmp, sid, ipynb, md, png = exported
    if shutil.which("jupyter-nbconvert", path="/usr/bin") is None:
        pytest.fail("jupyter-nbconvert is not installed: `make deps` installs it",
                    pytrace=False)
    env = dict(os.environ)
    env["JUPYTER_RUNTIME_DIR"] = str(tmp / "rt")
    env["PATH"] = "/usr/bin:/bin"
    executed = tmp / "executed.ipynb"
    r = subprocess.run(["/usr/bin/jupyter-nbconvert", "--to", "notebook",
                        "--execute", "--ExecutePreprocessor.timeout=120",
                        "--output", str(executed), str(ipynb)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    before = nbformat.read(str(ipynb), as_version=4)
    after = nbformat.read(str(executed), as_version=4)
    nbformat.validate(after)
    for b, a in zip(code_cells(before), code_cells(after)):
        assert stdout_of(a) == stdout_of(b)
        assert value_of(a) == value_of(b)


def test_markdown_links_the_chart_relative_to_the_file(exported):
    tmp, sid, ipynb, md, png = exported
    text = md.read_text()
    assert "## Question\n\n> What is the total of a?" in text
    assert "```python\nimport pandas as pd\n" in text
    assert "```text\n42007\n```" in text
    assert "![chart.png](out/chart.png)" in text
    assert text.index("42007") < text.index("The total is **42**.")


# ---- issue 12 item 3: an export re-runs where it is written -------------

LOAD_CODE = ("import pandas as pd\ndf = pd.read_csv('/workspace/data/x.csv')\n"
             "print(int(df['v'].sum()))")
PLOT_CODE = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
             "plt.plot(df['v'])\nplt.savefig('/workspace/out/v.png')\n"
             "plt.savefig('out/w.png')\nprint(len(df))")


def nbconvert_execute(ipynb, cwd):
    """The notebook executed by Debian's Jupyter: (returncode, stderr, the
    executed notebook or None)."""
    import nbformat
    if shutil.which("jupyter-nbconvert", path="/usr/bin") is None:
        pytest.fail("jupyter-nbconvert is not installed: `make deps` installs it",
                    pytrace=False)
    env = dict(os.environ)
    env["JUPYTER_RUNTIME_DIR"] = str(cwd / "rt")
    env["PATH"] = "/usr/bin:/bin"
    executed = cwd / ("executed-%s" % ipynb.name)
    r = subprocess.run(["/usr/bin/jupyter-nbconvert", "--to", "notebook", "--execute",
                        "--ExecutePreprocessor.timeout=120", "--output", str(executed),
                        str(ipynb)], capture_output=True, text=True, env=env, cwd=cwd,
                       timeout=300)
    return r.returncode, r.stderr, (nbformat.read(str(executed), as_version=4)
                                    if r.returncode == 0 else None)


def test_an_export_that_reads_data_reruns_in_jupyter(terp, env, tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from fake_model import FakeModel
    (tmp_path / "x.csv").write_text("v\n" + "\n".join(str(i) for i in range(1, 31)) + "\n")
    srv = FakeModel({"turns": [
        {"openai": {"text": "Loading.", "tool_calls": [{"id": "c1", "code": LOAD_CODE}]}},
        {"openai": {"text": "Plotting.", "tool_calls": [{"id": "c2", "code": PLOT_CODE}]}},
        {"openai": {"text": "The total is 465."}},
    ]}, str(tmp_path / "model.jsonl"))
    port = srv.start()
    try:
        r = terp("-p", "total?", "--provider", "openai", "--base-url",
                 "http://127.0.0.1:%d/v1" % port, "x.csv",
                 extra_env={"OPENAI_API_KEY": "sk-test"})
    finally:
        srv.stop()
    assert r.rc == 0, r
    sid = session_dir(env).name
    # beside the data (relative paths), and in a folder of its own
    # (the data by its absolute path); both executed from elsewhere
    (tmp_path / "far" / "away").mkdir(parents=True)
    (tmp_path / "run").mkdir()
    for ipynb, data in [(tmp_path / "nb.ipynb", "x.csv"),
                        (tmp_path / "far" / "away" / "nb.ipynb", str(tmp_path / "x.csv"))]:
        p = subprocess.run([str(TERP), "--export", sid, str(ipynb)], env=env,
                           cwd=tmp_path / "run", capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 0, p.stderr
        # (the charts terp copied at the time are not the ones checked)
        shutil.rmtree(ipynb.parent / "out", ignore_errors=True)
        # executed where it is, the cells read the data and save the charts
        rc, err, after = nbconvert_execute(ipynb, tmp_path / "run")
        assert rc == 0, err[-3000:]
        got = code_cells(after)
        assert [stdout_of(c) for c in got[1:]] == ["465\n", "30\n"]
        # the first code cell says what was rewritten and makes out/
        cells = code_cells(json.loads(ipynb.read_text()))
        assert cells[0]["id"] == "terp-paths"
        setup = "".join(cells[0]["source"])
        assert "#   /workspace/data/x.csv -> %s\n" % data in setup, setup
        assert "#   /workspace/out -> out\n" in setup, setup
        assert "pd.read_csv('%s')" % data in "".join(cells[1]["source"])
        assert cells[1]["metadata"]["terp"]["sandbox_source"] == LOAD_CODE
        assert stdout_of(cells[1]) == "465\n" and stdout_of(cells[2]) == "30\n"
        out = ipynb.parent / "out"
        assert (out / "v.png").read_bytes()[:4] == b"\x89PNG"
        assert (out / "w.png").read_bytes()[:4] == b"\x89PNG"


def test_a_cancelled_question_exports_with_its_text_and_why(env, tmp_path):
    import signal
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from fake_model import FakeModel
    # a first question answered: a run that did nothing is not kept
    srv = FakeModel({"turns": [{"openai": {"text": "March."}},
                               {"openai": {"text": "late"}, "delay": 600}]},
                    str(tmp_path / "model.jsonl"))
    port = srv.start()
    try:
        p = subprocess.Popen([str(TERP), "-p", "Hello?", "-p", "Which month was best?", "--json",
                              "--provider", "openai", "--base-url",
                              "http://127.0.0.1:%d/v1" % port],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=tmp_path, env=dict(env, OPENAI_API_KEY="sk-test"))
        requests = 0
        for line in p.stdout:
            requests += json.loads(line)["type"] == "request"
            if requests == 2:
                break
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=120)
    finally:
        srv.stop()
    assert p.returncode == 130
    sid = session_dir(env).name
    for name in ("nb.ipynb", "nb.md"):
        r = subprocess.run([str(TERP), "--export", sid, str(tmp_path / name)], env=env,
                           cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
    nb = json.loads((tmp_path / "nb.ipynb").read_text())
    assert any("> Hello?" in "".join(c["source"]) for c in nb["cells"])
    assert ["".join(c["source"]) for c in nb["cells"]][-1] == \
        "**Question:**\n\n> Which month was best?\n\n*No answer: cancelled by the user*\n"
    assert "## Question\n\n> Which month was best?\n\n*No answer: cancelled by the user*\n" \
        in (tmp_path / "nb.md").read_text()
