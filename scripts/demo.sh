#!/bin/sh
# make demo: the main job. With a model configured (an API key in the
# environment or ~/.config/terp/config) it asks the real model; without
# one it replays the recorded analysis through the real agent loop and the
# real sandbox, and says so.
set -e
cd "$(dirname "$0")/.."
DATA=examples/sales.csv
Q1="What month had the highest revenue per dollar of marketing spend, per channel?"
Q2="Plot monthly revenue per marketing dollar for each channel."
PROVIDER=
if [ -z "$ANTHROPIC_API_KEY$OPENAI_API_KEY$AZURE_OPENAI_API_KEY" ] &&
   ! grep -qs '^ *provider *=' "${XDG_CONFIG_HOME:-$HOME/.config}/terp/config"; then
	PROVIDER="--provider demo"
	cat >&2 <<MSG
terp demo: no model is configured, so this is the RECORDED demo: the model's
code and words were written ahead of time, but every number and chart below is
computed for real in terp's sandbox from $DATA.
To use a real model: export ANTHROPIC_API_KEY=... (or OPENAI_API_KEY, or run a
local server and pass --provider ollama --model NAME), then run make demo again.

MSG
fi
# Two questions in one session: the follow-up reuses the loaded dataframe.
# shellcheck disable=SC2086
./terp $PROVIDER -p "$Q1" -p "$Q2" "$DATA"
echo >&2
echo "terp demo: charts are in ./out/ ($(ls out 2>/dev/null | tr '\n' ' '))" >&2
