#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Decodes files auxscope-spesynth writes and compares them with their ground truth:
#   records SPESYNTH AUXSCOPE ARGS...  `auxscope decode --format records` equals FILE.truth
#   packets SPESYNTH AUXSCOPE ARGS...  `auxscope decode --format packets`'s packet lines equal
#                                      `perf report -D`'s (perf as the oracle; exit 77, skipped,
#                                      when perf is missing outside CI)
# ARGS go to auxscope-spesynth (--info-version, --no-context, ...).
set -eu
mode=$1 synth=$2 auxscope=$3
shift 3
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
"$synth" --generate 20000 --seed 11 "$@" -o "$d/s.data" >/dev/null
case $mode in
records)
    "$auxscope" decode "$d/s.data" --format records >"$d/records.csv" 2>"$d/err"
    rows=$(($(wc -l <"$d/s.data.truth") - 1))
    [ "$rows" -eq 20000 ] || { echo "truth has $rows rows, expected 20000"; exit 1; }
    if ! diff "$d/s.data.truth" "$d/records.csv" >"$d/diff"; then
        echo "records differ from the truth ($(grep -c '^[<>]' "$d/diff") lines):"
        head -20 "$d/diff"
        exit 1
    fi
    echo "records equal the truth: $rows rows ($*)"
    ;;
packets)
    if ! command -v perf >/dev/null 2>&1; then
        echo "perf is not installed (Debian linux-perf): no oracle for the packet listing"
        [ "${CI:-}" = true ] && exit 1
        exit 77
    fi
    perf report -D -i "$d/s.data" 2>"$d/perf.err" | grep -E '^\.  [0-9a-f]{8}: ' >"$d/perf.txt" || true
    "$auxscope" decode "$d/s.data" --format packets 2>"$d/err" | grep -E '^\.  [0-9a-f]{8}: ' >"$d/ours.txt" || true
    lines=$(wc -l <"$d/perf.txt")
    [ "$lines" -gt 20000 ] || { echo "perf listed only $lines packet lines"; cat "$d/perf.err"; exit 1; }
    if ! diff "$d/perf.txt" "$d/ours.txt" >"$d/diff"; then
        echo "packet lines differ from perf report -D's:"
        head -20 "$d/diff"
        exit 1
    fi
    echo "packet listing equals perf report -D: $lines lines ($*)"
    ;;
*)
    echo "usage: $0 records|packets SPESYNTH AUXSCOPE ARGS..."
    exit 2
    ;;
esac
