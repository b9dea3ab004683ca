// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// libipt's view of the code a trace ran through: the sections images/ImageResolver
// found, added once to one libipt image section cache shared by every process,
// and one libipt image per process built from them. The resolver stays
// decoder-neutral; this adapter is the only place that knows libipt's images.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "images/ImageResolver.h"

struct pt_image;
struct pt_image_section_cache;

namespace auxscope {

class PtImages {
public:
    // `images` must be prepared and outlive this.
    explicit PtImages(const ImageResolver& images);
    ~PtImages();
    PtImages(const PtImages&) = delete;
    PtImages& operator=(const PtImages&) = delete;

    // A new libipt image for `pid` (the kernel-only one for an unknown pid),
    // owned by the caller (pt_image_free). Images are cheap copies sharing the
    // cache's sections; each decoder thread gets its own because libipt's
    // images are not safe to share between threads.
    pt_image* newImage(int32_t pid) const;
    // After images.update(): builds again the images `changed` names (all of
    // them when the kernel's code changed), adding only sections the cache does
    // not hold yet; the others are kept as they are.
    void update(const ImageResolver& images, const ImageResolver::Update& changed);
    pt_image_section_cache* cache() const { return cache_; }
    // Sections libipt refused, one line each.
    const std::vector<std::string>& notes() const { return notes_; }

private:
    void add(pt_image* image, const std::vector<ImageResolver::CodeSection>& sections);

    pt_image_section_cache* cache_ = nullptr;
    std::map<int32_t, pt_image*> processes_;
    pt_image* kernelOnly_ = nullptr;
    std::vector<std::string> notes_;
};

}  // namespace auxscope
