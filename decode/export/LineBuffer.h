// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Text output at decode speed (issue 34): lines appended into one large buffer
// with the bytes printf's integer and string conversions would give ("%3d",
// "%8" PRIu64, "%016" PRIx64, "%-10s", "%*s"), written to the stream in blocks
// of at least `block` bytes (1 MiB) instead of one iostream call per field.
// writeChunksInOrder() formats the pieces of a long listing on several threads
// and writes them in their order.
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <ostream>
#include <string_view>

namespace auxscope {

namespace line_buffer_detail {

inline constexpr char kPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";
[[gnu::always_inline]] inline char* twoDigits(char* p, uint32_t v) {
    std::memcpy(p, kPairs + 2 * v, 2);
    return p + 2;
}
[[gnu::always_inline]] inline char* eightDigits(char* p, uint32_t v) {  // v < 10^8, zero-padded
    const uint32_t hi = v / 10000, lo = v % 10000;
    p = twoDigits(p, hi / 100);
    p = twoDigits(p, hi % 100);
    p = twoDigits(p, lo / 100);
    return twoDigits(p, lo % 100);
}
// "%" PRIu64 at p (room for 20 characters): nanosecond times have 19 digits, so
// they go 8 digits at a time from two divisions instead of one per digit pair.
[[gnu::always_inline]] inline char* decimal(char* p, uint64_t v) {
    if (v < 100000000) return std::to_chars(p, p + 8, uint32_t(v)).ptr;
    if (v < 10000000000000000ull) {
        p = std::to_chars(p, p + 8, uint32_t(v / 100000000)).ptr;
        return eightDigits(p, uint32_t(v % 100000000));
    }
    const uint64_t rest = v % 10000000000000000ull;
    p = std::to_chars(p, p + 4, uint32_t(v / 10000000000000000ull)).ptr;
    p = eightDigits(p, uint32_t(rest / 100000000));
    return eightDigits(p, uint32_t(rest % 100000000));
}

}  // namespace line_buffer_detail

class LineBuffer {
public:
    static constexpr size_t kBlock = size_t(1) << 20;

    // Without a stream the text stays in the buffer (data(), size(), clear()).
    LineBuffer() = default;
    explicit LineBuffer(std::ostream& out, size_t block = kBlock) : out_(&out), block_(block) {
        grow(block + 4096);
    }
    LineBuffer(const LineBuffer&) = delete;
    LineBuffer& operator=(const LineBuffer&) = delete;
    LineBuffer(LineBuffer&&) noexcept = default;
    LineBuffer& operator=(LineBuffer&&) noexcept = default;
    // Writes what is left (flush() first where a write error matters).
    ~LineBuffer() {
        if (out_ && size_) out_->write(data_.get(), std::streamsize(size_));
    }

    // Appending.
    [[gnu::always_inline]] void put(char c) {
        reserve(1);
        data_[size_++] = c;
    }
    [[gnu::always_inline]] void put(std::string_view s) {
        reserve(s.size());
        if (!s.empty()) std::memcpy(data_.get() + size_, s.data(), s.size());
        size_ += s.size();
    }
    void spaces(size_t n) {
        reserve(n);
        std::memset(data_.get() + size_, ' ', n);
        size_ += n;
    }
    // "%" PRIu64, "%" PRId64 / "%d", "%x" / "%" PRIx64.
    [[gnu::always_inline]] void dec(uint64_t v) {
        reserve(20);
        size_ = size_t(line_buffer_detail::decimal(data_.get() + size_, v) - data_.get());
    }
    void dec(int64_t v) { integer(v, 10); }
    void dec(uint32_t v) { integer(v, 10); }
    void dec(int32_t v) { integer(v, 10); }
    void hex(uint64_t v) { integer(v, 16); }
    // "%Nd" / "%N" PRIu64: right-aligned in `width` columns, padded with spaces
    // (a wider number takes the room it needs, as printf does).
    template <typename Int>
    [[gnu::always_inline]] void dec(Int v, int width) {
        padded(v, width, 10, ' ');
    }
    // "%0N" PRIx64: lower-case hex, zero-padded to `width` digits.
    void hex(uint64_t v, int width) { padded(v, width, 16, '0'); }
    // "%-Ns": `s`, then spaces to `width` columns.
    void left(std::string_view s, int width) {
        put(s);
        if (width > 0 && size_t(width) > s.size()) spaces(size_t(width) - s.size());
    }
    // "%*s" with an empty string: |width| spaces (a negative width is the '-' flag).
    void emptyField(int64_t width) {
        const size_t n = size_t(width < 0 ? -width : width);
        if (n > 96) return spaces(n);
        reserve(96);  // one fixed-size fill (a few vector stores), the first n kept
        std::memset(data_.get() + size_, ' ', 96);
        size_ += n;
    }

    // A line is done: writes the buffer out when it holds a block.
    void endLine() {
        put('\n');
        lineDone();
    }
    // The same where the line's end was appended already.
    void lineDone() {
        if (out_ && size_ >= block_) flush();
    }
    // Writes the buffer to the stream (nothing without one); false when the stream failed.
    bool flush() {
        if (!out_) return true;
        if (size_) out_->write(data_.get(), std::streamsize(size_));
        size_ = 0;
        return bool(*out_);
    }

    const char* data() const { return data_.get(); }
    size_t size() const { return size_; }
    std::string_view view() const { return {data_.get(), size_}; }
    void clear() { size_ = 0; }
    void reserve(size_t n) {
        if (capacity_ - size_ < n) [[unlikely]]
            grow(size_ + n);
    }

private:
    template <typename Int>
    void integer(Int v, int base) {
        reserve(24);
        size_ =
            size_t(std::to_chars(data_.get() + size_, data_.get() + size_ + 24, v, base).ptr - data_.get());
    }
    template <typename Int>
    [[gnu::always_inline]] void padded(Int v, int width, int base, char pad) {
        char digits[24];
        char* end = std::to_chars(digits, digits + sizeof digits, v, base).ptr;
        size_t n = size_t(end - digits);
        size_t w = width > 0 ? size_t(width) : 0;
        reserve(n > w ? n : w);
        char* p = data_.get() + size_;
        if (w > n) {
            if (pad == '0' && digits[0] == '-') {  // "%05d" of -1: "-0001"
                *p++ = '-';
                std::memset(p, '0', w - n);
                p += w - n;
                std::memcpy(p, digits + 1, n - 1);
                size_ += w;
                return;
            }
            std::memset(p, pad, w - n);
            p += w - n;
        }
        std::memcpy(p, digits, n);
        size_ += n > w ? n : w;
    }
    void grow(size_t need) {
        size_t cap = capacity_ ? capacity_ : 4096;
        while (cap < need)
            cap *= 2;
        auto bigger = std::make_unique_for_overwrite<char[]>(cap);
        if (size_) std::memcpy(bigger.get(), data_.get(), size_);
        data_ = std::move(bigger);
        capacity_ = cap;
    }

    std::unique_ptr<char[]> data_;
    size_t size_ = 0, capacity_ = 0;
    std::ostream* out_ = nullptr;
    size_t block_ = kBlock;
};

// Calls format(i, buffer) for i in [0, chunks) on `threads` threads (each
// buffer empty, without a stream) and writes the buffers to `out` in the order
// of i, at most a few chunks per thread held at a time. threads <= 1: in turn on
// the calling thread through one buffer. `written(i)`, when given, is called on
// the calling thread once chunk i is out; false from it stops there (no chunk
// after i is written). False when writing failed or `written` stopped it.
bool writeChunksInOrder(size_t chunks, unsigned threads,
                        const std::function<void(size_t, LineBuffer&)>& format, std::ostream& out,
                        const std::function<bool(size_t)>& written = {});

}  // namespace auxscope
