// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The functions spans refer to, by a dense id. Ids are handed out while images
// are loaded (before decoding starts), so decoder threads only read the table.
#include <cstdint>
#include <string>
#include <vector>

namespace auxscope {

struct FunctionInfo {
    std::string name;      // demangled; "[unknown] <file>" when the file has no symbol there
    std::string file;      // the image it lives in ("" when none)
    uint64_t address = 0;  // link-time address of its first byte (0 when unknown)
    bool inlined = false;  // a function inlined into others (DWARF), seen as a frame of its own
};

class FunctionTable {
public:
    FunctionTable();  // id 0 is "[unknown]": code outside any known image
    static constexpr uint32_t kUnknown = 0;

    uint32_t add(FunctionInfo info);
    const FunctionInfo& operator[](uint32_t id) const { return functions_.at(id); }
    size_t size() const { return functions_.size(); }

private:
    std::vector<FunctionInfo> functions_;
};

}  // namespace auxscope
