#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Is a crash inside libopencsd the library's own? A fuzzer input that crashed with
# its first frame in libopencsd is written, by the fuzzer itself
# (AUXSCOPE_ETM_FUZZ_SNAPSHOT, see tests/fuzz/EtmFuzzer.cpp), as the OpenCSD
# snapshot folders that give the same bytes and configuration to OpenCSD's own
# tool, trc_pkt_lister (Debian package libopencsd-bin), which then decodes each.
# Only when trc_pkt_lister dies of a signal (or hangs) on one of them, with no
# auxscope code in the process, is the crash the library's: exit 0 and one line
# saying so. Otherwise exit 1 (an auxscope bug may have handed the library bad
# state, or the input cannot be replayed without auxscope): the crash is ours.
# usage: opencsd_reproduce.sh FUZZER INPUT
fuzzer=$1
input=$2
command -v trc_pkt_lister >/dev/null || { echo "not reproduced: trc_pkt_lister not found (libopencsd-bin)"; exit 1; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/auxscope-opencsd-repro.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
AUXSCOPE_ETM_FUZZ_SNAPSHOT="$dir" "$fuzzer" "$input" >"$dir/fuzzer.log" 2>&1
found=0
for ss in "$dir"/a "$dir"/b; do
    [ -f "$ss/snapshot.ini" ] || continue
    found=1
    timeout 60 trc_pkt_lister -ss_dir "$ss" -decode -logfilename "$dir/lister.log" >/dev/null 2>&1
    rc=$?
    if [ $rc -eq 124 ]; then
        echo "reproduced: OpenCSD's trc_pkt_lister hangs (60 s) on the same trace ($(basename "$ss"))"
        exit 0
    fi
    if [ $rc -gt 128 ]; then
        echo "reproduced: OpenCSD's trc_pkt_lister killed by signal $((rc - 128)) on the same trace ($(basename "$ss"))"
        exit 0
    fi
done
[ $found = 1 ] || { echo "not reproduced: the input is not a trace the library's tool can replay"; exit 1; }
echo "not reproduced: OpenCSD's trc_pkt_lister decodes the same trace without crashing"
exit 1
