"""fake_analyst: a fake model for long sessions (tests/fake_model.py's
respond hook), used by tests/integration/test_context.py and
bench/context.py. Question k ("Question k: ...") -> one cell printing
FACT-k and 4 KB of rows -> an answer repeating the fact. A summary
request (terp's context compaction) -> every FACT line it was shown.
"Recall FACT-k" -> the fact, from wherever in the request it still is.
Usage is reported as fake_model counts the request."""
import json
import re

from fake_model import request_tokens

SUMMARY_MARK = "You compress a data-analysis conversation"


def _texts(body):
    """The request's text: system prompt and messages, as one string."""
    return json.dumps(body.get("system", "")) + json.dumps(body.get("messages", []))


def _last(body):
    return body["messages"][-1]


def _reply(provider, body, text=None, calls=None):
    usage_in = request_tokens(body)
    if provider == "anthropic":
        spec = {"usage": {"input_tokens": usage_in, "output_tokens": 20}}
    else:
        spec = {"usage": {"prompt_tokens": usage_in, "completion_tokens": 20,
                          "total_tokens": usage_in + 20}}
    if text is not None:
        spec["text"] = text
    if calls:
        spec["tool_calls"] = calls
    return {"anthropic" if provider == "anthropic" else "openai": spec}


def analyst(provider):
    """A fake analyst: question k -> one cell printing FACT-k and 4 KB of
    rows -> an answer repeating the fact. A summary request -> every
    FACT line it was shown. "Recall FACT-k" -> the fact, from wherever
    in the request it still is."""
    def respond(n, path, body):
        if "/api/" in path:     # Ollama's model information: none here
            return {"status": 404, "body": {"error": "not found"}}
        if SUMMARY_MARK in json.dumps(body.get("system", "")) + json.dumps(
                body["messages"][0] if body.get("messages") else ""):
            facts = sorted(set(re.findall(r"FACT-\d+ = \d+", _texts(body))),
                           key=lambda f: int(f.split("-")[1].split()[0]))
            return _reply(provider, body, text="Facts established so far: " + "; ".join(facts))
        last = _last(body)
        content = last.get("content")
        if isinstance(content, list):       # anthropic blocks
            kinds = {b.get("type") for b in content if isinstance(b, dict)}
            is_result = "tool_result" in kinds
            text = json.dumps(content)
        else:
            is_result = last.get("role") == "tool"
            text = content or ""
        if is_result:
            m = re.findall(r"FACT-\d+ = \d+", text)
            return _reply(provider, body, text="The result: %s." % m[-1])
        m = re.search(r"Recall FACT-(\d+)", text)
        if m:
            f = re.search(r"FACT-%s = \d+" % m.group(1), _texts(body))
            return _reply(provider, body, text=f.group(0) if f else "I do not know.")
        k = int(re.findall(r"Question (\d+):", text)[-1])
        code = ("print('FACT-%d = %d')\n"
                "for i in range(100):\n"
                "    print('row %%03d %%12.4f %%8d north' %% (i, i * 1.25, i * %d))" % (k, 1000 * k + 7, k))
        return _reply(provider, body, calls=[{"id": "call_q%d" % k, "code": code}])
    return respond
