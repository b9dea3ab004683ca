// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Pieces of PerfDataReader shared by its source files; not part of the API.
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "perfdata/PerfDataReader.h"

namespace auxscope::perfdata_detail {

// Bounded little-endian reads from bytes that came from a file: every read
// checks what is left, so damaged lengths can never read past the end.
class ByteCursor {
public:
    explicit ByteCursor(std::span<const uint8_t> bytes) : b_(bytes) {}
    size_t left() const { return b_.size() - pos_; }
    size_t pos() const { return pos_; }
    template <typename T>
    bool read(T& v) {
        if (left() < sizeof(T)) return false;
        std::memcpy(&v, b_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return true;
    }
    bool skip(size_t n) {
        if (left() < n) return false;
        pos_ += n;
        return true;
    }
    bool take(size_t n, std::span<const uint8_t>& out) {
        if (left() < n) return false;
        out = b_.subspan(pos_, n);
        pos_ += n;
        return true;
    }
    std::span<const uint8_t> rest() const { return b_.subspan(pos_); }
    // perf_header_string: u32 len, then len bytes holding a NUL-terminated string.
    bool perfString(std::string& s);

private:
    std::span<const uint8_t> b_;
    size_t pos_ = 0;
};

// The string in `bytes` up to its first NUL (or all of it).
std::string cString(std::span<const uint8_t> bytes);

// Decodes one feature's bytes into `out` (features decoded earlier, such as
// NRCPUS, may be used). Returns the cause when the bytes do not decode; the
// caller then keeps them raw. Features this reader does not decode return
// nullopt without touching `out` and set `decoded` false.
std::optional<std::string> decodeFeature(unsigned id, std::span<const uint8_t> bytes, PerfFeatures& out,
                                         bool& decoded);

// One build-id entry (HEADER_BUILD_ID feature or PERF_RECORD_HEADER_BUILD_ID),
// header included; `size` is header.size.
std::optional<std::string> decodeBuildIdEntry(std::span<const uint8_t> entry, PerfBuildId& out);

}  // namespace auxscope::perfdata_detail
