// SPDX-License-Identifier: GPL-3.0-or-later
// A tiny JIT, for the JIT code tests: it emits three x86-64 functions into an
// anonymous RWX mapping and tells profilers about them the two ways perf
// documents (tools/perf/Documentation/jit-interface.txt, jitdump-specification.txt):
//   - a perf map, MAPDIR/perf-<pid>.map (MAPDIR: $JIT_PERF_MAP_DIR, else /tmp),
//   - a jitdump, DUMPDIR/jit-<pid>.dump: header, per function a
//     JIT_CODE_DEBUG_INFO (a made-up source, jit_source.js) then a
//     JIT_CODE_LOAD with the code bytes; JIT_CODE_CLOSE at the end. The dump is
//     mapped executable once (the marker mmap perf record looks for).
// Then run_jit() calls jit_outer(N) ITER times, and again until SECONDS passed:
//   jit_outer(n) = jit_add(jit_loop(n), n), jit_loop(n) = n + (n-1) + ... + 1.
// Prints "pid P base 0xADDR" and the sum.
//
// usage: jit_prog DUMPDIR N ITER [SECONDS]
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define JIT_CODE_LOAD 0
#define JIT_CODE_DEBUG_INFO 2
#define JIT_CODE_CLOSE 3

// The system call itself, not the vDSO's clock_gettime: the vDSO has no file a
// decoder could read its code from (a traced run would meet a missing image).
static uint64_t now_ns(void) {
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct fn {
    const char* name;
    uint32_t offset;  // in the code page
    const uint8_t* code;
    uint32_t size;
};

// jit_loop(n): rax = 0; do rax += rdi; while (--rdi); return rax.
static const uint8_t loop_code[] = {
    0x31, 0xc0,        // xor eax, eax
    0x48, 0x01, 0xf8,  // add rax, rdi
    0x48, 0xff, 0xcf,  // dec rdi
    0x75, 0xf8,        // jnz add
    0xc3,              // ret
};
// jit_add(a, b): return a + b.
static const uint8_t add_code[] = {
    0x48, 0x8d, 0x04, 0x37,  // lea rax, [rdi + rsi]
    0xc3,                    // ret
};
enum { OUTER = 0x00, LOOP = 0x40, ADD = 0x80 };
// jit_outer(n): return jit_add(jit_loop(n), n). Call displacements filled in below.
static uint8_t outer_code[] = {
    0x53,                    // push rbx
    0x48, 0x89, 0xfb,        // mov rbx, rdi
    0xe8, 0,    0,    0, 0,  // call jit_loop
    0x48, 0x89, 0xc7,        // mov rdi, rax
    0x48, 0x89, 0xde,        // mov rsi, rbx
    0xe8, 0,    0,    0, 0,  // call jit_add
    0x5b,                    // pop rbx
    0xc3,                    // ret
};

static void put_rel32(uint8_t* code, uint32_t at, uint32_t from, uint32_t to) {
    int32_t rel = (int32_t)to - (int32_t)(from + at + 5);
    memcpy(code + at + 1, &rel, 4);
}

static void put(FILE* f, const void* p, size_t n) {
    if (fwrite(p, 1, n, f) != n) {
        perror("jitdump write");
        exit(1);
    }
}

static void record_header(FILE* f, uint32_t id, uint32_t size) {
    uint64_t ts = now_ns();
    put(f, &id, 4);
    put(f, &size, 4);
    put(f, &ts, 8);
}

typedef uint64_t (*outer_fn)(uint64_t);

// The traced part (auxscope-ptsynth --start run_jit).
__attribute__((noinline)) uint64_t run_jit(outer_fn outer, uint64_t n, uint64_t iter, double seconds) {
    uint64_t sum = 0, done = 0;
    const uint64_t start = seconds > 0 ? now_ns() : 0;
    while (done < iter || (seconds > 0 && (double)(now_ns() - start) < seconds * 1e9)) {
        sum += outer(n);
        ++done;
    }
    return sum;
}

int main(int argc, char** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: jit_prog DUMPDIR N ITER [SECONDS]\n");
        return 2;
    }
    const uint64_t n = strtoull(argv[2], NULL, 0), iter = strtoull(argv[3], NULL, 0);
    const double seconds = argc > 4 ? atof(argv[4]) : 0;
    const long page = sysconf(_SC_PAGESIZE);
    uint8_t* base =
        mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        perror("mmap RWX");
        return 1;
    }
    memset(base, 0xcc, (size_t)page);  // int3 between functions
    put_rel32(outer_code, 4, OUTER, LOOP);
    put_rel32(outer_code, 15, OUTER, ADD);
    const struct fn fns[] = {
        {"jit_outer", OUTER, outer_code, sizeof outer_code},
        {"jit_loop", LOOP, loop_code, sizeof loop_code},
        {"jit_add", ADD, add_code, sizeof add_code},
    };
    for (int i = 0; i < 3; ++i)
        memcpy(base + fns[i].offset, fns[i].code, fns[i].size);
    __builtin___clear_cache((char*)base, (char*)base + page);

    const int pid = getpid();
    char path[4096];
    // The perf map.
    const char* mapdir = getenv("JIT_PERF_MAP_DIR");
    snprintf(path, sizeof path, "%s/perf-%d.map", mapdir && *mapdir ? mapdir : "/tmp", pid);
    FILE* map = fopen(path, "w");
    if (!map) {
        perror(path);
        return 1;
    }
    for (int i = 0; i < 3; ++i)
        fprintf(map, "%lx %x %s\n", (unsigned long)(uintptr_t)(base + fns[i].offset), fns[i].size,
                fns[i].name);
    fclose(map);

    // The jitdump.
    snprintf(path, sizeof path, "%s/jit-%d.dump", argv[1], pid);
    FILE* dump = fopen(path, "w+");
    if (!dump) {
        perror(path);
        return 1;
    }
    const uint32_t header[6] = {0x4A695444, 1, 40, 62 /* EM_X86_64 */, 0, (uint32_t)pid};
    const uint64_t ts = now_ns(), flags = 0;
    put(dump, header, sizeof header);
    put(dump, &ts, 8);
    put(dump, &flags, 8);
    for (int i = 0; i < 3; ++i) {
        const uint64_t addr = (uint64_t)(uintptr_t)(base + fns[i].offset);
        // Debug info: line 10*(i+1) at the first byte, the next line at the last instruction.
        static const char file[] = "jit_source.js";
        const uint64_t entries = 2;
        const uint32_t entry_size = 8 + 4 + 4 + sizeof file;
        record_header(dump, JIT_CODE_DEBUG_INFO, 16 + 16 + (uint32_t)(entries * entry_size));
        put(dump, &addr, 8);
        put(dump, &entries, 8);
        for (uint64_t e = 0; e < entries; ++e) {
            const uint64_t at = addr + (e ? fns[i].size - 1 : 0);
            const int32_t line = 10 * (i + 1) + (int32_t)e, discriminator = 0;
            put(dump, &at, 8);
            put(dump, &line, 4);
            put(dump, &discriminator, 4);
            put(dump, file, sizeof file);
        }
        // The code load, with its bytes.
        const size_t name_size = strlen(fns[i].name) + 1;
        record_header(dump, JIT_CODE_LOAD, (uint32_t)(16 + 4 + 4 + 8 * 4 + name_size + fns[i].size));
        const uint32_t ids[2] = {(uint32_t)pid, (uint32_t)pid};
        const uint64_t load[4] = {addr, addr, fns[i].size,
                                  (uint64_t)i};  // vma, code_addr, code_size, code_index
        put(dump, ids, sizeof ids);
        put(dump, load, sizeof load);
        put(dump, fns[i].name, name_size);
        put(dump, base + fns[i].offset, fns[i].size);
    }
    fflush(dump);
    // perf's marker: the dump mapped executable, so perf record's MMAP2 names it.
    void* marker = mmap(NULL, (size_t)page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fileno(dump), 0);
    if (marker == MAP_FAILED) {
        perror("marker mmap");
        return 1;
    }
    printf("pid %d base %p\n", pid, (void*)base);
    fflush(stdout);

    const uint64_t sum = run_jit((outer_fn)(uintptr_t)(base + OUTER), n, iter, seconds);

    record_header(dump, JIT_CODE_CLOSE, 16);
    fclose(dump);
    munmap(marker, (size_t)page);
    printf("sum %llu\n", (unsigned long long)sum);
    return 0;
}
