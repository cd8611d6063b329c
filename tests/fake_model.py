#!/usr/bin/env python3
"""fake_model: a scripted fake model server for terp's tests (stdlib only).

Speaks OpenAI Chat Completions (POST .../chat/completions) and Anthropic
Messages (POST .../messages) as Server-Sent Events, plus error modes, on
127.0.0.1. Every request is appended to a JSONL log so that tests can
assert what terp sent.

Command line:
    fake_model.py SCRIPT.json LOG.jsonl
prints the port on the first line of stdout, then serves until killed.
As a module:
    srv = FakeModel(script_dict_or_path, log_path); port = srv.start(); srv.stop()

Script: {"turns": [TURN, ...]}. Request i gets turns[i]; after the last,
a turn with "repeat": true is reused forever, else the answer is a 500
"script exhausted". A TURN has these optional members:

  status     HTTP status (200)
  headers    {"name": "value"} added to the response (e.g. retry-after)
  delay      seconds to wait before answering
  body       a non-SSE body: a JSON value (sent as JSON) or a string
  events     SSE events: each {"event": NAME, "data": VALUE} (data a JSON
             value or a raw string; event optional) or a raw string that
             is written as is (e.g. ": ping\\n\\n")
  openai     shorthand that generates an OpenAI stream:
             {"text": S, "tool_calls": [{"id": S, "name": S (python_exec),
               "code": S | "arguments": RAW | "fragments": [RAW...]}],
              "finish_reason": S, "usage": {...}, "text_split": N,
              "args_split": N, "done": true}
             fragments are sent as given (to split inside an escape);
             otherwise text and arguments are cut every N characters.
  anthropic  shorthand that generates an Anthropic stream:
             {"text": S, "tool_calls": [{"id", "name", "code" | "input" |
               "fragments"}], "stop_reason": S, "usage": {...},
              "thinking": S | [S...] (thinking blocks first, each streamed
              as thinking_delta pieces of "thinking_split" characters,
              then its signature as signature_delta pieces),
              "redacted": [DATA...] (redacted_thinking blocks after them)}
  responses  shorthand that generates an OpenAI Responses API stream
             (typed events with sequence_number, in the documented order):
             {"reasoning": S (a reasoning item first: its summary streamed
               as response.reasoning_summary_text.delta, then its
               encrypted_content in response.output_item.done),
              "text": S, "tool_calls": [{"id": CALL_ID, "code": S}],
              "usage": {...}, "incomplete": REASON, "failed": ERROR}
  chunk_bytes  write the encoded response in pieces of this many bytes
             (splits UTF-8 characters and CRLFs across network reads)
  chunk_delay  seconds between pieces/events (0)
  cut_after  close the connection after this many events (or raw
             pieces), without ending the stream properly
  pause_at   before writing event (or raw piece) number N, wait until
             the file pause_file exists (at most 60 s): a test looks at
             the screen while the reply is half sent
  hang       after the events, keep the connection open this many
             seconds without sending anything (idle-timeout tests)
  expect_path  if set, a request to another path gets a 404
  expect_headers  {"name": "value"}: a request without one of these
             headers, with exactly this value, gets a 401

Script members besides "turns":
  anthropic_thinking  check every Anthropic request as the API does with
                extended thinking (its documentation's rules): with
                "thinking" {"type":"enabled","budget_tokens":N}, N >= 1024
                and N < max_tokens (unless the interleaved-thinking beta
                header came); every thinking block's signature must be
                the one this fake issued for its text, byte for byte, and
                every redacted_thinking block's data one it issued; an
                assistant message with tool_use answered by the last
                user message must start with the thinking blocks issued
                with those tool_use blocks. Else a 400
                invalid_request_error as the API's. "require": a request
                without thinking gets a 400 too.

  responses_check  check every Responses API request as OpenAI does with
                store: false: store must be false; a reasoning item must
                carry the encrypted_content this fake issued for its id,
                byte for byte (else 400 invalid_encrypted_content; none
                at all: the "not persisted" 400); a function_call issued
                with a reasoning item must come after that item (else the
                API's "provided without its required 'reasoning' item"
                400); a function_call_output needs its function_call;
                "require": include must name reasoning.encrypted_content.

Script members for the context-window tests:
  window        enforce a context window of this many tokens: a request
                counted larger gets the provider's real error body below
                (and the scripted turn is not consumed)
  ollama_api    {"show": BODY, "ps": BODY}: Ollama's own /api/show and
                /api/ps answers (terp asks them at start for the server's
                context size). Without it those paths get a 404. Either
                way they consume no turn, and they are logged only with it.
  window_error  whose body: "openai" (the default), "azure", "anthropic",
                "ollama", "ollama-compat" (a 500), "llamacpp", "vllm"
Tokens are counted as request_tokens() does: the UTF-8 bytes of every
string in the messages, the system prompt and the tools, / 3.2.
As a module, FakeModel(..., respond=f) answers request n with the turn
f(n, path, body) instead of the script (a conversation that depends on
what was sent).

Log lines: {"n": i, "path": P, "headers": {...}, "body": JSON-or-text,
"tokens": T}.
"""
import json
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _split(s, n):
    if not n or n <= 0:
        return [s]
    return [s[i:i + n] for i in range(0, len(s), n)] or [""]


def openai_events(spec):
    """The SSE events of an OpenAI stream described by spec."""
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk",
            "created": 1, "model": "fake"}

    def chunk(delta, finish=None):
        c = dict(base)
        c["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
        return {"data": c}

    ev = [chunk({"role": "assistant", "content": None})]
    for piece in _split(spec.get("text", ""), spec.get("text_split", 0)):
        if piece:
            ev.append(chunk({"content": piece}))
    for i, tc in enumerate(spec.get("tool_calls", [])):
        name = tc.get("name", "python_exec")
        if "fragments" in tc:
            frags = tc["fragments"]
        else:
            raw = tc["arguments"] if "arguments" in tc else json.dumps({"code": tc.get("code", "")}, ensure_ascii=False)
            frags = _split(raw, spec.get("args_split", 0))
        head = {"index": i, "id": tc.get("id", "call_%d" % i), "type": "function",
                "function": {"name": name, "arguments": ""}}
        if spec.get("whole_calls"):
            head["function"]["arguments"] = "".join(frags)
            if spec.get("no_index"):
                del head["index"]
            ev.append(chunk({"tool_calls": [head]}))
            continue
        ev.append(chunk({"tool_calls": [head]}))
        for f in frags:
            ev.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": f}}]}))
    finish = spec.get("finish_reason") or ("tool_calls" if spec.get("tool_calls") else "stop")
    ev.append(chunk({}, finish))
    usage = spec.get("usage", {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})
    if usage is not None:
        u = dict(base)
        u["choices"] = []
        u["usage"] = usage
        ev.append({"data": u})
    if spec.get("done", True):
        ev.append({"data": "[DONE]"})
    return ev


SIGN_KEY = b"fake-anthropic-signing-key"


def thinking_signature(text):
    """The signature this fake issues for a thinking block's text: an
    opaque base64 string, as the API's, that only the text it was made
    for matches."""
    import base64
    import hashlib
    import hmac
    mac = hmac.new(SIGN_KEY, text.encode(), hashlib.sha256).digest()
    return base64.b64encode(b"EqQB" + mac + mac[:16]).decode()


def redacted_data(n):
    import base64
    import hashlib
    return base64.b64encode(hashlib.sha256(b"redacted%d" % n).digest() * 3).decode()


def anthropic_events(spec):
    """The SSE events of an Anthropic Messages stream described by spec."""
    def e(name, data):
        data = dict(data)
        data["type"] = name
        return {"event": name, "data": data}

    usage = spec.get("usage", {"input_tokens": 10, "output_tokens": 1})
    ev = [e("message_start", {"message": {"id": "msg_fake", "type": "message", "role": "assistant",
                                          "model": "fake", "content": [], "stop_reason": None,
                                          "usage": usage}})]
    idx = 0
    thinking = spec.get("thinking", [])
    if isinstance(thinking, str):
        thinking = [thinking]
    for t in thinking:
        ev.append(e("content_block_start", {"index": idx, "content_block": {
            "type": "thinking", "thinking": "", "signature": ""}}))
        for piece in _split(t, spec.get("thinking_split", 7)):
            ev.append(e("content_block_delta", {"index": idx, "delta": {
                "type": "thinking_delta", "thinking": piece}}))
        sig = thinking_signature(t)
        for piece in _split(sig, 40):
            ev.append(e("content_block_delta", {"index": idx, "delta": {
                "type": "signature_delta", "signature": piece}}))
        ev.append(e("content_block_stop", {"index": idx}))
        idx += 1
    for data in spec.get("redacted", []):
        ev.append(e("content_block_start", {"index": idx, "content_block": {
            "type": "redacted_thinking", "data": data}}))
        ev.append(e("content_block_stop", {"index": idx}))
        idx += 1
    if spec.get("text"):
        ev.append(e("content_block_start", {"index": idx, "content_block": {"type": "text", "text": ""}}))
        ev.append(e("ping", {}))
        for piece in _split(spec["text"], spec.get("text_split", 0)):
            ev.append(e("content_block_delta", {"index": idx, "delta": {"type": "text_delta", "text": piece}}))
        ev.append(e("content_block_stop", {"index": idx}))
        idx += 1
    for i, tc in enumerate(spec.get("tool_calls", [])):
        ev.append(e("content_block_start", {"index": idx, "content_block": {
            "type": "tool_use", "id": tc.get("id", "toolu_%d" % i),
            "name": tc.get("name", "python_exec"), "input": {}}}))
        if "fragments" in tc:
            frags = tc["fragments"]
        else:
            raw = json.dumps(tc["input"], ensure_ascii=False) if "input" in tc else json.dumps({"code": tc.get("code", "")}, ensure_ascii=False)
            frags = [""] + _split(raw, spec.get("args_split", 0))
        for f in frags:
            ev.append(e("content_block_delta", {"index": idx, "delta": {"type": "input_json_delta",
                                                                         "partial_json": f}}))
        ev.append(e("content_block_stop", {"index": idx}))
        idx += 1
    stop = spec.get("stop_reason") or ("tool_use" if spec.get("tool_calls") else "end_turn")
    ev.append(e("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None},
                                  "usage": {"output_tokens": 42}}))
    ev.append(e("message_stop", {}))
    return ev


def encrypted_for(rid, summary):
    import base64
    import hashlib
    import hmac
    mac = hmac.new(SIGN_KEY, (rid + "\0" + summary).encode(), hashlib.sha256).digest()
    return "gAAAAAB" + base64.urlsafe_b64encode(mac * 4).decode()


def responses_events(spec, n):
    """The SSE events of a Responses API stream described by spec (n:
    the request's number, for unique ids)."""
    seq = [0]
    ev = []

    def e(name, data):
        data = dict(data)
        data["type"] = name
        data["sequence_number"] = seq[0]
        seq[0] += 1
        ev.append({"event": name, "data": data})

    rid = "resp_fake%d" % n
    base = {"id": rid, "object": "response", "created_at": 1, "model": "fake",
            "status": "in_progress", "output": [], "error": None, "incomplete_details": None,
            "store": False}
    e("response.created", {"response": base})
    e("response.in_progress", {"response": base})
    out = []
    idx = 0
    if "reasoning" in spec:
        iid = "rs_%d_%d" % (n, idx)
        summary = spec["reasoning"]
        e("response.output_item.added", {"output_index": idx, "item": {
            "id": iid, "type": "reasoning", "summary": []}})
        e("response.reasoning_summary_part.added", {"item_id": iid, "output_index": idx,
                                                     "summary_index": 0,
                                                     "part": {"type": "summary_text", "text": ""}})
        for piece in _split(summary, 6):
            e("response.reasoning_summary_text.delta", {"item_id": iid, "output_index": idx,
                                                         "summary_index": 0, "delta": piece})
        e("response.reasoning_summary_text.done", {"item_id": iid, "output_index": idx,
                                                    "summary_index": 0, "text": summary})
        e("response.reasoning_summary_part.done", {"item_id": iid, "output_index": idx,
                                                    "summary_index": 0,
                                                    "part": {"type": "summary_text", "text": summary}})
        item = {"id": iid, "type": "reasoning",
                "summary": [{"type": "summary_text", "text": summary}],
                "encrypted_content": encrypted_for(iid, summary)}
        e("response.output_item.done", {"output_index": idx, "item": item})
        out.append(item)
        idx += 1
    if spec.get("text"):
        iid = "msg_%d_%d" % (n, idx)
        e("response.output_item.added", {"output_index": idx, "item": {
            "id": iid, "type": "message", "status": "in_progress", "role": "assistant",
            "content": []}})
        e("response.content_part.added", {"item_id": iid, "output_index": idx, "content_index": 0,
                                           "part": {"type": "output_text", "annotations": [],
                                                    "text": ""}})
        for piece in _split(spec["text"], spec.get("text_split", 5)):
            e("response.output_text.delta", {"item_id": iid, "output_index": idx,
                                              "content_index": 0, "delta": piece})
        e("response.output_text.done", {"item_id": iid, "output_index": idx, "content_index": 0,
                                         "text": spec["text"]})
        part = {"type": "output_text", "annotations": [], "text": spec["text"]}
        e("response.content_part.done", {"item_id": iid, "output_index": idx,
                                          "content_index": 0, "part": part})
        item = {"id": iid, "type": "message", "status": "completed", "role": "assistant",
                "content": [part]}
        e("response.output_item.done", {"output_index": idx, "item": item})
        out.append(item)
        idx += 1
    for i, tc in enumerate(spec.get("tool_calls", [])):
        iid = "fc_%d_%d" % (n, idx)
        args = json.dumps({"code": tc.get("code", "")}, ensure_ascii=False)
        head = {"id": iid, "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": tc.get("id", "call_%d" % i), "name": tc.get("name", "python_exec")}
        e("response.output_item.added", {"output_index": idx, "item": head})
        for piece in _split(args, 9):
            e("response.function_call_arguments.delta", {"item_id": iid, "output_index": idx,
                                                          "delta": piece})
        e("response.function_call_arguments.done", {"item_id": iid, "output_index": idx,
                                                     "arguments": args})
        item = dict(head, status="completed", arguments=args)
        e("response.output_item.done", {"output_index": idx, "item": item})
        out.append(item)
        idx += 1
    usage = spec.get("usage", {"input_tokens": 30, "input_tokens_details": {"cached_tokens": 0},
                               "output_tokens": 20,
                               "output_tokens_details": {"reasoning_tokens": 12},
                               "total_tokens": 50})
    final = dict(base, output=out, usage=usage)
    if spec.get("failed"):
        e("response.failed", {"response": dict(final, status="failed", error=spec["failed"])})
    elif spec.get("incomplete"):
        e("response.incomplete", {"response": dict(final, status="incomplete",
                                                   incomplete_details={"reason": spec["incomplete"]})})
    else:
        e("response.completed", {"response": dict(final, status="completed")})
    return ev


def _oai_bad(msg, code=None, param=None):
    return 400, {"error": {"message": msg, "type": "invalid_request_error", "param": param,
                           "code": code}}


def responses_error(body, issued, need_reason, require):
    """(status, body) of OpenAI's refusal of a Responses request, or None.
    issued: reasoning item id -> encrypted_content; need_reason: call_id
    -> the reasoning item id it came with."""
    if not isinstance(body, dict):
        return None
    if "messages" in body:
        return _oai_bad("Unsupported parameter: 'messages'. In the Responses API, this "
                        "parameter has moved to 'input'.", "unsupported_parameter", "messages")
    if body.get("store") is not False:
        return _oai_bad("fake_model: this script wants store: false", None, "store")
    if require and "reasoning.encrypted_content" not in (body.get("include") or []):
        return _oai_bad("fake_model: include must name reasoning.encrypted_content",
                        None, "include")
    seen_reason = set()
    calls = set()
    for i, it in enumerate(body.get("input", [])):
        t = it.get("type")
        if t == "reasoning":
            rid = it.get("id")
            if "encrypted_content" not in it:
                return 404, {"error": {"message": "Item with id '%s' not found. Items are not "
                                       "persisted when `store` is set to false. Try again with "
                                       "`store` set to true, or remove this item from your "
                                       "input." % rid, "type": "invalid_request_error",
                                       "param": "input", "code": None}}
            if issued.get(rid) != it.get("encrypted_content"):
                return _oai_bad("The encrypted content for item %s could not be verified."
                                % rid, "invalid_encrypted_content", "input[%d]" % i)
            seen_reason.add(rid)
        elif t == "function_call":
            cid = it.get("call_id")
            want = need_reason.get(cid)
            if want is not None and want not in seen_reason:
                return _oai_bad("Item '%s' of type 'function_call' was provided without its "
                                "required 'reasoning' item: '%s'." % (it.get("id", cid), want),
                                None, "input")
            calls.add(cid)
        elif t == "function_call_output":
            if it.get("call_id") not in calls:
                return _oai_bad("No tool call found for function call output with call_id %s."
                                % it.get("call_id"), None, "input")
    return None


def _bad(msg):
    return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": msg},
                 "request_id": "req_fake"}


def anthropic_thinking_error(body, headers, issued, redacted, require):
    """(status, body) of the API's refusal of a request that breaks the
    extended-thinking rules, or None. issued: tool_use id -> the thinking
    blocks streamed with it; redacted: the data strings issued."""
    if not isinstance(body, dict):
        return None
    th = body.get("thinking")
    if th is None or th.get("type") != "enabled":
        if require:
            return _bad("fake_model: this script needs thinking enabled")
        return None
    budget = th.get("budget_tokens")
    if not isinstance(budget, int) or budget < 1024:
        return _bad("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
    interleaved = "interleaved-thinking-2025-05-14" in headers.get("anthropic-beta", "")
    if not interleaved and budget >= body.get("max_tokens", 0):
        return _bad("`max_tokens` must be greater than `thinking.budget_tokens`")
    msgs = body.get("messages", [])
    for i, m in enumerate(msgs):
        content = m.get("content")
        if not isinstance(content, list):
            continue
        for j, b in enumerate(content):
            if b.get("type") == "thinking":
                if m.get("role") != "assistant":
                    return _bad("messages.%d.content.%d: thinking blocks are only allowed "
                                "in assistant messages" % (i, j))
                if b.get("signature") != thinking_signature(b.get("thinking", "")):
                    return _bad("messages.%d.content.%d: Invalid `signature` in `thinking` block"
                                % (i, j))
                if set(b) - {"type", "thinking", "signature", "cache_control"}:
                    return _bad("messages.%d.content.%d: Extra inputs are not permitted" % (i, j))
            elif b.get("type") == "redacted_thinking":
                if b.get("data") not in redacted:
                    return _bad("messages.%d.content.%d: Invalid `data` in `redacted_thinking` "
                                "block" % (i, j))
    # The lastmost tool_use / tool_result pair: its assistant message must
    # start with the thinking blocks issued with those tool_use blocks.
    if len(msgs) >= 2 and isinstance(msgs[-1].get("content"), list) and any(
            b.get("type") == "tool_result" for b in msgs[-1]["content"]):
        a = msgs[-2]
        content = a.get("content") if isinstance(a.get("content"), list) else []
        ids = [b.get("id") for b in content if b.get("type") == "tool_use"]
        want = []
        for tid in ids:
            for blk in issued.get(tid, []):
                if blk not in want:
                    want.append(blk)
        first = content[0].get("type") if content else "text"
        if first not in ("thinking", "redacted_thinking"):
            return _bad("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, "
                        "but found `%s`. When `thinking` is enabled, a final `assistant` message "
                        "must start with a thinking block (preceeding the lastmost set of "
                        "`tool_use` and `tool_result` blocks). We recommend you include thinking "
                        "blocks from previous turns. To avoid this requirement, disable "
                        "`thinking`." % (len(msgs) - 2, first))
        got = [{k: v for k, v in b.items() if k != "cache_control"} for b in content
               if b.get("type") in ("thinking", "redacted_thinking")]
        if want and got[:len(want)] != want:
            return _bad("messages.%d.content: the thinking blocks of this turn were changed; "
                        "they must be passed back unmodified" % (len(msgs) - 2))
    return None


def _strings(v):
    if isinstance(v, str):
        yield v
    elif isinstance(v, dict):
        for x in v.values():
            yield from _strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from _strings(x)


def request_tokens(body):
    """The fake's count of a request body's input tokens."""
    if not isinstance(body, dict):
        return 0
    n = sum(len(s.encode()) for k in ("messages", "system", "tools")
            for s in _strings(body.get(k)))
    return int(n / 3.2) + 1


def window_error(style, window, tokens):
    """(status, body) a real server of this style answers a request of
    tokens tokens to a model whose window is window."""
    if style in ("openai", "azure"):
        return 400, {"error": {
            "message": "This model's maximum context length is %d tokens. However, your "
                       "messages resulted in %d tokens. Please reduce the length of the "
                       "messages." % (window, tokens),
            "type": "invalid_request_error", "param": "messages",
            "code": "context_length_exceeded"}}
    if style == "anthropic":
        return 400, {"type": "error", "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: %d tokens > %d maximum" % (tokens, window)},
            "request_id": "req_fake"}
    if style == "ollama":
        return 400, {"error": "the input length exceeds the context length"}
    if style == "ollama-compat":
        # the same through the OpenAI-compatible layer, which makes any
        # runner error a 500 api_error
        return 500, {"error": {"message": "the input length exceeds the context length",
                               "type": "api_error", "param": None, "code": None}}
    if style == "llamacpp":
        return 400, {"error": {
            "code": 400, "message": "request (%d tokens) exceeds the available context "
                                    "size (%d tokens), try increasing it" % (tokens, window),
            "type": "exceed_context_size_error", "n_prompt_tokens": tokens, "n_ctx": window}}
    if style == "vllm":
        return 400, {"object": "error",
                     "message": "This model's maximum context length is %d tokens. However, "
                                "you requested %d tokens (%d in the messages, 0 in the "
                                "completion). Please reduce the length of the messages or "
                                "completion." % (window, tokens, tokens),
                     "type": "BadRequestError", "param": None, "code": 400}
    raise ValueError(style)


def encode_event(ev):
    if isinstance(ev, str):
        return ev.encode()
    out = ""
    if ev.get("event"):
        out += "event: %s\n" % ev["event"]
    data = ev.get("data", "")
    if not isinstance(data, str):
        data = json.dumps(data, ensure_ascii=False)
    for line in data.split("\n"):
        out += "data: %s\n" % line
    return (out + "\n").encode()


class FakeModel:
    def __init__(self, script, log_path, respond=None):
        if isinstance(script, (str, os.PathLike)):
            with open(script) as f:
                script = json.load(f)
        self.turns = script.get("turns", [])
        self.window = script.get("window")
        self.ollama_api = script.get("ollama_api")
        self.window_style = script.get("window_error", "openai")
        self.thinking_check = script.get("anthropic_thinking")
        self.responses_check = script.get("responses_check")
        self.enc_issued = {}     # reasoning item id -> encrypted_content
        self.need_reason = {}    # call_id -> the reasoning item it came with
        self.issued = {}        # tool_use id -> thinking blocks streamed with it
        self.redacted = set()
        self.respond = respond
        self.served = 0
        self.log_path = log_path
        self.count = 0
        self.lock = threading.Lock()
        self.httpd = None

    def next_turn(self, path, headers, body):
        if path.startswith("/api/"):
            api = self.ollama_api
            if api is not None:
                with self.lock, open(self.log_path, "a") as f:
                    f.write(json.dumps({"n": None, "path": path, "headers": headers,
                                        "body": json.loads(body) if body else None,
                                        "tokens": 0}) + "\n")
            name = path[len("/api/"):]
            if api is not None and name in api:
                return {"body": api[name]}
            return {"status": 404, "body": {"error": "404 page not found"}}
        with self.lock:
            n = self.count
            self.count += 1
            try:
                parsed = json.loads(body)
            except ValueError:
                parsed = body.decode("utf-8", "replace")
            tokens = request_tokens(parsed)
            with open(self.log_path, "a") as f:
                f.write(json.dumps({"n": n, "path": path, "headers": headers, "body": parsed,
                                    "tokens": tokens}) + "\n")
            if self.window and tokens > self.window:
                status, b = window_error(self.window_style, self.window, tokens)
                return {"status": status, "body": b}
            if self.thinking_check and path.endswith("/messages"):
                bad = anthropic_thinking_error(
                    parsed, headers, self.issued, self.redacted,
                    isinstance(self.thinking_check, dict) and self.thinking_check.get("require"))
                if bad is not None:
                    return {"status": bad[0], "body": bad[1]}
            if self.responses_check and path.endswith("/responses"):
                bad = responses_error(
                    parsed, self.enc_issued, self.need_reason,
                    isinstance(self.responses_check, dict) and self.responses_check.get("require"))
                if bad is not None:
                    return {"status": bad[0], "body": bad[1]}
            n = self.served
            self.served += 1
        if self.respond is not None:
            return self.note_issued(self.respond(n, path, parsed))
        if n < len(self.turns):
            return self.note_issued(self.turns[n])
        if self.turns and self.turns[-1].get("repeat"):
            return self.note_issued(self.turns[-1])
        return {"status": 500, "body": {"error": {"message": "fake_model: script exhausted",
                                                  "type": "server_error"}}}

    def note_issued(self, turn):
        """Remembers the thinking blocks an Anthropic turn streams with
        its tool_use blocks (what must come back unchanged), and the
        encrypted reasoning a Responses turn streams with its calls."""
        if isinstance(turn, dict) and "responses" in turn:
            with self.lock:
                n = self.count - 1
                turn = dict(turn)
                turn["_events"] = responses_events(turn["responses"], n)
                for ev in turn["_events"]:
                    d = ev["data"]
                    if d["type"] == "response.output_item.done" and d["item"]["type"] == "reasoning":
                        rid = d["item"]["id"]
                        self.enc_issued[rid] = d["item"]["encrypted_content"]
                        for tc_i, tc in enumerate(turn["responses"].get("tool_calls", [])):
                            self.need_reason[tc.get("id", "call_%d" % tc_i)] = rid
            return turn
        spec = turn.get("anthropic") if isinstance(turn, dict) else None
        if spec is None:
            return turn
        thinking = spec.get("thinking", [])
        if isinstance(thinking, str):
            thinking = [thinking]
        blocks = [{"type": "thinking", "thinking": t, "signature": thinking_signature(t)}
                  for t in thinking]
        blocks += [{"type": "redacted_thinking", "data": d} for d in spec.get("redacted", [])]
        with self.lock:
            self.redacted.update(spec.get("redacted", []))
            for i, tc in enumerate(spec.get("tool_calls", [])):
                self.issued[tc.get("id", "toolu_%d" % i)] = blocks
        return turn

    def start(self):
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(n)
                hdrs = {k.lower(): v for k, v in self.headers.items()}
                turn = model.next_turn(self.path, hdrs, body)
                try:
                    self.answer(turn)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST    # a local server's model information (/api/ps)

            def answer(self, turn):
                if turn.get("delay"):
                    time.sleep(turn["delay"])
                if turn.get("expect_path") and turn["expect_path"] != self.path:
                    turn = {"status": 404, "body": {"error": {"message": "no such path " + self.path}}}
                for k, v in turn.get("expect_headers", {}).items():
                    if self.headers.get(k) != v:
                        turn = {"status": 401, "body": {"error": {"message": "bad or missing " + k}}}
                        break
                status = turn.get("status", 200)
                if "body" in turn:
                    b = turn["body"]
                    ctype = "application/json"
                    if isinstance(b, str):
                        data, ctype = b.encode(), "text/plain"
                    else:
                        data = json.dumps(b).encode()
                    self.send_response(status)
                    self.send_header("content-type", ctype)
                    self.send_header("content-length", str(len(data)))
                    for k, v in turn.get("headers", {}).items():
                        self.send_header(k, str(v))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if "openai" in turn:
                    events = openai_events(turn["openai"])
                elif "anthropic" in turn:
                    events = anthropic_events(turn["anthropic"])
                elif "_events" in turn:
                    events = turn["_events"]
                else:
                    events = turn.get("events", [])
                self.send_response(status)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                cut = turn.get("cut_after")
                # A cut stream closes without the chunked terminator.
                self.send_header("transfer-encoding", "chunked")
                for k, v in turn.get("headers", {}).items():
                    self.send_header(k, str(v))
                self.end_headers()
                pieces = [encode_event(e) for e in events]
                if cut is not None:
                    pieces = pieces[:cut]
                cb = turn.get("chunk_bytes")
                if cb:
                    blob = b"".join(pieces)
                    pieces = [blob[i:i + cb] for i in range(0, len(blob), cb)]
                for i, p in enumerate(pieces):
                    if turn.get("pause_at") == i:
                        end = time.time() + 60
                        while not os.path.exists(turn["pause_file"]) and time.time() < end:
                            time.sleep(0.02)
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(p), p))
                    self.wfile.flush()
                    if turn.get("chunk_delay"):
                        time.sleep(turn["chunk_delay"])
                if turn.get("hang"):
                    time.sleep(turn["hang"])
                if cut is not None:
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.httpd = Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self.httpd.server_address[1]

    def stop(self):
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()


def read_log(path):
    """The requests recorded so far, as a list of dicts."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: fake_model.py SCRIPT.json LOG.jsonl\n")
        return 2
    srv = FakeModel(argv[1], argv[2])
    port = srv.start()
    sys.stdout.write("%d\n" % port)
    sys.stdout.flush()
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
