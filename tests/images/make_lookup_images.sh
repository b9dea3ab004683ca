#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# make_lookup_images.sh FULL OTHER OUTDIR: the image look-up tests' files from
# the program FULL (built with -g) and OTHER (another build of it):
#   OUTDIR/full/lookup_prog        FULL as built (.symtab, DWARF)
#   OUTDIR/stripped/lookup_prog    strip -s, with a .gnu_debuglink to lookup_prog.debug
#   OUTDIR/debug/lookup_prog.debug objcopy --only-keep-debug (names, lines)
#   OUTDIR/other/lookup_prog       OTHER (another build-id)
set -eu
full=$1 other=$2 out=$3
rm -rf "$out"
mkdir -p "$out/full" "$out/stripped" "$out/debug" "$out/other"
cp "$full" "$out/full/lookup_prog"
cp "$other" "$out/other/lookup_prog"
objcopy --only-keep-debug "$full" "$out/debug/lookup_prog.debug"
cp "$full" "$out/stripped/lookup_prog"
strip -s "$out/stripped/lookup_prog"
# --add-gnu-debuglink reads the debug file for its CRC: from its own folder.
cd "$out/debug"
objcopy --add-gnu-debuglink=lookup_prog.debug "$out/stripped/lookup_prog"
