#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs the sampled-profile fuzzer (tests/fuzz/SampleProfileFuzzer.cpp) for a
# bounded time over seeds perf records here: the sampled-stacks test program
# with -g and with --call-graph dwarf (a small stack copy, so inputs stay
# small). Exit 77 = skipped (no clang/libFuzzer, or perf cannot record here).
# usage: run_sample_profile_fuzzer.sh TEST_DATA_DIR SECONDS FUZZER STACKS_PROG  (FUZZ_RUNS: the run cap)
#        run_sample_profile_fuzzer.sh TEST_DATA_DIR SECONDS --skip REASON
seconds=$2
fuzzer=$3
if [ "$fuzzer" = "--skip" ]; then
    echo "SKIPPED: $4"
    exit 77
fi
program=$4
if ! command -v perf >/dev/null 2>&1; then
    echo "SKIPPED: perf is not installed (the seeds are perf recordings)"
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/auxscope-sample-profile-fuzz.XXXXXX") || exit 1
mkdir "$tmp/corpus"
if ! perf record -q -e cpu-clock -F 500 -g -o "$tmp/corpus/seed-fp.data" -- "$program" 60 >"$tmp/record.log" 2>&1 ||
    ! perf record -q -e cpu-clock -F 500 --call-graph dwarf,1024 -o "$tmp/corpus/seed-dwarf.data" -- "$program" 40 \
        >>"$tmp/record.log" 2>&1; then
    cat "$tmp/record.log"
    rm -rf "$tmp"
    echo "SKIPPED: perf record -e cpu-clock -g / --call-graph dwarf fails here"
    exit 77
fi
echo "corpus: $(ls "$tmp/corpus" | wc -l) perf recordings of $(basename "$program") (in $tmp)"
exec sh "$(dirname "$0")/fuzz_run.sh" "$fuzzer" "$seconds" "$tmp" 262144 "${FUZZ_RUNS:-4000}"
