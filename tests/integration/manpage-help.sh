#!/usr/bin/env bash
# docs/llmlaunch.1 agrees with the binary: every command `llmlaunch --help` lists has
# its section, every long option a command's --help prints (outside its examples) is in
# the page, every option the page names is one llmlaunch has (or a named foreign one),
# and groff formats the page without a warning.
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
: "${LLMLAUNCH:?}" "${LL_SRCDIR:?}"
page=$LL_SRCDIR/docs/llmlaunch.1
[ -r "$page" ] || fail "no man page at $page"

# The page as text: roff's \- is a hyphen; font escapes go.
text=$(sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\(em/--/g' "$page")

# Long options of a help text, leaving out its Examples section(s).
help_options() {
	awk '/^Examples?:$/ { ex = 1; next } /^$/ { ex = 0 } !ex' | grep -oE -- '--[a-z][-a-z_]*' | sort -u
}

commands=$("$LLMLAUNCH" --help | awk '/^Commands:/ { c = 1; next } c && /^  [a-z]/ { print $1 } c && /^$/ { c = 0 }')
[ "$(echo "$commands" | wc -l)" -ge 7 ] || fail "llmlaunch --help lists too few commands: $commands"
all_help=$("$LLMLAUNCH" --help | help_options)
for c in $commands; do
	grep -q "^\.SS \"llmlaunch $c[ \"]" "$page" || fail "no section for command '$c'"
done
# A command with subcommands is documented per subcommand.
for c in $commands "slurm prolog" "slurm task-prolog" "profiles list" "profiles show" "profiles validate"; do
	case $c in slurm | profiles) continue ;; esac
	# shellcheck disable=SC2086
	h=$("$LLMLAUNCH" $c --help) || fail "'llmlaunch $c --help' failed"
	for o in $(echo "$h" | help_options); do
		grep -qE -- "(^|[^-a-z_])$o([^-a-z_]|$)" <<<"$text" || fail "'llmlaunch $c --help' prints $o, the man page lacks it"
	done
	all_help=$(printf '%s\n%s\n' "$all_help" "$(echo "$h" | help_options)")
done
for s in "slurm prolog" "slurm task-prolog"; do
	grep -q "^\.SS \"llmlaunch ${s/-/\\\\-}" "$page" || fail "no section for '$s'"
done

# The reverse: the page names no option llmlaunch does not have. Foreign ones it shows
# in examples (srun's, torchrun's own spelling) are listed here.
foreign=$(printf '%s\n' --mpi --ntasks-per-node --nproc_per_node)
# --version is not in the top-level help but is an option all the same.
"$LLMLAUNCH" --version | grep -q '^llmlaunch [0-9]' || fail "llmlaunch --version does not work"
all_help=$(printf '%s\n--version\n' "$all_help")
for o in $(grep -oE -- '--[a-z][-a-z_]*' <<<"$text" | sort -u); do
	grep -qxF -- "$o" <<<"$(printf '%s\n%s\n' "$all_help" "$foreign")" ||
		fail "the man page names $o, which no --help prints"
done

if command -v groff >/dev/null; then
	warn=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
	[ -z "$warn" ] || fail "groff warns: $warn"
fi
echo "ok: $(echo "$commands" | wc -l) commands, $(echo "$all_help" | sort -u | wc -l) options"
