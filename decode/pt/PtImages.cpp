// SPDX-License-Identifier: GPL-3.0-or-later
#include "pt/PtImages.h"

#include <intel-pt.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace auxscope {

PtImages::PtImages(const ImageResolver& images) {
    cache_ = pt_iscache_alloc("auxscope");
    ImageResolver::Update every;
    every.all = true;
    update(images, every);
}

// One section per (file, offset, size, address): libipt's cache hands the same
// section id back for the same range, so shared libraries are added once.
void PtImages::add(pt_image* image, const std::vector<ImageResolver::CodeSection>& sections) {
    for (const ImageResolver::CodeSection& s : sections) {
        int isid = pt_iscache_add_file(cache_, s.path->c_str(), s.offset, s.size, s.vaddr);
        if (isid < 0) {
            char at[32];
            std::snprintf(at, sizeof at, "0x%" PRIx64, s.vaddr);
            std::string note =
                *s.path + ": libipt refused the section at " + at + ": " + pt_errstr(pt_errcode(isid));
            if (std::find(notes_.begin(), notes_.end(), note) == notes_.end())
                notes_.push_back(std::move(note));
            continue;
        }
        pt_image_add_cached(image, cache_, isid, nullptr);
    }
}

void PtImages::update(const ImageResolver& images, const ImageResolver::Update& changed) {
    std::vector<int32_t> pids = changed.pids;
    if (changed.all) {
        if (kernelOnly_) pt_image_free(kernelOnly_);
        kernelOnly_ = pt_image_alloc("kernel");
        add(kernelOnly_, images.codeSections(-1));
        pids = images.processIds();
        for (auto& [pid, image] : processes_)
            pt_image_free(image);
        processes_.clear();
    }
    const std::vector<int32_t> now = images.processIds();
    for (int32_t pid : pids) {
        if (auto it = processes_.find(pid); it != processes_.end()) {
            pt_image_free(it->second);
            processes_.erase(it);
        }
        if (!std::binary_search(now.begin(), now.end(), pid)) continue;  // gone
        std::string name = "pid " + std::to_string(pid);
        pt_image* image = pt_image_alloc(name.c_str());
        add(image, images.codeSections(pid));
        processes_[pid] = image;
    }
}

PtImages::~PtImages() {
    for (auto& [pid, image] : processes_)
        pt_image_free(image);
    pt_image_free(kernelOnly_);
    pt_iscache_free(cache_);
}

pt_image* PtImages::newImage(int32_t pid) const {
    auto it = processes_.find(pid);
    pt_image* source = it == processes_.end() ? kernelOnly_ : it->second;
    pt_image* image = pt_image_alloc(nullptr);
    if (image && source) pt_image_copy(image, source);
    return image;
}

}  // namespace auxscope
