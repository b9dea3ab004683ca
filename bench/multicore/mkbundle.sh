#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copies a build's decode benches, stripped, and the Debian libraries they need into
# .devbundle/NAME/bin and .devbundle/lib (the libraries are shared by the bundles), so
# that another x86-64 machine without the build dependencies (a 16-core box) can run
# the scaling benches: copy the repo with .devbundle to it and run bench/multicore/run.sh.
#   bench/multicore/mkbundle.sh BUILD_DIR NAME     (from the repo root; NAME: new or old)
# .devbundle is for transport only; add it to .git/info/exclude.
set -euo pipefail
B=$(readlink -f "$1"); N=$2; R=$(pwd); D=$R/.devbundle/$N
rm -rf "$D"; mkdir -p "$D/bin" "$R/.devbundle/lib"
echo "$B" > "$D/builddir"
progs="auxscope tools/auxscope-ptsynth bench/bench_pt_decode bench/bench_etm_decode bench/bench_report
       bench/bench_output decode/libauxscope_decode.so capture/libauxscope_capture.so"
for p in $progs; do
  [ -e "$B/$p" ] || continue
  mkdir -p "$D/bin/$(dirname "$p")"; strip -o "$D/bin/$p" "$B/$p"
done
for p in $progs; do [ -e "$B/$p" ] && ldd "$B/$p" | awk '/=> \//{print $3}'; done | sort -u |
  grep -v -E "$B|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|ld-linux|libstdc\+\+|libgcc_s" |
  while read -r l; do cp -L "$l" "$R/.devbundle/lib/"; done
# bench_etm_decode reads one CoreSight snapshot of ../shared/data.
if [ -d ../shared/data/coresight/opencsd-snapshots/bugfix-exact-match ]; then
  mkdir -p .devbundle/shared-data/coresight/opencsd-snapshots
  cp -r ../shared/data/coresight/opencsd-snapshots/bugfix-exact-match .devbundle/shared-data/coresight/opencsd-snapshots/
fi
# Cores or hardware threads (run.sh output).
g++ -O2 -pthread -o "$R/.devbundle/smtprobe" "$R/bench/multicore/smtprobe.cpp"
du -sh "$D" "$R/.devbundle"
