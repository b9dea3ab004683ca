// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/lod/TimelineSummaries.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <thread>

namespace auxscope {

TimelineSummaries buildTimelineSummaries(const TimelineData& data) {
    // The summaries, once per store, on a few threads when there is much to read.
    using Clock = std::chrono::steady_clock;
    const auto started = Clock::now();
    TimelineSummaries out;
    const size_t n = data.threads.size();
    auto& lods = out.threads;
    lods.resize(n);
    size_t total = 0;
    for (const auto& t : data.threads)
        total += t.spans.size();
    const unsigned workers =
        total > 1'000'000 ? std::min<unsigned>(unsigned(n), std::max(1u, std::thread::hardware_concurrency()))
                          : 1;
    if (workers > 1) {
        std::atomic<size_t> next{0};
        std::vector<std::future<void>> jobs;
        for (unsigned w = 0; w < workers; ++w)
            jobs.push_back(std::async(std::launch::async, [&] {
                for (size_t i; (i = next++) < n;)
                    lods[i] = buildSpanLod(data.threads[i].spans, data.decodedEnd);
            }));
        for (auto& j : jobs)
            j.get();
    } else {
        for (size_t i = 0; i < n; ++i)
            lods[i] = buildSpanLod(data.threads[i].spans, data.decodedEnd);
    }
    const auto threadsDone = Clock::now();
    for (const auto& [cpu, slices] : data.cpus) {
        auto& lod = out.cpus[cpu];
        lod = buildCpuLod(slices);
        out.stats.cpuSlices += slices.size();
        out.stats.cpuBytes += lod->bytes();
    }
    out.stats.spans = total;
    for (const auto& lod : lods)
        out.stats.threadBytes += lod->bytes();
    out.stats.threadMs = std::chrono::duration<double, std::milli>(threadsDone - started).count();
    out.stats.cpuMs = std::chrono::duration<double, std::milli>(Clock::now() - threadsDone).count();
    return out;
}

}  // namespace auxscope
