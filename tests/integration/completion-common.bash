# shellcheck shell=bash
# Shared by tests/integration/completion-*.sh: skip/fail, a scratch directory with
# files of each kind the completions filter on, and the option lists of --help.

skip() { echo "skipped: $*" >&2; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
: "${LLMLAUNCH:?}" "${LL_SRCDIR:?}"
unset LLMLAUNCH_PROFILE_PATH

comp_tmp=$(mktemp -d /tmp/ll-completion.XXXXXX)
comp_cleanup() { rm -rf "$comp_tmp"; }
mkdir -p "$comp_tmp/project/subdir"
touch "$comp_tmp/project/train.py" "$comp_tmp/project/node.xml" "$comp_tmp/project/notes.txt" "$comp_tmp/project/site.yaml"

# Installed profile names, one line each, sorted.
comp_profiles() {
	"$LLMLAUNCH" profiles list 2>/dev/null | awk 'NR > 1 && $1 != "" { print $1 }' | sort
}

# The options a command's --help defines: long options at the start of an option
# line ("  --json  ...", "  -h, --help  ..."), and for run the torchrun options it
# passes through (the paragraph that lists them). $@: the command words.
comp_help_options() {
	"$LLMLAUNCH" "$@" --help | awk '
		/^  +(-[a-zA-Z], )?--[a-z]/ { for (i = 1; i <= NF; i++) if ($i ~ /^--[a-z]/) { sub(/,$/, "", $i); print $i; break } }
		/pass through/ { pass = 1 }
		pass && /^$/ { pass = 0 }
		pass { for (i = 1; i <= NF; i++) if ($i ~ /--[a-z]/) { n = split($i, a, "/"); for (k = 1; k <= n; k++) if (a[k] ~ /^--/) print a[k] } }
	' | sed 's/[,.:]$//' | sort -u
}

# Every word of the whole --help text that looks like a long option.
comp_help_words() {
	"$LLMLAUNCH" "$@" --help | grep -oE -- '--[a-z][-a-z_]*' | sort -u
}

# assert_set NAME GOT WANT: two newline-separated lists hold the same items.
assert_set() {
	local name=$1 got want
	got=$(printf '%s\n' "$2" | sed '/^$/d' | sort -u)
	want=$(printf '%s\n' "$3" | sed '/^$/d' | sort -u)
	[ "$got" = "$want" ] || fail "$name: got [$(echo $got)], expected [$(echo $want)]"
}

# assert_covers NAME GOT WANT: every item of WANT is in GOT.
assert_covers() {
	local name=$1 missing
	missing=$(comm -13 <(printf '%s\n' "$2" | sed '/^$/d' | sort -u) <(printf '%s\n' "$3" | sed '/^$/d' | sort -u))
	[ -z "$missing" ] || fail "$name: missing [$(echo $missing)] in [$(echo $2)]"
}

# The commands, with the options each must offer (what its --help defines).
comp_commands=(probe env explain run logs "profiles list" "profiles show" "slurm prolog" "slurm task-prolog")
