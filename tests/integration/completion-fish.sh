#!/usr/bin/env bash
# completions/llmlaunch.fish driven for real: fish loads it and `complete -C LINE`
# prints the candidates fish itself would offer; they are compared with what each
# command's --help defines, the option values, profile names and files by kind.
set -u
. "$LL_SRCDIR/tests/integration/completion-common.bash"
trap comp_cleanup EXIT
command -v fish >/dev/null || skip "fish is not installed"
cd "$comp_tmp/project" || exit 1
mkdir -p "$comp_tmp/bin"
# `llmlaunch` on PATH is the binary under test (the completion runs `llmlaunch profiles list`).
ln -s "$LLMLAUNCH" "$comp_tmp/bin/llmlaunch"
export PATH="$comp_tmp/bin:$PATH"

got() { # the candidates for LINE, one per line (without their descriptions)
	HOME=$comp_tmp XDG_CONFIG_HOME=$comp_tmp/config timeout 60 fish --no-config -c \
		'source $argv[1]; complete -C $argv[2]' "$LL_SRCDIR/completions/llmlaunch.fish" "$1" | cut -f1 ||
		fail "fish failed on '$1'"
}

profiles=$(comp_profiles)
assert_set "first word" "$(got "llmlaunch ")" "$(printf '%s\n' check env explain logs probe profiles run slurm train.py subdir/)"
assert_set "pr" "$(got "llmlaunch pr")" "$(printf '%s\n' probe profiles)"
assert_set "env --format" "$(got "llmlaunch env --format ")" "$(printf '%s\n' sh fish dotenv json slurm)"
assert_set "env --format=j" "$(got "llmlaunch env --format=j")" --format=json
assert_set "run --bind" "$(got "llmlaunch run --bind ")" "$(printf '%s\n' numa core none)"
assert_set "--bind c (implicit run)" "$(got "llmlaunch --bind c")" core
assert_set "logs --expect-net" "$(got "llmlaunch logs --expect-net ")" "$(printf '%s\n' ib roce socket any)"
assert_set "--profile" "$(got "llmlaunch env --profile ")" "$(printf '%s\nsite.yaml\nsubdir/\n' "$profiles")"
assert_set "--profile dgx" "$(got "llmlaunch explain --profile dgx")" dgx-h100
assert_set "profiles" "$(got "llmlaunch profiles ")" "$(printf '%s\n' list show validate)"
assert_set "profiles show" "$(got "llmlaunch profiles show ")" "$(printf '%s\nsite.yaml\nsubdir/\n' "$profiles")"
assert_set "profiles validate" "$(got "llmlaunch profiles validate ")" "$(printf '%s\n' site.yaml subdir/)"
assert_set "--topology" "$(got "llmlaunch probe --topology ")" "$(printf '%s\n' node.xml subdir/)"
assert_set "slurm" "$(got "llmlaunch slurm ")" "$(printf '%s\n' prolog task-prolog)"
assert_set "slurm prolog --state-dir" "$(got "llmlaunch slurm prolog --state-dir ")" subdir/
assert_set "run SCRIPT" "$(got "llmlaunch run ")" "$(printf '%s\n' train.py subdir/)"
assert_set "after SCRIPT" "$(got "llmlaunch train.py --")" ""
assert_set "after run SCRIPT" "$(got "llmlaunch run --bind core train.py ")" "$(printf '%s\n' node.xml notes.txt site.yaml subdir/ train.py)"
assert_set "after -m" "$(got "llmlaunch -m mypkg.train --")" ""
assert_set "option value is not SCRIPT" "$(got "llmlaunch --python /usr/bin/python3 --dry")" --dry-run
for c in "${comp_commands[@]}"; do
	g=$(got "llmlaunch $c --")
	# shellcheck disable=SC2086
	assert_covers "$c --" "$g" "$(comp_help_options $c)"
	assert_covers "$c -- (offered but not in --help)" "$(comp_help_words $c; echo --help)" "$g"
done
echo "ok: fish completion"
