"""The demo's recorded answers must restate exactly what its code prints:
run each recorded cell (with /workspace mapped to a temp dir holding a
freshly generated sales.csv) and check every number of the final texts
appears in the printed output."""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The sandbox's python (terp binds /usr and runs /usr/bin/python3): the
# demo's cells must print these numbers with its pandas and numpy.
SANDBOX_PY = "/usr/bin/python3"


def test_generator_is_deterministic_and_matches_the_file():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts/make_sales.py")],
                         capture_output=True, text=True, check=True).stdout
    with open(os.path.join(ROOT, "examples/sales.csv")) as f:
        assert f.read() == out
    lines = out.splitlines()
    assert lines[0] == "month,channel,region,revenue,marketing_spend,units"
    assert len(lines) == 1 + 24 * 3 * 4


def test_demo_answers_restate_the_printed_numbers(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "out").mkdir()
    with open(os.path.join(ROOT, "examples/sales.csv")) as f:
        (tmp_path / "data" / "sales.csv").write_text(f.read())
    with open(os.path.join(ROOT, "examples/demo.json")) as f:
        demo = json.load(f)
    cells, finals = [], []
    for q in demo["questions"]:
        for r in q["replies"]:
            if "code" in r:
                cells.append(r["code"].replace("/workspace", str(tmp_path)))
            else:
                finals.append(r["text"])
    # One process: the second question reuses df from the first.
    res = subprocess.run([SANDBOX_PY, "-c", "\n\n".join(cells)], capture_output=True,
                         text=True, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    printed = res.stdout
    for text in finals:
        for num in re.findall(r"\d+\.\d+|\d{4}-\d{2}", text):
            assert num in printed, "%s not in the output:\n%s" % (num, printed)
    assert (tmp_path / "out" / "revenue_per_dollar.png").stat().st_size > 10000
