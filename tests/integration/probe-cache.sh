#!/bin/bash
# The per-boot probe cache on this machine, in a private LLMLAUNCH_CACHE_DIR:
# a miss (writes the cache), a hit and --no-cache give byte-identical `probe --json`
# (and the miss and the hit the same --save); a truncated, garbage, foreign or
# symlinked cache file is ignored and rewritten, the symlink's target untouched;
# an unsafe directory is not used; --topology, --fsroot and the commands that
# probe (env, --dry-run) behave. LLMLAUNCH_CACHE_DEBUG=1 says what happened.
set -u
: "${LLMLAUNCH:?}" "${LL_SRCDIR:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
cache=$tmp/cache
export LLMLAUNCH_CACHE_DIR=$cache LLMLAUNCH_CACHE_DEBUG=1
unset LLMLAUNCH_NVML_LIBRARY

# run LABEL EXPECTED-STATUS-SUBSTRING ARGS...: stdout to $tmp/LABEL.out, and the
# one debug line must contain the expected text.
run() {
	local label=$1 want=$2
	shift 2
	if ! "$LLMLAUNCH" "$@" >"$tmp/$label.out" 2>"$tmp/$label.err"; then
		echo "FAIL $label: llmlaunch $* failed: $(cat "$tmp/$label.err")"
		fail=1
		return
	fi
	local line
	line=$(grep '^llmlaunch: debug: probe cache: ' "$tmp/$label.err")
	if [ -z "$want" ]; then
		[ -z "$line" ] || { echo "FAIL $label: expected no cache line, got '$line'"; fail=1; }
	elif [[ $line != *"$want"* ]]; then
		echo "FAIL $label: cache line '$line' lacks '$want'"
		fail=1
	fi
	# Nothing but that line on stderr.
	if grep -v '^llmlaunch: debug: probe cache: ' "$tmp/$label.err" | grep -q .; then
		echo "FAIL $label: unexpected stderr: $(cat "$tmp/$label.err")"
		fail=1
	fi
}

same() { # LABEL-A LABEL-B
	cmp -s "$tmp/$1.out" "$tmp/$2.out" || { echo "FAIL $1 and $2 differ:"; diff "$tmp/$1.out" "$tmp/$2.out" | head -20; fail=1; }
}

file=$cache/topology.xml
run miss "miss '$file' (no cache file yet); written" probe --json
[ -f "$file" ] && [ ! -L "$file" ] || { echo "FAIL miss: no cache file written"; fail=1; }
[ "$(stat -c %a "$cache")" = 700 ] || { echo "FAIL cache directory mode $(stat -c %a "$cache"), expected 700"; fail=1; }
[ "$(stat -c %a "$file")" = 600 ] || { echo "FAIL cache file mode $(stat -c %a "$file"), expected 600"; fail=1; }
grep -q '<info name="LLMLaunchCacheBootID" value="'"$(cat /proc/sys/kernel/random/boot_id)"'"/>' "$file" ||
	{ echo "FAIL the cache file does not carry this boot's id"; fail=1; }
run hit "hit '$file'" probe --json
run nocache "off (--no-cache)" probe --json --no-cache
same miss hit
same miss nocache

# The topology itself: a hit gives what the full probe that wrote the cache gave.
rm -f "$file"
run savemiss "(no cache file yet); written" probe --save "$tmp/miss.xml"
run savehit "hit" probe --save "$tmp/hit.xml"
cmp -s "$tmp/miss.xml" "$tmp/hit.xml" || { echo "FAIL --save differs between a miss and a hit"; diff "$tmp/miss.xml" "$tmp/hit.xml" | head; fail=1; }
# The cache's key never reaches a snapshot.
! grep -q LLMLaunchCache "$tmp/hit.xml" || { echo "FAIL the snapshot carries the cache key"; fail=1; }

# Broken files: ignored, rewritten, and the next probe hits again.
head -c 2000 "$file" >"$tmp/cut" && cat "$tmp/cut" >"$file"
run truncated "invalid or truncated hwloc XML); written" probe --json
same miss truncated
run after-truncated "hit" probe --json
printf 'garbage\n' >"$file"
run garbage "not an XML file); written" probe --json
same miss garbage
run after-garbage "hit" probe --json
# Nested deeper than any real topology: it crashed hwloc (exit 139 on every run,
# the file never replaced); now a miss like any broken file, and rewritten.
python3 "$LL_SRCDIR/tests/tools/deep-topology.py" 20000 "$tmp/deep.xml"
cp "$tmp/deep.xml" "$file"
run deep "nested more than 128 deep, deeper than any real topology); written" probe --json
same miss deep
run after-deep "hit" probe --json
# Every command that probes survives it too (each rewrites the file).
for cmd in env explain profiles-list dryrun task-prolog; do
	cp "$tmp/deep.xml" "$file"
	case $cmd in
	profiles-list) args=(profiles list) ;;
	dryrun) args=(--dry-run --python /bin/true "$LL_SRCDIR/examples/train.py") ;;
	task-prolog) args=(slurm task-prolog --state-dir "$tmp/no-state") ;;
	*) args=("$cmd") ;;
	esac
	run "deep-$cmd" "nested more than 128 deep" "${args[@]}"
done
# The Prolog's snapshot nested too deep: the task prolog probes the node instead.
mkdir -p "$tmp/state"
cp "$tmp/deep.xml" "$tmp/state/snapshot.xml"
"$LLMLAUNCH" slurm task-prolog --state-dir "$tmp/state" >"$tmp/tp.out" 2>"$tmp/tp.err"
rc=$?
if [ $rc != 0 ] || ! grep -q '^export NCCL_' "$tmp/tp.out" ||
	! grep -qF "nested more than 128 deep, deeper than any real topology: probing this node instead" "$tmp/tp.err"; then
	echo "FAIL task-prolog with a deep snapshot: exit $rc, stdout: $(head -3 "$tmp/tp.out"), stderr: $(cat "$tmp/tp.err")"
	fail=1
fi

# A symlink in place of the file: not followed; the rewrite replaces the link.
printf '<topology version="2.0"></topology>\n' >"$tmp/target.xml"
cp "$tmp/target.xml" "$tmp/target.orig"
rm -f "$file" && ln -s "$tmp/target.xml" "$file"
run symlink "(the cache file is a symbolic link, not followed); written" probe --json
same miss symlink
[ ! -L "$file" ] || { echo "FAIL the symlink is still there"; fail=1; }
cmp -s "$tmp/target.xml" "$tmp/target.orig" || { echo "FAIL the symlink's target was written"; fail=1; }

chmod 666 "$file"
run others "(the cache file is another user's or writable by others); written" probe --json
[ "$(stat -c %a "$file")" = 600 ] || { echo "FAIL the rewritten file is $(stat -c %a "$file")"; fail=1; }

# A directory others may write is not used; the probe still answers.
chmod 777 "$cache"
run unsafe "off (cannot use '$cache': owned by another user or writable by others)" probe --json
same miss unsafe
chmod 700 "$cache"
ln -s "$cache" "$tmp/link"
LLMLAUNCH_CACHE_DIR=$tmp/link run linkdir "off (cannot use '$tmp/link': Not a directory)" probe --json

# Only live probes use it.
run replay "" probe --json --topology "$tmp/hit.xml"
if [ -n "${LL_FIXTURES:-}" ]; then
	mkdir -p "$tmp/fake"
	(. "$LL_FIXTURES/sysfs/fake-sysfs.sh"; fake_machine "$tmp/fake" 2) >/dev/null
	run fsroot "" probe --json --fsroot "$tmp/fake"
fi

# The commands that start with a probe.
run env "hit" env
run env-nocache "off (--no-cache)" env --no-cache
same env env-nocache
run explain "hit" explain --json
run explain-nocache "off (--no-cache)" explain --json --no-cache
same explain explain-nocache
run dryrun "hit" --dry-run --python /bin/true "$LL_SRCDIR/examples/train.py"

# Without the debug variable (or with it empty or 0): silent.
for v in "" 0 unset; do
	if [ "$v" = unset ]; then
		(unset LLMLAUNCH_CACHE_DEBUG; "$LLMLAUNCH" probe --json >/dev/null 2>"$tmp/quiet.err") || fail=1
	else
		LLMLAUNCH_CACHE_DEBUG=$v "$LLMLAUNCH" probe --json >/dev/null 2>"$tmp/quiet.err" || fail=1
	fi
	[ ! -s "$tmp/quiet.err" ] || { echo "FAIL stderr with LLMLAUNCH_CACHE_DEBUG '$v': $(cat "$tmp/quiet.err")"; fail=1; }
done

# Out of descriptors: the live probe fails and writes no cache ("none" would be kept
# for the whole boot).
rm -rf "$tmp/fdcache"
rc=0
(ulimit -n 5; LLMLAUNCH_CACHE_DIR=$tmp/fdcache "$LLMLAUNCH" probe --json >"$tmp/fds.out" 2>"$tmp/fds.err") || rc=$?
[ "$rc" = 1 ] || { echo "FAIL ulimit -n 5: exit $rc"; fail=1; }
grep -q "fewer than 32 file descriptors are free" "$tmp/fds.err" || { echo "FAIL ulimit -n 5: $(cat "$tmp/fds.err")"; fail=1; }
[ -z "$(ls -A "$tmp/fdcache" 2>/dev/null)" ] || { echo "FAIL ulimit -n 5 left a cache: $(ls -A "$tmp/fdcache")"; fail=1; }

[ $fail = 0 ] && echo "ok: miss, hit and --no-cache identical; broken, foreign and symlinked files rewritten"
exit $fail
