// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Decoding libraries are not trusted with the process (DESIGN.md): libipt and
// OpenCSD run on whatever trace a file holds, and OpenCSD 1.3.3 crashes on some
// (tests/fuzz/opencsd-1.3.3-crashes). SegmentedDecode therefore decodes the
// segments it has not cached in worker processes: fork()ed from the decoding
// thread, so each holds the opened session (trace, sideband, code images,
// function table) copy-on-write, with nothing to load again. A worker claims
// segments one at a time from a counter in shared memory, decodes each with the
// session's own decodeOne() and writes a record of it (statistics, stack ends,
// gaps, and where its packed spans lie in the worker) into a memfd of its own.
// When it has no segment left it waits; the parent then copies each record's
// spans straight out of the worker into its own stores (process_vm_readv: one
// copy, the only cost isolation adds beyond a fork per worker) and ends it.
// Where the parent may not read a worker's memory (ptrace rules, seccomp), the
// records carry the spans themselves (two copies, through the memfd). A worker
// killed by a signal ends only the segment it was on: that segment becomes a
// gap "decoder crashed (OpenCSD, SIGSEGV)" for the threads that ran in it; the
// segments it had finished (their spans died with it) and those nobody claimed
// yet go to the workers still running or to new ones. A watchdog kills a worker whose
// segment made no progress for `hangSeconds`: a gap "decoder hung (libipt, no
// progress for 30 s)".
//
// The fork rule. The child runs only decodeOne() and this file's code: no Qt, no
// stdio, no lock another thread of the parent may hold at the fork. Forking from
// the decoding thread is safe for the session because a session is used from one
// thread at a time and the pool's threads are idle between batches (their locks
// are free); glibc's malloc is fork-safe. A lock some other thread held at the
// fork (one that lies outside the session) would make the worker wait forever:
// the watchdog then kills it and says the decoder hung, the parent lives on.
// The child leaves with _exit(): no atexit handler, no destructor of the parent's
// objects runs in it.
//
// In-process decoding (for debugging, and the comparison figure of
// bench_pt_decode / bench_etm_decode): AUXSCOPE_DECODE_IN_PROCESS=1, or
// DecoderIsolation::enabled = false.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

#include "spans/SpanStore.h"

namespace auxscope {

struct SegmentSpans;
struct DecodeStats;

struct DecoderIsolation {
    bool enabled = true;
    // A worker whose segment shows no progress this long is killed (decoder hung).
    // Segments are about 1 MiB of trace, decoded in well under a second.
    double hangSeconds = 30;
    // Test doubles (tests only, through the environment): the worker that claims
    // segment `testHangSegment` spins (a library that hangs on it), the one that
    // claims `testCrashSegment` dies of SIGSEGV. -1: none.
    long testHangSegment = -1;
    long testCrashSegment = -1;
    // Copy the spans out of the workers (process_vm_readv) where allowed; false:
    // always through the memfd (the fallback, for the tests).
    bool readWorkerMemory = true;
    // A worker's span arrays in shared memory (a memfd per worker) that the
    // parent's stores refer to where they lie: no copy. False: copied out of the
    // worker (as readWorkerMemory says), for the tests.
    bool spansInSharedMemory = true;
    // enabled unless AUXSCOPE_DECODE_IN_PROCESS=1; AUXSCOPE_DECODER_HANG_SECONDS,
    // AUXSCOPE_TEST_DECODER_HANG_SEGMENT and AUXSCOPE_TEST_DECODER_CRASH_SEGMENT
    // set the other fields.
    static DecoderIsolation fromEnvironment();
};

// decodeOne(index) in the worker; failedOne(index, reason, detail) in the parent
// for a segment whose worker died (a gap over the segment for its threads).
using DecodeOneFn = std::function<SegmentSpans(size_t index)>;
using FailedOneFn = std::function<SegmentSpans(size_t index, GapReason reason, const std::string& detail)>;

// Decodes `segments` (decoder segment indices) on up to `workers` worker
// processes; out[k] is segments[k]'s result. `library` names the decoder in the
// gaps ("libipt", "OpenCSD"). `parallel` spreads the reading back of the results.
// Where no worker can be started (fork fails) the rest is decoded in-process.
void decodeIsolated(const std::vector<size_t>& segments, unsigned workers, const DecoderIsolation& isolation,
                    const std::string& library, const DecodeOneFn& decodeOne, const FailedOneFn& failedOne,
                    const ParallelRun& parallel, std::vector<std::shared_ptr<const SegmentSpans>>& out);

// Why a worker ended before its work was done: DecoderCrashed "decoder crashed
// (OpenCSD, SIGSEGV)", DecoderHung "decoder hung (libipt, no progress for 30 s)".
struct DecoderFailure {
    GapReason reason = GapReason::DecoderCrashed;
    std::string detail;
};

// Streamed isolation, for work whose output the caller takes as it comes, in
// order, rather than as a segment's spans: the blocks of `decode --format insn`
// and of the code view (AuxTraceSession::forEachBlock), the lines of a packet or
// range listing. The same rules as decodeIsolated (the fork rule above, the
// watchdog, the gap reasons, the test doubles, DecoderIsolation::enabled): a
// worker runs produce() for its items and writes what it appends straight into
// a ring of shared memory (1 MiB a worker), publishing it every 64 KiB and at
// the end of each item with a byte on a pipe (never a write per block or line);
// the parent reads the rings in place, in item order, and hands each piece (up
// to 64 KiB) to consume(); a worker whose ring is full waits for the parent. A
// worker that dies or hangs ends only the item it was on (what it had published
// of it stays consumed): failed() is called for it, and a new worker goes on
// with the next.
class IsolatedOutput {
public:
    // Appends `n` bytes of the caller's `kind` (0..253): consecutive appends of one
    // kind reach consume() as one piece or several, never splitting an append.
    virtual void append(uint8_t kind, const void* data, size_t n) = 0;

protected:
    ~IsolatedOutput() = default;
};

// Text to an IsolatedOutput as `kind`, through an std::ostream (for listings
// written by code that prints to a stream), in pieces of up to 64 KiB.
class IsolatedOutputStream final : public std::ostream {
public:
    IsolatedOutputStream(IsolatedOutput& out, uint8_t kind) : std::ostream(&buf_), buf_(out, kind) {}
    ~IsolatedOutputStream() override { buf_.pubsync(); }

private:
    class Buffer final : public std::streambuf {
    public:
        Buffer(IsolatedOutput& out, uint8_t kind);

    protected:
        int_type overflow(int_type c) override;
        int sync() override;

    private:
        IsolatedOutput& out_;
        uint8_t kind_;
        std::vector<char> text_;
    };
    Buffer buf_;
};

using ProduceFn = std::function<void(size_t id, IsolatedOutput& out)>;
using ConsumeFn = std::function<void(size_t id, uint8_t kind, const uint8_t* data, size_t n)>;
using ItemFailedFn = std::function<void(size_t id, const DecoderFailure& failure)>;

// Runs produce(ids[k]) for every k, item k on worker k % workers (each worker
// takes its items in order, so they decode side by side), and calls consume()
// with their output in the order of `ids`, on the calling thread. Not isolated
// (or where no worker can be started): produce() runs here and appends straight
// to consume(). `ids` are what the test doubles (testHangSegment,
// testCrashSegment) name: the decoder's segment indices.
void streamIsolated(const std::vector<size_t>& ids, unsigned workers, const DecoderIsolation& isolation,
                    const std::string& library, const ProduceFn& produce, const ConsumeFn& consume,
                    const ItemFailedFn& failed);

// A listing streamed from workers (the packet and range listings): text, error
// lines and the listing's own counts records, as these kinds. listingConsumer()
// is the parent's side: each kind to its callback.
enum ListingKind : uint8_t { kListingText = 0, kListingCounts = 1, kListingError = 2 };
ConsumeFn listingConsumer(std::function<void(std::string_view text)> text,
                          std::function<void(std::string_view line)> error,
                          std::function<void(const uint8_t* data, size_t n)> counts);

// A segment's result as bytes and back (what a worker hands the parent).
void serializeSegmentSpans(const SegmentSpans& s, std::string& out);
bool deserializeSegmentSpans(const uint8_t* data, size_t size, SegmentSpans& out);
// Decode statistics as bytes and back (what a streaming worker hands the parent).
void serializeDecodeStats(const DecodeStats& s, std::string& out);
bool deserializeDecodeStats(const uint8_t* data, size_t size, DecodeStats& out);

// "cpu 0, trace offset 0x2a000: decoder crashed (OpenCSD, SIGSEGV)": where a
// listing lost a piece to its decoder, for the line a command prints.
std::string failedPieceText(int cpu, uint64_t traceOffset, const std::string& detail);

// "SIGSEGV", "SIGABRT", ... ("signal 42" for one without a name).
std::string signalName(int signal);

}  // namespace auxscope
