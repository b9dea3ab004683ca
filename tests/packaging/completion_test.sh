#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The bash completion (resources/completion/auxscope.bash) against the built program:
# commands, options and their value lists read from its help, events from
# --list-events, PMU terms from sysfs. Fails on the first completion that differs.
# usage: completion_test.sh COMPLETION_SCRIPT AUXSCOPE
. "$1"
A=$2
empty=$(mktemp -d) || exit 1  # an empty folder: file names do not mix in
trap 'rm -rf "$empty"' EXIT
cd "$empty" || exit 1
fail=0
expect() { # "expected words" word...
    local want=$1
    shift
    COMP_WORDS=("$A" "$@")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMPREPLY=()
    _auxscope
    local got
    got=$(printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ')
    if [[ "$got" == "$want" ]]; then
        echo "ok   auxscope $*: $got"
    else
        echo "FAIL auxscope $*: got '$got', want '$want'"
        fail=1
    fi
}
expect "record report " re
expect "--call-graph " record --call
expect "insn packets ranges records spans summary " decode f.data --format ""
expect "auto off-cpu samples trace " report x --source ""
expect "cpu-clock " record -e cpu-c
expect "software/ " record -e softw
expect "decode " help de
expect "compare " com
expect "compare " help com
expect "--by-symbol " compare a.data b.data --by-s
expect "none per-call total " compare a.data b.data --normalize ""
expect "csv json text " report --diff a.data b.data --format ""
# A tracepoint and a PMU's terms where this machine has them.
if [[ -d /sys/kernel/tracing/events/sched/sched_switch || -d /sys/kernel/debug/tracing/events/sched/sched_switch ]]; then
    expect "sched:sched_switch " record -e sched:sched_swi
fi
if [[ -d /sys/bus/event_source/devices/uprobe/format ]]; then
    want=""
    for t in /sys/bus/event_source/devices/uprobe/format/*; do want+="uprobe/${t##*/}= "; done
    expect "$want" record -e uprobe/
fi
exit $fail
