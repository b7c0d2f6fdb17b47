// compiler/schedule/profiles.cpp — one weights blob and one batch layout for batch profiles
// (schedule/profiles.h).
#include "schedule/profiles.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "schedule/stages.h"
#include "schedule/memory_plan.h"
#include "support/error.h"

namespace modelc {

namespace {

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         (a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
}

// A cheap key of a tensor's bytes: its size and a few of them (equal tensors have equal keys).
uint64_t bytes_key(const Tensor& t) {
  uint64_t h = 1469598103934665603ull ^ t.nbytes();
  const std::size_t n = t.nbytes();
  for (std::size_t k = 0; k < 16 && n > 0; ++k) h = (h ^ t.raw()[(n - 1) * k / 15]) * 1099511628211ull;
  return h;
}

std::string shape_text(const Shape& s) { return "[" + (s.empty() ? std::string() : shape_str(s)) + "]"; }

}  // namespace

void share_weights(const std::vector<Schedule*>& profiles) {
  if (profiles.empty()) return;
  std::vector<WeightEntry> blob = profiles[0]->weights;
  int64_t bytes = profiles[0]->weights_bytes;
  std::map<uint64_t, std::vector<std::size_t>> by_key;  // bytes_key -> entries of blob
  for (std::size_t i = 0; i < blob.size(); ++i) by_key[bytes_key(blob[i].data)].push_back(i);

  for (std::size_t p = 1; p < profiles.size(); ++p) {
    Schedule& s = *profiles[p];
    // Where each of its entries lands in the blob.
    std::vector<std::pair<const WeightEntry*, int64_t>> moved;  // (entry, its offset in the blob)
    for (const WeightEntry& e : s.weights) {
      std::vector<std::size_t>& same = by_key[bytes_key(e.data)];
      int64_t at = -1;
      for (std::size_t i : same) {
        if (same_bytes(blob[i].data, e.data)) {
          at = blob[i].offset;
          break;
        }
      }
      if (at < 0) {
        at = bytes;
        same.push_back(blob.size());
        blob.push_back({e.value, at, e.data});
        bytes = align_up(at + static_cast<int64_t>(e.data.nbytes()), kBufferAlignment);
      }
      moved.emplace_back(&e, at);
    }
    // Its weight buffers and its kernels' weight views follow their entries (a view may start
    // inside one).
    auto moved_to = [&](int64_t offset, const std::string& what) {
      for (const auto& [e, at] : moved) {
        const int64_t end = e->offset + std::max<int64_t>(1, static_cast<int64_t>(e->data.nbytes()));
        if (offset >= e->offset && offset < end) return offset + at - e->offset;
      }
      throw Error("internal: profile batch " + std::to_string(s.batch) + ": weights " + what + " at byte " +
                  std::to_string(offset) + " lies in no weight");
    };
    for (Buffer& b : s.buffers) {
      if (b.space == Space::weights && b.offset >= 0) b.offset = moved_to(b.offset, "buffer '" + b.name + "'");
    }
    auto place = [&](TensorView& v) {
      if (v.space != Space::weights || v.dtype == DType::undefined) return;
      v.offset = moved_to(v.offset, "view '" + v.value + "'");
    };
    for (Kernel& k : s.kernels) {
      for (TensorView& v : k.inputs) place(v);
      for (TensorView& v : k.outputs) place(v);
    }
  }
  for (Schedule* s : profiles) {
    s->weights = blob;
    s->weights_bytes = bytes;
  }
}

void mark_batched(const std::vector<Schedule*>& profiles) {
  if (profiles.size() < 2) throw Error("internal: mark_batched needs two profiles or more");
  const Schedule& first = *profiles.front();
  const Schedule& last = *profiles.back();
  auto mark = [&](auto member, const char* what) {
    const std::vector<ModelTensor>& ref = first.*member;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      const ModelTensor& a = ref[i];
      const ModelTensor& z = (last.*member)[i];
      const bool batched = a.shape != z.shape;
      for (Schedule* s : profiles) {
        const std::vector<ModelTensor>& ts = s->*member;
        if (ts.size() != ref.size() || ts[i].name != a.name || ts[i].dtype != a.dtype || ts[i].shape.size() != a.shape.size()) {
          throw Error(std::string("internal: the batch profiles' ") + what + "s differ");
        }
        const ModelTensor& t = ts[i];
        if (!batched) continue;
        // The first dim is the batch times one constant (a.shape[0] / first.batch), the others as in `first`.
        bool ok = !t.shape.empty() && a.shape[0] % first.batch == 0 &&
                  t.shape[0] == a.shape[0] / first.batch * s->batch;
        for (std::size_t d = 1; ok && d < t.shape.size(); ++d) ok = t.shape[d] == a.shape[d];
        if (!ok) {
          throw Error(std::string(what) + " '" + a.name + "' is " + shape_text(a.shape) + " at batch " +
                          std::to_string(first.batch) + " and " + shape_text(t.shape) + " at batch " +
                          std::to_string(s->batch) + ": batch profiles need the batch in the first dim of every " +
                          what + " that depends on it (the program pads inputs and trims outputs along it)",
                      "compile one batch at a time (--batch N), or re-export the model with the batch first");
        }
      }
      for (Schedule* s : profiles) (s->*member)[i].batched = batched;
    }
  };
  mark(&Schedule::inputs, "input");
  mark(&Schedule::outputs, "output");
}

int64_t default_batch(const Schedule& s) {
  for (const ModelTensor& t : s.inputs) {
    if (!t.shape.empty()) return std::max<int64_t>(1, t.shape[0]);
  }
  return 1;
}

}  // namespace modelc
