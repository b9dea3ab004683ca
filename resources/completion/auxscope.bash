# SPDX-License-Identifier: GPL-3.0-or-later
# bash completion for auxscope: commands, options, option values, event names and PMU terms.
# Everything is read from the program itself, so completion never disagrees with it: options
# and their value lists from `auxscope help COMMAND`, events and tracepoints from `auxscope
# record --list-events`, PMU terms from /sys/bus/event_source/devices/PMU/format/.
# Installed as share/bash-completion/completions/auxscope.

# The options COMMAND's help names (--long, -x).
_auxscope_options() {
    "${_auxscope_bin:-auxscope}" help "$1" 2>/dev/null |
        grep -oE -- '(^|[][ ,(|])--?[A-Za-z][A-Za-z0-9:._-]*' | sed -E 's/^[][ ,(|]//' | sort -u
}

# The values COMMAND's help lists for OPTION as "OPTION a|b|c".
_auxscope_values() {
    "${_auxscope_bin:-auxscope}" help "$1" 2>/dev/null |
        grep -oE -- "$2[ =][A-Za-z0-9_.,-]+(\|[A-Za-z0-9_.,-]+)+" | head -n 1 | sed -E "s/^$2[ =]//" | tr '|' '\n'
}

# Events: symbolic names, tracepoints, and PMU/term= for the PMU being typed.
_auxscope_events() {
    local cur=$1
    if [[ $cur == */* ]]; then
        local pmu=${cur%%/*} done=${cur#*/} dir=/sys/bus/event_source/devices/${cur%%/*}/format
        local head=${done%[,]*} sep=","
        [[ $done == *,* ]] || { head=""; sep=""; }
        local t
        for t in "$dir"/*; do
            [[ -e $t ]] || continue
            printf '%s\n' "$pmu/${head}${sep}${t##*/}="
        done
        return
    fi
    "${_auxscope_bin:-auxscope}" record --list-events 2>/dev/null | awk '
        /^Symbolic events:/ { mode = "sym"; next }
        /^PMUs/ { mode = "pmu"; next }
        /^Tracepoints/ { mode = "tp"; next }
        mode == "sym" { for (i = 1; i <= NF; ++i) if ($i ~ /^[a-z-]+$/) print $i }
        mode == "pmu" { print $1 "/" }
        mode == "tp" { print $1 }'
}

_auxscope() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    local _auxscope_bin=${COMP_WORDS[0]}
    local commands="record info decode export report compare help"
    COMPREPLY=()
    if [[ $COMP_CWORD -eq 1 ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "--help --version" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$commands" -- "$cur") $(compgen -f -- "$cur"))
        fi
        return
    fi
    local cmd=${COMP_WORDS[1]}
    case $cmd in
        help) [[ $COMP_CWORD -eq 2 ]] && COMPREPLY=($(compgen -W "record info decode export report compare" -- "$cur"))
              return ;;
        record | info | decode | export | report | compare) ;;
        *) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    esac
    # After `record ... --`, or after the command it launches: the command's own words.
    local i
    for ((i = 2; i < COMP_CWORD; ++i)); do
        if [[ $cmd == record && ${COMP_WORDS[i]} == -- ]]; then
            COMPREPLY=($(compgen -c -- "$cur") $(compgen -f -- "$cur"))
            return
        fi
    done
    case $prev in
        -e | --event)
            compopt -o nospace 2>/dev/null
            COMPREPLY=($(compgen -W "$(_auxscope_events "$cur")" -- "$cur"))
            return ;;
        -o | --output | --replay | --jit-dump | --perf-map | --vmlinux | --kallsyms | --pt | --elf | --raw)
            COMPREPLY=($(compgen -f -- "$cur"))
            return ;;
        --symfs | --binary-dir | --debug-dir | --kcore)
            COMPREPLY=($(compgen -d -- "$cur"))
            return ;;
    esac
    if [[ $prev == --* ]]; then
        local values
        values=$(_auxscope_values "$cmd" "$prev")
        if [[ -n $values ]]; then
            COMPREPLY=($(compgen -W "$values" -- "$cur"))
            return
        fi
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_auxscope_options "$cmd")" -- "$cur"))
        return
    fi
    COMPREPLY=($(compgen -f -- "$cur"))
}
complete -F _auxscope auxscope
