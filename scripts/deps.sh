#!/bin/sh
# Installs the Debian packages terp needs, by what they are needed for:
#   build   build and run terp: `make`, `make demo` (the default)
#   check   build + the tests' tools: `make check`, `make unit`,
#           `make integration`
#   bench   build + the benchmarks' peers: `make bench`
#   fuzz    build + clang with libFuzzer: `make fuzz`
#   all     every group: `make deps`
# usage: sh scripts/deps.sh [--if-missing] [GROUP...]
# With --if-missing it does nothing when everything the groups rely on is
# there (checked without apt, so it is quick and works on any machine);
# otherwise it installs with apt-get, through sudo when not root.
set -e

# terp runs the sandbox's Python as /usr/bin/python3 (the distribution's,
# which these packages install into), so that is the one checked.
PY=/usr/bin/python3
LIBS="ncursesw libcurl libcjson libpng libseccomp readline"

pkgs() {
	case $1 in
	build) echo build-essential pkg-config libncurses-dev \
	    libcurl4-openssl-dev libcjson-dev libpng-dev zlib1g-dev libseccomp-dev \
	    libreadline-dev libssl-dev libwslay-dev bubblewrap python3 \
	    python3-pandas python3-numpy python3-matplotlib ;;
	# procps: pgrep and ps; ipykernel: nbconvert --execute needs a kernel;
	# venv, pip, setuptools, wheel: the tests build virtualenvs and wheels;
	# groff-base: the man page is checked with groff -ww; util-linux:
	# unshare for the fault tests' private mounts.
	check) echo libcriterion-dev python3-pytest tmux procps groff-base util-linux \
	    python3-nbformat python3-jupyter-client python3-ipykernel \
	    jupyter-nbconvert python3-venv python3-pip python3-setuptools \
	    python3-wheel python3-jupyter-server python3-sklearn openssh-server \
	    openssh-client ;;
	bench) echo chafa python3-jupyter-client python3-ipykernel \
	    python3-jupyter-server openssh-server openssh-client ;;
	fuzz) echo clang libclang-rt-dev ;;
	esac
}

# Succeeds when every module is importable by $PY (found, not imported:
# importing matplotlib takes a second).
py_has() {
	[ -x "$PY" ] && "$PY" -c '
import importlib.util, sys
sys.exit(any(importlib.util.find_spec(m) is None for m in sys.argv[1:]))' "$@" \
	    2>/dev/null
}

cmds() {
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || return 1
	done
}

# What each group relies on, checked directly; the caller says which
# part is missing.
have() {
	case $1 in
	build)
		cmds cc pkg-config && pkg-config --exists $LIBS 2>/dev/null &&
		    [ -f /usr/include/wslay/wslay.h ] &&
		    [ -x /usr/bin/bwrap ] && py_has pandas numpy matplotlib ;;
	check)
		pkg-config --exists criterion 2>/dev/null && cmds tmux pgrep ps ssh ssh-keygen groff unshare &&
		    [ -x /usr/bin/jupyter-nbconvert ] && [ -x /usr/sbin/sshd ] &&
		    py_has pytest nbformat nbconvert jupyter_client ipykernel \
			ensurepip pip setuptools wheel jupyter_server ;;
	bench)
		cmds chafa ssh ssh-keygen && [ -x /usr/sbin/sshd ] &&
		    py_has jupyter_client ipykernel jupyter_server ;;
	fuzz)
		# clang alone is not enough: libFuzzer's runtime is its own package.
		cmds clang || return 1
		t=$(mktemp -d "${TMPDIR:-/tmp}/terp-deps.XXXXXX")
		printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n)\n{ return 0; }\n' >"$t/f.c"
		r=0
		clang -fsanitize=fuzzer -o "$t/f" "$t/f.c" >/dev/null 2>&1 || r=1
		rm -rf "$t"
		return $r ;;
	esac
}

IF_MISSING=0
ASKED=
for a in "$@"; do
	case $a in
	--if-missing) IF_MISSING=1 ;;
	build | check | bench | fuzz) ASKED="$ASKED $a" ;;
	all) ASKED="$ASKED check bench fuzz" ;;
	*) echo "deps.sh: unknown argument '$a' (groups: build check bench fuzz all)" >&2
	   exit 2 ;;
	esac
done
# Every group builds terp first.
ASKED="build $ASKED"

missing=
want=
for g in $ASKED; do
	case " $want " in *" $g "*) continue ;; esac
	want="$want $g"
	have "$g" || missing="$missing $g"
done
if [ "$IF_MISSING" = 1 ] && [ -z "$missing" ]; then
	exit 0
fi
PKGS=
for g in $want; do
	PKGS="$PKGS $(pkgs "$g")"
done

if ! command -v apt-get >/dev/null 2>&1; then
	echo "terp: scripts/deps.sh knows Debian and Ubuntu (apt-get); missing:${missing:- nothing}." >&2
	echo "Install these (Debian names) by hand:" $PKGS >&2
	exit 1
fi
SUDO=
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null 2>&1 || {
		echo "terp: installing packages needs root; run as root: sh scripts/deps.sh$want" >&2
		exit 1
	}
	SUDO=sudo
fi
echo "terp: installing what${want} needs with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
# Waits for another apt or dpkg (unattended-upgrades, a parallel make)
# instead of failing on its lock.
LOCK="-o DPkg::Lock::Timeout=600"
$SUDO apt-get $LOCK update -q
# shellcheck disable=SC2086
$SUDO apt-get $LOCK install -y -q --no-install-recommends $PKGS

# Names differ between releases; say so rather than fail later.
for g in $want; do
	if ! have "$g"; then
		echo "terp: the '$g' packages are installed but something it needs is still missing; see scripts/deps.sh" >&2
		exit 1
	fi
done
