#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs the Arm SPE fuzzer (tests/fuzz/SpeFuzzer.cpp: raw SPE streams through the
# record decoder and the packet listing; perf.data files through the reader and
# the SPE session) for a bounded time over seeds made in a temp dir (never in the
# repo): small auxscope-spesynth files (AUXTRACE_INFO v1 and v2) and raw streams
# (quipper's two sample records, every packet kind). Exit 77 = skipped.
# usage: run_spe_fuzzer.sh TEST_DATA_DIR SECONDS FUZZER SPESYNTH  (FUZZ_RUNS: the run cap)
#        run_spe_fuzzer.sh TEST_DATA_DIR SECONDS --skip REASON
seconds=$2
fuzzer=$3
if [ "$fuzzer" = "--skip" ]; then
    echo "SKIPPED: $4"
    exit 77
fi
spesynth=$4
runs=${FUZZ_RUNS:-20000}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/auxscope-spe-fuzz.XXXXXX") || exit 1
mkdir "$tmp/corpus"
for v in 1 2; do
    "$spesynth" --generate 40 --seed $v --info-version $v --cpus 2 --threads 2 --chunk 512 \
        -o "$tmp/gen$v.data" >/dev/null 2>&1 && cp "$tmp/gen$v.data" "$tmp/corpus/seed-spesynth-v$v.data"
done
# quipper's arm_spe_decoder_test.cc sample records (re-encoded), then every other packet kind.
printf '\260\320\302\241\355\146\272\377\300\000\000\145\200\137\000\000\111\000\122\026\000\231\004\000\230\014\000\262\050\153\011\003\067\016\377\000\232\001\000\103\000\161\056\145\057\152\012\000\000\000' \
    >"$tmp/corpus/seed-quipper.spe"
printf '\044\261\125\000\000\000\000\000\000\000\041\234\004\000\142\377\377\377\377\063\001\002\040\000\110\072\113\011\264\020\000\000\000\000\000\000\000\001' \
    >"$tmp/corpus/seed-kinds.spe"
if [ -z "$(ls "$tmp/corpus")" ]; then
    rm -rf "$tmp"
    echo "SKIPPED: no seeds (auxscope-spesynth at $spesynth made none)"
    exit 77
fi
echo "corpus: $(ls "$tmp/corpus" | tr '\n' ' ')(in $tmp)"
exec sh "$(dirname "$0")/fuzz_run.sh" "$fuzzer" "$seconds" "$tmp" 65536 "$runs"
