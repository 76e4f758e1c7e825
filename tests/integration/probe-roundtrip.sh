#!/bin/bash
# probe --save, then --topology of the saved file, must give byte-identical --json:
# on this machine live, on real lstopo exports (hwloc 2 and 1.x formats, NVLink
# distances), and on a real sysfs tree read through --fsroot.
set -u
: "${LLMLAUNCH:?}" "${LL_REALDATA:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# $1 label, then the probe options that load the original.
roundtrip() {
	local label=$1; shift
	local snap="$tmp/$label.xml"
	if ! "$LLMLAUNCH" probe --json --save "$snap" "$@" >"$tmp/$label.first.json" 2>"$tmp/$label.err"; then
		echo "FAIL $label: probe $* failed: $(cat "$tmp/$label.err")"
		fail=1
		return
	fi
	if [ -s "$tmp/$label.err" ]; then
		echo "FAIL $label: stderr not empty: $(cat "$tmp/$label.err")"
		fail=1
	fi
	if ! "$LLMLAUNCH" probe --json --topology "$snap" >"$tmp/$label.replay.json" 2>"$tmp/$label.err2"; then
		echo "FAIL $label: replay failed: $(cat "$tmp/$label.err2")"
		fail=1
		return
	fi
	if ! cmp -s "$tmp/$label.first.json" "$tmp/$label.replay.json"; then
		echo "FAIL $label: replay differs"
		diff "$tmp/$label.first.json" "$tmp/$label.replay.json" | head -20
		fail=1
		return
	fi
	# The snapshot is a standard hwloc file: lstopo reads it.
	if command -v lstopo-no-graphics >/dev/null &&
	   ! lstopo-no-graphics --if xml --input "$snap" --of console >/dev/null 2>&1; then
		echo "FAIL $label: lstopo cannot read the snapshot"
		fail=1
		return
	fi
	# A live snapshot says it is one.
	if [ "$label" = live ] && ! grep -q 'name="LLMLaunchSnapshot" value="1"' "$snap"; then
		echo "FAIL live: no LLMLaunchSnapshot info in the snapshot"
		fail=1
		return
	fi
	echo "ok $label ($(wc -c <"$tmp/$label.first.json") bytes of JSON)"
}

roundtrip live
# Nothing else may differ between text and replay either.
"$LLMLAUNCH" probe >"$tmp/live.txt" 2>&1 || { echo "FAIL live text"; fail=1; }
"$LLMLAUNCH" probe --topology "$tmp/live.xml" >"$tmp/replay.txt" 2>&1 || { echo "FAIL replay text"; fail=1; }
if ! diff <(grep -v '^  source ' "$tmp/live.txt") <(grep -v '^  source ' "$tmp/replay.txt") >/dev/null; then
	echo "FAIL live text differs from its replay"
	fail=1
fi

if [ -d "$LL_REALDATA/hwloc_xml" ]; then
	roundtrip jureca --topology "$LL_REALDATA/hwloc_xml/psmgmt/topo.jrc0323.xml"
	roundtrip jureca-hwloc1 --topology "$LL_REALDATA/hwloc_xml/psmgmt/topo.jrc0386.xml"
	roundtrip dgx2 --topology "$LL_REALDATA/hwloc_xml/hwloc-v2x-nvidiaDGX2.xml"
	roundtrip lassen --topology "$LL_REALDATA/hwloc_xml/mpibind/coral-lassen.xml"
	# The replay of a replay is the same file again.
	"$LLMLAUNCH" probe --topology "$tmp/dgx2.xml" --save "$tmp/dgx2b.xml" >/dev/null 2>&1
	if ! cmp -s "$tmp/dgx2.xml" "$tmp/dgx2b.xml"; then
		echo "FAIL dgx2: saving a replayed snapshot changed it"
		fail=1
	fi
else
	echo "note: $LL_REALDATA/hwloc_xml absent, real exports not checked" >&2
fi

tarball="$LL_REALDATA/sysfs_tarballs/32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2"
if [ -f "$tarball" ]; then
	mkdir "$tmp/fsroot"
	tar -xjf "$tarball" -C "$tmp/fsroot"
	root=$(find "$tmp/fsroot" -mindepth 1 -maxdepth 1 -type d | head -1)
	roundtrip fsroot --fsroot "$root"
fi
exit $fail
