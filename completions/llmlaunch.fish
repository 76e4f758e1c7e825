# fish completion for llmlaunch. Installed in /usr/share/fish/vendor_completions.d/.
# Subcommands, their options, option values, profile names (from `llmlaunch profiles
# list`), Python scripts for SCRIPT and XML files for --topology.
# tests/integration/completion-fish.sh checks it against every command's --help.

# Options that take a value in the next word (for telling values from SCRIPT).
set -g __llmlaunch_value_opts --format --bind --expect-net --on-fallback --hang-timeout --on-hang --rdzv-backend --start-method \
    --profile --topology --save --cacert --fsroot --follow --state-dir --log-dir --python --scontrol --set \
    --nproc-per-node --nproc_per_node --agree-timeout --grace --timeout --module --nnodes --node-rank \
    --master-addr --master-port --rdzv-endpoint --rdzv-id --rdzv-conf --max-restarts --monitor-interval \
    --role --redirects --tee --on-slow --exclude-file --check-timeout -m -r -t

# Print "COMMAND SUB SCRIPT": the command (run when the first word is a SCRIPT or an
# option), the slurm/profiles subcommand or "-", and 1 when run's SCRIPT (or -m
# MODULE) is already on the line.
function __llmlaunch_state
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l cmd ""
    set -l sub -
    set -l script 0
    set -l prev ""
    for t in $tokens
        if test -z "$cmd"
            switch $t
                case check env explain logs probe profiles run slurm
                    set cmd $t
                case '-*'
                    set cmd run
                case '*'
                    set cmd run
                    set script 1
            end
        else if string match -q -- '-*' $t
            # an option
        else if contains -- $prev $__llmlaunch_value_opts
            contains -- $prev -m --module; and test $cmd = run; and set script 1
        else if test $cmd = run
            set script 1
        else if test $sub = -
            set sub $t
        end
        set prev $t
    end
    echo $cmd $sub $script
end

# True when the command is one of the arguments and run's SCRIPT is not given yet.
function __llmlaunch_is
    set -l s (string split ' ' (__llmlaunch_state))
    test "$s[3]" = 0; and contains -- $s[1] $argv
end

# True for `llmlaunch CMD SUB` with SUB one of the further arguments.
function __llmlaunch_sub
    set -l s (string split ' ' (__llmlaunch_state))
    test "$s[1]" = $argv[1]; and contains -- $s[2] $argv[2..-1]
end

function __llmlaunch_no_command
    set -l s (string split ' ' (__llmlaunch_state))
    test -z "$s[1]"
end

# Files ending in one of the arguments, and directories (fish's own
# __fish_complete_suffix lists every file, the matching ones first).
function __llmlaunch_files
    set -l tok (commandline -ct)
    for f in $tok*
        if test -d $f
            echo $f/
        else
            for suffix in $argv
                string match -q -- "*$suffix" $f; and echo $f
            end
        end
    end
end

function __llmlaunch_profiles
    set -l exe (commandline -opc)[1]
    type -q -- $exe; and $exe profiles list 2>/dev/null | awk 'NR > 1 && $1 != "" { print $1 "\tinstalled profile" }'
    __llmlaunch_files .yaml .yml
end

complete -c llmlaunch -f

# Commands, or a training script (then it is `run`).
complete -c llmlaunch -n __llmlaunch_no_command -a check -d 'preflight: name slow or broken nodes'
complete -c llmlaunch -n __llmlaunch_no_command -a env -d "print this node's NCCL/torchrun environment"
complete -c llmlaunch -n __llmlaunch_no_command -a explain -d 'show every planned value with its source and reason'
complete -c llmlaunch -n __llmlaunch_no_command -a logs -d 'read NCCL logs and say which transport really ran'
complete -c llmlaunch -n __llmlaunch_no_command -a probe -d 'detect GPUs, NVLink, RDMA ports, interfaces, PCIe distances'
complete -c llmlaunch -n __llmlaunch_no_command -a profiles -d 'list, show and validate profiles'
complete -c llmlaunch -n __llmlaunch_no_command -a run -d 'launch SCRIPT through torch.distributed.run'
complete -c llmlaunch -n __llmlaunch_no_command -a slurm -d 'Slurm integration: prolog and task-prolog'
complete -c llmlaunch -n __llmlaunch_no_command -a '(__llmlaunch_files .py)'
complete -c llmlaunch -n __llmlaunch_no_command -l version -d 'print the version'
complete -c llmlaunch -n '__llmlaunch_is run' -a '(__llmlaunch_files .py)'

# Options every fact-reading command shares; planning options.
for cond in '__llmlaunch_is check env explain probe run profiles' '__llmlaunch_sub slurm prolog task-prolog'
    complete -c llmlaunch -n $cond -l topology -x -a '(__llmlaunch_files .xml)' -d 'replay a snapshot (hwloc XML)'
    complete -c llmlaunch -n $cond -l fsroot -x -a '(__fish_complete_directories)' -d 'read /sys and /proc under DIR'
    complete -c llmlaunch -n $cond -l profile -x -a '(__llmlaunch_profiles)' -d 'apply a profile (name, file or URL)'
    complete -c llmlaunch -n $cond -l cacert -r -F -d 'trust this CA too for https:// profiles'
    complete -c llmlaunch -n $cond -l allow-http -d 'allow plain http:// profiles beyond loopback'
    complete -c llmlaunch -n $cond -l allow-loader-vars -d 'let profiles set LD_PRELOAD, PYTHONPATH ...'
    complete -c llmlaunch -n $cond -l no-cache -d 'probe in full, without the per-boot topology cache'
end
complete -c llmlaunch -n '__llmlaunch_is check env explain probe logs profiles slurm run' -s h -l help -d 'show this help'
for cond in '__llmlaunch_is check env explain run' '__llmlaunch_sub slurm task-prolog'
    complete -c llmlaunch -n $cond -l set -x -d 'set NAME=VALUE above everything else'
    complete -c llmlaunch -n $cond -l bind -x -a 'numa core none' -d "where each rank's CPUs come from"
    complete -c llmlaunch -n $cond -l nproc-per-node -x -d 'workers on this node'
end
complete -c llmlaunch -n '__llmlaunch_is check env explain run' -l agree-timeout -x -d 'wait at most S seconds for every node'
complete -c llmlaunch -n '__llmlaunch_is check env explain run' -l strict -d 'soft differences between nodes are errors'

# probe, env, explain
complete -c llmlaunch -n '__llmlaunch_is probe explain' -l json -d 'one JSON object instead of text'
complete -c llmlaunch -n '__llmlaunch_is probe' -l save -x -a '(__llmlaunch_files .xml)' -d 'write the annotated topology as hwloc XML'
complete -c llmlaunch -n '__llmlaunch_is env' -l format -x -a 'sh fish dotenv json slurm' -d 'output format'

# check, and the same options for run --preflight
complete -c llmlaunch -n '__llmlaunch_is check' -l json -d 'the report as one JSON object'
complete -c llmlaunch -n '__llmlaunch_is check' -l python -x -a '(__fish_complete_command)' -d 'interpreter for torchrun and the check'
complete -c llmlaunch -n '__llmlaunch_is run' -l preflight -d 'run the preflight check over the same world first'
complete -c llmlaunch -n '__llmlaunch_is check run' -l on-slow -x -a 'warn stop exclude' -d 'when the check names a slow or broken node'
complete -c llmlaunch -n '__llmlaunch_is check run' -l exclude-file -r -F -d 'where --on-slow exclude writes the nodes'
complete -c llmlaunch -n '__llmlaunch_is check run' -l drain -d 'with --on-slow exclude: also drain the nodes'
complete -c llmlaunch -n '__llmlaunch_is check run' -l check-timeout -x -d 'stop the check after S seconds'

# run (also `llmlaunch [OPTIONS] SCRIPT`) and torchrun's own options.
complete -c llmlaunch -n '__llmlaunch_is run' -l python -x -a '(__fish_complete_command)' -d 'interpreter for torchrun and the workers'
complete -c llmlaunch -n '__llmlaunch_is run' -s m -l module -x -d 'run a module as python -m does'
complete -c llmlaunch -n '__llmlaunch_is run' -l dry-run -d 'print the environment and command; run nothing'
complete -c llmlaunch -n '__llmlaunch_is run' -l json -d 'with --dry-run: one JSON object'
complete -c llmlaunch -n '__llmlaunch_is run' -l exec -d 'replace llmlaunch with torchrun'
complete -c llmlaunch -n '__llmlaunch_is run' -l grace -x -d 'SIGKILL the job this long after a stop signal'
complete -c llmlaunch -n '__llmlaunch_is run' -l on-fallback -x -a 'warn stop' -d 'when NCCL falls back to sockets: warn or stop'
complete -c llmlaunch -n '__llmlaunch_is run' -l hang-timeout -x -d "take every rank's stack when none printed for this long"
complete -c llmlaunch -n '__llmlaunch_is run' -l on-hang -x -a 'stop dump' -d 'after a hang: stop the job or let it run'
complete -c llmlaunch -n '__llmlaunch_is run' -l nnodes -x -d 'torchrun: number of nodes'
complete -c llmlaunch -n '__llmlaunch_is run' -l node-rank -x -d "torchrun: this node's rank"
complete -c llmlaunch -n '__llmlaunch_is run' -l master-addr -x -a '(__fish_print_hostnames)' -d 'torchrun: master address'
complete -c llmlaunch -n '__llmlaunch_is run' -l master-port -x -d 'torchrun: master port'
complete -c llmlaunch -n '__llmlaunch_is run' -l rdzv-backend -x -a 'c10d etcd etcd-v2 static' -d 'torchrun: rendezvous backend'
complete -c llmlaunch -n '__llmlaunch_is run' -l rdzv-endpoint -x -d 'torchrun: rendezvous endpoint host:port'
complete -c llmlaunch -n '__llmlaunch_is run' -l rdzv-id -x -d 'torchrun: rendezvous id'
complete -c llmlaunch -n '__llmlaunch_is run' -l rdzv-conf -x -d 'torchrun: rendezvous configuration'
complete -c llmlaunch -n '__llmlaunch_is run' -l standalone -d 'torchrun: single-node rendezvous'
complete -c llmlaunch -n '__llmlaunch_is run' -l max-restarts -x -d 'torchrun: restarts before failing'
complete -c llmlaunch -n '__llmlaunch_is run' -l monitor-interval -x -d 'torchrun: seconds between worker checks'
complete -c llmlaunch -n '__llmlaunch_is run' -l start-method -x -a 'spawn fork forkserver' -d 'torchrun: how workers start'
complete -c llmlaunch -n '__llmlaunch_is run' -l role -x -d 'torchrun: role of the workers'
complete -c llmlaunch -n '__llmlaunch_is run' -l no-python -d 'torchrun: SCRIPT is an executable'
complete -c llmlaunch -n '__llmlaunch_is run' -l run-path -d 'torchrun: run SCRIPT with runpy.run_path'
complete -c llmlaunch -n '__llmlaunch_is run' -l log-dir -x -a '(__fish_complete_directories)' -d "torchrun: directory for the workers' logs"
complete -c llmlaunch -n '__llmlaunch_is run' -s r -l redirects -x -d 'torchrun: redirect worker output to files'
complete -c llmlaunch -n '__llmlaunch_is run' -s t -l tee -x -d 'torchrun: tee worker output to files'
# After SCRIPT the words are the script's own: files.
complete -c llmlaunch -n 'not __llmlaunch_no_command; and not __llmlaunch_is env explain logs probe profiles run slurm' -F

# logs
complete -c llmlaunch -n '__llmlaunch_is logs' -F -d 'NCCL log file or directory'
complete -c llmlaunch -n '__llmlaunch_is logs' -l json -d 'print one JSON object'
complete -c llmlaunch -n '__llmlaunch_is logs' -l expect-net -x -a 'ib roce socket any' -d 'the network the job should use'
complete -c llmlaunch -n '__llmlaunch_is logs' -l follow -x -a '(__fish_complete_directories)' -d 'watch DIR while a job writes into it'
complete -c llmlaunch -n '__llmlaunch_is logs' -l on-fallback -x -a 'warn stop' -d 'with --follow: warn or stop at a fallback'
complete -c llmlaunch -n '__llmlaunch_is logs' -l timeout -x -d 'with --follow: stop after S seconds'

# profiles
complete -c llmlaunch -n '__llmlaunch_sub profiles -' -a list -d 'the installed profiles and whether each applies'
complete -c llmlaunch -n '__llmlaunch_sub profiles -' -a show -d 'one profile merged, or every layer that applies'
complete -c llmlaunch -n '__llmlaunch_sub profiles -' -a validate -d 'check profile files'
complete -c llmlaunch -n '__llmlaunch_is profiles' -l json -d 'machine-readable output'
complete -c llmlaunch -n '__llmlaunch_sub profiles show' -a '(__llmlaunch_profiles)'
complete -c llmlaunch -n '__llmlaunch_sub profiles validate' -a '(__llmlaunch_files .yaml .yml)'

# slurm
complete -c llmlaunch -n '__llmlaunch_sub slurm -' -a prolog -d 'slurm.conf Prolog=: probe, save, check expectations'
complete -c llmlaunch -n '__llmlaunch_sub slurm -' -a task-prolog -d 'slurm.conf TaskProlog=: the NCCL variables for the task'
complete -c llmlaunch -n '__llmlaunch_sub slurm prolog task-prolog' -l state-dir -x -a '(__fish_complete_directories)' -d 'the snapshot directory'
complete -c llmlaunch -n '__llmlaunch_sub slurm prolog' -l timeout -x -d 'give the probe at most S seconds'
complete -c llmlaunch -n '__llmlaunch_sub slurm prolog' -l no-drain-reason -d 'do not run scontrol update on a fault'
complete -c llmlaunch -n '__llmlaunch_sub slurm prolog' -l scontrol -r -F -d 'scontrol to run'
