// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Counts the C++ allocations of the whole program (every standard container and
// string allocates through operator new): replaces the global operator new and
// delete. Include it in ONE source file of a test or benchmark binary only.
// allocations(): the process's totals so far; threadAllocations(): the calling
// thread's. Relaxed atomics: cheap beside malloc itself.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace auxscope::testsupport {

struct AllocationCount {
    uint64_t news = 0, deletes = 0, bytes = 0;
    AllocationCount operator-(const AllocationCount& o) const {
        return {news - o.news, deletes - o.deletes, bytes - o.bytes};
    }
};

namespace detail {
inline std::atomic<uint64_t> gNews{0}, gDeletes{0}, gBytes{0};
inline thread_local AllocationCount tCount;
inline void* countedNew(std::size_t n, std::size_t align) {
    gNews.fetch_add(1, std::memory_order_relaxed);
    gBytes.fetch_add(n, std::memory_order_relaxed);
    ++tCount.news, tCount.bytes += n;
    if (n == 0) n = 1;
    void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align)
                                                : std::malloc(n);
    return p;
}
inline void countedDelete(void* p) {
    if (!p) return;
    gDeletes.fetch_add(1, std::memory_order_relaxed);
    ++tCount.deletes;
    std::free(p);
}
}  // namespace detail

inline AllocationCount allocations() {
    return {detail::gNews.load(std::memory_order_relaxed), detail::gDeletes.load(std::memory_order_relaxed),
            detail::gBytes.load(std::memory_order_relaxed)};
}
inline AllocationCount threadAllocations() {
    return detail::tCount;
}

}  // namespace auxscope::testsupport

void* operator new(std::size_t n) {
    if (void* p = auxscope::testsupport::detail::countedNew(n, 0)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
    return operator new(n);
}
void* operator new(std::size_t n, std::align_val_t a) {
    if (void* p = auxscope::testsupport::detail::countedNew(n, std::size_t(a))) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) {
    return operator new(n, a);
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
    return auxscope::testsupport::detail::countedNew(n, 0);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
    return auxscope::testsupport::detail::countedNew(n, 0);
}
void operator delete(void* p) noexcept {
    auxscope::testsupport::detail::countedDelete(p);
}
void operator delete[](void* p) noexcept {
    auxscope::testsupport::detail::countedDelete(p);
}
void operator delete(void* p, std::size_t) noexcept {
    auxscope::testsupport::detail::countedDelete(p);
}
void operator delete[](void* p, std::size_t) noexcept {
    auxscope::testsupport::detail::countedDelete(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
    auxscope::testsupport::detail::countedDelete(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
    auxscope::testsupport::detail::countedDelete(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
    auxscope::testsupport::detail::countedDelete(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
    auxscope::testsupport::detail::countedDelete(p);
}
