#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs a command-line test that reads the real trace data (auxscope_add_data_test()
# in tests/support/test_data.cmake). When the folder is missing it prints one line
# and exits 77, which ctest reports as skipped (SKIP_RETURN_CODE), or exits 1 when
# CI=true or AUXSCOPE_REQUIRE_TEST_DATA=1 make the data required. Same words as
# tests/support/TestData.cpp.
# usage: with_test_data.sh DATA_DIR [-C WORKING_DIR] COMMAND [ARG...]
dir=$1
shift
if [ -d "$dir" ]; then
    if [ "$1" = "-C" ]; then
        cd "$2" || exit 1
        shift 2
    fi
    exec "$@"
fi
what="test data folder $dir is missing (clone shared/ beside the repo; see README)"
by=
case "${CI:-}" in [Tt][Rr][Uu][Ee] | 1) by="CI=true" ;; esac
if [ -z "$by" ]; then
    case "${AUXSCOPE_REQUIRE_TEST_DATA:-}" in [Tt][Rr][Uu][Ee] | 1) by="AUXSCOPE_REQUIRE_TEST_DATA=1" ;; esac
fi
if [ -n "$by" ]; then
    echo "failed: $what; $by requires it"
    exit 1
fi
echo "skipped: $what"
exit 77
