#include "schedule/memory_plan.h"

#include <algorithm>
#include <numeric>

#include "support/error.h"

namespace modelc {

int64_t align_up(int64_t bytes, int64_t alignment) { return (bytes + alignment - 1) / alignment * alignment; }

namespace {

bool intersect(const LiveBuffer& a, const LiveBuffer& b) { return a.first <= b.last && b.first <= a.last; }

}  // namespace

MemoryPlan plan_memory(std::vector<LiveBuffer>& buffers, int64_t alignment) {
  if (alignment <= 0) throw Error("internal: memory plan alignment must be positive");
  for (const LiveBuffer& b : buffers) {
    if (b.last < b.first || b.bytes < 0) {
      throw Error("internal: buffer '" + b.name + "' has a bad live interval [" + std::to_string(b.first) + ", " +
                  std::to_string(b.last) + "] or size " + std::to_string(b.bytes));
    }
  }
  std::vector<std::size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    const LiveBuffer& a = buffers[x];
    const LiveBuffer& b = buffers[y];
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.first != b.first) return a.first < b.first;
    return a.name < b.name;
  });

  MemoryPlan plan;
  std::vector<std::size_t> placed;
  for (std::size_t i : order) {
    LiveBuffer& b = buffers[i];
    const int64_t size = align_up(b.bytes, alignment);
    plan.total_bytes += size;
    if (size == 0) {
      b.offset = 0;
      continue;
    }
    // The placed buffers live at the same time as b, by offset: b goes in the first gap that fits.
    std::vector<std::pair<int64_t, int64_t>> busy;  // [begin, end)
    for (std::size_t j : placed) {
      const LiveBuffer& p = buffers[j];
      if (intersect(b, p)) busy.emplace_back(p.offset, p.offset + align_up(p.bytes, alignment));
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (offset + size <= begin) break;
      offset = std::max(offset, end);
    }
    b.offset = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + size);
    placed.push_back(i);
  }
  return plan;
}

bool check_memory_plan(const std::vector<LiveBuffer>& buffers, int64_t alignment, std::string* why) {
  auto fail = [&](const std::string& m) {
    if (why) *why = m;
    return false;
  };
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    const LiveBuffer& a = buffers[i];
    if (a.offset < 0 || a.offset % alignment != 0) {
      return fail("buffer '" + a.name + "' has offset " + std::to_string(a.offset));
    }
    if (a.bytes == 0) continue;
    for (std::size_t j = i + 1; j < buffers.size(); ++j) {
      const LiveBuffer& b = buffers[j];
      if (b.bytes == 0 || !intersect(a, b)) continue;
      if (a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes) {
        return fail("buffers '" + a.name + "' and '" + b.name + "' are live at once and overlap");
      }
    }
  }
  return true;
}

}  // namespace modelc
