"""Notebook code runs as in Jupyter (issue 19): IPython's syntax (line
and cell magics, shell escapes), the display protocol, tables as
Jupyter's text view and tracebacks as IPython shows them, in the local
sandbox through the driver's built-in IPython subset."""
import json
import os
import subprocess

from conftest import TERP

PY = "/usr/bin/python3"


def run(terp, *cells, args=(), **kw):
    a = ["exec", "--json", "--python", PY, *args]
    for c in cells:
        a += ["-c", c]
    return terp(*a, **kw)


def result(r, n):
    return [e for e in r.results() if e["cell"] == n][0]


def artifacts(r, n):
    return [e["name"] for e in r.of("artifact") if e["cell"] == n]


# ---------------------------------------------------------------- item 1: syntax

def test_line_magics_and_shell_escapes_run_as_in_ipython(terp):
    r = run(terp,
            "%matplotlib inline\nimport os\nimport numpy as np\nprint('imported', np.__name__)",
            "n = 2\nx = !echo hi {n}\nprint(type(x).__name__, x, x.s)",
            "for i in range(2):\n    !echo loop $i\n",
            "%env TERP_T=1\nprint(os.environ['TERP_T'])",
            "%cd /tmp\n%pwd",
            "%load_ext autoreload\n%autoreload 2\nprint('ok')",
            "%timeit -n 3 -r 2 sum(range(10))",
            "%time y = 6 * 7\ny",
            "%who",
            "s = '%d items' % 3\nt = '''\n%not_a_magic\n!not_a_shell\n'''\nprint(s, t.split())",
            "!pip --version",
            "%pip --version")
    assert r.rc == 0, r
    assert r.stdout_of(1) == "imported numpy\n", r
    assert r.stdout_of(2) == "SList ['hi 2'] hi 2\n", r
    assert r.stdout_of(3) == "loop 0\nloop 1\n", r
    assert r.stdout_of(4) == "env: TERP_T=1\n1\n", r
    assert r.stdout_of(5) == "/tmp\n" and result(r, 5)["value"] == "'/tmp'", r
    assert r.stdout_of(6) == "ok\n", r
    assert "per loop (mean \u00b1 std. dev. of 2 runs, 3 loops each)" in r.stdout_of(7), r
    assert r.stdout_of(8).startswith("CPU times: user ") and "Wall time: " in r.stdout_of(8), r
    assert result(r, 8)["value"] == "42", r
    assert r.stdout_of(9).split() == ["i", "n", "np", "os", "x", "y"], r
    assert r.stdout_of(10) == "3 items ['%not_a_magic', '!not_a_shell']\n", r
    assert r.stdout_of(11).startswith("pip "), r
    assert r.stdout_of(12).startswith("pip ") and "restart the kernel" in r.stdout_of(12), r


def test_cell_magics(terp):
    r = run(terp,
            "%%writefile helper.py\ndef double(x):\n    return 2 * x\n",
            "from helper import double\ndouble(21)",
            "%%capture cap\nprint('hidden')",
            "print(repr(cap.stdout))",
            "%%bash\necho bash $((6 * 7))",
            "%%sh\necho sh works",
            "%%time\nz = 5\nz * 2",
            "%%timeit -n 2 -r 2\nsorted(range(100))",
            "%%bash\nexit 3")
    assert r.stdout_of(1) == "Writing helper.py\n", r
    assert result(r, 2)["value"] == "42", r
    assert r.stdout_of(3) == "", r
    assert r.stdout_of(4) == "'hidden\\n'\n", r
    assert r.stdout_of(5) == "bash 42\n", r
    assert r.stdout_of(6) == "sh works\n", r
    assert "Wall time" in r.stdout_of(7) and result(r, 7)["value"] == "10", r
    assert "2 runs, 2 loops each" in r.stdout_of(8), r
    assert result(r, 9)["error"]["ename"] == "CalledProcessError", r


def test_an_unknown_magic_is_one_usage_error_and_the_lines_before_it_ran(terp):
    r = run(terp, "print('before')\n%nosuchmagic 1\nprint('after')",
            "%%nosuchcell\nx = 1", "print('next cell runs')")
    res = result(r, 1)
    assert r.stdout_of(1) == "before\n", r
    assert res["status"] == "error" and res["error"]["ename"] == "UsageError", r
    assert res["error"]["traceback"] == "UsageError: Line magic function `%nosuchmagic` not found.\n"
    assert result(r, 2)["error"]["evalue"] == "Cell magic `%%nosuchcell` not found.", r
    assert r.stdout_of(3) == "next cell runs\n", r


def test_one_line_cells_are_automagic_unless_a_name_shadows_them(terp):
    r = run(terp, "pwd", "pip --version", "pwd = 3", "pwd")
    assert result(r, 1)["value"] == "'/workspace'", r
    assert r.stdout_of(2).startswith("pip "), r
    assert result(r, 4)["value"] == "3", r


# ---------------------------------------------------------------- item 2: display

def test_display_protocol(terp, tmp_path):
    r = run(terp,
            "display('a', 1)",
            "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([1, 2])\ndisplay(fig)",
            "fig",
            "fig;",
            "x = 5\nx;",
            "class Png:\n    def _repr_png_(self):\n        return open('out/' + sorted(__import__('os').listdir('out'))[0], 'rb').read()\n"
            "Png()",
            "class MB:\n    def _repr_mimebundle_(self, include=None, exclude=None):\n"
            "        return {'text/markdown': '**bold**', 'text/plain': 'MB()'}\nMB()",
            "class H:\n    def _repr_html_(self):\n        return '<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>'\nH()",
            "import pandas as pd\npd.DataFrame({'name': ['x', 'y'], 'n': [10, 20]}).style",
            "from IPython.display import HTML, Markdown, Image, display as ipy_display\n"
            "ipy_display(HTML('<p>Hello <b>world</b></p>'))\nMarkdown('# Title')",
            "import glob\nImage(filename=sorted(glob.glob('out/*.png'))[0])")
    assert r.rc == 0, r
    assert r.stdout_of(1) == "'a'\n1\n", r
    # display(fig) shows it once, never as Figure(640x480)
    assert len(artifacts(r, 2)) == 1 and "Figure" not in r.stdout_of(2), r
    assert len(artifacts(r, 3)) == 1 and result(r, 3)["value"] is None, r
    assert artifacts(r, 4) == [] and result(r, 4)["value"] is None, r
    assert result(r, 5)["value"] is None, r
    assert len(artifacts(r, 6)) == 1 and result(r, 6)["value"] is None, r
    assert result(r, 7)["value"] == "MB()", r
    assert result(r, 8)["value"].split() == ["k", "v", "a", "1"], r
    styler = result(r, 9)["value"]
    assert "<" not in styler and styler.split()[-3:] == ["1", "y", "20"], r
    assert r.stdout_of(10) == "Hello world\n" and result(r, 10)["value"] == "# Title", r
    assert len(artifacts(r, 11)) == 1, r
    for n in range(1, 12):
        assert "<table" not in r.stdout_of(n) and "IPython.core.display" not in r.stdout_of(n)


def test_display_id_updates_the_same_output_file(terp, tmp_path):
    code = ("import matplotlib.pyplot as plt\nfrom IPython.display import Image\n"
            "fig, ax = plt.subplots(); ax.plot([1, 2]); fig.savefig('a.png'); plt.close(fig)\n"
            "h = display(Image(filename='a.png'), display_id='../../progress bar')\n"
            "h.update(Image(filename='a.png'))\nh")
    r = run(terp, code, args=["--out", str(tmp_path / "o")])
    assert r.rc == 0, r
    names = artifacts(r, 1)
    assert names and set(names) == {"display-______progress_bar.png"}, r
    assert os.listdir(tmp_path / "o") == ["display-______progress_bar.png"]
    assert result(r, 1)["value"] == "<DisplayHandle display_id=../../progress bar>", r


def test_display_of_hostile_bundles_is_bounded(terp):
    r = run(terp,
            "class Big:\n    def _repr_mimebundle_(self, **k):\n"
            "        return {'text/markdown': 'x' * (3 << 20)}\ndisplay(Big())",
            "class Bad:\n    def _repr_mimebundle_(self, **k):\n        return {'image/png': 12}\n"
            "    def __repr__(self):\n        return 'Bad()'\ndisplay(Bad())",
            "class Many:\n    def _repr_png_(self):\n        return b'\\x89PNG\\r\\n\\x1a\\n' + b'0' * 10\n"
            "for _ in range(100):\n    display(Many())")
    assert r.rc == 0 or r.rc == 1, r
    assert len(r.stdout_of(1)) < (1 << 20) + 100 and "display cut at 1 MiB" in r.stdout_of(1), r
    assert result(r, 2)["status"] == "ok", r
    assert len(artifacts(r, 3)) <= 64, r


# ---------------------------------------------------------------- item 4: tables

def test_wide_tables_print_as_jupyters_text_view(terp):
    r = run(terp, "import pandas as pd\n"
            "df = pd.DataFrame([[i * 31 + j for j in range(31)] for i in range(3)],"
            " columns=['column_%d' % j for j in range(31)])\ndf",
            "pd.get_option('display.max_columns'), pd.get_option('display.width')")
    v = result(r, 1)["value"]
    # 20 of the 31 columns, wrapped at 80 characters, as Jupyter shows it
    shown = [c for c in ("column_%d" % j for j in range(31)) if c in v.split()]
    assert len(shown) == 20, v
    assert max(len(line) for line in v.splitlines()) <= 80, v
    assert result(r, 2)["value"] == "(20, 80)", r


# ---------------------------------------------------------------- item 7: tracebacks

def test_tracebacks_show_the_cell_first_no_driver_and_cut_the_middle(terp):
    deep = ("src = ''.join('def f%d():\\n    return f%d()\\n' % (i, i + 1) for i in range(100))"
            " + 'def f100():\\n    raise ValueError(\"deep\")\\n'\n"
            "exec(compile(src, 'lib.py', 'exec'))\ndef g():\n    return f0()\ng()")
    r = run(terp, deep, "%time 1/0", "%%time\nx = 1\n{}['missing']")
    tb = result(r, 1)["error"]["traceback"]
    lines = tb.splitlines()
    assert lines[1] == '  File "<cell 1>", line 5, in <module>', tb
    assert '  File "<cell 1>", line 4, in g' in lines, tb
    assert "  ... 73 frames left out ...\n" in tb and "f100" in tb, tb
    for n in (2, 3):
        t = result(r, n)["error"]["traceback"]
        assert "driver" not in t and "/run/terp" not in t, t
    assert '  File "<timed exec>", line 1, in <module>' in result(r, 2)["error"]["traceback"]
    t3 = result(r, 3)["error"]["traceback"]
    assert '  File "<cell 3>", line 3, in <module>' in t3 and "KeyError" in t3, t3


# ---------------------------------------------------------------- machinery named

def test_get_ipython_names_the_machinery(terp):
    r = run(terp, "get_ipython()", "get_ipython().run_line_magic('env', 'A=1')")
    assert result(r, 1)["value"] == "<terp shell: terp's built-in IPython subset>", r
    assert r.stdout_of(2) == "env: A=1\n", r


# ---------------------------------------------------------------- exports

def test_the_export_keeps_magics_and_images_and_reruns_in_jupyter(terp, env, tmp_path):
    from test_export import nbconvert_execute
    cells = ["%matplotlib inline\nimport matplotlib.pyplot as plt\n"
             "fig, ax = plt.subplots()\nax.plot([1, 2])\ndisplay(fig)",
             "%%time\nx = 6 * 7", "y = !echo $x\nprint(y)"]
    r = run(terp, *cells)
    assert r.rc == 0, r
    sid = r.of("session")[0]["id"]
    nb = tmp_path / "nb.ipynb"
    p = subprocess.run([str(TERP), "--export", sid, str(nb)], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    code = [c for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code"]
    srcs = ["".join(c["source"]) for c in code]
    assert all(c in srcs for c in cells), srcs
    first = code[srcs.index(cells[0])]
    assert [o["output_type"] for o in first["outputs"]] == ["display_data"], first
    assert "image/png" in first["outputs"][0]["data"], first
    (tmp_path / "run").mkdir()
    rc, err, after = nbconvert_execute(nb, tmp_path / "run")
    assert rc == 0, err[-3000:]
    outs = ["".join(o.get("text", "")) for c in after.cells if c.cell_type == "code"
            for o in c.outputs if o.get("name") == "stdout"]
    assert "['42']\n" in outs, outs


def test_pip_magic_goes_through_the_sandboxs_pip_rules(terp):
    # no egress: pip is told why it cannot download, as pip in a cell is
    r = run(terp, "%pip install terp-no-such-package-xyz", "!pip install terp-no-such-package-xyz")
    for n in (1, 2):
        err = "".join(e["text"] for e in r.of("stderr") if e["cell"] == n)
        assert "no network access, so pip cannot download packages" in err, r
    assert "restart the kernel" in r.stdout_of(1), r


def test_python_with_percent_and_bang_is_never_rewritten(terp):
    # valid Python: the rewrite must leave it byte for byte as it is
    snippets = [
        "x = 10 % 3\ny = x != 2",
        "s = '''\n%not a magic\n!not a shell\n'''",
        's = """a\n  !b\n%c"""',
        "v = (1 +\n2 %\n3)",
        "w = [\n    1,\n    2 % 2,\n]",
        "t = 7 \\\n    % 4",
        "print('%d' % 5)  # 100% sure!",
        "d = {'a': '!x'}\nf'{d!r}'",
        "if x != 1:\n    z = 'it is 5% of it'",
        "q = r'\\'' + '%'",
        "time = 5", "cd = 4", "pwd == 2", "env.get('x')", "ls[0]", "who, whos = 1, 2",
    ]
    code = "import __main__\nsnips = %r\nprint([s for s in snips if __main__._ipy_transform(s) != s])" % (snippets,)
    r = run(terp, code)
    assert r.stdout_of(1) == "[]\n", r


def test_any_matplotlib_backend_name_still_captures_figures(terp):
    cells = ["%%matplotlib %s\nimport matplotlib.pyplot as plt\nplt.plot([1, %d])" % (b, i)
             for i, b in enumerate(["inline", "notebook", "widget", "qt", ""])]
    r = run(terp, *cells)
    for n in range(1, len(cells) + 1):
        assert result(r, n)["status"] == "ok", r
        assert len(artifacts(r, n)) == 1, r


def test_a_percent_inside_a_string_after_an_equals_sign_is_python(tmp_path):
    """print('N=%d' % n): the '=' and '%' are inside a string, not the
    'x = %magic' form (the transformer took it for one)."""
    p = subprocess.run([TERP, "exec", "--no-save", "--python", "/usr/bin/python3",
                        "-c", "n = 3\nprint('N=%d' % n)\nx, y = 1, 2\nprint('X=%s' % x)"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "N=3\nX=1\n", p.stdout


# ---------------------------------------------------------------- display regions

PROGRESS = ("from IPython.display import Markdown, display, update_display\n"
            "print('start')\n"
            "h = display('0%', display_id=True)\n"
            "for i in range(1, 4):\n"
            "    h.update('%d%%' % (i * 33))\n"
            "display(Markdown('# Report\\n\\n- **west** leads'))\n"
            "display('a', display_id='two'); display('b', display_id='two')\n"
            "update_display('both', display_id='two')\n"
            "print('end')")
# What Jupyter's notebook shows for PROGRESS, output by output.
PROGRESS_SHOWN = "start\n'99%'\n# Report\n\n- **west** leads\n'both'\n'both'\nend\n"


def _ask(env, tmp_path, code):
    """terp -p against a fake model whose one cell is code: (rc, the
    session id, the tool result the model got)."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from fake_model import FakeModel, read_log
    log = tmp_path / "model.jsonl"
    srv = FakeModel({"turns": [
        {"openai": {"tool_calls": [{"id": "c1", "name": "python_exec", "code": code}]}},
        {"openai": {"text": "Done."}, "repeat": True}]}, str(log))
    port = srv.start()
    try:
        p = subprocess.run([str(TERP), "-p", "go", "--json", "--python", PY,
                            "--provider", "openai", "--model", "fake",
                            "--base-url", "http://127.0.0.1:%d/v1" % port],
                           capture_output=True, text=True, cwd=tmp_path, timeout=120,
                           env={**env, "OPENAI_API_KEY": "sk-terp-test-0123"})
    finally:
        srv.stop()
    reqs = read_log(str(log))
    assert p.returncode == 0 and len(reqs) >= 2, p.stderr
    tool = [m for m in reqs[1]["body"]["messages"] if m["role"] == "tool"][-1]["content"]
    sid = [json.loads(l)["id"] for l in p.stdout.splitlines()
           if l.startswith('{"type":"session"')][0]
    return p, sid, tool


def test_update_display_replaces_the_output_the_model_and_the_export_get(env, tmp_path):
    p, sid, tool = _ask(env, tmp_path, PROGRESS)
    # the model reads the output as the notebook shows it: each display
    # once, with its last update, in its place; no mark bytes
    assert PROGRESS_SHOWN in tool, tool
    assert "'33%'" not in tool and "\x1b" not in tool, tool
    # the live stream prints each update, as jupyter-console does, unmarked
    live = "".join(json.loads(l)["text"] for l in p.stdout.splitlines()
                   if l.startswith('{"type":"stdout"'))
    assert "'33%'" in live and "\x1b" not in live, live
    # the .ipynb has Jupyter's own outputs: streams around display_data,
    # the Markdown as text/markdown
    nb = tmp_path / "nb.ipynb"
    e = subprocess.run([str(TERP), "--export", sid, str(nb)], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert e.returncode == 0, e.stderr
    (cell,) = [c for c in json.loads(nb.read_text())["cells"]
               if c["cell_type"] == "code" and "Markdown" in "".join(c["source"])]
    outs = [(o["output_type"], "".join(o.get("text") or o["data"]["text/plain"]),
             sorted(o.get("data", {})))
            for o in cell["outputs"]]
    assert outs == [("stream", "start\n", []),
                    ("display_data", "'99%'", ["text/plain"]),
                    ("display_data", "# Report\n\n- **west** leads", ["text/markdown", "text/plain"]),
                    ("display_data", "'both'", ["text/plain"]),
                    ("display_data", "'both'", ["text/plain"]),
                    ("stream", "end\n", [])], outs
    # the journal keeps the displays: a resumed session shows the same
    r = subprocess.run([str(TERP), "--export", sid, str(tmp_path / "nb.md")], env=env,
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "nb.md").read_text()
    assert "'99%'" in md and "'33%'" not in md and "\x1b" not in md, md


def test_forged_display_marks_change_only_their_own_cell(terp):
    # a cell writing the marks itself: an update of an id of another
    # cell, a bad mime, an unfinished region; later cells read as ever
    r = run(terp,
            "display('mine', display_id='x')",
            "import sys\n"
            "sys.stdout.write('\\x1b]7701;update;text/plain;x\\a\\nforged\\n\\x1b]7701;end\\a\\n')\n"
            "sys.stdout.write('\\x1b]7701;show;text/html;y\\a\\n<b>\\n')\n"
            "sys.stdout.write('\\x1b]7701;show;text/plain;\\a\\nopen')\n",
            "print('after')")
    assert r.rc == 0, r
    assert r.stdout_of(1) == "'mine'\n", r
    assert r.stdout_of(3) == "after\n", r
