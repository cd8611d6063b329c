"""Numbers traced to their cells (issue 11, part 2) and the session's
cost (part 3): real analyses of examples/sales.csv and Debian's
scikit-learn wine_data.csv in the real sandbox, the model scripted by
tests/fake_model.py; each test checks -p's summary on stderr, --json's
`numbers`, --strict-numbers' exit status, the exports' annotations or
--max-cost's stop."""
import json
import shutil
import sys
from pathlib import Path

import pytest

from conftest import ROOT, _state_sessions

sys.path.insert(0, str(ROOT / "tests"))

KEY = "sk-terp-test-0123456789"
SALES = ROOT / "examples" / "sales.csv"
WINE = Path("/usr/lib/python3/dist-packages/sklearn/datasets/data/wine_data.csv")


def ask(terp, srv, questions, *files, flags=(), extra_env=None):
    args = ["--provider", "openai", "--base-url", srv.url, *flags]
    for q in questions:
        args += ["-p", q]
    e = {"OPENAI_API_KEY": KEY}
    e.update(extra_env or {})
    return terp(*args, *files, extra_env=e)


def call(code, cid="c1", usage=None):
    t = {"openai": {"tool_calls": [{"id": cid, "code": code}]}}
    if usage:
        t["openai"]["usage"] = usage
    return t


def say(text, usage=None):
    t = {"openai": {"text": text}}
    if usage:
        t["openai"]["usage"] = usage
    return t


def answers(r):
    return r.of("answer")


SALES_CODE = ("import pandas as pd\n"
              "df = pd.read_csv('/workspace/data/sales.csv')\n"
              "by = df.groupby('region').revenue.sum().round(2)\n"
              "print(by)\n"
              "print('total', round(df.revenue.sum(), 2))\n"
              "share = df.groupby('channel').revenue.sum() / df.revenue.sum()\n"
              "print(share)\n"
              "df['roi'] = df.revenue / df.marketing_spend\n"
              "m = df.groupby('month').roi.mean()\n"
              "print(m.idxmax(), m.max())")

# Every number here is printed by SALES_CODE, in the forms an analyst
# writes them: rounded (5.44 for 5.437627...), as a percentage of a
# ratio (53.8% for 0.538078), with separators, in millions, and with a
# month (a date, not a claim) and a year.
SALES_ANSWER = ("East leads with **$2,748,435.15** of revenue, then west "
                "(2,405,181.59), north (2,270,303.71) and south (1,929,048.29); "
                "the total is $9.35M. Search brings 53.8% of revenue and email "
                "18.9%. The best month for revenue per marketing dollar was "
                "2023-12 (5.44 per dollar), in December 2023.")


def test_sales_answer_all_traced_with_rounding_percent_and_dates(terp, fake, tmp_path):
    shutil.copy(SALES, tmp_path / "sales.csv")
    srv = fake([call(SALES_CODE), say(SALES_ANSWER)])
    r = ask(terp, srv, ["Revenue by region, channel shares, best ROI month?"],
            tmp_path / "sales.csv", flags=["--json", "--strict-numbers"])
    assert r.rc == 0, r
    (a,) = answers(r)
    nums = a["numbers"]
    texts = [n["text"] for n in nums]
    # dates and years are not claims; everything else is traced to cell 1
    assert "2023-12" not in " ".join(texts) and "2023" not in texts, texts
    assert texts == ["$2,748,435.15", "2,405,181.59", "2,270,303.71", "1,929,048.29",
                     "$9.35M", "53.8%", "18.9%", "5.44"], texts
    for n in nums:
        assert n.get("cell") == 1 and n["stream"] == "stdout" and n["line"] > 0, n
        assert "untraced" not in n
    by_text = {n["text"]: n for n in nums}
    # the lines of SALES_CODE's output: the region table (1-6), the
    # total (7), the channel shares (8-12), the best month (13)
    assert [by_text[t]["line"] for t in ("$2,748,435.15", "$9.35M", "53.8%", "18.9%",
                                         "5.44")] == [2, 7, 10, 9, 13], nums
    assert by_text["$9.35M"]["value"] == 9350000


def test_invented_number_is_flagged_on_stderr_and_strict_exits_6(terp, fake, tmp_path):
    shutil.copy(SALES, tmp_path / "sales.csv")
    answer = SALES_ANSWER + " Returns fell by 12.5% over the year."
    turns = [call(SALES_CODE), say(answer)]
    r = ask(terp, fake(turns), ["Revenue by region?"], tmp_path / "sales.csv")
    assert r.rc == 0, r
    assert "terp: 8 of 9 numbers traced; 1 not in any output: 12.5%\n" in r.err, r
    assert "Returns fell by 12.5%" in r.out
    r = ask(terp, fake(turns), ["Revenue by region?"], tmp_path / "sales.csv",
            flags=["--strict-numbers"])
    assert r.rc == 6, r
    assert "terp: --strict-numbers: 1 answer has a number not in any output" in r.err
    r = ask(terp, fake(turns), ["Revenue by region?"], tmp_path / "sales.csv",
            flags=["--strict-numbers", "--json"])
    assert r.rc == 6, r
    (a,) = answers(r)
    bad = [n for n in a["numbers"] if n.get("untraced")]
    assert bad == [{"text": "12.5%", "value": 12.5, "untraced": True}], a["numbers"]


def test_numbers_of_the_question_are_not_claims(terp, fake, tmp_path):
    shutil.copy(SALES, tmp_path / "sales.csv")
    srv = fake([call(SALES_CODE), say("Of the top 3 regions, east leads with 2,748,435.15.")])
    r = ask(terp, srv, ["Which of the top 3 regions leads?"], tmp_path / "sales.csv",
            flags=["--json", "--strict-numbers"])
    assert r.rc == 0, r
    (a,) = answers(r)
    assert [n["text"] for n in a["numbers"]] == ["2,748,435.15"], a


WINE_CODE = ("import pandas as pd\n"
             "df = pd.read_csv('/workspace/data/wine_data.csv', skiprows=1, header=None)\n"
             "df.columns = [f'f{i}' for i in range(13)] + ['cls']\n"
             "print(len(df))\n"
             "print(df.groupby('cls').f0.mean())\n"
             "print(df.cls.value_counts(normalize=True).sort_index())\n"
             "df.f12.describe()")


def wine(tmp_path):
    if not WINE.exists():
        pytest.fail("%s is missing: apt-get install python3-sklearn "
                    "(scripts/deps.sh check installs it)" % WINE)
    shutil.copy(WINE, tmp_path / "wine_data.csv")
    return tmp_path / "wine_data.csv"


def test_wine_answer_traced_to_stdout_and_value(terp, fake, tmp_path):
    """Debian's copy of the UCI wine data: class means rounded to two
    places, class shares as percentages, and the proline mean from the
    cell's value (its describe() table)."""
    f = wine(tmp_path)
    answer = ("The 178 wines split 33.1% / 39.9% / 27.0% over the three classes. "
              "Class 0 has the highest mean alcohol (13.74), class 1 the lowest "
              "(12.28); mean proline is 746.9, with a standard deviation of 315.")
    srv = fake([call(WINE_CODE), say(answer)])
    r = ask(terp, srv, ["Describe the wine classes"], f, flags=["--json", "--strict-numbers"])
    assert r.rc == 0, r
    (a,) = answers(r)
    got = {n["text"]: (n.get("cell"), n.get("stream")) for n in a["numbers"]}
    # "class 0" and "class 1" are numbers too: the index labels printed
    assert got == {"178": (1, "stdout"), "0": (1, "stdout"), "1": (1, "stdout"), "33.1%": (1, "stdout"), "39.9%": (1, "stdout"),
                   "27.0%": (1, "stdout"), "13.74": (1, "stdout"),
                   "12.28": (1, "stdout"), "746.9": (1, "value"),
                   "315": (1, "value")}, a["numbers"]


def test_number_from_a_hand_run_cell_is_traced_after_resume(terp, fake, tmp_path):
    """A number only a cell run by hand printed (terp exec, then
    --resume -p) is traced to that cell."""
    f = wine(tmp_path)
    r = terp("exec", "-c", "import pandas as pd\n"
             "df = pd.read_csv('/workspace/data/wine_data.csv', skiprows=1, header=None)\n"
             "print('magnesium max', df[4].max(), 'min', df[4].min())", f)
    assert r.rc == 0, r
    srv = fake([say("Magnesium ranges from 70 to 162 mg/l.")])
    r = ask(terp, srv, ["What range did my cell show?"], flags=["--resume", "--json",
                                                              "--strict-numbers"])
    assert r.rc == 0, r
    (a,) = answers(r)
    assert [(n["text"], n.get("cell"), n.get("line")) for n in a["numbers"]] == \
        [("70", 1, 1), ("162", 1, 1)], a


def sessions(env):
    d = _state_sessions(env)
    return sorted(p.name for p in d.iterdir())


def test_exports_keep_the_annotations(terp, fake, tmp_path, env):
    shutil.copy(SALES, tmp_path / "sales.csv")
    answer = SALES_ANSWER + " Returns fell by 12.5% over the year."
    r = ask(terp, fake([call(SALES_CODE), say(answer)]), ["Revenue by region?"],
            tmp_path / "sales.csv")
    assert r.rc == 0, r
    (sid,) = sessions(env)
    r = terp("--export", sid, tmp_path / "a.md")
    assert r.rc == 0, r
    md = (tmp_path / "a.md").read_text()
    assert "Numbers: 8 of 9 traced\n" in md, md
    assert "- 2,748,435.15: cell [1], line 2\n" in md or \
        "- $2,748,435.15: cell [1], line 2\n" in md, md
    assert "- 12.5%: not in any output\n" in md, md
    r = terp("--export", sid, tmp_path / "a.ipynb")
    assert r.rc == 0, r
    nb = json.loads((tmp_path / "a.ipynb").read_text())
    mds = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
    (ans,) = [m for m in mds if "East leads" in m]
    assert "Numbers: 8 of 9 traced" in ans and "- 12.5%: not in any output" in ans, ans


# ---------------------------------------------------------------- cost (part 3)

# 800 fresh input tokens at $1000, 200 cached at $500, 100 output at
# $2000 per million: $1.10 a call.
USAGE = {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100,
         "prompt_tokens_details": {"cached_tokens": 200}}


def priced(env, *lines):
    d = Path(env["XDG_CONFIG_HOME"]) / "terp"
    d.mkdir(parents=True, exist_ok=True)
    (d / "config").write_text("".join(l + "\n" for l in lines))


def test_cost_in_usage_events_and_on_stderr(terp, fake, env):
    priced(env, "price = fake-model 1000 2000 500", "price = other 1 1")
    turns = [call("print(6 * 7)", usage=USAGE), say("It is 42.", usage=USAGE)]
    r = ask(terp, fake(turns), ["six times seven?"], flags=["--model", "fake-model",
                                                            "--json"])
    assert r.rc == 0, r
    us = r.of("usage")
    assert [u["cost"] for u in us] == [pytest.approx(1.1), pytest.approx(1.1)], us
    assert [u["total_cost"] for u in us] == [pytest.approx(1.1), pytest.approx(2.2)], us
    # the journal keeps the cost: a resumed session goes on from $2.20
    r = ask(terp, fake([say("Still 42.", usage=USAGE)]), ["again?"],
            flags=["--model", "fake-model", "--json", "--resume"])
    assert r.rc == 0, r
    assert [u["total_cost"] for u in r.of("usage")] == [pytest.approx(3.3)], r
    r = ask(terp, fake(turns), ["six times seven?"], flags=["--model", "fake-model"])
    assert r.rc == 0, r
    assert "terp: tokens: 2000 in (400 cached), 200 out; cost $2.20\n" in r.err, r
    # an unpriced model: tokens, no cost
    r = ask(terp, fake(turns), ["six times seven?"], flags=["--model", "unpriced",
                                                            "--json"])
    assert r.rc == 0, r
    assert all("cost" not in u and "total_cost" not in u for u in r.of("usage")), r


def test_max_cost_stops_the_question_before_the_call_that_would_pass_it(terp, fake, env):
    priced(env, "price = fake-model 1000 2000 500")
    srv = fake([call("print(1)", "a", usage=USAGE), call("print(2)", "b", usage=USAGE),
                say("done", usage=USAGE)])
    r = ask(terp, srv, ["go"], flags=["--model", "fake-model", "--max-cost", "2.00",
                                      "--json"])
    assert r.rc == 7, r
    # the first call cost $1.10; a second like it would make $2.20
    assert len(srv.requests()) == 1
    (e,) = r.of("error")
    assert e["message"] == ("stopped: the next model call would take the session past "
                            "--max-cost $2.00 (spent $1.10, the last call cost $1.10)"), e
    assert not r.of("answer")
    # within budget: the same script answers
    srv = fake([call("print(1)", "a", usage=USAGE), call("print(2)", "b", usage=USAGE),
                say("done", usage=USAGE)])
    r = ask(terp, srv, ["go"], flags=["--model", "fake-model", "--max-cost", "3.50"])
    assert r.rc == 0, r
    assert len(srv.requests()) == 3


def test_max_cost_without_a_price_is_refused_before_any_call(terp, fake, env):
    srv = fake([say("done", usage=USAGE)])
    r = ask(terp, srv, ["go"], flags=["--model", "unpriced", "--max-cost", "1"])
    assert r.rc == 7, r
    assert srv.requests() == []
    assert "--max-cost: no price is known for model 'unpriced'; add a line " \
        "'price = unpriced INPUT OUTPUT [CACHED]'" in r.err, r


def test_builtin_prices_are_opt_in(terp, fake, env):
    u = {"prompt_tokens": 1000000, "completion_tokens": 0, "total_tokens": 1000000}
    r = ask(terp, fake([say("ok", usage=u)]), ["hi"],
            flags=["--model", "gpt-4o-2024-08-06", "--json"])
    assert r.rc == 0 and "cost" not in r.of("usage")[0], r
    priced(env, "builtin_prices = on")
    r = ask(terp, fake([say("ok", usage=u)]), ["hi"],
            flags=["--model", "gpt-4o-2024-08-06", "--json"])
    assert r.rc == 0, r
    assert r.of("usage")[0]["cost"] == pytest.approx(2.5), r


def test_a_bad_price_line_is_a_usage_error(terp, env):
    priced(env, "price = fake-model 1.0 lots")
    r = terp("-p", "hi")
    assert r.rc == 2, r
    assert ":1: price: 'lots' is not a price" in r.err, r


def test_false_positives_on_the_demo_the_wine_data_and_a_long_answer(tmp_path):
    """Issue 24: bench/numbers_fp.py's three answers. Numbers that are not
    results (labels, counts of rows shown, list numbers, ordinals, years,
    the question's) are never flagged "not in any output", the results
    are all traced and every invented number stays flagged."""
    wine(tmp_path)  # fails with one line when the data is missing
    sys.path.insert(0, str(ROOT / "bench"))
    import numbers_fp
    got = numbers_fp.measure(str(ROOT / "terp"))
    for name, c in got.items():
        assert c["nonresult_flagged"] == 0 and c["result_flagged"] == 0, (name, c)
    assert got["long"]["invented_flagged"] == got["long"]["invented"] == 5, got
    # the long answer's 30 labels, counts and list numbers are left alone
    assert got["long"]["nonresult_marked"] == 0, got
