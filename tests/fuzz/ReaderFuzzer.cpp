// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer harness for the perf.data reader: any bytes are opened, walked and
// summarized (text and JSON, as `auxscope info` prints them). Built with clang
// and AddressSanitizer/UBSan by tests/fuzz/reader_fuzz.cmake.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "cli/InfoCommand.h"
#include "perfdata/PerfDataReader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto reader = auxscope::PerfDataReader::fromBytes(std::vector<uint8_t>(data, data + size), "fuzz.data");
    if (!reader.ok()) {
        if (reader.error().message.empty()) std::abort();
        return 0;
    }
    const auto& r = *reader;
    uint64_t records = 0, touched = 0;
    (void)r.forEachRecord([&](const auxscope::PerfRecord& rec) {
        ++records;
        // Touch every byte the reader hands out, so ASan sees any span past its buffer.
        for (uint8_t b : rec.bytes)
            touched += b;
        for (uint8_t b : rec.payload)
            touched += b;
        if (rec.bytes.size() != rec.header.size) std::abort();
        return true;
    });
    // The walk and the summary see the same records.
    if (records != r.summary().records) std::abort();
    for (const auto& b : r.summary().auxtrace) {
        if (b.compressed) continue;
        for (uint8_t x : r.fileBytes(b.dataOffset, b.available))
            touched += x;
    }
    for (const auto& issue : r.issues())
        if (issue.message.empty() || issue.cause.empty()) std::abort();
    const std::string text = auxscope::formatInfo(r) + auxscope::formatInfoJson(r);
    return text.empty() && touched == 1 ? 1 : 0;
}
