// SPDX-License-Identifier: GPL-3.0-or-later
// Dynamically linked: calls into libc through the PLT (lazy binding runs the
// dynamic linker's resolver), a libc function calling back into the program
// (qsort), and output through write.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compare(const void* a, const void* b) {
    const int x = *(const int*)a, y = *(const int*)b;
    return (x > y) - (x < y);
}

int main(void) {
    int values[24];
    for (int i = 0; i < 24; ++i)
        values[i] = (i * 7919) % 101;
    qsort(values, 24, sizeof values[0], compare);
    char line[64];
    snprintf(line, sizeof line, "min %d max %d len %zu\n", values[0], values[23], strlen("ptsynth"));
    fputs(line, stdout);
    return 0;
}
