#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# A man page made from a program's --help text (standard input), so the two never
# disagree: the "usage:" lines become the SYNOPSIS, the first sentence after them
# the NAME line, lines at column 0 that end with ':' subsections, indented lines
# (option tables) stay as laid out, other lines are filled text.
# usage: help2roff.sh NAME VERSION [SUMMARY] < help.txt > NAME.1
#   SUMMARY: the NAME line's text, when the help's first sentence is not one
name=$1
version=$2
awk -v name="$name" -v version="$version" -v given="${3:-}" '
function esc(s) {
    gsub(/\\/, "\\e", s)
    gsub(/-/, "\\-", s)
    if (s ~ /^[.'\'']/) s = "\\&" s
    return s
}
function endnf() { if (nf) { print ".fi"; nf = 0 } }
BEGIN { state = "usage"; nf = 0; summary = "" }
state == "usage" {
    if ($0 ~ /^ *$/) {
        if (nusage) { state = "summary" }
        next
    }
    line = $0
    if (!sub(/^usage: /, "", line)) sub(/^       /, "", line)  # "usage: " is 7 columns
    usage[++nusage] = line
    next
}
{ body[++nbody] = $0 }
# The first sentence of the first paragraph at column 0 (it may run over lines).
state == "summary" && !done && $0 ~ /^[^ ]/ && $0 !~ /:$/ {
    summary = summary (summary == "" ? "" : " ") $0
    if (summary ~ /\.( |$)/) done = 1
    next
}
state == "summary" && summary != "" { done = 1 }
END {
    if (given != "") summary = given
    if (summary == "") summary = name
    sub(/\. .*/, "", summary); sub(/\.$/, "", summary)
    if (length(summary) > 70) sub(/:.*/, "", summary)  # a NAME line stays short
    summary = tolower(substr(summary, 1, 1)) substr(summary, 2)
    print ".TH " toupper(name) " 1 \"\" \"" version "\" \"auxscope manual\""
    print ".SH NAME"
    print esc(name) " \\- " esc(summary)
    print ".SH SYNOPSIS"
    print ".nf"
    for (i = 1; i <= nusage; ++i) print esc(usage[i])
    print ".fi"
    print ".SH DESCRIPTION"
    for (i = 1; i <= nbody; ++i) {
        l = body[i]
        if (l ~ /^ *$/) { endnf(); print ".PP"; continue }
        if (l ~ /^[^ ].*:$/ && length(l) <= 72) { endnf(); sub(/:$/, "", l); print ".SS " esc(l); continue }
        if (l ~ /^ /) { if (!nf) { print ".nf"; nf = 1 } print esc(l); continue }
        endnf(); print esc(l)
    }
    endnf()
    print ".SH SEE ALSO"
    print "\\fBauxscope\\fR(1), \\fBauxscope\\-record\\fR(1), \\fBauxscope\\-info\\fR(1), \\fBauxscope\\-decode\\fR(1),"
    print "\\fBauxscope\\-export\\fR(1), \\fBauxscope\\-report\\fR(1), \\fBauxscope\\-compare\\fR(1), \\fBperf\\fR(1)"
}'
