#!/usr/bin/python3
"""bench/agent_ipt.py: terp's instructions per agent turn, counted by
callgrind (valgrind) over bench/agent.py's session: the totals of a
150-turn and a 50-turn run, their difference over 100 (start-up cancels).
Deterministic where wall time is not, so a change's gain shows on a
loaded machine.

Usage: make terp build/vgshim.so && /usr/bin/python3 bench/agent_ipt.py [BIN] [TAG]
"""
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import agent  # noqa: E402


def run(binp, turns, tag, tmpdir):
    out = os.path.join(tmpdir, "cg.%s.%d" % (tag, turns))
    wrap = os.path.join(tmpdir, "vg.sh")
    with open(wrap, "w") as f:
        f.write('#!/bin/sh\nLD_PRELOAD=%s exec prlimit --nofile=1024:1024 '
                'valgrind --tool=callgrind --callgrind-out-file=%s '
                '--trace-children=no %s "$@"\n'
                % (os.path.join(ROOT, "build", "vgshim.so"), out, binp))
    os.chmod(wrap, 0o755)
    agent.TERP = wrap
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)  # see kernel.py: the sandbox folders stay in here
        agent.run_terp(turns, tmp)
    tot = 0
    with open(out) as f:
        for line in f:
            if line.startswith(("totals:", "summary:")):
                tot = int(line.split()[1])
    return tot


def main():
    binp = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "terp"))
    tag = sys.argv[2] if len(sys.argv) > 2 else "terp"
    keep = os.environ.get("IPT_KEEP")
    with tempfile.TemporaryDirectory() as tmpdir:
        os.chmod(tmpdir, 0o755)  # see kernel.py: the sandbox folders stay in here
        d = keep or tmpdir
        a = run(binp, 50, tag, d)
        b = run(binp, 150, tag, d)
    print("%s: 50 turns %d, 150 turns %d, per turn %.0f" % (tag, a, b, (b - a) / 100))


if __name__ == "__main__":
    main()
