# `llmlaunch logs` on the fixtures this project wrote (each line shape and prefix
# style) and on every real log: exact text, JSON fields and exit status.
set -euo pipefail
: "${LLMLAUNCH:?}" "${LL_FIXTURES:?}"
FX=$LL_FIXTURES/nccl
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# run EXPECTED_STATUS ARGS... : stdout in $WORK/out, stderr in $WORK/err
run() {
	local want=$1 rc=0
	shift
	"$LLMLAUNCH" logs "$@" >"$WORK/out" 2>"$WORK/err" || rc=$?
	[ "$rc" = "$want" ] || { cat "$WORK/out" "$WORK/err" >&2; fail "logs $* exited $rc, want $want"; }
}
# json FILTER: one value from $WORK/out, as Python's json prints it
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(eval(sys.argv[2])))' "$WORK/out" "$1"; }
want_json() { local got; got=$(json "$1"); [ "$got" = "$2" ] || fail "$3: $1 = $got, want $2"; }

# --- text output, exactly: every NAME.expected beside its log NAME.log or directory NAME ---
cd "$FX"
for want in *.expected; do
	case=${want%.expected}
	[ -d "$case" ] || case=$case.log
	[ -e "$case" ] || fail "$want has no log beside it"
	rc=0
	"$LLMLAUNCH" logs "$case" >"$WORK/out" 2>"$WORK/err" || rc=$?
	[ "$rc" = 0 ] || [ "$rc" = 1 ] || { cat "$WORK/err" >&2; fail "logs $case exited $rc"; }
	diff -u "$want" "$WORK/out" || fail "text output of $case"
done

# --- JSON ---------------------------------------------------------------------------
run 0 --json job-ib-gdr
want_json 'd["transport"]' '"IB"' job-ib-gdr
want_json 'd["gdr"]' 'true' job-ib-gdr
want_json 'd["fallback"]' 'false' job-ib-gdr
want_json 'd["warnings"]' '[]' job-ib-gdr
want_json '[h["host"] for h in d["hosts"]]' '["gpu01", "gpu02"]' job-ib-gdr
want_json '[r["rank"] for r in d["hosts"][1]["ranks"]]' '[2, 3]' job-ib-gdr
want_json 'd["hosts"][0]["devices"]' '["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]' job-ib-gdr
want_json 'd["hosts"][0]["ranks"][0]["gdr_channels"]' '2' job-ib-gdr

run 1 --json mpirun-roce-one-node-sockets.log
want_json 'd["transport"]' '"Socket"' mpirun
want_json 'd["gdr"]' 'false' mpirun
want_json 'd["fallback"]' 'true' mpirun
want_json '[(w["line"], w["class"], w["host"], w["pid"]) for w in d["warnings"]]' '[[11, "socket", "gpu02", 402]]' mpirun
want_json '[h["transport"] for h in d["hosts"]]' '["RoCE", "Socket"]' mpirun
want_json '[h["ranks"][0]["rank"] for h in d["hosts"]]' '[0, 1]' mpirun

run 0 --json timestamps-wrapped.log
want_json '(d["transport"], d["plugin"], d["gdr"])' '["IB", "IBext_v8", true]' timestamps
want_json 'len(d["hosts"][0]["devices"])' '8' timestamps
want_json 'd["nccl_version"]' '"2.23.4+cuda12.6"' timestamps

# A communicator init that failed is the host's verdict (G42): its cause and its lines.
run 1 --json init-failed
want_json '(d["hosts_init_failed"], d["hosts_unknown"], d["error"])' '[1, 0, true]' init-failed
want_json '[(h["host"], h["init_failed"]) for h in d["hosts"]]' '[["gpu01", false], ["gpu02", true]]' init-failed
want_json 'd["hosts"][1]["init_failure"]' '"Call to ibv_modify_qp failed with error Connection timed out errno 110"' init-failed
want_json '(d["hosts"][1]["init_failure_cause"]["line"], d["hosts"][1]["init_failure_trace"]["text"])' '[12, "init.cc:1263 -> 2"]' init-failed
want_json 'd["hosts"][1]["ranks"][0]["init_failure_trace"]["file"].split("/nccl/")[-1]' '"init-failed/nccl.gpu02.5201"' init-failed
# NCCL 2.30.7's WARN prefix names the function: the WARN still belongs to its process.
run 1 --json init-failed-nccl2.30.7.log
want_json '(d["warnings"][0]["host"], d["hosts"][0]["init_failure_cause"]["line"])' '["node7", 10]' nccl2.30.7
# aws-ofi-nccl's own lines (G6, G25, G26).
run 0 --json ofi-gdr-disabled.log
want_json '[(h["transport"], h["plugin"], h["gdr"]) for h in d["hosts"]]' \
	'[["plugin", "AWS Libfabric", false], ["plugin", "Libfabric", null]]' ofi
want_json 'd["hosts"][0]["ranks"][0]["ofi"]' '{"version": "1.11.0-aws", "provider": "efa", "nics": 4}' ofi

run 1 --json torchrun-tee
want_json '(d["transport"], d["fallback"], d["fallback_reason"])' \
	'["Socket", true, "NCCL_IB_DISABLE=1 although an RDMA stack is present"]' torchrun-tee
want_json '[w["file"].split("/nccl/")[-1] for w in d["warnings"]]' '["torchrun-tee/attempt_0/1/stderr.log"]' torchrun-tee
want_json 'd["files"]' '2' torchrun-tee
# Expecting sockets turns the same run into a clean one, apart from the socket error.
run 1 --json --expect-net socket torchrun-tee
want_json '(d["fallback"], d["error"], d["expected"])' '[false, true, "socket"]' torchrun-tee-socket

# --- usage and unreadable input -------------------------------------------------------
run 0 --help
grep -q 'Example:' "$WORK/out" || fail "--help has no example"
run 2
grep -q 'no log given' "$WORK/err" || fail "no message without a path"
run 2 --expect-net ethernet job-ib-gdr
run 2 --bogus job-ib-gdr
run 2 job-ib-gdr "$WORK/does-not-exist"
grep -q "cannot read '$WORK/does-not-exist': No such file or directory" "$WORK/err" || fail "unreadable input message"
# ... and what could be read is still reported.
grep -q '^NCCL on gpu01: InfiniBand' "$WORK/out" || fail "no report for the readable log beside an unreadable one"
# Links and FIFOs inside a directory: a loop, a dangling link and a FIFO beside a
# real log made `logs` exit 2 with no report (or wait forever on the FIFO). Now the
# log is reported and each of the others skipped with a warning.
mkdir "$WORK/job"
cp job-ib-gdr/* "$WORK/job/"
ln -s . "$WORK/job/loop"
ln -s "$WORK/nowhere.log" "$WORK/job/dangling.log"
mkfifo "$WORK/job/fifo.log"
timeout 20 "$LLMLAUNCH" logs --json "$WORK/job" >"$WORK/out" 2>"$WORK/err" || { cat "$WORK/err" >&2; fail "logs of a directory with links and a FIFO failed (exit $?)"; }
want_json '(d["transport"], d["skipped_total"])' '["IB", 3]' dir-links
want_json 'sorted(x.split("/")[-1] for x in d["skipped"])' \
	'["dangling.log: a dangling symbolic link", "fifo.log: not a regular file (a FIFO, socket or device)", "loop: a symbolic link to a directory, not followed"]' dir-links
grep -qF "llmlaunch: warning: skipped $WORK/job/dangling.log: a dangling symbolic link" "$WORK/err" ||
	{ cat "$WORK/err" >&2; fail "no warning for the dangling link"; }
# A FIFO named on its own is read as a pipe: with no writer it is empty, at once.
timeout 20 "$LLMLAUNCH" logs "$WORK/job/fifo.log" >"$WORK/out" 2>"$WORK/err" || fail "logs FIFO exited $?"
grep -q 'no NCCL lines found' "$WORK/out" || fail "logs FIFO: $(cat "$WORK/out")"
run 2 --on-fallback stop job-ib-gdr
printf 'plain text, no NCCL here\n' >"$WORK/empty.log"
run 0 "$WORK/empty.log"
grep -q 'no NCCL lines found' "$WORK/out" || fail "nothing-found message"

# --- the real logs, a directory at a time (each file's verdict: integration/logs-corpus) ---
if [ -n "${LL_REALDATA:-}" ] && [ -d "$LL_REALDATA/nccl_logs" ]; then
	# The weakest transport wins; the 2026 set holds a host with no network at all.
	run 1 --json "$LL_REALDATA/nccl_logs"
	want_json '[d["files"], d["transport"], d["fallback"], d["warnings_total"], len(d["hosts"]), d["hosts_unknown"], d["hosts_init_failed"]]' \
		'[18, "Socket", true, 16, 41, 4, 2]' nccl_logs
	if [ -d "$LL_REALDATA/nccl_logs_2026" ]; then
		run 1 --json "$LL_REALDATA/nccl_logs_2026"
		want_json '[d["files"], d["transport"], d["fallback"], d["warnings_total"], len(d["hosts"]), d["hosts_unknown"], d["hosts_init_failed"]]' \
			'[50, "none", true, 21, 65, 20, 4]' nccl_logs_2026
	fi
else
	echo "LL_REALDATA/nccl_logs not present: real logs skipped (fixtures checked)" >&2
fi
echo "ok: logs CLI"
