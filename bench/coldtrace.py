#!/usr/bin/python3
"""bench/coldtrace.py: where the cold start of `terp exec -c 'print(1)'`
goes, phase by phase, against the floor (bare bwrap + Python, as in
bench/kernel.py). A diagnosis tool, not part of `make bench`.

Each run is traced by strace with a seccomp-bpf filter (--seccomp-bpf:
only the syscalls named below stop the process, so the rest runs at full
speed) and cut at these marks (medians over the runs):

  terp   exec -> main        dynamic loading, relocations, constructors
                             (to the first openat of terp's own: config)
         main -> uid pool    config, journal created (fdatasync), probes
         uid pool            /run/terp/uids lock, NSS look-ups, /proc scan
         staging             session folders, chown, out/, cgroup probe
         seccomp             libseccomp: both programs built and exported
         rest -> fork        argv, pipes, memfds
         launcher            fork -> bwrap's exec (pid ns, fork, net ns,
                             rlimits, setuid)
         bwrap               bwrap's exec -> python's exec
         python -> result    interpreter start, driver, the cell, frames
         result -> exit      journal sync, disk scan, sandbox kill, reap
  floor  bwrap, python -> exit, exit

Also: the time inside the traced syscalls that block (fdatasync,
unshare, clone of namespaces), strace's -T.

Usage: /usr/bin/python3 bench/coldtrace.py [--runs N] [--keep DIR]
Needs strace >= 5.3 (--seccomp-bpf). Run it as bench/kernel.py is run.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel  # noqa: E402  (Env, floor_argv, floor_fds, FLOOR_UID)

# Two passes per run: the coarse one stops only at rare syscalls (the
# phases from the fork on, the floor); the fine one adds openat and
# friends to cut terp's own start (it slows Python's start, which opens
# many files, so its later phases are not used).
COARSE = "execve,clone,clone3,vfork,exit_group,unshare,fdatasync,fsync,write"
FINE = COARSE + ",openat,memfd_create,seccomp"
LINE = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(.*?)(?:\s+<([\d.]+)>)?$")


def parse(path):
    """[(pid, t, call text, duration or 0)] with resumed calls joined."""
    out, pending = [], {}
    for raw in open(path, errors="replace"):
        m = LINE.match(raw.rstrip("\n"))
        if not m:
            continue
        pid, t, text, dur = int(m[1]), float(m[2]), m[3], float(m[4] or 0)
        if text.endswith("<unfinished ...>"):
            pending[pid] = (t, text[:-len("<unfinished ...>")])
            continue
        if text.startswith("<... ") and pid in pending:
            t0, head = pending.pop(pid)
            text = head + text.split("resumed>", 1)[-1]
            t = t0
        out.append((pid, t, text, dur))
    return out


def first(ev, pred, after=0.0):
    for e in ev:
        if e[1] >= after and pred(e):
            return e
    return None


def fine_phases(ev):
    """terp's own start, up to the fork of the launcher (the fine pass)."""
    main, t0 = ev[0][0], ev[0][1]
    mine = [e for e in ev if e[0] == main]
    cfg = first(mine, lambda e: e[2].startswith("openat(") and "/terp/config" in e[2])
    uids = first(mine, lambda e: e[2].startswith("openat(") and (
        "/run/terp/uids" in e[2] or "/var/lib/terp/uids" in e[2]))
    proc_close = None
    if uids:
        # The pool's /proc scan is its last step: the next openat after
        # it belongs to the staging of the folders.
        scan = first(mine, lambda e: e[2].startswith("openat(") and "\"/proc\"" in e[2],
                     uids[1])
        if scan:
            proc_close = first(mine, lambda e: e[2].startswith("openat("), scan[1] + 1e-9)
    seca = first(mine, lambda e: e[2].startswith("seccomp("))
    secb = first(mine, lambda e: e[2].startswith("memfd_create(\"terp-seccomp-b\""))
    fork = first(mine, lambda e: e[2].startswith(("clone(", "clone3(", "vfork(")))
    if not all((cfg, seca, secb, fork)):
        raise RuntimeError("a mark is missing from the fine trace")
    if not uids or not proc_close:  # not root: no uid pool
        uids = proc_close = cfg
    marks = [("exec -> main", t0, cfg[1]), ("main -> uid pool", cfg[1], uids[1]),
             ("uid pool", uids[1], proc_close[1]), ("staging", proc_close[1], seca[1]),
             ("seccomp", seca[1], secb[1]), ("rest -> fork", secb[1], fork[1]),
             ("= exec -> fork (fine pass)", t0, fork[1])]
    return {name: (b - a) * 1e3 for name, a, b in marks}


def coarse_phases(ev):
    """From the fork of the launcher on, and the blocking syscalls."""
    main, t0 = ev[0][0], ev[0][1]
    mine = [e for e in ev if e[0] == main]
    fork = first(mine, lambda e: e[2].startswith(("clone(", "clone3(", "vfork(")))
    bw = first(ev, lambda e: e[2].startswith("execve(\"/usr/bin/bwrap\""))
    py = first(ev, lambda e: e[2].startswith("execve(") and "python3" in e[2].split(",")[0])
    res = first(mine, lambda e: e[2].startswith("write(1,") and "result" in e[2])
    end = first(mine, lambda e: e[2].startswith("exit_group("))
    if not all((fork, bw, py, res, end)):
        raise RuntimeError("a mark is missing from the coarse trace")
    marks = [("exec -> fork (coarse pass)", t0, fork[1]),
             ("launcher: fork -> bwrap exec", fork[1], bw[1]),
             ("bwrap: exec -> python exec", bw[1], py[1]),
             ("python exec -> result", py[1], res[1]),
             ("result -> exit", res[1], end[1]), ("total", t0, end[1])]
    ph = {name: (b - a) * 1e3 for name, a, b in marks}
    blocking = {}
    for pid, t, text, dur in ev:
        name = text.split("(", 1)[0]
        if name in ("fdatasync", "fsync", "unshare") or (
                name == "clone" and "CLONE_NEW" in text):
            key = "%s%s" % (name, " (terp)" if pid == main else "")
            if name == "unshare":
                key = "unshare(%s)" % text.split("(", 1)[1].split(")", 1)[0]
            blocking[key] = blocking.get(key, 0.0) + dur * 1e3
    return ph, blocking


def floor_phases(ev):
    t0 = ev[0][1]
    main = ev[0][0]
    py = first(ev, lambda e: e[2].startswith("execve(") and "python3" in e[2].split(",")[0])
    end = [e for e in ev if e[0] == main and e[2].startswith("exit_group(")]
    if not py or not end:
        # bwrap may leave without exit_group: the last line of its pid.
        end = [[e for e in ev if e[0] == main][-1]]
    ph = {"bwrap: exec -> python exec": (py[1] - t0) * 1e3,
          "python exec -> exit": (end[-1][1] - py[1]) * 1e3,
          "total": (end[-1][1] - t0) * 1e3}
    blocking = {}
    for pid, t, text, dur in ev:
        name = text.split("(", 1)[0]
        if name == "unshare" or (name == "clone" and "CLONE_NEW" in text):
            blocking[name] = blocking.get(name, 0.0) + dur * 1e3
    return ph, blocking


def strace(args, out, calls, user=None, **kw):
    cmd = ["strace", "-f", "--seccomp-bpf", "-ttt", "-T", "-s", "64", "-e",
           "trace=" + calls, "-o", out] + (["-u", user] if user else []) + args
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--keep", help="keep the traces in this folder")
    a = ap.parse_args()
    if shutil.which("strace") is None:
        sys.exit("coldtrace.py: strace is not installed (apt-get install strace)")
    env = kernel.Env()
    tdir = a.keep or tempfile.mkdtemp(prefix="terp-coldtrace-")
    os.makedirs(tdir, exist_ok=True)
    fine, tp, tb, fp, fb = [], [], [], [], []
    # strace runs as root and runs bwrap as the unprivileged uid (-u).
    user = "nobody" if os.geteuid() == 0 else None
    try:
        for i in range(a.runs + 1):
            targs = [kernel.TERP, "exec", "--json", "--out", env.out, "-c", "print(1)"]
            traces = []
            for kind, calls in (("fine", FINE), ("coarse", COARSE)):
                tf = os.path.join(tdir, "terp-%s-%d.txt" % (kind, i))
                r = strace(targs, tf, calls, env=env.env, cwd=env.dir)
                if r.returncode != 0:
                    raise RuntimeError("terp exec: %r" % r.stderr[-400:])
                traces.append(tf)
            fds = kernel.floor_fds()
            ff = os.path.join(tdir, "floor-%d.txt" % i)
            r = strace(kernel.floor_argv(env, fds), ff, COARSE, user,
                       env={"PATH": "/usr/bin:/bin"}, cwd=env.dir, pass_fds=fds)
            for fd in fds:
                os.close(fd)
            if r.returncode != 0 or r.stdout != b"1\n":
                raise RuntimeError("floor: %r %r" % (r.stdout, r.stderr[-300:]))
            if i == 0:
                continue  # warm-up
            fine.append(fine_phases(parse(traces[0])))
            p, b = coarse_phases(parse(traces[1]))
            tp.append(p)
            tb.append(b)
            p, b = floor_phases(parse(ff))
            fp.append(p)
            fb.append(b)
    finally:
        env.close()
        if not a.keep:
            shutil.rmtree(tdir, ignore_errors=True)

    def medof(rows, key):
        return statistics.median([r.get(key, 0.0) for r in rows])
    print("coldtrace: `terp exec -c print(1)` and the floor under strace --seccomp-bpf, "
          "%d runs, medians (ms)" % a.runs)
    for name in fine[0]:
        print("  terp   %-32s %7.2f" % (name, medof(fine, name)))
    for name in tp[0]:
        print("  terp   %-32s %7.2f" % (name, medof(tp, name)))
    for name in fp[0]:
        print("  floor  %-32s %7.2f" % (name, medof(fp, name)))
    print("  time inside blocking syscalls (strace -T, median of the per-run sums):")
    for key in sorted(set(k for r in tb for k in r)):
        print("  terp   %-32s %7.2f" % (key, medof(tb, key)))
    for key in sorted(set(k for r in fb for k in r)):
        print("  floor  %-32s %7.2f" % (key, medof(fb, key)))


if __name__ == "__main__":
    main()
