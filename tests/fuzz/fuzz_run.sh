#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs a libFuzzer binary for a bounded time over TMP/corpus and says how it went:
# the tail of its log, and on a crash where the crashing input and the full log
# are kept (TMP is removed otherwise). Called by the run_*_fuzzer.sh scripts once
# they have made their corpus.
#
# The run is reproducible: a fixed seed (-seed=1, or FUZZ_SEED) makes the
# inputs one fixed sequence, and RUNS (when given) caps how far along it the run
# goes, so a faster machine does not wander past what the suite has seen pass.
# `bench/fuzz-long`-style exploration is a longer run with another seed.
# usage: fuzz_run.sh FUZZER SECONDS TMP MAX_LEN [RUNS]
fuzzer=$1
seconds=$2
tmp=$3
maxlen=$4
runs=${5:--1}
"$fuzzer" -seed="${FUZZ_SEED:-1}" -runs="$runs" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len="$maxlen" -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$tmp/" "$tmp/corpus" >"$tmp/fuzz.log" 2>&1
rc=$?
tail -n 25 "$tmp/fuzz.log"
if [ $rc -ne 0 ]; then
    echo "FAILED: the fuzzer exited with $rc; the crashing input and full log are kept in $tmp"
    exit 1
fi
rm -rf "$tmp"
echo "PASSED: no crash (seed ${FUZZ_SEED:-1}; at most $runs runs, $seconds s)"
