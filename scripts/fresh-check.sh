#!/bin/bash
# fresh-check: the README's quick start on a fresh Debian 12, the only
# honest test of it. Builds (once, then cached) a minimal bookworm root
# with only make, git and ca-certificates, copies a clean `git archive
# HEAD` of this checkout into it and runs `make demo`, then `make check`,
# in it as root, with /proc, /sys and /dev mounted.
#
# usage: scripts/fresh-check.sh [--rebuild] [--keep] [TARGET...]
#   TARGET      make targets to run in order (default: demo check); one
#               with a space is a shell command, e.g. 'sh bench/run.sh --quick'
#   --rebuild   build the cached base root again
#   --keep      keep this run's root (its changes over the base) for a look
# Environment: TERP_FRESH_CACHE (default /var/cache/terp-fresh),
#   TERP_FRESH_MIRROR (default: the Debian mirror this machine's apt uses),
#   TERP_FRESH_LIMIT (time limit of each target, default 90m).
#
# Why not chroot: the kernel refuses a new user namespace (EPERM) to a
# process whose root is not its mount namespace's root, so bwrap, and
# with it terp's sandbox, would fail in a chroot. The run gets private
# mount and pid namespaces instead, and pivot_root makes the fresh root
# the namespace's root. Every mount lives in that namespace and goes
# away with it; the pid namespace takes any leftover process with it.
#
# Only committed work is tested: HEAD, not the working tree.
set -euo pipefail

CACHE=${TERP_FRESH_CACHE:-/var/cache/terp-fresh}
LIMIT=${TERP_FRESH_LIMIT:-90m}
SUITE=bookworm
BASE=$CACHE/base-$SUITE

die() { echo "fresh-check: $*" >&2; exit 2; }

# ---- inside the private namespaces (the script runs itself again) ----
if [ "${1:-}" = --inner ]; then
	RUN=$2
	ROOT=$RUN/root
	if ! mount -t overlay overlay \
	    -o "lowerdir=$BASE,upperdir=$RUN/upper,workdir=$RUN/work" "$ROOT" \
	    2>/dev/null; then
		# No overlayfs here: a full copy (slower, same result).
		cp -a "$BASE/." "$ROOT/"
		mount --bind "$ROOT" "$ROOT"
	fi
	# The root is an overlay, and the kernel cannot idmap an overlay's
	# files, so terp would copy a root-owned 0600 data file where a real
	# machine mounts it. A fresh machine's /tmp is on its disk's file
	# system: here, one on the cache's.
	mount --bind "$RUN/tmp" "$ROOT/tmp"
	mount -t proc proc "$ROOT/proc"
	mount --rbind /sys "$ROOT/sys"
	mount --rbind /dev "$ROOT/dev"
	mount --bind "$CACHE/apt-archives" "$ROOT/var/cache/apt/archives"
	mkdir -p "$ROOT/mnt/fresh"
	mount --bind "$RUN/out" "$ROOT/mnt/fresh"
	cp /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true
	# debootstrap leaves /etc/hosts to the installer; every installed
	# system has one that names localhost.
	[ -s "$ROOT/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$ROOT/etc/hosts"
	mkdir -p "$ROOT/root/terp"
	tar -x -C "$ROOT/root/terp" -f "$RUN/src.tar"
	cp "$0" "$ROOT/mnt/fresh/fresh-check.sh"
	cd "$ROOT"
	mkdir -p .oldroot
	pivot_root . .oldroot
	umount -l /.oldroot
	rmdir /.oldroot
	# A fresh root's login: no LANG, no TERM, root's HOME.
	exec /usr/sbin/chroot / /usr/bin/env -i HOME=/root LOGNAME=root USER=root \
	    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	    /bin/bash /mnt/fresh/fresh-check.sh --targets "$3" "$4"
fi

# ---- in the fresh root, as its first login ----
if [ "${1:-}" = --targets ]; then
	cd /root/terp
	i=0
	while IFS= read -r t; do
		[ -n "$t" ] || continue
		i=$((i + 1))
		case $t in
		*" "*) cmd=(bash -c "$t") ;;
		*) cmd=(make "$t"); t="make $t" ;;
		esac
		echo
		echo "=== fresh-check: $t ==="
		start=$(date +%s)
		rc=0
		timeout --kill-after=60 "$2" "${cmd[@]}" </dev/null || rc=$?
		echo "$i $rc $(($(date +%s) - start))" >>/mnt/fresh/results
	done <<<"$3"
	exit 0
fi

# ---- on the host ----
REBUILD=0
KEEP=0
TARGETS=
for a in "$@"; do
	case $a in
	--rebuild) REBUILD=1 ;;
	--keep) KEEP=1 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) die "unknown option $a (see --help)" ;;
	*) TARGETS="$TARGETS$a"$'\n' ;;
	esac
done
TARGETS=${TARGETS:-demo$'\n'check}

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, mounts, namespaces)"
cd "$(dirname "$0")/.."
SRC=$(pwd)
command -v git >/dev/null || die "needs git"
git -C "$SRC" rev-parse --verify -q HEAD >/dev/null || die "$SRC: not a git checkout with a commit"
COMMIT=$(git -C "$SRC" rev-parse --short HEAD)
if [ -n "$(git -C "$SRC" status --porcelain --untracked-files=no)" ]; then
	echo "fresh-check: note: uncommitted changes are not tested, only HEAD ($COMMIT)" >&2
fi

# The Debian mirror this machine's apt uses, read from its sources (one-
# line .list or deb822 .sources), never written into the repository.
apt_mirror() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		# deb [options] URI SUITE COMPONENTS...
		awk -v s="$SUITE" '$1 == "deb" {
			i = 2
			if ($i ~ /^\[/) { while (i < NF && $i !~ /\]$/) i++; i++ }
			if ($(i + 1) == s) { print $i; exit }
		}' "$f"
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		# deb822: blank-line separated stanzas of "Key: value".
		awk -v s="$SUITE" 'BEGIN { RS = ""; FS = "\n" }
		{
			uri = ""; ok = 0; deb = 0
			for (k = 1; k <= NF; k++) {
				if ($k ~ /^#/) continue
				if ($k ~ /^Types:/ && $k ~ /[ \t]deb([ \t]|$)/) deb = 1
				if ($k ~ /^URIs:/) { split($k, u, /[ \t]+/); uri = u[2] }
				if ($k ~ /^Suites:/) {
					n = split($k, w, /[ \t]+/)
					for (j = 2; j <= n; j++) if (w[j] == s) ok = 1
				}
			}
			if (deb && ok && uri != "") { print uri; exit }
		}' "$f"
	done
}
MIRROR=${TERP_FRESH_MIRROR:-$(apt_mirror | head -n 1)}
[ -n "$MIRROR" ] || die "no Debian $SUITE mirror in /etc/apt/sources.list*; set TERP_FRESH_MIRROR"

mkdir -p "$CACHE/apt-archives/partial" "$CACHE/runs" "$CACHE/logs"
exec 9>"$CACHE/lock"
flock -n 9 || die "another fresh-check is running ($CACHE/lock)"

if [ "$REBUILD" = 1 ] || [ ! -e "$BASE/.fresh-ok" ]; then
	if ! command -v debootstrap >/dev/null; then
		echo "fresh-check: installing debootstrap with apt-get" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >&2 ||
		    { apt-get update -q >&2 &&
		      DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >&2; } ||
		    die "could not install debootstrap"
	fi
	echo "fresh-check: building the base root in $BASE (once; --rebuild to redo)" >&2
	rm -rf --one-file-system "$BASE.tmp" "$BASE"
	debootstrap --variant=minbase --include=make,git,ca-certificates \
	    "$SUITE" "$BASE.tmp" "$MIRROR" >&2 || die "debootstrap failed"
	# The packages the runs download go to the shared cache, not the base.
	rm -f "$BASE.tmp"/var/cache/apt/archives/*.deb
	date -u +%FT%TZ >"$BASE.tmp/.fresh-ok"
	mv "$BASE.tmp" "$BASE"
fi

# Keep the last 20 logs.
find "$CACHE/logs" -name '*.log' -printf '%T@ %p\n' | sort -rn | tail -n +20 |
    cut -d' ' -f2- | xargs -r rm -f
RUN=$(mktemp -d "$CACHE/runs/run.XXXXXX")
LOG=$CACHE/logs/$(date +%Y%m%d-%H%M%S)-$COMMIT.log
mkdir "$RUN/upper" "$RUN/work" "$RUN/root" "$RUN/out" "$RUN/tmp"
chmod 1777 "$RUN/tmp"

cleanup() {
	# Every mount was in the run's namespace, gone with it; refuse to
	# delete anything if one is still visible here.
	if grep -q " $RUN/" /proc/self/mountinfo; then
		echo "fresh-check: mounts left under $RUN; not removing it" >&2
		return
	fi
	if [ "$KEEP" = 1 ]; then
		echo "fresh-check: kept $RUN (upper: the run's changes over the base)" >&2
		return
	fi
	rm -rf --one-file-system "$RUN"
}
trap cleanup EXIT

git -C "$SRC" archive --format=tar -o "$RUN/src.tar" HEAD
echo "fresh-check: commit $COMMIT, Debian $SUITE minbase, targets: $(printf '%s' "$TARGETS" | paste -sd, -); log $LOG" >&2
# unshare ignores SIGINT and SIGTERM while it waits, and the namespace's
# init ignores them too: on either, kill the init, which takes every
# process of the run with it.
unshare --mount --pid --fork --kill-child --propagation private -- \
    "$SRC/scripts/fresh-check.sh" --inner "$RUN" "$LIMIT" "$TARGETS" \
    > >(tee "$LOG") 2>&1 &
UNSHARE=$!
stop() {
	# shellcheck disable=SC2046
	kill -KILL $(cat /proc/"$UNSHARE"/task/*/children 2>/dev/null) 2>/dev/null || :
	wait "$UNSHARE" 2>/dev/null || :
	echo "fresh-check: interrupted" >&2
	exit 130
}
trap stop INT TERM
rc=0
wait "$UNSHARE" || rc=$?
trap - INT TERM
wait	# for tee
echo
echo "fresh-check summary (commit $COMMIT, log $LOG):"
fail=0
i=0
while IFS= read -r t; do
	[ -n "$t" ] || continue
	i=$((i + 1))
	case $t in *" "*) ;; *) t="make $t" ;; esac
	line=$(awk -v i="$i" '$1 == i' "$RUN/out/results" 2>/dev/null | tail -n 1)
	if [ -z "$line" ]; then
		printf '  %-4s  %-24s did not run\n' FAIL "$t"
		fail=1
		continue
	fi
	read -r _ trc secs <<<"$line"
	if [ "$trc" = 0 ]; then
		printf '  %-4s  %-24s %5ss\n' PASS "$t" "$secs"
	else
		[ "$trc" = 124 ] && why="time limit $LIMIT" || why="exit $trc"
		printf '  %-4s  %-24s %5ss  (%s)\n' FAIL "$t" "$secs" "$why"
		fail=1
	fi
done <<<"$TARGETS"
if [ "$fail" = 0 ] && [ "$rc" = 0 ]; then
	echo "fresh-check: PASS"
	exit 0
fi
echo "fresh-check: FAIL"
exit 1
