# `llmlaunch probe --fsroot DIR --json` on real gathered /sys trees (hwloc's test
# tarballs): mlx4 FDR InfiniBand with ib0, and QLogic qib0 with ib0.
set -euo pipefail

tarballs=${LL_REALDATA:-}/sysfs_tarballs
if [ ! -d "$tarballs" ]; then
	echo "skipped: no real data at '${LL_REALDATA:-}' (set LLMLAUNCH_REALDATA at configure time)" >&2
	exit 77
fi
base=/tmp
[ -w /dev/shm ] && base=/dev/shm # 9000 small files: 15 s on this disk, 0.2 s in tmpfs
work=$(mktemp -d "$base/ll-sysfs-real.XXXXXX")
trap 'rm -rf "$work"' EXIT

probe_json() { # TARBALL OUT: unpack and probe it
	mkdir "$work/$1"
	tar -xjf "$tarballs/$1" -C "$work/$1"
	"$LLMLAUNCH" probe --fsroot "$(echo "$work/$1"/*)" --json > "$2"
}

probe_json 32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2 "$work/mlx4.json"
HWLOC_PCI_LOCALITY="# near 1st package;0000:00-09 0x00000055,0x55555555;# near 2nd package;0000:40-46 0x000000aa,0xaaaaaaaa" \
	probe_json 40intel64-2g2n4c+pcilocality.tar.bz2 "$work/qib.json"

python3 - "$work/mlx4.json" "$work/qib.json" <<'PY'
import json, sys

def load(path):
    with open(path) as f:
        return json.load(f)

def expect(what, got, want):
    if got != want:
        sys.exit(f"FAIL {what}: got {got!r}, expected {want!r}")

def by_name(items, name):
    for i in items:
        if i["name"] == name:
            return i
    sys.exit(f"FAIL: no {name!r} in {[i['name'] for i in items]}")

mlx4 = load(sys.argv[1])
expect("mlx4 rdma devices", [d["name"] for d in mlx4["rdma_devices"]], ["mlx4_0"])
d = mlx4["rdma_devices"][0]
expect("mlx4_0 ports", len(d["ports"]), 1)
p = d["ports"][0]
expect("mlx4_0 port number", p["number"], 1)
expect("mlx4_0 port state", p["state"], "ACTIVE")
expect("mlx4_0 phys_state", p["phys_state"], "5: LinkUp")
expect("mlx4_0 link_layer", p["link_layer"], "InfiniBand")
expect("mlx4_0 rate", p["rate"], "56 Gb/sec (4X FDR)")
expect("mlx4_0 rate_gbps", p["rate_gbps"], 56)
expect("mlx4_0 netdev", p["netdev"], "ib0")
expect("mlx4_0 gids", [(g["index"], g["gid"], g["type"], g["link_local"]) for g in p["gids"]],
       [(0, "fe80:0000:0000:0000:0002:c903:00f9:bfa1", None, True)])
expect("mlx4_0 netdevs", d["netdevs"], ["ib0"])
ib0 = by_name(mlx4["interfaces"], "ib0")
expect("ib0 kind", ib0["kind"], "infiniband")
expect("ib0 virtual", ib0["virtual"], False)
expect("ib0 operstate", ib0["operstate"], "up")
expect("ib0 running", ib0["running"], True)
expect("ib0 mtu", ib0["mtu"], 2044)
expect("ib0 addresses (unknown under --fsroot)", ib0["addresses"], None)
for name, kind in (("lo", "loopback"), ("br0", "bridge"), ("eth0.1015", "vlan"), ("mic0", "virtual")):
    i = by_name(mlx4["interfaces"], name)
    expect(f"{name} virtual", i["virtual"], True)
    expect(f"{name} kind", i["kind"], kind)
eth0 = by_name(mlx4["interfaces"], "eth0")
expect("eth0", (eth0["kind"], eth0["virtual"], eth0["speed_mbps"], eth0["running"]), ("ethernet", False, 1000, True))
eth1 = by_name(mlx4["interfaces"], "eth1")
expect("eth1", (eth1["operstate"], eth1["up"], eth1["running"], eth1["speed_mbps"]), ("down", False, False, None))

qib = load(sys.argv[2])
expect("qib rdma devices", [d["name"] for d in qib["rdma_devices"]], ["qib0"])
p = qib["rdma_devices"][0]["ports"][0]
expect("qib0 port", (p["number"], p["state"], p["link_layer"], p["rate"], p["netdev"]),
       (1, "ACTIVE", "InfiniBand", "40 Gb/sec (4X QDR)", "ib0"))
expect("qib0 lid", p["lid"], 0x12a)
print("ok: mlx4_0 FDR ACTIVE with ib0; qib0 QDR ACTIVE with ib0")
PY
