#!/usr/bin/env bash
# The folders are layers (docs/architecture.md): tools/check-layers.py passes on this
# tree, sources and compiled objects, and fails, naming the file and the edge, on a
# copy where probe/ includes the CLI's header or a planner file reaches into the
# CLI's folder.
set -euo pipefail
: "${LL_SRCDIR:?}" "${LL_BUILDDIR:?}"
check=$LL_SRCDIR/tools/check-layers.py

python3 "$check" --objects "$LL_BUILDDIR/CMakeFiles/llmlaunch_core.dir"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tree"
(cd "$LL_SRCDIR" && tar cf - common probe launcher include tools) | tar xf - -C "$tmp/tree"
python3 "$check" --root "$tmp/tree" >/dev/null

cp "$tmp/tree/probe/host.c" "$tmp/host.c"
echo '#include "llmlaunch/cli.h"' >>"$tmp/tree/probe/host.c"
if python3 "$check" --root "$tmp/tree" 2>"$tmp/err"; then
	echo "FAIL: an upward include from probe/ passed" >&2
	exit 1
fi
grep -q "probe/host.c:[0-9]*: probe/ includes 'llmlaunch/cli.h' of launcher/cli/, a layer above it" "$tmp/err" ||
	{ cat "$tmp/err" >&2; echo "FAIL: the message does not name the edge" >&2; exit 1; }

cp "$tmp/host.c" "$tmp/tree/probe/host.c"
echo '#include "../cli/cmd-run-internal.h"' >>"$tmp/tree/launcher/plan/plan.c"
if python3 "$check" --root "$tmp/tree" 2>"$tmp/err"; then
	echo "FAIL: a '../' include passed" >&2
	exit 1
fi
grep -q "launcher/plan/plan.c:[0-9]*: '../cli/cmd-run-internal.h' reaches into another folder" "$tmp/err" ||
	{ cat "$tmp/err" >&2; echo "FAIL: the message does not name the include" >&2; exit 1; }
echo "layers: ok"
