#!/bin/sh
# bench/run.sh: every benchmark, each with its peer measured in the same
# run (kernel: a Jupyter kernel; agent: a minimal Python harness over
# ipykernel; thumbs: chafa), then a compact summary. `make bench` runs it.
# Usage: sh bench/run.sh [--quick]   (--quick: fewer runs, for a smoke test)
set -eu
cd "$(dirname "$0")/.."
PY=${PYTHON:-/usr/bin/python3}
[ -x ./terp ] || { echo "run.sh: build terp first (make)" >&2; exit 1; }
W=$(mktemp -d "${TMPDIR:-/tmp}/terp-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT

if [ "${1:-}" = "--quick" ]; then
	KARGS="--runs 5 --jruns 2 --iters 300"; AARGS="--turns 50"; TARGS="40 5"
	JARGS="--iters 100"
else
	KARGS=""; AARGS=""; TARGS=""; JARGS=""
fi

echo "== terp $(./terp --version 2>/dev/null | head -1), $(nproc) CPUs, $(uname -sr)"
echo
# shellcheck disable=SC2086
"$PY" bench/kernel.py $KARGS --json "$W/kernel.json"
echo
# shellcheck disable=SC2086
"$PY" bench/agent.py $AARGS --json "$W/agent.json"
echo
# shellcheck disable=SC2086
sh bench/thumbs.sh $TARGS | tee "$W/thumbs.txt"
echo
# shellcheck disable=SC2086
"$PY" bench/jupyter_backend.py $JARGS --json "$W/jupyter.json"
echo

"$PY" - "$W" <<'PYEOF'
import json, sys
w = sys.argv[1]
k = json.load(open(w + "/kernel.json"))
a = json.load(open(w + "/agent.json"))
rows = []
for line in open(w + "/thumbs.txt"):
    f = line.split()
    if len(f) >= 8 and f[1] in ("quad", "half"):
        rows.append(f)
def ok(c):
    return "ok" if c else "MISS"
tc, jc, tr, jr = k["terp_cold"], k["jupyter_cold"], k["terp_rt"], k["jupyter_rt"]
jbest = min(jr["median_us"], jr["raw_median_us"])
t, p = a["terp"], a["peer"]
print("== summary")
print("%-38s %12s %12s %7s %s" % ("", "terp", "peer", "ratio", "target"))
print("%-38s %9.1f ms %9.1f ms %6.1fx %s" % ("cold start to first result (median)",
      tc["first_ms"], jc["first_ms"], k["cold_x"],
      ok(tc["first_ms"] <= 100 and k["cold_x"] >= 10) + " (<= 100 ms, >= 10x)"))
print("%-38s %9.0f us %9.0f us %6.1fx %s" % ("round trip `x += 1` (median)",
      tr["median_us"], jbest, k["rt_x"],
      ok(tr["median_us"] <= 500 and k["rt_x"] >= 10) + " (<= 0.5 ms, >= 10x)"))
print("%-38s %9.0f us %9.0f us" % ("round trip `x += 1` (p99)", tr["p99_us"],
      min(jr["p99_us"], jr["raw_p99_us"])))
print("%-38s %9.0f us %9.0f us %7s %s" % ("agent overhead per turn (median)",
      t["over_us"], p["over_us"], "", ok(t["over_us"] <= 2000) + " (<= 2 ms)"))
print("%-38s %9.1f MB" % ("terp peak RSS, whole -p session",
      t["hwm_kb"] / 1024.0))
if rows:
    n = len(rows)
    tm = sum(float(r[2]) for r in rows) / n
    cm = sum(float(r[4]) for r in rows) / n
    ce = sum(float(r[6]) for r in rows) / n
    pe = sum(float(r[7]) for r in rows) / n
    he = sum(float(r[8]) for r in rows) / n
    print("%-38s %9.2f ms %9.2f ms %6.1fx" % ("thumbnail, whole process (mean)", tm, cm, cm / tm))
    print("%-38s %12s %12.1f" % ("thumbnail RMS error 0-255, photo/chart",
          "%.1f/%.1f" % (pe, he), ce))
print("peers: Jupyter = ipykernel via jupyter_client (faster of two clients);")
print("agent = a minimal Python loop over the same fake model + ipykernel; thumbs = chafa.")
PYEOF
