#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs the CoreSight perf.data fuzzer (tests/fuzz/EtmPerfDataFuzzer.cpp: reader,
# AuxTraceSession::open, decodeSpans) for a bounded time over seeds copied, into
# a temp dir (never into the repo), from simpleperf's cs_etm perf.data files;
# their symfs holds the code images the decode reads. Exit 77 = skipped. Run
# through tests/support/with_test_data.sh.
# usage: run_etm_perfdata_fuzzer.sh TEST_DATA_DIR SECONDS FUZZER
#        run_etm_perfdata_fuzzer.sh TEST_DATA_DIR SECONDS --skip REASON
data=$1
seconds=$2
fuzzer=$3
if [ "$fuzzer" = "--skip" ]; then
    echo "SKIPPED: $4"
    exit 77
fi
etm="$data/coresight/simpleperf-etm"
if ! ls "$etm"/*.data >/dev/null 2>&1; then
    echo "SKIPPED: no cs_etm perf.data files in $etm"
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/auxscope-etm-perfdata-fuzz.XXXXXX") || exit 1
mkdir "$tmp/corpus"
# perf_kernel.data is left out: its 469 kernel and module mappings make
# ImageResolver::addRegions (one sort of every region per mapping, per process)
# take 8 s per execution under ASan and coverage here, near fuzz_run.sh's
# 10 s -timeout on a busy machine; the other files reach the same code paths.
for f in "$etm"/*.data; do
    [ "$(basename "$f")" = perf_kernel.data ] && continue
    cp "$f" "$tmp/corpus/seed-$(basename "$f")"
done
chmod u+w "$tmp/corpus"/*
echo "corpus: $(ls "$tmp/corpus" | wc -l) cs_etm perf.data files from $etm (in $tmp)"
# OpenCSD 1.3.3's C API leaks the 32-byte callback object of
# ocsd_dt_set_gen_elem_outfn() once per decode tree (see run_etm_fuzzer.sh):
# suppressed by name and by the library's module.
printf 'leak:ocsd_dt_set_gen_elem_outfn\nleak:libopencsd_c_api.so\n' >"$tmp/lsan.supp"
# The run cap keeps the bounded run on a sequence seen passing (fixed seed),
# well inside SECONDS on a busy 2-core machine.
# Per-input leak checks off (issue 28), as in run_etm_fuzzer.sh: OpenCSD's
# leak on every decode tree made libFuzzer run each input again and scan the
# heap; LeakSanitizer checks it at exit instead.
FUZZ_INPUT_LEAKS=0 AUXSCOPE_FUZZ_SYMFS="$etm/symfs" \
LSAN_OPTIONS="suppressions=$tmp/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
    exec sh "$(dirname "$0")/fuzz_run.sh" "$fuzzer" "$seconds" "$tmp" 262144 "${FUZZ_RUNS:-5000}"
