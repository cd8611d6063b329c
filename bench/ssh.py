#!/usr/bin/python3
"""bench/ssh.py: a cell's round trip over --sandbox ssh:// to localhost,
side by side in one run with the local sandbox and with the plain way of
running Python over ssh (one `ssh host python3 -c CODE` per call).

  terp ssh    `terp exec --json --sandbox ssh://box` with N cells
              `x += 1` after one `x = 0`: each result's duration_us, terp's
              clock from the command written to the result read: the whole
              round trip (terp, ssh, sshd, terp serve, the sandbox's driver
              and back).
  terp local  the same without --sandbox.
  ssh -c      `ssh box /usr/bin/python3 -c 'x = 1'`, a new connection per
              call, timed from spawn to exit (no state is kept between
              calls: the price of doing without a session).
The sshd is started here on a free loopback port with its own host key
and an authorized key in a temporary folder (as tests/integration/
test_ssh.py does); ssh runs with that folder's config.

Usage: /usr/bin/python3 bench/ssh.py [--iters N] [--calls N] [--json FILE]
"""
import argparse
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TERP = os.environ.get("TERP_BIN", os.path.join(ROOT, "terp"))
SSHD = "/usr/sbin/sshd"


def pct(xs, p):
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_sshd(d):
    for k in ("hostkey", "id"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                        os.path.join(d, k)], check=True)
    shutil.copy(os.path.join(d, "id.pub"), os.path.join(d, "authorized_keys"))
    port = free_port()
    os.makedirs("/run/sshd", exist_ok=True)
    with open(os.path.join(d, "sshd_config"), "w") as f:
        f.write("\n".join(["Port %d" % port, "ListenAddress 127.0.0.1",
                           "HostKey %s/hostkey" % d, "AuthorizedKeysFile %s/authorized_keys" % d,
                           "PidFile %s/sshd.pid" % d, "StrictModes no", "UsePAM no",
                           "PasswordAuthentication no", "PermitRootLogin prohibit-password",
                           "AcceptEnv XDG_*", ""]))
    with open(os.path.join(d, "known_hosts"), "w") as f:
        f.write("[127.0.0.1]:%d %s" % (port, open(os.path.join(d, "hostkey.pub")).read()))
    with open(os.path.join(d, "ssh_config"), "w") as f:
        f.write("\n".join(["Host box", "  HostName 127.0.0.1", "  Port %d" % port,
                           "  User %s" % pwd.getpwuid(os.getuid()).pw_name,
                           "  IdentityFile %s/id" % d, "  IdentitiesOnly yes",
                           "  UserKnownHostsFile %s/known_hosts" % d,
                           "  SetEnv XDG_CACHE_HOME=%s/rcache XDG_STATE_HOME=%s/rstate" % (d, d),
                           ""]))
    p = subprocess.Popen([SSHD, "-D", "-e", "-f", os.path.join(d, "sshd_config")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(500):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
            return p
        except OSError:
            time.sleep(0.01)
    p.kill()
    sys.exit("bench/ssh.py: sshd did not start")


def terp_round_trips(args, iters, env, cwd):
    """Each of iters `x += 1` cells' duration_us, in ms: terp's clock from
    the command written to its result read, the whole round trip. (Not
    the gaps between result lines as they arrive: exec --json hands them
    over in batches, a few to a write.)"""
    cells = ["-c", "x = 0"]
    for _ in range(iters):
        cells += ["-c", "x += 1"]
    p = subprocess.Popen([TERP, "exec", "--json", *args, *cells], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    us = []
    for line in p.stdout:
        if line.startswith('{"type":"result"'):
            us.append(json.loads(line)["duration_us"])
    err = p.stderr.read()
    if p.wait() != 0 or len(us) != iters + 1:
        sys.exit("bench/ssh.py: terp exec %s failed: %s" % (" ".join(args), err))
    return [u / 1000 for u in us[1:]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--json")
    a = ap.parse_args()
    if not os.path.exists(SSHD):
        sys.exit("bench/ssh.py: sshd is missing: install openssh-server")
    d = tempfile.mkdtemp(prefix="terp-bench-ssh.")
    os.chmod(d, 0o711)
    sshd = start_sshd(d)
    env = dict(os.environ, XDG_STATE_HOME=d + "/state", XDG_CONFIG_HOME=d + "/cfg",
               XDG_CACHE_HOME=d + "/cache")
    ssh = ["ssh", "-F", d + "/ssh_config", "-T", "-o", "BatchMode=yes"]
    try:
        remote = ["--sandbox", "ssh://box", "--ssh-command", "ssh -F %s/ssh_config" % d,
                  "--ssh-terp", "%s --python /usr/bin/python3" % TERP]
        rows = {}
        rows["terp ssh"] = terp_round_trips(remote, a.iters, env, d)
        rows["terp local"] = terp_round_trips(["--python", "/usr/bin/python3"], a.iters, env, d)
        calls = []
        for _ in range(a.calls):
            t = time.perf_counter()
            subprocess.run(ssh + ["box", "/usr/bin/python3", "-c", "'x = 1'"], check=True,
                           stdin=subprocess.DEVNULL)
            calls.append((time.perf_counter() - t) * 1000)
        rows["ssh python3 -c"] = calls
    finally:
        sshd.terminate()
        sshd.wait()
        shutil.rmtree(d, ignore_errors=True)
    print("ssh: a cell's round trip, ms (%d cells; %d ssh calls)" % (a.iters, a.calls))
    print("  %-16s %8s %8s %8s" % ("", "median", "p90", "max"))
    out = {}
    for k, xs in rows.items():
        out[k] = {"median_ms": pct(xs, 50), "p90_ms": pct(xs, 90), "max_ms": max(xs), "n": len(xs)}
        print("  %-16s %8.2f %8.2f %8.2f" % (k, pct(xs, 50), pct(xs, 90), max(xs)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
