#!/usr/bin/env python3
"""False positives of number tracing (issue 24): how many numbers that are
not results (list numbers, ordinals, labels such as "month 01", counts of
the rows shown such as "the top 4", years, the question's own numbers) an
answer's trace flags as "not in any output", on three answers:

  demo   the recorded demo's two answers over examples/sales.csv
  wine   an answer over Debian's wine_data.csv (python3-sklearn)
  long   a generated 60-sentence answer over examples/sales.csv

Every non-result number is written as a plain integer and every result
with a decimal point or a percent sign, so a number's kind is known from
its text. Invented results (numbers no cell printed) must stay flagged.

Usage: bench/numbers_fp.py [TERP]   (default ./terp); prints one line per
answer and returns 0. tests/integration/test_numbers.py runs it too.
"""
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from fake_model import FakeModel  # noqa: E402

SALES = ROOT / "examples" / "sales.csv"
WINE = Path("/usr/lib/python3/dist-packages/sklearn/datasets/data/wine_data.csv")

SALES_CODE = ("import pandas as pd\n"
              "df = pd.read_csv('/workspace/data/sales.csv')\n"
              "print(df.groupby('region').revenue.sum().round(2))\n"
              "print((df.groupby('channel').revenue.sum() / df.revenue.sum()).round(4))\n"
              "df['roi'] = df.revenue / df.marketing_spend\n"
              "print(df.groupby('month').roi.mean().round(2))")

WINE_CODE = ("import pandas as pd\n"
             "df = pd.read_csv('/workspace/data/wine_data.csv', skiprows=1, header=None)\n"
             "df.columns = [f'f{i}' for i in range(13)] + ['cls']\n"
             "print(len(df))\n"
             "print(df.groupby('cls').f0.mean().round(2))\n"
             "print(df.cls.value_counts(normalize=True).sort_index().round(3))")

INVENTED = ["8.6%", "29%", "17.35", "4.125"]


def env(base):
    e = {k: v for k, v in os.environ.items()
         if not k.endswith("_API_KEY") and not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    e.update({"PATH": "/usr/bin:/bin", "XDG_STATE_HOME": str(base / "state"),
              "XDG_CONFIG_HOME": str(base / "config"), "HOME": str(base / "home"),
              "OPENAI_API_KEY": "sk-terp-bench", "LANG": "C.UTF-8"})
    (base / "home").mkdir(exist_ok=True)
    return e


def run(terp, base, args):
    p = subprocess.run([terp, *args, "--json"], cwd=str(base), env=env(base),
                       capture_output=True, text=True, timeout=300)
    out = []
    for line in p.stdout.splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if ev.get("type") == "answer":
            out.append(ev.get("numbers", []))
    if not out:
        raise SystemExit("numbers_fp: no answer from %s: %s" % (terp, p.stderr.strip()[-400:]))
    return out


def scripted(terp, base, code, question, answer, data):
    srv = FakeModel({"turns": [{"openai": {"tool_calls": [{"id": "c1", "code": code}]}},
                               {"openai": {"text": answer}}]}, str(base / "log.jsonl"))
    port = srv.start()
    try:
        return run(terp, base, ["--provider", "openai", "--base-url",
                                "http://127.0.0.1:%d/v1" % port, "-p", question, str(data)])
    finally:
        srv.stop()


def long_answer(seed=24):
    """60 sentences over SALES_CODE's output: results (decimals and
    percents it printed, rounded as analysts do), non-results (plain
    integers in list numbers, ordinals, labels, counts shown, years and
    the question's "top 5") and the INVENTED results."""
    rnd = random.Random(seed)
    results = ["2,748,435.15", "2,405,181.59", "2,270,303.71", "1,929,048.29",
               "53.8%", "18.9%", "27.3%", "5.44", "4.59", "3.35", "4.31"]
    nonres = ["Observation number {n} stands out.", "In month 0{m} the pattern repeats.",
              "The top 4 regions all grew.", "All 3 channels are shown.",
              "On day {d} spend peaked.", "Step {n} of the analysis checks this.",
              "This is the 2nd time it happens.", "See figure {n} and table {n}.",
              "The 4 regions differ.", "As in 2023 and 2024, the order holds.",
              "Of the top 5 months, most are in winter.", "Row {n} is an outlier (#{n})."]
    parts, i = [], 0
    for k in range(60):
        if k % 12 == 11:
            parts.append("%d. The change was %s." % (k // 12 + 1, INVENTED[(k // 12) % 4]))
        elif k % 2 == 0:
            parts.append("- %s" % rnd.choice(nonres).format(n=rnd.randint(1, 9),
                                                       m=rnd.randint(1, 9),
                                                       d=rnd.randint(1, 28)))
        else:
            parts.append("%d. The figure is %s." % (k // 2 + 1, results[i % len(results)]))
            i += 1
    return "\n".join(parts)


def kind(text):
    if text in INVENTED:
        return "invented"
    return "result" if ("." in text or "%" in text) else "nonresult"


def tally(numbers):
    c = {"numbers": 0, "nonresult_flagged": 0, "nonresult_marked": 0,
         "result_flagged": 0, "invented_flagged": 0, "invented": 0}
    for n in numbers:
        k = kind(n["text"])
        c["numbers"] += 1
        c["invented"] += k == "invented"
        if os.environ.get("NUMBERS_FP_VERBOSE") and (n.get("untraced") or k == "nonresult"):
            print("   ", k, n, file=sys.stderr)
        if k == "nonresult":
            c["nonresult_marked"] += 1
            c["nonresult_flagged"] += bool(n.get("untraced"))
        elif k == "invented":
            c["invented_flagged"] += bool(n.get("untraced"))
        else:
            c["result_flagged"] += bool(n.get("untraced"))
    return c


def measure(terp):
    """{name: tally} for the three answers."""
    res = {}
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o755)  # see kernel.py: the sandbox folders stay in here
        base = Path(d)
        nums = run(terp, base, ["--provider", "demo",
                                "-p", "What month had the highest revenue per dollar of "
                                "marketing spend, per channel?",
                                "-p", "Plot monthly revenue per marketing dollar for each channel.",
                                str(SALES)])
        res["demo"] = tally([n for a in nums for n in a])
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o755)  # see kernel.py: the sandbox folders stay in here
        if not WINE.exists():
            raise SystemExit("numbers_fp: %s is missing (python3-sklearn)" % WINE)
        answer = ("Observation number 1 is class 0. The 178 wines split 33.1% / 39.9% / "
                  "27.0% over the 3 classes; class 0 has the highest mean alcohol (13.74), "
                  "class 1 the lowest (12.28).\n\n1. The top 3 classes by share: 1, 0, 2.\n"
                  "2. In month 01 of the 2nd vintage the 3 groups were sampled on day 12.")
        nums = scripted(terp, Path(d), WINE_CODE, "Describe the wine classes", answer, WINE)
        res["wine"] = tally(nums[0])
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o755)  # see kernel.py: the sandbox folders stay in here
        nums = scripted(terp, Path(d), SALES_CODE, "The top 5 months and the regions?",
                        long_answer(), SALES)
        res["long"] = tally(nums[0])
    return res


def main(argv):
    terp = os.path.abspath(argv[1]) if len(argv) > 1 else str(ROOT / "terp")
    for name, c in measure(terp).items():
        print("%-5s %3d numbers reported; non-results flagged untraced: %d (%d reported); "
              "results flagged: %d; invented flagged: %d of %d"
              % (name, c["numbers"], c["nonresult_flagged"], c["nonresult_marked"],
                 c["result_flagged"], c["invented_flagged"], c["invented"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
