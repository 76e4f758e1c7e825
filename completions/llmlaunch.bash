# bash completion for llmlaunch                                -*- shell-script -*-
# Installed as /usr/share/bash-completion/completions/llmlaunch (loaded on demand by
# bash-completion). Subcommands, their options, option values, profile names (from
# `llmlaunch profiles list`), Python scripts for SCRIPT and XML files for --topology.
# tests/integration/completion-bash.sh checks it against every command's --help.

_llmlaunch_common='--topology --fsroot --profile --cacert --allow-http --allow-loader-vars --no-cache --help'
_llmlaunch_plan='--set --bind --nproc-per-node'
_llmlaunch_agree='--agree-timeout --strict'
_llmlaunch_check='--on-slow --exclude-file --drain --check-timeout'
_llmlaunch_torchrun='--nnodes --node-rank --master-addr --master-port --rdzv-backend --rdzv-endpoint
	--rdzv-id --rdzv-conf --standalone --max-restarts --monitor-interval --start-method --role
	--no-python --run-path --log-dir --redirects --tee'

# Options of one command (second argument: the slurm or profiles subcommand).
_llmlaunch_options() {
	case $1 in
	probe) echo "--json --save $_llmlaunch_common" ;;
	env) echo "--format $_llmlaunch_plan $_llmlaunch_common $_llmlaunch_agree" ;;
	explain) echo "--json $_llmlaunch_plan $_llmlaunch_common $_llmlaunch_agree" ;;
	check) echo "--json --python $_llmlaunch_check $_llmlaunch_plan $_llmlaunch_common $_llmlaunch_agree" ;;
	run) echo "--python --module --dry-run --json --exec --grace --on-fallback --hang-timeout --on-hang --preflight $_llmlaunch_check" \
		"$_llmlaunch_plan $_llmlaunch_common $_llmlaunch_agree $_llmlaunch_torchrun" ;;
	logs) echo "--json --expect-net --follow --on-fallback --timeout --help" ;;
	profiles) echo "--json $_llmlaunch_common" ;;
	slurm)
		case $2 in
		prolog) echo "--state-dir --timeout --no-drain-reason --scontrol $_llmlaunch_common" ;;
		task-prolog) echo "--state-dir $_llmlaunch_plan $_llmlaunch_common" ;;
		*) echo "--help" ;;
		esac
		;;
	esac
}

# Names of the installed profiles: the first column of `llmlaunch profiles list`.
_llmlaunch_profile_names() {
	"$1" profiles list 2>/dev/null | awk 'NR > 1 && $1 != "" { print $1 }'
}

# Options that take a value (the next word, or after '='); underscores as dashes.
_llmlaunch_takes_value() {
	case ${1//_/-} in
	--format | --bind | --expect-net | --on-fallback | --hang-timeout | --on-hang | --rdzv-backend | --start-method | --profile | --topology | \
		--save | --cacert | --fsroot | --follow | --state-dir | --log-dir | --python | --scontrol | --set | \
		--nproc-per-node | --agree-timeout | --grace | --timeout | --module | --nnodes | --node-rank | \
		--master-addr | --master-port | --rdzv-endpoint | --rdzv-id | --rdzv-conf | --max-restarts | \
		--monitor-interval | --role | --redirects | --tee | --on-slow | --exclude-file | --check-timeout | -m | -r | -t)
		return 0 ;;
	esac
	return 1
}

# Complete the value of option $1 (current word $2, binary $3) into COMPREPLY.
_llmlaunch_value() {
	local opt=${1//_/-} cur=$2 exe=$3
	COMPREPLY=()
	case $opt in
	--format) mapfile -t COMPREPLY < <(compgen -W 'sh fish dotenv json slurm' -- "$cur") ;;
	--bind) mapfile -t COMPREPLY < <(compgen -W 'numa core none' -- "$cur") ;;
	--expect-net) mapfile -t COMPREPLY < <(compgen -W 'ib roce socket any' -- "$cur") ;;
	--on-fallback) mapfile -t COMPREPLY < <(compgen -W 'warn stop' -- "$cur") ;;
	--on-hang) mapfile -t COMPREPLY < <(compgen -W 'stop dump' -- "$cur") ;;
	--on-slow) mapfile -t COMPREPLY < <(compgen -W 'warn stop exclude' -- "$cur") ;;
	--rdzv-backend) mapfile -t COMPREPLY < <(compgen -W 'c10d etcd etcd-v2 static' -- "$cur") ;;
	--start-method) mapfile -t COMPREPLY < <(compgen -W 'spawn fork forkserver' -- "$cur") ;;
	--profile)
		mapfile -t COMPREPLY < <(compgen -W "$(_llmlaunch_profile_names "$exe")" -- "$cur")
		_llmlaunch_files '@(yaml|yml)' "$cur" add
		;;
	--topology | --save) _llmlaunch_files xml "$cur" ;;
	--cacert) _llmlaunch_files '@(pem|crt)' "$cur" ;;
	--exclude-file) _llmlaunch_files '*' "$cur" ;;
	--fsroot | --follow | --state-dir | --log-dir) _llmlaunch_dirs "$cur" ;;
	--python | --scontrol)
		mapfile -t COMPREPLY < <(compgen -c -- "$cur")
		[[ $cur == */* ]] && _llmlaunch_files '*' "$cur"
		;;
	esac
}

# Files matching extension pattern $1 (extglob; '*': any file) and directories, into
# COMPREPLY (appended with "add").
_llmlaunch_files() {
	local IFS=$'\n' f
	[ "${3:-}" = add ] || COMPREPLY=()
	for f in $(compgen -f -- "$2"); do
		if [ -d "$f" ] || [ "$1" = '*' ] || [[ $f == *.$1 ]]; then
			COMPREPLY+=("$f")
		fi
	done
	compopt -o filenames 2>/dev/null
}

_llmlaunch_dirs() {
	mapfile -t COMPREPLY < <(compgen -d -- "$1")
	compopt -o filenames 2>/dev/null
}

_llmlaunch() {
	local cur prev words cword split
	if declare -F _init_completion >/dev/null; then
		# -s: "--format=js" completes "js" as the value of --format.
		_init_completion -s || return
	else
		# Plain bash splits "--format=js" into "--format" "=" "js".
		words=("${COMP_WORDS[@]}") cword=$COMP_CWORD
		cur=${words[cword]} prev=${words[cword - 1]}
		[ "$cur" = = ] && cur="" prev=${words[cword - 1]}
		[ "$prev" = = ] && prev=${words[cword - 2]}
	fi
	local shopt_saved
	shopt_saved=$(shopt -p extglob)
	shopt -s extglob
	local exe=${words[0]} cmd="" sub="" script_seen=0 i w
	COMPREPLY=()

	# Find the command (a first word that is no command is the SCRIPT of `run`), the
	# subcommand of slurm and profiles, and whether run's SCRIPT (or -m MODULE) is given.
	for ((i = 1; i < cword; i++)); do
		w=${words[i]} p=${words[i - 1]}
		[ "$w" = = ] && continue
		[ "$p" = = ] && p=${words[i - 2]}
		if [ -z "$cmd" ]; then
			case $w in
			check | env | explain | logs | probe | profiles | run | slurm) cmd=$w ;;
			-*) cmd=run ;;
			*) cmd=run script_seen=1 ;;
			esac
			continue
		fi
		[[ $w == -* ]] && continue
		if [ $i -gt 1 ] && [[ $p == -* ]] && [[ $p != *=* ]] && _llmlaunch_takes_value "$p"; then
			# The value of an option; after -m MODULE come the module's arguments.
			[ "$cmd" = run ] && { [ "$p" = -m ] || [ "$p" = --module ]; } && script_seen=1
			continue
		fi
		case $cmd in
		run) script_seen=1 ;;
		slurm | profiles) [ -z "$sub" ] && sub=$w ;;
		esac
	done
	COMPREPLY=()

	# After SCRIPT everything belongs to the script: files.
	if [ $script_seen = 1 ]; then
		eval "$shopt_saved"
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		compopt -o filenames 2>/dev/null
		return 0
	fi
	if [[ $prev == -* ]] && [[ $prev != *=* ]] && [ "$cword" -gt 1 ] && _llmlaunch_takes_value "$prev"; then
		_llmlaunch_value "$prev" "$cur" "$exe"
		eval "$shopt_saved"
		return 0
	fi

	if [ -z "$cmd" ]; then
		if [[ $cur == -* ]]; then
			mapfile -t COMPREPLY < <(compgen -W "--help --version $(_llmlaunch_options run)" -- "$cur")
		else
			mapfile -t COMPREPLY < <(compgen -W 'check env explain logs probe profiles run slurm' -- "$cur")
			_llmlaunch_files py "$cur" add
		fi
	elif [ "$cmd" = slurm ] && [ -z "$sub" ]; then
		mapfile -t COMPREPLY < <(compgen -W 'prolog task-prolog --help' -- "$cur")
	elif [ "$cmd" = profiles ] && [ -z "$sub" ] && [[ $cur != -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W 'list show validate --help' -- "$cur")
	elif [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$(_llmlaunch_options "$cmd" "$sub")" -- "$cur")
	elif [ "$cmd" = profiles ] && [ "$sub" = show ]; then
		mapfile -t COMPREPLY < <(compgen -W "$(_llmlaunch_profile_names "$exe")" -- "$cur")
		_llmlaunch_files '@(yaml|yml)' "$cur" add
	elif [ "$cmd" = profiles ] && [ "$sub" = validate ]; then
		_llmlaunch_files '@(yaml|yml)' "$cur"
	elif [ "$cmd" = run ]; then
		_llmlaunch_files py "$cur"
	elif [ "$cmd" = logs ]; then
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		compopt -o filenames 2>/dev/null
	fi
	eval "$shopt_saved"
	return 0
}
complete -F _llmlaunch llmlaunch
