#!/usr/bin/env bash
# `cpack -G DEB` from the test suite's own build: the package holds the binary, its
# fetch module, the profiles, the three shell completions and the man page; its
# Depends line is what dpkg-shlibdeps found in what really links. Unpacked with
# `dpkg -x` into a temporary root (nothing is installed on this machine), the binary
# runs from there and finds its profiles and module relative to itself.
set -u
skip() { echo "skipped: $*" >&2; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
: "${LLMLAUNCH:?}" "${LL_BUILDDIR:?}" "${LL_SRCDIR:?}"
for t in cpack dpkg-deb dpkg-shlibdeps dpkg; do
	command -v "$t" >/dev/null || skip "$t is not installed (apt-get install cmake dpkg-dev)"
done
tmp=$(mktemp -d /tmp/ll-deb-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset LLMLAUNCH_PROFILE_PATH LLMLAUNCH_MODULE_DIR

# cpack runs the build's install rules into its own staging tree; -B keeps every file
# it writes in $tmp.
(cd "$LL_BUILDDIR" && timeout 240 cpack -G DEB -B "$tmp/pkg") >"$tmp/cpack.log" 2>&1 ||
	fail "cpack failed: $(tail -20 "$tmp/cpack.log")"
mapfile -t debs < <(ls "$tmp"/pkg/*.deb 2>/dev/null)
[ ${#debs[@]} = 1 ] || fail "expected one .deb, found: ${debs[*]:-none}"
deb=${debs[0]}

version=$("$LLMLAUNCH" --version) || fail "the built binary has no --version"
[ "$(dpkg-deb -f "$deb" Package)" = llmlaunch ] || fail "package name: $(dpkg-deb -f "$deb" Package)"
[ "llmlaunch $(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "package version $(dpkg-deb -f "$deb" Version) vs '$version'"
[ "$(dpkg-deb -f "$deb" Architecture)" = "$(dpkg --print-architecture)" ] || fail "architecture"

# Runtime dependencies: one package per library the binary and the module link
# (Debian 13 renamed some for the 64-bit time_t transition: libpmix2t64, libcurl4t64).
depends=$(dpkg-deb -f "$deb" Depends)
for pkg in libc6 libhwloc15 libyaml-0-2 libjansson4 libpmix2 libcurl4; do
	echo ", $depends," | grep -qE ", $pkg(t64)?( \([^)]*\))?," || fail "Depends lacks $pkg: $depends"
done

# Contents, at their Debian paths.
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$tmp/contents"
for f in /usr/bin/llmlaunch /usr/share/llmlaunch/profiles/dgx-h100.yaml /usr/share/llmlaunch/profiles/infiniband.yaml \
	/usr/share/bash-completion/completions/llmlaunch /usr/share/zsh/vendor-completions/_llmlaunch \
	/usr/share/fish/vendor_completions.d/llmlaunch.fish /usr/share/man/man1/llmlaunch.1; do
	grep -qxF "$f" "$tmp/contents" || fail "the package lacks $f"
done
grep -q '^/usr/lib/.*llmlaunch-fetch\.so$' "$tmp/contents" || fail "the package lacks the fetch module"
n=$(ls "$LL_SRCDIR"/profiles/*.yaml | wc -l)
[ "$(grep -c '^/usr/share/llmlaunch/profiles/.*\.yaml$' "$tmp/contents")" = "$n" ] || fail "not all $n profiles are packaged"

# Unpack into a root of its own and run from there.
dpkg -x "$deb" "$tmp/root" || fail "dpkg -x failed"
bin=$tmp/root/usr/bin/llmlaunch
[ "$("$bin" --version)" = "$version" ] || fail "unpacked --version: $("$bin" --version 2>&1)"
"$bin" probe >"$tmp/probe.txt" 2>"$tmp/probe.err" || fail "unpacked probe failed: $(cat "$tmp/probe.err")"
grep -q '^GPUDirect RDMA' "$tmp/probe.txt" || fail "unpacked probe output: $(head -20 "$tmp/probe.txt")"
"$bin" probe --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert isinstance(d, dict)' ||
	fail "unpacked probe --json is not a JSON object"
# Profiles come from the unpacked root, not from the source tree or /usr.
"$bin" profiles list >"$tmp/profiles.txt" 2>&1 || fail "unpacked profiles list: $(cat "$tmp/profiles.txt")"
grep -qE "^dgx-h100 .*$tmp/root/usr/(bin/\.\./)?share/llmlaunch/profiles/dgx-h100.yaml$" "$tmp/profiles.txt" ||
	fail "profiles are not found relative to the binary: $(cat "$tmp/profiles.txt")"
# The fetch module loads from the root: a URL fails at the connection, not at the loader.
"$bin" profiles show http://127.0.0.1:9/p.yaml >"$tmp/fetch.out" 2>&1 && fail "fetching from a closed port succeeded"
grep -q "cannot load the 'fetch' module" "$tmp/fetch.out" && fail "the fetch module did not load: $(cat "$tmp/fetch.out")"
grep -qi "127.0.0.1" "$tmp/fetch.out" || fail "fetch error does not name the server: $(cat "$tmp/fetch.out")"
echo "ok: $(basename "$deb"), Depends: $depends"
