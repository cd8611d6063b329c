#!/bin/sh
# Builds build/tui-harness: the TUI against tests/tui/fake_agent.c, a fake
# of the session calls the TUI makes (its one door to the core).
set -e
cd "$(dirname "$0")/../.."
make -s build/obj/tui/tui.o build/obj/tui/tui_tlines.o >/dev/null 2>&1 || true
# The TUI and what it stands on (base, model, a few pure core pieces);
# the session the TUI calls (and the agent, kernels, model client and
# sandbox behind it) is the fake's.
for f in $(find src/base src/model src/tui -name "*.c") \
    src/core/numtrace.c src/core/numscan.c src/core/answer_trace.c src/core/export.c \
    src/core/export_paths.c src/core/store.c src/core/ledger.c src/llm/cost.c; do
	b=$(basename "$f" .c)
	case "$b" in config|event) continue;; esac
	o=${f#src/}; make -s "build/obj/${o%.c}.o"
	OBJS="$OBJS build/obj/${o%.c}.o"
done
PKGS="ncursesw libcurl libcjson libpng zlib libseccomp readline"
cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Iinclude $(pkg-config --cflags $PKGS) -g \
	-o build/tui-harness tests/tui/fake_agent.c $OBJS $(pkg-config --libs $PKGS) -lm
