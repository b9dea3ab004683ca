// SPDX-License-Identifier: GPL-3.0-or-later
#include "export/LineBuffer.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace auxscope {

bool writeChunksInOrder(size_t chunks, unsigned threads,
                        const std::function<void(size_t, LineBuffer&)>& format, std::ostream& out,
                        const std::function<bool(size_t)>& written) {
    if (threads <= 1 || chunks <= 1) {
        LineBuffer buffer;
        for (size_t i = 0; i < chunks; ++i) {
            buffer.clear();
            format(i, buffer);
            out.write(buffer.data(), std::streamsize(buffer.size()));
            if (!out || (written && !written(i))) return false;
        }
        return bool(out);
    }
    threads = unsigned(std::min<size_t>(threads, chunks));
    // A ring of slots: chunk i is formatted into slot i % slots once the writer
    // has written chunk i - slots; the writer takes them in order.
    const size_t slots = size_t(threads) * 3;
    // A slot to a cache line pair of its own: two threads format into
    // neighbouring slots at once, and a LineBuffer's size is written at every
    // field (shared lines made two formatting threads as slow as one).
    struct alignas(128) Slot {
        LineBuffer buffer;
        size_t chunk = SIZE_MAX;  // the chunk it holds once formatted
    };
    std::vector<Slot> ring(slots);
    std::mutex mutex;
    std::condition_variable formatted, roomMade;
    size_t writtenUpTo = 0;  // chunks [0, writtenUpTo) are out
    std::atomic<size_t> next{0};
    bool failed = false;
    auto work = [&] {
        for (;;) {
            const size_t i = next.fetch_add(1, std::memory_order_relaxed);
            if (i >= chunks) return;
            Slot& slot = ring[i % slots];
            {
                std::unique_lock lock(mutex);
                roomMade.wait(lock, [&] { return writtenUpTo + slots > i || failed; });
                if (failed) return;
            }
            slot.buffer.clear();
            format(i, slot.buffer);
            {
                std::lock_guard lock(mutex);
                slot.chunk = i;
            }
            formatted.notify_all();
        }
    };
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (unsigned t = 0; t < threads; ++t)
        pool.emplace_back(work);
    for (size_t i = 0; i < chunks && !failed; ++i) {
        Slot& slot = ring[i % slots];
        {
            std::unique_lock lock(mutex);
            formatted.wait(lock, [&] { return slot.chunk == i; });
        }
        out.write(slot.buffer.data(), std::streamsize(slot.buffer.size()));
        const bool goOn = out && (!written || written(i));
        {
            std::lock_guard lock(mutex);
            if (!goOn) failed = true;
            writtenUpTo = i + 1;
        }
        roomMade.notify_all();
    }
    for (std::thread& t : pool)
        t.join();
    return !failed && bool(out);
}

}  // namespace auxscope
