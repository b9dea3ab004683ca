#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Replays the inputs that once crashed a fuzz target (tests/fuzz/<target>-crashes/),
# each once: libFuzzer runs the files it is given and fails on the first that
# still crashes, leaks or trips UBSan. OpenCSD's known decode-tree leak is
# suppressed as in the bounded runs (an input may reach the CoreSight decoder).
# usage: replay_crashes.sh FUZZER DIR
fuzzer=$1
dir=$(cd "$2" 2>/dev/null && pwd) || dir=$2  # absolute: a harness may chdir
set --
for f in "$dir"/*; do
    case $f in *.md) continue ;; esac  # the folder's README says what each input was
    [ -f "$f" ] && set -- "$@" "$f"
done
if [ $# -eq 0 ]; then
    echo "SKIPPED: no inputs in $dir"
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/auxscope-fuzz-replay.XXXXXX") || exit 1
printf 'leak:ocsd_dt_set_gen_elem_outfn\nleak:libopencsd_c_api.so\n' >"$tmp/lsan.supp"
echo "replaying $# inputs that once crashed $(basename "$fuzzer") ($dir)"
# Every allocation up to 1 MiB is filled with 0x41 (AddressSanitizer fills the
# first 4 KiB with 0xbe by default): a read of memory nobody initialised then
# sees garbage in a replay too, not the zeros of a fresh heap. An input that
# crashed only after thousands of others had dirtied the heap crashes alone
# (tests/fuzz/etm_fuzzer-crashes: OpenCSD's deformatter counters).
ASAN_OPTIONS="max_malloc_fill_size=1048576:malloc_fill_byte=65${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
LSAN_OPTIONS="suppressions=$tmp/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}" "$fuzzer" -runs=1 -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 "$@" >"$tmp/log" 2>&1
rc=$?
tail -n 40 "$tmp/log"
[ $rc -eq 0 ] && echo "PASSED: none of them crashes any more"
rm -rf "$tmp"
exit $rc
