# Errors found before anything runs: one clear line each (plus a hint), the right
# exit status, and no job directory left behind.
. "$(dirname "$0")/launch-common.bash"

# expect STATUS "FIRST LINE" ["HINT LINE"] -- llmlaunch ARGS...
expect() {
	local status=$1 line=$2 hint=$3 rc
	shift 4
	set +e
	"$LLMLAUNCH" "$@" >"$WORK/out" 2>"$WORK/err"
	rc=$?
	set -e
	assert_eq "status of '$*'" "$status" "$rc"
	assert_eq "message of '$*'" "$line" "$(head -n 1 "$WORK/err")"
	if [ -n "$hint" ]; then
		assert_eq "hint of '$*'" "$hint" "$(sed -n 2p "$WORK/err")"
		assert_eq "lines on stderr for '$*'" 2 "$(wc -l <"$WORK/err")"
	else
		assert_eq "lines on stderr for '$*'" 1 "$(wc -l <"$WORK/err")"
	fi
	[ ! -s "$WORK/out" ] || fail "'$*' printed on stdout: $(cat "$WORK/out")"
	assert_tmp_clean
}

expect 2 "llmlaunch: cannot find script 'nosuch.py': No such file or directory" "" -- \
	--python /bin/true nosuch.py --steps 1
expect 2 "llmlaunch: cannot find script 'prboe': No such file or directory" \
	"hint: did you mean 'llmlaunch probe'?" -- prboe
expect 2 "llmlaunch: cannot run script '$LL_SRCDIR/examples': is a directory" "" -- "$LL_SRCDIR/examples"
expect 2 "llmlaunch: no script to run" "hint: llmlaunch [OPTIONS] SCRIPT [ARGS...]; see 'llmlaunch run --help'" -- \
	run --nproc-per-node 1
expect 2 "llmlaunch: run: unknown option '--nproc-per-nod3'" "hint: did you mean '--nproc-per-node'? (llmlaunch run --help)" \
	-- --nproc-per-nod3 2 "$EXAMPLE"
expect 2 "llmlaunch: run: option '--python' needs a value" "" -- --python
expect 1 "llmlaunch: cannot run interpreter '$WORK/missing/python3': No such file or directory" \
	"hint: choose the interpreter with --python PATH or LLMLAUNCH_PYTHON" -- \
	--python "$WORK/missing/python3" "$EXAMPLE"
LLMLAUNCH_PYTHON=no-such-python3 expect 1 "llmlaunch: cannot find interpreter 'no-such-python3' in PATH" \
	"hint: choose the interpreter with --python PATH or LLMLAUNCH_PYTHON" -- "$EXAMPLE"

# A real interpreter that cannot import torch: Python without its site directories.
if [ -x "$PY" ]; then
	printf '#!/bin/sh\nexec %s -S "$@"\n' "$PY" >"$WORK/python-nosite"
	chmod +x "$WORK/python-nosite"
	if "$PY" -c 'import torch' 2>/dev/null; then
		hint="hint: /usr/bin/python3 has torch: use --python /usr/bin/python3 or LLMLAUNCH_PYTHON"
		[ "$PY" = /usr/bin/python3 ] || hint=""
	else
		hint="hint: install PyTorch for that interpreter, or choose another with --python"
	fi
	[ -n "$hint" ] && expect 1 "llmlaunch: torch is not importable by '$WORK/python-nosite'" "$hint" -- \
		--python "$WORK/python-nosite" "$EXAMPLE"
fi
echo "ok: pre-flight errors"
