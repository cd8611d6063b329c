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
