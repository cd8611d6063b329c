#!/usr/bin/env python3
"""subreaper: runs terp commands as a child subreaper and reports every
process that outlived them (tests/integration/test_lifecycle.py).

A process terp leaves behind is orphaned; because this process is a child
subreaper (PR_SET_CHILD_SUBREAPER), orphans of its descendants become its
children instead of init's, so "what outlived terp" is exactly "our
children once terp is reaped", with no guessing from uids or command lines
and nothing of other programs on the machine counted.

    subreaper.py SPEC.json   ->  JSON on stdout

SPEC: {"runs": [RUN, ...]}; RUN: {"argv": [...], "env": {...}, "cwd": DIR,
"kill": null | "starting" | "info", "info_fifo": PATH | null}.
kill "starting": SIGKILL terp when its --json output says the kernel is
starting; "info": when bwrap has written its --info-fd (its child exists,
see the blocking bwrap wrapper in test_lifecycle.py). Each result:
{"rc": N, "killed": bool, "leaked": [{"pid", "comm", "uid", "nspid"}]}.
"""
import ctypes
import json
import os
import select
import signal
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
SAFETY_S = 30          # a run that never reaches its kill point fails


def children():
    """Our live children (zombies are reaped by the caller)."""
    me, out = os.getpid(), []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            st = open("/proc/%s/stat" % p).read()
            status = open("/proc/%s/status" % p).read()
        except OSError:
            continue
        rest = st[st.rindex(")") + 2:].split()
        if int(rest[1]) != me or rest[0] == "Z":
            continue
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        out.append({"pid": int(p), "comm": st[st.index("(") + 1:st.rindex(")")],
                    "uid": int(fields.get("Uid", "0").split()[0]),
                    "nspid": fields.get("NSpid", "").split()})
    return out


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def leftovers():
    """What is still alive after terp: a process may still be dying (the
    init of a pid namespace waits for its namespace to empty), so look
    again until nothing is left or a deadline passes (a safety net, not a
    synchronisation: a leaked process never goes)."""
    deadline = time.monotonic() + 10
    while True:
        reap()
        left = children()
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    for p in left:
        try:
            os.kill(p["pid"], signal.SIGKILL)
        except OSError:
            pass
    end = time.monotonic() + 10
    while children() and time.monotonic() < end:
        reap()
        time.sleep(0.01)
    reap()
    return left


def wait_readable(fd, what):
    r, _, _ = select.select([fd], [], [], SAFETY_S)
    if not r:
        raise SystemExit("subreaper: %s did not come within %d s" % (what, SAFETY_S))


def one(run):
    info = None
    if run.get("info_fifo"):
        # Opened first (no writer yet, so non-blocking), so that bwrap's
        # open of the FIFO for writing does not wait.
        info = os.open(run["info_fifo"], os.O_RDONLY | os.O_NONBLOCK)
    p = subprocess.Popen(run["argv"], env=run["env"], cwd=run["cwd"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    killed = False
    if run.get("kill") == "starting":
        while True:
            wait_readable(p.stdout.fileno(), "the kernel starting event")
            line = p.stdout.readline()
            if not line or b'"starting"' in line:
                break
        p.kill()
        killed = True
    elif run.get("kill") == "info":
        got = b""
        while b"child-pid" not in got:
            wait_readable(info, "bwrap's --info-fd")
            chunk = os.read(info, 4096)
            if not chunk:
                break
            got += chunk
        p.kill()
        killed = True
    try:
        p.communicate(timeout=SAFETY_S)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise SystemExit("subreaper: terp did not exit within %d s" % SAFETY_S)
    if info is not None:
        os.close(info)
    return {"rc": p.returncode, "killed": killed, "leaked": leftovers()}


def main():
    spec = json.load(open(sys.argv[1]))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SystemExit("subreaper: PR_SET_CHILD_SUBREAPER: %s" % os.strerror(ctypes.get_errno()))
    json.dump({"results": [one(r) for r in spec["runs"]]}, sys.stdout)


if __name__ == "__main__":
    main()
