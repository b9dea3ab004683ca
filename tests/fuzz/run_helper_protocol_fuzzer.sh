#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs the capture helper protocol fuzzer (tests/fuzz/HelperProtocolFuzzer.cpp)
# for a bounded time over seeds written here: Start payloads (every target,
# every key, hostile ones), a Stats block, framed message streams, and a
# helper conversation. Needs no test data. Exit 77 = skipped.
# usage: run_helper_protocol_fuzzer.sh TEST_DATA_DIR SECONDS FUZZER  (FUZZ_RUNS: the run cap)
#        run_helper_protocol_fuzzer.sh TEST_DATA_DIR SECONDS --skip REASON
seconds=$2
fuzzer=$3
if [ "$fuzzer" = "--skip" ]; then
    echo "SKIPPED: $4"
    exit 77
fi
runs=${FUZZ_RUNS:-100000}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/auxscope-helper-protocol-fuzz.XXXXXX") || exit 1
mkdir "$tmp/corpus"
seed() { # name mode-byte(octal) body(printf format)
    { printf "\\$2"; printf "$3"; } >"$tmp/corpus/$1"
}
# A frame: 4-byte little-endian length, type, payload (lengths below are exact).
seed start-system 000 'target=system\nevent=cpu-clock\ndata-pages=64\nfreq=1000\nswitches=1\n'
seed start-cpus 000 'target=cpus\ncpus=0,1,3\nevent=sched:sched_switch\noverwrite=1\n'
seed start-command 000 'target=command\narg=/bin/sh\narg=-c\narg=echo hi\ncwd=/tmp\nevent=intel_pt/cyc=1/u\naux-pages=256\naux-snapshot=1\nsnapshot-bytes=4096\nfilter=filter main @ /bin/ls\nduration-ms=100\n'
seed start-pid 000 'target=pid\npid=1\n'
seed start-callgraph 000 'target=system\nevent=cpu-clock\ncall-graph=dwarf,4096\n'
seed start-callgraph-bad 000 'target=system\ncall-graph=dwarf,7\ncall-graph=lbr\n'
seed start-hostile 000 'target=system\nevent=../x:y\nrun-as=0\n'
seed stats 001 '\001\000\000\000\000\000\000\000'
seed finished 001 'target=x\nmessage=m\nsink-loss=1,2,why\n\000'
seed stream 002 '\003\012\000\000\000\001version=1\n\002\000\000\000\000\005\016\000\000\000\003target=system\n'
seed stream-huge 002 '\001\377\377\377\377\003'
seed serve 003 '\012\000\000\000\001version=1\n\000\000\000\000\002\016\000\000\000\003target=system\n\000\000\000\000\005\000\000\000\000\004'
seed serve-nohello 003 '\016\000\000\000\003target=system\n'
seed serve-badtype 003 '\012\000\000\000\001version=1\n\000\000\000\000\105'
echo "corpus: $(ls "$tmp/corpus" | wc -l) seeds (in $tmp)"
exec sh "$(dirname "$0")/fuzz_run.sh" "$fuzzer" "$seconds" "$tmp" 4096 "$runs"
