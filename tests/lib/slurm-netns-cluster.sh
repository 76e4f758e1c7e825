# shellcheck shell=bash
# An emulated Slurm cluster whose nodes have a network each: every slurmd runs in its
# own network namespace (and hostname), joined by veth pairs to bridges, so nodes see
# different interfaces, loopback reaches only the node itself, and the agreement has
# to find the interface and the master address that really work between them.
#
#   . tests/lib/slurm-netns-cluster.sh
#   why=$(slurm_netns_missing); [ -z "$why" ] || skip "$why"     # exit 77, never fail for that
#   SLURM_NETNS_ISOLATED="n3"                  # optional, before start: cut n3's data link
#   trap slurm_netns_stop EXIT
#   slurm_netns_start 4 || skip "..."
#   slurm_netns_hub srun -N4 --mpi=pmix "$SLURM_CLUSTER_DIR/bin/node-env" CMD ...
#   slurm_netns_exec n2 ip -br addr            # any command inside node n2
#   slurm_netns_slow n3 200mbit                # n3's data link at 200 Mbit/s both ways (tc tbf)
#
# Layout, for node nK (K = 1..N, N <= 120). Every name below lives inside this run's own
# namespaces, whose names carry the run's id (llt<id>-hub, llt<id>-n1, ...): two runs
# never share anything but munged's host (each its own socket) and the file system.
#
#   hub namespace (hostname hub): slurmctld, and every Slurm client command
#   (slurm_netns_hub srun|sinfo|scontrol ...), run as a node's are (in-node hub), so the
#   hub's own name resolves there as a login node's does: slurmctld looks up srun's host
#   when a job ends, and a name it cannot resolve (this machine's hostname, absent from a
#   minimal root's /etc/hosts, with no route to a DNS server from the hub) holds it for
#   10 s, long enough to time out a node's step-complete message and keep that node
#   completing for another 60 s. Three bridges:
#     brmgmt  management  203.0.113.126/25  <- mgmt0 of every node
#     brdata  data        no address         <- eth0/ens5 of every node, but isolated ones
#     brstor  storage     no address         <- the storage interface of some nodes
#   node namespace nK (hostname nK), slurmd -N nK:
#     mgmt0    203.0.113.K/32 + route 203.0.113.0/25 dev mgmt0: the path slurmd, slurmctld,
#              srun and Slurm's PMIx plugin talk over. A /32 belongs to one node alone, so it
#              is never a subnet all nodes share: the agreement cannot pick it (as a cloud VM's
#              /32), and what it chooses is tested on the data subnets below.
#     eth0 (K odd, MTU 1500) | ens5 (K even, MTU 9000)   198.51.100.K/25: the common data
#              subnet, each node with its own name for it
#     eth1 (K odd) | ens6 (K even), MTU 9000, only where K mod 4 is 1 or 2:
#              203.0.113.(128+K)/25, a storage subnet the other nodes lack
#     docker0  on n2 only: 198.51.100.129/25, a container bridge without members
#   An isolated node (SLURM_NETNS_ISOLATED) keeps its data address and link, but the link's
#   hub end is not on the bridge: the address is there and nothing answers.
#   IPv6 is off in every namespace. /etc/hosts, bind-mounted inside each namespace only,
#   names every node by its data address (nK -> 198.51.100.K), the hub by its management
#   one (hub -> 203.0.113.126).
#
# Tear-down (slurm_netns_stop, also after a failure): the Slurm daemons as in
# slurm-cluster.sh, then every process still inside one of this run's namespaces (steps,
# tasks), then the namespaces, which takes their veths and bridges with them.
# Facts: ../../shared/notes/ENVIRONMENT.md ("Network namespaces").

. "$(dirname "${BASH_SOURCE[0]}")/slurm-cluster.sh"

SLURM_NETNS_ID=${SLURM_NETNS_ID:-}
SLURM_NETNS_ISOLATED=${SLURM_NETNS_ISOLATED:-}
SLURM_NETNS_LIST=()

# Why this machine cannot make the cluster (empty output: it can).
slurm_netns_missing() {
	local why
	why=$(slurm_cluster_missing)
	[ -n "$why" ] && { echo "$why"; return; }
	slurm_netns_net_missing
}

# Why this machine cannot make the nodes' network (empty output: it can). Tries a
# namespace with a veth pair, then removes it.
slurm_netns_net_missing() {
	local t probe
	[ "$(id -u)" = 0 ] || { echo "not root"; return; }
	for t in ip unshare nsenter mount; do
		command -v "$t" >/dev/null 2>&1 || { echo "$t not installed"; return; }
	done
	probe=llt$$-probe$RANDOM
	if ! ip netns add "$probe" 2>/dev/null; then
		echo "cannot create a network namespace here"
		return
	fi
	if ! ip -n "$probe" link add name llt-va type veth peer name llt-vb 2>/dev/null ||
		! ip -n "$probe" link add name llt-br type bridge 2>/dev/null; then
		ip netns del "$probe" 2>/dev/null
		echo "cannot create a veth pair or a bridge in a network namespace"
		return
	fi
	if ! ip netns exec "$probe" unshare --uts true 2>/dev/null; then
		ip netns del "$probe" 2>/dev/null
		echo "cannot enter a network namespace with its own hostname"
		return
	fi
	ip netns del "$probe"
}

slurm_netns_hub_ns() { echo "llt$SLURM_NETNS_ID-hub"; }
slurm_netns_node_ns() { echo "llt$SLURM_NETNS_ID-$1"; }

# The data interface's name, MTU and the storage interface's name of node number K
# ("" when the node has no storage link).
slurm_netns_data_if() { if [ $(($1 % 2)) = 1 ]; then echo eth0; else echo ens5; fi; }
slurm_netns_data_mtu() { if [ $(($1 % 2)) = 1 ]; then echo 1500; else echo 9000; fi; }
slurm_netns_storage_if() {
	case $(($1 % 4)) in
	1) echo eth1 ;;
	2) echo ens6 ;;
	esac
}

# slurm_netns_hub CMD...: run a command in the hub namespace (Slurm clients, slurmctld),
# with the hub's hostname and the cluster's /etc/hosts.
slurm_netns_hub() { slurm_netns_exec hub "$@"; }

# slurm_netns_exec NODE CMD...: run a command inside NODE as its slurmd would: its
# network, its hostname, its /etc/hosts.
slurm_netns_exec() { "$SLURM_CLUSTER_DIR/bin/in-node" "$@"; }

slurm_netns_write_in_node() {
	local dir=$1
	cat >"$dir/bin/in-node" <<EOF
#!/usr/bin/env bash
# in-node NODE CMD...: CMD inside NODE (nK, or hub) as its slurmd (slurmctld) runs:
# NODE's network namespace, a sysfs of that namespace on /sys (what llmlaunch's probe
# reads), NODE as hostname, the cluster's /etc/hosts. As 'ip netns exec' does, but that
# would lose the cgroup tree under /sys, which slurmd needs: it is kept aside and
# mounted again on the new sysfs.
# Every mount is in a mount namespace of its own, not seen outside.
set -e
case \${1:-} in
--mounts)
	node=\$2 save=$dir/run/cg-\$\$
	shift 2
	hostname "\$node"
	mount --bind "$dir/hosts" /etc/hosts
	mkdir -p "\$save"
	mount --rbind /sys/fs/cgroup "\$save"
	exec nsenter --net="/run/netns/llt$SLURM_NETNS_ID-\$node" "\$0" --sysfs "\$save" "\$@"
	;;
--sysfs)
	save=\$2
	shift 2
	umount -l /sys
	mount -t sysfs sysfs /sys
	mount --rbind "\$save" /sys/fs/cgroup
	umount -l "\$save"
	rmdir "\$save"
	exec "\$@"
	;;
esac
exec unshare --mount --uts --propagation slave "\$0" --mounts "\$@"
EOF
	chmod 755 "$dir/bin/in-node"
}

slurm_netns_add() {
	ip netns add "$1" || return 1
	SLURM_NETNS_LIST+=("$1")
	# No IPv6 (no link-local addresses on every link), and loopback up.
	ip netns exec "$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 &&
		ip -n "$1" link set dev lo up
}

# slurm_netns_link NS IF MTU HUBIF BRIDGE ADDR: a veth pair, IF in NS with ADDR, its
# peer HUBIF in the hub on BRIDGE ("" leaves it off every bridge: isolated).
slurm_netns_link() {
	local ns=$1 ifname=$2 mtu=$3 hubif=$4 bridge=$5 addr=$6 hub
	hub=$(slurm_netns_hub_ns)
	ip -n "$hub" link add name "$hubif" mtu "$mtu" type veth peer name "$ifname" mtu "$mtu" netns "$ns" || return 1
	if [ -n "$bridge" ]; then
		ip -n "$hub" link set dev "$hubif" master "$bridge" || return 1
	fi
	ip -n "$hub" link set dev "$hubif" up &&
		ip -n "$ns" addr add "$addr" dev "$ifname" &&
		ip -n "$ns" link set dev "$ifname" up
}

slurm_netns_network() {
	local n=$1 dir=$2 hub k ns dif sif bridge
	hub=$(slurm_netns_hub_ns)
	slurm_netns_add "$hub" || return 1
	for bridge in brmgmt brdata brstor; do
		ip -n "$hub" link add name "$bridge" type bridge || return 1
		ip -n "$hub" link set dev "$bridge" up || return 1
	done
	ip -n "$hub" addr add 203.0.113.126/25 dev brmgmt || return 1
	{
		echo "127.0.0.1 localhost"
		echo "203.0.113.126 hub"
	} >"$dir/hosts"
	for k in $(seq 1 "$n"); do
		ns=$(slurm_netns_node_ns "n$k")
		slurm_netns_add "$ns" || return 1
		slurm_netns_link "$ns" mgmt0 1500 "m$k" brmgmt "203.0.113.$k/32" || return 1
		ip -n "$ns" route add 203.0.113.0/25 dev mgmt0 || return 1
		dif=$(slurm_netns_data_if "$k")
		bridge=brdata
		case " $SLURM_NETNS_ISOLATED " in *" n$k "*) bridge= ;; esac
		slurm_netns_link "$ns" "$dif" "$(slurm_netns_data_mtu "$k")" "d$k" "$bridge" "198.51.100.$k/25" || return 1
		sif=$(slurm_netns_storage_if "$k")
		if [ -n "$sif" ]; then
			slurm_netns_link "$ns" "$sif" 9000 "s$k" brstor "203.0.113.$((128 + k))/25" || return 1
		fi
		if [ "$k" = 2 ]; then
			ip -n "$ns" link add name docker0 type bridge &&
				ip -n "$ns" addr add 198.51.100.129/25 dev docker0 &&
				ip -n "$ns" link set dev docker0 up || return 1
		fi
		echo "198.51.100.$k n$k" >>"$dir/hosts"
	done
}

slurm_netns_write_conf() {
	local dir=$1 n=$2 k
	{
		echo "SlurmctldHost=hub(203.0.113.126)"
		echo "SlurmctldPort=6817"
		echo "SlurmdPort=6818"
		slurm_cluster_conf_common "$dir"
		for k in $(seq 1 "$n"); do
			echo "NodeName=n$k NodeHostname=n$k NodeAddr=203.0.113.$k CPUs=2 State=UNKNOWN"
		done
		echo "PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
	} >"$dir/slurm.conf"
}

# Kill what still runs inside this run's namespaces (every process there is this test's),
# then remove the namespaces; their veths and bridges go with them.
slurm_netns_teardown() {
	local ns pid pids try
	for ns in "${SLURM_NETNS_LIST[@]}"; do
		for try in 1 2 3 4 5 6 7 8 9 10; do
			pids=$(ip netns pids "$ns" 2>/dev/null)
			[ -z "$pids" ] && break
			for pid in $pids; do
				kill -KILL "$pid" 2>/dev/null
			done
			sleep 0.1
		done
		ip netns del "$ns" 2>/dev/null
	done
	SLURM_NETNS_LIST=()
}

# slurm_netns_start N: non-zero (and says why) when the cluster did not come up; what
# was made is removed by slurm_netns_stop all the same.
slurm_netns_start() {
	local n=${1:-4} why k dir
	why=$(slurm_netns_missing)
	if [ -n "$why" ]; then
		slurm_cluster_log "cannot start: $why"
		return 1
	fi
	[ "$n" -le 120 ] || { slurm_cluster_log "at most 120 nodes"; return 1; }
	[ -n "$SLURM_NETNS_ID" ] || SLURM_NETNS_ID=$$x$RANDOM
	SLURM_CLUSTER_STOP_HOOK=slurm_netns_teardown
	slurm_cluster_prepare "$n" || return 1
	dir=$SLURM_CLUSTER_DIR
	slurm_netns_write_in_node "$dir"
	SLURM_CLUSTER_RUN=("$dir/bin/in-node" hub)
	slurm_netns_network "$n" "$dir" || { slurm_cluster_log "network set-up failed"; return 1; }
	slurm_netns_write_conf "$dir" "$n"
	export SLURM_CONF=$dir/slurm.conf

	slurm_netns_hub slurmctld -c -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 || {
		slurm_cluster_log "slurmctld failed: $(tail -5 "$dir/log/slurmctld.out")"
		return 1
	}
	for k in $(seq 1 "$n"); do
		slurm_netns_exec "n$k" slurmd -N "n$k" -f "$SLURM_CONF" >"$dir/log/slurmd-n$k.out" 2>&1 || {
			slurm_cluster_log "slurmd n$k failed: $(tail -5 "$dir/log/slurmd-n$k.out")"
			return 1
		}
	done
	slurm_cluster_wait_idle "$n"
}

# slurm_netns_isolate NODE / slurm_netns_rejoin NODE: take NODE's data link off the
# bridge (its address stays, nothing answers) or put it back, while the cluster runs.
slurm_netns_isolate() { ip -n "$(slurm_netns_hub_ns)" link set dev "d${1#n}" nomaster; }
slurm_netns_rejoin() { ip -n "$(slurm_netns_hub_ns)" link set dev "d${1#n}" master brdata; }

# slurm_netns_slow NODE RATE / slurm_netns_unslow NODE: a token bucket (tc tbf) of RATE
# ("200mbit") on both ends of NODE's data link, so it is slow both ways while the
# cluster runs (a degraded port, a cable at a lower rate), or take it off again.
slurm_netns_slow() {
	local k=${1#n}
	tc -n "$(slurm_netns_hub_ns)" qdisc replace dev "d$k" root tbf rate "$2" burst 32kbit latency 400ms &&
		tc -n "$(slurm_netns_node_ns "$1")" qdisc replace dev "$(slurm_netns_data_if "$k")" root tbf rate "$2" \
			burst 32kbit latency 400ms
}
slurm_netns_unslow() {
	local k=${1#n}
	tc -n "$(slurm_netns_hub_ns)" qdisc del dev "d$k" root 2>/dev/null
	tc -n "$(slurm_netns_node_ns "$1")" qdisc del dev "$(slurm_netns_data_if "$k")" root 2>/dev/null
	return 0
}

# slurm_netns_data_addr NODE del|add: remove NODE's address in the common data subnet
# (it then has none there) or give it back.
slurm_netns_data_addr() {
	local k=${1#n}
	ip -n "$(slurm_netns_node_ns "$1")" addr "$2" "198.51.100.$k/25" dev "$(slurm_netns_data_if "$k")"
}

# What this run left behind after slurm_netns_stop (empty: nothing): its namespaces,
# and processes whose command line names its directory DIR.
slurm_netns_leftovers() {
	local dir=$1 id=$2
	ip netns list 2>/dev/null | grep "^llt$id-" | sed 's/^/namespace /'
	pgrep -a -f "$dir/" 2>/dev/null | sed 's/^/process /'
	return 0
}

# slurm_netns_start_network N: the nodes' namespaces and network alone, no Slurm (for
# launchers that start their own daemons: mpirun with slurm_netns_mpi_agent).
slurm_netns_start_network() {
	local n=${1:-4} why
	why=$(slurm_netns_net_missing)
	if [ -n "$why" ]; then
		slurm_cluster_log "cannot start: $why"
		return 1
	fi
	[ -n "$SLURM_NETNS_ID" ] || SLURM_NETNS_ID=$$x$RANDOM
	SLURM_CLUSTER_STOP_HOOK=slurm_netns_teardown
	[ -n "$SLURM_CLUSTER_DIR" ] || SLURM_CLUSTER_DIR=$(mktemp -d /tmp/ll-netns.XXXXXX) || return 1
	mkdir -p "$SLURM_CLUSTER_DIR/bin" "$SLURM_CLUSTER_DIR/run" "$SLURM_CLUSTER_DIR/log"
	SLURM_CLUSTER_NODES=$n
	slurm_netns_write_in_node "$SLURM_CLUSTER_DIR"
	slurm_netns_network "$n" "$SLURM_CLUSTER_DIR" || { slurm_cluster_log "network set-up failed"; return 1; }
}

# Open MPI's launcher agent (plm_rsh_agent) for these nodes: where mpirun would run
# "ssh HOST COMMAND", COMMAND runs inside node HOST (prints the agent's path).
slurm_netns_mpi_agent() {
	local agent=$SLURM_CLUSTER_DIR/bin/mpi-agent
	cat >"$agent" <<EOF
#!/usr/bin/env bash
# plm_rsh_agent: HOST COMMAND... (one shell command line, as ssh takes it)
host=\$1
shift
exec "$SLURM_CLUSTER_DIR/bin/in-node" "\$host" /bin/sh -c "\$*"
EOF
	chmod 755 "$agent"
	echo "$agent"
}

# For tests, after tests/lib/agree-test.sh: skip (exit 77, the reason on stderr) where
# the cluster cannot be made, stop it and clean up on exit, start N nodes.
slurm_netns_test_cluster() {
	local why
	why=$(slurm_netns_missing)
	[ -z "$why" ] || skip "$why"
	trap 'slurm_netns_stop; agree_cleanup' EXIT
	slurm_netns_start "$1" || { slurm_cluster_dump_logs; skip "the namespaced Slurm cluster did not start"; }
}

slurm_netns_stop() {
	slurm_cluster_stop
	# The directory may not have been made (a start that failed early).
	slurm_netns_teardown
}
