# Profiles over HTTPS against a real TLS server on 127.0.0.1 with a certificate made
# here: 200, 304 revalidation, 404, a stall (timeout), oversize bodies, a redirect to
# http (refused), sha256 pins, the offline fallback to the cache, and what a remote
# profile may not do.
set -u

for tool in python3 openssl; do
	if ! command -v $tool >/dev/null; then
		echo "skip: $tool not installed" >&2
		exit 77
	fi
done

tmp=$(mktemp -d)
server_pid=
ns_pid=
cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
	[ -n "$ns_pid" ] && kill "$ns_pid" 2>/dev/null && wait "$ns_pid" 2>/dev/null
	ip netns del "ll-https-$$" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

failures=0
fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

# run NAME EXPECTED_STATUS CMD...: output in $tmp/out, stderr in $tmp/err
run() {
	local name=$1 want=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"
	local got=$?
	if [ "$got" != "$want" ]; then
		fail "$name: exit $got, expected $want"
		sed 's/^/  stderr: /' "$tmp/err" >&2
	fi
}
has() { # has NAME FILE TEXT
	grep -qF -- "$3" "$2" || { fail "$1: '$3' not in $(basename "$2"):"; sed 's/^/  | /' "$2" >&2; }
}

mkdir -p "$tmp/www"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
	-addext subjectAltName=IP:127.0.0.1,IP:203.0.113.7 -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>/dev/null ||
	{ echo "cannot make a certificate with openssl" >&2; exit 1; }

cat >"$tmp/www/ok.yaml" <<'EOF'
name: remote
description: served over https
env:
  NCCL_IB_TC: "106"
EOF
printf 'env:\n  LD_PRELOAD: /tmp/evil.so\n' >"$tmp/www/preload.yaml"
printf 'python: /tmp/evil-python\n' >"$tmp/www/python.yaml"
printf 'env:\n  PYTHONPYCACHEPREFIX: /tmp/evil-pyc\n' >"$tmp/www/pycache.yaml"
printf 'env:\n  NCCL_IB_TC: "106"\n  HOME: /tmp/evil-home\n' >"$tmp/www/home.yaml"
printf 'env:\n  NCCL_DEBUG_FILE: /etc/cron.d/x\n' >"$tmp/www/debugfile.yaml"
printf 'torchrun:\n  rdzv_backend: c10d\n  rdzv_endpoint: 203.0.113.66:29400\n  rdzv_id: x\n' >"$tmp/www/rdzv.yaml"
printf 'env:\n  FI_PROVIDER: efa\n  UCX_TLS: rc\n  NCCL_ALGO: Ring\ntorchrun:\n  max_restarts: 1\nbind: core\n' \
	>"$tmp/www/tuning.yaml"
printf 'extends: /etc/passwd.yaml\n' >"$tmp/www/local.yaml"
printf 'name: drain-all\nexpect:\n  gpus: 64\n' >"$tmp/www/drain.yaml"
printf 'env:\n  NCCL_NET:\n    value: IB\n    when_exists: /etc/passwd\n' >"$tmp/www/probe-there.yaml"
printf 'env:\n  NCCL_NET:\n    value: IB\n    when_exists: /etc/no-such-file\n' >"$tmp/www/probe-absent.yaml"
printf 'extends: network-only\nenv:\n  NCCL_IB_SL: "1"\n' >"$tmp/www/chain.yaml"

python3 "$LL_SRCDIR/tests/tools/profile-server.py" "$tmp/cert.pem" "$tmp/key.pem" "$tmp/www" \
	"$tmp/port" "$tmp/log" &
server_pid=$!
for _ in $(seq 100); do
	[ -s "$tmp/port" ] && break
	sleep 0.05
done
[ -s "$tmp/port" ] || { echo "the test server did not start" >&2; exit 1; }
port=$(cat "$tmp/port")
base="https://127.0.0.1:$port"

export XDG_CACHE_HOME="$tmp/cache"
export LLMLAUNCH_PROFILE_PATH="$LL_SRCDIR/profiles"
L="$LLMLAUNCH"
CA=(--cacert "$tmp/cert.pem")

# TLS verification is always on: without the CA the fetch fails and says what to do.
run "untrusted" 1 "$L" profiles show "$base/ok.yaml"
has "untrusted" "$tmp/err" "cannot fetch '$base/ok.yaml': "
has "untrusted" "$tmp/err" "hint: TLS verification is always on: pass --cacert FILE to trust a private CA"

# 200: the values, with the URL and line as their origin; cached afterwards.
run "200" 0 "$L" profiles show "$base/ok.yaml" "${CA[@]}"
has "200" "$tmp/out" "NCCL_IB_TC=106  [env]  $base/ok.yaml:4"
[ "$(ls "$tmp/cache/llmlaunch" | wc -l)" = 2 ] || fail "200: expected a body and a metadata file in the cache"
has "200" "$tmp/log" "GET /ok.yaml 200"

# 304: the second fetch revalidates with the ETag and uses the cached body.
run "304" 0 "$L" profiles show "$base/ok.yaml" "${CA[@]}"
has "304" "$tmp/out" "NCCL_IB_TC=106"
has "304" "$tmp/log" "GET /ok.yaml 304"

# A changed file is fetched again (the ETag no longer matches).
sed -i 's/"106"/"41"/' "$tmp/www/ok.yaml"
run "changed" 0 "$L" profiles show "$base/ok.yaml" "${CA[@]}"
has "changed" "$tmp/out" "NCCL_IB_TC=41"

# 404 is an error, not a reason to use some cache.
run "404" 1 "$L" profiles show "$base/nope.yaml" "${CA[@]}"
has "404" "$tmp/err" "llmlaunch: cannot fetch '$base/nope.yaml': HTTP 404 (not found)"

# A server that accepts and then says nothing: the total timeout ends it.
start=$(date +%s)
LLMLAUNCH_FETCH_TIMEOUT=1 run "stall" 1 "$L" profiles show "$base/stall.yaml" "${CA[@]}"
elapsed=$(($(date +%s) - start))
has "stall" "$tmp/err" "llmlaunch: cannot fetch '$base/stall.yaml': no complete answer within 1000 ms"
has "stall" "$tmp/err" "hint: no cached copy of this profile exists yet"
[ "$elapsed" -le 5 ] || fail "stall: took ${elapsed}s with a 1 s timeout"

# A server that accepts the connection and never answers the TLS handshake: the
# connect timeout (5 s) ends it, and the message says so (it said "timed out after
# 20000 ms", the total timeout that had not run out).
python3 -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
conns = []
while True:
    c, _ = s.accept()
    conns.append(c)  # held open, never a byte
' "$tmp/mute-port" &
mute_pid=$!
for _ in $(seq 100); do [ -s "$tmp/mute-port" ] && break; sleep 0.05; done
mute="https://127.0.0.1:$(cat "$tmp/mute-port")"
start=$(date +%s)
run "no-handshake" 1 "$L" profiles show "$mute/p.yaml" "${CA[@]}"
elapsed=$(($(date +%s) - start))
kill "$mute_pid" 2>/dev/null
wait "$mute_pid" 2>/dev/null
has "no-handshake" "$tmp/err" "llmlaunch: cannot fetch '$mute/p.yaml': connection and TLS handshake not complete within 5000 ms"
[ "$elapsed" -ge 4 ] && [ "$elapsed" -le 9 ] || fail "no-handshake: took ${elapsed}s, expected the 5 s connect timeout"

# Credentials in a URL are never shown nor stored: profiles show, explain, the
# fetch cache's metadata and file names all see https://***@host/...
cred="https://alice:s3cret-t0ken@127.0.0.1:$port"
redacted="https://***@127.0.0.1:$port"
run "credentials" 0 "$L" profiles show "$cred/ok.yaml" "${CA[@]}"
has "credentials" "$tmp/out" "$redacted/ok.yaml"
run "credentials-explain" 0 "$L" explain --profile "$cred/ok.yaml" "${CA[@]}"
has "credentials-explain" "$tmp/out" "[profile $redacted/ok.yaml:4]"
run "credentials-404" 1 "$L" profiles show "$cred/nope.yaml" "${CA[@]}"
has "credentials-404" "$tmp/err" "cannot fetch '$redacted/nope.yaml': HTTP 404"
if grep -rqs -e s3cret -e alice "$tmp/out" "$tmp/err" "$tmp/cache"; then
	fail "credentials: the password or user appears in output or in the cache: $(grep -rls -e s3cret -e alice "$tmp/out" "$tmp/err" "$tmp/cache")"
fi
meta="$tmp/cache/llmlaunch/$(printf '%s' "$redacted/ok.yaml" | sha256sum | cut -c1-32).json"
grep -qF "\"url\": \"$redacted/ok.yaml\"" "$meta" 2>/dev/null || fail "credentials: no metadata under the redacted URL ($meta)"

# A FIFO where the cache's metadata file is: read as no cache, never waited on.
fifo_meta="$tmp/cache/llmlaunch/$(printf '%s' "$base/fifo-cache.yaml" | sha256sum | cut -c1-32).json"
cp "$tmp/www/ok.yaml" "$tmp/www/fifo-cache.yaml"
mkfifo "$fifo_meta"
run "cache-fifo" 0 timeout 20 "$L" profiles show "$base/fifo-cache.yaml" "${CA[@]}"
has "cache-fifo" "$tmp/out" "NCCL_IB_TC="

# Oversize bodies, with and without a Content-Length.
run "oversize" 1 "$L" profiles show "$base/big.yaml" "${CA[@]}"
has "oversize" "$tmp/err" "llmlaunch: cannot fetch '$base/big.yaml': larger than the 1048576 byte limit for profiles"
run "oversize-unsized" 1 "$L" profiles show "$base/big-unsized.yaml" "${CA[@]}"
has "oversize-unsized" "$tmp/err" "larger than the 1048576 byte limit for profiles"

# Redirects: to https is followed, to http is refused.
run "redirect-https" 0 "$L" profiles show "$base/to-https.yaml" "${CA[@]}"
has "redirect-https" "$tmp/out" "NCCL_IB_TC=41"
run "redirect-http" 1 "$L" profiles show "$base/to-http.yaml" "${CA[@]}"
has "redirect-http" "$tmp/err" "llmlaunch: refusing redirect to 'http://127.0.0.1:$port/ok.yaml': redirects must stay on https"

# Plain http beyond loopback is refused before any connection.
run "plain-http" 1 "$L" profiles show "http://192.0.2.1/p.yaml"
has "plain-http" "$tmp/err" "llmlaunch: refusing plain http for 'http://192.0.2.1/p.yaml': only loopback may use http"

# Pins: a wrong sha256 stops; the right one works.
good=$(sha256sum "$tmp/www/ok.yaml" | cut -d' ' -f1)
bad=0000000000000000000000000000000000000000000000000000000000000000
run "pin-mismatch" 1 "$L" profiles show "$base/ok.yaml#sha256=$bad" "${CA[@]}"
has "pin-mismatch" "$tmp/err" "llmlaunch: '$base/ok.yaml' does not match its pin: sha256 is $good, expected $bad"
run "pin-ok" 0 "$L" profiles show "$base/ok.yaml#sha256=$good" "${CA[@]}"
has "pin-ok" "$tmp/out" "NCCL_IB_TC=41"
run "pin-bad-syntax" 1 "$L" profiles show "$base/ok.yaml#sha256=abc" "${CA[@]}"
has "pin-bad-syntax" "$tmp/err" "sha256 pin must be 64 hexadecimal digits"

# A remote profile may not choose code, nor reach into local files; it may extend names.
run "remote-preload" 1 "$L" profiles show "$base/preload.yaml" "${CA[@]}"
has "remote-preload" "$tmp/err" "$base/preload.yaml:2:3: env.LD_PRELOAD: 'LD_PRELOAD' selects code the workers load"
run "remote-preload-allowed" 0 "$L" profiles show "$base/preload.yaml" "${CA[@]}" --allow-loader-vars
# Beyond the loader's own variables, a fetched profile may set an allow-list only:
# PYTHONPYCACHEPREFIX pointed at a crafted .pyc made both ranks run it; HOME and
# NCCL_DEBUG_FILE into /etc were accepted too.
run "remote-pycache" 1 "$L" profiles show "$base/pycache.yaml" "${CA[@]}"
has "remote-pycache" "$tmp/err" "$base/pycache.yaml:2:3: env.PYTHONPYCACHEPREFIX: 'PYTHONPYCACHEPREFIX' selects code the workers load"
run "remote-home" 1 "$L" explain --profile "$base/home.yaml" "${CA[@]}"
has "remote-home" "$tmp/err" "$base/home.yaml:3:3: env.HOME: 'HOME' is not among the variables a profile from the network may set"
has "remote-home" "$tmp/err" "hint: a fetched profile may set NCCL tuning, known FI_*/UCX_* tuning and torchrun's tuning (docs/security.md)"
run "remote-debugfile" 1 "$L" profiles show "$base/debugfile.yaml" "${CA[@]}"
has "remote-debugfile" "$tmp/err" "env.NCCL_DEBUG_FILE: 'NCCL_DEBUG_FILE' is not among the variables a profile from the network may set"
run "remote-tuning" 0 "$L" profiles show "$base/tuning.yaml" "${CA[@]}"
has "remote-tuning" "$tmp/out" "UCX_TLS=rc  [env]  $base/tuning.yaml:3"
# Trusted on purpose: applied, and explain lists it as coming from that URL.
# A fetched profile never names who the job talks to, trusted or not: nothing reaches
# torchrun (the dry run prints no command).
for trust in "" --allow-loader-vars; do
	run "remote-rdzv$trust" 1 "$L" --dry-run --python /bin/true --profile "$base/rdzv.yaml" "${CA[@]}" $trust \
		"$LL_SRCDIR/examples/train.py"
	has "remote-rdzv$trust" "$tmp/err" "$base/rdzv.yaml:2:3: torchrun.rdzv_backend: a profile fetched over the network may not set 'rdzv_backend': it is the job's world"
	[ -s "$tmp/out" ] && fail "remote-rdzv$trust: something was printed for torchrun: $(cat "$tmp/out")"
done
run "remote-home-trusted" 0 "$L" explain --profile "$base/home.yaml" "${CA[@]}" --allow-loader-vars
has "remote-home-trusted" "$tmp/out" "Set only because of --allow-loader-vars:"
has "remote-home-trusted" "$tmp/out" "  HOME=/tmp/evil-home  [profile $base/home.yaml:3]  (fetched over the network)"
has "remote-home-trusted" "$tmp/err" "llmlaunch: warning: $base/home.yaml:3: 'HOME' from a profile fetched over the network, set only because --allow-loader-vars was given"
grep -q 'NCCL_IB_TC=106  \[profile' "$tmp/out" && grep -A3 'Set only because' "$tmp/out" | grep -q NCCL_IB_TC &&
	fail "remote-home-trusted: NCCL_IB_TC is allowed anyway and must not be listed"
run "remote-home-trusted-json" 0 "$L" explain --json --profile "$base/home.yaml" "${CA[@]}" --allow-loader-vars
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); t=d["trusted"]; sys.exit(not (len(t) == 1 and t[0]["name"] == "HOME" and t[0]["remote"] is True and t[0]["origin"].endswith("/home.yaml:3")))' "$tmp/out" ||
	fail "remote-home-trusted-json: .trusted is $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["trusted"])' "$tmp/out")"
run "remote-python" 1 "$L" profiles show "$base/python.yaml" "${CA[@]}"
has "remote-python" "$tmp/err" "a profile from the network may not choose the interpreter"
run "remote-local-path" 1 "$L" profiles show "$base/local.yaml" "${CA[@]}"
has "remote-local-path" "$tmp/err" "'/etc/passwd.yaml': a profile from the network may extend only names and URLs"
# A fetched when_exists may not probe this machine: a path outside the library
# locations is refused before any look, whether it exists or not.
for f in probe-there probe-absent; do
	run "remote-when-exists-$f" 1 "$L" explain --profile "$base/$f.yaml" "${CA[@]}"
	sed -e 's/passwd/PATH/' -e 's/no-such-file/PATH/' -e 's/probe-[a-z]*\.yaml/P.yaml/' "$tmp/err" >"$tmp/$f.err"
done
has "remote-when-exists" "$tmp/probe-there.err" "env.NCCL_NET.when_exists: '/etc/PATH' is outside the places a profile from the network may test"
cmp -s "$tmp/probe-there.err" "$tmp/probe-absent.err" ||
	fail "remote-when-exists: the answer differs with the path's existence: $(diff "$tmp/probe-there.err" "$tmp/probe-absent.err")"
# A fetched profile cannot drain a node through the Prolog: its expect warns. The
# same file as the site's own profile does drain (exit 1).
fixture="$LL_SRCDIR/tests/fixtures/hwloc/two-socket-4gpu-2hca.xml"
run "remote-expect-prolog" 0 "$L" slurm prolog --profile "$base/drain.yaml" "${CA[@]}" --no-drain-reason \
	--state-dir "$tmp/state" --topology "$fixture"
has "remote-expect-prolog" "$tmp/err" "expected 64 GPUs, found 4 (stated by a profile fetched over the network: a warning, it cannot drain the node)"
has "remote-expect-prolog" "$tmp/out" "passes"
cp "$tmp/www/drain.yaml" "$tmp/site-drain.yaml"
run "local-expect-prolog" 1 "$L" slurm prolog --profile "$tmp/site-drain.yaml" --no-drain-reason \
	--state-dir "$tmp/state" --topology "$fixture"
has "local-expect-prolog" "$tmp/err" "fails its expectations (drain-all): expected 64 GPUs, found 4"
run "remote-chain" 0 "$L" profiles show "$base/chain.yaml" "${CA[@]}"
has "remote-chain" "$tmp/out" "NCCL_P2P_DISABLE=1"
has "remote-chain" "$tmp/out" "NCCL_IB_SL=1  [env]  $base/chain.yaml:3"

# Diamonds of URLs: each is fetched once per command (a diamond 8 wide and 6 deep made
# about 2,450 requests), and one command fetches at most 16 URLs.
printf 'extends: ["%s/dia-b.yaml", "%s/dia-c.yaml"]\n' "$base" "$base" >"$tmp/www/dia-a.yaml"
printf 'extends: "%s/dia-d.yaml"\nenv:\n  NCCL_IB_SL: "2"\n' "$base" >"$tmp/www/dia-b.yaml"
printf 'extends: "%s/dia-d.yaml"\nenv:\n  NCCL_IB_SL: "3"\n' "$base" >"$tmp/www/dia-c.yaml"
printf 'env:\n  NCCL_IB_TC: "7"\n' >"$tmp/www/dia-d.yaml"
run "diamond" 0 "$L" profiles show "$base/dia-a.yaml" "${CA[@]}"
has "diamond" "$tmp/out" "NCCL_IB_SL=3"
[ "$(grep -c '^GET /dia-d.yaml ' "$tmp/log")" = 1 ] || fail "diamond: dia-d.yaml fetched $(grep -c '^GET /dia-d.yaml ' "$tmp/log") times"
wide="extends: ["
for i in $(seq 0 19); do
	printf 'env:\n  NCCL_IB_TC: "%s"\n' "$i" >"$tmp/www/wide-$i.yaml"
	wide="$wide${i:+}\"$base/wide-$i.yaml\", "
done
printf '%s]\n' "${wide%, }" >"$tmp/www/wide.yaml"
run "wide" 1 "$L" profiles show "$base/wide.yaml" "${CA[@]}"
has "wide" "$tmp/err" "extends: '$base/wide-15.yaml': more than 16 profile URLs in one resolution"
requests=$(grep -c '^GET /wide' "$tmp/log")
[ "$requests" -le 16 ] || fail "wide: $requests requests for one command, at most 16 expected"

# The planner sees URL:LINE as the origin.
run "explain" 0 "$L" explain --profile "$base/ok.yaml" "${CA[@]}"
has "explain" "$tmp/out" "NCCL_IB_TC=41  [profile $base/ok.yaml:4]"

# Offline: the server is gone; the cached copy is used with a warning saying its age.
kill "$server_pid"
wait "$server_pid" 2>/dev/null
server_pid=
run "offline" 0 "$L" profiles show "$base/ok.yaml" "${CA[@]}"
has "offline" "$tmp/out" "NCCL_IB_TC=41"
has "offline" "$tmp/err" "llmlaunch: warning: using the cached copy of '$base/ok.yaml' from "
has "offline" "$tmp/err" " seconds ago: "
# A pinned copy in the cache needs no server at all (and no warning).
run "offline-pinned" 0 "$L" profiles show "$base/ok.yaml#sha256=$good" "${CA[@]}"
[ -s "$tmp/err" ] && fail "offline-pinned: unexpected stderr: $(cat "$tmp/err")"
# No cache and no server: an error.
run "offline-uncached" 1 "$L" profiles show "$base/never-fetched.yaml" "${CA[@]}"
has "offline-uncached" "$tmp/err" "llmlaunch: cannot fetch '$base/never-fetched.yaml': "
has "offline-uncached" "$tmp/err" "hint: no cached copy of this profile exists yet"

# Plain http to loopback is decided from the literal address: a name that starts
# with "127." is a name, refused before any lookup.
run "http-name-not-loopback" 1 "$L" profiles show "http://127.attacker.example/p.yaml"
has "http-name-not-loopback" "$tmp/err" "refusing plain http for 'http://127.attacker.example/p.yaml': only loopback may use http"

# A fetched profile's extends may not reach loopback, link-local or private
# addresses unless the user's own URL did. In a network namespace of its own, the
# server answers on 203.0.113.7 (a public address there) and on 127.0.0.1.
ns=ll-https-$$
if ip netns add "$ns" 2>/dev/null; then
	ip -n "$ns" link set lo up
	ip -n "$ns" addr add 203.0.113.7/32 dev lo
	printf 'extends: https://127.0.0.1:PORT/ok.yaml\n' >"$tmp/www/to-loopback.yaml.in"
	ip netns exec "$ns" python3 "$LL_SRCDIR/tests/tools/profile-server.py" "$tmp/cert.pem" "$tmp/key.pem" \
		"$tmp/www" "$tmp/nsport" "$tmp/nslog" 0.0.0.0 &
	ns_pid=$!
	for _ in $(seq 100); do
		[ -s "$tmp/nsport" ] && break
		sleep 0.05
	done
	nsport=$(cat "$tmp/nsport")
	sed "s/PORT/$nsport/" "$tmp/www/to-loopback.yaml.in" >"$tmp/www/to-loopback.yaml"
	run "extends-public-to-loopback" 1 ip netns exec "$ns" "$L" profiles show \
		"https://203.0.113.7:$nsport/to-loopback.yaml" "${CA[@]}"
	has "extends-public-to-loopback" "$tmp/err" "refusing 'https://127.0.0.1:$nsport/ok.yaml': it resolves to a loopback, link-local or private address, which a profile from the network may not reach"
	run "extends-loopback-to-loopback" 0 ip netns exec "$ns" "$L" profiles show \
		"https://127.0.0.1:$nsport/to-loopback.yaml" "${CA[@]}"
	has "extends-loopback-to-loopback" "$tmp/out" "[env]  https://127.0.0.1:$nsport/ok.yaml:"
	# The user's own URL may name any address.
	run "user-url-loopback" 0 ip netns exec "$ns" "$L" profiles show "https://127.0.0.1:$nsport/ok.yaml" "${CA[@]}"
	kill "$ns_pid" 2>/dev/null
	wait "$ns_pid" 2>/dev/null
	ns_pid=
	ip netns del "$ns"
else
	echo "profiles-https: no network namespaces here: the extends address checks are skipped" >&2
fi

if [ "$failures" -ne 0 ]; then
	echo "$failures check(s) failed" >&2
	exit 1
fi
echo "profiles-https: all checks passed"
