#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs the ELF/image loader fuzzer (tests/fuzz/ElfFuzzer.cpp) for a bounded time
# over seeds made in a temp dir at test time (no binary is committed): the ELF
# auxscope-ptsynth --generate writes (a static executable), a relocatable object
# compiled here when a C compiler is present (the .ko path), small system
# executables copied from /usr/bin, DynamoRIO's hello from the shared data, and
# the head of /proc/kallsyms (the kallsyms parser). Exit 77 = skipped.
# usage: run_elf_fuzzer.sh TEST_DATA_DIR SECONDS FUZZER PTSYNTH  (FUZZ_RUNS: the run cap)
#        run_elf_fuzzer.sh TEST_DATA_DIR SECONDS --skip REASON
data=$1
seconds=$2
fuzzer=$3
if [ "$fuzzer" = "--skip" ]; then
    echo "SKIPPED: $4"
    exit 77
fi
ptsynth=$4
runs=${FUZZ_RUNS:-5000}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/auxscope-elf-fuzz.XXXXXX") || exit 1
mkdir "$tmp/corpus"
if [ -x "$ptsynth" ]; then
    "$ptsynth" --generate 1 --max-insns 100 --functions 4 -q -o "$tmp/gen.data" >/dev/null 2>&1 &&
        cp "$tmp/gen-code.elf" "$tmp/corpus/seed-ptsynth-code.elf"
fi
if command -v cc >/dev/null 2>&1; then
    printf 'static int g(int x) { return x * 3; }\nint f(int x) { return g(x) + 1; }\nint main(void) { return f(0); }\n' \
        >"$tmp/seed.c"
    cc -O1 -c "$tmp/seed.c" -o "$tmp/corpus/seed-object.o" 2>/dev/null || true
    cc -O1 -s "$tmp/seed.c" -o "$tmp/corpus/seed-stripped" 2>/dev/null || true
fi
for f in /usr/bin/true /usr/bin/env; do
    [ -f "$f" ] && [ "$(wc -c <"$f")" -le 65536 ] && cp "$f" "$tmp/corpus/seed-$(basename "$f")"
done
[ -f "$data/intel-pt/dynamorio-hello/hello" ] && cp "$data/intel-pt/dynamorio-hello/hello" "$tmp/corpus/seed-dynamorio-hello"
head -c 4096 /proc/kallsyms >"$tmp/corpus/seed-kallsyms" 2>/dev/null || true
find "$tmp/corpus" -type f -size -1c -delete
chmod u+w "$tmp/corpus"/* 2>/dev/null
if [ -z "$(ls "$tmp/corpus")" ]; then
    rm -rf "$tmp"
    echo "SKIPPED: no seed ELF could be made or copied"
    exit 77
fi
echo "corpus: $(ls "$tmp/corpus" | tr '\n' ' ')(in $tmp)"
exec sh "$(dirname "$0")/fuzz_run.sh" "$fuzzer" "$seconds" "$tmp" 65536 "$runs"
