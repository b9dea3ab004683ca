#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Turns an executable built with -g and without unwind tables (its CFI only in
# .debug_frame) into one whose CFI is only in its MiniDebugInfo, as Fedora
# ships binaries: the debug sections are stripped and a copy of .debug_frame
# and .symtab, xz-compressed, becomes the .gnu_debugdata section.
# usage: make_minidebuginfo.sh IN OUT
set -eu
in=$1
out=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/auxscope-minidebuginfo.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
objcopy --only-keep-debug "$in" "$tmp/full.debug"
objcopy -R .debug_info -R .debug_abbrev -R .debug_line -R .debug_str -R .debug_aranges -R .debug_rnglists \
    -R .debug_loclists -R .debug_line_str -R .debug_ranges -R .debug_loc "$tmp/full.debug" "$tmp/mini"
xz -f "$tmp/mini"
objcopy --strip-debug "$in" "$tmp/stripped"
objcopy --add-section .gnu_debugdata="$tmp/mini.xz" "$tmp/stripped" "$out"
