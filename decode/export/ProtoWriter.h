// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A minimal protocol-buffers wire-format encoder (varint, 64-bit and
// length-delimited fields), enough to write Perfetto traces without a code
// generator.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace auxscope {

class ProtoWriter {
public:
    void varint(uint64_t v) {
        while (v >= 0x80) {
            buf_.push_back(char(v | 0x80));
            v >>= 7;
        }
        buf_.push_back(char(v));
    }
    void tag(uint32_t field, uint32_t wireType) { varint(uint64_t(field) << 3 | wireType); }
    void u64(uint32_t field, uint64_t v) {
        tag(field, 0);
        varint(v);
    }
    // int32/int64 fields: negative values are sign-extended to 64 bits (not zigzag).
    void i64(uint32_t field, int64_t v) { u64(field, uint64_t(v)); }
    void boolean(uint32_t field, bool v) { u64(field, v ? 1 : 0); }
    void dbl(uint32_t field, double v) {
        tag(field, 1);
        char b[8];
        std::memcpy(b, &v, 8);
        buf_.append(b, 8);
    }
    void str(uint32_t field, std::string_view s) {
        tag(field, 2);
        varint(s.size());
        buf_.append(s.data(), s.size());
    }
    void msg(uint32_t field, const ProtoWriter& m) { str(field, m.buf_); }

    const std::string& bytes() const { return buf_; }
    void clear() { buf_.clear(); }

private:
    std::string buf_;
};

}  // namespace auxscope
