# shellcheck shell=bash
# Pods emulated as hosts: each its own network namespace and hostname, the job's names
# served by a real DNS server (dnsmasq) as a Kubernetes headless service serves them.
# No Slurm, no kubelet: each test starts llmlaunch in a pod with exactly the variables
# one engine gives (docs/kubernetes.md).
#
#   pods_start 3            pods p1..p3 on one bridge: eth0 198.51.100.K/25
#   pods_start 4 routed     p1, p2 on eth0 198.51.100.K/25; p3, p4 on net1 203.0.113.K/25;
#                           the hub routes between the two subnets (no subnet shared)
#   pods_dns NAME ADDR      publish a name (dnsmasq re-reads its hosts file on SIGHUP)
#   pods_exec K CMD...      run CMD in pod pK (its network, hostname pK, the DNS server)
#   trap pods_stop EXIT
#
#  hub namespace: dnsmasq on 198.51.100.126         pod pK (hostname pK)
#    brpod  198.51.100.126/25 (+ 203.0.113.126/25     eth0 198.51.100.K/25 (net1 203.0.113.K/25
#    on brnet1 when routed; forwarding on)              when routed and K > N/2), default via the hub
#
# /etc/netns/NS/resolv.conf and hosts are what 'ip netns exec' mounts on /etc in the
# namespace: the pods resolve through dnsmasq only. Everything is removed by pods_stop.

pods_missing() {
	local t probe
	[ "$(id -u)" = 0 ] || { echo "not root"; return; }
	for t in ip unshare dnsmasq; do
		command -v "$t" >/dev/null 2>&1 || [ -x "/usr/sbin/$t" ] || { echo "$t not installed (dnsmasq-base)"; return; }
	done
	probe=llp$$-probe$RANDOM
	ip netns add "$probe" 2>/dev/null || { echo "cannot create a network namespace here"; return; }
	if ! ip -n "$probe" link add name llp-va type veth peer name llp-vb 2>/dev/null; then
		ip netns del "$probe"
		echo "cannot create a veth pair in a network namespace"
		return
	fi
	ip netns del "$probe"
}

PODS_ID=
PODS_DIR=
PODS_LIST=()

pods_ns() { echo "llp$PODS_ID-$1"; }
pods_hub() { ip netns exec "$(pods_ns hub)" "$@"; }

pods_add_ns() {
	local ns
	ns=$(pods_ns "$1")
	ip netns add "$ns" || return 1
	PODS_LIST+=("$ns")
	mkdir -p "/etc/netns/$ns" || return 1
	echo "nameserver 198.51.100.126" >"/etc/netns/$ns/resolv.conf"
	printf '127.0.0.1 localhost\n' >"/etc/netns/$ns/hosts"
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 &&
		ip -n "$ns" link set dev lo up
}

# pods_link K IF BRIDGE ADDR GW
pods_link() {
	local k=$1 ifname=$2 bridge=$3 addr=$4 gw=$5 hub ns
	hub=$(pods_ns hub)
	ns=$(pods_ns "p$k")
	ip -n "$hub" link add name "v$k" type veth peer name "$ifname" netns "$ns" &&
		ip -n "$hub" link set dev "v$k" master "$bridge" &&
		ip -n "$hub" link set dev "v$k" up &&
		ip -n "$ns" addr add "$addr" dev "$ifname" &&
		ip -n "$ns" link set dev "$ifname" up &&
		ip -n "$ns" route add default via "$gw" dev "$ifname"
}

pods_start() {
	local n=$1 routed=${2:-} hub k
	PODS_ID=$$x$RANDOM
	[ -d /etc/netns ] || { mkdir /etc/netns && PODS_MADE_ETC_NETNS=1; }
	PODS_DIR=$(mktemp -d /tmp/ll-pods.XXXXXX)
	pods_add_ns hub || return 1
	hub=$(pods_ns hub)
	ip -n "$hub" link add name brpod type bridge && ip -n "$hub" link set dev brpod up &&
		ip -n "$hub" addr add 198.51.100.126/25 dev brpod || return 1
	if [ -n "$routed" ]; then
		ip -n "$hub" link add name brnet1 type bridge && ip -n "$hub" link set dev brnet1 up &&
			ip -n "$hub" addr add 203.0.113.126/25 dev brnet1 &&
			ip netns exec "$hub" sysctl -qw net.ipv4.ip_forward=1 || return 1
	fi
	for k in $(seq 1 "$n"); do
		pods_add_ns "p$k" || return 1
		if [ -n "$routed" ] && [ "$k" -gt $((n / 2)) ]; then
			pods_link "$k" net1 brnet1 "203.0.113.$k/25" 203.0.113.126 || return 1
		else
			pods_link "$k" eth0 brpod "198.51.100.$k/25" 198.51.100.126 || return 1
		fi
	done
	: >"$PODS_DIR/dns-hosts"
	pods_hub dnsmasq --keep-in-foreground --no-resolv --no-hosts --user=root --bind-interfaces \
		--listen-address=198.51.100.126 --addn-hosts="$PODS_DIR/dns-hosts" --pid-file="$PODS_DIR/dnsmasq.pid" \
		--log-facility="$PODS_DIR/dnsmasq.log" --local-ttl=0 --neg-ttl=0 &
	for k in 1 2 3 4 5 6 7 8 9 10; do
		[ -s "$PODS_DIR/dnsmasq.pid" ] && return 0
		sleep 0.2
	done
	echo "dnsmasq did not start: $(cat "$PODS_DIR/dnsmasq.log" 2>/dev/null)" >&2
	return 1
}

pods_dns() {
	echo "$2 $1" >>"$PODS_DIR/dns-hosts"
	kill -HUP "$(cat "$PODS_DIR/dnsmasq.pid")"
}

pods_exec() {
	local k=$1
	shift
	ip netns exec "$(pods_ns "p$k")" unshare --uts sh -c 'hostname "$0"; exec "$@"' "p$k" "$@"
}

pods_stop() {
	local ns pid pids try
	[ -n "$PODS_DIR" ] && [ -s "$PODS_DIR/dnsmasq.pid" ] && kill "$(cat "$PODS_DIR/dnsmasq.pid")" 2>/dev/null
	for ns in "${PODS_LIST[@]}"; do
		for try in 1 2 3 4 5 6 7 8 9 10; do
			pids=$(ip netns pids "$ns" 2>/dev/null)
			[ -z "$pids" ] && break
			for pid in $pids; do
				kill -KILL "$pid" 2>/dev/null
			done
			sleep 0.1
		done
		ip netns del "$ns" 2>/dev/null
		rm -rf "/etc/netns/$ns"
	done
	[ -n "${PODS_MADE_ETC_NETNS:-}" ] && rmdir /etc/netns 2>/dev/null
	PODS_LIST=()
	[ -n "$PODS_DIR" ] && rm -rf "$PODS_DIR"
	PODS_DIR=
}

# pods_leftovers: what pods_stop should have removed (empty: nothing).
pods_leftovers() {
	ip netns list 2>/dev/null | grep "^llp$1-" | sed 's/^/namespace /'
	ls -d /etc/netns/llp"$1"-* 2>/dev/null | sed 's/^/file /'
	return 0
}
