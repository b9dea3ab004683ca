#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Checks that includes inside decode/ only go down the layers decode/CMakeLists.txt
# lists, that nothing in decode/ includes app/, that app/cli/ (no Qt) does not
# include app/gui/, and that app/gui/'s folders include only down: timeline/ (its
# lod/ at the bottom, then its tracks/, then the view and the panes) under
# analysis/ under trace/, and timeline/ under capture/; the main window (app/gui/
# itself) on top; common/ (what every folder may use: what the GUI remembers
# between runs, the examples it makes) at the very bottom. Prints every offending include with file and line; exit 1 if any.
# usage: check_layers.sh REPO_ROOT
set -eu
root=${1:-.}
cd "$root"
allowed() {
    case $1 in
        perfdata) echo "perfdata" ;;
        record) echo "record perfdata" ;;
        sideband) echo "sideband perfdata" ;;
        spans) echo "spans sideband perfdata" ;;
        images) echo "images spans sideband perfdata" ;;
        pt | etm) echo "$1 images spans sideband record perfdata" ;;
        spe) echo "spe sideband perfdata" ;;
        samples) echo "samples spe images spans sideband perfdata" ;;
        export) echo "export samples spe images spans sideband perfdata" ;;
        auxtrace) echo "auxtrace pt etm spe samples export images spans sideband record perfdata" ;;
        *) echo "" ;;
    esac
}
folders="perfdata record sideband spans images pt etm spe samples export auxtrace"
bad=0
checked=0
for dir in decode/*/; do
    part=$(basename "$dir")
    case " $folders " in *" $part "*) ;; *)
        echo "decode/$part/: a folder the layer list does not know (add it to tests/layout/check_layers.sh and decode/CMakeLists.txt)"
        bad=1
        continue ;;
    esac
    ok=$(allowed "$part")
    for f in "$dir"*.h "$dir"*.cpp; do
        [ -e "$f" ] || continue
        checked=$((checked + 1))
        # "folder/File.h" includes only; flat ones are capture/'s headers or system headers.
        grep -n '^#include "[a-z]*/' "$f" | while IFS= read -r line; do
            target=$(printf '%s\n' "$line" | sed 's/^[0-9]*:#include "\([a-z]*\)\/.*/\1/')
            case " $ok " in *" $target "*) ;; *)
                echo "$f:${line%%:*}: decode/$part may not include $target/ ($(printf '%s' "$line" | cut -d: -f2-))"
                echo x >> "${TMPDIR:-/tmp}/check_layers.$$" ;;
            esac
        done
    done
done
for f in app/cli/*.h app/cli/*.cpp; do
    [ -e "$f" ] || continue
    checked=$((checked + 1))
    if grep -n '^#include "gui/\|^#include <Q' "$f"; then
        echo "$f: app/cli/ may not include the Qt GUI"
        bad=1
    fi
done
# app/gui/: "gui/FOLDER/..." includes, by the folder of the including file.
gui_allowed() {
    case $1 in
        common) echo "common" ;;
        timeline) echo "timeline common" ;;
        analysis) echo "analysis timeline common" ;;
        trace) echo "trace analysis timeline common" ;;
        capture) echo "capture timeline common" ;;
        *) echo "" ;;
    esac
}
for f in $(find app/gui -name '*.h' -o -name '*.cpp' | sort); do
    checked=$((checked + 1))
    rel=${f#app/gui/}
    case $rel in */*) ;; *) continue ;; esac  # the main window and the entry: anything below
    part=${rel%%/*}
    ok=$(gui_allowed "$part")
    if [ -z "$ok" ]; then
        echo "$f: app/gui/$part/ is a folder the layer list does not know (add it to tests/layout/check_layers.sh)"
        bad=1
        continue
    fi
    grep -n '^#include "gui/' "$f" | while IFS= read -r line; do
        target=$(printf '%s\n' "$line" | sed 's/^[0-9]*:#include "gui\/\([^"]*\)".*/\1/')
        top=${target%%/*}
        case $target in */*) ;; *) top="" ;; esac
        why=""
        case " $ok " in *" $top "*) ;; *) why="app/gui/$part may not include gui/$target" ;; esac
        # Inside timeline/: lod/ is the bottom (it may name colours), tracks/ do not know the view.
        case $rel in
            timeline/lod/*)
                case $target in timeline/lod/* | timeline/TimelinePalette.h) ;; *)
                    why="timeline/lod/ may include only lod/ and the palette, not gui/$target" ;;
                esac ;;
            timeline/tracks/*)
                case $target in
                    timeline/TimelineView.h | timeline/TimelineInput.h | timeline/TimelineOverlays.h | \
                        timeline/TrackLayout.h | timeline/OverviewStrip.h | timeline/LaneBar.h | \
                        timeline/SearchBar.h)
                        why="timeline/tracks/ may not include gui/$target (the view and its panes are above the tracks)" ;;
                esac ;;
        esac
        if [ -n "$why" ]; then
            echo "$f:${line%%:*}: $why"
            echo x >> "${TMPDIR:-/tmp}/check_layers.$$"
        fi
    done
done
if [ -s "${TMPDIR:-/tmp}/check_layers.$$" ]; then bad=1; fi
rm -f "${TMPDIR:-/tmp}/check_layers.$$"
echo "check_layers: $checked files checked"
exit $bad
