// compiler/schedule/memory_plan.h — offsets of the activations in the one device arena.
//
// A greedy planner: every buffer is live over an interval
// of the kernel order, [first, last] inclusive (from the kernel that writes it to the last kernel
// that reads it, or any view of it); two buffers whose intervals intersect never overlap in
// memory. Intervals are inclusive on purpose: a kernel that reads A for the last time while it
// writes B must not find B on top of A. The memory_plan stage (plan_arena, schedule/stages.h) runs
// it once, after every decision, over the Schedule's arena buffers: the activations and the
// kernels' workspaces.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace modelc {

/// \brief One activation buffer to place.
struct LiveBuffer {
  std::string name;     ///< the value it holds (reports, errors)
  int64_t bytes = 0;    ///< size; 0 takes no space
  int first = 0;        ///< index of the kernel that writes it
  int last = 0;         ///< index of the last kernel that reads it (>= first)
  int64_t offset = -1;  ///< the result: bytes from the start of the arena, `alignment`-aligned
};

struct MemoryPlan {
  int64_t arena_bytes = 0;         ///< the arena's size: the end of the highest buffer
  int64_t total_bytes = 0;         ///< sum of every buffer's aligned size (what no reuse would need)
  int64_t max_live_bytes = 0;      ///< the lower bound: the most aligned bytes live at one kernel
  std::string order;               ///< the placement order that gave this plan (reports)
};

/// Rounds `bytes` up to a multiple of `alignment`.
int64_t align_up(int64_t bytes, int64_t alignment);

/// The most bytes (each buffer's size aligned) live at one kernel: no plan's arena is smaller.
int64_t max_live_bytes(const std::vector<LiveBuffer>& buffers, int64_t alignment);

/// \brief Sets every buffer's offset by first fit (each at the lowest aligned offset where it
/// overlaps no placed buffer whose interval intersects its own) in a few orders (largest first,
/// by lifetime, by bytes x lifetime, earliest first, longest-lived first; then, while the arena is
/// above the max-live bound, up to 64 seeded shuffles), keeping the smallest arena. Deterministic
/// for the same input. Throws Error for an interval with last < first.
MemoryPlan plan_memory(std::vector<LiveBuffer>& buffers, int64_t alignment = 256);

/// True when the plan is sound: aligned offsets, and no two buffers live at once share a byte.
/// On failure `why` names the pair (for tests and the lowering's own check).
bool check_memory_plan(const std::vector<LiveBuffer>& buffers, int64_t alignment, std::string* why = nullptr);

}  // namespace modelc
