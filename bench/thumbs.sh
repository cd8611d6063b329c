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
ax.set_title("Units"); fig.savefig(d + "/bar.png")
# the same chart with only its text drawn: where the words are
for a in ax.patches + list(ax.spines.values()):
    a.set_visible(False)
ax.tick_params(length=0)
fig.savefig(d + "/bar_text.png", transparent=True); plt.close(fig)
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
# Text regions (the bar chart's title and tick labels, found by drawing
# its text alone): the cells drawn as a pattern of blocks (noise) and
# their RMS error, terp against chafa, at a few widths.
printf '%-8s %5s %-6s %6s %6s %7s\n' text cols who cells noise err
for c in 40 60 80; do
	f="$W/bar.png"
	chafa -f symbols --colors 256 --size "${c}x" --symbols quad --polite on "$f" > "$W/c.ansi"
	"$T" render "$f" --cols "$c" --sym quad --mode chart > "$W/t.ansi"
	for who in terp chafa; do
		[ $who = terp ] && g="$W/t.ansi" || g="$W/c.ansi"
		"$T" text "$f" "$W/bar_text.png" "$g" | awk -v c="$c" -v who="$who" \
		    '{ printf "%-8s %5s %-6s %6s %6s %7s\n", "text", c, who, $2, $5, $7 }'
	done
done
# Memory of one preview (decode + 100-column render) of PNGs that
# used to cost their decoded size: a zlib bomb, a 10000x10000 image and
# a 23.8-megapixel chart; terp's streaming decode against decoding the
# whole image (the old way; it refuses over 24 Mpixels).
"$PY" - "$W" <<'PYEOF'
import struct, sys, zlib
d = sys.argv[1]
def png(path, w, h, ctype, bpp, row):
    def chunk(t, b):
        return struct.pack(">I", len(b)) + t + b + struct.pack(">I", zlib.crc32(t + b))
    z = zlib.compressobj(9)
    out = [b"\x89PNG\r\n\x1a\n", chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, ctype, 0, 0, 0))]
    data = []
    for y in range(h):
        data.append(z.compress(b"\0" + row(y)))
    data.append(z.flush())
    out += [chunk(b"IDAT", b"".join(data)), chunk(b"IEND", b"")]
    open(path, "wb").write(b"".join(out))
zero = bytes(4800 * 4)
png(d + "/bomb.png", 4800, 4800, 6, 4, lambda y: zero)
grad = bytes(x * 255 // 9999 for x in range(10000))
png(d + "/10000sq.png", 10000, 10000, 0, 1, lambda y: grad)
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(59.6, 40), dpi=100)
ax.bar(["north", "south", "east", "west"], [3, 5, 9, 4])
ax.set_title("23.8 Mpixel chart"); fig.savefig(d + "/chart24.png"); plt.close(fig)
PYEOF
printf '%-6s %-10s %-12s %9s %14s %14s\n' pngmem image pixels "file KB" "terp peak MB" "whole peak MB"
for img in bomb 10000sq chart24; do
	f="$W/$img.png"
	px=$("$PY" -c "import struct,sys; b=open(sys.argv[1],'rb').read(24); print('%dx%d' % struct.unpack('>II', b[16:24]))" "$f")
	kb=$(( $(wc -c < "$f") / 1024 ))
	a=$("$T" mem "$f" | awk '{ printf "%.1f", $2 / 1024; if ($5 != "ok") printf "(%s)", "failed" }')
	b=$("$T" mem "$f" whole | awk '{ printf "%.1f", $2 / 1024; if ($5 != "ok") printf "(refused)" }')
	printf '%-6s %-10s %-12s %9s %14s %14s\n' pngmem "$img" "$px" "$kb" "$a" "$b"
done
echo "pngmem: peak RSS of the bench driver (terp's png.c + thumb.c) for one preview;"
echo "terp = streamed and box-averaged to 1 Mpixel, whole = the image decoded whole."
echo "ms: whole process per image (terp = bench driver, decode included);"
echo "(render): thumb_render alone, chart mode. err: RMS over RGB, 0-255;"
echo "photo = least-error mode, chart = the default, bolder thin lines."
