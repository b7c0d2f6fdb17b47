// reference/parallel.h: every task runs once, a nested loop runs inline, the lowest task's error
// wins, and the pieces of a Split cover their range.
#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference/parallel.h"

using namespace modelc;

namespace {

/// Restores the default thread count when a test ends.
struct Threads {
  explicit Threads(int n) { reference::set_threads(n); }
  ~Threads() { reference::set_threads(0); }
};

}  // namespace

TEST_CASE("parallel_for runs every task once, on any thread count") {
  for (int n : {1, 2, 3, 8}) {
    Threads threads(n);
    CHECK(reference::threads() == n);
    std::vector<std::atomic<int>> runs(1000);
    reference::parallel_for(1000, [&](int64_t t) { runs[static_cast<std::size_t>(t)]++; });
    for (std::size_t t = 0; t < runs.size(); ++t) {
      INFO("threads " << n << " task " << t);
      CHECK(runs[t].load() == 1);
    }
  }
}

TEST_CASE("parallel_for: a loop inside a task runs inline, and finishes") {
  Threads threads(4);
  std::vector<std::atomic<int>> runs(64 * 32);
  reference::parallel_for(64, [&](int64_t t) {
    reference::parallel_for(32, [&](int64_t u) { runs[static_cast<std::size_t>(t * 32 + u)]++; });
  });
  for (const auto& r : runs) CHECK(r.load() == 1);
}

TEST_CASE("parallel_for rethrows the error of the lowest failing task, after all tasks ran") {
  for (int n : {1, 4}) {
    Threads threads(n);
    std::atomic<int> ran{0};
    std::string what;
    try {
      reference::parallel_for(200, [&](int64_t t) {
        ran++;
        if (t == 150 || t == 40 || t == 90) throw std::runtime_error("task " + std::to_string(t));
      });
    } catch (const std::runtime_error& e) {
      what = e.what();
    }
    INFO("threads " << n);
    CHECK(what == "task 40");
    // Inline, the loop stops at the first error; the pool finishes the tasks already handed out.
    CHECK(ran.load() >= 41);
  }
}

TEST_CASE("parallel_for: small work runs on the calling thread; the pool survives a second caller") {
  Threads threads(4);
  std::vector<int> order;
  // Below kInlineWork: inline, so in task order (a plain vector, no lock needed).
  reference::parallel_for(10, [&](int64_t t) { order.push_back(static_cast<int>(t)); }, 10);
  REQUIRE(order.size() == 10);
  for (int i = 0; i < 10; ++i) CHECK(order[static_cast<std::size_t>(i)] == i);
  std::atomic<int64_t> sum{0};
  reference::parallel_items(10000, 1000, [&](int64_t i) { sum += i; });
  CHECK(sum.load() == 10000 * 9999 / 2);
}

TEST_CASE("Split covers [0, count) in pieces of the grain") {
  const reference::Split s(10, 3);
  CHECK(s.pieces == 4);
  CHECK(s.begin(0) == 0);
  CHECK(s.end(0) == 3);
  CHECK(s.begin(3) == 9);
  CHECK(s.end(3) == 10);
  CHECK(reference::Split(0, 5).pieces == 0);
  CHECK(reference::Split(5, 0).pieces == 5);
  CHECK(reference::Split(5, 100).pieces == 1);
}
