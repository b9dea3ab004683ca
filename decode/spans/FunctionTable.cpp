// SPDX-License-Identifier: GPL-3.0-or-later
#include "spans/FunctionTable.h"

namespace auxscope {

FunctionTable::FunctionTable() {
    functions_.push_back({"[unknown]", "", 0});
}

uint32_t FunctionTable::add(FunctionInfo info) {
    functions_.push_back(std::move(info));
    return static_cast<uint32_t>(functions_.size() - 1);
}

}  // namespace auxscope
