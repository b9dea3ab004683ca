// SPDX-License-Identifier: GPL-3.0-or-later
// map_many_images N SECONDS [DIR]: maps up to N shared libraries found under
// DIR (default /usr/lib, with its subfolders) executable, as a desktop process's
// loader maps its libraries' code, then spins for SECONDS so that a sampling
// recording holds their MMAP2 records and samples. For bench/many-images
// (issue 27: symbol look-up for 1,000 mapped images, first frame <= 1 s).
#define _XOPEN_SOURCE 700
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int wanted, mapped;

static int visit(const char* path, const struct stat* st, int type, struct FTW* ftw) {
    (void)ftw;
    if (mapped >= wanted) return 1;  // enough: stop the walk
    if (type != FTW_F || !S_ISREG(st->st_mode) || st->st_size < 4096) return 0;
    const char* name = strrchr(path, '/');
    if (!strstr(name ? name : path, ".so")) return 0;
    const int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    unsigned char magic[4] = {0};
    if (pread(fd, magic, 4, 0) == 4 && memcmp(magic, "\177ELF", 4) == 0) {
        void* m = mmap(NULL, (size_t)st->st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) ++mapped;
    }
    close(fd);
    return 0;
}

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: map_many_images N SECONDS [DIR]\n");
        return 2;
    }
    wanted = atoi(argv[1]);
    const double seconds = atof(argv[2]);
    const char* dir = argc > 3 ? argv[3] : "/usr/lib";
    if (nftw(dir, visit, 32, FTW_PHYS) < 0) {
        perror(dir);
        return 1;
    }
    printf("map_many_images: %d files under %s mapped executable\n", mapped, dir);
    fflush(stdout);
    volatile unsigned long spin = 0;
    const double end = now() + seconds;
    while (now() < end)
        for (int i = 0; i < 100000; ++i)
            spin += (unsigned long)i;
    return 0;
}
