# Two launches at once on one machine do not collide: each finds its own free
# rendezvous port and log directory, and both complete.
. "$(dirname "$0")/launch-common.bash"
require_torch

for job in a b; do
	"$LLMLAUNCH" --python "$PY" --nproc-per-node 1 "$EXAMPLE" --steps 2 \
		>"$WORK/out.$job" 2>"$WORK/err.$job" &
	eval "pid_$job=\$!"
done
set +e
wait "$pid_a"; rc_a=$?
wait "$pid_b"; rc_b=$?
set -e
[ "$rc_a" = 0 ] || { cat "$WORK/err.a" >&2; fail "job a exited $rc_a"; }
[ "$rc_b" = 0 ] || { cat "$WORK/err.b" >&2; fail "job b exited $rc_b"; }
port_a=$(field "$WORK/out.a" 0 master_port)
port_b=$(field "$WORK/out.b" 0 master_port)
[ -n "$port_a" ] && [ -n "$port_b" ] || fail "a job did not report its port"
[ "$port_a" != "$port_b" ] || fail "both jobs used port $port_a"
[ "$port_a" != 29500 ] && [ "$port_b" != 29500 ] || fail "a job used torchrun's fixed default port 29500"
assert_tmp_clean
echo "ok: two jobs at once on ports $port_a and $port_b"
