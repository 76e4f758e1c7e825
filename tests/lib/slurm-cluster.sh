# shellcheck shell=bash
# A throw-away Slurm cluster on localhost: munged, slurmctld and N slurmd processes
# ("emulated nodes" n1..nN, all on this host), every file in one private directory.
# Source this file, then:
#
#   slurm_cluster_conf 'Prolog=/path/prolog.sh' 'PrologFlags=Alloc'   # optional, before start
#   slurm_cluster_node_env n2 LLMLAUNCH_TOPOLOGY=/path/odd.xml          # optional, any time
#   slurm_cluster_start 4 || exit 77      # exports SLURM_CONF; SLURM_CLUSTER_DIR holds everything
#   trap slurm_cluster_stop EXIT
#   srun -N4 --ntasks-per-node=1 "$SLURM_CLUSTER_DIR/bin/node-env" CMD ...
#
# Per-node environment: srun gives every task the caller's environment, and all nodes
# are this host, so a node's own variables come from a file per node
# ($SLURM_CLUSTER_DIR/node-env/NODE, lines NAME=VALUE) that the wrapper
# $SLURM_CLUSTER_DIR/bin/node-env exports (by SLURMD_NODENAME) before exec'ing its arguments.
# Prolog/TaskProlog scripts can source the same file.
#
# Every emulated node here shares this host's one network stack: loopback reaches
# them all. slurm-netns-cluster.sh builds on this file for nodes with a network each.
#
# Requires root (slurmd runs as root here). Stops only the processes it started, by the
# PIDs in its own pid files. Facts: ../../shared/notes/ENVIRONMENT.md ("Slurm on one host").

SLURM_CLUSTER_DIR=${SLURM_CLUSTER_DIR:-}
SLURM_CLUSTER_EXTRA=()
SLURM_CLUSTER_NODES=0
# What runs a Slurm client command where it reaches slurmctld (empty here: this host;
# the namespaced cluster runs them in its hub namespace).
SLURM_CLUSTER_RUN=()
# Called by slurm_cluster_stop once the daemons were asked to stop, before munged stops
# and the directory goes (the namespaced cluster ends its namespaces there).
SLURM_CLUSTER_STOP_HOOK=

slurm_cluster_log() { echo "slurm-cluster: $*" >&2; }

# slurm_cluster_cmd CMD...: a Slurm client command (sinfo, scontrol, squeue, srun) where slurmctld is.
slurm_cluster_cmd() { "${SLURM_CLUSTER_RUN[@]}" "$@"; }

# Extra slurm.conf lines; call before slurm_cluster_start.
slurm_cluster_conf() {
	SLURM_CLUSTER_EXTRA+=("$@")
}

# Why this machine cannot run the cluster (empty output: it can).
slurm_cluster_missing() {
	local t
	[ "$(id -u)" = 0 ] || { echo "not root"; return; }
	for t in munged slurmctld slurmd srun scontrol sinfo; do
		command -v "$t" >/dev/null 2>&1 || [ -x "/usr/sbin/$t" ] || { echo "$t not installed"; return; }
	done
}

slurm_cluster_port_free() {
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Pick a base port with N+1 free ports after it (other test clusters may be running),
# below Linux's ephemeral range (32768-60999): a port there can be the local end of any
# outgoing connection, and slurmd then fails to bind it (seen once in 46 runs).
slurm_cluster_pick_ports() {
	local n=$1 tries base i ok
	for tries in $(seq 1 50); do
		base=$((20000 + (RANDOM % 1200) * 10))
		ok=1
		for i in $(seq 0 "$n"); do
			slurm_cluster_port_free $((base + i)) || { ok=0; break; }
		done
		[ $ok = 1 ] && { echo "$base"; return 0; }
	done
	return 1
}

# slurm_cluster_node_env NODE NAME=VALUE...
slurm_cluster_node_env() {
	local node=$1
	shift
	mkdir -p "$SLURM_CLUSTER_DIR/node-env"
	printf '%s\n' "$@" >>"$SLURM_CLUSTER_DIR/node-env/$node"
}

# The slurm.conf lines both emulated clusters share: authentication, private paths,
# plugins that work without cgroups, the per-node TmpFS the PMIx plugin needs, and
# the caller's extra lines.
slurm_cluster_conf_common() {
	local dir=$1
	cat <<EOF
ClusterName=llt$$
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/d-%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmdParameters=config_overrides
MpiDefault=none
TmpFS=$dir/tmp-%n
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
MessageTimeout=10
EOF
	[ ${#SLURM_CLUSTER_EXTRA[@]} -gt 0 ] && printf '%s\n' "${SLURM_CLUSTER_EXTRA[@]}"
	return 0
}

slurm_cluster_write_conf() {
	local dir=$1 n=$2 base=$3 host
	host=$(hostname)
	{
		echo "SlurmctldHost=$host(127.0.0.1)"
		echo "SlurmctldPort=$base"
		slurm_cluster_conf_common "$dir"
		echo "NodeName=n[1-$n] NodeHostname=$host NodeAddr=127.0.0.1 Port=[$((base + 1))-$((base + n))] CPUs=2 State=UNKNOWN"
		echo "PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
	} >"$dir/slurm.conf"
}

slurm_cluster_write_wrapper() {
	local dir=$1
	mkdir -p "$dir/bin" "$dir/node-env"
	cat >"$dir/bin/node-env" <<EOF
#!/usr/bin/env bash
# Export this emulated node's variables (node-env/\$SLURMD_NODENAME), then run the command.
f="$dir/node-env/\${SLURMD_NODENAME:-}"
if [ -n "\${SLURMD_NODENAME:-}" ] && [ -r "\$f" ]; then
	while IFS= read -r line; do
		[ -n "\$line" ] && export "\$line"
	done <"\$f"
fi
exec "\$@"
EOF
	chmod 755 "$dir/bin/node-env"
}

# slurm_cluster_prepare N: the private directory (SLURM_CLUSTER_DIR, made when unset),
# each node's spool and tmp directories, munged with private paths and the node-env
# wrapper. Non-zero (and says why) on failure.
slurm_cluster_prepare() {
	local n=$1 dir i
	if [ -z "$SLURM_CLUSTER_DIR" ]; then
		SLURM_CLUSTER_DIR=$(mktemp -d /tmp/ll-slurm.XXXXXX) || return 1
	fi
	SLURM_CLUSTER_NODES=$n
	dir=$SLURM_CLUSTER_DIR
	chmod 755 "$dir"
	mkdir -p "$dir/munge" "$dir/state" "$dir/run" "$dir/log"
	chmod 755 "$dir/munge"
	for i in $(seq 1 "$n"); do
		mkdir -p "$dir/spool/d-n$i" "$dir/tmp-n$i"
	done
	# munged with private paths (key: 1 KiB of random bytes, as mungekey makes).
	head -c 1024 /dev/urandom >"$dir/munge/munge.key"
	chmod 400 "$dir/munge/munge.key"
	if ! munged --socket="$dir/munge/munge.sock" --key-file="$dir/munge/munge.key" \
		--log-file="$dir/log/munged.log" --pid-file="$dir/run/munged.pid" \
		--seed-file="$dir/munge/munge.seed" --force 2>"$dir/log/munged.err"; then
		slurm_cluster_log "munged failed: $(cat "$dir/log/munged.err")"
		return 1
	fi
	slurm_cluster_write_wrapper "$dir"
}

# Wait (bounded) until N nodes are idle.
slurm_cluster_wait_idle() {
	local n=$1 deadline=$((SECONDS + 30)) idle
	while [ $SECONDS -lt $deadline ]; do
		idle=$(slurm_cluster_cmd sinfo -h -N -t idle -o '%N' 2>/dev/null | sort -u | wc -l)
		[ "$idle" -ge "$n" ] && return 0
		sleep 0.2
	done
	slurm_cluster_log "nodes not idle after 30 s: $(slurm_cluster_cmd sinfo -N 2>&1 | tr '\n' ' ')"
	return 1
}

# slurm_cluster_start N: returns non-zero (and says why) when the cluster did not come up.
slurm_cluster_start() {
	local n=${1:-4} why base i dir
	why=$(slurm_cluster_missing)
	if [ -n "$why" ]; then
		slurm_cluster_log "cannot start: $why"
		return 1
	fi
	slurm_cluster_prepare "$n" || return 1
	dir=$SLURM_CLUSTER_DIR
	base=$(slurm_cluster_pick_ports "$n") || { slurm_cluster_log "no free ports"; return 1; }
	slurm_cluster_write_conf "$dir" "$n" "$base"
	export SLURM_CONF=$dir/slurm.conf

	slurmctld -c -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 || {
		slurm_cluster_log "slurmctld failed: $(tail -5 "$dir/log/slurmctld.out")"
		return 1
	}
	for i in $(seq 1 "$n"); do
		slurmd -N "n$i" -f "$SLURM_CONF" >"$dir/log/slurmd-n$i.out" 2>&1 || {
			slurm_cluster_log "slurmd n$i failed: $(tail -5 "$dir/log/slurmd-n$i.out")"
			return 1
		}
	done
	slurm_cluster_wait_idle "$n"
}

slurm_cluster_kill_pidfile() {
	local f=$1 pid
	[ -r "$f" ] || return 0
	pid=$(cat "$f" 2>/dev/null)
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && kill "$pid" 2>/dev/null
	return 0
}

# Stop everything this library started and remove the directory (keep it with
# SLURM_CLUSTER_KEEP=1 for debugging).
slurm_cluster_stop() {
	local dir=$SLURM_CLUSTER_DIR f deadline alive
	[ -n "$dir" ] && [ -d "$dir" ] || return 0
	if [ -r "$dir/slurm.conf" ]; then
		# Cancel what still runs first: a step left behind by shutdown outlives its slurmd.
		SLURM_CONF=$dir/slurm.conf timeout 10 "${SLURM_CLUSTER_RUN[@]}" scancel --quiet --full --user=root \
			>/dev/null 2>&1
		deadline=$((SECONDS + 5))
		while [ $SECONDS -lt $deadline ] &&
			[ -n "$(SLURM_CONF=$dir/slurm.conf timeout 5 "${SLURM_CLUSTER_RUN[@]}" squeue -h -o %i 2>/dev/null)" ]; do
			sleep 0.2
		done
		SLURM_CONF=$dir/slurm.conf timeout 10 "${SLURM_CLUSTER_RUN[@]}" scontrol shutdown >/dev/null 2>&1
	fi
	# Give them a moment to go, then kill what is left, by our own pid files only.
	deadline=$((SECONDS + 5))
	while [ $SECONDS -lt $deadline ]; do
		alive=0
		for f in "$dir"/run/slurm*.pid; do
			[ -r "$f" ] && kill -0 "$(cat "$f" 2>/dev/null)" 2>/dev/null && alive=1
		done
		[ $alive = 0 ] && break
		sleep 0.2
	done
	for f in "$dir"/run/slurm*.pid; do
		slurm_cluster_kill_pidfile "$f"
	done
	# A step whose slurmd is gone can keep its slurmstepd alive: ours are the ones
	# working in this cluster's directory.
	local pid cwd
	for pid in $(pgrep -x slurmstepd); do
		cwd=$(readlink "/proc/$pid/cwd" 2>/dev/null) || continue
		case $cwd in "$dir"/*) kill -KILL "$pid" 2>/dev/null ;; esac
	done
	[ -n "$SLURM_CLUSTER_STOP_HOOK" ] && "$SLURM_CLUSTER_STOP_HOOK"
	munged --stop --socket="$dir/munge/munge.sock" >/dev/null 2>&1 || slurm_cluster_kill_pidfile "$dir/run/munged.pid"
	if [ "${SLURM_CLUSTER_KEEP:-0}" = 1 ]; then
		slurm_cluster_log "kept $dir"
	else
		rm -rf "$dir"
	fi
	SLURM_CLUSTER_DIR=
}

# Print the last lines of every log (for a failing test).
slurm_cluster_dump_logs() {
	local f
	for f in "$SLURM_CLUSTER_DIR"/log/*; do
		[ -s "$f" ] || continue
		echo "== $f" >&2
		tail -20 "$f" >&2
	done
}
