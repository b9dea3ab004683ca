#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# make_lookup_images.sh FULL OTHER OUTDIR: the image look-up tests' files from
# the program FULL (built with -g) and OTHER (another build of it):
#   OUTDIR/full/lookup_prog        FULL as built (.symtab, DWARF)
#   OUTDIR/stripped/lookup_prog    strip -s, with a .gnu_debuglink to lookup_prog.debug
#   OUTDIR/debug/lookup_prog.debug objcopy --only-keep-debug (names, lines)
#   OUTDIR/other/lookup_prog       OTHER (another build-id)
#   OUTDIR/mini/lookup_prog        strip -s, its .symtab (no DWARF) xz-compressed in
#                                  .gnu_debugdata (MiniDebugInfo, as Fedora ships); only with xz
set -eu
full=$1 other=$2 out=$3
rm -rf "$out"
mkdir -p "$out/full" "$out/stripped" "$out/debug" "$out/other"
cp "$full" "$out/full/lookup_prog"
cp "$other" "$out/other/lookup_prog"
objcopy --only-keep-debug "$full" "$out/debug/lookup_prog.debug"
cp "$full" "$out/stripped/lookup_prog"
strip -s "$out/stripped/lookup_prog"
if command -v xz >/dev/null; then
  mkdir -p "$out/mini"
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/auxscope-lookup-mini.XXXXXX")
  objcopy --only-keep-debug "$full" "$tmp/mini"
  objcopy --strip-debug "$tmp/mini"
  xz -f "$tmp/mini"
  cp "$full" "$tmp/stripped"
  strip -s "$tmp/stripped"
  objcopy --add-section .gnu_debugdata="$tmp/mini.xz" "$tmp/stripped" "$out/mini/lookup_prog"
  rm -rf "$tmp"
fi
# --add-gnu-debuglink reads the debug file for its CRC: from its own folder.
cd "$out/debug"
objcopy --add-gnu-debuglink=lookup_prog.debug "$out/stripped/lookup_prog"
