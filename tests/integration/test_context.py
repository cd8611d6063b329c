"""The context budget (issue 11, section 1): the real binary and sandbox
against tests/fake_model.py enforcing a context window with each
provider's real error body. A long session stays inside an 8k-token
window (every request the fake counted is under it), the first
questions' results survive in the model's summary, and a request the
server refuses as too long is compacted and retried once, then ends
with one clear line."""
import json
import re
import sys

import pytest

from conftest import ROOT, session_dir

sys.path.insert(0, str(ROOT / "tests"))
from fake_analyst import SUMMARY_MARK, _texts, analyst  # noqa: E402

KEY = "sk-terp-test-0123456789"


def flags(provider, srv):
    if provider == "anthropic":
        return ["--provider", "anthropic"], {"ANTHROPIC_API_KEY": KEY,
                                             "ANTHROPIC_BASE_URL": srv.root}
    if provider == "azure":
        return (["--provider", "azure", "--model", "dep1"],
                {"AZURE_OPENAI_API_KEY": KEY, "AZURE_OPENAI_ENDPOINT": srv.root})
    if provider == "ollama":
        return ["--provider", "ollama", "--model", "llama3.1:8b", "--base-url", srv.url], {}
    return ["--provider", "openai", "--base-url", srv.url], {"OPENAI_API_KEY": KEY}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_sixty_questions_fit_an_8k_window_and_remember_the_first(provider, terp, fake, env):
    srv = fake({"window": 8192, "window_error": provider}, analyst(provider))
    f, e = flags(provider, srv)
    qs = []
    for k in range(1, 60):
        qs += ["-p", "Question %d: compute block %d." % (k, k)]
    qs += ["-p", "Recall FACT-1: what was the first result?"]
    r = terp(*qs, "--json", "--context-window", "8192", *f, extra_env=e, timeout=600)
    assert r.rc == 0, r.err[-3000:]
    assert not r.of("error")
    reqs = srv.requests()
    sizes = [q["tokens"] for q in reqs]
    # The server never refused: every request fit its window.
    assert max(sizes) <= 8192, sizes
    answers = [a["text"] for a in r.of("answer")]
    assert len(answers) == 60
    assert answers[0] == "The result: FACT-1 = 1007."
    assert answers[58] == "The result: FACT-59 = 59007."
    # The first question's cell is long gone from the conversation, yet
    # the summary carried its result to the last question.
    assert answers[59] == "FACT-1 = 1007"
    last = reqs[-1]["body"]
    assert "row 099" not in json.dumps(last["messages"][:3])
    assert "Summary of the earlier conversation" in _texts(last)
    # Compaction happened, and said so: elisions and summaries as
    # notices (the journal keeps them), the summary calls in /sent.
    notices = [n["message"] for n in r.of("notice")]
    assert any("summarised by the model" in n for n in notices), notices
    assert any(n.startswith("context: older tool outputs elided") for n in notices), notices
    summaries = [q for q in reqs if SUMMARY_MARK in json.dumps(q["body"])]
    assert 1 <= len(summaries) <= 15, len(summaries)
    # The journal marks each compaction; the notebook keeps every
    # message whole (cell 1's rows are still there).
    lines = [json.loads(ln) for ln in
             (session_dir(env) / "notebook.jsonl").read_text().splitlines()]
    marks = [ln["text"] for ln in lines if ln.get("t") == "notice"
             and "summarised by the model" in ln.get("text", "")]
    assert len(marks) == sum(1 for n in notices if "summarised by the model" in n) >= 1
    first_out = [ln for ln in lines if ln.get("t") == "tool"][0]
    assert "row 099" in first_out["content"] and "FACT-1 = 1007" in first_out["content"]
    sent = [q["what"] for q in r.of("request")]
    assert sum(1 for w in sent if w.startswith("summary for the context window")) == len(summaries)
    # An elided output says where the rest is.
    assert re.search(r"elided: cell \[\d+\], \d+ lines, still in the notebook", _texts(last))
    # FACT-1 reached the last request through the summary alone.
    holders = [m for m in last["messages"] if "FACT-1 = 1007" in json.dumps(m)]
    assert len(holders) == 1 and "Summary of the earlier conversation" in json.dumps(holders[0])


# Each provider's real "too long" body; the fake enforces a small window
# while terp believes a large one, so the first request is refused.
STYLES = [("openai", "openai"), ("azure", "azure"), ("anthropic", "anthropic"),
          ("ollama", "ollama"), ("ollama", "ollama-compat"), ("openai", "llamacpp"),
          ("openai", "vllm")]


@pytest.mark.parametrize("provider,style", STYLES)
def test_refused_as_too_long_compacts_once_then_says_so(provider, style, terp, fake):
    srv = fake({"window": 200, "window_error": style}, analyst(provider))
    f, e = flags(provider, srv)
    r = terp("-p", "Question 1: compute block 1.", "--context-window", "100000", *f,
             extra_env=e)
    assert r.rc == 1, r
    # One retry after compacting, no retry loop (not even for a 500).
    chat = [q for q in srv.requests() if "/api/" not in q["path"]]
    assert len(chat) == 2, [q["tokens"] for q in chat]
    lines = [ln for ln in r.err.splitlines() if "does not fit" in ln]
    assert len(lines) == 1, r.err
    assert lines[0].startswith("terp: the conversation does not fit the model's context window (")
    assert "even after compacting" in lines[0]


def test_refused_request_is_compacted_and_retried(terp, fake):
    """The server's window is smaller than terp believed: the refusal
    makes terp elide the first question's output and ask again."""
    srv = fake({"window": 2600, "window_error": "openai"}, analyst("openai"))
    f, e = flags("openai", srv)
    r = terp("-p", "Question 1: compute block 1.", "-p", "Question 2: compute block 2.",
             "--json", "--context-window", "100000", *f, extra_env=e)
    assert r.rc == 0, r.err[-2000:]
    assert [a["text"] for a in r.of("answer")] == ["The result: FACT-1 = 1007.",
                                                    "The result: FACT-2 = 2007."]
    reqs = srv.requests()
    refused = [q for q in reqs if q["tokens"] > 2600]
    assert len(refused) == 1
    assert any("refused the request as too long" in n["message"] for n in r.of("notice"))
    # The retry right after the refusal went smaller, with cell 1 elided.
    i = reqs.index(refused[0])
    assert reqs[i + 1]["tokens"] <= 2600
    assert "elided: cell [1]" in _texts(reqs[i + 1]["body"])


OLLAMA_APIS = {
    # the model's parameters set num_ctx
    "show": {"show": {"parameters": "num_ctx                        2048\nstop \"<|eot_id|>\"",
                      "model_info": {"llama.context_length": 131072}},
             "ps": {"models": []}},
    # the loaded model's context length, as the server allocated it
    "ps": {"show": {"parameters": "stop \"<|eot_id|>\"",
                    "model_info": {"llama.context_length": 131072}},
           "ps": {"models": [{"name": "other:1b", "model": "other:1b", "context_length": 65536},
                             {"name": "llama3.1:8b", "model": "llama3.1:8b",
                              "context_length": 2048}]}},
}


@pytest.mark.parametrize("api", sorted(OLLAMA_APIS))
def test_ollama_server_context_size_becomes_the_window(api, terp, fake, tmp_path):
    """Ollama says 2048 (the model's num_ctx, or the loaded model's
    context length): terp compacts for 2048, not for the model's 131072,
    and warns when --context-window is larger."""
    srv = fake({"window": 2048, "window_error": "ollama", "ollama_api": OLLAMA_APIS[api]},
               analyst("openai"))
    f, e = flags("ollama", srv)
    args = []
    for k in range(1, 4):
        args += ["-p", "Question %d: compute block %d." % (k, k)]
    r = terp(*args, "--json", *f, extra_env=e)
    assert r.rc == 0, r.err[-2000:]
    chat = [q for q in srv.requests() if q["path"].endswith("/chat/completions")]
    assert max(q["tokens"] for q in chat) <= 2048
    assert [q["body"] for q in srv.requests() if q["path"] == "/api/show"] == [
        {"model": "llama3.1:8b"}]
    # A larger window by hand: terp believes it, and says the server won't.
    r = terp("-p", "Question 1: compute block 1.", "--json", "--context-window", "32768",
             *f, extra_env=e)
    assert any("server's context size" in n["message"] and "2048" in n["message"]
               for n in r.of("notice")), r.of("notice")


def test_tui_status_bar_context_and_compact(fake, tmp_path):
    """The notebook UI: the status bar shows the share of the window in
    use, /context lists what the next request holds with token counts,
    /compact makes room by hand."""
    from tui_tmux import Tmux
    from conftest import TERP
    srv = fake({"window": 6000, "window_error": "openai"}, analyst("openai"))
    env = {"TERM": "tmux-256color", "LANG": "C.UTF-8",
           "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "HOME": str(tmp_path), "OPENAI_API_KEY": KEY}
    cmd = "%s --provider openai --model fake-model --base-url %s --context-window 6000" % (
        TERP, srv.url)
    t = Tmux(cmd, 110, 60, env, cwd=str(tmp_path))
    try:
        t.wait(r"│ ready", timeout=30)
        for k in (1, 2):
            t.text("Question %d: compute block %d." % (k, k))
            t.keys("Enter")
            t.wait(r"The result: FACT-%d = %d007¹?\." % (k, k), timeout=60)
            t.wait(r"│ ready", timeout=30)
        s = t.wait(r"context \d+% of 6\.0k", timeout=30)
        pct = int(re.search(r"context (\d+)% of 6\.0k", s).group(1))
        assert 20 <= pct <= 100, s
        t.text("/context")
        t.keys("Enter")
        s = t.wait(r"/compact makes room now", timeout=30)
        assert re.search(r"Context window: 6000 tokens \(--context-window\)", s), s
        assert re.search(r"system prompt and data description\s+\d+", s), s
        assert re.search(r"question\s+\d+", s), s
        assert re.search(r"cell\s+\[1\]\s+\d+", s), s
        t.text("/compact")
        t.keys("Enter")
        s = t.wait(r"context: older tool outputs elided", timeout=30)
        t.text("/context")
        t.keys("Enter")
        s = t.wait_for(lambda s: re.search(r"cell \(elided\)\s+\[1\]\s+\d+", s), timeout=30)
    finally:
        t.close()


def test_resumed_session_sends_the_recorded_summary(terp, fake, env):
    """The summary is recorded in the notebook and its journal: a resumed
    session sends it again and needs no new summary call to go on."""
    srv = fake({"window": 8192, "window_error": "openai"}, analyst("openai"))
    f, e = flags("openai", srv)
    qs = []
    for k in range(1, 31):
        qs += ["-p", "Question %d: compute block %d." % (k, k)]
    r = terp(*qs, "--json", "--context-window", "8192", *f, extra_env=e, timeout=300)
    assert r.rc == 0, r.err[-2000:]
    sid = r.of("session")[0]["id"]
    lines = [json.loads(ln) for ln in
             (session_dir(env) / "notebook.jsonl").read_text().splitlines()]
    recorded = [ln for ln in lines if ln.get("t") == "summary"]
    assert recorded, "no summary was made: make the session longer"
    text = recorded[-1]["text"]
    assert "FACT-1 = 1007" in text
    before = len(srv.requests())
    r = terp("--resume", sid, "-p", "Recall FACT-1: what was the first result?", "--json",
             "--context-window", "8192", *f, extra_env=e)
    assert r.rc == 0, r.err[-2000:]
    new = srv.requests()[before:]
    assert not [q for q in new if SUMMARY_MARK in json.dumps(q["body"])]
    assert text in _texts(new[0]["body"])
    assert [a["text"] for a in r.of("answer")] == ["FACT-1 = 1007"]
