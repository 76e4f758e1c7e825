# Shared by tests/integration/launch-*.sh (sourced; not a test itself).
set -euo pipefail

: "${LLMLAUNCH:?LLMLAUNCH must name the built llmlaunch}"
: "${LL_SRCDIR:?LL_SRCDIR must name the source tree}"
EXAMPLE="$LL_SRCDIR/examples/train.py"
# Debian's python3-torch lives under /usr/bin/python3; `python3` on PATH may be a
# pyenv shim without torch.
PY="${LLMLAUNCH_TEST_PYTHON:-/usr/bin/python3}"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ll-launch-test.XXXXXX")
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT
# llmlaunch puts each job's torchrun log directory under TMPDIR: keep it in WORK so a
# test can check that nothing is left behind.
export TMPDIR="$WORK/tmp"
mkdir -p "$TMPDIR"

# On failure, show what llmlaunch and the job said (WORK is removed on exit).
fail() {
	local f
	echo "FAIL: $*" >&2
	for f in "$WORK"/err* "$WORK"/out*; do
		[ -s "$f" ] || continue
		echo "--- last lines of ${f##*/}:" >&2
		tail -n 30 "$f" >&2
	done
	exit 1
}
skip() { echo "SKIP: $*" >&2; exit 77; }

require_jq() { command -v jq >/dev/null || skip "jq is not installed (apt-get install jq)"; }

require_torch() {
	[ -x "$PY" ] || skip "no interpreter at $PY (set LLMLAUNCH_TEST_PYTHON)"
	"$PY" -c 'import torch.distributed.run' 2>/dev/null ||
		skip "torch is not importable by $PY (apt-get install --no-install-recommends python3-torch)"
}

# assert_eq WHAT EXPECTED ACTUAL
assert_eq() {
	[ "$2" = "$3" ] || fail "$1: expected '$2', got '$3'"
}

# field FILE RANK KEY: a key=value from the example's report line of one rank
field() {
	grep "^llmlaunch-example rank=$2 " "$1" | tr ' ' '\n' | sed -n "s/^$3=//p"
}

# The job directory must be gone and torchrun must have left nothing in TMPDIR.
# Except one thing of torch's own: a worker that imports torch.distributed.nn (torch
# 2.6 does through torch.distributed._shard on the example's path) makes a
# TemporaryDirectory (torch/distributed/nn/jit/instantiator.py, _TEMP_DIR) holding only
# the generated _remote_module_*.py (and its __pycache__), which a finalizer removes at
# a normal exit only, so each worker that a signal ends leaves one, under bare
# torchrun too: those are dropped.
drop_torch_module_dirs() {
	local d f torch_only
	for d in "$TMPDIR"/tmp????????; do
		[ -d "$d" ] || continue
		torch_only=1
		for f in "$d"/* "$d"/.[!.]*; do
			[ -e "$f" ] || continue
			case ${f##*/} in _remote_module_*.py | __pycache__) ;; *) torch_only= ;; esac
		done
		[ -z "$torch_only" ] || rm -rf "$d"
	done
}
assert_tmp_clean() {
	local left
	drop_torch_module_dirs
	left=$(ls -A "$TMPDIR")
	[ -z "$left" ] || fail "left behind in TMPDIR: $left"
}
