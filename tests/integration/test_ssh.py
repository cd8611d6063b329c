"""--sandbox ssh://: terp's own sandbox on "another machine" through the
real OpenSSH: the test starts Debian's sshd on a free loopback port with
its own host key and an authorized key in a temporary folder, for the
test's own user, and points terp at it with an ssh config of its own
(--ssh-command "ssh -F ..."). The remote side is this tree's terp
(`terp serve`). An analysis with a chart back, an interrupt that keeps
the state, an upload with progress, a remote file staged in place, the
ssh connection killed mid-cell (state lost, the next cell reconnects),
and the one-line errors: unknown host key, refused login, no terp
there, a sandbox that cannot start there."""
import hashlib
import json
import os
import pwd
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, TERP, children, session_dir, wait_until

import sys  # noqa: E402
sys.path.insert(0, str(ROOT / "tests"))
from fake_model import FakeModel, read_log  # noqa: E402

SSHD = "/usr/sbin/sshd"
REMOTE_TERP = "%s --python /usr/bin/python3" % TERP
HANG = 180


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def keygen(path):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
                   check=True)


class Sshd:
    """sshd -D on 127.0.0.1:port, its keys and configs under base."""

    def __init__(self, base):
        if not os.path.exists(SSHD):
            pytest.fail("sshd is missing: install openssh-server (scripts/deps.sh check)",
                        pytrace=False)
        self.base = Path(base)
        self.base.mkdir(parents=True, exist_ok=True)
        os.makedirs("/run/sshd", exist_ok=True)      # privilege separation (as root)
        keygen(self.base / "hostkey")
        keygen(self.base / "id")
        (self.base / "authorized_keys").write_text((self.base / "id.pub").read_text())
        self.port = free_port()
        self.user = pwd.getpwuid(os.getuid()).pw_name
        (self.base / "sshd_config").write_text("\n".join([
            "Port %d" % self.port, "ListenAddress 127.0.0.1",
            "HostKey %s" % (self.base / "hostkey"),
            "AuthorizedKeysFile %s" % (self.base / "authorized_keys"),
            "PidFile %s" % (self.base / "sshd.pid"),
            "StrictModes no", "UsePAM no", "PasswordAuthentication no",
            "KbdInteractiveAuthentication no", "PermitRootLogin prohibit-password",
            "AcceptEnv XDG_*", ""]))
        (self.base / "known_hosts").write_text(
            "[127.0.0.1]:%d %s" % (self.port, (self.base / "hostkey.pub").read_text()))
        self.log = open(self.base / "sshd.log", "w")
        self.p = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.base / "sshd_config")],
                                  stdout=self.log, stderr=subprocess.STDOUT)
        # Ready when it accepts a connection (sshd has no ready line
        # before its first client).
        def up():
            if self.p.poll() is not None:
                pytest.fail("sshd did not start: %s" % (self.base / "sshd.log").read_text(),
                            pytrace=False)
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=5).close()
                return True
            except OSError:
                return False
        wait_until(up, "sshd listening", timeout=HANG)

    def config(self, name="ssh_config", key=None, known=None):
        """An ssh config for host "box"; key and known_hosts replaceable."""
        path = self.base / name
        path.write_text("\n".join([
            "Host box", "  HostName 127.0.0.1", "  Port %d" % self.port,
            "  User %s" % self.user,
            "  IdentityFile %s" % (key or self.base / "id"), "  IdentitiesOnly yes",
            "  UserKnownHostsFile %s" % (known or self.base / "known_hosts"),
            "  StrictHostKeyChecking yes",
            "  SetEnv XDG_CACHE_HOME=%s XDG_STATE_HOME=%s" % (self.base / "rcache",
                                                              self.base / "rstate"),
            ""]))
        return "ssh -F %s" % path

    def stop(self):
        self.p.terminate()
        self.p.wait(HANG)
        self.log.close()


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    s = Sshd(tmp_path_factory.mktemp("sshd"))
    yield s
    s.stop()


def flags(sshd, terp=REMOTE_TERP, **kw):
    return ["--sandbox", "ssh://box", "--ssh-command", sshd.config(**kw),
            "--ssh-terp", terp]


CSV = "region,price,qty\n" + "".join(
    "%s,%d,%d\n" % (("north", "south")[i % 2], 2 + i % 5, 1 + i % 3) for i in range(40))
NORTH = sum((2 + i % 5) * (1 + i % 3) for i in range(0, 40, 2))
CHART = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
         "plt.plot([1, 3, 2])\nplt.savefig('/workspace/out/chart.png')")


def events(lines):
    return [json.loads(x) for x in lines if x.startswith("{")]


def test_analysis_chart_and_error(terp, tmp_path, sshd):
    (tmp_path / "sales.csv").write_text(CSV)
    r = terp("exec", "--json", *flags(sshd),
             "-c", "import pandas as pd\ndf = pd.read_csv('/workspace/data/sales.csv')\n"
                   "n = df[df.region == 'north']\nprint('NORTH=%d' % (n.price * n.qty).sum())",
             "-c", CHART, "-c", "1/0", "sales.csv", timeout=HANG)
    assert r.rc == 1, r
    [s] = r.of("session")
    assert s["sandbox"] == "ssh box"
    assert "terp's sandbox there" in s["isolation"]
    assert [e["status"] for e in r.results()] == ["ok", "ok", "error"]
    assert r.stdout_of(1) == "NORTH=%d\n" % NORTH
    assert [(a["cell"], a["name"]) for a in r.of("artifact")] == [(2, "chart.png")]
    assert (tmp_path / "out" / "chart.png").read_bytes().startswith(b"\x89PNG")
    assert r.results()[2]["error"]["ename"] == "ZeroDivisionError"
    # serve removed its session folder on the way out
    assert not [p for p in os.listdir("/tmp") if p.startswith("terp-serve-")
                and (Path("/tmp") / p / "uploads" / "sales.csv").exists()]


def test_a_renamed_chart_is_said_on_the_cells_stderr(terp, tmp_path, sshd):
    """out/chart.png is the user's: the chart comes back as chart-2.png
    and the cell's stderr says so, in the local sandbox's words."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "chart.png").write_bytes(b"the user's older chart")
    r = terp("exec", "--json", *flags(sshd), "-c", CHART, timeout=HANG)
    assert r.rc == 0, r
    assert [(a["name"], a["path"]) for a in r.of("artifact")] == \
        [("chart-2.png", "out/chart-2.png")], r
    assert [e["text"] for e in r.of("stderr")] == [
        "terp: out/chart.png copied as out/chart-2.png: out/chart.png was already "
        "there and is not this session's (left as it was)\n"], r
    assert (tmp_path / "out" / "chart.png").read_bytes() == b"the user's older chart"


def test_a_chart_saved_again_replaces_the_sessions_own(terp, tmp_path, sshd):
    """A file terp wrote in this session is replaced when the cell saves
    it again (as the local sandbox does), under its own name, with no
    line about another name; nothing is left half-written in out/."""
    again = CHART.replace("[1, 3, 2]", "[5, 1, 4, 2]")
    r = terp("exec", "--json", *flags(sshd), "-c", CHART, "-c", again, timeout=HANG)
    assert r.rc == 0, r
    assert [(a["cell"], a["name"]) for a in r.of("artifact")] == \
        [(1, "chart.png"), (2, "chart.png")], r
    assert r.of("stderr") == [], r
    assert sorted(os.listdir(tmp_path / "out")) == ["chart.png"]
    assert (tmp_path / "out" / "chart.png").stat().st_size == r.of("artifact")[1]["bytes"]


class Run:
    """terp exec --json as a process, its events read as they come."""

    def __init__(self, env, cwd, *args, mode="exec"):
        pre = ["exec", "--json"] if mode == "exec" else ["--json"]
        self.p = subprocess.Popen([str(TERP), *pre, *map(str, args)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=env, cwd=cwd)
        self.events = []

    def until(self, pred):
        for line in self.p.stdout:
            if line.startswith("{"):
                e = json.loads(line)
                self.events.append(e)
                if pred(e):
                    return e
        pytest.fail("terp ended before the event came: %s" % self.p.stderr.read(),
                    pytrace=False)

    def finish(self):
        out, err = self.p.communicate(timeout=HANG)
        self.events += events(out.splitlines())
        self.err = err
        return self.p.returncode

    def of(self, t):
        return [e for e in self.events if e["type"] == t]

    def printed(self, cell, text):
        """Waits until cell's stdout holds text (output may come in pieces)."""
        got = []

        def pred(e):
            if e["type"] == "stdout" and e["cell"] == cell:
                got.append(e["text"])
            return text in "".join(got)
        self.until(pred)


WAIT = "import time\nprint('waiting', flush=True)\ntime.sleep(600)"


def test_interrupt_keeps_the_state(env, tmp_path, sshd):
    r = Run(env, tmp_path, *flags(sshd), "-c", "x = 41", "-c", WAIT, "-c", "print(x + 1)")
    r.printed(2, "waiting\n")
    r.p.send_signal(signal.SIGINT)      # the first Ctrl-C interrupts the cell
    rc = r.finish()
    assert [e["status"] for e in r.of("result")] == ["ok", "interrupted", "ok"], r.err
    assert "".join(e["text"] for e in r.of("stdout") if e["cell"] == 3) == "42\n"
    assert rc == 3


def test_upload_with_progress_and_a_remote_file_in_place(terp, tmp_path, sshd):
    big = tmp_path / "big.bin"
    data = os.urandom(3 << 20)
    big.write_bytes(data)
    there = tmp_path / "there"
    there.mkdir()
    (there / "remote.csv").write_text("a\n1\n2\n")
    os.chmod(there, 0o755)
    r = terp("exec", "--json", *flags(sshd),
             "-c", "import hashlib\nprint(hashlib.sha256(open('/workspace/data/big.bin','rb')"
                   ".read()).hexdigest())",
             "-c", "print(open('/workspace/data/remote.csv').read().split())",
             "big.bin", "box:%s" % (there / "remote.csv"), timeout=HANG)
    assert r.rc == 0, r
    assert r.stdout_of(1) == hashlib.sha256(data).hexdigest() + "\n"
    assert r.stdout_of(2) == "['a', '1', '2']\n"
    progress = [e["message"] for e in r.of("kernel")
                if e["message"].startswith("uploading big.bin to box")]
    assert len(progress) >= 3, progress      # several steps, not one jump
    assert progress[-1].endswith("3.0 MB of 3.0 MB") or "of" in progress[-1]
    # the remote file was not sent: no upload of it
    assert not [e for e in r.of("kernel") if "uploading remote.csv" in e["message"]]


def test_ssh_killed_mid_cell_loses_state_and_reconnects(env, tmp_path, sshd):
    r = Run(env, tmp_path, *flags(sshd), "-c", "x = 1", "-c", WAIT,
            "-c", "print('x' in dir())")
    r.printed(2, "waiting\n")
    [ssh] = [p for p in children(r.p.pid)
             if Path("/proc/%s/comm" % p).read_text().strip() == "ssh"]
    os.kill(int(ssh), signal.SIGKILL)
    rc = r.finish()
    res = r.of("result")
    assert [e["status"] for e in res] == ["ok", "crashed", "ok"], r.err
    assert "the connection to box dropped" in res[1]["reason"]
    # the facts by their flags; the messages say them to people
    [drop] = [e for e in r.of("kernel") if e["state"] == "stopped"]
    assert drop["state_lost"] is True and "restarted" not in drop, drop
    assert drop["message"].startswith("the connection to box dropped"), drop
    [back] = [e for e in r.of("kernel") if e.get("restarted")]
    assert back["state_lost"] is True and back["state"] == "starting", back
    assert back["message"].startswith("restarted: reconnecting to box"), back
    assert "".join(e["text"] for e in r.of("stdout") if e["cell"] == 3) == "False\n"
    assert rc == 4


def test_prompt_after_a_dropped_connection_tells_the_model(env, tmp_path, sshd):
    """terp -p: the model's cell dies with the connection; the next
    question reconnects, and the model is told that the variables and
    the files the code wrote are gone (a new session folder there)."""
    log = tmp_path / "model.jsonl"
    srv = FakeModel({"turns": [
        {"openai": {"text": "Waiting.", "tool_calls": [{"id": "c1", "code": "y = 2\n" + WAIT}]}},
        {"openai": {"text": "The connection dropped."}},
        {"openai": {"text": "Fine."}},
    ]}, str(log))
    port = srv.start()
    e = dict(env, OPENAI_API_KEY="sk-terp-test-0123456789")
    r = Run(e, tmp_path, "-p", "first", "-p", "second", "--provider", "openai",
            "--base-url", "http://127.0.0.1:%d/v1" % port, *flags(sshd), mode="prompt")
    r.printed(1, "waiting\n")
    [ssh] = [p for p in children(r.p.pid)
             if Path("/proc/%s/comm" % p).read_text().strip() == "ssh"]
    os.kill(int(ssh), signal.SIGKILL)
    rc = r.finish()
    assert rc == 0, r.err
    assert [a["text"] for a in r.of("answer")] == ["The connection dropped.", "Fine."]
    reqs = read_log(str(log))
    tool = reqs[1]["body"]["messages"][-1]["content"]
    assert "status: crashed" in tool and "the connection to box dropped" in tool
    second = reqs[2]["body"]["messages"][-1]["content"]
    assert "restarted: reconnecting to box" in second, second
    assert "All variables and imports are gone; files the code wrote under /workspace " \
        "are gone too (the data files are staged again)." in second, second


def one_line(r, want):
    lines = [x for x in r.err.splitlines() if want in x]
    assert len(lines) == 1, r
    return lines[0]


def test_unknown_host_key(terp, tmp_path, sshd):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    r = terp("exec", *flags(sshd, name="c1", known=empty), "-c", "print(1)", timeout=HANG)
    assert r.rc == 4, r
    one_line(r, "ssh to box failed: its host key is not known (or it changed); "
             "connect once with ssh box to check and accept it")


def test_refused_login(terp, tmp_path, sshd):
    keygen(tmp_path / "other")
    r = terp("exec", *flags(sshd, name="c2", key=tmp_path / "other"), "-c", "print(1)",
             timeout=HANG)
    assert r.rc == 4, r
    one_line(r, "ssh to box failed: the login was refused (no password is asked")


def test_remote_without_terp(terp, tmp_path, sshd):
    r = terp("exec", *flags(sshd, terp="/nonexistent/terp"), "-c", "print(1)", timeout=HANG)
    assert r.rc == 4, r
    one_line(r, "box has no terp (ssh ran \"/nonexistent/terp serve\" there): install "
             "terp on box, or set ssh_terp in the config to its path there")


def test_remote_sandbox_cannot_start(terp, tmp_path, sshd):
    r = terp("exec", *flags(sshd, terp="%s --python /nonexistent/python3" % TERP),
             "-c", "print(1)", timeout=HANG)
    assert r.rc == 4, r
    line = one_line(r, "terp: on box: ")
    assert "/nonexistent/python3" in line


def test_no_ssh_client_is_one_line(terp, tmp_path):
    r = terp("exec", "--sandbox", "ssh://box", "--ssh-command",
             str(tmp_path / "no-such-ssh") + " -F x", "-c", "print(1)", timeout=HANG)
    assert r.rc == 4, r
    one_line(r, "cannot run ssh (%s -F x): install the OpenSSH client (openssh-client)"
             % (tmp_path / "no-such-ssh"))


def test_ssh_runs_in_a_session_of_its_own_without_terps_fds(terp, tmp_path):
    """ssh is started in a session of its own (the terminal's Ctrl-C and
    /dev/tty are terp's, not ssh's), found in PATH, and gets only its
    three pipes: no fd of terp's beyond them."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    report = tmp_path / "report"
    fake = bindir / "fakessh"
    fake.write_text("#!/bin/sh\n"
                    "cut -d' ' -f1,5,6 /proc/$$/stat > %s\n"
                    "echo 'fakessh: no route' >&2\n"
                    "exec ls /proc/self/fd >> %s\n" % (report, report))
    fake.chmod(0o755)
    env = dict(os.environ, PATH="%s:%s" % (bindir, os.environ["PATH"]))
    r = terp("exec", "--sandbox", "ssh://box", "--ssh-command", "fakessh", "-c", "print(1)",
             extra_env={"PATH": env["PATH"]}, timeout=HANG)
    assert r.rc == 4, r
    one_line(r, "ssh to box failed: fakessh: no route")
    lines = report.read_text().split("\n")
    pid, pgid, sid = lines[0].split()
    assert pgid == pid and sid == pid, lines[0]
    # 0-2, and the one ls opens to read /proc/self/fd
    assert sorted(int(x) for x in lines[1:] if x) == [0, 1, 2, 3], lines


def test_reconnect_is_a_new_folder_with_the_data_staged_again(env, tmp_path, sshd):
    """After a dropped connection the next cell runs in a new session
    folder there: what the code wrote is gone, the data file (a local
    one, streamed up again) is there, and the loss is said."""
    (tmp_path / "d.csv").write_text("a\n1\n")
    r = Run(env, tmp_path, *flags(sshd),
            "-c", "open('/workspace/mine.txt', 'w').write('x')\n"
                  "print(open('/workspace/data/d.csv').read().split())",
            "-c", WAIT,
            "-c", "import os\nprint(os.path.exists('/workspace/mine.txt'), "
                  "open('/workspace/data/d.csv').read().split())",
            "d.csv")
    r.printed(2, "waiting\n")
    [ssh] = [p for p in children(r.p.pid)
             if Path("/proc/%s/comm" % p).read_text().strip() == "ssh"]
    os.kill(int(ssh), signal.SIGKILL)
    rc = r.finish()
    assert rc == 4, r.err
    assert [e["status"] for e in r.of("result")] == ["ok", "crashed", "ok"], r.err
    out = {c: "".join(e["text"] for e in r.of("stdout") if e["cell"] == c) for c in (1, 3)}
    assert out == {1: "['a', '1']\n", 3: "False ['a', '1']\n"}, out
    ups = [e["message"] for e in r.of("kernel") if e["message"].startswith("uploading d.csv")]
    assert ups, [e["message"] for e in r.of("kernel")]
    assert [(e["state"], e["state_lost"]) for e in r.of("kernel")
            if e.get("restarted")] == [("starting", True)], r.of("kernel")


def test_resume_goes_back_to_the_host_in_a_new_session(terp, env, tmp_path, sshd):
    """The journal keeps where the session ran (ssh://USER@box: a user
    name is no password), with no session to reach there; `terp
    --resume ID` without --sandbox goes back to that host, says in one
    line and in the kernel's state (restarted, state_lost) that the
    session there is new, sends the data file up again and stages the
    file that is over there (box:/path) in place again; a resume here
    says that file is not staged."""
    (tmp_path / "d.csv").write_text("a\n1\n")
    there = tmp_path / "there"
    there.mkdir()
    (there / "remote.csv").write_text("b\n2\n")
    os.chmod(there, 0o755)
    spec = "ssh://%s@box" % sshd.user
    rest = ["--ssh-command", sshd.config(), "--ssh-terp", REMOTE_TERP]
    r = terp("exec", "--sandbox", spec, *rest, "-c", "x = 1", "d.csv",
             "box:%s" % (there / "remote.csv"), timeout=HANG)
    assert r.rc == 0, r
    d = session_dir(env)
    recs = [json.loads(l) for l in (d / "notebook.jsonl").read_text().splitlines()]
    assert [(x["sandbox"], x["session"]) for x in recs if x["t"] == "remote"] == \
        [(spec, "")], recs
    r = terp("exec", "--json", "--resume", d.name, *rest,
             "-c", "print('x' in dir(), open('/workspace/data/d.csv').read().split(), "
                   "open('/workspace/data/remote.csv').read().split())",
             timeout=HANG)
    assert r.rc == 0, r
    assert "warning" not in r.err, r
    assert ("terp: the session ran on %s; resuming it there in a new session: the "
            "variables of earlier cells are gone and the data files are sent again "
            "(--sandbox local runs it here)" % spec) in r.err.splitlines(), r
    assert [s["sandbox"] for s in r.of("session")] == ["ssh box"]
    [new] = [e for e in r.of("kernel") if e.get("restarted")]
    assert new["state_lost"] is True and new["state"] == "starting", r
    assert new["message"] == ("restarted: connecting to box in a new session; the resumed "
                              "notebook's state (variables, imports) was lost")
    assert r.stdout_of(2) == "False ['a', '1'] ['b', '2']\n", r
    assert any(e["message"].startswith("uploading d.csv") for e in r.of("kernel")), r
    r = terp("exec", "--resume", d.name, "--sandbox", "local", "-c",
             "import os; print(sorted(os.listdir('/workspace/data')))", timeout=HANG)
    assert r.rc == 0 and r.out == "['d.csv']\n", r
    assert ("terp: warning: box:%s is a file on the ssh host the session ran on; it is "
            "not staged (resume it there to have it)" % (there / "remote.csv")
            ) in r.err.splitlines(), r


def test_remote_serve_gets_the_limits_only(env, tmp_path, sshd):
    """What terp puts on the remote's command line: `terp serve` with
    --timeout and --grace, never a local path (the session, output or
    data folders) nor a token."""
    wrapper = tmp_path / "ssh-wrap"
    log = tmp_path / "ssh-argv"
    wrapper.write_text("#!/bin/sh\nfor a in \"$@\"; do printf '%%s\\n' \"$a\" >> %s; done\n"
                       "exec ssh \"$@\"\n" % log)
    wrapper.chmod(0o755)
    (tmp_path / "d.csv").write_text("a\n1\n")
    cmd = sshd.config().replace("ssh ", str(wrapper) + " ", 1)
    e = dict(env, JUPYTER_TOKEN="tok-jupyter-77aa", TERP_ACA_TOKEN="tok-aca-88bb")
    p = subprocess.run([str(TERP), "exec", "--sandbox", "ssh://box", "--ssh-command", cmd,
                        "--ssh-terp", REMOTE_TERP, "--timeout", "7s", "--grace", "2s",
                        "--memory", "3G", "--sandbox-token-cmd", "echo tok-cmd-99cc",
                        "-c", "print(1)", "d.csv"],
                       capture_output=True, text=True, env=e, cwd=tmp_path, timeout=HANG)
    assert p.returncode == 0, p.stderr
    argv = log.read_text().splitlines()
    remote = argv[argv.index("--") + 1:]
    assert remote == ["%s serve --python /usr/bin/python3 --timeout 7000ms --grace 2000ms"
                      % TERP], argv
    text = "\n".join(argv)
    for secret in ("tok-jupyter-77aa", "tok-aca-88bb", "tok-cmd-99cc"):
        assert secret not in text
    assert str(tmp_path) not in "\n".join(remote)
    assert env["XDG_STATE_HOME"] not in text
