#include "schedule/streams.h"

#include <algorithm>
#include <map>

#include "schedule/stages.h"
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

std::vector<std::vector<int>> kernel_dependencies(const Schedule& s) {
  struct Access {
    int kernel;
    std::string writes;  // the value written (a slice of the buffer, or all of it); empty: a read
  };
  std::map<int, std::vector<Access>> accesses;  // buffer -> its accesses so far
  std::vector<std::vector<int>> preds(s.kernels.size());
  for (int k = 0; k < static_cast<int>(s.kernels.size()); ++k) {
    auto touch = [&](const TensorView& v, bool write) {
      if (v.buffer < 0) return;
      const Space space = s.buffers[static_cast<std::size_t>(v.buffer)].space;
      if (space == Space::weights || space == Space::input) return;
      const std::string written = write ? v.value : std::string();
      std::vector<Access>& list = accesses[v.buffer];
      for (const Access& a : list) {
        const bool slices = !written.empty() && !a.writes.empty() && written != a.writes;
        if (a.kernel != k && (!written.empty() || !a.writes.empty()) && !slices) preds[static_cast<std::size_t>(k)].push_back(a.kernel);
      }
      list.push_back({k, written});
    };
    for (const TensorView& in : s.kernels[static_cast<std::size_t>(k)].inputs) touch(in, false);
    for (const TensorView& out : s.kernels[static_cast<std::size_t>(k)].outputs) touch(out, true);
  }
  return preds;
}

StreamPlan stream_order(const Schedule& s) {
  const int n = static_cast<int>(s.kernels.size());
  StreamPlan p;
  p.stream.assign(static_cast<std::size_t>(n), 0);
  p.seq.assign(static_cast<std::size_t>(n), 0);
  p.waits.assign(static_cast<std::size_t>(n), {});
  p.event.assign(static_cast<std::size_t>(n), -1);
  int streams = 1;
  std::map<int, int> recorded;  // event -> the kernel that records it
  for (int j = 0; j < n; ++j) {
    const Kernel& k = s.kernels[static_cast<std::size_t>(j)];
    if (k.stream < 0) throw Error("internal: kernel " + k.id + " on stream " + std::to_string(k.stream));
    streams = std::max(streams, k.stream + 1);
    p.stream[static_cast<std::size_t>(j)] = k.stream;
    p.event[static_cast<std::size_t>(j)] = k.event;
    if (k.event >= 0) recorded[k.event] = j;
    for (int e : k.waits) {
      auto it = recorded.find(e);
      if (it == recorded.end()) {
        throw Error("internal: kernel " + k.id + " waits on event " + std::to_string(e) + ", which no earlier kernel records");
      }
      p.waits[static_cast<std::size_t>(j)].push_back(it->second);
    }
  }
  p.streams = streams;
  p.kernel_events = static_cast<int>(recorded.size());
  p.clock.assign(static_cast<std::size_t>(n), std::vector<int>(static_cast<std::size_t>(streams), -1));
  std::vector<int> tail(static_cast<std::size_t>(streams), -1);  // per stream: its last kernel so far
  for (int j = 0; j < n; ++j) {
    const int st = p.stream[static_cast<std::size_t>(j)];
    std::vector<int>& clock = p.clock[static_cast<std::size_t>(j)];
    const int prev = tail[static_cast<std::size_t>(st)];
    if (prev >= 0) clock = p.clock[static_cast<std::size_t>(prev)];
    for (int w : p.waits[static_cast<std::size_t>(j)]) {
      for (std::size_t t = 0; t < clock.size(); ++t) clock[t] = std::max(clock[t], p.clock[static_cast<std::size_t>(w)][t]);
    }
    p.seq[static_cast<std::size_t>(j)] = prev >= 0 ? p.seq[static_cast<std::size_t>(prev)] + 1 : 0;
    clock[static_cast<std::size_t>(st)] = p.seq[static_cast<std::size_t>(j)];
    tail[static_cast<std::size_t>(st)] = j;
  }
  return p;
}

bool plan_streams(Schedule& s, const LowerOptions& o) {
  const StreamPlan p = assign_streams(kernel_dependencies(s), o.streams > 0 ? o.streams : kAutomaticStreams);
  for (std::size_t i = 0; i < s.kernels.size(); ++i) {
    Kernel& k = s.kernels[i];
    k.stream = p.stream[i];
    k.waits.clear();
    for (int w : p.waits[i]) k.waits.push_back(p.event[static_cast<std::size_t>(w)]);
    k.event = p.event[i];
  }
  s.streams = p.streams;
  s.events = p.events();
  s.critical_path = p.critical_path;
  return p.streams > 1;
}

}  // namespace modelc
