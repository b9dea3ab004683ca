#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs a libFuzzer binary for a bounded time over TMP/corpus and says how it went:
# the tail of its log, and on a crash where the crashing input and the full log
# are kept (TMP is removed otherwise). Called by the run_*_fuzzer.sh scripts once
# they have made their corpus.
#
# A fixed seed (-seed=1, or FUZZ_SEED) and RUNS (when given) bound the run. The
# inputs still change whenever the code does (libFuzzer follows coverage), so a
# crash inside a system library auxscope may not patch (FUZZ_LIBRARY_CRASHES, a
# library file name such as libopencsd.so) must not fail the suite at random:
# with it set the fuzzer runs forked, goes on after a crash, and every crashing
# input is run again alone. A crash whose first frame outside libc, libstdc++
# and the sanitizers lies in that library is the library's only when
# FUZZ_LIBRARY_REPRODUCE (a script: FUZZER INPUT) reproduces it without
# auxscope's code (tests/fuzz/opencsd_reproduce.sh: OpenCSD's own trc_pkt_lister
# on the same trace); it is then counted and reported, its input kept in
# FUZZ_ARTIFACTS when set. Any other crash, one in the library that its own tool
# does not reproduce included (auxscope may have handed it bad state), is ours
# and fails the test.
#
# Long runs (bench/fuzz-long): FUZZ_LONG=1 runs RUNS executions in all (the run
# scripts pass FUZZ_RUNS) within FUZZ_SECONDS, going on past every crash: the
# fuzzer is started again, with the next seed, on the corpus it has grown
# (libFuzzer's -fork mode does the same but restarts every few seconds, a third
# of the speed here). Every crashing input is copied to FUZZ_ARTIFACTS (when
# set); the last line is "FUZZ-SUMMARY execs=N crashes=C library=L ours=O slow=S
# cov=E ft=F" (S: timeouts whose input runs alone within the limit, reported
# but not crashes; E, F: libFuzzer's edges and features where the run ended);
# FUZZ_KEEP_LOG=FILE keeps the whole log there.
#
# FUZZ_INPUT_LEAKS=0 (set by a run script whose target drives a library that
# leaks a little on every input, OpenCSD 1.3.3's C API): libFuzzer's per-input
# leak check is off (-detect_leaks=0). With it on, every such input is run a
# second time and the whole heap scanned (suppressed, so again and again: ten
# times the cost of the input). LeakSanitizer still checks the heap when the
# fuzzer exits, with the same suppressions: a leak of auxscope's there fails the
# run like a crash (no input to keep: replay the corpus to find it).
#
# Features count as rare for libFuzzer's entropic schedule up to 16 hits
# (-entropic_feature_frequency_threshold, default 255; FUZZ_RARE_HITS). With
# 255, every feature of a target as large as a perf.data decoder stays "rare"
# for a long while, and libFuzzer searches that list linearly for every
# feature of every run: 25-40 % of a run's time in InputCorpus::
# UpdateFeatureFrequency in the slow targets' profiles, more than the target
# itself. Inputs that reach rare features are still favoured (the 100 rarest
# at least); measured on etm_perfdata: 460 -> 840 executions per CPU second.
# usage: fuzz_run.sh FUZZER SECONDS TMP MAX_LEN [RUNS]
fuzzer=$1
seconds=${FUZZ_SECONDS:-$2}
tmp=$3
maxlen=$4
runs=${5:--1}
leakflag=
[ "${FUZZ_INPUT_LEAKS:-1}" = 0 ] && leakflag=-detect_leaks=0
rare=-entropic_feature_frequency_threshold=${FUZZ_RARE_HITS:-16}
if [ "${FUZZ_LONG:-0}" = 1 ]; then
    execs=0
    seed=${FUZZ_SEED:-1}
    started=$(date +%s)
    : >"$tmp/fuzz.log"
    for restart in $(seq 1 100); do
        left=$((seconds - ($(date +%s) - started)))
        [ $left -gt 0 ] && [ $execs -lt "$runs" ] || break
        "$fuzzer" -seed="$seed" -runs=$((runs - execs)) -max_total_time="$left" -rss_limit_mb=2048 \
            -max_len="$maxlen" -timeout=10 -print_final_stats=1 $leakflag $rare -artifact_prefix="$tmp/" "$tmp/corpus" \
            >"$tmp/fuzz-run.log" 2>&1
        rc=$?
        cat "$tmp/fuzz-run.log" >>"$tmp/fuzz.log"
        # libFuzzer prints its final stats after a crash, a leak or a timeout too.
        n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/fuzz-run.log" | tail -n 1)
        execs=$((execs + ${n:-0}))
        [ $rc -ne 0 ] && [ "${n:-0}" -gt 0 ] || break  # done, or a crash before any run: no restart
        echo "restart $restart after exit $rc at $execs executions" >>"$tmp/fuzz.log"
        seed=$((seed + 1))
    done
elif [ -n "${FUZZ_LIBRARY_CRASHES:-}" ]; then
    "$fuzzer" -seed="${FUZZ_SEED:-1}" -fork=1 -ignore_crashes=1 -max_total_time="$seconds" -rss_limit_mb=2048 \
        -max_len="$maxlen" -timeout=10 $leakflag $rare -artifact_prefix="$tmp/" "$tmp/corpus" >"$tmp/fuzz.log" 2>&1
else
    "$fuzzer" -seed="${FUZZ_SEED:-1}" -runs="$runs" -max_total_time="$seconds" -rss_limit_mb=2048 \
        -max_len="$maxlen" -timeout=10 -print_final_stats=1 $leakflag $rare -artifact_prefix="$tmp/" "$tmp/corpus" \
        >"$tmp/fuzz.log" 2>&1
fi
rc=$?
tail -n 12 "$tmp/fuzz.log"
library=0
ours=0
# Leaks LeakSanitizer found when a fuzzer exited (per-input checks off, or a
# forked run's child): no input names them (libFuzzer then keeps the empty
# input as crash-da39a3ee..., which is not run again here), the log does.
exitleaks=$(grep -c 'ERROR: LeakSanitizer: detected memory leaks' "$tmp/fuzz.log")
# Of those, the leaks of the library the run tolerates (FUZZ_LIBRARY_CRASHES):
# a leaked block whose stack passes through that library (OpenCSD 1.3.3 leaks
# decode-tree state its C API does not free). Any other leaked block is ours.
libleaks=0
if [ "$exitleaks" -ne 0 ] && [ -n "${FUZZ_LIBRARY_CRASHES:-}" ]; then
    blocks=$(awk -v lib="$FUZZ_LIBRARY_CRASHES" '
        /^(Direct|Indirect) leak of / { if (inb) { n++; if (!hit) o++ } inb = 1; hit = 0; next }
        inb && index($0, lib) { hit = 1 }
        inb && /^$/ { n++; if (!hit) o++; inb = 0 }
        END { if (inb) { n++; if (!hit) o++ } printf "%d %d\n", n, o }' "$tmp/fuzz.log")
    set -- $blocks
    if [ "$1" -gt 0 ] && [ "$2" -eq 0 ]; then
        libleaks=$exitleaks
        library=$((library + exitleaks))
        echo "in $FUZZ_LIBRARY_CRASHES: LeakSanitizer found $1 leaked blocks when the fuzzer exited ($exitleaks times), every one allocated inside it (not auxscope's code)"
        exitleaks=0
    fi
fi
slow=0
for artifact in "$tmp"/crash-* "$tmp"/leak-* "$tmp"/timeout-* "$tmp"/oom-*; do
    [ -e "$artifact" ] || continue
    [ -s "$artifact" ] || [ $((exitleaks + libleaks)) -eq 0 ] || continue
    # A timeout is a hang only when the input also times out run alone: a long
    # run at nice 19 on a loaded machine times out inputs a library decodes
    # slowly too (OpenCSD 1.3.3's ETMv4 cancelElements(): 5 s of CPU on 7 KB
    # of trace under ASan). Such an input is reported with its time and
    # counted as slow, not as a crash.
    case $(basename "$artifact") in timeout-*)
        if "$fuzzer" -timeout=10 -runs=1 "$artifact" >"$tmp/slow.log" 2>&1; then
            slow=$((slow + 1))
            echo "slow, not a hang: $(basename "$artifact") finishes when run alone ($(sed -n 's/.*Executed .* in \([0-9]*\) ms.*/\1/p' "$tmp/slow.log" | tail -n 1) ms, load $(cut -d' ' -f1 /proc/loadavg))"
            continue
        fi ;;
    esac
    frame=$("$fuzzer" "$artifact" 2>&1 | grep -E '^ +#[0-9]+ ' |
        grep -vE 'libc\.so|libstdc\+\+|libasan|libubsan|compiler-rt|sanitizer|libFuzzer|fuzzer::|__pthread|raise|abort' |
        head -n 1)
    # UBSan reports without a stack: its "file:line: runtime error" line then.
    [ -n "$frame" ] || frame=" $("$fuzzer" "$artifact" 2>&1 | grep -m 1 'runtime error')"
    if [ -n "${FUZZ_LIBRARY_CRASHES:-}" ] && printf '%s\n' "$frame" | grep -q "$FUZZ_LIBRARY_CRASHES" &&
        why=$(${FUZZ_LIBRARY_REPRODUCE:-false} "$fuzzer" "$artifact"); then
        library=$((library + 1))
        keep=${FUZZ_ARTIFACTS:-${TMPDIR:-/tmp}/auxscope-library-crashes}
        mkdir -p "$keep" && cp "$artifact" "$keep/"
        echo "in $FUZZ_LIBRARY_CRASHES (not auxscope's code; $why): $(basename "$artifact"):$frame; kept in $keep"
    elif [ -n "${FUZZ_LIBRARY_CRASHES:-}" ] && printf '%s\n' "$frame" | grep -q "$FUZZ_LIBRARY_CRASHES"; then
        ours=$((ours + 1))
        echo "CRASH: $(basename "$artifact"):$frame (inside $FUZZ_LIBRARY_CRASHES, counted as ours: ${why:-no reproducer})"
    else
        ours=$((ours + 1))
        echo "CRASH: $(basename "$artifact"):$frame"
    fi
done
if [ "$exitleaks" -ne 0 ]; then
    ours=$((ours + exitleaks))
    echo "CRASH: LeakSanitizer found leaks of auxscope's when the fuzzer exited ($exitleaks times):"
    grep -A 12 'ERROR: LeakSanitizer: detected memory leaks' "$tmp/fuzz.log" | head -n 30
fi
if [ "${FUZZ_LONG:-0}" = 1 ]; then
    if [ -n "${FUZZ_ARTIFACTS:-}" ] && [ $((ours + library)) -ne 0 ]; then
        mkdir -p "$FUZZ_ARTIFACTS"
        cp "$tmp"/crash-* "$tmp"/leak-* "$tmp"/timeout-* "$tmp"/oom-* "$FUZZ_ARTIFACTS"/ 2>/dev/null
        cp "$tmp/fuzz.log" "$FUZZ_ARTIFACTS/fuzz.log"
    fi
    # Coverage where the run ended (libFuzzer's last "cov: N ft: M" line: edges and features).
    cov=$(sed -n 's/.* cov: \([0-9]*\) ft: \([0-9]*\).*/\1 \2/p' "$tmp/fuzz.log" | tail -n 1)
    [ -n "${FUZZ_KEEP_LOG:-}" ] && cp "$tmp/fuzz.log" "$FUZZ_KEEP_LOG"
    rm -rf "$tmp"
    echo "FUZZ-SUMMARY execs=${execs:-0} crashes=$((ours + library)) library=$library ours=$ours slow=$slow cov=${cov% *} ft=${cov#* }"
    [ $ours -eq 0 ]
    exit
fi
if [ $ours -ne 0 ] || { [ $rc -ne 0 ] && [ -z "${FUZZ_LIBRARY_CRASHES:-}" ]; }; then
    echo "FAILED: the fuzzer exited with $rc, $ours crashing inputs of ours; they and the full log are kept in $tmp"
    exit 1
fi
rm -rf "$tmp"
echo "PASSED: no crash in auxscope's code (seed ${FUZZ_SEED:-1}; ${seconds} s${FUZZ_LIBRARY_CRASHES:+; $library inputs crashed inside $FUZZ_LIBRARY_CRASHES, a known upstream bug: tests/fuzz/opencsd-1.3.3-crashes})"
