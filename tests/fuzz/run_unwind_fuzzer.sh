#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs the DWARF unwinding fuzzer (tests/fuzz/UnwindFuzzer.cpp: both engines of
# decode/samples/DwarfUnwinder, compared on every input) for a bounded time.
# perf records the sampled-stacks test program (--call-graph dwarf) into a temp
# dir; the fuzzer writes some of its samples there as seeds and then unwinds
# mutated registers and stack copies against that recording's processes and
# files. Exit 77 = skipped (no clang/libFuzzer, or perf cannot record here).
# usage: run_unwind_fuzzer.sh TEST_DATA_DIR SECONDS FUZZER STACKS_PROG  (FUZZ_RUNS: the run cap)
#        run_unwind_fuzzer.sh TEST_DATA_DIR SECONDS --skip REASON
seconds=$2
fuzzer=$3
if [ "$fuzzer" = "--skip" ]; then
    echo "SKIPPED: $4"
    exit 77
fi
program=$4
runs=${FUZZ_RUNS:-200000}
if ! command -v perf >/dev/null 2>&1; then
    echo "SKIPPED: perf is not installed (the fuzzer unwinds against a perf recording)"
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/auxscope-unwind-fuzz.XXXXXX") || exit 1
mkdir "$tmp/corpus"
if ! perf record -q -e cpu-clock -F 2000 --call-graph dwarf -o "$tmp/stacks.data" -- "$program" 200 \
    >"$tmp/record.log" 2>&1; then
    cat "$tmp/record.log"
    rm -rf "$tmp"
    echo "SKIPPED: perf record -e cpu-clock --call-graph dwarf fails here"
    exit 77
fi
export AUXSCOPE_UNWIND_FUZZ_CAPTURE="$tmp/stacks.data"
AUXSCOPE_UNWIND_FUZZ_SEEDS="$tmp/corpus" "$fuzzer" >/dev/null 2>&1
if [ -z "$(ls "$tmp/corpus")" ]; then
    rm -rf "$tmp"
    echo "FAILED: the fuzzer wrote no seeds from $program's recording"
    exit 1
fi
echo "corpus: $(ls "$tmp/corpus" | wc -l) samples of $(basename "$program") (in $tmp)"
# Inputs are a few KiB: the registers and an 8 KiB stack copy.
exec sh "$(dirname "$0")/fuzz_run.sh" "$fuzzer" "$seconds" "$tmp" 16384 "$runs"
