#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs the JIT readers' fuzzer (tests/fuzz/JitDumpFuzzer.cpp) for a bounded time
# over seeds made here: the jitdump and perf map of a run of the test JIT
# (tests/decode/JitProgram.c), each behind its selector byte (0: jitdump,
# 1: perf map). Needs no test data. Exit 77 = skipped.
# usage: run_jit_dump_fuzzer.sh TEST_DATA_DIR SECONDS FUZZER JIT_PROG  (FUZZ_RUNS: the run cap)
#        run_jit_dump_fuzzer.sh TEST_DATA_DIR SECONDS --skip REASON
seconds=$2
fuzzer=$3
if [ "$fuzzer" = "--skip" ]; then
    echo "SKIPPED: $4"
    exit 77
fi
jit_prog=$4
runs=${FUZZ_RUNS:-100000}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/auxscope-jit-dump-fuzz.XXXXXX") || exit 1
mkdir "$tmp/corpus" "$tmp/run"
JIT_PERF_MAP_DIR="$tmp/run" "$jit_prog" "$tmp/run" 3 2 >/dev/null || { echo "jit_prog failed"; exit 1; }
for f in "$tmp"/run/jit-*.dump; do { printf '\000'; cat "$f"; } >"$tmp/corpus/dump"; done
for f in "$tmp"/run/perf-*.map; do { printf '\001'; cat "$f"; printf 'zz 10 bad\n7f00 0 zero\n'; } >"$tmp/corpus/map"; done
echo "corpus: $(ls "$tmp/corpus" | wc -l) seeds (in $tmp)"
exec sh "$(dirname "$0")/fuzz_run.sh" "$fuzzer" "$seconds" "$tmp" 4096 "$runs"
