#!/bin/bash
# Bad snapshots and roots: exactly one line on stderr, nothing on stdout, exit 1,
# never a crash or a sanitizer report. Usage errors exit 2.
set -u
: "${LLMLAUNCH:?}" "${LL_REALDATA:?}" "${LL_SRCDIR:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# $1 expected exit status, $2 text the one stderr line must contain, then probe args.
expect() {
	local want=$1 text=$2; shift 2
	"$LLMLAUNCH" probe "$@" >"$tmp/out" 2>"$tmp/err"
	local rc=$? lines
	lines=$(wc -l <"$tmp/err")
	if [ "$rc" != "$want" ] || [ "$lines" != 1 ] || [ -s "$tmp/out" ] || ! grep -qF -- "$text" "$tmp/err"; then
		echo "FAIL probe $*: rc=$rc (want $want), $lines stderr line(s), stdout $(wc -c <"$tmp/out") bytes:"
		head -5 "$tmp/err"
		fail=1
	else
		echo "ok   probe $*: $(cat "$tmp/err")"
	fi
}

expect 1 "cannot open '$tmp/missing.xml': No such file or directory" --topology "$tmp/missing.xml"
: >"$tmp/empty.xml"
expect 1 "cannot load '$tmp/empty.xml': the file is empty" --topology "$tmp/empty.xml"
printf '\n  \n' >"$tmp/blank.xml"
expect 1 "the file is empty" --topology "$tmp/blank.xml"
echo 'hello, this is not XML' >"$tmp/text.xml"
expect 1 "cannot load '$tmp/text.xml': not an XML file" --topology "$tmp/text.xml"
printf '\0\1\2binary' >"$tmp/binary.xml"
expect 1 "not an XML file (binary data)" --topology "$tmp/binary.xml"
printf '<?xml version="1.0"?>\n<html><body/></html>\n' >"$tmp/html.xml"
expect 1 "not an hwloc topology" --topology "$tmp/html.xml"
expect 1 "cannot open '$tmp': Is a directory" --topology "$tmp"
# Nesting: 20,000 levels crashed hwloc_topology_load (stack overflow, exit 139).
# The limit is 128 nested elements, ten times the deepest real topology; N Groups
# make N + 2 (<topology>, the Machine), so 126 load and 127 do not.
deep=$LL_SRCDIR/tests/tools/deep-topology.py
python3 "$deep" 20000 "$tmp/deep.xml"
expect 1 "cannot load '$tmp/deep.xml': elements nested more than 128 deep, deeper than any real topology" \
	--topology "$tmp/deep.xml"
python3 "$deep" 127 "$tmp/deep127.xml"
expect 1 "nested more than 128 deep" --topology "$tmp/deep127.xml"
python3 "$deep" 126 "$tmp/deep126.xml"
if "$LLMLAUNCH" probe --topology "$tmp/deep126.xml" >/dev/null 2>"$tmp/err"; then
	echo "ok   probe --topology deep126.xml: 126 nested Groups load"
else
	echo "FAIL probe --topology deep126.xml: $(cat "$tmp/err")"
	fail=1
fi
# Found by tests/fuzz/fuzz-topology.c: hwloc 2.9 dereferences NULL (exit 139, lstopo
# too) when the root object has a cpuset without complete_cpuset, or a nodeset
# without complete_nodeset. hwloc always writes them in pairs; such a file is refused.
numa='<object type="NUMANode" cpuset="0xf" complete_cpuset="0xf" nodeset="0x1" complete_nodeset="0x1"/>'
pu='<object type="PU" cpuset="0x1" complete_cpuset="0x1" nodeset="0x1" complete_nodeset="0x1"/>'
printf '<topology version="2.0"><object type="Machine" cpuset="0xf" nodeset="0x1" complete_nodeset="0x1">%s%s</object></topology>\n' \
	"$numa" "$pu" >"$tmp/no-complete-cpuset.xml"
expect 1 "cannot load '$tmp/no-complete-cpuset.xml': an object has a cpuset or nodeset without its complete_ counterpart (not hwloc's own XML)" \
	--topology "$tmp/no-complete-cpuset.xml"
printf '<topology version="2.0"><object type="Machine" cpuset="0xf" complete_cpuset="0xf" nodeset="0x1">%s%s</object></topology>\n' \
	"$numa" "$pu" >"$tmp/no-complete-nodeset.xml"
expect 1 "without its complete_ counterpart" --topology "$tmp/no-complete-nodeset.xml"
printf '<topology version="2.0"><object cpuset="f"nodeset=""o><object type="NU" cpuset="0"nodeset=""t> </object></object></topology>\n' \
	>"$tmp/fuzz-crash-1.xml"
expect 1 "cannot load '$tmp/fuzz-crash-1.xml': an object's CPU or NUMA set is not hwloc's 0x... words" \
	--topology "$tmp/fuzz-crash-1.xml"
printf '<topology version="2.0"><object type="Machine" cpuset="0xf"o>%s</object></topology>\n' "$numa" >"$tmp/attrs.xml"
expect 1 "cannot load '$tmp/attrs.xml': an object's attributes are not name=\"value\" pairs (not hwloc's own XML)" \
	--topology "$tmp/attrs.xml"
# A set whose first word is empty: hwloc's parser asserts (abort, exit 134).
printf '<topology version="2.0"><object type="Machine" cpuset="0xf" complete_cpuset="0xf" nodeset=",0x1" complete_nodeset="0x1">%s%s</object></topology>\n' \
	"$numa" "$pu" >"$tmp/fuzz-crash-2.xml"
expect 1 "cannot load '$tmp/fuzz-crash-2.xml': an object's CPU or NUMA set is not hwloc's 0x... words" \
	--topology "$tmp/fuzz-crash-2.xml"
# Also found by it: hwloc sizes its bitmaps by PU and NUMA numbers, so one PU
# numbered 4294967000 cost 1 GB in every command (2^64 - 160 with an infinite
# cpuset: 3.6 GB, 9 s). Numbers above 2^20 are refused.
printf '<topology version="2.0"><object type="Machine" cpuset="0xf" complete_cpuset="0xf" nodeset="0x1" complete_nodeset="0x1">%s%s</object></topology>\n' \
	"$numa" '<object type="PU" cpuset="0x1" complete_cpuset="0x1" nodeset="0x1" complete_nodeset="0x1" os_index="4294967000"/>' \
	>"$tmp/huge-pu.xml"
expect 1 "cannot load '$tmp/huge-pu.xml': a PU or NUMA node numbered above 1048576, beyond any machine's" \
	--topology "$tmp/huge-pu.xml"
# Found by fuzz-topology in CI: a NUMA node under the root with neither cpuset nor
# nodeset makes hwloc 2.9 dereference NULL (hwloc_bitmap_isequal), even when the
# root's sets are complete. hwloc writes both on every NUMA node; hwloc reads any
# prefix of a type name ("NU", "node"), so the rule matches types as hwloc does.
for t in NUMANode NU node; do
	printf '<topology version="2.0"><object type="Machine" cpuset="0xf" complete_cpuset="0xf" nodeset="0x1" complete_nodeset="0x1"><object type="%s" os_index="0"/>%s</object></topology>\n' \
		"$t" "$pu" >"$tmp/numa-no-sets-$t.xml"
	expect 1 "cannot load '$tmp/numa-no-sets-$t.xml': a NUMA node without its cpuset and nodeset (not hwloc's own XML)" \
		--topology "$tmp/numa-no-sets-$t.xml"
done
printf '<topology><object cpuset="0xf" complete_cpuset="0x0"><object type="NU"></object></object></topology>\n' >"$tmp/fuzz-crash-3.xml"
expect 1 "a NUMA node without its cpuset and nodeset" --topology "$tmp/fuzz-crash-3.xml"
# The os_index limit reads the type as hwloc does too.
printf '<topology version="2.0"><object type="Machine" cpuset="0xf" complete_cpuset="0xf" nodeset="0x1" complete_nodeset="0x1"><object type="node" os_index="4294967000" cpuset="0xf" complete_cpuset="0xf" nodeset="0x1" complete_nodeset="0x1"/>%s</object></topology>\n' \
	"$pu" >"$tmp/huge-node.xml"
expect 1 "a PU or NUMA node numbered above 1048576, beyond any machine's" --topology "$tmp/huge-node.xml"
# Found by fuzz-topology in CI (the fifth): hwloc's own XML reader takes attributes
# as [a-z_]+="value" and, at the first it cannot read, silently stops reading the
# object's attributes. A root whose complete_nodeset comes after such a thing has,
# for hwloc, a nodeset without it: lstopo and hwloc_topology_load dereference NULL
# (exit 139) for each of these three. The checker reads attributes as that reader
# does, so whatever it cannot read is refused.
machine='<object type="Machine" os_index="0" cpuset="0xf" complete_cpuset="0xf" nodeset="0x1"'
printf '<topology version="2.0">%s x-y="1" complete_nodeset="0x1">%s%s</object></topology>\n' "$machine" "$numa" "$pu" >"$tmp/attr-name.xml"
expect 1 "cannot load '$tmp/attr-name.xml': an object's attributes are not name=\"value\" pairs (not hwloc's own XML)" \
	--topology "$tmp/attr-name.xml"
printf '<topology version="2.0">%s\rcomplete_nodeset="0x1">%s%s</object></topology>\n' "$machine" "$numa" "$pu" >"$tmp/attr-cr.xml"
expect 1 "an object's attributes are not name=\"value\" pairs" --topology "$tmp/attr-cr.xml"
printf '<topology version="2.0">%s name="a&b" complete_nodeset="0x1">%s%s</object></topology>\n' "$machine" "$numa" "$pu" >"$tmp/attr-amp.xml"
expect 1 "an object's attribute value holds an '&' that starts none of the escapes hwloc writes" --topology "$tmp/attr-amp.xml"
# The escapes hwloc writes are fine, a raw '>' (which ends the element for hwloc) is not.
printf '<topology version="2.0">%s name="a&amp;b&quot;&#10;" complete_nodeset="0x1">%s%s</object></topology>\n' "$machine" "$numa" "$pu" >"$tmp/attr-escapes.xml"
if ! "$LLMLAUNCH" probe --topology "$tmp/attr-escapes.xml" >/dev/null 2>"$tmp/err"; then
	echo "FAIL probe --topology attr-escapes.xml (hwloc's own escapes): $(cat "$tmp/err")"
	fail=1
fi
printf '<topology version="2.0">%s name="a>b" complete_nodeset="0x1">%s%s</object></topology>\n' "$machine" "$numa" "$pu" >"$tmp/attr-gt.xml"
expect 1 "an object's attribute value holds a raw '<' or '>'" --topology "$tmp/attr-gt.xml"
# hwloc checks the root's sets only after it has read the children, which use them.
printf '<topology><object type="Machine" os_index="0"><object type="NUMANode" os_index="0" cpuset="0xf" complete_cpuset="0xf" nodeset="0x1" complete_nodeset="0x1">%s</object></object></topology>\n' \
	"$pu" >"$tmp/root-no-cpuset.xml"
expect 1 "cannot load '$tmp/root-no-cpuset.xml': the root object has no cpuset (not hwloc's own XML)" --topology "$tmp/root-no-cpuset.xml"
printf '<topology version="2.0"><object type="Machine" os_index="0" cpuset="0xf" complete_cpuset="0xf">%s%s</object></topology>\n' \
	"$numa" "$pu" >"$tmp/root-no-nodeset.xml"
expect 1 "the root object lacks its cpuset or nodeset" --topology "$tmp/root-no-nodeset.xml"
# What is not a regular file is refused at once: a FIFO with no writer would make
# open() wait forever, a device would be read forever.
mkfifo "$tmp/fifo.xml"
expect 1 "cannot open '$tmp/fifo.xml': not a regular file (a FIFO, socket or device)" --topology "$tmp/fifo.xml"
expect 1 "cannot open '/dev/zero': not a regular file" --topology /dev/zero
expect 1 "cannot use fsroot '$tmp/nowhere'" --fsroot "$tmp/nowhere"
expect 1 "not a directory" --fsroot "$tmp/empty.xml"
mkdir "$tmp/emptyroot"
expect 1 "cannot use fsroot '$tmp/emptyroot': no sys/devices/system/cpu" --fsroot "$tmp/emptyroot"
# An unknown option is the one line of every command, and a hint.
"$LLMLAUNCH" probe --jsn >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" != 2 ] || [ "$(sed -n 1p "$tmp/err")" != "llmlaunch: probe: unknown option '--jsn'" ] ||
	[ "$(sed -n 2p "$tmp/err")" != "hint: did you mean '--json'? (llmlaunch probe --help)" ]; then
	echo "FAIL probe --jsn: rc=$rc: $(cat "$tmp/err")"
	fail=1
fi
expect 2 "exclude each other" --topology "$tmp/empty.xml" --fsroot "$tmp"
expect 2 "unexpected argument 'extra'" extra

if [ -d "$LL_REALDATA/nccl_topo" ]; then
	for f in "$LL_REALDATA"/nccl_topo/*.partial.xml "$LL_REALDATA"/nccl_topo/*.fragment.xml \
		 "$LL_REALDATA"/nccl_topo/azhpc-ndv4-topo.xml; do
		[ -f "$f" ] && expect 1 "cannot load '$f'" --topology "$f"
	done
fi
if [ -d "$LL_REALDATA/hwloc_xml" ]; then
	expect 1 "hwloc 3.x XML format" --topology "$LL_REALDATA/hwloc_xml/hwloc-nvidiaDGX2.xml"
	# Real hwloc files cut short at several points, inside tags and between them.
	src="$LL_REALDATA/hwloc_xml/psmgmt/topo.jrc0323.xml"
	size=$(wc -c <"$src")
	for n in 100 1000 4000 12345 30001 60000 $((size - 20)) $((size - 2)); do
		head -c "$n" "$src" >"$tmp/cut$n.xml"
		expect 1 "cannot load '$tmp/cut$n.xml': invalid or truncated hwloc XML" --topology "$tmp/cut$n.xml"
	done
	# A snapshot with a garbage object inside.
	sed 's/<object type="Package"/<object type="Bogus"/' "$src" >"$tmp/garbage.xml"
	expect 1 "cannot load '$tmp/garbage.xml'" --topology "$tmp/garbage.xml"
else
	echo "note: $LL_REALDATA absent, real truncated files not checked" >&2
fi

# --save into a directory that does not exist: the probe works, the save fails.
if [ -d "$LL_REALDATA/hwloc_xml" ]; then
	expect 1 "cannot save '$tmp/no/such/dir.xml'" --topology "$LL_REALDATA/hwloc_xml/psmgmt/topo.jrc0323.xml" \
		--save "$tmp/no/such/dir.xml"
fi
exit $fail
