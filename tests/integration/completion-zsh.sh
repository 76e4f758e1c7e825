#!/usr/bin/env bash
# completions/_llmlaunch driven for real: an interactive zsh in a pseudo-terminal
# (zsh/zpty) with compinit, a line typed and TAB pressed. compadd is wrapped so that
# every match it really adds (after zsh's own prefix filtering) is also printed between
# markers; the test reads them back and compares.
set -u
. "$LL_SRCDIR/tests/integration/completion-common.bash"
trap "${COMP_KEEP:+:} comp_cleanup" EXIT
command -v zsh >/dev/null || skip "zsh is not installed"
zsh -fc 'zmodload zsh/zpty' 2>/dev/null || skip "zsh has no zpty module"
cd "$comp_tmp/project" || exit 1
mkdir -p "$comp_tmp/fpath" "$comp_tmp/bin"
cp "$LL_SRCDIR/completions/_llmlaunch" "$comp_tmp/fpath/"
# `llmlaunch` on PATH is the binary under test (the completion runs `llmlaunch profiles list`).
ln -s "$LLMLAUNCH" "$comp_tmp/bin/llmlaunch"

cat >"$comp_tmp/setup.zsh" <<EOF
PS1='' PROMPT='' RPROMPT=''
unset zle_bracketed_paste
path=("$comp_tmp/bin" \$path)
fpath=("$comp_tmp/fpath" \$fpath)
autoload -Uz compinit && compinit -u -D
setopt no_auto_list no_auto_menu no_beep no_list_beep
compadd() {
	# Calls that only compute (-O/-A/-D) are not additions.
	if (( \${@[(I)-[OAD]]} )); then builtin compadd "\$@"; return; fi
	local -a __ll_hits
	builtin compadd -A __ll_hits "\$@"
	local h
	for h in \$__ll_hits; do print -rn -- "@@<\$h>@@"; done
	builtin compadd "\$@"
}
print -r -- READY\$((40 + 2))
EOF

# The driver: one zsh reads the cases on stdin ("LINE" per line, completed at its
# end) and prints the candidates of each as one line "CASE<TAB>cand cand ...".
cat >"$comp_tmp/driver.zsh" <<'EOF'
zmodload zsh/zpty
zpty -b z zsh -f -i
zpty -w z "source ${1:q}"
local line out part
while zpty -r -t z line 2>/dev/null || sleep 0.05; do
	[[ $line == *READY42* ]] && break
	(( SECONDS > 20 )) && { print -u2 "zsh did not start"; exit 1 }
done
local n=0
while IFS= read -r typed; do
	(( n++ ))
	zpty -w -n z "$typed"$'\t'
	# Then clear the line and print a marker that the echo of the command cannot contain.
	zpty -w z $'\C-e\C-u'"print -r -- DONE\$(( $n * 1000 + 7 ))"
	out=
	local deadline=$(( SECONDS + 20 ))
	while (( SECONDS < deadline )); do
		if zpty -r -t z line 2>/dev/null; then
			out+=$line
			[[ $line == *DONE$(( n * 1000 + 7 ))* ]] && break
		else
			sleep 0.02
		fi
	done
	# Keep what is between markers only.
	local -a hits=()
	for part in "${(@)${(@s:@@<:)out}[2,-1]}"; do
		[[ $part == *'>@@'* ]] && hits+=("${part%%>@@*}")
	done
	print -r -- "$typed"$'\t'"${(j: :)${(ou)hits}}"
done
zpty -d z
EOF

cases=(
	"llmlaunch "
	"llmlaunch pr"
	"llmlaunch env --format "
	"llmlaunch env --format=j"
	"llmlaunch run --bind "
	"llmlaunch logs --expect-net "
	"llmlaunch env --profile "
	"llmlaunch explain --profile dgx"
	"llmlaunch profiles "
	"llmlaunch profiles show "
	"llmlaunch probe --topology "
	"llmlaunch slurm "
	"llmlaunch slurm prolog --state-dir "
	"llmlaunch run "
	"llmlaunch train.py --"
	"llmlaunch --python /usr/bin/python3 --dry"
	"llmlaunch --bind c"
)
for c in "${comp_commands[@]}"; do cases+=("llmlaunch $c --"); done
printf '%s\n' "${cases[@]}" | timeout 120 zsh -f "$comp_tmp/driver.zsh" "$comp_tmp/setup.zsh" >"$comp_tmp/out.txt" 2>"$comp_tmp/err.txt" ||
	fail "the zsh driver failed: $(cat "$comp_tmp/err.txt")"

got() { # the candidates of one typed line, one per line
	awk -F'\t' -v want="$1" '$1 == want { print $2; found = 1 } END { if (!found) exit 1 }' "$comp_tmp/out.txt" | tr ' ' '\n' ||
		fail "no result for '$1': $(cat "$comp_tmp/out.txt")"
}

profiles=$(comp_profiles)
assert_set "first word" "$(got "llmlaunch ")" "$(printf '%s\n' check env explain logs probe profiles run slurm train.py subdir)"
assert_set "pr" "$(got "llmlaunch pr")" "$(printf '%s\n' probe profiles)"
assert_set "env --format" "$(got "llmlaunch env --format ")" "$(printf '%s\n' sh fish dotenv json slurm)"
assert_set "env --format=j" "$(got "llmlaunch env --format=j")" json
assert_set "run --bind" "$(got "llmlaunch run --bind ")" "$(printf '%s\n' numa core none)"
assert_set "logs --expect-net" "$(got "llmlaunch logs --expect-net ")" "$(printf '%s\n' ib roce socket any)"
assert_set "--profile" "$(got "llmlaunch env --profile ")" "$(printf '%s\nsite.yaml\nsubdir\n' "$profiles")"
assert_set "--profile dgx" "$(got "llmlaunch explain --profile dgx")" dgx-h100
assert_set "profiles" "$(got "llmlaunch profiles ")" "$(printf '%s\n' list show validate)"
assert_set "profiles show" "$(got "llmlaunch profiles show ")" "$(printf '%s\nsite.yaml\nsubdir\n' "$profiles")"
assert_set "--topology" "$(got "llmlaunch probe --topology ")" "$(printf '%s\n' node.xml subdir)"
assert_set "slurm" "$(got "llmlaunch slurm ")" "$(printf '%s\n' prolog task-prolog)"
assert_set "slurm prolog --state-dir" "$(got "llmlaunch slurm prolog --state-dir ")" subdir
assert_set "run SCRIPT" "$(got "llmlaunch run ")" "$(printf '%s\n' train.py subdir)"
assert_set "after SCRIPT" "$(got "llmlaunch train.py --")" ""
assert_set "option value is not SCRIPT" "$(got "llmlaunch --python /usr/bin/python3 --dry")" --dry-run
assert_set "--bind c (implicit run)" "$(got "llmlaunch --bind c")" core
for c in "${comp_commands[@]}"; do
	g=$(got "llmlaunch $c --")
	# shellcheck disable=SC2086
	assert_covers "$c --" "$g" "$(comp_help_options $c)"
	assert_covers "$c -- (offered but not in --help)" "$(comp_help_words $c; echo --help)" "$g"
done
echo "ok: zsh completion"
