"""First contact on the command line (issue 12, items 14, 15 and 18): a
mistake is one line that names the fix, the session commands say what
they did, and a run that did nothing leaves no session behind."""
import os
import pty
import re
import subprocess
import sys

import pytest

from conftest import ROOT, TERP, free_port
from tui_tmux import Tmux

sys.path.insert(0, str(ROOT / "tests"))

SALES = str(ROOT / "examples" / "sales.csv")
KEY = "sk-terp-test-0123456789"


def sessions(env):
    d = os.path.join(env["XDG_STATE_HOME"], "terp", "sessions")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def one_line(r):
    lines = r.err.splitlines()
    assert len(lines) == 1, r
    assert r.out == "", r
    return lines[0]


# ---------------------------------------------------------------- item 15: usage

@pytest.mark.parametrize("args, says", [
    (["--bogus"], "terp: unknown option --bogus (try terp --help)"),
    (["--bogus=3", SALES], "terp: unknown option --bogus (try terp --help)"),
    (["-x"], "terp: unknown option -x (try terp --help)"),
    (["--model"], "terp: --model needs a value (try terp --help)"),
    (["--list=all"], "terp: --list takes no value (try terp --help)"),
    (["exec", "--nope", "-c", "1"], "terp: unknown option --nope (try terp --help)"),
])
def test_a_bad_flag_is_one_line_not_the_help(terp, args, says):
    r = terp(*args)
    assert r.rc == 2, r
    assert one_line(r) == says


def test_a_question_without_p_suggests_it(terp, env):
    r = terp("what month sold most?", SALES)
    assert r.rc == 2, r
    assert one_line(r) == ("terp: there is no file 'what month sold most?'; did you mean "
                           "`terp -p \"what month sold most?\" %s`?" % SALES)
    r = terp("plot revenue per channel", "--provider", "demo")
    assert r.rc == 2 and "did you mean `terp -p \"plot revenue per channel\"`?" in one_line(r)
    # with -p already: a follow-up is another -p
    r = terp("-p", "q", "--provider", "demo", "and per month?", SALES)
    assert r.rc == 2 and one_line(r) == ("terp: there is no file 'and per month?'; did you "
                                         "mean another question: `-p \"and per month?\"`?")
    assert sessions(env) == []


def test_an_existing_file_named_like_a_question_is_a_file(terp, tmp_path):
    odd = tmp_path / "what is it?"
    odd.write_text("a\n1\n")
    r = terp("exec", "-c", "import os; print(len(os.listdir('/workspace/data')))", odd)
    assert r.rc == 0 and r.out == "1\n", r
    assert "did you mean" not in r.err


def test_a_fifo_and_a_missing_file_exit_alike(terp, tmp_path):
    # (a folder was refused the same way; since issue 25 item 13 it is
    # staged as a folder: test_data_folder.py)
    os.mkfifo(tmp_path / "apipe")
    for mode in ([], ["-p", "q", "--provider", "demo"], ["exec", "-c", "1"]):
        fifo = terp(*mode, tmp_path / "apipe")
        missing = terp(*mode, tmp_path / "nosuch.csv")
        assert fifo.rc == missing.rc == 2, (fifo, missing)
        assert "FIFO" in one_line(fifo)
        assert one_line(missing) == ("terp: cannot read data file %s: No such file or "
                                     "directory" % (tmp_path / "nosuch.csv"))


# ---------------------------------------------------------------- item 14: sessions

def made(terp, env, code="print(1)"):
    """Runs one cell in a new session; returns the session's id."""
    before = set(sessions(env))
    r = terp("exec", "-c", code)
    assert r.rc == 0, r
    [sid] = set(sessions(env)) - before
    return sid


def test_resume_names_a_mistyped_session_and_its_neighbours(terp, env):
    sid = made(terp, env)
    typo = sid[:-2] + ("zz" if not sid.endswith("zz") else "yy")
    r = terp("exec", "--resume", typo, "-c", "1")
    assert r.rc == 1, r
    assert one_line(r) == ("terp: no session %s; did you mean %s? (terp --list shows them)"
                           % (typo, sid))
    # the notebook, -p and exec alike: never "cannot read data file"
    for mode in ([], ["-p", "q", "--provider", "demo"]):
        r = terp(*mode, "--resume", typo)
        assert r.rc == 1 and "no session %s" % typo in r.err and "data file" not in r.err, r


def test_resume_takes_a_unique_prefix_and_names_an_ambiguous_one(terp, env):
    a = made(terp, env, "x = 1")
    b = made(terp, env, "x = 2")
    assert a != b
    # the shortest prefix that tells them apart
    n = next(i for i in range(1, len(a)) if a[:i] != b[:i])
    r = terp("exec", "--resume", a[:n], "-c", "print(x)")
    assert r.rc == 1, r         # a new sandbox: x is gone, the session is a's
    assert "terp: resuming session %s (1 cell, 0 questions)" % a in r.err
    common = a[:n - 1]
    r = terp("exec", "--resume", common, "-c", "1")
    assert r.rc == 1, r
    line = one_line(r)
    assert line.startswith("terp: session id %s is ambiguous: " % common), line
    assert a in line and b in line


def test_export_and_delete_say_what_they_did(terp, env, tmp_path):
    sid = made(terp, env, "print(6 * 7)")
    out = tmp_path / "s.ipynb"
    r = terp("--export", sid[:-1], out)        # a unique prefix reads it
    assert r.rc == 0, r
    assert r.err == "terp: wrote %s (session %s: 1 cell, 0 questions)\n" % (out, sid)
    assert out.exists() and r.out == ""
    # a prefix is not enough to delete
    r = terp("--delete", sid[:-1])
    assert r.rc == 1 and "did you mean %s?" % sid in r.err, r
    assert sessions(env) == [sid]
    r = terp("--delete", sid)
    assert r.rc == 0, r
    assert r.err == "terp: deleted session %s\n" % sid and r.out == ""
    assert sessions(env) == []
    r = terp("--delete", sid)
    assert r.rc == 1 and one_line(r).startswith("terp: no session %s" % sid), r


def test_headless_says_how_to_resume_on_a_terminal_only(env, tmp_path):
    """-p's stdout is the answer alone; on a terminal, stderr's last line
    says how to come back to the session (a script's stderr does not get
    it)."""
    args = [str(TERP), "-p", "q", "--provider", "demo", SALES]
    master, slave = pty.openpty()
    try:
        p = subprocess.run(args, stdout=subprocess.PIPE, stderr=slave, env=env,
                           cwd=tmp_path, timeout=120, stdin=subprocess.DEVNULL)
        os.close(slave)
        slave = -1
        err = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:         # EIO: the terminal's other end is closed
                break
            if not chunk:
                break
            err += chunk
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    assert p.returncode == 0, err
    [sid] = sessions(env)
    assert err.decode().splitlines()[-1] == \
        "session %s \u00b7 terp --resume %s to continue" % (sid, sid)
    assert b"resume" not in p.stdout
    r = subprocess.run(args, capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=120)
    assert r.returncode == 0 and "--resume" not in r.stderr + r.stdout, r


# ---------------------------------------------------------------- item 15: the model's errors

@pytest.mark.parametrize("provider, how, var", [
    ("openai", "flag", "OPENAI_BASE_URL"),
    ("openai", "env", "OPENAI_BASE_URL"),
    ("anthropic", "env", "ANTHROPIC_BASE_URL"),
    ("ollama", "config", "base_url in the config"),
])
def test_an_unreachable_server_is_one_line_naming_the_fix(terp, env, provider, how, var):
    url = "http://127.0.0.1:%d" % free_port()
    extra = {"OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY}
    args = ["-p", "q", "--provider", provider]
    if how == "flag":
        args += ["--base-url", url + "/v1"]
        origin = "--base-url"
    elif how == "env":
        extra[var] = url + ("/v1" if provider == "openai" else "")
        origin = var
    else:
        cfg = os.path.join(env["XDG_CONFIG_HOME"], "terp", "config")
        os.makedirs(os.path.dirname(cfg))
        with open(cfg, "w") as f:
            f.write("base_url = %s/v1\n" % url)
        origin = "base_url in " + cfg
    r = terp(*args, extra_env=extra)
    assert r.rc == 1, r
    line = one_line(r)              # no retry notices: one line, at once
    assert line.startswith("terp: cannot reach %s/" % url), line
    server = "ollama server" if provider == "ollama" else "server"
    assert line.endswith("(gave up after 1 retry); is the %s running? check --base-url / %s "
                         "(this URL is from %s)" % (server, var, origin)), line
    assert sessions(env) == []      # and nothing to keep


def test_the_json_stream_has_no_retry_notices_for_a_refused_connection(terp):
    r = terp("-p", "q", "--json", "--provider", "openai", "--base-url",
             "http://127.0.0.1:%d/v1" % free_port(), extra_env={"OPENAI_API_KEY": KEY})
    assert r.rc == 1, r
    assert r.of("notice") == [] and len(r.of("error")) == 1, r


def test_a_rejected_key_names_where_it_came_from(terp, env, fake):
    body = {"status": 401, "body": {"error": {"message": "Incorrect API key"}}}
    srv = fake([body])
    r = terp("-p", "q", "--provider", "openai", "--base-url", srv.url,
             extra_env={"OPENAI_API_KEY": KEY})
    assert r.rc == 1, r
    assert one_line(r) == ("terp: 401 Unauthorized: the API key from OPENAI_API_KEY was "
                           "rejected by openai (Incorrect API key)")
    # from the config's command: the file and the key
    cfg = os.path.join(env["XDG_CONFIG_HOME"], "terp", "config")
    os.makedirs(os.path.dirname(cfg))
    with open(cfg, "w") as f:
        f.write("api_key_cmd = echo sk-from-a-command\n")
    srv = fake([body])
    r = terp("-p", "q", "--provider", "openai", "--base-url", srv.url)
    assert r.rc == 1, r
    assert one_line(r) == ("terp: 401 Unauthorized: the API key from api_key_cmd in %s was "
                           "rejected by openai (Incorrect API key)" % cfg)
    assert srv.requests()[0]["headers"]["authorization"] == "Bearer sk-from-a-command"


def test_a_missing_key_names_the_variable_and_the_config_file(terp, env):
    r = terp("-p", "q", "--provider", "anthropic")
    assert r.rc == 2, r
    assert one_line(r) == ("terp: anthropic: no API key; set ANTHROPIC_API_KEY or api_key_cmd "
                           "in %s/terp/config" % env["XDG_CONFIG_HOME"])
    assert sessions(env) == []


# ---------------------------------------------------------------- item 18: keep what matters

def test_a_run_that_did_nothing_leaves_no_session(terp, env, fake):
    # a rejected key: the question got no answer and no cell ran
    srv = fake([{"status": 401, "body": {"error": {"message": "bad key"}}}])
    r = terp("-p", "q", "--provider", "openai", "--base-url", srv.url,
             extra_env={"OPENAI_API_KEY": KEY})
    assert r.rc == 1, r
    assert sessions(env) == []
    # a question the model answered is kept, with no cell
    srv = fake([{"openai": {"text": "Hello."}}])
    r = terp("-p", "hi", "--provider", "openai", "--base-url", srv.url,
             extra_env={"OPENAI_API_KEY": KEY})
    assert r.rc == 0, r
    assert len(sessions(env)) == 1


def test_exec_no_save_keeps_nothing(terp, env):
    r = terp("exec", "--no-save", "-c", "print(5)")
    assert r.rc == 0 and r.out == "5\n", r
    assert sessions(env) == []
    r = terp("exec", "--no-save", "--resume", "-c", "1")
    assert r.rc == 2 and "--no-save" in one_line(r), r


def test_list_leaves_out_sessions_that_did_nothing(terp, env):
    sid = made(terp, env)
    # an empty session of an older terp (or one still starting)
    empty = "20200101-000000-0000"
    d = os.path.join(env["XDG_STATE_HOME"], "terp", "sessions", empty)
    os.makedirs(d)
    with open(os.path.join(d, "notebook.jsonl"), "w") as f:
        f.write('{"t":"meta","v":2,"id":"%s","started":1577836800}\n'
                '{"t":"question","text":"never answered"}\n' % empty)
    r = terp("--list")
    assert r.rc == 0, r
    assert sid in r.out and empty not in r.out
    # and --resume without an id takes the latest that did something
    os.utime(os.path.join(d, "notebook.jsonl"))
    r = terp("exec", "--resume", "-c", "1")
    assert "resuming session %s" % sid in r.err, r


# ---------------------------------------------------------------- the notebook's quit line

def tui(tmp_path, env):
    e = {k: env[k] for k in ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "HOME")}
    e.update(TERM="tmux-256color", LANG="C.UTF-8")
    return Tmux("%s --provider demo --python /usr/bin/python3 %s" % (TERP, SALES),
                100, 30, e, cwd=str(tmp_path))


def test_quitting_the_notebook_says_how_to_resume(env, tmp_path):
    t = tui(tmp_path, env)
    try:
        t.wait(r"│ ready", timeout=60)
        t.text("/py print(6 * 7)")
        t.keys("Enter")
        t.wait(r"\[1\] you · ok", timeout=60)
        t.text("/quit")
        t.keys("Enter")
        s = t.wait(r"EXITED rc=0", timeout=60)
    finally:
        t.close()
    [sid] = sessions(env)
    assert re.search(r"session %s · terp --resume %s to continue\s*\nEXITED rc=0"
                     % (sid, sid), s), s


def test_a_notebook_opened_and_closed_leaves_nothing(env, tmp_path):
    t = tui(tmp_path, env)
    try:
        t.wait(r"│ ready", timeout=60)
        t.text("/quit")
        t.keys("Enter")
        s = t.wait(r"EXITED rc=0", timeout=60)
    finally:
        t.close()
    assert "--resume" not in s, s
    assert sessions(env) == []


def test_an_unreachable_server_is_one_notice_in_the_notebook(env, tmp_path):
    e = {k: env[k] for k in ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "HOME")}
    e.update(TERM="tmux-256color", LANG="C.UTF-8", OPENAI_API_KEY=KEY)
    t = Tmux("%s --provider openai --base-url http://127.0.0.1:%d/v1 --python "
             "/usr/bin/python3 %s" % (TERP, free_port(), SALES), 160, 40, e,
             cwd=str(tmp_path))
    try:
        t.wait(r"│ ready", timeout=60)
        t.text("which month sold most?")
        t.keys("Enter")
        s = t.wait(r"is the server running\?", timeout=60)
        t.text("/quit")
        t.keys("Enter")
        end = t.wait(r"EXITED rc=0", timeout=60)
    finally:
        t.close()
    assert s.count("cannot reach") == 1 and "retrying" not in s, s
    assert "--resume" not in end and sessions(env) == []
