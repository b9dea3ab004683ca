// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The functions the compiler inlined at an address, for showing them as frames
// of their own (as perf report and hotspot do): the DW_TAG_inlined_subroutine
// DIEs around the innermost scope holding the address in its file's DWARF (the
// compile unit libdwfl finds for it, in the file or its separate debug file
// found the standard way), up to the function they were inlined into, each
// named by its abstract origin (linkage name demangled, else DW_AT_name) with
// the place it was inlined at (DW_AT_call_file, DW_AT_call_line).
//
// Thread-safe after construction: each thread asks through a Worker of its own,
// which opens each file once and keeps every answer by (file, address) (and
// each process's mappings as the resolver first gave them: after
// ImageResolver::update(), make new Workers).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace auxscope {

class ImageResolver;

struct InlineFrame {
    std::string_view function;  // the inlined function, demangled
    std::string_view callFile;  // the source file of the call it replaced ("" when DWARF does not say)
    uint32_t callLine = 0;      // ... and its line (0: unknown)
};

class InlineFrames {
public:
    explicit InlineFrames(const ImageResolver& images);
    ~InlineFrames();
    InlineFrames(const InlineFrames&) = delete;
    InlineFrames& operator=(const InlineFrames&) = delete;

    class Worker;
    std::unique_ptr<Worker> worker() const;

    // The functions inlined at `address` in `pid`, outermost first: the first
    // was inlined into the function the address's symbol names, each next one
    // into the one before, the last is the code at `address`. Empty where
    // nothing is inlined, the file has no DWARF, or no file maps the address.
    // Valid until the next call with the same Worker; the strings as long as the Worker.
    std::span<const InlineFrame> at(Worker& w, int32_t pid, uint64_t address) const;

private:
    const ImageResolver& images_;
};

class InlineFrames::Worker {
public:
    ~Worker();
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;
    struct Impl;

private:
    friend class InlineFrames;
    explicit Worker(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> d_;
};

}  // namespace auxscope
