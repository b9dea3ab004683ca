// SPDX-License-Identifier: GPL-3.0-or-later
// The code behind PtDecodeTest's synthetic Intel PT trace: a call chain whose
// every instruction is known, so the test can state exact instruction counts.
// Never run; the test maps this file and encodes a trace through it.
//   main: push, call f, pop, ret          (4 instructions)
//   f:    mov, call g, add, ret           (4)
//   g:    lea, jmp h                      (2: a tail call)
//   h:    nop, ret                        (2)
__asm__(R"(
    .text
    .globl main
    .type main, @function
main:
    push %rbp
    call f
    pop %rbp
    ret
    .size main, .-main
    .globl f
    .type f, @function
f:
    mov $1, %eax
    call g
    add $1, %eax
    ret
    .size f, .-f
    .globl g
    .type g, @function
g:
    lea 3(%rdi), %eax
    jmp h
    .size g, .-g
    .globl h
    .type h, @function
h:
    nop
    ret
    .size h, .-h
)");
