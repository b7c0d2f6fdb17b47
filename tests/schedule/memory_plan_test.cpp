// schedule/memory_plan: no two buffers live at once share a byte; memory is reused.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "schedule/memory_plan.h"
#include "support/error.h"

using namespace modelc;

namespace {

// Brute force over every kernel step: the bytes live at each step must not overlap.
bool sound_by_steps(const std::vector<LiveBuffer>& bufs) {
  int steps = 0;
  for (const LiveBuffer& b : bufs) steps = std::max(steps, b.last + 1);
  for (int t = 0; t < steps; ++t) {
    std::vector<std::pair<int64_t, int64_t>> live;
    for (const LiveBuffer& b : bufs) {
      if (b.first <= t && t <= b.last && b.bytes > 0) live.emplace_back(b.offset, b.offset + b.bytes);
    }
    std::sort(live.begin(), live.end());
    for (std::size_t i = 1; i < live.size(); ++i) {
      if (live[i].first < live[i - 1].second) return false;
    }
  }
  return true;
}

}  // namespace

TEST_CASE("memory_plan: a chain reuses memory: two buffers ping-pong") {
  // k0 writes a, k1 reads a writes b, k2 reads b writes c, k3 reads c writes d.
  std::vector<LiveBuffer> bufs = {{"a", 1000, 0, 1}, {"b", 1000, 1, 2}, {"c", 1000, 2, 3}, {"d", 1000, 3, 3}};
  const MemoryPlan p = plan_memory(bufs, 256);
  CHECK(check_memory_plan(bufs, 256));
  CHECK(p.total_bytes == 4 * 1024);
  CHECK(p.arena_bytes == 2 * 1024);  // a and c share, b and d share
  CHECK(bufs[0].offset == bufs[2].offset);
  CHECK(bufs[1].offset == bufs[3].offset);
  CHECK(bufs[0].offset != bufs[1].offset);
}

TEST_CASE("memory_plan: intervals are inclusive: a buffer read by the kernel that writes another") {
  std::vector<LiveBuffer> bufs = {{"x", 512, 0, 1}, {"y", 512, 1, 1}};
  plan_memory(bufs, 256);
  CHECK(bufs[0].offset != bufs[1].offset);
  CHECK(check_memory_plan(bufs, 256));
}

TEST_CASE("memory_plan: aligned offsets, zero-size buffers, determinism, bad intervals") {
  std::vector<LiveBuffer> bufs = {{"a", 1, 0, 5}, {"b", 0, 0, 5}, {"c", 300, 1, 2}, {"d", 3, 2, 4}};
  const MemoryPlan p = plan_memory(bufs, 256);
  for (const LiveBuffer& b : bufs) CHECK(b.offset % 256 == 0);
  CHECK(bufs[1].offset == 0);
  CHECK(p.arena_bytes == 256 + 512 + 256);
  std::vector<LiveBuffer> again = {{"a", 1, 0, 5}, {"b", 0, 0, 5}, {"c", 300, 1, 2}, {"d", 3, 2, 4}};
  plan_memory(again, 256);
  for (std::size_t i = 0; i < bufs.size(); ++i) CHECK(again[i].offset == bufs[i].offset);

  std::vector<LiveBuffer> bad = {{"z", 16, 3, 2}};
  CHECK_THROWS_AS(plan_memory(bad, 256), Error);

  // The checker catches an overlap.
  std::vector<LiveBuffer> overlapping = {{"p", 512, 0, 1, 0}, {"q", 512, 1, 2, 256}};
  std::string why;
  CHECK_FALSE(check_memory_plan(overlapping, 256, &why));
  CHECK(why.find("'p'") != std::string::npos);
}

TEST_CASE("memory_plan: random interval sets never overlap while live, and reuse memory") {
  std::mt19937 rng(12345);
  int reused = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 60);
    const int steps = 1 + static_cast<int>(rng() % 40);
    std::vector<LiveBuffer> bufs;
    for (int i = 0; i < n; ++i) {
      LiveBuffer b;
      b.name = "v" + std::to_string(i);
      b.bytes = rng() % 7 == 0 ? 0 : static_cast<int64_t>(1 + rng() % 100000);
      b.first = static_cast<int>(rng() % steps);
      b.last = b.first + static_cast<int>(rng() % (rng() % 3 == 0 ? steps : 4));
      bufs.push_back(b);
    }
    const MemoryPlan p = plan_memory(bufs, 256);
    std::string why;
    REQUIRE_MESSAGE(check_memory_plan(bufs, 256, &why), why);
    REQUIRE(sound_by_steps(bufs));
    CHECK(p.arena_bytes <= p.total_bytes);
    int64_t end = 0;
    for (const LiveBuffer& b : bufs) end = std::max(end, b.offset + align_up(b.bytes, 256));
    CHECK(p.arena_bytes == end);
    if (p.arena_bytes < p.total_bytes) ++reused;
  }
  CHECK(reused > 200);  // most random sets have buffers that are never live together
}

TEST_CASE("memory_plan: the bound is max live bytes, and a second order reaches it where largest-first does not") {
  // Largest first places d, b, c, then the small long-lived a finds no gap below b: 1792 bytes.
  // Earliest first puts a under c and reaches the bound, the 1536 bytes live at kernel 3 (a, b, c).
  std::vector<LiveBuffer> bufs = {{"a", 256, 3, 5}, {"b", 768, 2, 3}, {"c", 768, 4, 5}, {"d", 768, 1, 2}};
  CHECK(max_live_bytes(bufs, 256) == 1536);
  const MemoryPlan p = plan_memory(bufs, 256);
  CHECK(p.max_live_bytes == 1536);
  CHECK(p.arena_bytes == 1536);
  CHECK(p.order == "earliest first");
  CHECK(check_memory_plan(bufs, 256));
  CHECK(sound_by_steps(bufs));
}

TEST_CASE("memory_plan: longest-lived first reaches the bound where the other orders do not") {
  // a and c are long-lived and small (a transformer's residual stream); largest first and earliest
  // first leave a gap that e cannot use (1536 bytes), by bytes x lifetime 1792; placing the
  // long-lived ones first packs the short-lived large ones around them: 1280, the bound (kernels 2, 4).
  std::vector<LiveBuffer> bufs = {
      {"a", 256, 1, 5}, {"b", 512, 1, 2}, {"c", 256, 3, 7}, {"d", 512, 2, 3}, {"e", 768, 4, 5}};
  CHECK(max_live_bytes(bufs, 256) == 1280);
  const MemoryPlan p = plan_memory(bufs, 256);
  CHECK(p.arena_bytes == 1280);
  CHECK(p.order == "longest-lived first");
  CHECK(check_memory_plan(bufs, 256));
  CHECK(sound_by_steps(bufs));
}
