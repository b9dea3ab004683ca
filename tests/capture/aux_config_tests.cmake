# SPDX-License-Identifier: GPL-3.0-or-later
# AUX event configuration (perf's defaults, caps validation) against fake sysfs trees, and
# address filters against a real ELF built here and this machine's /proc/kallsyms.

# The ELF the filter tests resolve symbols in: two static functions named 'helper' (one per
# file) make an ambiguous name; run with --offsets it prints where the kernel sees its functions
# (file offsets, from its own /proc/self/maps), an oracle independent of our ELF reader.
set(_aux_target_src ${CMAKE_CURRENT_BINARY_DIR}/aux_filter_target_src)
file(WRITE ${_aux_target_src}/a.c [=[
#include <stdint.h>
#include <stdio.h>
#include <string.h>
static int helper(int x) { return x * 3 + 1; }
int aux_filter_global(int x) { return helper(x) + 7; }
int b_entry(int x);
void* b_helper_address(void);
static void print_offset(const char* name, void* fn) {
    FILE* maps = fopen("/proc/self/maps", "r");
    char line[4096];
    uintptr_t a = (uintptr_t)fn;
    while (maps && fgets(line, sizeof line, maps)) {
        unsigned long lo, hi, off;
        if (sscanf(line, "%lx-%lx %*s %lx", &lo, &hi, &off) == 3 && a >= lo && a < hi) {
            printf("%s 0x%lx\n", name, (unsigned long)(a - lo + off));
            break;
        }
    }
    if (maps) fclose(maps);
}
int main(int argc, char** argv) {
    if (argc > 1 && strcmp(argv[1], "--offsets") == 0) {
        print_offset("aux_filter_global", (void*)aux_filter_global);
        print_offset("b_entry", (void*)b_entry);
        print_offset("helper_a", (void*)helper);
        print_offset("helper_b", b_helper_address());
        return 0;
    }
    return aux_filter_global(argc) + b_entry(argc) > 0 ? 0 : 1;
}
]=])
file(WRITE ${_aux_target_src}/b.c [=[
static int helper(int x) { return x * 5 + 2; }
int b_entry(int x) { return helper(x) - 1; }
void* b_helper_address(void) { return (void*)helper; }
]=])
add_executable(aux_filter_target ${_aux_target_src}/a.c ${_aux_target_src}/b.c)
# Not position-independent: its symbols' addresses (0x40xxxx) then differ from their file
# offsets, which is what the kernel wants, so the conversion between them is exercised.
target_compile_options(aux_filter_target PRIVATE -O0 -fno-inline -fno-pie)
target_link_options(aux_filter_target PRIVATE -no-pie)
set_target_properties(aux_filter_target PROPERTIES AUTOMOC OFF)

add_executable(capture_aux_config_tests ${CMAKE_CURRENT_LIST_DIR}/AuxEventConfigTest.cpp)
target_link_libraries(capture_aux_config_tests PRIVATE auxscope_capture GTest::gtest_main)
target_compile_definitions(capture_aux_config_tests PRIVATE
  AUX_FILTER_TARGET="$<TARGET_FILE:aux_filter_target>")
add_dependencies(capture_aux_config_tests aux_filter_target)
gtest_discover_tests(capture_aux_config_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 60)
