# SPDX-License-Identifier: GPL-3.0-or-later
# gui_pixels: renders the trace page and the capture page offscreen for fixed
# inputs and compares two renderings pixel for pixel (issue 26). Not a ctest:
# tools/gui-pixel-check runs it (include()d by tests/CMakeLists.txt).
set(CMAKE_AUTOMOC ON)
add_executable(gui_pixels ${CMAKE_CURRENT_LIST_DIR}/GuiPixels.cpp)
target_link_libraries(gui_pixels PRIVATE auxscope_app Qt6::Test)
add_dependencies(gui_pixels auxscope auxscope-ptsynth)
