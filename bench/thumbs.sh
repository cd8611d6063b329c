#!/bin/sh
# bench/thumbs.sh: terp's thumbnail renderer against chafa on matplotlib
# charts (line, bar, scatter; 640x480): time per image (whole process,
# decode included, for both; plus terp's in-process render time) and RMS
# pixel error of each output grid, drawn back to pixels (2x2 per cell),
# against the source area-averaged to the same resolution.
# Usage: sh bench/thumbs.sh [cols] [runs]
set -eu
cd "$(dirname "$0")/.."
COLS=${1:-40}
RUNS=${2:-20}
PY=${PYTHON:-/usr/bin/python3}
T=build/bench-thumbs
W=$(mktemp -d "${TMPDIR:-/tmp}/terp-thumbs.XXXXXX")
trap 'rm -rf "$W"' EXIT

mkdir -p build
${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Wno-unused-parameter \
    -Iinclude -o "$T" bench/thumbs.c src/base/png.c src/base/thumb.c src/base/palette.c \
    src/base/util.c src/base/buf.c src/base/sanitize.c \
    $(pkg-config --cflags --libs libpng) -lm
command -v chafa >/dev/null || { echo "thumbs.sh: chafa is not installed" >&2; exit 1; }

"$PY" - "$W" <<'PYEOF'
import sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(1)
x = np.arange(24)
fig, ax = plt.subplots(figsize=(6.4, 4.8), dpi=100)
ax.plot(x, 100 + 10 * np.sin(x / 3) + x, label="web")
ax.plot(x, 80 + x * 1.5, label="retail")
ax.set_title("Revenue per month"); ax.legend()
fig.savefig(d + "/line.png"); plt.close(fig)
fig, ax = plt.subplots(figsize=(6.4, 4.8), dpi=100)
ax.bar(["Jan", "Feb", "Mar", "Apr", "May", "Jun"], [5, 7, 3, 8, 6, 9],
       color=["C0", "C1", "C2", "C3", "C4", "C5"])
ax.set_title("Units"); fig.savefig(d + "/bar.png"); plt.close(fig)
fig, ax = plt.subplots(figsize=(6.4, 4.8), dpi=100)
ax.scatter(rng.normal(size=200), rng.normal(size=200), c=rng.random(200))
ax.set_title("Scatter"); fig.savefig(d + "/scatter.png"); plt.close(fig)
PYEOF

# Mean wall-clock milliseconds of RUNS runs of a command.
ms() {
	s=$(date +%s%N)
	i=0
	while [ $i -lt "$RUNS" ]; do "$@" >/dev/null; i=$((i + 1)); done
	e=$(date +%s%N)
	echo "$s $e $RUNS" | awk '{ printf "%.2f", ($2 - $1) / 1e6 / $3 }'
}

printf '%-8s %-5s %9s %9s %9s | %8s %8s %8s\n' image syms \
    "terp ms" "(render)" "chafa ms" "chafa err" "photo err" "chart err"
for img in line bar scatter; do
	f="$W/$img.png"
	for sym in quad half; do
		t_ms=$(ms "$T" render "$f" --cols "$COLS" --sym "$sym" --mode photo)
		r_ms=$("$T" time "$f" "$RUNS" --cols "$COLS" --sym "$sym" | awk '{ print $5 }')
		c_ms=$(ms chafa -f symbols --colors 256 --size "${COLS}x" \
		    --symbols "$sym" --polite on "$f")
		chafa -f symbols --colors 256 --size "${COLS}x" --symbols "$sym" \
		    --polite on "$f" > "$W/c.ansi"
		c_err=$("$T" error "$f" "$W/c.ansi" | awk '{ print $2 }')
		"$T" render "$f" --cols "$COLS" --sym "$sym" --mode photo > "$W/p.ansi"
		p_err=$("$T" error "$f" "$W/p.ansi" | awk '{ print $2 }')
		"$T" render "$f" --cols "$COLS" --sym "$sym" --mode chart > "$W/t.ansi"
		t_err=$("$T" error "$f" "$W/t.ansi" | awk '{ print $2 }')
		printf '%-8s %-5s %9s %9s %9s | %8s %8s %8s\n' "$img" "$sym" \
		    "$t_ms" "$r_ms" "$c_ms" "$c_err" "$p_err" "$t_err"
	done
done
echo "ms: whole process per image (terp = bench driver, decode included);"
echo "(render): thumb_render alone, chart mode. err: RMS over RGB, 0-255;"
echo "photo = least-error mode, chart = the default, bolder thin lines."
