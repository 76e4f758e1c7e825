#!/usr/bin/env bash
# completions/llmlaunch.bash driven for real: bash-completion loaded, the function
# called as readline would (COMP_WORDS, COMP_CWORD, COMP_LINE, COMP_POINT), and the
# candidates compared: subcommands, every option each --help defines (and none it
# does not mention), option values, profile names, files by kind.
set -u
. "$LL_SRCDIR/tests/integration/completion-common.bash"
trap comp_cleanup EXIT
bc=/usr/share/bash-completion/bash_completion
[ -r "$bc" ] || skip "bash-completion is not installed ($bc)"
# shellcheck source=/dev/null
. "$bc"
# shellcheck source=../../completions/llmlaunch.bash
. "$LL_SRCDIR/completions/llmlaunch.bash"
[ "$(complete -p llmlaunch 2>/dev/null)" = "complete -F _llmlaunch llmlaunch" ] || fail "llmlaunch is not registered"
cd "$comp_tmp/project" || exit 1

# comp WORD...: the candidates for the last word, one per line. LINE, when set, is the
# command line as typed (for "--format=j", which readline splits into 3 words).
comp() {
	COMP_WORDS=("$LLMLAUNCH" "$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE=${LINE:-"${COMP_WORDS[*]}"}
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	_llmlaunch "$LLMLAUNCH" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
	printf '%s\n' "${COMPREPLY[@]}"
}

profiles=$(comp_profiles)
[ "$(echo "$profiles" | wc -l)" -ge 8 ] || fail "profiles list gave too few names: $profiles"

assert_set "first word" "$(comp '')" "$(printf '%s\n' check env explain logs probe profiles run slurm train.py subdir)"
assert_set "pr" "$(comp pr)" "$(printf '%s\n' probe profiles)"
assert_set "env --format" "$(comp env --format '')" "$(printf '%s\n' sh fish dotenv json slurm)"
assert_set "env --format=j" "$(LINE="$LLMLAUNCH env --format=j" comp env --format = j)" json
assert_set "run --bind" "$(comp run --bind '')" "$(printf '%s\n' numa core none)"
assert_set "--bind c (implicit run)" "$(comp --bind c)" core
assert_set "logs --expect-net" "$(comp logs --expect-net '')" "$(printf '%s\n' ib roce socket any)"
assert_set "logs --on-fallback" "$(comp logs --follow subdir --on-fallback '')" "$(printf '%s\n' warn stop)"
assert_set "--profile" "$(comp env --profile '')" "$(printf '%s\nsite.yaml\nsubdir\n' "$profiles")"
assert_set "--profile d" "$(comp explain --profile dgx)" dgx-h100
assert_set "profiles show" "$(comp profiles show '')" "$(printf '%s\nsite.yaml\nsubdir\n' "$profiles")"
assert_set "profiles" "$(comp profiles '')" "$(printf '%s\n' list show validate --help)"
assert_set "profiles validate" "$(comp profiles validate '')" "$(printf '%s\n' site.yaml subdir)"
assert_set "--topology" "$(comp probe --topology '')" "$(printf '%s\n' node.xml subdir)"
assert_set "--save" "$(comp probe --save n)" node.xml
assert_set "--fsroot" "$(comp probe --fsroot '')" subdir
assert_set "slurm" "$(comp slurm '')" "$(printf '%s\n' prolog task-prolog --help)"
assert_set "slurm prolog --state-dir" "$(comp slurm prolog --state-dir '')" subdir
assert_set "run SCRIPT" "$(comp run '')" "$(printf '%s\n' train.py subdir)"
# After SCRIPT (or -m MODULE) the words are the script's: files, never our options.
assert_set "after SCRIPT" "$(comp train.py --st)" ""
assert_set "after run SCRIPT" "$(comp run --bind core train.py '')" "$(printf '%s\n' node.xml notes.txt site.yaml subdir train.py)"
assert_set "after -m" "$(comp -m mypkg.train --l)" ""
assert_set "option value is not SCRIPT" "$(comp --python /usr/bin/python3 --dry)" --dry-run

# Options: every one --help defines is offered, and nothing --help does not mention.
for c in "${comp_commands[@]}"; do
	# shellcheck disable=SC2086
	got=$(comp $c --)
	assert_covers "$c --" "$got" "$(comp_help_options $c)"
	assert_covers "$c -- (offered but not in --help)" "$(comp_help_words $c; echo --help)" "$got"
done
assert_covers "top-level --" "$(comp --)" "$(printf '%s\n' --help --version --dry-run --nproc-per-node)"
# Without bash-completion (plain bash splits "--format=j" into three words) it still works.
plain=$(env -i PATH="$PATH" HOME="$comp_tmp" LLMLAUNCH="$LLMLAUNCH" bash --norc --noprofile -c '
	. "$1" && cd "$2" || exit 1
	declare -F _init_completion >/dev/null && { echo "bash-completion is loaded"; exit 1; }
	c() {
		COMP_WORDS=("$LLMLAUNCH" "$@") COMP_CWORD=$#
		COMPREPLY=()
		_llmlaunch
		printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "
		echo
	}
	c env --format ""
	c env --format = j
	c run --bind c
	c ""
	c train.py --st' _ "$LL_SRCDIR/completions/llmlaunch.bash" "$comp_tmp/project")
want=$(printf '%s\n' "dotenv fish json sh slurm " "json " "core " "check env explain logs probe profiles run slurm subdir train.py " " ")
[ "$plain" = "$want" ] || fail "without bash-completion: got [$plain], expected [$want]"
echo "ok: bash completion"
