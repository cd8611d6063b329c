"""--reasoning and the models' reasoning (issue 26): the real binary and
sandbox against tests/fake_model.py, which checks each follow-up request
the way the provider does (Anthropic: thinking blocks and their
signatures back unchanged before their tool_use, or a 400)."""
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

from conftest import ROOT, TERP

sys.path.insert(0, str(ROOT / "tests"))
from fake_model import thinking_signature  # noqa: E402

KEY = "sk-terp-test-0123456789"

THOUGHTS = ["I should load the file first and look at its shape.",
            "The shape is known; now the mean of column a. Ünïcode ✓.",
            "Check the sum too before answering."]
CODES = ["a = [1, 2, 3, 4]\nprint('n', len(a))",
         "print('mean', sum(a) / len(a))",
         "print('sum', sum(a))"]


def anthropic_env(env, srv):
    e = dict(env)
    e["ANTHROPIC_API_KEY"] = KEY
    e["ANTHROPIC_BASE_URL"] = srv.root
    return e


def three_calls_anthropic():
    turns = []
    for i in range(3):
        spec = {"thinking": THOUGHTS[i],
                "tool_calls": [{"id": "toolu_%d" % i, "code": CODES[i]}]}
        if i == 1:
            spec["redacted"] = ["UkVEQUNURUQtZmFrZS1kYXRh%d" % i]
        turns.append({"anthropic": spec})
    turns.append({"anthropic": {"thinking": "All three printed; answer.",
                                "text": "The mean is 2.5 and the sum 10."}})
    return {"turns": turns, "anthropic_thinking": {"require": True}}


def run(env, cwd, *args, timeout=180):
    p = subprocess.run([str(TERP), *map(str, args)], capture_output=True, text=True,
                       env=env, cwd=cwd, timeout=timeout)
    return p


def events(out):
    return [json.loads(l) for l in out.splitlines() if l.startswith("{")]


def assistant_blocks(body):
    return [m["content"] for m in body["messages"] if m["role"] == "assistant"]


def test_anthropic_thinking_three_tool_calls(env, fake, tmp_path):
    srv = fake(three_calls_anthropic())
    e = anthropic_env(env, srv)
    r = run(e, tmp_path, "--json", "--provider", "anthropic", "--reasoning", "medium",
            "-p", "What are the mean and the sum?")
    assert r.returncode == 0, r.stderr + r.stdout[-2000:]
    reqs = srv.requests()
    assert len(reqs) == 4, [q["body"] for q in reqs]
    for q in reqs:
        b = q["body"]
        assert b["thinking"] == {"type": "enabled", "budget_tokens": 8192}
        assert b["max_tokens"] == 4096 + 8192
        assert "interleaved-thinking-2025-05-14" in q["headers"]["anthropic-beta"]
    # Each follow-up carries every earlier turn's thinking, unchanged and
    # first in its assistant message, before the tool_use.
    last = assistant_blocks(reqs[3]["body"])
    assert len(last) == 3
    for i, content in enumerate(last):
        assert content[0] == {"type": "thinking", "thinking": THOUGHTS[i],
                              "signature": thinking_signature(THOUGHTS[i])}
        if i == 1:
            assert content[1] == {"type": "redacted_thinking",
                                  "data": "UkVEQUNURUQtZmFrZS1kYXRh1"}
        assert content[-1]["type"] == "tool_use"
    ev = events(r.stdout)
    answer = [x for x in ev if x["type"] == "answer"]
    assert answer and answer[0]["text"] == "The mean is 2.5 and the sum 10."
    shown = "".join(x["delta"] for x in ev if x["type"] == "reasoning")
    for t in THOUGHTS:
        assert t in shown
    # reasoning is never part of the answer's text events
    assert not any(t in "".join(x["delta"] for x in ev if x["type"] == "text")
                   for t in THOUGHTS)

    # the export keeps the reasoning as a collapsed note above each reply,
    # apart from the answer
    sid = [x for x in ev if x["type"] == "session"][0]["id"]
    md = tmp_path / "s.md"
    r = run(e, tmp_path, "--export", sid, md)
    assert r.returncode == 0, r.stderr
    text = md.read_text()
    assert text.count("<details><summary>Model reasoning</summary>") == 4
    assert "> " + THOUGHTS[0] + "\n" in text
    note_end = text.index("</details>", text.index("All three printed; answer."))
    assert text.index("The mean is 2.5 and the sum 10.") > note_end
    nbp = tmp_path / "s.ipynb"
    assert run(e, tmp_path, "--export", sid, nbp).returncode == 0
    cells = json.loads(nbp.read_text())["cells"]
    notes = ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"
             and "".join(c["source"]).startswith("<details>")]
    assert len(notes) == 4 and THOUGHTS[2] in notes[2]
    answers = ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"
               and "The mean is 2.5" in "".join(c["source"])]
    assert answers and not any(t in a for a in answers for t in THOUGHTS)


def test_fake_refuses_a_changed_signature(fake):
    """The fake itself: a thinking block whose signature or text changed
    by one byte gets the API's 400, so the test above means something."""
    srv = fake({"turns": [{"anthropic": {"text": "ok"}, "repeat": True}],
                "anthropic_thinking": True})
    t = THOUGHTS[0]
    good = thinking_signature(t)

    def post(block):
        body = {"model": "m", "max_tokens": 9000,
                "thinking": {"type": "enabled", "budget_tokens": 4096},
                "messages": [{"role": "user", "content": "q"},
                             {"role": "assistant", "content": [block, {
                                 "type": "tool_use", "id": "t1", "name": "python_exec",
                                 "input": {"code": "1"}}]},
                             {"role": "user", "content": [{
                                 "type": "tool_result", "tool_use_id": "t1", "content": "1"}]}]}
        req = urllib.request.Request(srv.root + "/v1/messages", json.dumps(body).encode(),
                                     {"content-type": "application/json"})
        try:
            with urllib.request.urlopen(req) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()

    assert post({"type": "thinking", "thinking": t, "signature": good})[0] == 200
    st, body = post({"type": "thinking", "thinking": t, "signature": good[:-2] + "AA"})
    assert st == 400 and "Invalid `signature`" in body
    st, body = post({"type": "thinking", "thinking": t + " ", "signature": good})
    assert st == 400 and "Invalid `signature`" in body
    st, body = post({"type": "text", "text": "no thinking"})
    assert st == 400 and "must start with a thinking block" in body


def test_kill_9_then_resume_keeps_thinking_valid(env, fake, tmp_path):
    """kill -9 while the second call's cell runs; --resume sends the
    journalled thinking blocks back, and the fake (which checks their
    signatures and that they precede the answered tool_use) accepts."""
    spec = three_calls_anthropic()
    spec["turns"][1]["anthropic"]["tool_calls"][0]["code"] = (
        "print('mean', sum(a) / len(a), flush=True)\nimport time\ntime.sleep(60)")
    spec["turns"] = spec["turns"][:2] + [
        {"anthropic": {"thinking": "Resumed; the variables are gone.",
                       "text": "Resumed: ask again."}}]
    srv = fake(spec)
    e = anthropic_env(env, srv)
    p = subprocess.Popen([str(TERP), "--json", "--provider", "anthropic", "--reasoning", "low",
                          "-p", "Mean?"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=e, cwd=tmp_path, text=True)
    seen = ""
    deadline = time.time() + 90
    while time.time() < deadline and "mean 2.5" not in seen:
        line = p.stdout.readline()
        if not line:
            break
        ev = json.loads(line)
        if ev["type"] == "stdout":
            seen += ev["text"]
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    p.stdout.close()
    p.stderr.close()
    assert "mean 2.5" in seen, seen
    sdir = os.path.join(e["XDG_STATE_HOME"], "terp", "sessions")
    [sid] = os.listdir(sdir)
    with open(os.path.join(sdir, sid, "notebook.jsonl")) as f:
        recs = [json.loads(l) for l in f if l.endswith("\n")]
    replies = [x for x in recs if x["t"] == "reply"]
    assert replies[1]["reasoning"][0]["signature"] == thinking_signature(THOUGHTS[1])

    r = run(e, tmp_path, "--provider", "anthropic", "--reasoning", "low",
            "--resume", sid, "-p", "And now?")
    assert r.returncode == 0, r.stderr
    assert "Resumed: ask again." in r.stdout
    body = srv.requests()[-1]["body"]
    got = assistant_blocks(body)
    assert got[0][0]["signature"] == thinking_signature(THOUGHTS[0])
    assert got[1][0]["signature"] == thinking_signature(THOUGHTS[1])
    assert got[1][1]["type"] == "redacted_thinking"
    # the reasoning is not the answer: -p prints only the answer on stdout
    assert "variables are gone" not in r.stdout


def test_show_reasoning_goes_to_stderr_only(env, fake, tmp_path):
    srv = fake({"turns": [{"anthropic": {"thinking": "Think 4 times 4.",
                                         "text": "It is 16."}, "repeat": True}],
                "anthropic_thinking": {"require": True}})
    e = anthropic_env(env, srv)
    r = run(e, tmp_path, "--provider", "anthropic", "--reasoning", "high", "-p", "4*4?")
    assert r.returncode == 0, r.stderr
    assert srv.requests()[0]["body"]["thinking"]["budget_tokens"] == 24576
    assert "Think 4 times 4." not in r.stdout + r.stderr
    r = run(e, tmp_path, "--provider", "anthropic", "--reasoning", "high",
            "--show-reasoning", "-p", "4*4?")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "It is 16."
    assert "thinking: Think 4 times 4." in r.stderr


def test_reasoning_off_and_default_send_no_thinking(env, fake, tmp_path):
    srv = fake([{"anthropic": {"text": "a"}}, {"anthropic": {"text": "b"}}])
    e = anthropic_env(env, srv)
    assert run(e, tmp_path, "--provider", "anthropic", "-p", "q").returncode == 0
    assert run(e, tmp_path, "--provider", "anthropic", "--reasoning", "off",
               "-p", "q").returncode == 0
    for q in srv.requests():
        assert "thinking" not in q["body"]
        assert q["body"]["max_tokens"] == 4096
        assert "anthropic-beta" not in q["headers"]


def test_reasoning_config_and_bad_values(env, fake, tmp_path):
    srv = fake([{"anthropic": {"text": "a"}}])
    e = anthropic_env(env, srv)
    cfg = os.path.join(e["XDG_CONFIG_HOME"], "terp")
    os.makedirs(cfg, exist_ok=True)
    with open(os.path.join(cfg, "config"), "w") as f:
        f.write("reasoning = low\n")
    r = run(e, tmp_path, "--provider", "anthropic", "-p", "q")
    assert r.returncode == 0, r.stderr
    assert srv.requests()[0]["body"]["thinking"]["budget_tokens"] == 2048
    r = run(e, tmp_path, "--provider", "anthropic", "--reasoning", "lots", "-p", "q")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].startswith("terp: invalid --reasoning 'lots'")
    with open(os.path.join(cfg, "config"), "w") as f:
        f.write("reasoning = lots\n")
    r = run(e, tmp_path, "--provider", "anthropic", "-p", "q")
    assert r.returncode == 2
    assert "invalid reasoning in" in r.stderr and "'lots'" in r.stderr


def test_ollama_reasoning_deltas_are_never_the_answer(env, fake, tmp_path):
    """Ollama streams its thinking in delta.reasoning (llama.cpp and vLLM
    in reasoning_content): shown apart, never in the answer or its
    number trace, and --reasoning off asks for none."""
    base = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def chunk(delta, finish=None):
        c = dict(base)
        c["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
        return {"data": c}

    def turn(reason_key, reasoning, code=None, text=None, i=0):
        ev = [chunk({"role": "assistant", "content": ""})]
        for piece in (reasoning[:9], reasoning[9:]):
            ev.append(chunk({reason_key: piece}))
        if code:
            ev.append(chunk({"tool_calls": [{"id": "call_%d" % i, "index": 0, "type": "function",
                                             "function": {"name": "python_exec",
                                                          "arguments": json.dumps({"code": code})}}]}))
            ev.append(chunk({}, "tool_calls"))
        else:
            ev.append(chunk({"content": text}))
            ev.append(chunk({}, "stop"))
        ev.append({"data": "[DONE]"})
        return {"events": ev}

    turns = [turn("reasoning", "Maybe 777 rows? Load it.", CODES[0], i=0),
             turn("reasoning_content", "Now 31337 is the mean?", CODES[1], i=1),
             turn("reasoning", "And 4242 the sum.", CODES[2], i=2),
             turn("reasoning", "Done: 2.5 and 10.", text="Mean 2.5, sum 10.")]
    srv = fake(turns)
    r = run(env, tmp_path, "--json", "--provider", "ollama", "--base-url", srv.url,
            "--model", "qwen3", "--reasoning", "off", "-p", "Mean and sum?")
    assert r.returncode == 0, r.stderr
    reqs = srv.requests()
    assert len(reqs) == 4
    for q in reqs:
        assert q["body"]["reasoning_effort"] == "none"
        for m in q["body"]["messages"]:
            # the thinking never goes back as content
            assert "777" not in json.dumps(m) and "31337" not in json.dumps(m)
    ev = events(r.stdout)
    [answer] = [x for x in ev if x["type"] == "answer"]
    assert answer["text"] == "Mean 2.5, sum 10."
    assert all(n.get("value") not in ("777", "31337", "4242") for n in answer.get("numbers", []))
    shown = "".join(x["delta"] for x in ev if x["type"] == "reasoning")
    assert "Maybe 777 rows? Load it." in shown and "Now 31337 is the mean?" in shown


# ---------------------------------------------------------------- Responses API

SUMMARIES = ["Plan: load, then the mean.", "Mean computed; now the sum.",
             "Sum is next to last; then answer."]


def three_calls_responses():
    turns = [{"responses": {"reasoning": SUMMARIES[i],
                            "tool_calls": [{"id": "call_%d" % i, "code": CODES[i]}]}}
             for i in range(3)]
    turns.append({"responses": {"reasoning": "Answer now.",
                                "text": "The mean is 2.5 and the sum 10."}})
    return {"turns": turns, "responses_check": {"require": True}}


def reasoning_items(body):
    return [it for it in body["input"] if it.get("type") == "reasoning"]


def test_openai_responses_three_tool_calls_with_encrypted_reasoning(env, fake, tmp_path):
    srv = fake(three_calls_responses())
    e = dict(env, OPENAI_API_KEY=KEY)
    r = run(e, tmp_path, "--json", "--provider", "openai", "--model", "o4-mini",
            "--base-url", srv.url, "--reasoning", "high", "-p", "What are the mean and the sum?")
    assert r.returncode == 0, r.stderr + r.stdout[-2000:]
    reqs = srv.requests()
    assert [q["path"] for q in reqs] == ["/v1/responses"] * 4
    for n, q in enumerate(reqs):
        b = q["body"]
        assert b["store"] is False and b["stream"] is True
        assert b["include"] == ["reasoning.encrypted_content"]
        assert b["reasoning"] == {"effort": "high", "summary": "auto"}
        assert b["tools"][0]["type"] == "function" and b["tools"][0]["name"] == "python_exec"
        assert b["instructions"]
        items = reasoning_items(b)
        assert len(items) == n
        # each reasoning item goes back whole, right before its call
        for i, it in enumerate(items):
            assert it["summary"] == [{"type": "summary_text", "text": SUMMARIES[i]}]
            k = b["input"].index(it)
            assert b["input"][k + 1]["type"] == "function_call"
            assert b["input"][k + 1]["call_id"] == "call_%d" % i
            assert b["input"][k + 2] == {"type": "function_call_output", "call_id": "call_%d" % i,
                                         "output": b["input"][k + 2]["output"]}
    ev = events(r.stdout)
    [answer] = [x for x in ev if x["type"] == "answer"]
    assert answer["text"] == "The mean is 2.5 and the sum 10."
    shown = "".join(x["delta"] for x in ev if x["type"] == "reasoning")
    for s in SUMMARIES:
        assert s in shown
    outs = "".join(x["text"] for x in ev if x["type"] == "stdout")
    assert "mean 2.5" in outs and "sum 10" in outs
    usage = [x for x in ev if x["type"] == "usage"]
    assert usage and usage[-1].get("reasoning_tokens") == 12


def test_responses_fake_refuses_changed_or_missing_reasoning(fake):
    srv = fake({"turns": [{"responses": {"reasoning": "r", "tool_calls": [{"id": "c1", "code": "1"}]}},
                          {"responses": {"text": "ok"}, "repeat": True}],
                "responses_check": True})

    def post(body):
        req = urllib.request.Request(srv.url + "/responses", json.dumps(body).encode(),
                                     {"content-type": "application/json"})
        try:
            with urllib.request.urlopen(req) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()

    st, text = post({"model": "o4-mini", "input": [{"role": "user", "content": "q"}],
                     "store": False, "stream": True})
    assert st == 200
    item = None
    for line in text.splitlines():
        if line.startswith("data: "):
            d = json.loads(line[6:])
            if d["type"] == "response.output_item.done" and d["item"]["type"] == "reasoning":
                item = d["item"]
    call = {"type": "function_call", "call_id": "c1", "name": "python_exec", "arguments": "{}"}
    out = {"type": "function_call_output", "call_id": "c1", "output": "1"}
    q = {"role": "user", "content": "q"}
    good = {"model": "o4-mini", "store": False, "input": [q, item, call, out]}
    assert post(good)[0] == 200
    bad = dict(item, encrypted_content=item["encrypted_content"][:-1] + "A")
    st, text = post(dict(good, input=[q, bad, call, out]))
    assert st == 400 and "could not be verified" in text
    st, text = post(dict(good, input=[q, call, out]))
    assert st == 400 and "without its required 'reasoning' item" in text
    st, text = post(dict(good, input=[q, {k: v for k, v in item.items()
                                          if k != "encrypted_content"}, call, out]))
    assert st == 404 and "not persisted" in text


def test_api_default_per_family_and_forced(env, fake, tmp_path):
    srv = fake([{"openai": {"text": "chat"}}, {"responses": {"text": "resp"}},
                {"openai": {"text": "chat"}}, {"responses": {"text": "resp"}}])
    e = dict(env, OPENAI_API_KEY=KEY)
    for model, api in (("gpt-4.1", None), ("gpt-5-mini", None), ("o3", "chat"),
                       ("gpt-4.1", "responses")):
        args = ["--provider", "openai", "--base-url", srv.url, "--model", model]
        if api:
            args += ["--api", api]
        r = run(e, tmp_path, *args, "-p", "q")
        assert r.returncode == 0, r.stderr
    paths = [q["path"] for q in srv.requests()]
    assert paths == ["/v1/chat/completions", "/v1/responses", "/v1/chat/completions",
                     "/v1/responses"]
    # a model outside the reasoning families asks for no reasoning
    last = srv.requests()[3]["body"]
    assert "include" not in last and "reasoning" not in last and last["store"] is False
    r = run(e, tmp_path, "--provider", "openai", "--api", "soap", "-p", "q")
    assert r.returncode == 2 and "invalid --api 'soap'" in r.stderr


def test_azure_responses_endpoint(env, fake, tmp_path):
    srv = fake({"turns": [{"responses": {"reasoning": "think",
                                         "tool_calls": [{"id": "call_a", "code": "print(6*7)"}]}},
                          {"responses": {"text": "It is 42."}}],
                "responses_check": {"require": True}})
    e = dict(env, AZURE_OPENAI_API_KEY=KEY, AZURE_OPENAI_ENDPOINT=srv.root,
             AZURE_OPENAI_DEPLOYMENT="gpt-5-mini")
    r = run(e, tmp_path, "--provider", "azure", "-p", "6*7?")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "It is 42."
    reqs = srv.requests()
    assert [q["path"] for q in reqs] == ["/openai/v1/responses"] * 2
    assert reqs[0]["headers"]["api-key"] == KEY
    assert reqs[0]["body"]["model"] == "gpt-5-mini"
    assert len(reasoning_items(reqs[1]["body"])) == 1


def test_responses_errors_retry_and_context(env, fake, tmp_path):
    """A 429 is retried and a context_length_exceeded makes terp compact
    and ask again, as on the Chat path; response.failed in the stream is
    the model's error with its kind."""
    ctx = {"error": {"message": "Your input exceeds the context window of this model.",
                     "type": "invalid_request_error", "param": "input",
                     "code": "context_length_exceeded"}}
    srv = fake([{"status": 429, "headers": {"retry-after-ms": "10"},
                 "body": {"error": {"message": "slow down", "type": "requests",
                                    "code": "rate_limit_exceeded"}}},
                {"status": 400, "body": ctx},
                {"responses": {"text": "fine"}},
                {"responses": {"failed": {"code": "server_error", "message": "boom"}},
                 "repeat": True}])
    e = dict(env, OPENAI_API_KEY=KEY)
    r = run(e, tmp_path, "--provider", "openai", "--base-url", srv.url, "--model", "o3",
            "--max-retries", "1", "-p", "q")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "fine"
    assert "429" in r.stderr and "compacts the conversation" in r.stderr
    r = run(e, tmp_path, "--json", "--provider", "openai", "--base-url", srv.url,
            "--model", "o3", "--max-retries", "0", "-p", "q")
    assert r.returncode != 0
    [err] = [x for x in events(r.stdout) if x["type"] == "error"]
    assert "boom" in err["message"] and err["kind"] == "server"


# ---------------------------------------------------------------- the notebook (tmux)

def test_tui_shows_reasoning_folded_and_r_unfolds_it(fake_model, tmux, tmp_path):
    from tui_tmux import model_env
    port = fake_model({"turns": [
        {"anthropic": {"thinking": "First look at 31337 rows.\nThen decide.",
                       "tool_calls": [{"id": "toolu_1", "code": "print(6 * 7)"}]}},
        {"anthropic": {"thinking": "It printed 42.", "text": "The answer is 42."}}],
        "anthropic_thinking": {"require": True}})
    e = model_env(tmp_path)
    e.update(ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL="http://127.0.0.1:%d" % port)
    cmd = " ".join([str(TERP), "--provider", "anthropic", "--reasoning", "low",
                    "--out", str(tmp_path / "out")])
    t = tmux(cmd, e, tmp_path, 100, 40, ready=r"│ ready", timeout=30)
    t.text("What is 6*7?")
    t.keys("Enter")
    s = t.wait(r"The answer is 42", timeout=60)
    assert "▸ reasoning, 2 lines (r shows it)" in s, s
    assert "▸ reasoning, 1 line (r shows it)" in s, s
    assert "31337" not in s
    # folded above the answer
    assert s.index("▸ reasoning, 1 line") < s.index("The answer is 42")
    t.keys("Tab")
    t.keys("r")
    s = t.wait(r"│ First look at 31337 rows\.", timeout=30)
    assert "  Then decide." in s and "│ It printed 42." in s, s
    assert s.index("It printed 42.") < s.index("The answer is 42")
    t.keys("r")
    s = t.wait(r"▸ reasoning, 2 lines", timeout=30)
    assert "31337" not in s
    # dimmed: the folded line is drawn with the dim attribute
    raw = t.screen(escapes=True)
    line = [l for l in raw.splitlines() if "reasoning, 1 line" in l][0]
    assert "\x1b[2m" in line or ";2m" in line or "[2;" in line, repr(line)
    # a resumed notebook shows the journalled reasoning folded the same way
    t.keys("Escape")
    t.text("/quit")
    t.keys("Enter")
    t.wait(r"EXITED rc=0", timeout=30)
    t2 = tmux(cmd + " --resume", e, tmp_path, 100, 40, ready=r"│ ready", timeout=30)
    s = t2.wait(r"The answer is 42", timeout=30)
    assert "▸ reasoning, 2 lines (r shows it)" in s, s
    assert s.index("▸ reasoning, 1 line") < s.index("The answer is 42")
    t2.keys("Tab")
    t2.keys("r")
    t2.wait(r"│ It printed 42\.", timeout=30)
