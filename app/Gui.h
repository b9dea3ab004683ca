// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

namespace auxscope {

int runGui(int argc, char** argv);
const char* guiQtVersion();

}  // namespace auxscope
