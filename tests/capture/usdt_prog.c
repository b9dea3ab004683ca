// SPDX-License-Identifier: GPL-3.0-or-later
// A program with USDT probes, for the trigger tests: the notes are written
// here by hand (inline assembly, the layout <sys/sdt.h> uses; no
// systemtap-sdt-dev), so the tests need nothing installed.
//   usdt_prog N
//     N rounds, 20 ms apart. Each round reaches the probe usdt_prog:tick (no
//     semaphore), and, only while its semaphore is set (a tracer registered
//     it), the probe auxscope:trigger, at one of its two sites (alternately).
//     Prints "rounds N semaphore K": K rounds saw the semaphore set.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

// The note of one probe site: owner "stapsdt", type 3; its descriptor: the
// address of the probe's nop, the link-time address of .stapsdt.base, the
// semaphore's address (or 0), then provider, name and argument strings.
#define USDT_STR2(x) #x
#define USDT_STR(x) USDT_STR2(x)
#define USDT_SITE(provider, name, semaphore) \
    __asm__ __volatile__(                                                        \
        "990: nop\n"                                                             \
        ".pushsection .note.stapsdt,\"\",\"note\"\n"                             \
        ".balign 4\n"                                                            \
        ".4byte 992f-991f, 994f-993f, 3\n"                                       \
        "991: .asciz \"stapsdt\"\n"                                              \
        "992: .balign 4\n"                                                       \
        "993: .8byte 990b\n"                                                     \
        ".8byte _.stapsdt.base\n"                                                \
        ".8byte " USDT_STR(semaphore) "\n"                                       \
        ".asciz \"" USDT_STR(provider) "\"\n"                                    \
        ".asciz \"" USDT_STR(name) "\"\n"                                        \
        ".asciz \"\"\n"                                                          \
        "994: .balign 4\n"                                                       \
        ".popsection\n"                                                          \
        ".ifndef _.stapsdt.base\n"                                               \
        ".pushsection .stapsdt.base,\"aG\",\"progbits\",.stapsdt.base,comdat\n"  \
        ".weak _.stapsdt.base\n"                                                 \
        ".hidden _.stapsdt.base\n"                                               \
        "_.stapsdt.base: .space 1\n"                                             \
        ".size _.stapsdt.base, 1\n"                                              \
        ".popsection\n"                                                          \
        ".endif\n" ::                                                            \
            : "memory")

// The semaphore: a 16-bit counter in .probes that the kernel increments in
// this process while a uprobe with its ref_ctr_offset is registered.
__attribute__((section(".probes"), used)) volatile unsigned short auxscope_trigger_semaphore;

static volatile long g_sites[2];

// Two sites of one probe (noipa: the compiler keeps both).
__attribute__((noipa)) static void siteA(void) {
    ++g_sites[0];
    USDT_SITE(auxscope, trigger, auxscope_trigger_semaphore);
}

__attribute__((noipa)) static void siteB(void) {
    USDT_SITE(auxscope, trigger, auxscope_trigger_semaphore);
    ++g_sites[1];
}

int main(int argc, char** argv) {
    const long n = argc > 1 ? atol(argv[1]) : 6;
    long seen = 0;
    for (long i = 0; i < n; ++i) {
        USDT_SITE(usdt_prog, tick, 0);
        if (auxscope_trigger_semaphore) {
            ++seen;
            if (i % 2)
                siteA();
            else
                siteB();
        }
        struct timespec ts = {0, 20 * 1000000L};
        while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) != 0) {
        }
    }
    printf("rounds %ld semaphore %ld\n", n, seen);
    return 0;
}
