// compiler/schedule/streams.h — concurrent branches: each kernel's stream, and the events that
// order kernels on different streams.
//
// The input is the kernel DAG in kernel order (a topological order): for each kernel, the earlier
// kernels it depends on (it reads what they write, or writes what they read or write). A greedy
// list scheduling puts each kernel
//   1. on the stream whose last kernel is one of its predecessors (the deepest one: the chain that
//      leads to it continues on its stream, so a chain stays on one stream);
//   2. else on the first stream whose last kernel happens before it anyway (no event to add);
//   3. else on a new stream, while fewer than `max_streams` are open;
//   4. else on the stream whose last kernel is shallowest (the earliest to finish).
// Then it waits on the events of the predecessors on other streams that the stream order and the
// waits already added do not order before it, latest predecessor first: no wait is implied by the
// others (a transitive reduction of the cross-stream edges). Vector clocks (per kernel, per
// stream: the last kernel of that stream that happens before it) make "happens before" exact.
// Stream 0 is the caller's stream; the others fork from it before the first kernel and join it
// after the last (the emitter adds those events).
#pragma once

#include <vector>

#include "schedule/schedule.h"

namespace modelc {

/// \brief The streams stage's result over kernels 0..n-1.
struct StreamPlan {
  int streams = 1;                         ///< streams used; 1 runs everything on the caller's stream
  std::vector<int> stream;                 ///< per kernel: its stream (0 = the caller's)
  std::vector<int> seq;                    ///< per kernel: its position on its stream
  std::vector<std::vector<int>> waits;     ///< per kernel: kernels on other streams whose events it waits on
  std::vector<int> event;                  ///< per kernel: the event recorded after it, -1 for none
  int kernel_events = 0;                   ///< events recorded after kernels (numbered in kernel order)
  std::vector<std::vector<int>> clock;     ///< per kernel, per stream: seq of the last kernel there that happens before it (-1)
  int critical_path = 0;                   ///< kernels on the longest dependency chain

  /// a happens before b or is b: b's stream order and waits order a's end before b starts.
  bool happens_before(int a, int b) const { return clock[b][stream[a]] >= seq[a]; }
  /// cudaEvent_t's the program creates: the kernels' events, then the fork event and one join
  /// event per stream besides the caller's (none with one stream).
  int events() const { return streams > 1 ? kernel_events + streams : 0; }
  /// \brief The last kernel position that may still run at the same time as an access of a buffer
  /// accessed by the kernels `accesses` (ascending), or its last access: every kernel after it
  /// starts after every access ended. The memory plan's live interval ends there.
  int concurrent_last(const std::vector<int>& accesses) const;
};

/// \brief Streams and events for the DAG: `preds[j]` holds kernels before j (any order,
/// duplicates allowed) that must end before j starts. At most `max_streams` (>= 1) streams.
/// Deterministic.
StreamPlan assign_streams(const std::vector<std::vector<int>>& preds, int max_streams);

/// \brief The kernel DAG of s in kernel order: kernel j depends on i < j when both touch one arena
/// or output buffer (TensorView::buffer: views, folded Casts and elided Concats resolved to it) and
/// one of them writes it, except two writers of different values in it (slices of an elided
/// Concat's output). Constants and model inputs are only read: no edge.
std::vector<std::vector<int>> kernel_dependencies(const Schedule& s);

/// \brief The order the streams stage decided, read back from the kernels (Kernel::stream, waits,
/// event): each kernel's stream, position on it, the kernels it waits on and the vector clocks, so
/// that happens_before and concurrent_last answer for the Schedule as it is (every kernel on stream
/// 0 in order when the stage did not run). The memory plan reads it. Internal Error for a wait on
/// an event no earlier kernel records.
StreamPlan stream_order(const Schedule& s);

/// Streams used when --streams is automatic: as many as the widest set of independent kernels
/// needs, up to this.
constexpr int kAutomaticStreams = 4;

}  // namespace modelc
