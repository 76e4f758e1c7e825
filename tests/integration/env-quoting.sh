#!/bin/bash
# `llmlaunch env` quoting, checked by the real consumers: every value (spaces, quotes,
# $, backslashes, unicode, newlines, empty) goes through --set, out in each format,
# and back in through bash, fish (skipped if absent), python-dotenv (skipped if
# absent) and a JSON parser; what comes back must be byte-identical. Values a format
# cannot carry (a newline for slurm and dotenv) must be an error with nothing printed.
set -uo pipefail
: "${LLMLAUNCH:?}" "${LL_FIXTURES:?}"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

# A small fake machine, so the test needs neither real data nor this host's devices.
. "$LL_FIXTURES/sysfs/fake-sysfs.sh"
fake_machine "$T/root" 2

values=(
	"plain"
	"two words  and   spaces"
	"single ' quote and ''double'' ones"
	'double " quote'
	'dollar $HOME ${HOME} $(id) `id`'
	'back\slash \\ and \n and trailing\'
	"unicode é ✓ 日本語"
	"tab	inside"
	"*glob?[x] ~ & | ; < > # !"
	"="
	""
)
newline_value=$'first line\nsecond line'

args=()
for i in "${!values[@]}"; do
	args+=(--set "QV$i=${values[$i]}")
	printf '%s' "${values[$i]}" >"$T/expect.$i"
done
printf '%s' "$newline_value" >"$T/expect.nl"

run_env() { # FORMAT [extra args]: stdout to $T/out.FORMAT
	local fmt=$1
	shift
	env -i PATH="$PATH" ASAN_OPTIONS="${ASAN_OPTIONS:-}" "$LLMLAUNCH" env --fsroot "$T/root" --format "$fmt" "$@" \
		>"$T/out.$fmt" 2>"$T/err.$fmt"
}

compare() { # LABEL INDEX-LIST: compare $T/got.LABEL.i with $T/expect.i
	local label=$1 i
	shift
	for i in "$@"; do
		cmp -s "$T/expect.$i" "$T/got.$label.$i" ||
			bad "$label: value $i: expected [$(cat "$T/expect.$i")], got [$(cat "$T/got.$label.$i" 2>/dev/null)]"
	done
}

all=("${!values[@]}")

# sh: bash and dash (POSIX sh) both read it back.
run_env sh "${args[@]}" --set "QVNL=$newline_value" || bad "env --format sh failed: $(cat "$T/err.sh")"
for sh in bash dash; do
	command -v $sh >/dev/null || continue
	$sh -c '. "$1/out.sh"; for i in $(seq 0 $2); do eval "printf %s \"\$QV$i\"" >"$1/got.'$sh'.$i"; done
		printf %s "$QVNL" >"$1/got.'$sh'.nl"' sh "$T" $((${#values[@]} - 1)) || bad "$sh could not source the output"
	compare $sh "${all[@]}" nl
done

# fish
if command -v fish >/dev/null; then
	run_env fish "${args[@]}" --set "QVNL=$newline_value" || bad "env --format fish failed"
	fish -c 'source $argv[1]/out.fish
		for i in (seq 0 $argv[2])
			set -l n QV$i
			printf "%s" "$$n" >$argv[1]/got.fish.$i
		end
		printf "%s" "$QVNL" >$argv[1]/got.fish.nl' "$T" $((${#values[@]} - 1)) || bad "fish could not source the output"
	compare fish "${all[@]}" nl
else
	echo "fish not installed: fish round trip skipped" >&2
fi

# dotenv through python-dotenv, wherever an interpreter has it.
dotenv_py=
for py in python3 /usr/bin/python3 "$HOME/.pyenv/shims/python3"; do
	if command -v "$py" >/dev/null && "$py" -c 'import dotenv' 2>/dev/null; then
		dotenv_py=$py
		break
	fi
done
# python-dotenv expands ${...} everywhere and cannot end a quoted value with a
# backslash: values 4 and 5 are refused (checked below), the rest must round-trip.
dotenv_idx=()
dotenv_args=()
for i in "${all[@]}"; do
	case $i in 4 | 5) continue ;; esac
	dotenv_idx+=("$i")
	dotenv_args+=(--set "QV$i=${values[$i]}")
done
run_env dotenv "${dotenv_args[@]}" || bad "env --format dotenv failed: $(cat "$T/err.dotenv")"
if [ -n "$dotenv_py" ]; then
	"$dotenv_py" - "$T" <<'PY' || bad "python-dotenv could not read the output"
import sys
from dotenv import dotenv_values
d = sys.argv[1]
vals = dotenv_values(d + "/out.dotenv", interpolate=True)
for k, v in vals.items():
    if k.startswith("QV"):
        open(f"{d}/got.dotenv.{k[2:]}", "w", encoding="utf-8", newline="").write(v or "")
PY
	compare dotenv "${dotenv_idx[@]}"
else
	echo "python-dotenv not installed: dotenv round trip skipped" >&2
fi

# json
run_env json "${args[@]}" --set "QVNL=$newline_value" || bad "env --format json failed"
python3 - "$T" <<'PY' || bad "JSON output did not parse"
import json, sys
d = sys.argv[1]
vals = json.load(open(d + "/out.json", encoding="utf-8"))
for k, v in vals.items():
    if k.startswith("QV"):
        open(f"{d}/got.json.{k[2:].lower()}", "w", encoding="utf-8", newline="").write(v)
PY
compare json "${all[@]}" nl

# slurm: each line is literally "export NAME=value".
run_env slurm "${args[@]}" || bad "env --format slurm failed"
for i in "${all[@]}"; do
	line=$(grep -a "^export QV$i=" "$T/out.slurm")
	printf '%s' "${line#export QV$i=}" >"$T/got.slurm.$i"
done
compare slurm "${all[@]}"

# What a format cannot carry is an error, not an altered value.
for fmt in slurm dotenv; do
	if run_env $fmt --set "QVNL=$newline_value"; then
		bad "$fmt accepted a newline"
	fi
	[ -s "$T/out.$fmt" ] && bad "$fmt printed something on error"
	grep -q "value of 'QVNL' contains a newline, which the $fmt format cannot express" "$T/err.$fmt" ||
		bad "$fmt: unexpected message: $(cat "$T/err.$fmt")"
done

run_env dotenv --set 'QVD=a ${HOME} b' && bad "dotenv accepted \${"
grep -q "value of 'QVD' contains '\${', which python-dotenv always expands" "$T/err.dotenv" ||
	bad "dotenv \${ message: $(cat "$T/err.dotenv")"
run_env dotenv --set 'QVD=ends\' && bad "dotenv accepted a trailing backslash"
grep -q "value of 'QVD' contains a trailing backslash" "$T/err.dotenv" || bad "dotenv backslash message"

# Bytes a terminal acts on (an OSC 52 clipboard write, a screen clear, CSI as a C1
# control, a carriage return, DEL, a byte that is not UTF-8): sh and fish read them
# back exactly, and the output itself holds none of them raw; the formats that would
# have to write them raw refuse.
ctl=(
	$'osc52 \e]52;c;aGVsbG8=\a end'
	$'clear \e[2J\e[H end'
	$'csi \xc2\x9b31m end'
	$'cr \r over, del \x7f'
	$'latin1 \xe9 and \xff'
	$'quote \' and percent %s and back\\slash \e'
)
ctl_args=()
for i in "${!ctl[@]}"; do
	ctl_args+=(--set "QC$i=${ctl[$i]}")
	printf '%s' "${ctl[$i]}" >"$T/expect.c$i"
done
raw_controls() { # FILE: any byte a terminal acts on?
	LC_ALL=C grep -qaP '[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|[\x80-\xff]' "$1" && python3 - "$1" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
try:
    text = data.decode("utf-8")
except UnicodeDecodeError:
    sys.exit(0)
sys.exit(0 if any(ord(c) < 0x20 and c not in "\t\n" or 0x7f <= ord(c) <= 0x9f for c in text) else 1)
PY
}
run_env sh "${ctl_args[@]}" || bad "env --format sh refused control characters: $(cat "$T/err.sh")"
raw_controls "$T/out.sh" && bad "env --format sh wrote a control character raw"
for sh in bash dash; do
	command -v $sh >/dev/null || continue
	$sh -c '. "$1/out.sh"; for i in $(seq 0 $2); do eval "printf %s \"\$QC$i\"" >"$1/got.c'$sh'.c$i"; done' \
		sh "$T" $((${#ctl[@]} - 1)) || bad "$sh could not source the control characters"
	for i in "${!ctl[@]}"; do
		cmp -s "$T/expect.c$i" "$T/got.c$sh.c$i" || bad "$sh: control value $i not read back exactly"
	done
done
if command -v fish >/dev/null; then
	run_env fish "${ctl_args[@]}" || bad "env --format fish refused control characters"
	raw_controls "$T/out.fish" && bad "env --format fish wrote a control character raw"
	fish -c 'source $argv[1]/out.fish
		for i in (seq 0 $argv[2])
			set -l n QC$i
			printf "%s" "$$n" >$argv[1]/got.cfish.c$i
		end' "$T" $((${#ctl[@]} - 1)) || bad "fish could not source the control characters"
	for i in "${!ctl[@]}"; do
		cmp -s "$T/expect.c$i" "$T/got.cfish.c$i" || bad "fish: control value $i not read back exactly"
	done
fi
for fmt in slurm dotenv; do
	run_env $fmt --set "QC0=${ctl[0]}" && bad "$fmt wrote an escape sequence"
	grep -q "value of 'QC0' holds a control character or a byte that is not UTF-8" "$T/err.$fmt" ||
		bad "$fmt control message: $(cat "$T/err.$fmt")"
done
run_env sh --set $'QCNL=\e]0;title\a\n' && bad "sh: a control value ending in a newline cannot be exact"

# Usage errors.
run_env csh; [ $? = 2 ] || bad "unknown format must exit 2"
grep -q "unknown format 'csh'" "$T/err.csh" || bad "unknown format message: $(cat "$T/err.csh")"
"$LLMLAUNCH" env --set NOEQUALS >/dev/null 2>&1; [ $? = 2 ] || bad "--set without '=' must exit 2"
"$LLMLAUNCH" env --help | grep -q "^usage: llmlaunch env" || bad "env --help"

exit $fail
