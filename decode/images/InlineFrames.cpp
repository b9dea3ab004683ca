// SPDX-License-Identifier: GPL-3.0-or-later
#include "images/InlineFrames.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include <algorithm>
#include <cstdlib>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "images/DwflDebugFile.h"
#include "images/ElfSymbols.h"
#include "images/ImageResolver.h"

namespace auxscope {

namespace {

char* gDebuginfoPath = nullptr;  // libdwfl's default search
const Dwfl_Callbacks kCallbacks = {nullptr, findResolvedDebuginfo, dwfl_offline_section_address,
                                   &gDebuginfoPath};

// One file's DWARF, opened by libdwfl at its link-time addresses, and the answers so far.
struct FileDwarf {
    Dwfl* dwfl = nullptr;
    Dwfl_Module* module = nullptr;
    uint64_t mainBias = 0;
    struct Load {
        uint64_t offset, vaddr, fileSize;
    };
    std::vector<Load> loads;
    struct Chain {
        uint32_t first = 0, count = 0;  // in Impl::store
    };
    std::unordered_map<uint64_t, Chain> byAddress;

    DwflDebugFile debugFile;  // the resolver's separate debug file ("" : none, when it searched)

    FileDwarf(const std::string& path, const std::string& name, std::string debug, bool searched)
        : debugFile{std::move(debug)} {
        dwfl = dwfl_begin(&kCallbacks);
        if (!dwfl) return;
        dwfl_report_begin(dwfl);
        Dwfl_Module* m = dwfl_report_elf(dwfl, name.c_str(), path.c_str(), -1, 0, true);
        dwfl_report_end(dwfl, nullptr, nullptr);
        if (searched) setDwflDebugFile(m, debugFile);
        GElf_Addr bias = 0;
        Elf* elf = m ? dwfl_module_getelf(m, &bias) : nullptr;
        size_t phnum = 0;
        if (!elf || elf_getphdrnum(elf, &phnum) != 0) return;
        for (size_t i = 0; i < phnum; ++i) {
            GElf_Phdr ph;
            if (gelf_getphdr(elf, int(i), &ph) && ph.p_type == PT_LOAD)
                loads.push_back({ph.p_offset, ph.p_vaddr, ph.p_filesz});
        }
        mainBias = bias;
        module = m;
    }
    ~FileDwarf() {
        if (dwfl) dwfl_end(dwfl);
    }
    // The link-time address of file offset `offset`.
    bool vaddrOf(uint64_t offset, uint64_t& vaddr) const {
        for (const Load& l : loads) {
            if (offset < l.offset || offset - l.offset >= l.fileSize) continue;
            vaddr = l.vaddr + (offset - l.offset);
            return true;
        }
        return false;
    }
};

const char* stringAttribute(Dwarf_Die* die, unsigned name) {
    Dwarf_Attribute attr;
    return dwarf_attr_integrate(die, name, &attr) ? dwarf_formstring(&attr) : nullptr;
}

}  // namespace

struct InlineFrames::Worker::Impl {
    const ImageResolver& images;
    std::unordered_map<uint32_t, std::unique_ptr<FileDwarf>> files;
    std::unordered_map<int32_t, std::vector<ImageResolver::MappedModule>> processes;
    std::vector<InlineFrame> store;
    std::unordered_set<std::string> strings;  // what the frames' views point into

    explicit Impl(const ImageResolver& i) : images(i) {}

    std::string_view intern(std::string s) { return *strings.insert(std::move(s)).first; }

    FileDwarf& file(uint32_t index) {
        auto& slot = files[index];
        if (!slot) {
            const ImageResolver::FileStatus& f = images.files()[index];
            bool searched = false;
            std::string debug = images.debugFileOf(f.resolved, &searched);
            slot = std::make_unique<FileDwarf>(f.resolved, f.recorded, std::move(debug), searched);
        }
        return *slot;
    }

    // The scopes around `vaddr`, innermost first, turned into frames outermost first.
    FileDwarf::Chain lookUp(FileDwarf& f, uint64_t vaddr) {
        FileDwarf::Chain chain{uint32_t(store.size()), 0};
        Dwarf_Addr dwarfBias = 0;
        const uint64_t address = vaddr + f.mainBias;
        Dwarf_Die* cu = dwfl_module_addrdie(f.module, address, &dwarfBias);
        if (!cu) return chain;
        // The innermost scope holding the address, then the scopes around it in
        // the DIE tree: dwarf_getscopes alone goes on from an inlined instance to
        // its abstract origin's scopes, and so loses the functions it was inlined into.
        Dwarf_Die* innermost = nullptr;
        const int found = dwarf_getscopes(cu, address - dwarfBias, &innermost);
        Dwarf_Die* scopes = nullptr;
        const int n = found > 0 ? dwarf_getscopes_die(&innermost[0], &scopes) : 0;
        std::free(innermost);
        Dwarf_Files* sources = nullptr;
        size_t sourceCount = 0;
        if (dwarf_getsrcfiles(cu, &sources, &sourceCount) != 0) sources = nullptr;
        for (int i = 0; i < n; ++i) {
            Dwarf_Die* scope = &scopes[i];
            const int tag = dwarf_tag(scope);
            if (tag == DW_TAG_subprogram) break;  // the function the address's symbol names
            if (tag != DW_TAG_inlined_subroutine) continue;
            InlineFrame frame;
            const char* linkage = stringAttribute(scope, DW_AT_linkage_name);
            if (!linkage) linkage = stringAttribute(scope, DW_AT_MIPS_linkage_name);
            const char* name = stringAttribute(scope, DW_AT_name);
            frame.function = intern(linkage ? demangleSymbol(linkage) : name ? name : "[inlined]");
            Dwarf_Attribute attr;
            Dwarf_Word value = 0;
            if (sources && dwarf_attr(scope, DW_AT_call_file, &attr) && dwarf_formudata(&attr, &value) == 0 &&
                value < sourceCount)
                if (const char* path = dwarf_filesrc(sources, value, nullptr, nullptr))
                    frame.callFile = intern(path);
            if (dwarf_attr(scope, DW_AT_call_line, &attr) && dwarf_formudata(&attr, &value) == 0)
                frame.callLine = uint32_t(std::min<Dwarf_Word>(value, UINT32_MAX));
            store.push_back(frame);
            ++chain.count;
        }
        std::free(scopes);
        std::reverse(store.begin() + chain.first, store.end());
        return chain;
    }
};

InlineFrames::InlineFrames(const ImageResolver& images) : images_(images) {
    elf_version(EV_CURRENT);  // libelf's version handshake, before any Elf is made
}
InlineFrames::~InlineFrames() = default;

InlineFrames::Worker::Worker(std::unique_ptr<Impl> impl) : d_(std::move(impl)) {}
InlineFrames::Worker::~Worker() = default;

std::unique_ptr<InlineFrames::Worker> InlineFrames::worker() const {
    return std::unique_ptr<Worker>(new Worker(std::make_unique<Worker::Impl>(images_)));
}

std::span<const InlineFrame> InlineFrames::at(Worker& worker, int32_t pid, uint64_t address) const {
    Worker::Impl& w = *worker.d_;
    auto process = w.processes.find(pid);
    if (process == w.processes.end()) process = w.processes.emplace(pid, images_.mappedModules(pid)).first;
    const auto& modules = process->second;
    auto it = std::upper_bound(modules.begin(), modules.end(), address,
                               [](uint64_t a, const ImageResolver::MappedModule& m) { return a < m.start; });
    if (it == modules.begin()) return {};
    --it;
    if (address >= it->end || it->bytes.empty()) return {};
    FileDwarf& f = w.file(it->file);
    uint64_t vaddr;
    if (!f.module || !f.vaddrOf(address - it->start + it->pgoff, vaddr)) return {};
    auto known = f.byAddress.find(vaddr);
    if (known == f.byAddress.end()) known = f.byAddress.emplace(vaddr, w.lookUp(f, vaddr)).first;
    return {w.store.data() + known->second.first, known->second.count};
}

}  // namespace auxscope
