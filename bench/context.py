#!/usr/bin/env python3
"""bench/context.py: the context budget over a real 100-question session.

terp -p, 100 questions in one run, against tests/fake_model.py enforcing
an 8k-token window with tests/fake_analyst.py answering (each question:
a cell printing ~4 KB, then the answer; the last question asks for the
first question's result, which only the summary still holds). Reports
terp's own peak RSS over the session (VmHWM read from /proc while it
runs: terp alone, not the sandbox's Python), the largest request the
fake counted against its window, how many summaries the model was asked
for, and the answer to the last question. The bookkeeping time per turn
is build/bench-context's (in-process, CPU time), run here too.

Usage: bench/context.py [--questions N] [--json FILE]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from fake_analyst import SUMMARY_MARK, analyst  # noqa: E402
from fake_model import FakeModel, read_log  # noqa: E402

TERP = os.path.join(ROOT, "terp")
WINDOW = 8192
RSS_TARGET_MB = 60
TURN_TARGET_US = 1000


def vmhwm_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def session(nq, tmp):
    log = os.path.join(tmp, "model.jsonl")
    srv = FakeModel({"window": WINDOW, "window_error": "openai"}, log,
                    respond=analyst("openai"))
    port = srv.start()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update({"XDG_STATE_HOME": os.path.join(tmp, "state"),
                "XDG_CONFIG_HOME": os.path.join(tmp, "config"),
                "OPENAI_API_KEY": "sk-bench"})
    args = [TERP, "--json", "--provider", "openai", "--model", "fake",
            "--base-url", "http://127.0.0.1:%d/v1" % port,
            "--context-window", str(WINDOW), "--out", os.path.join(tmp, "out"),
            "--python", "/usr/bin/python3"]
    for k in range(1, nq):
        args += ["-p", "Question %d: compute block %d." % (k, k)]
    args += ["-p", "Recall FACT-1: what was the first result?"]
    events, pending, hwm = [], b"", 0
    p = subprocess.Popen(args, stdout=subprocess.PIPE, env=env, cwd=tmp, bufsize=0)
    fd = p.stdout.fileno()
    try:
        while True:
            data = os.read(fd, 1 << 16)
            if not data:
                break
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                ev = json.loads(line)
                events.append(ev)
                if ev["type"] in ("turn", "answer", "notice"):
                    hwm = max(hwm, vmhwm_kb(p.pid) or 0)
        _, status, ru = os.wait4(p.pid, 0)
    finally:
        srv.stop()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("terp -p failed: %s" % [e for e in events if e["type"] == "error"])
    reqs = read_log(log)
    answers = [e["text"] for e in events if e["type"] == "answer"]
    return {"questions": nq, "answers": len(answers), "last_answer": answers[-1],
            "hwm_kb": hwm, "maxrss_kb": ru.ru_maxrss,
            "requests": len(reqs), "max_tokens": max(q["tokens"] for q in reqs),
            "refused": sum(1 for q in reqs if q["tokens"] > WINDOW),
            "summaries": sum(1 for q in reqs if SUMMARY_MARK in json.dumps(q["body"])),
            "errors": [e["message"] for e in events if e["type"] == "error"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument("--json")
    a = ap.parse_args()
    subprocess.run(["make", "--no-print-directory", "-s", "build/bench-context"],
                   cwd=ROOT, check=True, stdout=sys.stderr)
    out = subprocess.run([os.path.join(ROOT, "build", "bench-context"), str(a.questions)],
                         check=True, capture_output=True, text=True).stdout
    m = re.search(r"median ([0-9.]+) us, p99 ([0-9.]+) us, max ([0-9.]+) us", out)
    book = {"median_us": float(m.group(1)), "p99_us": float(m.group(2)),
            "max_us": float(m.group(3))}
    with tempfile.TemporaryDirectory(prefix="terp-bench-ctx.") as tmp:
        os.chmod(tmp, 0o755)  # see kernel.py: the sandbox folders stay in here
        s = session(a.questions, tmp)
    print("context: a %d-question session in a %d-token window" % (a.questions, WINDOW))
    for line in out.strip().splitlines():
        print("  bench-context: " + line)
    print("  terp -p: %d answers, %d requests (%d summaries), largest %d tokens, %d refused"
          % (s["answers"], s["requests"], s["summaries"], s["max_tokens"], s["refused"]))
    print("  last answer (the first question's result, from the summary): %s" % s["last_answer"])
    print("  terp's peak RSS: %.1f MB (VmHWM; wait4 ru_maxrss %.1f MB)"
          % (s["hwm_kb"] / 1024.0, s["maxrss_kb"] / 1024.0))
    print("targets: bookkeeping %.0f us < %d us per turn: %s; peak RSS %.1f MB < %d MB: %s"
          % (book["median_us"], TURN_TARGET_US,
             "ok" if book["median_us"] < TURN_TARGET_US else "MISS",
             s["hwm_kb"] / 1024.0, RSS_TARGET_MB,
             "ok" if s["hwm_kb"] / 1024.0 < RSS_TARGET_MB else "MISS"))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"bookkeeping": book, "session": s}, f, indent=1)


if __name__ == "__main__":
    main()
