#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The man pages made at build time (packaging/help2roff.sh) against the built
# programs' own help: each page renders with man(1) without a groff warning, has
# NAME, SYNOPSIS and DESCRIPTION, its SYNOPSIS holds the help's usage lines, and
# every option the help names (--long and -x) is in the rendered page.
# usage: man_pages_test.sh MAN_DIR AUXSCOPE PTSYNTH ETMSNAP SPESYNTH
man_dir=$1 auxscope=$2 ptsynth=$3 etmsnap=$4 spesynth=$5
if ! command -v man >/dev/null; then
    echo "man_pages_test: man (man-db) is not installed: .ci/setup installs it" >&2
    exit 1
fi
fail=0
check() { # PAGE HELP-COMMAND...
    local page=$1 file=$man_dir/$1.1.gz
    shift
    if [ ! -s "$file" ]; then
        echo "FAIL $page: $file is missing or empty"
        fail=1
        return
    fi
    local help rendered warnings
    help=$("$@" 2>&1)
    warnings=$(MANWIDTH=200 man --warnings=all -l "$file" 2>&1 >/dev/null)
    if [ -n "$warnings" ]; then
        echo "FAIL $page: groff warnings:"
        echo "$warnings" | head -5
        fail=1
    fi
    # MANWIDTH wide enough that no help line is broken again; hyphenation and
    # justification off so words stay as the help writes them.
    rendered=$(MANWIDTH=200 MANROFFOPT='-rHY=0' man -l "$file" 2>/dev/null | col -bx)
    for section in NAME SYNOPSIS DESCRIPTION; do
        grep -q "^$section\$" <<<"$rendered" || { echo "FAIL $page: no $section section"; fail=1; }
    done
    grep -q "^ *$page - " <<<"$rendered" || { echo "FAIL $page: NAME line is not '$page - ...'"; fail=1; }
    # The first usage line (after "usage: ") is in the SYNOPSIS as written.
    local usage
    usage=$(head -1 <<<"$help" | sed 's/^usage: *//; s/  */ /g; s/ *$//')
    if ! tr -s ' ' <<<"$rendered" | grep -qF -- "$usage"; then
        echo "FAIL $page: SYNOPSIS lacks the usage line: $usage"
        fail=1
    fi
    local opt missing=0
    for opt in $(grep -oE '(^|[ [,(])--?[A-Za-z][A-Za-z0-9-]*' <<<"$help" | sed 's/^[ [,(]//' | sort -u); do
        if ! grep -qF -- "$opt" <<<"$rendered"; then
            echo "FAIL $page: option $opt of the help is not in the page"
            missing=1
        fi
    done
    [ $missing -eq 0 ] || fail=1
    echo "ok $page: $(wc -l <<<"$rendered") lines, $(grep -oE '(^|[ [,(])--?[A-Za-z][A-Za-z0-9-]*' <<<"$help" | sort -u | wc -l) options"
}
check auxscope "$auxscope" --help
for cmd in record info decode export report compare; do
    check "auxscope-$cmd" "$auxscope" help "$cmd"
done
check auxscope-ptsynth "$ptsynth" --help
check auxscope-etmsnap "$etmsnap" --help
check auxscope-spesynth "$spesynth" --help
# No page is left over from a command that is gone.
pages=$(ls "$man_dir"/*.1.gz | wc -l)
[ "$pages" -eq 10 ] || { echo "FAIL: $pages pages in $man_dir, expected 10"; fail=1; }
exit $fail
