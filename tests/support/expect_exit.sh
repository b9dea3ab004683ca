#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs a command-line test's command and checks its exit status: ctest's
# PASS_REGULAR_EXPRESSION ignores the status, so an error-path test would pass
# on the right text with the wrong status (a crash after the message, exit 0
# after a refusal). The output passes through unchanged for the test's
# PASS_REGULAR_EXPRESSION; a status other than CODE prints one line that the
# test's FAIL_REGULAR_EXPRESSION (auxscope_expect_exit() in expect_exit.cmake)
# fails on, and exits 1.
# usage: expect_exit.sh CODE COMMAND [ARG...]
code=$1
shift
"$@"
rc=$?
if [ "$rc" -ne "$code" ]; then
    echo "expect_exit: exit status $rc, expected $code: $*"
    exit 1
fi
exit 0
