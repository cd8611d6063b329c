#!/bin/sh
# Builds build/tui-harness: the TUI against tests/tui/fake_agent.c (a
# development harness for when the real agent is not there).
set -e
cd "$(dirname "$0")/../.."
make -s build/obj/tui/tui.o build/obj/tui/tui_tlines.o >/dev/null 2>&1 || true
for f in $(find src -name "*.c"); do
	b=$(basename "$f" .c)
	case "$b" in main|agent|context|kernel|kernel_local|kernel_backend|kernel_ssh|kernel_aca|serve|kernel_jupyter|ws|llm*|zz_*|headless|exec|frontend|jsonout|printer|sandbox|http|sse|config|filter|tui_main|journal|journal_load|idle|replay|resume|session|cli_sessions|event) continue;; esac
	o=${f#src/}; make -s "build/obj/${o%.c}.o"
	OBJS="$OBJS build/obj/${o%.c}.o"
done
PKGS="ncursesw libcurl libcjson libpng libseccomp readline"
cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Iinclude $(pkg-config --cflags $PKGS) -g \
	-o build/tui-harness tests/tui/fake_agent.c $OBJS $(pkg-config --libs $PKGS) -lm
