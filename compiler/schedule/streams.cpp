#include "schedule/streams.h"

#include <algorithm>
#include <map>

#include "schedule/lower.h"
#include "support/error.h"

namespace modelc {

int StreamPlan::concurrent_last(const std::vector<int>& accesses) const {
  const int last = accesses.back();
  for (int q = static_cast<int>(stream.size()) - 1; q > last; --q) {
    for (int a : accesses) {
      if (!happens_before(a, q)) return q;
    }
  }
  return last;
}

StreamPlan assign_streams(const std::vector<std::vector<int>>& preds, int max_streams) {
  if (max_streams < 1) throw Error("internal: assign_streams needs at least one stream");
  const int n = static_cast<int>(preds.size());
  StreamPlan p;
  p.streams = 0;
  p.stream.assign(n, 0);
  p.seq.assign(n, 0);
  p.waits.assign(n, {});
  p.event.assign(n, -1);
  p.clock.assign(n, std::vector<int>(static_cast<std::size_t>(max_streams), -1));
  std::vector<int> depth(n, 1);
  std::vector<int> tail;  // per open stream: its last kernel
  for (int j = 0; j < n; ++j) {
    std::vector<int> pj = preds[j];
    std::sort(pj.begin(), pj.end());
    pj.erase(std::unique(pj.begin(), pj.end()), pj.end());
    for (int q : pj) {
      if (q < 0 || q >= j) throw Error("internal: kernel #" + std::to_string(j) + " depends on a later kernel");
      depth[j] = std::max(depth[j], depth[q] + 1);
    }
    // Which stream: see streams.h (1. a chain continues, 2. a stream idle before j, 3. a new one,
    // 4. the shallowest tail).
    int s = -1;
    for (int q : pj) {
      const int t = p.stream[q];
      if (tail[t] == q && (s < 0 || depth[q] > depth[tail[s]] || (depth[q] == depth[tail[s]] && t < s))) s = t;
    }
    for (int t = 0; s < 0 && t < static_cast<int>(tail.size()); ++t) {
      for (int q : pj) {
        if (p.happens_before(tail[t], q)) {
          s = t;
          break;
        }
      }
    }
    if (s < 0 && static_cast<int>(tail.size()) < max_streams) {
      s = static_cast<int>(tail.size());
      tail.push_back(-1);
    }
    for (int t = 0; s < 0 && t < static_cast<int>(tail.size()); ++t) {
      if (t == 0 || depth[tail[t]] < depth[tail[s]]) s = t;
    }
    std::vector<int>& clock = p.clock[j];
    if (tail[s] >= 0) clock = p.clock[tail[s]];
    for (auto it = pj.rbegin(); it != pj.rend(); ++it) {  // latest first: no wait implied by a later one
      if (clock[p.stream[*it]] >= p.seq[*it]) continue;
      p.waits[j].push_back(*it);
      for (std::size_t t = 0; t < clock.size(); ++t) clock[t] = std::max(clock[t], p.clock[*it][t]);
    }
    p.stream[j] = s;
    p.seq[j] = tail[s] >= 0 ? p.seq[tail[s]] + 1 : 0;
    clock[s] = p.seq[j];
    tail[s] = j;
    p.critical_path = std::max(p.critical_path, depth[j]);
  }
  p.streams = std::max(1, static_cast<int>(tail.size()));
  std::vector<bool> waited(n, false);
  for (const std::vector<int>& w : p.waits) {
    for (int q : w) waited[q] = true;
  }
  for (int j = 0; j < n; ++j) {
    if (waited[j]) p.event[j] = p.kernel_events++;
  }
  return p;
}

// The kernel DAG: j depends on i < j when both touch one buffer (views, folded Casts and elided
// Concats resolved to it) and one of them writes it, except two writers of different slices of an
// elided Concat's buffer. Constants and model inputs are only read: no edge.
std::vector<std::vector<int>> Lowering::kernel_dependencies() const {
  struct Access {
    int kernel;
    const Value* writes;  // the value written (a slice of the buffer, or all of it); null: a read
  };
  std::map<const Value*, std::vector<Access>> accesses;  // buffer -> its accesses so far
  std::vector<std::vector<int>> preds(nodes_.size());
  for (int k = 0; k < static_cast<int>(nodes_.size()); ++k) {
    auto touch = [&](const Value* v, bool write) {
      if (!v) return;
      const Value* b = buffer(v);
      if (b->is_constant() || b->is_graph_input()) return;
      const Value* written = write ? stored(v) : nullptr;
      std::vector<Access>& list = accesses[b];
      for (const Access& a : list) {
        const bool slices = written && a.writes && written != a.writes;
        if (a.kernel != k && (written || a.writes) && !slices) preds[k].push_back(a.kernel);
      }
      list.push_back({k, written});
    };
    for (const Value* in : kernel_inputs(nodes_[k])) touch(in, false);
    for (const Value* out : kernel_outputs(nodes_[k])) touch(out, true);
  }
  return preds;
}

bool Lowering::plan_streams() {
  done_.insert("streams");
  streams_ = assign_streams(kernel_dependencies(), o_.streams > 0 ? o_.streams : kAutomaticStreams);
  s_.streams = streams_.streams;
  s_.events = streams_.events();
  s_.critical_path = streams_.critical_path;
  return streams_.streams > 1;
}

}  // namespace modelc
