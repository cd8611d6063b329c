"""Journals written by an earlier terp still load: the journals in
tests/fixtures/journals/ were recorded from real runs of the terp of
before issue 9's core change (tests/fixtures/journals/make_fixtures.py:
`terp exec`, `terp -p` against the fake model, a session resumed with
--replay, the notebook UI with hand-run cells, /restart and /load, and an
idle stop). Each must export (.md and .ipynb) exactly as that terp
exported it, and one resumed with --replay must send the model exactly
the request that terp sent.

The expected files beside the journals were written by that terp with
TERP_RECORD_FIXTURES=1; they are never regenerated with a newer one. What
terp changed on purpose since (issue 11: the traced numbers after each
answer in an export, the system prompt's rule to print every figure;
issue 12: an .ipynb's sandbox paths rewritten for where it is written;
issue 10: the prompt's Python and package line and its network rule, the
tool's description; issue 22: the .ipynb's unsandboxed note) is taken out of both sides before comparing; the
conversation, its notes and everything else must match as recorded."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TERP = os.path.join(ROOT, "terp")
FIX = os.path.join(ROOT, "tests", "fixtures", "journals")
sys.path.insert(0, os.path.join(ROOT, "tests"))
from fake_model import FakeModel  # noqa: E402

NAMES = ["exec", "prompt", "resumed", "tui", "idle"]
RECORD = os.environ.get("TERP_RECORD_FIXTURES") == "1"


def install(env, name):
    """Puts fixture name into env's session folder; returns its id."""
    src = os.path.join(FIX, name + ".jsonl")
    with open(src) as f:
        sid = json.loads(f.readline())["id"]
    d = os.path.join(env["XDG_STATE_HOME"], "terp", "sessions", sid)
    os.makedirs(d)
    shutil.copy(src, os.path.join(d, "notebook.jsonl"))
    return sid


# Issue 11's additions, removed before comparing (see the docstring).
NUMBERS_MD = re.compile(r"\n\nNumbers: \d+ of \d+ traced\n(?:- [^\n]*\n)*")
PRINT_RULE = ("- Print every figure your answer will state (counts, totals, means, "
              "percentages, differences) in a cell's output first, at the precision you "
              "will write it or finer: each number in the answer is checked against the "
              "outputs, and one no cell printed is flagged to the user.\n")


def without_additions(path, text):
    if path.endswith(".ipynb"):
        nb = json.loads(text)
        # issue 12: the sandbox's paths rewritten for where the notebook
        # is, the code as it ran kept in the metadata, and a first cell
        # that says so
        # (and issue 22 item 10: a first cell saying that Jupyter runs
        # the code unsandboxed)
        nb["cells"] = [c for c in nb["cells"]
                       if c.get("id") not in ("terp-paths", "terp-unsandboxed")]
        for c in nb["cells"]:
            ran = c.get("metadata", {}).get("terp", {}).pop("sandbox_source", None)
            if ran is not None:
                c["source"] = ran.splitlines(keepends=True)
        for c in nb["cells"]:
            if c["cell_type"] != "markdown":
                continue
            src = "".join(c["source"])
            cut = re.sub(r"\n\nNumbers: \d+ of \d+ traced\n(?:- [^\n]*\n?)*$", "", src)
            if cut != src:
                lines = cut.splitlines(keepends=True)
                c["source"] = lines
        return json.dumps(nb, indent="\t", ensure_ascii=False,
                          separators=(",", ":\t")) + "\n"
    if path.endswith(".json"):
        # issue 10 since: the system prompt says what the probe found
        # (this machine's Python and packages) and how to allow a host,
        # and the tool's description no longer says the network is off
        body = json.loads(text)
        for m in body.get("messages", [])[:1]:
            if m.get("role") == "system":
                lines = [ln for ln in m["content"].replace(
                    " pandas, numpy and matplotlib are installed.", "").split("\n")
                    if not ln.startswith("The session runs Python")
                    and ln + "\n" != PRINT_RULE
                    # issue 19: which IPython syntax works
                    and not ln.startswith("- IPython syntax works:")
                    # issue 25 item 13: the user can /load a file
                    and not ln.startswith("The user can add a data file with /load")]
                m["content"] = "\n".join(re.sub(r"^(- The network is off: .*?data).*",
                                                 r"\1.", ln) for ln in lines)
        for t in body.get("tools", []):
            t.get("function", t).pop("description", None)
        return json.dumps(body, indent=1, ensure_ascii=False) + "\n"
    return NUMBERS_MD.sub("\n", text)


def normal(text):
    """The export with what depends on where it was written made equal:
    the Markdown links to artifacts are relative to the export's folder."""
    return re.sub(r"(\.\./)+nonexistent/", "/nonexistent/", text)


def same_as_recorded(path, expected_name):
    exp = os.path.join(FIX, "expected", expected_name)
    got = normal(open(path).read())
    if RECORD:
        os.makedirs(os.path.dirname(exp), exist_ok=True)
        with open(exp, "w") as f:
            f.write(got)
        return
    assert os.path.exists(exp), "no recorded %s" % exp
    want = open(exp).read()
    if got != want and str(path).endswith((".ipynb", ".json")):
        # compared as JSON: the additions change how the cell's lines split
        want = without_additions(str(path), want)
    got = without_additions(str(path), got) if got != want else got
    assert got == want, "%s differs from %s" % (path, exp)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("fmt", ["md", "ipynb"])
def test_old_journal_exports_as_before(env, tmp_path, name, fmt):
    sid = install(env, name)
    out = tmp_path / ("nb." + fmt)
    p = subprocess.run([TERP, "--export", sid, str(out)], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "damaged" not in p.stderr, p.stderr
    same_as_recorded(out, "%s.%s" % (name, fmt))


def test_old_journal_resumes_as_before(env, tmp_path):
    """The notebook UI's session (hand-run cells, a restart, a /load, two
    data files of the same name, all gone now) resumed with --replay and a
    follow-up: the model gets the same conversation, notes and system
    prompt as from the terp that wrote the journal."""
    sid = install(env, "tui")
    log = tmp_path / "log.jsonl"
    srv = FakeModel({"turns": [{"openai": {"text": "Still here."}, "repeat": True}]},
                    str(log))
    port = srv.start()
    try:
        e = dict(env)
        e["OPENAI_API_KEY"] = "test-key-not-real"
        p = subprocess.run([TERP, "--provider", "openai", "--model", "fake", "--base-url",
                            "http://127.0.0.1:%d/v1" % port, "--out", str(tmp_path / "out"),
                            "--resume", sid, "--replay", "-p", "Still there?"],
                           env=e, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    finally:
        srv.stop()
    assert p.returncode == 0, p.stderr
    assert p.stdout == "Still here.\n", p
    assert "replay done: 1 cell re-ran" in p.stderr, p.stderr
    bodies = [json.loads(l)["body"] for l in log.read_text().splitlines()]
    assert len(bodies) == 1
    got = tmp_path / "request.json"
    got.write_text(json.dumps(bodies[0], indent=1, ensure_ascii=False) + "\n")
    same_as_recorded(got, "tui-resumed-request.json")
    # and the notebook after it, as that terp exported it
    out = tmp_path / "after.md"
    p = subprocess.run([TERP, "--export", sid, str(out)], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    same_as_recorded(out, "tui-resumed.md")
