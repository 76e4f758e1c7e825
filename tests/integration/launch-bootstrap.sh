# The bootstrap (docs/launch.md, "The bootstrap"): a worker's script sees the same
# argv, __file__, __name__, sys.path[0] and exit status through it as under a plain
# `python SCRIPT`; an
# unknown feature stops the start with one line; explain asks the job's torch once
# (then the cache answers) and never runs Python for --fsroot.
. "$(dirname "$0")/launch-common.bash"
require_jq

# --fsroot describes another node: a Python that records being run is never run.
cat >"$WORK/spy" <<SPY
#!/bin/sh
echo ran >>"$WORK/spy.log"
exit 1
SPY
chmod +x "$WORK/spy"
LLMLAUNCH_PYTHON=$WORK/spy "$LLMLAUNCH" explain --fsroot / --json >"$WORK/fsroot.json"
[ ! -e "$WORK/spy.log" ] || fail "explain --fsroot ran the interpreter"
assert_eq "--fsroot reason" "torch was not asked (--fsroot describes another node): no bootstrap" \
	"$(jq -r '.settings[] | select(.name == "LLMLAUNCH_BOOTSTRAP") | .reason' "$WORK/fsroot.json")"

require_torch
# Asked once: the second explain takes the cached answer (the interpreter is not run).
cache=$(mktemp -d "$WORK/cache.XXXXXX")
LLMLAUNCH_CACHE_DIR=$cache LLMLAUNCH_PYTHON=$PY "$LLMLAUNCH" explain --json >"$WORK/e1.json"
reason=$(jq -r '.settings[] | select(.name == "LLMLAUNCH_BOOTSTRAP") | .reason' "$WORK/e1.json")
version=$("$PY" -c 'import torch; print(torch.__version__)')
case $reason in
"torch $version "*) ;;
*) fail "explain's reason does not name torch $version: $reason" ;;
esac
ls "$cache"/torch-*.txt >/dev/null 2>&1 || fail "no cached answer in $cache: $(ls "$cache")"
# The cached answer stands for the interpreter: a changed copy of it is asked again.
sed -i 's/^libuv .*/libuv missing/' "$cache"/torch-*.txt
LLMLAUNCH_CACHE_DIR=$cache LLMLAUNCH_PYTHON=$PY "$LLMLAUNCH" explain --json >"$WORK/e2.json"
assert_eq "the cache answers" libuv-off \
	"$(jq -r '.settings[] | select(.name == "LLMLAUNCH_BOOTSTRAP") | .value' "$WORK/e2.json")"

# A launch with replayed facts (--fsroot) still starts this machine's interpreter: its
# torch is asked (explain --fsroot above is not), or torch 2.x without libuv fails.
cache=$(mktemp -d "$WORK/cache.XXXXXX")
LLMLAUNCH_CACHE_DIR=$cache "$LLMLAUNCH" --fsroot / --python "$PY" --nproc-per-node 1 "$LL_SRCDIR/examples/train.py" \
	--steps 1 >"$WORK/fsroot-run.out" 2>"$WORK/fsroot-run.err" || fail "a launch with --fsroot / failed"
ls "$cache"/torch-*.txt >/dev/null 2>&1 || fail "a launch with --fsroot did not ask torch: $(ls "$cache")"
rm -rf "$TMPDIR"/llmlaunch-*

# A worker's script sees through the bootstrap what `python SCRIPT` shows it: the plain
# interpreter is the reference (torch >= 2.4 without libuv cannot run the job without
# the bootstrap at all).
mkdir "$WORK/sub"
cat >"$WORK/sub/show.py" <<'PY'
import json, sys
main = sys.modules["__main__"]
print("show " + json.dumps({"argv": sys.argv, "file": __file__, "name": __name__, "path0": sys.path[0],
                            "main": main.__dict__ is globals(), "spec": __spec__ is None}, sort_keys=True))
sys.exit(int(sys.argv[1]))
PY
ln -s sub/show.py "$WORK/link.py"
cd "$WORK"
for target in sub/show.py link.py; do
	set +e
	"$PY" -u "$target" 5 a >"$WORK/plain.out" 2>"$WORK/err.plain"
	rc_plain=$?
	LLMLAUNCH_BOOTSTRAP=libuv-off "$LLMLAUNCH" --python "$PY" --nproc-per-node 1 "$target" 5 a \
		>"$WORK/boot.out" 2>"$WORK/err.boot"
	rc_boot=$?
	set -e
	assert_eq "$target: exit status of the plain interpreter" 5 "$rc_plain"
	assert_eq "$target: exit status through llmlaunch and the bootstrap" 5 "$rc_boot"
	plain=$(grep '^show ' "$WORK/plain.out") || fail "$target: no line from the plain interpreter"
	boot=$(grep '^show ' "$WORK/boot.out") || fail "$target: no line through the bootstrap"
	assert_eq "$target: what the script sees" "$plain" "$boot"
done
"$LLMLAUNCH" --dry-run --python "$PY" --set LLMLAUNCH_BOOTSTRAP=libuv-off sub/show.py 0 >"$WORK/dry.out"
grep -q "^$PY [^ ]*/llmlaunch_boot.py -m torch.distributed.run .* -- $PY -u [^ ]*/llmlaunch_boot.py sub/show.py 0\$" \
	"$WORK/dry.out" || fail "dry run's command: $(tail -1 "$WORK/dry.out")"

# A script that ends, then dies of a signal while its interpreter shuts down (what a
# torch thread that takes the GIL during Python's shutdown does, pytorch/pytorch#38228):
# through the bootstrap the rank keeps the script's status and says so; a signal
# before the script's end, or without the bootstrap, is the rank's end as before.
cat >"$WORK/sub/late.py" <<'PY'
import os, signal, sys
class DiesAtShutdown:
    def __init__(self):
        self.kill, self.pid, self.write = os.kill, os.getpid(), os.write
    def __del__(self):
        self.write(2, b"late: dying while the interpreter shuts down\n")
        self.kill(self.pid, signal.SIGABRT)
late = DiesAtShutdown()
if sys.argv[1] == "during":
    os.kill(os.getpid(), signal.SIGABRT)
sys.exit(int(sys.argv[2]))
PY
late() { # NAME BOOTSTRAP ARGS...: runs sub/late.py ARGS, sets rc
	local name=$1 boot=$2
	shift 2
	set +e
	LLMLAUNCH_BOOTSTRAP=$boot "$LLMLAUNCH" --python "$PY" --nproc-per-node 1 sub/late.py "$@" \
		>"$WORK/out.$name" 2>"$WORK/err.$name"
	rc=$?
	set -e
	grep -q "^late: dying" "$WORK/err.$name" || [ "$1" = during ] ||
		fail "$name: the script did not die at shutdown: $(tail -5 "$WORK/err.$name")"
}
late after0 libuv-off after 0
assert_eq "ended 0, died at shutdown, through the bootstrap: exit status" 0 "$rc"
grep -q "warning: rank 0 on [^:]*: the script ended with status 0, then its interpreter died of SIGABRT while shutting down.*status 0 kept" \
	"$WORK/err.after0" || fail "after0: no word of the shutdown: $(tail -5 "$WORK/err.after0")"
late after4 libuv-off after 4
assert_eq "ended 4, died at shutdown, through the bootstrap: exit status" 4 "$rc"
kept=$(sed -n "s/^llmlaunch: the job's record is kept in '\([^']*\)'.*/\1/p" "$WORK/err.after4")
[ -n "$kept" ] || fail "after4: the failed job's record was not kept: $(tail -5 "$WORK/err.after4")"
"$LLMLAUNCH" logs "$kept" >"$WORK/logs.after4" 2>&1 || true
grep -q "rank 0.*: exit 4, then signal ABRT while shutting down" "$WORK/logs.after4" ||
	fail "after4: logs: $(cat "$WORK/logs.after4")"
late during libuv-off during 0
assert_eq "died during the script, through the bootstrap: exit status" 134 "$rc"
# Without it (where this torch can start without it: not torch >= 2.4 without libuv).
if [ "$(jq -r '.settings[] | select(.name == "LLMLAUNCH_BOOTSTRAP") | .value' "$WORK/e1.json")" = null ]; then
	late plain "" after 0
	assert_eq "ended 0, died at shutdown, without the bootstrap: exit status" 134 "$rc"
fi
rm -rf "$TMPDIR"/llmlaunch-*

# The stacks feature names llmlaunch's process the rank's ptracer (PR_SET_PTRACER), so
# that gdb or py-spy, its children, may attach under Yama's ptrace_scope 1. The kernel
# here may have no Yama (the call then fails with EINVAL): strace shows the call.
if command -v strace >/dev/null; then
	mkdir "$WORK/stacks"
	LLMLAUNCH_BOOTSTRAP=stacks LLMLAUNCH_STACKS_DIR="$WORK/stacks" LLMLAUNCH_STACKS_SIGNAL=38 RANK=0 \
		LLMLAUNCH_STACKS_TRACER=4321 strace -o "$WORK/strace.out" -e trace=prctl \
		"$PY" "$LL_SRCDIR/python/llmlaunch_boot.py" sub/show.py 0 >/dev/null ||
		fail "the bootstrap with stacks failed under strace"
	grep -q '^prctl(PR_SET_PTRACER, 4321' "$WORK/strace.out" ||
		fail "the stacks feature did not name its ptracer: $(cat "$WORK/strace.out")"
	[ -e "$WORK/stacks/rank-0.txt" ] || fail "the stacks feature did not register its handler"
fi

# A feature this bootstrap does not know: one line, no traceback.
set +e
LLMLAUNCH_BOOTSTRAP=libuv-off,warp-drive "$LLMLAUNCH" --python "$PY" --nproc-per-node 1 sub/show.py 0 \
	>"$WORK/out.unknown" 2>"$WORK/err.unknown"
rc=$?
set -e
[ "$rc" != 0 ] || fail "an unknown feature started the job"
grep -q "llmlaunch bootstrap: unknown feature 'warp-drive' in LLMLAUNCH_BOOTSTRAP (known: libuv-off, stacks)" \
	"$WORK/err.unknown" "$WORK/out.unknown" || fail "unknown feature: $(cat "$WORK/err.unknown")"
! grep -q Traceback "$WORK/err.unknown" || fail "unknown feature: a traceback"
# Failed jobs keep their record (docs/failures.md); nothing else may stay.
rm -rf "$TMPDIR"/llmlaunch-*
assert_tmp_clean
echo "ok: the bootstrap starts scripts as python does; explain asks torch once, never for --fsroot"
