"""--json events a script relies on (issue 12, item 19): kernel events
only when the state changes (the first start's sequence kept, not the
running state and preload chatter around every cell), and the HTTP
status on the error event of a request that failed for good."""
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tests"))

KEY = "sk-terp-test-0123456789"


def test_kernel_events_only_on_a_change_of_state(terp):
    r = terp("exec", "--json", "-c", "print(1)", "-c", "x = 2", "-c", "print(x)")
    assert r.rc == 0, r.err
    states = [e["state"] for e in r.of("kernel")]
    # the start, then ready (no data and no cell naming a library: nothing
    # to load), then nothing around the cells (their cell and result
    # events say it)
    assert states == ["starting", "ready"], states
    kinds = [e["type"] for e in r.events]
    assert kinds.count("result") == 3, kinds


def test_a_restart_is_still_an_event(terp):
    r = terp("exec", "--json", "-c", "import os; os._exit(3)", "-c", "print(1)")
    assert r.rc == 4, r.err
    msgs = [(e["state"], e["message"]) for e in r.of("kernel")]
    assert ("starting", "the Python process exited with code 3; restarted the "
            "session") in msgs, msgs
    # the new sandbox comes up again: a change, so an event
    i = msgs.index(("starting", "the Python process exited with code 3; restarted "
                    "the session"))
    assert "ready" in [s for s, _ in msgs[i:]], msgs
    assert "running" not in [s for s, _ in msgs], msgs


@pytest.mark.parametrize("status,kind,body", [
    (429, "rate", {"error": {"message": "slow down", "type": "rate_limit_error"}}),
    (500, "server", {"error": {"message": "boom", "type": "server_error"}}),
    (401, "auth", {"error": {"message": "Incorrect API key"}}),
])
def test_the_error_event_carries_the_http_status(terp, fake, status, kind, body):
    srv = fake([{"status": status, "headers": {"retry-after-ms": "10"}, "body": body,
                 "repeat": True}])
    r = terp("-p", "q", "--json", "--max-retries", "1", "--provider", "openai",
             "--base-url", srv.url, extra_env={"OPENAI_API_KEY": KEY})
    assert r.rc == 1, r.err
    [err] = r.of("error")
    assert err["status"] == status, err
    assert err["kind"] == kind, err
