"""`terp -p`: the whole headless run (issue 3, section 5). The real binary
and the real sandbox, against tests/fake_model.py on 127.0.0.1; each test
checks the exit status, the --json events and what the fake server
recorded as sent."""
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, TERP, Result, children, pids_gone, wait_until

sys.path.insert(0, str(ROOT / "tests"))

KEY = "sk-terp-test-0123456789"


# ---------------------------------------------------------------- helpers

def flags(provider, srv):
    """Command-line flags and environment for provider against srv."""
    if provider == "openai":
        return ["--provider", "openai", "--base-url", srv.url], {"OPENAI_API_KEY": KEY}
    if provider == "anthropic":
        return ["--provider", "anthropic"], {"ANTHROPIC_API_KEY": KEY,
                                             "ANTHROPIC_BASE_URL": srv.root}
    raise ValueError(provider)


def reply(provider, text="", calls=(), **extra):
    """A model turn: text and tool calls [(id, code) or dict]."""
    tcs = []
    for c in calls:
        tcs.append(dict(c) if isinstance(c, dict) else {"id": c[0], "code": c[1]})
    spec = dict(extra)
    if text:
        spec["text"] = text
    if tcs:
        spec["tool_calls"] = tcs
    return {provider: spec}


def tool_results(provider, req):
    """[(tool call id, content, is_error)] answered in the request's last
    user/tool messages, in order."""
    msgs = req["body"]["messages"]
    out = []
    if provider == "openai":
        tail = []
        for m in reversed(msgs):
            if m["role"] != "tool":
                break
            tail.append((m["tool_call_id"], m["content"], None))
        return list(reversed(tail))
    last = msgs[-1]
    assert last["role"] == "user"
    for b in last["content"] if isinstance(last["content"], list) else []:
        if b.get("type") == "tool_result":
            content = b["content"]
            if isinstance(content, list):
                content = "".join(x.get("text", "") for x in content)
            out.append((b["tool_use_id"], content, b.get("is_error", False)))
    return out


def keys(ev):
    return set(ev) - {"type"}


def write_csv(path):
    """A table whose answer needs real work; returns the expected total
    revenue of the north region as printed with %.2f."""
    rows = ["region,price,qty"]
    north = 0.0
    for i in range(90):
        region = ("north", "south", "east")[i % 3]
        price = 1.25 + (i * 7 % 13) * 0.5
        qty = (i * 5 % 11) + 1
        rows.append("%s,%s,%d" % (region, price, qty))
        if region == "north":
            north += price * qty
    path.write_text("\n".join(rows) + "\n")
    return "%.2f" % north


def popen(args, env, cwd, extra_env=None):
    e = dict(env)
    e.update(extra_env or {})
    return subprocess.Popen([str(TERP), *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=e, cwd=cwd)


def all_gone(pids):
    return pids_gone(pids)


# ---------------------------------------------------------------- the analysis

LOAD = "import pandas as pd\ndf = pd.read_csv('/workspace/data/x.csv')\nprint(df.shape)"
COMPUTE = ("df['rev'] = df.price * df.qty\n"
           "print('NORTH=%.2f' % df[df.region == 'north'].rev.sum())")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_multi_turn_analysis_computes_the_number(provider, terp, fake, tmp_path):
    expected = write_csv(tmp_path / "x.csv")
    srv = fake([
        reply(provider, "Loading the data.", [("c1", LOAD)]),
        reply(provider, "Now the total.", [("c2", COMPUTE)]),
        reply(provider, "North revenue is %s." % expected),
    ])
    f, e = flags(provider, srv)
    r = terp("-p", "What is the north revenue?", "--json", *f, "x.csv", extra_env=e)
    assert r.rc == 0, r
    reqs = srv.requests()
    assert len(reqs) == 3
    if provider == "openai":
        assert [q["path"] for q in reqs] == ["/v1/chat/completions"] * 3
        assert all(q["headers"]["authorization"] == "Bearer " + KEY for q in reqs)
    else:
        assert [q["path"] for q in reqs] == ["/v1/messages"] * 3
        assert all(q["headers"]["x-api-key"] == KEY for q in reqs)
        assert all("authorization" not in q["headers"] for q in reqs)
    # The data file is described to the model, at its sandbox path.
    system = (reqs[0]["body"]["messages"][0]["content"] if provider == "openai"
              else json.dumps(reqs[0]["body"]["system"]))
    assert "/workspace/data/x.csv" in system
    # What went back to the model after each cell.
    assert [(i, c.startswith("status: ok")) for i, c, _ in tool_results(provider, reqs[1])] == [("c1", True)]
    assert "(90, 3)" in tool_results(provider, reqs[1])[0][1]
    [(cid, content, err)] = tool_results(provider, reqs[2])
    assert cid == "c2" and "NORTH=%s\n" % expected in content and not err
    assert [e["n"] for e in r.of("turn")] == [1, 2, 3]
    assert [e["status"] for e in r.results()] == ["ok", "ok"]
    assert r.stdout_of(2) == "NORTH=%s\n" % expected
    assert [e["text"] for e in r.of("answer")] == ["North revenue is %s." % expected]
    assert not r.of("error")
    # Usage per call and for the session, as the fake server reported it.
    out_tokens = 5 if provider == "openai" else 42
    assert [(u["input_tokens"], u["output_tokens"]) for u in r.of("usage")] == [(10, out_tokens)] * 3
    assert r.of("usage")[-1]["total_input_tokens"] == 30
    assert r.of("usage")[-1]["total_output_tokens"] == 3 * out_tokens
    # The request events count the bytes actually sent.
    assert [q["bytes"] for q in r.of("request")] == [int(q["headers"]["content-length"]) for q in reqs]


def test_azure_deployment_url_and_api_key_header(terp, fake, tmp_path):
    path = "/openai/deployments/dep1/chat/completions?api-version=2024-10-21"
    srv = fake([
        {"openai": {"tool_calls": [{"id": "c1", "code": "print(6 * 7)"}]},
         "expect_path": path, "expect_headers": {"api-key": KEY}},
        {"openai": {"text": "42"}, "expect_path": path, "expect_headers": {"api-key": KEY}},
    ])
    r = terp("-p", "six times seven?", "--json", "--provider", "azure", "--model", "dep1",
             extra_env={"AZURE_OPENAI_API_KEY": KEY, "AZURE_OPENAI_ENDPOINT": srv.root})
    assert r.rc == 0, r
    reqs = srv.requests()
    assert [q["path"] for q in reqs] == [path, path]
    assert all("authorization" not in q["headers"] for q in reqs)
    assert "model" not in reqs[0]["body"]      # the deployment is in the URL
    assert tool_results("openai", reqs[1])[0][1].endswith("stdout:\n42\n")
    assert [e["text"] for e in r.of("answer")] == ["42"]


def test_azure_wrong_key_is_rejected_by_the_server(terp, fake):
    srv = fake([{"openai": {"text": "never"}, "expect_headers": {"api-key": KEY}}])
    r = terp("-p", "q", "--provider", "azure", "--model", "dep1",
             extra_env={"AZURE_OPENAI_API_KEY": "wrong", "AZURE_OPENAI_ENDPOINT": srv.root})
    assert r.rc == 1, r
    assert ("terp: 401 Unauthorized: the API key from AZURE_OPENAI_API_KEY was rejected by "
            "azure (bad or missing api-key)\n") in r.err
    assert len(srv.requests()) == 1


# ---------------------------------------------------------------- tool calls

# The arguments JSON text, with escapes: \" \u00e9 \n and raw CJK.
SPLIT_ARGS = '{"code": "s = \\"caf\\u00e9\\"\\nprint(s, \'日本語\', len(s))"}'
SPLIT_CODE = 's = "café"\nprint(s, \'日本語\', len(s))'


def split_fragments():
    a = SPLIT_ARGS
    cuts = [a.index('\\"') + 1,             # between \ and "
            a.index("\\u00e9") + 4,          # inside \u00e9
            a.index("\\n") + 1,              # between \ and n
            a.index("本")]                    # between two characters
    frags, prev = [], 0
    for c in cuts:
        frags.append(a[prev:c])
        prev = c
    frags.append(a[prev:])
    assert "".join(frags) == a and json.loads(a)["code"] == SPLIT_CODE
    return frags


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_arguments_split_inside_escapes_and_utf8(provider, terp, fake):
    # chunk_bytes=5 also cuts the network stream inside UTF-8 characters.
    srv = fake([
        dict(reply(provider, "", [{"id": "c1", "fragments": split_fragments()}]), chunk_bytes=5),
        dict(reply(provider, "Done: café 日本語."), chunk_bytes=3),
    ])
    f, e = flags(provider, srv)
    r = terp("-p", "q", "--json", *f, extra_env=e)
    assert r.rc == 0, r
    assert [t["code"] for t in r.of("tool_call")] == [SPLIT_CODE]
    assert r.stdout_of(1) == "café 日本語 4\n"
    [(cid, content, _)] = tool_results(provider, srv.requests()[1])
    assert cid == "c1" and "stdout:\ncafé 日本語 4\n" in content
    assert "".join(t["delta"] for t in r.of("text")) == "Done: café 日本語."
    assert [a["text"] for a in r.of("answer")] == ["Done: café 日本語."]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_two_tool_calls_in_one_reply_run_in_order(provider, terp, fake):
    srv = fake([
        reply(provider, "Two steps.", [("a", "x = 20\nprint('first')"),
                                        ("b", "print('second', x + 22)")]),
        reply(provider, "x + 22 is 42."),
    ])
    f, e = flags(provider, srv)
    r = terp("-p", "q", "--json", *f, extra_env=e)
    assert r.rc == 0, r
    assert [(c["cell"], c["code"]) for c in r.of("cell")] == [
        (1, "x = 20\nprint('first')"), (2, "print('second', x + 22)")]
    res = tool_results(provider, srv.requests()[1])
    assert [(i, c.split("stdout:\n")[1]) for i, c, _ in res] == [("a", "first\n"), ("b", "second 42\n")]
    if provider == "openai":
        calls = srv.requests()[1]["body"]["messages"][-3]["tool_calls"]
        assert [c["id"] for c in calls] == ["a", "b"]
    assert [a["text"] for a in r.of("answer")] == ["x + 22 is 42."]


def test_invalid_json_and_unknown_tool_get_error_results(terp, fake):
    srv = fake([
        reply("openai", "", [{"id": "bad", "arguments": '{"code": "print(1)'},
                             {"id": "unk", "name": "shell", "arguments": '{"cmd": "ls"}'},
                             {"id": "ok", "code": "print('still runs')"}]),
        reply("openai", "Recovered."),
    ])
    f, e = flags("openai", srv)
    r = terp("-p", "q", "--json", *f, extra_env=e)
    assert r.rc == 0, r
    res = tool_results("openai", srv.requests()[1])
    assert [i for i, _, _ in res] == ["bad", "unk", "ok"]
    assert res[0][1] == ('error: the arguments were not valid JSON; call python_exec '
                         'with {"code": "<python>"}')
    assert res[1][1] == ('error: unknown tool "shell"; the only tool is python_exec '
                         'with one argument, code (a string of Python)')
    assert "stdout:\nstill runs\n" in res[2][1]
    # Only the valid call became a cell; the others are shown as calls.
    assert [c["code"] for c in r.of("cell")] == ["print('still runs')"]
    assert [(t["id"], t["name"]) for t in r.of("tool_call")] == [
        ("bad", "python_exec"), ("unk", "shell"), ("ok", "python_exec")]
    assert r.of("tool_call")[0]["code"] == '{"code": "print(1)'
    assert [a["text"] for a in r.of("answer")] == ["Recovered."]


def test_invalid_json_from_anthropic_gets_an_error_result(terp, fake):
    srv = fake([
        reply("anthropic", "", [{"id": "bad", "fragments": ['{"code": ', '"print(1)']}]),
        reply("anthropic", "Recovered."),
    ])
    f, e = flags("anthropic", srv)
    r = terp("-p", "q", "--json", *f, extra_env=e)
    assert r.rc == 0, r
    [(cid, content, is_error)] = tool_results("anthropic", srv.requests()[1])
    assert cid == "bad" and is_error is True
    assert content.startswith("error: the arguments were not valid JSON")
    assert not r.of("cell")


def test_missing_code_gets_an_error_result(terp, fake):
    srv = fake([
        reply("openai", "", [{"id": "m", "arguments": '{"source": "print(1)"}'}]),
        reply("openai", "", [{"id": "m2", "arguments": '{"code": 5}'}]),
        reply("openai", "Ok."),
    ])
    f, e = flags("openai", srv)
    r = terp("-p", "q", "--json", *f, extra_env=e)
    assert r.rc == 0, r
    reqs = srv.requests()
    assert tool_results("openai", reqs[1]) == [
        ("m", 'error: missing the required string argument "code"', None)]
    assert tool_results("openai", reqs[2]) == [
        ("m2", 'error: missing the required string argument "code"', None)]
    assert not r.of("cell") and not r.results()


# ---------------------------------------------------------------- HTTP failures

ERR = {"error": {"message": "slow down", "type": "rate_limit_error"}}


def test_429_with_retry_after_then_success(terp, fake):
    srv = fake([
        {"status": 429, "headers": {"retry-after-ms": "200"}, "body": ERR},
        {"openai": {"text": "fine"}},
    ])
    f, e = flags("openai", srv)
    t0 = time.monotonic()
    r = terp("-p", "q", "--json", *f, extra_env=e)
    assert r.rc == 0, r
    assert time.monotonic() - t0 >= 0.2       # the retry waited as told
    assert len(srv.requests()) == 2
    assert [n["message"] for n in r.of("notice")] == [
        "429 Too Many Requests: slow down; retrying in 0.2 s (1/4)"]
    assert [a["text"] for a in r.of("answer")] == ["fine"]
    # One request event: a retry is the same request.
    assert len(r.of("request")) == 1


def test_500_then_success(terp, fake):
    srv = fake([
        {"status": 500, "body": {"error": {"message": "boom", "type": "server_error"}}},
        {"openai": {"text": "fine"}},
    ])
    f, e = flags("openai", srv)
    r = terp("-p", "q", "--json", *f, extra_env=e)
    assert r.rc == 0, r
    assert len(srv.requests()) == 2
    [n] = r.of("notice")
    assert n["message"].startswith("500 Internal Server Error: boom; retrying in ")
    assert [a["text"] for a in r.of("answer")] == ["fine"]


def test_503_forever_gives_up_with_one_line(terp, fake):
    srv = fake([{"status": 503, "headers": {"retry-after-ms": "20"},
                 "body": {"error": {"message": "overloaded"}}, "repeat": True}])
    f, e = flags("openai", srv)
    r = terp("-p", "q", "--max-retries", "2", *f, extra_env=e)
    assert r.rc == 1, r
    assert len(srv.requests()) == 3
    lines = r.err.splitlines()
    assert lines[-1] == "terp: 503 Service Unavailable: overloaded (gave up after 2 retries)"
    assert sum("503" in ln and "gave up" in ln for ln in lines) == 1
    assert r.out == ""


@pytest.mark.parametrize("provider,cut", [("openai", 3), ("anthropic", 5)])
def test_stream_cut_midway_is_reported(provider, cut, terp, fake):
    srv = fake([dict(reply(provider, "A partial answer that goes on", text_split=5), cut_after=cut)])
    f, e = flags(provider, srv)
    r = terp("-p", "q", "--json", *f, extra_env=e)
    assert r.rc == 1, r
    assert len(srv.requests()) == 1          # text was shown: no silent retry
    assert "".join(t["delta"] for t in r.of("text")) == "A partial "
    [err] = r.of("error")
    assert "cut midway" in err["message"] and "incomplete" in err["message"]
    assert not r.of("answer")


def test_stream_cut_before_anything_is_retried(terp, fake):
    srv = fake([{"openai": {"text": "never seen"}, "cut_after": 1},
                {"openai": {"text": "second try"}}])
    f, e = flags("openai", srv)
    r = terp("-p", "q", "--json", *f, extra_env=e)
    assert r.rc == 0, r
    assert len(srv.requests()) == 2
    assert [a["text"] for a in r.of("answer")] == ["second try"]


def test_reply_past_the_text_bound_is_an_error_not_a_silent_cut(terp, fake):
    # The agent keeps 4 MiB of a reply: more must not be shown as if it
    # were kept (before, the screen had it all and the answer was cut).
    text = "a" * (4 << 20) + "b" * 1000
    srv = fake([{"openai": {"text": text, "text_split": 1 << 16}}])
    f, e = flags("openai", srv)
    r = terp("-p", "q", "--json", "--max-retries", "0", *f, extra_env=e)
    assert r.rc == 1, r.err[-500:]
    shown = "".join(t["delta"] for t in r.of("text"))
    assert 0 < len(shown) <= 4 << 20 and "b" not in shown
    [err] = r.of("error")
    assert "passed 4 MiB" in err["message"]
    assert not r.of("answer")
    assert len(srv.requests()) == 1


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_error_event_inside_a_200_stream(provider, terp, fake):
    if provider == "openai":
        events = [
            {"data": {"id": "x", "choices": [{"index": 0, "delta": {"content": "Hel"}}]}},
            {"data": {"error": {"message": "the model crashed", "type": "server_error"}}}]
    else:
        events = anthropic_events_upto_text("Hel") + [
            {"event": "error", "data": {"type": "error", "error": {
                "type": "api_error", "message": "the model crashed"}}}]
    srv = fake([{"events": events}])
    f, e = flags(provider, srv)
    r = terp("-p", "q", "--json", *f, extra_env=e)
    assert r.rc == 1, r
    assert "".join(t["delta"] for t in r.of("text")) == "Hel"
    [err] = r.of("error")
    assert err["message"] == "the model's stream reported an error: the model crashed"
    assert not r.of("answer")
    assert len(srv.requests()) == 1


def anthropic_events_upto_text(text):
    from fake_model import anthropic_events
    ev = anthropic_events({"text": text})
    return ev[:ev.index(next(x for x in ev if x.get("event") == "content_block_delta")) + 1]


def test_anthropic_overloaded_event_before_output_is_retried(terp, fake):
    srv = fake([
        {"events": [{"event": "error", "data": {"type": "error", "error": {
            "type": "overloaded_error", "message": "Overloaded"}}}]},
        {"anthropic": {"text": "fine"}},
    ])
    f, e = flags("anthropic", srv)
    r = terp("-p", "q", "--json", *f, extra_env=e)
    assert r.rc == 0, r
    assert len(srv.requests()) == 2
    assert any("Overloaded" in n["message"] and "retrying" in n["message"] for n in r.of("notice"))
    assert [a["text"] for a in r.of("answer")] == ["fine"]


def test_401_says_the_key_was_rejected(terp, fake):
    srv = fake([{"status": 401, "body": {"error": {
        "message": "Incorrect API key provided", "type": "invalid_request_error"}}}])
    f, e = flags("openai", srv)
    r = terp("-p", "q", *f, extra_env=e)
    assert r.rc == 1, r
    assert len(srv.requests()) == 1
    assert r.err.splitlines() == [
        "terp: 401 Unauthorized: the API key from OPENAI_API_KEY was rejected by openai "
        "(Incorrect API key provided)"]
    assert r.out == ""


# ---------------------------------------------------------------- local model

@pytest.mark.parametrize("text", [
    "I will compute it:\n```python\nprint(6 * 7)\n```\n",
    'Calling: {"name": "python_exec", "arguments": {"code": "print(6 * 7)\\n"}}',
])
def test_local_model_code_in_text_runs_as_a_cell(text, terp, fake):
    srv = fake([
        {"openai": {"text": text}},
        {"openai": {"text": "The answer is 42."}},
    ])
    r = terp("-p", "q", "--json", "--provider", "ollama", "--model", "tiny",
             "--base-url", srv.url)
    assert r.rc == 0, r
    reqs = srv.requests()
    assert len(reqs) == 2 and all("authorization" not in q["headers"] for q in reqs)
    assert reqs[0]["body"]["model"] == "tiny"
    assert [n["message"] for n in r.of("notice")] == [
        "the model wrote its code as text instead of calling python_exec; terp runs it as a cell"]
    assert [c["code"] for c in r.of("cell")] == ["print(6 * 7)\n"]
    assert r.stdout_of(1) == "42\n"
    [(_, content, _)] = tool_results("openai", reqs[1])
    assert "stdout:\n42\n" in content
    assert [a["text"] for a in r.of("answer")] == ["The answer is 42."]


EXAMPLE = ("The total is **42**.\n\nYou can check it yourself:\n\n"
           "```python\nprint(6 * 7)\n```\n\nIt prints the same number.")
EXAMPLE_LAST = ("The total is **42** (cell [1] printed it).\n\n"
                "To reproduce it:\n\n```python\nprint(6 * 7)\n```\n")


@pytest.mark.parametrize("provider,text", [
    ("openai", EXAMPLE), ("openai", EXAMPLE_LAST), ("anthropic", EXAMPLE_LAST),
    ("ollama", EXAMPLE),
])
def test_an_answer_with_example_code_is_the_answer(provider, text, terp, fake):
    # issue 12 item 2: the example is for the reader; nothing runs, the
    # model is not called again, and stdout holds this answer
    srv = fake([{"openai" if provider == "ollama" else provider: {"text": text}},
                {"openai": {"text": "a second call"}}])
    if provider == "ollama":
        f, e = ["--provider", "ollama", "--model", "tiny", "--base-url", srv.url], {}
    else:
        f, e = flags(provider, srv)
    r = terp("-p", "q", *f, extra_env=e)
    assert r.rc == 0, r
    assert len(srv.requests()) == 1
    assert r.out.strip() == text.strip(), r.out
    assert "runs it as a cell" not in r.err and "[1] python" not in r.err, r.err


def test_a_reply_that_is_only_code_runs_from_any_provider(terp, fake):
    srv = fake([reply("openai", "```python\nprint(6 * 7)\n```"),
                reply("openai", "It is 42.")])
    f, e = flags("openai", srv)
    r = terp("-p", "q", "--json", *f, extra_env=e)
    assert r.rc == 0, r
    assert [c["code"] for c in r.of("cell")] == ["print(6 * 7)\n"]
    assert r.stdout_of(1) == "42\n"
    assert [a["text"] for a in r.of("answer")] == ["It is 42."]


# ---------------------------------------------------------------- limits

def test_max_turns_cap(terp, fake):
    srv = fake([dict(reply("openai", "", [("c", "print('again')")]), repeat=True)])
    f, e = flags("openai", srv)
    r = terp("-p", "q", "--max-turns", "2", *f, extra_env=e)
    assert r.rc == 5, r
    assert len(srv.requests()) == 2
    assert r.err.splitlines()[-2:] == [
        "terp: stopped after 2 model calls (--max-turns) without a final answer",
        "terp: tokens: 20 in (0 cached), 10 out"]
    assert r.out == ""


def test_error_events_say_their_kind(terp, fake):
    # a rejected key: the model client's kind and the HTTP status
    srv = fake([{"status": 401, "body": {"error": {"message": "Incorrect API key"}}}])
    f, e = flags("openai", srv)
    r = terp("-p", "q", "--json", *f, extra_env=e)
    assert r.rc == 1, r
    [err] = r.of("error")
    assert (err["kind"], err["status"]) == ("auth", 401), err
    # terp's own: the turn cap (no HTTP status)
    srv = fake([dict(reply("openai", "", [("c", "print('again')")]), repeat=True)])
    f, e = flags("openai", srv)
    r = terp("-p", "q", "--json", "--max-turns", "1", *f, extra_env=e)
    assert r.rc == 5, r
    [err] = r.of("error")
    assert (err["kind"], err["status"]) == ("turn_cap", None), err


def test_api_key_never_reaches_the_sandbox(terp, fake, env):
    secret = "sk-" + "LEAKCHECK" + "-9f8e7d6c5b4a"
    code = (
        "import os, glob\n"
        "needle = ''.join(['LEAK', 'CHECK']).encode()\n"
        "print(sorted(os.environ.items()))\n"
        "hits, scanned = [], 0\n"
        "for p in glob.glob('/proc/*/environ') + glob.glob('/proc/*/cmdline'):\n"
        "    try:\n"
        "        data = open(p, 'rb').read()\n"
        "    except OSError:\n"
        "        continue\n"
        "    scanned += 1\n"
        "    if needle in data:\n"
        "        hits.append(p)\n"
        "print('hits', hits, 'scanned', scanned > 0)\n")
    srv = fake([reply("openai", "", [("c", code)]), reply("openai", "Clean.")])
    r = terp("-p", "q", "--json", "--provider", "openai", "--base-url", srv.url,
             extra_env={"OPENAI_API_KEY": secret})
    assert r.rc == 0, r
    reqs = srv.requests()
    assert reqs[0]["headers"]["authorization"] == "Bearer " + secret   # terp had it
    [(_, content, _)] = tool_results("openai", reqs[1])
    assert "hits [] scanned True\n" in content
    assert "LEAKCHECK" not in content and "OPENAI_API_KEY" not in content
    assert "'HOME'" in content         # the environment was printed
    assert "LEAKCHECK" not in r.out
    # Nor is it written anywhere under the session's state folder.
    for f in Path(env["XDG_STATE_HOME"]).rglob("*"):
        if f.is_file():
            assert b"LEAKCHECK" not in f.read_bytes(), f


def test_tool_output_limit_keeps_head_and_tail(terp, fake):
    code = "print('HEAD' + 'x' * 20000 + 'TAIL')"
    srv = fake([reply("openai", "", [("c", code)]), reply("openai", "Long.")])
    f, e = flags("openai", srv)
    r = terp("-p", "q", "--tool-output-limit", "512", *f, extra_env=e)
    assert r.rc == 0, r
    [(_, content, _)] = tool_results("openai", srv.requests()[1])
    assert len(content.encode()) <= 512
    assert "stdout:\nHEADxxx" in content and content.endswith("xxxTAIL\n")
    assert "cut; the full output is in the notebook" in content
    # The transcript on stderr is bounded too, even for one long line.
    assert "HEADxxx" in r.err and "xTAIL" not in r.err
    assert len(r.err) < 4000, len(r.err)
    assert r.out == "Long.\n"


def test_empty_reply_is_not_an_answer(terp, fake):
    srv = fake([reply("openai", "", [("c", "print(1)")]), {"openai": {"text": ""}}])
    f, e = flags("openai", srv)
    r = terp("-p", "q", "-p", "never asked", "--json", *f, extra_env=e)
    assert r.rc == 1, r
    assert not r.of("answer")
    assert [x["message"] for x in r.of("error")] == ["the model's reply was empty (stop reason: stop)"]
    assert len(srv.requests()) == 2           # the follow-up was not asked
    assert [q["text"] for q in r.of("question")] == ["q"]


def test_reply_cut_by_the_token_limit_is_flagged(terp, fake):
    srv = fake([{"anthropic": {"text": "The answer is", "stop_reason": "max_tokens"}}])
    f, e = flags("anthropic", srv)
    r = terp("-p", "q", "--json", *f, extra_env=e)
    assert r.rc == 0, r
    assert [x["message"] for x in r.of("notice")] == [
        "the model's reply reached its output token limit and may be cut short"]
    assert [a["text"] for a in r.of("answer")] == ["The answer is"]


def test_crash_in_a_cell_tells_the_model_its_state_is_gone(terp, fake):
    srv = fake([reply("anthropic", "", [("c1", "x = 1\nimport os\nos._exit(3)")]),
                reply("anthropic", "", [("c2", "print('x' in dir())")]),
                reply("anthropic", "It crashed.")])
    f, e = flags("anthropic", srv)
    r = terp("-p", "q", "--json", *f, extra_env=e)
    assert r.rc == 0, r
    [(_, content, is_error)] = tool_results("anthropic", srv.requests()[1])
    assert is_error is True and content.startswith("status: crashed")
    assert "exited with code 3" in content and "state (variables, imports) was lost" in content
    assert "stdout:\nFalse\n" in tool_results("anthropic", srv.requests()[2])[0][1]
    assert [x["status"] for x in r.results()] == ["crashed", "ok"]


@pytest.mark.parametrize("delay", [0, 1])
def test_sandbox_dying_at_start_ends_the_question(delay, terp, fake):
    # 2M of memory: Python cannot even start. The model's call is either
    # queued for the session (delay 0) or still being answered (delay 1);
    # either way terp stops at once instead of waiting forever.
    # (a terp that waited forever fails at the timeout, a safety net)
    # The interpreter's probe cached first: without it the first request
    # waits for the sandbox's report, and a sandbox that dies first means
    # the model is never asked.
    assert terp("exec", "-c", "pass").rc == 0
    srv = fake([dict(reply("openai", "", [("c1", "print(1)")]), delay=delay),
                reply("openai", "never asked")])
    f, e = flags("openai", srv)
    r = terp("-p", "q", "--json", "--memory", "2M", *f, extra_env=e, timeout=120)
    assert r.rc == 1, r
    assert [k["state"] for k in r.of("kernel")][-1] == "dead"
    [err] = r.of("error")
    assert err["message"].startswith("the question was stopped: the sandbox died while starting: ")
    assert len(srv.requests()) == 1 and not r.of("answer")
    for res in r.results():
        assert res["status"] == "crashed"


def test_unreachable_server_is_one_line(terp, fake):
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()                                   # nothing listens there now
    r = terp("-p", "q", "--max-retries", "1", "--provider", "openai",
             "--base-url", "http://127.0.0.1:%d/v1" % port, extra_env={"OPENAI_API_KEY": KEY})
    assert r.rc == 1, r
    last = r.err.splitlines()[-1]
    assert last.startswith("terp: cannot reach http://127.0.0.1:%d/v1/chat/completions: " % port)
    assert last.endswith("(gave up after 1 retry); is the server running? check --base-url / "
                         "OPENAI_BASE_URL (this URL is from --base-url)")


# ---------------------------------------------------------------- Ctrl-C

@pytest.mark.parametrize("stall", ["before the headers", "mid-stream"])
def test_ctrl_c_during_the_model_call(stall, env, fake, tmp_path):
    # The server stalls far longer than the safety-net timeouts below: a
    # terp that waited for it instead of stopping fails there.
    if stall == "mid-stream":
        srv = fake([{"openai": {"text": "thinking"}, "cut_after": 2, "hang": 600}])
        wait_for = "text"
    else:
        srv = fake([{"openai": {"text": "late"}, "delay": 600}])
        wait_for = "request"
    f, e = flags("openai", srv)
    p = popen(["-p", "q", "--json", *f], env, tmp_path, e)
    events = []
    for line in p.stdout:
        events.append(json.loads(line))
        if events[-1]["type"] == wait_for:
            break
    if stall != "mid-stream":
        wait_until(srv.requests, "the request reaching the fake server")
    kids = children(p.pid)
    assert kids, "the sandbox should be running"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    events += [json.loads(x) for x in out.splitlines()]
    assert [x["message"] for x in events if x["type"] == "error"] == ["cancelled by the user"]
    assert not [x for x in events if x["type"] == "answer"]
    assert all_gone(kids)
    assert len(srv.requests()) == 1


def test_ctrl_c_during_a_cell(env, fake, tmp_path):
    code = "import time\nprint('sleeping', flush=True)\ntime.sleep(600)"
    srv = fake([reply("openai", "", [("c", code)]), reply("openai", "never asked")])
    f, e = flags("openai", srv)
    p = popen(["-p", "q", "--json", *f], env, tmp_path, e)
    events = []
    for line in p.stdout:
        events.append(json.loads(line))
        if events[-1]["type"] == "stdout" and "sleeping" in events[-1]["text"]:
            break
    kids = children(p.pid)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)     # the cell would sleep 600 s
    assert p.returncode == 130, err
    events += [json.loads(x) for x in out.splitlines()]
    assert [x["status"] for x in events if x["type"] == "result"] == ["interrupted"]
    assert [x["message"] for x in events if x["type"] == "error"] == ["interrupted by the user"]
    assert len(srv.requests()) == 1          # the model was not asked again
    assert all_gone(kids)


def test_ctrl_c_during_a_cell_that_ignores_it(env, fake, tmp_path):
    code = ("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "print('deaf', flush=True)\nwhile True: time.sleep(0.01)")
    srv = fake([reply("openai", "", [("c", code)])])
    f, e = flags("openai", srv)
    p = popen(["-p", "q", "--json", "--grace", "0.3", *f], env, tmp_path, e)
    events = []
    for line in p.stdout:
        events.append(json.loads(line))
        if events[-1]["type"] == "stdout" and "deaf" in events[-1]["text"]:
            break
    kids = children(p.pid)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    events += [json.loads(x) for x in out.splitlines()]
    [res] = [x for x in events if x["type"] == "result"]
    assert res["status"] == "interrupted" and res.get("state_lost") is True, res
    assert "ignored the interrupt" in res["reason"] and "was killed" in res["reason"]
    assert len(srv.requests()) == 1
    assert all_gone(kids)


# ---------------------------------------------------------------- follow-ups and JSON

@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_follow_up_reuses_the_dataframe(provider, terp, fake, tmp_path):
    expected = write_csv(tmp_path / "x.csv")
    srv = fake([
        reply(provider, "", [("c1", LOAD)]),
        reply(provider, "Loaded 90 rows."),
        reply(provider, "", [("c2", COMPUTE)]),
        reply(provider, "North: %s." % expected),
    ])
    f, e = flags(provider, srv)
    r = terp("-p", "Load it.", "-p", "North revenue?", "--json", *f, "x.csv", extra_env=e)
    assert r.rc == 0, r
    assert [q["text"] for q in r.of("question")] == ["Load it.", "North revenue?"]
    assert [a["text"] for a in r.of("answer")] == ["Loaded 90 rows.", "North: %s." % expected]
    reqs = srv.requests()
    assert len(reqs) == 4
    # The follow-up carries the whole conversation so far.
    msgs = reqs[2]["body"]["messages"]
    if provider == "openai":
        assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "assistant", "user"]
        assert msgs[-1]["content"] == "North revenue?"
    else:
        assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant", "user"]
        assert [b["type"] for b in msgs[1]["content"]] == ["tool_use"]
        assert [b["type"] for b in msgs[2]["content"]] == ["tool_result"]
        last = msgs[-1]["content"]
        text = last if isinstance(last, str) else "".join(b.get("text", "") for b in last)
        assert text == "North revenue?"
    [(_, content, _)] = tool_results(provider, reqs[3])
    assert "NORTH=%s\n" % expected in content     # df survived the first question
    assert [e["n"] for e in r.of("turn")] == [1, 2, 1, 2]


def test_sigterm_ends_the_run_and_the_sandbox(env, fake, tmp_path):
    srv = fake([{"openai": {"text": "thinking"}, "cut_after": 2, "hang": 600}])
    f, e = flags("openai", srv)
    p = popen(["-p", "q", "--json", *f], env, tmp_path, e)
    for line in p.stdout:
        if json.loads(line)["type"] == "text":
            break
    kids = children(p.pid)
    assert kids
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=120)
    assert p.returncode == 128 + signal.SIGTERM
    assert all_gone(kids)


def test_json_event_schema(terp, fake, tmp_path):
    code = ("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\n"
            "plt.savefig('/workspace/out/line.png')\nprint('saved')\n6 * 7")
    srv = fake([reply("openai", "Plotting.", [("c1", code)]), reply("openai", "Saved.")])
    f, e = flags("openai", srv)
    r = terp("-p", "Plot.", "--json", *f, extra_env=e)
    assert r.rc == 0, r
    types = [x["type"] for x in r.events]
    assert types[0] == "session"
    for t in ("turn", "text", "tool_call", "cell", "stdout", "result", "artifact",
              "usage", "answer", "question", "request"):
        assert t in types, t
    want = {
        "session": {"id", "workspace", "sandbox"},
        "turn": {"n"},
        "text": {"delta"},
        "tool_call": {"id", "name", "code"},
        "cell": {"cell", "author", "code"},
        "stdout": {"cell", "text"},
        "result": {"cell", "status", "duration_ms", "duration_us", "value", "author"},
        "artifact": {"cell", "name", "path", "bytes"},
        "usage": {"input_tokens", "output_tokens", "cached_tokens",
                  "total_input_tokens", "total_output_tokens"},
        "answer": {"text", "numbers"},
        "question": {"text"},
        "request": {"what", "bytes"},
        "kernel": {"state", "message"},
    }
    for x in r.events:
        assert keys(x) == want[x["type"]], x
    assert r.of("session")[0]["workspace"].endswith(r.of("session")[0]["id"])
    [tc] = r.of("tool_call")
    assert tc == {"type": "tool_call", "id": "c1", "name": "python_exec", "code": code}
    [res] = r.results()
    assert res["status"] == "ok" and res["value"] == "42" and res["author"] == "model"
    [art] = r.of("artifact")
    assert art["name"] == "line.png" and art["cell"] == 1 and art["bytes"] > 1000
    assert art["path"] == "out/line.png"
    assert (tmp_path / art["path"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    u = r.of("usage")
    assert [(x["input_tokens"], x["output_tokens"], x["total_input_tokens"]) for x in u] == [
        (10, 5, 10), (10, 5, 20)]
    # Errors: one event with a message, the kind and the HTTP status.
    srv2 = fake([{"status": 400, "body": {"error": {"message": "bad request body"}}}])
    f2, e2 = flags("openai", srv2)
    r2 = terp("-p", "q", "--json", *f2, extra_env=e2)
    assert r2.rc == 1
    [err] = r2.of("error")
    assert err == {"type": "error", "message": "400 Bad Request: bad request body",
                   "kind": "http", "status": 400}


# ---------------------------------------------------------------- the demo

def test_recorded_demo_computes_the_recorded_numbers(terp, tmp_path):
    import re
    with open(ROOT / "examples" / "demo.json") as f:
        demo = json.load(f)
    qs = [q["question"] for q in demo["questions"]]
    assert qs == ["What month had the highest revenue per dollar of marketing spend, per channel?",
                  "Plot monthly revenue per marketing dollar for each channel."]
    finals = [[r["text"] for r in q["replies"] if "code" not in r][-1] for q in demo["questions"]]
    r = terp("--provider", "demo", "--json", "-p", qs[0], "-p", qs[1],
             ROOT / "examples" / "sales.csv")
    assert r.rc == 0, r
    answers = [a["text"] for a in r.of("answer")]
    assert answers == finals
    printed = "".join(x["text"] for x in r.events if x["type"] == "stdout")
    for text in finals:
        for num in re.findall(r"\d+\.\d+|\d{4}-\d{2}", text):
            assert num in printed, num
    assert all(x["status"] == "ok" for x in r.results())
    png = tmp_path / "out" / "revenue_per_dollar.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10000
    assert [a["name"] for a in r.of("artifact")] == ["revenue_per_dollar.png"]


# ---------------------------------------------------------------- usage

def test_question_from_stdin(terp, fake):
    srv = fake([reply("openai", "Hello back.")])
    f, e = flags("openai", srv)
    r = terp("-p", "-", "--json", *f, input="What is in the file?\n", extra_env=e)
    assert r.rc == 0, r
    [q] = r.of("question")
    assert q["text"].strip() == "What is in the file?"
    msgs = srv.requests()[0]["body"]["messages"]
    assert msgs[-1]["role"] == "user" and msgs[-1]["content"].strip() == "What is in the file?"


@pytest.mark.parametrize("q", ["", "  \n\t"])
def test_empty_question_is_a_usage_error(terp, q):
    r = terp("-p", q, "--provider", "demo")
    assert r.rc == 2, r
    assert r.err == "terp: -p: the question is empty (try terp --help)\n"


def test_empty_question_from_stdin_is_a_usage_error(terp):
    r = terp("-p", "-", "--provider", "demo", input="\n")
    assert r.rc == 2, r
    assert "the question is empty" in r.err


def test_no_provider_configured_is_one_clear_line(terp):
    r = terp("-p", "q")
    assert r.rc == 2, r
    lines = r.err.splitlines()
    assert len(lines) == 1, r.err
    for word in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "AZURE_OPENAI_API_KEY",
                 "--provider ollama", "--provider demo"):
        assert word in lines[0]
    assert r.out == ""


def _writes_over_turns(env, fake, tmp_path, n):
    """terp's write calls (/proc/PID/io) over a -p --json run of n
    tool-call turns, read while its last cell sleeps (terp alive)."""
    srv = fake([reply("openai", calls=[("c%d" % i, "x = %d" % i)]) for i in range(n)] +
               [reply("openai", calls=[("end", "print('end', flush=True)\n"
                                               "import time\ntime.sleep(60)")])])
    e = dict(env, OPENAI_API_KEY=KEY)
    p = subprocess.Popen([str(TERP), "-p", "count", "--json", "--provider", "openai",
                          "--base-url", srv.url, "--max-turns", str(n + 5)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e,
                         cwd=tmp_path, text=True)
    try:
        for line in p.stdout:
            ev = json.loads(line)
            if ev["type"] == "stdout" and ev["text"] == "end\n":
                time.sleep(0.3)  # the idle edge's deferred work is done
                with open("/proc/%d/io" % p.pid) as f:
                    kv = dict(l.split(": ") for l in f.read().splitlines())
                return int(kv["syscw"])
        raise AssertionError("terp -p ended before its last cell: %s" % p.stderr.read())
    finally:
        p.kill()
        p.wait()
        p.stdout.close()
        p.stderr.close()


def test_a_json_turn_writes_its_lines_together(env, fake, tmp_path):
    """With --json, the journal's lines and the events of a turn go out
    before terp waits, each in one write, not one write a line: a turn
    (request, reply, cell, result) was 13 writes and the command's, the
    reader woken for each event; now at most about six."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    w0 = _writes_over_turns(env, fake, tmp_path / "a", 10)
    w1 = _writes_over_turns(env, fake, tmp_path / "b", 60)
    per_turn = (w1 - w0) / 50
    assert 2 <= per_turn <= 7, per_turn
