#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs the control FIFO fuzzer (tests/fuzz/ControlFifoFuzzer.cpp) for a bounded
# time over seeds written here: a --control spec line, then a piece-size byte,
# then what a client writes (every command, bad ones, long lines, NUL ends,
# CRLF). Needs no test data. Exit 77 = skipped.
# usage: run_control_fifo_fuzzer.sh TEST_DATA_DIR SECONDS FUZZER  (FUZZ_RUNS: the run cap)
#        run_control_fifo_fuzzer.sh TEST_DATA_DIR SECONDS --skip REASON
seconds=$2
fuzzer=$3
if [ "$fuzzer" = "--skip" ]; then
    echo "SKIPPED: $4"
    exit 77
fi
runs=${FUZZ_RUNS:-30000}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/auxscope-control-fifo-fuzz.XXXXXX") || exit 1
mkdir "$tmp/corpus"
seed() { # name spec piece-byte(octal) body
    { printf '%s\n\%s' "$2" "$3"; printf "$4"; } >"$tmp/corpus/$1"
}
seed commands 'fifo:ctl,ack' 000 'ping\nsnapshot\ndisable\nenable\nstop\n'
seed bytewise 'fifo:ctl,ack' 000 'snapshot\n  ping \r\nenable\000disable\n\n\n'
seed pieces 'fifo:ctl,ack' 003 'ping\nenable x\ndisable cycles\nsnapshot now\nevlist\nfrobnicate\n'
seed norecorder 'fifo:ctl,ack' 200 'snapshot\nsnapshot\nping\n'
seed noack 'fifo:ctl' 001 'ping\nstop\n'
seed long 'fifo:ctl,ack' 012 "$(head -c 600 /dev/zero | tr '\0' 'x')\\nping\\n"
printf 'fifo:ctl,dir' >"$tmp/corpus/spec-dir"
printf 'fd:3,4' >"$tmp/corpus/spec-fd"
printf 'fifo:none' >"$tmp/corpus/spec-missing"
printf 'fifo:ctl,' >"$tmp/corpus/spec-empty-ack"
echo "corpus: $(ls "$tmp/corpus" | wc -l) seeds (in $tmp)"
exec sh "$(dirname "$0")/fuzz_run.sh" "$fuzzer" "$seconds" "$tmp" 4096 "$runs"
