#!/usr/bin/env bash
# Nothing from a file reaches a terminal raw: a profile's description and values, an
# NCCL log's lines and a check result's text carry an OSC 52 clipboard write, a screen
# clear and a C1 CSI; every command that prints them (profiles show, explain, env,
# the dry run, logs, in text and JSON) prints them escaped, never as the bytes.
set -euo pipefail
: "${LLMLAUNCH:?}" "${LL_FIXTURES:?}" "${LL_SRCDIR:?}"
topo=$LL_FIXTURES/hwloc/two-socket-4gpu-2hca.xml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

# Any byte a terminal acts on in FILE (tab and newline are layout), as Python reads it.
raw() {
	python3 - "$1" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
text = data.decode("utf-8", "surrogateescape")
bad = [c for c in text if (ord(c) < 0x20 and c not in "\t\n") or 0x7f <= ord(c) <= 0x9f or 0xdc80 <= ord(c) <= 0xdcff]
sys.exit(0 if bad else 1)
PY
}

check() { # LABEL, then the command: stdout and stderr both clean
	local label=$1 rc=0
	shift
	"$@" >"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
	raw "$tmp/out" && bad "$label: stdout holds a control byte: $(od -c "$tmp/out" | head -3)"
	raw "$tmp/err" && bad "$label: stderr holds a control byte: $(od -c "$tmp/err" | head -3)"
	return 0
}

# YAML's double quotes write \e (ESC), \a (BEL) and \x9b (CSI as one character, U+009B).
cat >"$tmp/p.yaml" <<'Y'
name: hostile
description: "tuned for you\e]52;c;Y3VybCBldmlsLmV4YW1wbGV8c2g=\a\e[2J\e[H\x9b31m"
env:
  NCCL_IB_TIMEOUT: "22\e[8m"
Y
check "profiles show" "$LLMLAUNCH" profiles show "$tmp/p.yaml"
grep -qF '\e]52;c;' "$tmp/out" || bad "profiles show: the escape is not shown as text: $(cat "$tmp/out")"
check "profiles show --json" "$LLMLAUNCH" profiles show --json "$tmp/p.yaml"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/out" || bad "profiles show --json is not JSON"
check "explain" "$LLMLAUNCH" explain --topology "$topo" --profile "$tmp/p.yaml"
grep -qF 'NCCL_IB_TIMEOUT=22\e[8m' "$tmp/out" || bad "explain: value not shown escaped"
check "explain --json" "$LLMLAUNCH" explain --json --topology "$topo" --profile "$tmp/p.yaml"
python3 - "$tmp/out" <<'PY' || bad "explain --json does not carry the exact value"
import json, sys
s = {x["name"]: x for x in json.load(open(sys.argv[1]))["settings"]}
assert s["NCCL_IB_TIMEOUT"]["value"] == "22\x1b[8m", s["NCCL_IB_TIMEOUT"]
PY
check "env" "$LLMLAUNCH" env --topology "$topo" --profile "$tmp/p.yaml"
got=$(bash -c ". $tmp/out; printf %s \"\$NCCL_IB_TIMEOUT\"")
[ "$got" = $'22\e[8m' ] || bad "env: the value does not read back exactly"
check "dry run" "$LLMLAUNCH" --dry-run --python /bin/true --topology "$topo" --profile "$tmp/p.yaml" \
	"$LL_SRCDIR/examples/train.py" $'arg\e]0;title\a'
check "dry run --json" "$LLMLAUNCH" --dry-run --json --python /bin/true --topology "$topo" --profile "$tmp/p.yaml" \
	"$LL_SRCDIR/examples/train.py"
# A message that names the hostile text: the profile's key.
printf 'env:\n  "BAD\\e[2J": x\n' >"$tmp/key.yaml"
check "profile error" "$LLMLAUNCH" explain --topology "$topo" --profile "$tmp/key.yaml"

# NCCL logs: a warning line and a host name with escapes, and a byte that is not UTF-8.
printf 'n1:100:100 [0] NCCL INFO Bootstrap : Using eth0:198.51.100.1<0>\n' >"$tmp/nccl.log"
printf 'n1:100:100 [0] misc/socket.cc:50 NCCL WARN evil \033]52;c;eA==\007 \xc2\x9b2J \xff\n' >>"$tmp/nccl.log"
printf 'n\033[2J1:100:100 [0] NCCL INFO NET/Socket : Using [0]eth0:198.51.100.1<0>\n' >>"$tmp/nccl.log"
check "logs" "$LLMLAUNCH" logs "$tmp/nccl.log"
grep -qF 'evil \e]52;c;eA==\x07' "$tmp/out" "$tmp/err" || bad "logs: the warning is not shown escaped: $(cat "$tmp/out")"
check "logs --json" "$LLMLAUNCH" logs --json "$tmp/nccl.log"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/out" || bad "logs --json is not JSON"
grep -q 'evil' "$tmp/out" || bad "logs --json lost the warning that is not UTF-8: $(cat "$tmp/out")"

exit $fail
