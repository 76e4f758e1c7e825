#!/bin/bash
# torch 2.x (label torch2): the README's demo and the launch-path tests inside a fresh
# Debian 13 root with its python3-torch (2.6, Python 3.13, built without libuv), with
# the llmlaunch built in that root. The root is made here with debootstrap from the
# package list (tools/debian-packages.txt, the build set) and kept between runs on the
# same machine under $LLMLAUNCH_TEST_CACHE (default /var/cache/llmlaunch-tests), one
# run at a time (a lock); a run that finds no root and no Debian mirror skips. On a
# machine that already is Debian 13 with torch 2.x the same tests run on it, no root.
# Nothing of a run stays in the root: /tmp and /run are fresh file systems in a mount
# namespace of this test, gone with it.
set -euo pipefail
: "${LL_SRCDIR:?}"
name=torch2/debian13
skip() { echo "$name: SKIP: $*" >&2; exit 77; }
fail() { echo "$name: FAIL: $*" >&2; exit 1; }
say() { echo "$name: $*" >&2; }

[ "$(id -u)" = 0 ] || skip "needs root (debootstrap, chroot, mounts)"
suite=trixie

# On a machine that already is Debian 13 with its torch 2.x a root would hold the same
# release: the tests run here, on a copy of the tree (the demo builds in it).
host_codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}") || true
host_torch=$(/usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>/dev/null) || true
if [ "$host_codename" = "$suite" ] && [ "${host_torch%%.*}" -ge 2 ] 2>/dev/null; then
	src=$(mktemp -d /tmp/ll-torch2-src.XXXXXX)
	trap 'rm -rf "$src"' EXIT
	tar -C "$LL_SRCDIR" --exclude=./.git --exclude='./build*' -cf - . | tar -C "$src" -xf -
	t1=$SECONDS
	LL_TORCH2_WHERE="on this Debian 13" bash "$src/tests/torch2/in-root.sh" ||
		fail "the tests on this Debian 13 (torch $host_torch) failed (above)"
	say "ok: on this Debian 13 with its torch $host_torch, no root needed, in $((SECONDS - t1)) s"
	exit 0
fi

for tool in debootstrap unshare chroot flock curl tar; do
	command -v "$tool" >/dev/null || skip "$tool is not installed (apt-get install debootstrap util-linux curl)"
done

cache=${LLMLAUNCH_TEST_CACHE:-/var/cache/llmlaunch-tests}
mirror=${LLMLAUNCH_TEST_MIRROR:-http://deb.debian.org/debian}
root=$cache/$suite-root
# What a fresh root may take (debootstrap about 3 minutes, the packages about 3 more
# on a 2-core machine); past it the half-made root is removed and the test fails.
budget=${LLMLAUNCH_TEST_ROOT_BUDGET:-1200}

mkdir -p "$cache"
exec 9>"$cache/$suite-root.lock"
flock -w "$budget" 9 || fail "another run has held $cache/$suite-root.lock for $budget s"

# The packages the README's demo installs on Debian 13, and what the launch tests use.
packages=$(awk '!/^#/ && NF && $1 == "build" { for (i = 2; i <= NF; i++) print $i }' \
	"$LL_SRCDIR/tools/debian-packages.txt" | sort -u | tr '\n' ' ')
packages="$packages jq procps iproute2"

mirror_ok() { curl -fsS --max-time 20 -o /dev/null "$mirror/dists/$suite/Release"; }

# Run "$@" inside ROOT ($1) with /proc, /sys, /dev and fresh /tmp and /run, in a
# mount namespace of its own: every mount is gone when it ends, however it ends.
in_root() {
	local r=$1
	shift
	unshare -m --propagation private -- /bin/bash -c '
		set -e
		r=$1; shift
		# The root a mount point of its own: `ip netns exec` remounts / (make-rslave).
		mount --bind "$r" "$r"
		mount -t proc proc "$r/proc"
		mount -t sysfs sysfs "$r/sys"
		mount --rbind /dev "$r/dev"
		mount -t tmpfs -o mode=1777 tmpfs "$r/tmp"
		mount -t tmpfs -o mode=755 tmpfs "$r/run"
		[ -z "${LL_IN_ROOT_SRC:-}" ] || { mkdir "$r/tmp/src"; tar -C "$LL_IN_ROOT_SRC" -cf - . | tar -C "$r/tmp/src" -xf -; }
		exec chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
			DEBIAN_FRONTEND=noninteractive "$@"' _ "$r" "$@"
}

# ---- the root: made once, completed when the package list grew -------------------
t0=$SECONDS
if [ ! -e "$root/.complete" ]; then
	mirror_ok || skip "no Debian 13 root in $root and $mirror is not reachable"
	rm -rf "$root.new"
	say "making a Debian 13 root in $root (debootstrap, then $packages)"
	timeout "$budget" debootstrap --variant=minbase "$suite" "$root.new" "$mirror" >"$cache/$suite-root.log" 2>&1 ||
		{ rm -rf "$root.new"; fail "debootstrap failed (last lines of $cache/$suite-root.log): $(tail -3 "$cache/$suite-root.log")"; }
	echo "deb $mirror $suite main" >"$root.new/etc/apt/sources.list"
	left=$((budget - (SECONDS - t0)))
	[ "$left" -gt 0 ] || { rm -rf "$root.new"; fail "debootstrap alone took over $budget s"; }
	# shellcheck disable=SC2086 # the package list is words
	export -f in_root
	timeout "$left" bash -c 'in_root "$@"' _ "$root.new" \
		/bin/sh -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends $packages >/dev/null" \
		>>"$cache/$suite-root.log" 2>&1 ||
		{ rm -rf "$root.new"; fail "installing packages failed: $(tail -3 "$cache/$suite-root.log")"; }
	echo "$packages" >"$root.new/.packages"
	date -u +%FT%TZ >"$root.new/.complete"
	mv "$root.new" "$root"
	say "root made in $((SECONDS - t0)) s"
elif [ "$(cat "$root/.packages" 2>/dev/null)" != "$packages" ]; then
	mirror_ok || skip "the package list changed and $mirror is not reachable"
	# shellcheck disable=SC2086
	in_root "$root" /bin/sh -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends $packages >/dev/null" \
		>>"$cache/$suite-root.log" 2>&1 || fail "installing packages failed: $(tail -3 "$cache/$suite-root.log")"
	echo "$packages" >"$root/.packages"
	say "root's packages completed in $((SECONDS - t0)) s"
fi

# ---- the tests, inside ------------------------------------------------------------
# A copy of the source tree without build directories, built inside by the README's demo.
src=$(mktemp -d /tmp/ll-torch2-src.XXXXXX)
trap 'rm -rf "$src"' EXIT
tar -C "$LL_SRCDIR" --exclude=./.git --exclude='./build*' -cf - . | tar -C "$src" -xf -
t1=$SECONDS
export LL_IN_ROOT_SRC=$src
in_root "$root" /bin/bash /tmp/src/tests/torch2/in-root.sh ||
	fail "the tests inside the Debian 13 root failed (above)"
say "ok: inside the root in $((SECONDS - t1)) s (root ready after $((t1 - t0)) s)"
