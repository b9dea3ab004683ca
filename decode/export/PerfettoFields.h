// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Field numbers of Perfetto's trace protos (protos/perfetto/trace/... as
// Perfetto publishes them) that the exporters write. The tests decode every
// exported trace against tests/decode/perfetto_trace_subset.proto with protoc,
// so a number wrong here shows up there as an unknown field.
#include <cstdint>

namespace auxscope::pf {

constexpr uint32_t kTracePacket = 1;  // Trace.packet
// TracePacket
constexpr uint32_t kTimestamp = 8, kSequenceId = 10, kTrackEvent = 11, kInternedData = 12,
                   kSequenceFlags = 13, kTracePacketDefaults = 59, kTrackDescriptor = 60, kPerfSample = 66;
constexpr uint64_t kSeqIncrementalStateCleared = 1, kSeqNeedsIncrementalState = 2;
// TrackDescriptor
constexpr uint32_t kUuid = 1, kName = 2, kProcess = 3, kThread = 4, kParentUuid = 5, kCounter = 8;
// ProcessDescriptor / ThreadDescriptor
constexpr uint32_t kPid = 1, kProcessName = 6, kTid = 2, kThreadName = 5;
// CounterDescriptor
constexpr uint32_t kUnit = 3;
constexpr uint64_t kUnitCount = 2;
// TrackEvent
constexpr uint32_t kDebugAnnotation = 4, kType = 9, kNameIid = 10, kTrackUuid = 11, kCategories = 22,
                   kEventName = 23, kCounterValue = 30, kDoubleCounterValue = 44;
constexpr uint64_t kSliceBegin = 1, kSliceEnd = 2, kInstant = 3, kCounterEvent = 4;
// DebugAnnotation
constexpr uint32_t kAnnNameIid = 1, kAnnName = 10, kAnnInt = 4, kAnnString = 6, kAnnPointer = 7,
                   kAnnStringIid = 17;
// InternedData, and the iid / name (or str) of its EventName, DebugAnnotationName
// and InternedString entries
constexpr uint32_t kInternedEventNames = 2, kInternedAnnotationNames = 3, kInternedFunctionNames = 5,
                   kInternedFrames = 6, kInternedCallstacks = 7, kInternedBuildIds = 16,
                   kInternedMappingPaths = 17, kInternedMappings = 19, kInternedAnnotationStrings = 29;
constexpr uint32_t kInternedIid = 1, kInternedName = 2;
// Mapping (profile_common.proto)
constexpr uint32_t kMappingIid = 1, kMappingBuildId = 2, kMappingPathIds = 7;
// Frame
constexpr uint32_t kFrameIid = 1, kFrameFunctionName = 2, kFrameMapping = 3, kFrameRelPc = 4;
// Callstack: frame_ids, outermost ("bottom") frame first
constexpr uint32_t kCallstackIid = 1, kCallstackFrames = 2;
// PerfSample (profile_packet.proto)
constexpr uint32_t kPerfCpu = 1, kPerfPid = 2, kPerfTid = 3, kPerfCallstack = 4, kPerfTimebaseCount = 6;
// TracePacketDefaults.perf_sample_defaults, PerfSampleDefaults.timebase
constexpr uint32_t kDefaultsPerfSample = 12, kPerfDefaultsTimebase = 1;
// PerfEvents.Timebase (common/perf_events.proto) and its Tracepoint
constexpr uint32_t kTimebaseTracepoint = 3, kTimebaseCounter = 4, kTimebaseName = 10, kTracepointName = 1;

}  // namespace auxscope::pf
