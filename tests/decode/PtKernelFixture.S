/* SPDX-License-Identifier: GPL-3.0-or-later */
/* A tiny "kernel" for the kernel-code decode tests (PtKernelTest.cpp): linked
   at kernel addresses (the vmlinux at 0xffffffff81000000, a "kcore" at a
   KASLR-shifted copy), with _text/_stext/_etext like a vmlinux and one
   function in a separate "module" section further up. The labels between
   instructions are where the test's encoded flow goes; the functions are
   STT_FUNC symbols. */
    .text
    .globl _text, _stext, _etext
_text:
_stext:
    .globl kentry
    .type kentry, @function
kentry:
    call kfunc_a
kentry_ret1:
    call kfunc_b
kentry_ret2:
    nop
kentry_end:
    nop
    ud2
    .size kentry, . - kentry

    .globl kfunc_a
    .type kfunc_a, @function
kfunc_a:
    nop
kfunc_a_ret:
    ret
    .size kfunc_a, . - kfunc_a

    .globl kfunc_b
    .type kfunc_b, @function
kfunc_b:
    test %eax, %eax
kfunc_b_jz:
    jz kfunc_b_skip
    nop
kfunc_b_skip:
    call kfunc_a
kfunc_b_ret1:
    call mod_func
kfunc_b_ret2:
    ret
    .size kfunc_b, . - kfunc_b
_etext:

    .section .modtext, "ax", @progbits
    .globl mod_func
    .type mod_func, @function
mod_func:
    nop
mod_func_ret:
    ret
    .size mod_func, . - mod_func
    .section .note.GNU-stack, "", @progbits
