# `llmlaunch probe --fsroot DIR --json` on fake /sys trees written by
# tests/fixtures/sysfs/fake-sysfs.sh: a RoCE port with mixed GID types, a DOWN
# port, mlx5_1 beside mlx5_10, virtual interfaces, and garbage files.
set -euo pipefail

base=/tmp
[ -w /dev/shm ] && base=/dev/shm
work=$(mktemp -d "$base/ll-sysfs-fake.XXXXXX")
trap 'rm -rf "$work"' EXIT
. "$LL_FIXTURES/sysfs/fake-sysfs.sh"

scenario_roce "$work/roce"
"$LLMLAUNCH" probe --fsroot "$work/roce" --json > "$work/roce.json"

# The same tree with garbage in every attribute the readers parse.
scenario_roce "$work/bad"
P=$work/bad/sys/class/infiniband/mlx5_0/ports/1
printf '\001\002\377' > "$P/rate"
echo Banana > "$P/link_layer"
rm "$P/gid_attrs/types/1" && mkdir "$P/gid_attrs/types/1"
rm "$P/gid_attrs/types/3" && mkfifo "$P/gid_attrs/types/3"
head -c 300000 /dev/urandom > "$P/phys_state"
N=$work/bad/sys/class/net/enp2s0f0
echo zzz > "$N/flags"; echo -5 > "$N/mtu"; echo 1e9 > "$N/speed"; printf 'up\0down' > "$N/operstate"
# A FIFO where the interface reader looks for uevent: opening it used to wait for a
# writer forever; it is refused at once (not a regular file) and read as absent.
mkfifo "$N/uevent"
rm -f "$work/bad/sys/class/net/lo/"* 2>/dev/null || true
rm -rf "$work/bad/sys/devices/virtual/net/lo"
timeout 60 "$LLMLAUNCH" probe --fsroot "$work/bad" --json > "$work/bad.json" ||
	{ echo "FAIL probe of the garbage tree exited $? (124: it hung)" >&2; exit 1; }

python3 - "$work/roce.json" "$work/bad.json" <<'PY'
import json, sys

def expect(what, got, want):
    if got != want:
        sys.exit(f"FAIL {what}: got {got!r}, expected {want!r}")

def by_name(items, name):
    for i in items:
        if i["name"] == name:
            return i
    sys.exit(f"FAIL: no {name!r} in {[i['name'] for i in items]}")

roce = json.load(open(sys.argv[1]))
expect("rdma order", [d["name"] for d in roce["rdma_devices"]], ["mlx5_0", "mlx5_1", "mlx5_10"])
p = roce["rdma_devices"][0]["ports"][0]
expect("mlx5_0 port", (p["number"], p["state"], p["link_layer"], p["rate"], p["netdev"]),
       (1, "ACTIVE", "Ethernet", "100 Gb/sec (4X EDR)", "enp2s0f0"))
expect("mlx5_0 gids", [(g["index"], g["type"], g["ipv4_mapped"], g["link_local"]) for g in p["gids"]],
       [(0, "IB/RoCE v1", False, True), (1, "RoCE v2", False, True),
        (2, "IB/RoCE v1", True, False), (3, "RoCE v2", True, False)])
expect("mlx5_0 gid 2", p["gids"][2]["gid"], "0000:0000:0000:0000:0000:ffff:0a00:0001")
p = roce["rdma_devices"][1]["ports"][0]
expect("mlx5_1 port", (p["state"], p["phys_state"], p["link_layer"], p["netdev"]),
       ("DOWN", "3: Disabled", "InfiniBand", "ib1"))
p = roce["rdma_devices"][2]["ports"][0]
expect("mlx5_10 port", (p["state"], p["rate_gbps"], p["lid"], p["netdev"]), ("ACTIVE", 200, 42, "ib0"))
want = {"lo": ("loopback", True, True), "docker0": ("docker", True, False), "veth1a2b3c": ("veth", True, True),
        "virbr0": ("virbr", True, False), "enp2s0f0": ("ethernet", False, True), "ib0": ("infiniband", False, True),
        "ib1": ("infiniband", False, False)}
for name, (kind, virtual, running) in want.items():
    i = by_name(roce["interfaces"], name)
    expect(f"{name} kind/virtual/running", (i["kind"], i["virtual"], i["running"]), (kind, virtual, running))
    expect(f"{name} addresses", i["addresses"], None)
expect("interfaces", sorted(i["name"] for i in roce["interfaces"]), sorted(want))
expect("enp2s0f0 mtu/speed", (by_name(roce["interfaces"], "enp2s0f0")["mtu"],
                               by_name(roce["interfaces"], "enp2s0f0")["speed_mbps"]), (9000, 100000))
expect("gdr", (roce["gdr"]["ready"], roce["gdr"]["module"]), (True, "nvidia_peermem"))

bad = json.load(open(sys.argv[2]))
p = bad["rdma_devices"][0]["ports"][0]
expect("garbage port", (p["state"], p["link_layer"], p["rate"], p["phys_state"]), ("ACTIVE", None, None, None))
expect("garbage gid types", [g["type"] for g in p["gids"]], ["IB/RoCE v1", None, "IB/RoCE v1", None])
e = by_name(bad["interfaces"], "enp2s0f0")
expect("garbage interface", (e["operstate"], e["mtu"], e["speed_mbps"], e["kind"]), (None, None, None, "ethernet"))
lo = by_name(bad["interfaces"], "lo")
expect("dangling lo", (lo["kind"], lo["virtual"], lo["operstate"], lo["mtu"]), ("loopback", True, None, None))
print("ok: RoCE GID types, DOWN port, mlx5_1/mlx5_10, virtual interfaces, garbage files")
PY
