// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The sideband flight recorder: a perf data ring written backward
// (attr.write_backward = 1) and mapped read-only, so the kernel never waits for
// a reader and overwrites the oldest records once the ring is full.
//
// Protocol (kernel/events/ring_buffer.c, read to learn):
// - data_head is a free-running u64 that starts at 0 and goes DOWN by each
//   record's size; the newest record starts at data_head, older ones follow at
//   higher addresses (wrapping at the ring's end). -data_head is therefore the
//   number of bytes the kernel has written since the ring was mapped.
// - The ring is mapped PROT_READ: the kernel ignores data_tail and overwrites.
//   Once more than the ring's size was written, the oldest record in the window
//   [head, head + size) is torn (its end was overwritten by the newest records).
// - A consistent snapshot needs PERF_EVENT_IOC_PAUSE_OUTPUT(1) first; records the
//   kernel would write meanwhile are dropped and counted, and the next record
//   after PAUSE_OUTPUT(0) is preceded by a PERF_RECORD_LOST giving their number.
//   The kernel writes that LOST and its record into one chunk, forward: the
//   snapshot keeps the pair as LOST, record (the LOST carries the record's
//   sample_id time) while reversing everything else.
// - PAUSE_OUTPUT only sets a flag: a writer that checked it just before keeps
//   writing (over the oldest bytes of the window) and publishes data_head later.
//   Writers run inside an RCU read-side section (perf_output_begin..end), so an
//   RCU grace period after the pause (membarrier(MEMBARRIER_CMD_GLOBAL), ~8-16 ms)
//   waits them out. Seen on a real kernel without it: a zeroed header at the
//   window's oldest end after ~2000 snapshots under a switch storm.
// - Every event that SET_OUTPUTs into this ring must be write_backward too (the
//   kernel refuses a mix with EINVAL).
#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "MappedRegion.h"
#include "Result.h"

namespace auxscope {

struct BackwardSnapshot {
    // Complete records, OLDEST FIRST (time order), back to back; record i starts
    // at offsets[i] and its size is in its header.
    std::vector<uint8_t> data;
    std::vector<uint32_t> offsets;

    uint64_t records = 0;  // records returned
    uint64_t bytes = 0;    // their bytes (== data.size(), <= the ring's size)

    uint64_t head = 0;     // data_head when the snapshot was taken (free-running, decreasing)
    uint64_t written = 0;  // bytes the kernel has written into the ring since it was mapped
    bool wrapped = false;  // written > ring size: older history was overwritten (expected loss)
    // written == bytes + overwrittenBytes + skippedBytes.
    uint64_t overwrittenBytes = 0;  // history no longer in the ring (incl. the torn oldest record)
    uint64_t tornBytes = 0;         // bytes of the torn oldest record still in the ring (0 if none)
    uint64_t racedBytes = 0;        // oldest bytes dropped because a writer in flight published
                                    // during the copy (data_head moved while paused)
    bool quiesced = false;          // an RCU grace period followed the pause (no writer in flight)
    uint64_t skippedBytes = 0;      // bytes given up after a corrupt header

    // A corrupt header ends the walk: the message names its ring offset; every
    // record newer than it is kept.
    std::optional<std::string> error;

    std::span<const uint8_t> record(size_t i) const;
};

// Walks a copy of a backward ring's data area (`size` a power of two) holding what
// the kernel published up to `head`. `headAfter` is data_head read again after the
// copy was made (equal to `head` unless a writer was still in flight): the bytes
// the kernel wrote meanwhile are excluded. Pure; no kernel involved.
BackwardSnapshot parseBackwardRing(const uint8_t* data, uint64_t size, uint64_t head, uint64_t headAfter);

class BackwardRing {
public:
    BackwardRing() = default;
    BackwardRing(BackwardRing&& o) noexcept { *this = static_cast<BackwardRing&&>(o); }
    BackwardRing& operator=(BackwardRing&& o) noexcept;
    BackwardRing(const BackwardRing&) = delete;
    BackwardRing& operator=(const BackwardRing&) = delete;

    // Maps 1 + `dataPages` pages (a power of two) of the write_backward event `fd`
    // read-only. `fd` is not owned and must outlive the ring; it is the one
    // PAUSE_OUTPUT is sent to.
    static Expected<BackwardRing> map(int fd, size_t dataPages);

    enum class Quiesce {
        Rcu,   // wait an RCU grace period after pausing: exact, costs ~8-16 ms
        None,  // only compare data_head before and after the copy: fast, but a writer
               // still in flight may tear the oldest record (reported as an error)
        // The caller already paused this ring (pauseOutput(true)) and waited an RCU
        // grace period itself: several rings then share one grace period.
        Caller,
    };
    // Pauses output, copies every complete record out, resumes output (also on
    // failure). Fails only when an ioctl fails; a corrupt ring is reported in
    // BackwardSnapshot::error.
    Expected<BackwardSnapshot> snapshot(Quiesce quiesce = Quiesce::Rcu);

    // PERF_EVENT_IOC_PAUSE_OUTPUT on the ring's fd.
    Expected<void> pauseOutput(bool pause) const;

    uint64_t head() const { return __atomic_load_n(&meta_->data_head, __ATOMIC_ACQUIRE); }
    uint64_t size() const { return size_; }
    const uint8_t* data() const { return data_; }
    const perf_event_mmap_page* meta() const { return meta_; }
    bool mapped() const { return meta_ != nullptr; }
    int fd() const { return fd_; }

private:
    const perf_event_mmap_page* meta_ = nullptr;
    const uint8_t* data_ = nullptr;
    uint64_t size_ = 0;
    MappedRegion map_;  // user page and data area, read-only
    int fd_ = -1;
    std::vector<uint8_t> copy_;  // the data area as copied while paused
};

}  // namespace auxscope
