#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# auxscope report --event 'arm_spe: ...' on a file auxscope-spesynth generates:
# the samples of each event equal the truth's records of it (FILE.truth, one CSV
# row per record), and the top function's self samples equal the truth's count
# of records whose PC is in that function (by the generated ELF's nm symbols).
#   spe_report_check.sh AUXSCOPE AUXSCOPE_SPESYNTH
set -eu
auxscope=$1
synth=$2
dir=$(mktemp -d /tmp/auxscope-spe-report-XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$synth" --generate 5000 --seed 9 -o "$dir/s.data" >/dev/null
# The truth's count of records with column NAME equal to 1.
count() {
    awk -F, -v name="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i; next } $c == 1 { k++ } END { print k + 0 }' "$dir/s.data.truth"
}
check() {
    event=$1
    want=$2
    out=$("$auxscope" report "$dir/s.data" --event "$event" --top 0 2>/dev/null)
    echo "$out" | grep -q " threads, $want samples," || {
        echo "report --event '$event': expected $want samples:" >&2
        echo "$out" | head -5 >&2
        exit 1
    }
}
check "arm_spe: all ops" 5000
check "arm_spe: loads" "$(count isLoad)"
check "arm_spe: stores" "$(count isStore)"
check "arm_spe: branches" "$(count isBranch)"
# The top function of loads: its self samples against the truth by symbol.
elf=$(ls "$dir"/*.elf | head -1)
top=$("$auxscope" report "$dir/s.data" --event "arm_spe: loads" --top 1 --format csv 2>/dev/null | grep '^function,' | head -1)
name=$(echo "$top" | awk -F, '{ gsub(/"/, "", $5); print $5 }')
self=$(echo "$top" | awk -F, '{ print $8 }')
set -- $(nm -S --defined-only "$elf" | awk -v n="$name" '$4 == n { print $1, $2 }')
[ $# -eq 2 ] || { echo "no symbol $name in $elf" >&2; exit 1; }
lo=$((0x$1))
hi=$((lo + 0x$2))
want=$(awk -F, -v lo="$lo" -v hi="$hi" '
    NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "isLoad") l = i; if ($i == "pc") p = i }; next }
    $l == 1 && $p + 0 >= lo + 0 && $p + 0 < hi + 0 { k++ } END { print k + 0 }' "$dir/s.data.truth")
[ "$self" = "$want" ] || { echo "top function $name: $self self samples, the truth has $want" >&2; exit 1; }
echo "ok: $name has $self loads, as the truth"
