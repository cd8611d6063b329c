#!/bin/sh
# make demo: the main job. With a usable model configured (an API key in
# the environment, or a provider in ~/.config/terp/config) it asks the real
# model; without one it replays the recorded analysis through the real
# agent loop and the real sandbox, and says so.
#
# Run it again and again: the charts the last run wrote to ./out are
# replaced (their names are kept in build/demo-files), nothing else in
# ./out is touched, and only this run's charts are listed.
set -e
cd "$(dirname "$0")/.."
DATA=examples/sales.csv
OUT=out
LIST=build/demo-files
Q1="What month had the highest revenue per dollar of marketing spend, per channel?"
Q2="Plot monthly revenue per marketing dollar for each channel."

# A model counts only when terp can use it, in terp's own order: the
# config file's provider, then ANTHROPIC_API_KEY, OPENAI_API_KEY, and
# AZURE_OPENAI_API_KEY with its endpoint and deployment. A key that is set
# but not usable is named, with why.
CONF="${XDG_CONFIG_HOME:-$HOME/.config}/terp/config"
conf_provider=$(sed -n 's/^[ \t]*provider[ \t]*=[ \t]*\([^ \t#]*\).*/\1/p' \
    "$CONF" 2>/dev/null | tail -n 1)
model=
why=
if [ -n "$conf_provider" ] && [ "$conf_provider" != demo ]; then
	model="$conf_provider (from $CONF)"
elif [ -n "${ANTHROPIC_API_KEY:-}" ]; then
	model=anthropic
elif [ -n "${OPENAI_API_KEY:-}" ]; then
	model=openai
elif [ -n "${AZURE_OPENAI_API_KEY:-}" ]; then
	if [ -z "${AZURE_OPENAI_ENDPOINT:-}" ]; then
		why="AZURE_OPENAI_API_KEY is set but AZURE_OPENAI_ENDPOINT is not"
	elif [ -z "${AZURE_OPENAI_DEPLOYMENT:-}" ]; then
		why="AZURE_OPENAI_API_KEY is set but AZURE_OPENAI_DEPLOYMENT is not"
	else
		model=azure
	fi
fi

PROVIDER=
if [ -z "$model" ]; then
	PROVIDER="--provider demo"
	[ -z "$why" ] || echo "terp demo: $why, so the key was not used (see README, Models)." >&2
	cat >&2 <<MSG
terp demo: no model is configured, so this is the RECORDED demo: the model's
code and words were written ahead of time, but every number and chart below is
computed for real in terp's sandbox from $DATA.
To use a real model: export ANTHROPIC_API_KEY=... (or OPENAI_API_KEY, or run a
local server and pass --provider ollama --model NAME), then run make demo again.

MSG
else
	echo "terp demo: asking the model configured: $model" >&2
fi

# Remove what the last run wrote, so this run's charts get their own names
# again instead of name-2.png, name-3.png...
if [ -f "$LIST" ]; then
	while IFS= read -r f; do
		case $f in "" | */* | . | ..) continue ;; esac
		if [ -f "$OUT/$f" ] && [ ! -L "$OUT/$f" ]; then
			rm -f "$OUT/$f"
		fi
	done <"$LIST"
	rm -f "$LIST"
fi
mkdir -p build
BEFORE=build/demo-before.$$
trap 'rm -f "$BEFORE"' EXIT
LC_ALL=C ls -A "$OUT" 2>/dev/null >"$BEFORE" || :

# Two questions in one session: the follow-up reuses the loaded dataframe.
# The demo runs the Python that `make` gave pandas and matplotlib
# (scripts/deps.sh installs Debian's for /usr/bin/python3), whatever
# environment is active or python3 on PATH is.
rc=0
# shellcheck disable=SC2086
./terp $PROVIDER --python /usr/bin/python3 -p "$Q1" -p "$Q2" "$DATA" || rc=$?

# terp never overwrites a file in ./out, so the names that are new are
# exactly this run's.
LC_ALL=C ls -A "$OUT" 2>/dev/null | LC_ALL=C comm -13 "$BEFORE" - >"$LIST" || :
echo >&2
if [ -s "$LIST" ]; then
	echo "terp demo: charts are in ./$OUT/ ($(tr '\n' ' ' <"$LIST" | sed 's/ $//'))" >&2
else
	echo "terp demo: this run wrote no files to ./$OUT/" >&2
fi
# The demo ran headless; the notebook is the next thing to try.
if [ "$rc" -eq 0 ]; then
	# shellcheck disable=SC2086
	echo "terp demo: now open the notebook: ./terp $PROVIDER${PROVIDER:+ }$DATA" >&2
	[ -z "$PROVIDER" ] || echo "terp demo: (ask one of its two recorded questions; for your own, configure a model: README, Models)" >&2
fi
exit "$rc"
