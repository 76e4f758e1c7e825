#!/usr/bin/env bash
# Standard output is checked once, in main(), for every command: output that cannot
# be written (here /dev/full) is a failure with exactly one message, never a silent
# exit 0. Every command and nested command is tried with --help, and the commands
# that print data with their data, small and larger than stdio's and a pipe's buffer.
set -euo pipefail
: "${LLMLAUNCH:?}" "${LL_FIXTURES:?}"
topo=$LL_FIXTURES/hwloc/two-socket-4gpu-2hca.xml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -w /dev/full ] || { echo "skipped: no /dev/full" >&2; exit 77; }
failures=0

expect_one_message() { # DESCRIPTION, then the command
	local what=$1 rc=0
	shift
	"$@" >/dev/full 2>"$tmp/err" </dev/null || rc=$?
	if [ "$rc" = 0 ]; then
		echo "FAIL: '$what' exited 0 with its output lost" >&2
		failures=$((failures + 1))
		return
	fi
	if [ "$(grep -c . "$tmp/err")" != 1 ] ||
		! grep -qx "llmlaunch: cannot write to standard output: No space left on device" "$tmp/err"; then
		echo "FAIL: '$what' (exit $rc) said:" >&2
		sed 's/^/    /' "$tmp/err" >&2
		failures=$((failures + 1))
	fi
}

expect_one_message "--help" "$LLMLAUNCH" --help
expect_one_message "--version" "$LLMLAUNCH" --version
for cmd in probe env explain run check logs profiles slurm __worker; do
	expect_one_message "$cmd --help" "$LLMLAUNCH" $cmd --help
done
expect_one_message "slurm prolog --help" "$LLMLAUNCH" slurm prolog --help
expect_one_message "slurm task-prolog --help" "$LLMLAUNCH" slurm task-prolog --help
expect_one_message "probe" "$LLMLAUNCH" probe --topology "$topo"
expect_one_message "probe --json" "$LLMLAUNCH" probe --json --topology "$topo"
expect_one_message "env" "$LLMLAUNCH" env --topology "$topo"
expect_one_message "explain" "$LLMLAUNCH" explain --topology "$topo"
expect_one_message "explain --json" "$LLMLAUNCH" explain --json --topology "$topo"
expect_one_message "profiles list" "$LLMLAUNCH" profiles list --topology "$topo"
expect_one_message "run --dry-run" "$LLMLAUNCH" run --dry-run --topology "$topo" --python /bin/true "$LL_FIXTURES/../../examples/train.py"
expect_one_message "slurm task-prolog" env SLURM_STEP_NUM_NODES=2 "$LLMLAUNCH" slurm task-prolog --topology "$topo"
# Past stdio's buffer (4 KB on /dev/full) a write fails inside printf, and the final
# flush may have nothing left to write: the message still names the write's cause.
# Past a pipe buffer (64 KB) too.
for size in 5000 70000; do
	big=$(head -c "$size" /dev/zero | tr '\0' x)
	expect_one_message "env, $size bytes more" "$LLMLAUNCH" env --topology "$topo" --set "LLTEST_BIG=$big"
done
[ "$failures" = 0 ] || exit 1
echo "cli-stdout: ok"
