// SPDX-License-Identifier: GPL-3.0-or-later
#include "images/CodeAnnotation.h"

#include "images/DwflDebugFile.h"

#include <capstone/capstone.h>
#include <elfutils/libdwfl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <unordered_map>

#include "images/ElfSymbols.h"

namespace auxscope {
namespace {

constexpr uint64_t kMaxBytes =
    256 * 1024;  // scanned either side of the executed code for the function's ends

struct Arch {
    cs_arch arch;
    cs_mode mode;
    const char* name;
};

// The ELF machine of `path` (e_machine), 0 when it is not an ELF file.
unsigned elfMachine(const std::string& path, bool& is64) {
    std::ifstream in(path, std::ios::binary);
    unsigned char h[20] = {};
    if (!in.read(reinterpret_cast<char*>(h), sizeof h) || std::memcmp(h,
                                                                      "\x7f"
                                                                      "ELF",
                                                                      4) != 0)
        return 0;
    is64 = h[4] == 2;
    return h[5] == 2 ? (unsigned(h[18]) << 8 | h[19]) : (unsigned(h[19]) << 8 | h[18]);
}

std::optional<Arch> archOf(unsigned machine, bool is64, bool thumb) {
    switch (machine) {
        case 62:  // EM_X86_64
            return Arch{CS_ARCH_X86, CS_MODE_64, "x86-64"};
        case 3:  // EM_386
            return Arch{CS_ARCH_X86, CS_MODE_32, "i386"};
        case 183:  // EM_AARCH64
            return Arch{CS_ARCH_ARM64, CS_MODE_ARM, "AArch64"};
        case 40:  // EM_ARM
            return thumb ? Arch{CS_ARCH_ARM, CS_MODE_THUMB, "Thumb"} : Arch{CS_ARCH_ARM, CS_MODE_ARM, "Arm"};
        default:
            (void)is64;
            return std::nullopt;
    }
}

// The target of an unconditional direct jump or call ("jmp 0x401000", AArch64/Arm "b #0x..."), else 0.
uint64_t directJumpTarget(const char* mnemonic, const char* ops) {
    // Direct calls too: a block the decoder runs through a call goes on in the callee.
    if (std::strcmp(mnemonic, "jmp") != 0 && std::strcmp(mnemonic, "b") != 0 &&
        std::strcmp(mnemonic, "call") != 0 && std::strcmp(mnemonic, "bl") != 0)
        return 0;
    if (*ops == '#') ++ops;
    if (ops[0] != '0' || ops[1] != 'x') return 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(ops, &end, 16);
    return end && *end == '\0' ? uint64_t(v) : 0;
}

std::string hexBytes(const uint8_t* b, size_t n) {
    std::string out;
    char buf[4];
    for (size_t i = 0; i < n; ++i) {
        std::snprintf(buf, sizeof buf, i ? " %02x" : "%02x", b[i]);
        out += buf;
    }
    return out;
}

// Source lines through libdwfl: the ELF (and its separate debug file) reported offline.
class SourceLines {
public:
    // `debugFile`: the separate debug file the resolver found ("" : none) when
    // it `searched`, else libdwfl's standard search.
    SourceLines(const std::string& path, const std::string& debugFile, bool searched)
        : debugFile_{debugFile} {
        static const Dwfl_Callbacks callbacks = {dwfl_build_id_find_elf, findResolvedDebuginfo,
                                                 dwfl_offline_section_address, nullptr};
        dwfl_ = dwfl_begin(&callbacks);
        if (!dwfl_) return;
        module_ = dwfl_report_offline(dwfl_, "", path.c_str(), -1);
        dwfl_report_end(dwfl_, nullptr, nullptr);
        if (searched) setDwflDebugFile(module_, debugFile_);
        if (module_) {
            Dwarf_Addr bias = 0;
            hasDwarf_ = dwfl_module_getdwarf(module_, &bias) != nullptr;
            Dwarf_Addr elfBias = 0;
            if (dwfl_module_getelf(module_, &elfBias)) bias_ = elfBias;
        }
    }
    ~SourceLines() {
        if (dwfl_) dwfl_end(dwfl_);
    }
    bool ok() const { return module_ && hasDwarf_; }
    // File and line of link-time address `vaddr`.
    bool at(uint64_t vaddr, std::string& file, int& line) const {
        if (!ok()) return false;
        Dwfl_Line* l = dwfl_module_getsrc(module_, vaddr + bias_);
        if (!l) return false;
        int lineNo = 0;
        const char* name = dwfl_lineinfo(l, nullptr, &lineNo, nullptr, nullptr, nullptr);
        if (!name || lineNo <= 0) return false;
        file = name;
        line = lineNo;
        return true;
    }

private:
    DwflDebugFile debugFile_;
    Dwfl* dwfl_ = nullptr;
    Dwfl_Module* module_ = nullptr;
    Dwarf_Addr bias_ = 0;
    bool hasDwarf_ = false;
};

}  // namespace

Expected<AnnotatedCode> annotateFunction(const ImageResolver& images, const FunctionTable& functions,
                                         int32_t pid, uint32_t function,
                                         const std::vector<ExecutedBlock>& blocks) {
    AnnotatedCode out;
    out.function = function;
    out.pid = pid;
    if (function < functions.size()) {
        out.name = functions[function].name;
        out.image = functions[function].file;
    }
    const std::string what =
        "code of " + (out.name.empty() ? "function " + std::to_string(function) : out.name);
    if (blocks.empty()) return makeError(what + ": not executed in the range (no flow blocks)");
    // The executed extent, then the function's ends around it.
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const ExecutedBlock& b : blocks) {
        lo = std::min(lo, b.ip);
        hi = std::max(hi, b.endIp);
        out.blockInstructions += b.count * b.instructions;
    }
    const bool known = function != FunctionTable::kUnknown && out.name.rfind("[unknown]", 0) != 0;
    // endIp is the last instruction's first byte: room for it (x86 instructions are up to 15 bytes).
    uint64_t begin = lo, end = hi + 16;
    if (known) {
        while (begin > 0 && lo - (begin - 1) <= kMaxBytes && images.functionAt(pid, begin - 1) == function)
            --begin;
        end = hi + 1;
        while (end - hi <= kMaxBytes && images.functionAt(pid, end) == function)
            ++end;
        end = std::max(end, hi + 1);  // the symbol covers the last instruction's bytes
    }
    // The file holding the code, for its machine and its source lines.
    std::string path;
    uint64_t fileOffset = 0;
    for (const auto& s : images.codeSections(pid))
        if (begin >= s.vaddr && begin < s.vaddr + s.size && s.path) {
            path = *s.path;
            fileOffset = s.offset + (begin - s.vaddr);
        }
    if (path.empty())
        return makeError(what + ": no code image holds address 0x" + [&] {
            char b[20];
            std::snprintf(b, sizeof b, "%llx", (unsigned long long)begin);
            return std::string(b);
        }());
    // JIT code from a jitdump: the machine its header names, lines from its debug info.
    const auto jit = images.jitSourceAt(pid, begin);
    bool is64 = true;
    const unsigned machine = jit ? jit->machine : elfMachine(path, is64);
    if (jit) is64 = machine != 3 && machine != 40;  // EM_386, EM_ARM
    const bool thumb = machine == 40 && function < functions.size() && (functions[function].address & 1);
    auto arch = archOf(machine, is64, thumb);
    if (!arch)
        return makeError(what + ": " + path +
                         ": not an ELF file of an instruction set auxscope disassembles (machine " +
                         std::to_string(machine) + ")");
    out.arch = arch->name;
    if (thumb) begin &= ~uint64_t(1);
    csh cs = 0;
    if (cs_open(arch->arch, arch->mode, &cs) != CS_ERR_OK)
        return makeError(what + ": capstone cannot open " + out.arch);
    cs_insn* insn = cs_malloc(cs);
    // Disassemble [begin, end) once, linearly.
    std::vector<uint8_t> code(end - begin);
    const size_t got = images.readSome(pid, begin, code.data(), code.size());
    code.resize(got);
    if (got < end - begin) out.notes.push_back("code image ends before the function does");
    std::unordered_map<uint64_t, size_t> at;  // address -> instruction index
    const size_t badStep = arch->arch == CS_ARCH_X86 ? 1 : arch->mode == CS_MODE_THUMB ? 2 : 4;
    {
        const uint8_t* p = code.data();
        size_t size = code.size();
        uint64_t address = begin;
        while (size > 0) {
            if (!cs_disasm_iter(cs, &p, &size, &address, insn)) {
                // Not an instruction capstone knows (data, padding, a newer extension):
                // shown as such, one instruction slot (Arm: its fixed width; x86: a byte).
                const size_t step = std::min<size_t>(size, badStep);
                AnnotatedInstruction a;
                a.address = address;
                a.size = uint32_t(step);
                a.bytes = hexBytes(p, step);
                a.text = "(unknown to capstone)";
                at[address] = out.instructions.size();
                out.instructions.push_back(std::move(a));
                p += step, size -= step, address += step;
                continue;
            }
            AnnotatedInstruction a;
            a.address = insn->address;
            a.size = insn->size;
            a.bytes = hexBytes(insn->bytes, insn->size);
            a.text = std::string(insn->mnemonic) + (insn->op_str[0] ? " " : "") + insn->op_str;
            a.jumpTarget = directJumpTarget(insn->mnemonic, insn->op_str);
            at[a.address] = out.instructions.size();
            out.instructions.push_back(std::move(a));
        }
    }
    out.begin = begin, out.end = begin + got;
    // Each distinct block: its instructions from ip through endIp (as many as the
    // decoder counted) get its count.
    uint64_t badBlocks = 0;
    for (const ExecutedBlock& b : blocks) {
        uint64_t address = b.ip, n = 0;
        bool done = false;
        while (n < b.instructions) {
            auto it = at.find(address);
            if (it == at.end()) break;  // outside the function, or misaligned with the linear disassembly
            AnnotatedInstruction& a = out.instructions[it->second];
            a.count += b.count;
            ++n;
            if (address == b.endIp) {
                done = true;
                break;
            }
            // A block goes on across an unconditional direct jump (the decoder
            // follows it without a branch packet): at its target.
            address = a.jumpTarget ? a.jumpTarget : address + a.size;
        }
        if (!done) {
            // Decode the rest of the block on its own (code reached by a jump into an instruction
            // the linear pass read differently, or past the function's end).
            std::vector<uint8_t> bytes(std::max<uint64_t>(b.endIp - address + 16, 16));
            const size_t have =
                address <= b.endIp ? images.readSome(pid, address, bytes.data(), bytes.size()) : 0;
            const uint8_t* p = bytes.data();
            size_t size = have;
            uint64_t a = address;
            while (n < b.instructions && size > 0 && a <= b.endIp &&
                   cs_disasm_iter(cs, &p, &size, &a, insn)) {
                auto it = at.find(insn->address);
                if (it != at.end()) out.instructions[it->second].count += b.count;
                ++n;
                if (insn->address == b.endIp) {
                    done = true;
                    break;
                }
            }
        }
        if (!done || n != b.instructions) ++badBlocks;
    }
    cs_free(insn, 1);
    cs_close(&cs);
    if (badBlocks)
        out.notes.push_back(std::to_string(badBlocks) + " of " + std::to_string(blocks.size()) +
                            " executed blocks did not disassemble to their last instruction in as many "
                            "instructions as the decoder counted (code image differs from what ran?)");
    for (const AnnotatedInstruction& a : out.instructions) {
        out.executed += a.count;
        if (a.count) ++out.executedInstructions;
    }
    if (jit) {
        std::map<std::string, uint64_t> perFile;
        for (AnnotatedInstruction& a : out.instructions)
            if (auto s = images.jitSourceAt(pid, a.address); s && s->line) {
                a.file = s->file, a.line = s->line;
                perFile[a.file] += 1 + a.count;
            }
        if (perFile.empty()) {
            out.notes.push_back("no source lines: " + path +
                                " has no debug info (JIT_CODE_DEBUG_INFO) for it");
            return out;
        }
        out.sourceFile = std::max_element(perFile.begin(), perFile.end(), [](const auto& x, const auto& y) {
                             return x.second < y.second;
                         })->first;
        for (const AnnotatedInstruction& a : out.instructions)
            if (a.file == out.sourceFile) out.lineCounts[a.line] += a.count;
        return out;
    }
    // Source lines: the link-time address of each instruction, looked up in the file's DWARF.
    auto segments = elfLoadSegments(path);
    std::optional<uint64_t> linkBegin;
    if (segments)
        for (const ElfLoadSegment& s : *segments)
            if (fileOffset >= s.offset && fileOffset < s.offset + s.fileSize)
                linkBegin = s.vaddr + (fileOffset - s.offset);
    bool searched = false;
    const std::string debugFile = images.debugFileOf(path, &searched);
    SourceLines lines(path, debugFile, searched);
    if (!linkBegin || !lines.ok()) {
        out.notes.push_back("no source lines: " + path +
                            (linkBegin ? " has no debug information (nor a separate debug file found)"
                                       : " has no load segment for the code"));
        return out;
    }
    std::map<std::string, uint64_t> perFile;
    for (AnnotatedInstruction& a : out.instructions) {
        if (lines.at(*linkBegin + (a.address - begin), a.file, a.line)) perFile[a.file] += 1 + a.count;
    }
    if (!perFile.empty()) {
        out.sourceFile = std::max_element(perFile.begin(), perFile.end(), [](const auto& x, const auto& y) {
                             return x.second < y.second;
                         })->first;
        for (const AnnotatedInstruction& a : out.instructions)
            if (a.file == out.sourceFile) out.lineCounts[a.line] += a.count;
    } else {
        out.notes.push_back("no source lines for these addresses in " + path);
    }
    return out;
}

}  // namespace auxscope
