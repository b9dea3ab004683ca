#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs the command-line parser fuzzer (tests/fuzz/CliParseFuzzer.cpp) for a
# bounded time over seeds written here: for each command (the first byte), what
# perf users type, NUL-separated: --opt=value, -ag, -F99, -e a,b, --, numbers
# that are not (1.9, nan, inf, 1e30, -1, 010), --time forms. Needs no test data.
# Exit 77 = skipped.
# usage: run_cli_parse_fuzzer.sh TEST_DATA_DIR SECONDS FUZZER  (FUZZ_RUNS: the run cap)
#        run_cli_parse_fuzzer.sh TEST_DATA_DIR SECONDS --skip REASON
seconds=$2
fuzzer=$3
if [ "$fuzzer" = "--skip" ]; then
    echo "SKIPPED: $4"
    exit 77
fi
runs=${FUZZ_RUNS:-100000}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/auxscope-cli-parse-fuzz.XXXXXX") || exit 1
mkdir "$tmp/corpus"
n=0
seed() { # selector(octal) args...
    sel=$1
    shift
    n=$((n + 1))
    { printf "\\$sel"; first=1; for a in "$@"; do [ $first = 1 ] || printf '\000'; printf '%s' "$a"; first=0; done; } \
        >"$tmp/corpus/seed$n"
}
# record (0)
seed 000 -ag -F99 -e cpu-clock,task-clock --mmap-pages=64,8 --duration=0.5 -o out.data -z --json
seed 000 -p 1.9
# found by this fuzzer: the refusal of a target and a command named neither as given
seed 000 --all-cpus in --foo
seed 000 -a --compress
seed 000 -p nan -F inf -m 1e30
seed 000 --tid 010 -m -1 --cpu -1
seed 000 -C0-3,6 --call-graph=dwarf,4096 -- sh -c 'exit 7'
seed 000 -Se4M -e intel_pt/cyc,noretcomp/u --control fifo:ctl,ack --filter 'filter main @ /bin/true'
seed 000 --replay x.data --replay-speed=0.1 --replay-loop --overwrite --no-switch --no-realtime
seed 000 --duration inf --foo -x --json=1
# info (1), export (2)
seed 001 --json -
seed 002 f.data --format=csv -o out.csv --no-samples --no-stacks --decode --cpu 0 --tid 010 --time 1.5-2.5
seed 002 f.data -F perfetto --no-decode -j4 --time=+100- --pt-decoder block
# decode (3, 4: perf.data / snapshot / raw by the selector)
seed 003 f.data --format insn --cpu=1 --tid 42 --time 100,200 --symfs /nonexistent -j 2
seed 013 snap --format=packets
seed 004 trace.pt --cpu 6/85 --mtc-freq=3 --nom-freq 0x20 --cpuid-15 2,308 --filter:addr0_cfg 1
# report (5)
seed 005 f.data --source samples --sort total --top=10 --tree --threads --no-inline --time +0.001-+0.002
seed 005 f.data --format json --event cpu-clock --time -200 --tid 010
# decode --pt (6)
seed 006 --pt=t.pt:0x10-0x20 --raw code.bin:0x1000 --elf=a.out:0x400000 --format packets --time --no-pad
seed 006 t.pt --pevent:primary sb.bin:0-10 --pevent:time-shift 10 --pevent:time-mult=3 --sb:compact -q
# compare (7)
seed 007 a.data b.data --by-symbol --normalize per-call=main --sort calls:pct --limit 0 --time +0-+100 --time-b +100-+200 --tree --bottom-up --format csv
seed 007 a.data --normalize x --sort self:q --time-b 5 --event cpu-clock --no-inline
echo "corpus: $(ls "$tmp/corpus" | wc -l) seeds (in $tmp)"
exec sh "$(dirname "$0")/fuzz_run.sh" "$fuzzer" "$seconds" "$tmp" 1024 "$runs"
