// compiler/reference/parallel.h — the reference interpreter's threads: one pool, and a parallel loop
// over tasks that the caller cuts from the problem alone.
//
// Results never depend on the number of threads: a task is a fixed piece of the output (its bounds
// follow from the shapes, never from the thread count), computed by one thread in a fixed order,
// and no two tasks write the same element. Which thread runs a task changes nothing it computes.
#pragma once

#include <cstdint>
#include <functional>

namespace modelc::reference {

/// \brief The number of threads the reference runs on: $MODELC_THREADS when set (1 to 256), else
/// the machine's hardware threads.
int threads();

/// \brief Sets the number of threads (tests compare 1 against several); 0 restores the default.
void set_threads(int n);

/// \brief Runs fn(t) for every t in [0, tasks), spread over threads(); returns when all are done.
/// Called from inside a task (or while another thread's loop holds the pool) it runs the tasks on
/// the calling thread, in order. An exception thrown by a task is rethrown here once every task has
/// finished: the one of the lowest task index, so the error does not depend on the threads either.
/// `work`: about how many elementary operations all tasks do together; a loop of less than
/// kInlineWork runs on the calling thread (waking the pool would cost more than it saves). The
/// tasks, and so the results, are the same either way.
void parallel_for(int64_t tasks, const std::function<void(int64_t)>& fn, int64_t work = INT64_MAX);
constexpr int64_t kInlineWork = int64_t{1} << 16;

/// \brief fn(i) for every i in [0, count): pieces of consecutive indexes, their length cut from
/// `per_item` (about the operations of one index) alone, threads over the pieces. For ops whose
/// slices (planes, rows) are independent: each index writes its own outputs.
void parallel_items(int64_t count, int64_t per_item, const std::function<void(int64_t)>& fn);

/// \brief Splits [0, count) into pieces of about `grain` elements (at least one piece; the last
/// may be shorter): piece t is [t * step, min(count, (t + 1) * step)). Shapes decide it, never the
/// thread count.
struct Split {
  int64_t count = 0, step = 1, pieces = 0;
  Split(int64_t count, int64_t grain);
  int64_t begin(int64_t t) const { return t * step; }
  int64_t end(int64_t t) const { return t * step + step < count ? t * step + step : count; }
};

}  // namespace modelc::reference
