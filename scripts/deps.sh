#!/bin/sh
# Installs the Debian packages terp needs to build, test and run.
# Idempotent: with --if-missing it does nothing when everything is there.
set -e

PKGS="build-essential pkg-config libncurses-dev libcurl4-openssl-dev
libcjson-dev libpng-dev libseccomp-dev libreadline-dev libcriterion-dev
bubblewrap python3 python3-pandas python3-numpy python3-matplotlib
python3-pytest tmux chafa python3-jupyter-client python3-ipykernel
python3-nbformat jupyter-nbconvert"

have_all() {
	pkg-config --exists ncursesw libcurl libcjson libpng libseccomp readline criterion \
	    2>/dev/null || return 1
	for c in cc bwrap tmux chafa; do command -v $c >/dev/null 2>&1 || return 1; done
	/usr/bin/python3 -c 'import pandas, numpy, matplotlib, pytest, jupyter_client, nbformat' \
	    2>/dev/null || return 1
	command -v jupyter-nbconvert >/dev/null 2>&1 || return 1
	return 0
}

if [ "$1" = "--if-missing" ] && have_all; then
	exit 0
fi

SUDO=
if [ "$(id -u)" != 0 ]; then
	SUDO=sudo
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "terp: scripts/deps.sh knows Debian and Ubuntu (apt-get); install these by hand:" >&2
	echo $PKGS >&2
	exit 1
fi
echo "terp: installing build and test dependencies with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $PKGS
