#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs the Intel PT perf.data fuzzer (tests/fuzz/PtPerfDataFuzzer.cpp: reader,
# AuxTraceSession::open, decodeSpans, packet listing) for a bounded time over
# seeds made in a temp dir (never in the repo): the shared Skylake intel_pt
# perf.data (perf 4.14) and a small trace auxscope-ptsynth --generate writes
# here, whose generated ELF the decode then finds at its recorded path. Exit
# 77 = skipped. Run through tests/support/with_test_data.sh.
# Inputs are at most 64 KB (-max_len): libFuzzer reads the first 64 KB of the
# 178 KB Skylake file (its first CPU's AUX buffer whole, part of the second;
# the reader says the file is cut short), 93 % of the whole file's coverage
# (6392 of 6879 edges at start-up); an input of it costs 27 ms of CPU under
# ASan here instead of 34 ms (PtPerfDataFuzzer.cpp bounds the rest).
# usage: run_pt_perfdata_fuzzer.sh TEST_DATA_DIR SECONDS FUZZER PTSYNTH  (FUZZ_RUNS: the run cap)
#        run_pt_perfdata_fuzzer.sh TEST_DATA_DIR SECONDS --skip REASON
data=$1
seconds=$2
fuzzer=$3
if [ "$fuzzer" = "--skip" ]; then
    echo "SKIPPED: $4"
    exit 77
fi
ptsynth=$4
runs=${FUZZ_RUNS:-2000}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/auxscope-pt-perfdata-fuzz.XXXXXX") || exit 1
mkdir "$tmp/corpus"
for f in "$data"/intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-*; do
    case $f in *.buildids) continue ;; esac
    [ -f "$f" ] && cp "$f" "$tmp/corpus/seed-$(basename "$f")"
done
# A few PSB segments of generated PT (small: ~2000 instructions, PSB every
# 512 bytes, two AUXTRACE records); the ELF stays in $tmp for the decode.
if [ -x "$ptsynth" ]; then
    "$ptsynth" --generate 1 --max-insns 2000 --functions 8 --psb-period 512 --chunk 1024 -q \
        -o "$tmp/gen.data" >/dev/null 2>&1 && cp "$tmp/gen.data" "$tmp/corpus/seed-ptsynth.data"
fi
chmod u+w "$tmp/corpus"/* 2>/dev/null
if [ -z "$(ls "$tmp/corpus")" ]; then
    rm -rf "$tmp"
    echo "SKIPPED: no Intel PT perf.data in $data/intel-pt and auxscope-ptsynth ($ptsynth) made none"
    exit 77
fi
echo "corpus: $(ls "$tmp/corpus" | tr '\n' ' ')(in $tmp)"
# A mutated AUXTRACE_INFO may name CoreSight: OpenCSD's known per-tree leak is
# suppressed as in run_etm_perfdata_fuzzer.sh.
printf 'leak:ocsd_dt_set_gen_elem_outfn\nleak:libopencsd_c_api.so\n' >"$tmp/lsan.supp"
# Per-input leak checks off (issue 28): what the process keeps across inputs
# (the symbol cache, the options) made libFuzzer run inputs again and scan the
# heap, 11 % of a profiled run; LeakSanitizer checks the heap at exit instead
# (fuzz_run.sh fails the run on a leak of ours there).
FUZZ_INPUT_LEAKS=0 LSAN_OPTIONS="suppressions=$tmp/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
    exec sh "$(dirname "$0")/fuzz_run.sh" "$fuzzer" "$seconds" "$tmp" 65536 "$runs"
