#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs the perf.data reader fuzzer for a bounded time over a corpus copied from
# the test data (../shared/data) into a temp dir (never into the repo). Exit 77 =
# skipped. Run through tests/support/with_test_data.sh, which has already said
# what happens when the data folder is missing.
# usage: run_reader_fuzzer.sh TEST_DATA_DIR SECONDS FUZZER
#        run_reader_fuzzer.sh TEST_DATA_DIR SECONDS --skip REASON
data=$1
seconds=$2
fuzzer=$3
if [ "$fuzzer" = "--skip" ]; then
    echo "SKIPPED: $4"
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/auxscope-reader-fuzz.XXXXXX") || exit 1
mkdir "$tmp/corpus"
n=0
for f in $(find "$data" -type f \( -name '*.data' -o -name 'perf.data*' \) ! -name '*.buildids' -size -4M); do
    n=$((n + 1))
    cp "$f" "$tmp/corpus/seed$n-$(basename "$f")"
done
# Seeds for the pipe-mode and zstd paths the shared files lack, when perf can
# record here (a per-process cpu-clock capture of `true`; nothing if refused).
if command -v perf >/dev/null 2>&1; then
    (cd "$tmp" && perf record -q -e cpu-clock -o - -- true >"corpus/seed-pipe.data" 2>/dev/null) || true
    (cd "$tmp" && perf record -q -z -e cpu-clock -o "corpus/seed-z.data" -- true >/dev/null 2>&1) || true
    find "$tmp/corpus" -type f -size -17c -delete
fi
echo "corpus: $n perf.data files from $data, plus $(ls "$tmp/corpus" | grep -c '^seed-') recorded here (in $tmp)"
# Inputs up to 64 KB: the two larger seeds (178 and 145 KB) are read cut short
# (libFuzzer reads the first -max_len bytes), which the reader must say as
# well; at start-up that covers 3245 edges and 5334 features against 3177 and
# 5489 with whole files; with 256 KB the corpus grew to 16 MB of inputs of
# 43 KB on average within 20 s.
exec sh "$(dirname "$0")/fuzz_run.sh" "$fuzzer" "$seconds" "$tmp" 65536 "${FUZZ_RUNS:-8000}"
