"""Issue 12, item 1: a chart copied under another name than the one the
cell gave it (out/chart.png was already in the user's folder, so terp
writes chart-2.png) is named by its real host name everywhere, and the
cell says which of its files got another name: what the cell printed
("saved chart.png") and what the model remembers would otherwise point
at the older file. The real binary and sandbox, a scripted fake model
on 127.0.0.1, and one check of the notebook UI through tmux."""
import json
import os
import subprocess
import sys

from conftest import ROOT, TERP, session_dir, traversable
from tui_tmux import Tmux

sys.path.insert(0, str(ROOT / "tests"))
from fake_model import FakeModel, read_log  # noqa: E402

KEY = "sk-terp-test-0123456789"
SAVE = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "plt.plot([1, 3, 2])\nplt.savefig('/workspace/out/chart.png')\n"
        "print('saved /workspace/out/chart.png')")
NOTE = ("terp: out/chart.png copied as out/chart-2.png: out/chart.png was already "
        "there and is not this session's (left as it was)\n")


def older_chart(folder):
    (folder / "out").mkdir()
    (folder / "out" / "chart.png").write_bytes(b"the user's older chart")


def ask(env, tmp_path, *extra):
    """-p with a model that saves chart.png, then answers: (process, log)."""
    log = tmp_path / "model.jsonl"
    srv = FakeModel({"turns": [
        {"openai": {"text": "Plotting.", "tool_calls": [{"id": "c1", "code": SAVE}]}},
        {"openai": {"text": "The chart is out/chart-2.png."}},
    ]}, str(log))
    port = srv.start()
    try:
        p = subprocess.run([str(TERP), "-p", "plot it", "--provider", "openai",
                            "--base-url", "http://127.0.0.1:%d/v1" % port, *extra],
                           capture_output=True, text=True, timeout=120, cwd=tmp_path,
                           env=dict(env, OPENAI_API_KEY=KEY))
    finally:
        srv.stop()
    return p, read_log(str(log))


def test_the_model_and_the_headless_run_are_told_the_host_name(env, tmp_path):
    older_chart(tmp_path)
    p, reqs = ask(env, tmp_path, "--json")
    assert p.returncode == 0, p.stderr
    events = [json.loads(l) for l in p.stdout.splitlines()]
    [art] = [e for e in events if e["type"] == "artifact"]
    assert (art["name"], art["path"]) == ("chart-2.png", "out/chart-2.png")
    assert [e["text"] for e in events if e["type"] == "stderr"] == [NOTE]
    # the tool result: the files by their host names, and the rename of
    # the name the cell printed
    assert len(reqs) == 2
    [tool] = [m for m in reqs[1]["body"]["messages"] if m["role"] == "tool"]
    assert "files copied to the user's output folder:\n  chart-2.png (" in tool["content"]
    assert "stderr:\n" + NOTE in tool["content"], tool["content"]
    assert (tmp_path / "out" / "chart.png").read_bytes() == b"the user's older chart"
    assert (tmp_path / "out" / "chart-2.png").read_bytes()[:4] == b"\x89PNG"
    # the journal keeps both, as a resume and an export read them
    recs = [json.loads(l) for l in
            open(session_dir(env) / "notebook.jsonl", encoding="utf-8")]
    [a] = [r for r in recs if r["t"] == "artifact"]
    assert a["name"] == "chart-2.png" and a["path"] == "out/chart-2.png", a
    # the export, from the journal
    nb = tmp_path / "s.ipynb"
    r = subprocess.run([str(TERP), "--export", session_dir(env).name, str(nb)],
                       capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    [cell] = [c for c in json.loads(nb.read_text())["cells"]
              if c["cell_type"] == "code" and "savefig" in "".join(c["source"])]
    outs = json.dumps(cell["outputs"])
    assert "<chart-2.png>" in outs and NOTE.strip() in outs


def test_headless_text_mode_names_the_copy(env, tmp_path):
    older_chart(tmp_path)
    p, _ = ask(env, tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "The chart is out/chart-2.png.\n", p.stdout
    assert "[1] artifact out/chart-2.png" in p.stderr, p.stderr
    assert NOTE.strip() in p.stderr, p.stderr


def test_a_name_the_folder_cannot_take_is_said_too(terp, tmp_path):
    r = terp("exec", "--json", "-c",
             "import os\nos.makedirs('/workspace/out/by month', exist_ok=True)\n"
             "open('/workspace/out/by month/a.csv', 'w').write('x')")
    [a] = r.of("artifact")
    assert a["name"] == "by_month_a.csv", a
    assert [e["text"] for e in r.of("stderr")] == [
        "terp: out/by month/a.csv copied as out/by_month_a.csv (the output folder "
        "takes plain file names only)\n"]


def test_the_notebook_shows_the_copy_and_the_rename(tmp_path):
    traversable(str(tmp_path))
    older_chart(tmp_path)
    env = {"TERM": "tmux-256color", "LANG": "C.UTF-8",
           "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path),
           "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    t = Tmux("%s --provider demo" % TERP, 120, 40, env, cwd=str(tmp_path))
    try:
        t.wait(r"│ ready")
        t.text("/py " + SAVE.replace("\n", "; "))
        t.keys("Enter")
        s = t.wait(r"\[1\] you · ok.*▪ chart-2\.png", timeout=60)
        # the files pane, and the cell's own lines
        assert "▸ chart-2.png" in s, s
        assert "chart.png copied as out/chart-2.png" in s, s
        assert "▪ chart.png" not in s and "▸ chart.png" not in s, s
        t.text("/files")
        t.keys("Enter")
        s = t.wait(r"Artifacts.*chart-2\.png .*cell \[1\]")
        t.text("/quit")
        t.keys("Enter")
        t.wait(r"EXITED rc=0")
    finally:
        t.close()


# Issue 12, item 19: a plotting cell that raised saves no figure.

def test_a_failed_plotting_cell_saves_no_figure(terp, tmp_path):
    r = terp("exec", "--json",
             "-c", "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
                   "fig = plt.figure()\nplt.plot(undefined_name)",
             "-c", "print('next')",
             "-c", "plt.figure()\nplt.plot([1, 2])")
    assert [e["status"] for e in r.results()] == ["error", "ok", "ok"], r
    # the failed cell's figure is neither saved with it nor with the next
    assert [(a["cell"], a["name"]) for a in r.of("artifact")] == [(3, "figure-3-1.png")], r
    assert sorted(os.listdir(tmp_path / "out")) == ["figure-3-1.png"]
