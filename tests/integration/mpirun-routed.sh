#!/usr/bin/env bash
# Routed fabrics under PMIx (docs/multinode.md, "Socket interface"): Open MPI's mpirun
# over 4 hosts in two subnets joined by a router, no subnet shared (tests/lib/pods-netns.sh:
# p1, p2 on eth0 in 198.51.100.0/25, p3, p4 on net1 in 203.0.113.0/25, the hub routes).
# mpirun runs in the hub and enters each host's namespace where it would ssh. Every
# node must agree on p1's address as the master, take the interface of its own route to
# it (eth0 or net1), and prove it reaches it.
set -u
. "$LL_SRCDIR/tests/lib/agree-test.sh"
. "$LL_SRCDIR/tests/lib/pods-netns.sh"
command -v mpirun >/dev/null || skip "mpirun (openmpi-bin) not installed"
mpirun --version 2>/dev/null | grep -q 'Open MPI' || skip "mpirun is not Open MPI"
why=$(pods_missing)
[ -z "$why" ] || skip "$why"
: "${LL_AGREE_TOOL:?}"
trap 'pods_stop; agree_cleanup' EXIT
pods_start 4 routed || fail "the hosts' network did not start"
id=$PODS_ID
for k in 1 2; do pods_dns "p$k" "198.51.100.$k"; done
for k in 3 4; do pods_dns "p$k" "203.0.113.$k"; done
agent=$agree_tmp/agent
cat >"$agent" <<AGENT
#!/usr/bin/env bash
# plm_rsh_agent: HOST COMMAND... (one shell command line, as ssh takes it)
host=\$1
shift
exec ip netns exec "llp$id-\$host" unshare --uts sh -c 'hostname "\$0"; exec /bin/sh -c "\$1"' "\$host" "\$*"
AGENT
chmod 755 "$agent"
printf 'p%s slots=1\n' 1 2 3 4 >"$agree_tmp/hostfile"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_plm_rsh_agent=$agent OMPI_MCA_plm_rsh_no_tree_spawn=1
# Open MPI 5 (Debian 13) starts its daemons through PRRTE, whose names differ.
export PRTE_MCA_plm_ssh_agent=$agent PRTE_MCA_plm_ssh_no_tree_spawn=1

rm -rf "$agree_tmp/agree"
pods_hub timeout 120 mpirun --hostfile "$agree_tmp/hostfile" --map-by ppr:1:node -n 4 \
	"$LL_SRCDIR/tests/lib/rank-output.sh" "$agree_tmp/agree" "$LL_AGREE_TOOL" --prove --agree-timeout 20 >"$agree_tmp/mpirun.out" 2>&1 ||
	fail "mpirun agreement failed: $(tail -n 5 "$agree_tmp/mpirun.out"; cat "$agree_tmp"/agree/1/rank.*/std* 2>/dev/null)"
for k in 1 2 3 4; do
	f=$agree_tmp/agree/1/rank.$((k - 1))/stdout
	line=$(grep '^{' "$f")
	if [ "$k" -le 2 ]; then want=eth0; else want=net1; fi
	for kv in '"backend":"pmix"' '"nnodes":4' '"master_addr":"198.51.100.1"' "\"socket_ifname\":\"$want\"" \
		'"proved":true'; do
		case $line in *"$kv"*) ;; *) fail "p$k: no $kv in: $line" ;; esac
	done
done
echo "ok: 4 hosts in two routed subnets agree on 198.51.100.1, each through its own route (eth0, net1)"
pods_stop
left=$(pods_leftovers "$id")
[ -z "$left" ] || fail "left behind: $left"
