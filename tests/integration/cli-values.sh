#!/bin/bash
# Bad values are usage errors when they are parsed, each with the valid range, not a
# traceback from torchrun later, a silent default or a value nobody reads: run's
# torchrun numbers, --set names and values, LLMLAUNCH_FETCH_TIMEOUT, logs --follow.
set -u
: "${LLMLAUNCH:?}" "${LL_SRCDIR:?}" "${LL_FIXTURES:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
topo=$LL_FIXTURES/hwloc/two-socket-4gpu-2hca.xml

# expect STATUS TEXT ARGS...: exit STATUS, TEXT on stderr, nothing on stdout
expect() {
	local want=$1 text=$2 rc
	shift 2
	"$LLMLAUNCH" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" != "$want" ] || ! grep -qF -- "$text" "$tmp/err" || [ -s "$tmp/out" ]; then
		echo "FAIL llmlaunch $*: exit $rc (want $want), stdout $(wc -c <"$tmp/out") bytes, stderr: $(cat "$tmp/err")"
		fail=1
	else
		echo "ok   llmlaunch $*: $(head -1 "$tmp/err")"
	fi
}

run=(--dry-run --python /bin/true --topology "$topo")
for n in 0 -1 abc 99999999999 4097; do
	expect 2 "llmlaunch: --nproc-per-node '$n': expected auto, gpu, cpu or a positive integer up to 4096" \
		"${run[@]}" --nproc-per-node "$n" "$LL_SRCDIR/examples/train.py"
	expect 2 "--nproc-per-node '$n': expected a count from 1 to 4096" explain --topology "$topo" --nproc-per-node "$n"
done
expect 2 "llmlaunch: --master-port '99999': expected a port number (1-65535)" \
	"${run[@]}" --master_port 99999 "$LL_SRCDIR/examples/train.py"
expect 2 "llmlaunch: --master-port '0': expected a port number (1-65535)" \
	"${run[@]}" --master-port 0 "$LL_SRCDIR/examples/train.py"
expect 2 "llmlaunch: --max-restarts 'many': expected a non-negative integer" \
	"${run[@]}" --max-restarts many "$LL_SRCDIR/examples/train.py"
expect 2 "llmlaunch: --monitor-interval '0': expected a positive number" \
	"${run[@]}" --monitor-interval 0 "$LL_SRCDIR/examples/train.py"

# --set: a name nothing reads, a misspelt setting, a bad value.
expect 2 "--set 'lower=1': 'lower' is neither a variable (a name in capitals) nor a setting" env --topology "$topo" --set lower=1
expect 2 "hint: did you mean 'bind'?" env --topology "$topo" --set bindd=numa
expect 2 "--set 'bind=numaa': expected numa, core or none" explain --topology "$topo" --set bind=numaa
expect 2 "--set 'torchrun.max_restart=3': torchrun has no option '--max_restart'" \
	"${run[@]}" --set torchrun.max_restart=3 "$LL_SRCDIR/examples/train.py"
expect 2 "hint: did you mean 'torchrun.max_restarts'?" env --topology "$topo" --set torchrun.max_restart=3
expect 2 "--set 'nproc-per-node=0': expected auto, gpu, cpu or a positive integer up to 4096" env --topology "$topo" --set nproc-per-node=0
"$LLMLAUNCH" env --topology "$topo" --set NCCL_DEBUG=INFO --set bind=core --set torchrun.max_restarts=2 >/dev/null ||
	{ echo "FAIL valid --set values refused"; fail=1; }

# LLMLAUNCH_FETCH_TIMEOUT that is not a time: an error, not a silent 20 s. Every
# duration goes through the one parser, with the one message.
for v in 0 -1 abc 1e9 2d; do
	LLMLAUNCH_FETCH_TIMEOUT=$v expect 1 "llmlaunch: LLMLAUNCH_FETCH_TIMEOUT '$v': expected a duration from 0.001 to 3600 seconds (30, 30s, 5m, 1h)" \
		profiles show "https://127.0.0.1:9/p.yaml"
done
expect 2 "llmlaunch: --grace 'x': expected a duration from 0.001 to 86400 seconds (30, 30s, 5m, 1h)" \
	--grace x --dry-run "$LL_SRCDIR/examples/train.py"
expect 2 "llmlaunch: explain: --agree-timeout '0': expected a duration from 0.001 to 86400 seconds (30, 30s, 5m, 1h)" \
	explain --agree-timeout 0
"$LLMLAUNCH" --dry-run --python /bin/true --grace 2m --agree-timeout 1.5h --topology "$topo" "$LL_SRCDIR/examples/train.py" \
	>/dev/null || { echo "FAIL durations with units refused"; fail=1; }

# logs --follow of a directory that does not exist: exit 0 with no output before.
expect 2 "llmlaunch: cannot watch '$tmp/nowhere': No such file or directory" logs --follow "$tmp/nowhere" --timeout 1
[ ! -e "$tmp/nowhere" ] || { echo "FAIL logs --follow created '$tmp/nowhere'"; fail=1; }

exit $fail
