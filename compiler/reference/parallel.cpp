// compiler/reference/parallel.cpp — see parallel.h.
#include "reference/parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <climits>
#include <thread>
#include <vector>

namespace modelc::reference {

namespace {

int default_threads() {
  if (const char* s = std::getenv("MODELC_THREADS")) {
    char* end = nullptr;
    const long v = std::strtol(s, &end, 10);
    if (end != s && *end == '\0' && v >= 1 && v <= 256) return static_cast<int>(v);
  }
  const unsigned h = std::thread::hardware_concurrency();
  return h == 0 ? 1 : static_cast<int>(std::min(h, 256u));
}

std::atomic<int> g_threads{0};  // 0: not yet read from the environment

// True on a pool worker, and on a caller while its loop runs: a nested loop runs inline.
thread_local bool t_in_loop = false;

/// Workers wait for a job; the caller of parallel_for takes tasks too. One job at a time: a second
/// caller that finds the pool busy runs its tasks itself.
class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> l(m_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  /// False when another thread's job holds the pool.
  bool run(int64_t tasks, const std::function<void(int64_t)>& fn, int threads) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    grow(threads - 1);
    {
      std::lock_guard<std::mutex> l(m_);
      fn_ = &fn;
      tasks_ = tasks;
      next_.store(0);
      error_ = nullptr;
      error_task_ = tasks;
      // Only the first threads - 1 workers join this job (set_threads may have lowered the count).
      joining_ = std::min<int>(threads - 1, static_cast<int>(workers_.size()));
      active_ = joining_;
      ++generation_;
    }
    wake_.notify_all();
    work();
    std::unique_lock<std::mutex> l(m_);
    done_.wait(l, [&] { return active_ == 0; });
    fn_ = nullptr;
    if (error_) std::rethrow_exception(error_);
    return true;
  }

 private:
  void grow(int want) {
    while (static_cast<int>(workers_.size()) < want) {
      const int index = static_cast<int>(workers_.size());
      workers_.emplace_back([this, index] { worker(index); });
    }
  }

  void worker(int index) {
    t_in_loop = true;
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> l(m_);
        wake_.wait(l, [&] { return stop_ || (generation_ != seen && index < joining_); });
        if (stop_) return;
        seen = generation_;
      }
      work();
      std::lock_guard<std::mutex> l(m_);
      if (--active_ == 0) done_.notify_all();
    }
  }

  void work() {
    const bool was = t_in_loop;
    t_in_loop = true;
    for (;;) {
      const int64_t t = next_.fetch_add(1);
      if (t >= tasks_) break;
      try {
        (*fn_)(t);
      } catch (...) {
        std::lock_guard<std::mutex> l(m_);
        if (t < error_task_) {
          error_task_ = t;
          error_ = std::current_exception();
        }
      }
    }
    t_in_loop = was;
  }

  std::mutex busy_;  // held by the caller whose job runs
  std::mutex m_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  const std::function<void(int64_t)>* fn_ = nullptr;
  int64_t tasks_ = 0;
  std::atomic<int64_t> next_{0};
  int joining_ = 0, active_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  int64_t error_task_ = 0;
};

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

int threads() {
  int n = g_threads.load();
  if (n == 0) {
    n = default_threads();
    g_threads.store(n);
  }
  return n;
}

void set_threads(int n) { g_threads.store(n <= 0 ? default_threads() : std::min(n, 256)); }

void parallel_for(int64_t tasks, const std::function<void(int64_t)>& fn, int64_t work) {
  if (tasks <= 0) return;
  const int n = threads();
  if (tasks == 1 || n <= 1 || work < kInlineWork || t_in_loop || !pool().run(tasks, fn, static_cast<int>(std::min<int64_t>(n, tasks)))) {
    // Inline, in task order; the first exception propagates (the lowest task index, as in the pool).
    for (int64_t t = 0; t < tasks; ++t) fn(t);
  }
}

void parallel_items(int64_t count, int64_t per_item, const std::function<void(int64_t)>& fn) {
  if (count <= 0) return;
  const int64_t per = std::max<int64_t>(1, per_item);
  const Split pieces(count, std::max<int64_t>(1, (int64_t{1} << 15) / per));
  parallel_for(
      pieces.pieces,
      [&](int64_t t) {
        for (int64_t i = pieces.begin(t); i < pieces.end(t); ++i) fn(i);
      },
      count > INT64_MAX / per ? INT64_MAX : count * per);
}

Split::Split(int64_t c, int64_t grain) : count(c) {
  if (count <= 0) {
    pieces = 0;
    return;
  }
  step = std::max<int64_t>(1, grain);
  pieces = (count + step - 1) / step;
}

}  // namespace modelc::reference
