"""Issue 19 items 3, 5, 6: output as a notebook shows it (carriage
returns, coalesced events), files beside the data, input()."""
import json

from conftest import TERP


# ---------------------------------------------------------------- input()

def test_input_refuses_at_once_headless(terp):
    cells = ["x = input('name? ')",
             "import sys; sys.stdin.readline()",
             "import getpass; getpass.getpass()",
             "import sys\nfor line in sys.stdin: pass",
             # a subprocess reading fd 0 gets EOF, not a hang
             "import subprocess; print(subprocess.run(['cat'], capture_output=True).returncode)"]
    args = ["exec", "--json", "--timeout", "30"]
    for c in cells:
        args += ["-c", c]
    r = terp(*args)
    res = r.results()
    assert [e["status"] for e in res] == ["error"] * 4 + ["ok"], r
    for e in res[:4]:
        assert e["error"]["ename"] == "StdinNotImplementedError", e
        assert "cannot ask for input here" in e["error"]["evalue"], e
        # at once, not at the time limit
        assert e["duration_ms"] < 20000, e
    assert r.stdout_of(5) == "0\n"


# ---------------------------------------------------------------- \r and coalescing

KEY = "sk-terp-test-0123456789"

# A progress bar as tqdm draws it: 100 rewrites of one line on stderr,
# slow enough to span several flushes, then a newline.
BAR = """
import sys, time
for i in range(101):
    sys.stderr.write("\\r%3d%%|%-10s|" % (i, "#" * (i // 10)))
    sys.stderr.flush()
    time.sleep(0.004)
sys.stderr.write("\\n")
print("done")
"""


def _resolve(text):
    """What a notebook shows of text (Jupyter's carriage returns)."""
    lines = []
    for raw in text.replace("\r\n", "\n").split("\n"):
        line = ""
        for part in raw.split("\r"):
            line = part + line[len(part):]
        lines.append(line)
    return "\n".join(lines)


def test_json_events_are_whole_lines(terp):
    r = terp("exec", "--json", "-c", "for x in range(3): print('IDX', x)")
    assert r.rc == 0, r
    outs = [e["text"] for e in r.of("stdout")]
    # print('IDX', x) is four write()s: one event for all three lines
    # (they came within one flush), never a piece of a line
    assert "".join(outs) == "IDX 0\nIDX 1\nIDX 2\n", outs
    assert all(t.endswith("\n") for t in outs), outs
    assert len(outs) <= 3, outs


def test_progress_bar_json_and_text(terp):
    r = terp("exec", "--json", "-c", BAR)
    assert r.rc == 0, r
    errs = [e["text"] for e in r.of("stderr")]
    # one event per flush interval at most, not one per update
    assert 1 <= len(errs) < 30, errs
    assert _resolve("".join(errs)) == "100%|##########|\n", errs
    assert r.stdout_of(1) == "done\n"
    t = terp("exec", "-c", BAR)
    assert t.rc == 0, t
    assert t.out == "done\n"
    assert t.err.splitlines()[0] == "100%|##########|", t.err


def test_progress_bar_is_one_line_for_the_model(terp, fake, tmp_path):
    srv = fake([{"openai": {"tool_calls": [{"id": "c1", "code": BAR}]}},
                {"openai": {"text": "ok"}}])
    r = terp("-p", "run it", "--json", "--provider", "openai", "--base-url", srv.url,
             extra_env={"OPENAI_API_KEY": KEY})
    assert r.rc == 0, r
    msgs = srv.requests()[1]["body"]["messages"]
    [tool] = [m for m in msgs if m["role"] == "tool"]
    content = tool["content"]
    assert "stderr:\n100%|##########|\n" in content, content
    assert " 50%" not in content and "\r" not in content, content
