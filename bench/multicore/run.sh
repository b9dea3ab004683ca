#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs the scaling benches of the bundles made by bench/multicore/mkbundle.sh (new, and
# old where a mode compares), from the repo root: bash bench/multicore/run.sh MODE
# MODE: diag (the new bundle alone), side (old and new), final, repeat, output (cores or hardware
# threads: smtprobe; the formatter and decode --format spans with the old and the new library;
# the isolation cost of both), stream (the isolation cost of the streamed path and export --format
# csv at -j 1 and 16, old and new library). Logs to $OUT (else /tmp).
MODE=$1; R=$(pwd); N=$R/.devbundle/new; O=$R/.devbundle/old
B=$(cat $N/builddir)
# The benches look for their helpers in the build folder and for ../shared/data beside
# the repo they were built from: both paths are made here, pointing into the bundle.
S=$(dirname "$(dirname "$(dirname "$B")")")/shared
mkdir -p $B/bench $B/tools $B/decode $B/capture $S
for f in $(cd $N/bin && find . -type f); do ln -sf $N/bin/$f $B/$f; done
[ -e $S/data ] || ln -s $R/.devbundle/shared-data $S/data
LNEW=$N/bin/decode:$N/bin/capture:$R/.devbundle/lib
LOLD=$O/bin/decode:$O/bin/capture:$R/.devbundle/lib
echo "host: $(nproc) cpus; $(grep -m1 "model name" /proc/cpuinfo)"; uname -r; lscpu | grep -E "Thread|Core|Socket|NUMA|MHz"
L=${OUT:-/tmp}/$MODE.log
run() { echo; echo "### $*"; /usr/bin/time -f "wall %e s user %U s sys %S s maxrss %M KB" "$@" 2>&1; }
{
case $MODE in
diag)
  LD_LIBRARY_PATH=$LNEW run $N/bin/bench/bench_pt_decode --size-mb 128 --dir /tmp/ptb --scaling-only --threads-list 1,4,8,16
  LD_LIBRARY_PATH=$LNEW AUXSCOPE_DECODE_IN_PROCESS=1 run $N/bin/bench/bench_pt_decode --size-mb 128 --dir /tmp/ptb --scaling-only --threads-list 1,16
  LD_LIBRARY_PATH=$LNEW AUXSCOPE_SPAN_ARRAYS_HUGE=1 run $N/bin/bench/bench_pt_decode --size-mb 128 --dir /tmp/ptb --scaling-only --threads-list 1,16
  LD_LIBRARY_PATH=$LNEW run $N/bin/bench/bench_etm_decode --copies 32 --scaling-only --threads-list 1,8,16 --no-lister
  LD_LIBRARY_PATH=$LNEW run $N/bin/bench/bench_report --spans 100000000 --rounds 3 --threads-list 1,2,8,16
  LD_LIBRARY_PATH=$LNEW run $N/bin/bench/bench_output --size-mb 64 --threads-list 1,16 --repeat 1
  ;;
side)
  LD_LIBRARY_PATH=$LNEW run $N/bin/bench/bench_pt_decode --size-mb 128 --dir /tmp/ptb --scaling-only --threads-list 1,4,8,16
  LD_LIBRARY_PATH=$LOLD run $O/bin/bench/bench_pt_decode --size-mb 128 --dir /tmp/ptb --scaling-only --threads-list 1,16
  LD_LIBRARY_PATH=$LNEW AUXSCOPE_DECODE_IN_PROCESS=1 run $N/bin/bench/bench_pt_decode --size-mb 128 --dir /tmp/ptb --scaling-only --threads-list 1,16
  LD_LIBRARY_PATH=$LOLD AUXSCOPE_DECODE_IN_PROCESS=1 run $O/bin/bench/bench_pt_decode --size-mb 128 --dir /tmp/ptb --scaling-only --threads-list 1,16
  LD_LIBRARY_PATH=$LNEW run $N/bin/bench/bench_etm_decode --copies 32 --scaling-only --threads-list 1,8,16 --no-lister
  LD_LIBRARY_PATH=$LNEW run $N/bin/bench/bench_output --size-mb 64 --threads-list 1,16 --repeat 1
  ;;
final)
  LD_LIBRARY_PATH=$LNEW run $N/bin/bench/bench_etm_decode --copies 32 --repeat 1 --no-lister --isolation-runs 0
  LD_LIBRARY_PATH=$LOLD run $O/bin/bench/bench_etm_decode --copies 32 --scaling-only --threads-list 1,16 --no-lister
  LD_LIBRARY_PATH=$LNEW run $N/bin/bench/bench_etm_decode --copies 32 --scaling-only --threads-list 1,16 --no-lister
  LD_LIBRARY_PATH=$LNEW run $N/bin/bench/bench_pt_decode --size-mb 128 --dir /tmp/ptb --scaling-only --threads-list 1,2,4,8,12,16
  LD_LIBRARY_PATH=$LNEW AUXSCOPE_DECODE_IN_PROCESS=1 run $N/bin/bench/bench_pt_decode --size-mb 128 --dir /tmp/ptb --scaling-only --threads-list 1,16
  ;;
output)
  $R/.devbundle/smtprobe 1,2,4,8,12,16
  cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list
  for lib in "$LNEW" "$LOLD" "$LNEW" "$LOLD"; do
    LD_LIBRARY_PATH=$lib run $N/bin/bench/bench_output --size-mb 64 --threads-list 1,8,16 --repeat 3
  done 2>&1 | grep -E "^###|^ +(1|8|16) +[0-9]|inflation|serial|^wall"
  for lib in "$LNEW" "$LOLD"; do
    LD_LIBRARY_PATH=$lib run $N/bin/bench/bench_pt_decode --size-mb 64 --dir /tmp/ptb --isolation-only --isolation-runs 2
  done
  ;;
stream)
  for lib in "$LNEW" "$LOLD" "$LNEW" "$LOLD"; do
    echo "### $lib"
    LD_LIBRARY_PATH=$lib $N/bin/bench/bench_pt_decode --size-mb 32 --dir /tmp/ptb --isolation-only --isolation-runs 2 2>&1 |
      grep -E "in-process .* s, worker"
  done
  for lib in "$LNEW" "$LOLD" "$LNEW" "$LOLD"; do
    for j in 1 16; do
      echo "### $lib -j $j: $(LD_LIBRARY_PATH=$lib $N/bin/auxscope export /tmp/ptb/ptsynth-32mb-seed1.data --format csv -o /dev/null -j $j 2>&1 | grep '^output')"
    done
  done
  ;;
repeat)
  for r in 1 2 3; do
    LD_LIBRARY_PATH=$LNEW run $N/bin/bench/bench_pt_decode --size-mb 64 --dir /tmp/ptb --scaling-only --threads-list 1,16
    LD_LIBRARY_PATH=$LNEW AUXSCOPE_DECODE_IN_PROCESS=1 run $N/bin/bench/bench_pt_decode --size-mb 64 --dir /tmp/ptb --scaling-only --threads-list 1,16
  done 2>&1 | grep -E "^###|^\s+-j (1 |16)"
  ;;
esac
} 2>&1 | tee $L
