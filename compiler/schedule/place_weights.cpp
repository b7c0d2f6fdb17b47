// compiler/schedule/place_weights.cpp — the place_weights stage: the weights blob, last, once.
//
// Every weight buffer a kernel reads is stored once, in its final form (a channels-last
// convolution's OHWI copy, Winograd's transformed U: whatever the stages before decided), 256-byte
// aligned, in order of first use: first the graph's constants, then the weights the tactics
// computed (in the order of the kernels that read them); identical data (dtype and bytes) is
// stored once, the buffers sharing its offset. Every weights view then gets its place.
#include <cstring>
#include <map>

#include "schedule/layout.h"
#include "schedule/stages.h"
#include "support/error.h"

namespace modelc {

namespace {

// A quick key for finding identical constants: the size and 64 sampled bytes (candidates with
// equal keys are compared in full).
uint64_t sample_key(const Tensor& t) {
  const uint8_t* p = t.raw();
  const std::size_t n = t.nbytes();
  uint64_t h = (1469598103934665603ull ^ n) * 1099511628211ull;
  h = (h ^ static_cast<uint64_t>(t.dtype())) * 1099511628211ull;
  for (std::size_t i = 0; i < 64 && n > 0; ++i) h = (h ^ p[i * (n - 1) / 63]) * 1099511628211ull;
  return h;
}

}  // namespace

bool place_weights(Schedule& s, const LowerOptions&) {
  std::map<uint64_t, std::vector<std::size_t>> keys;  // sample_key -> entries of s.weights with it
  // Stores t in the blob (identical data once); returns its offset.
  auto store = [&](const std::string& value, const Tensor& t) {
    std::vector<std::size_t>& same_key = keys[sample_key(t)];
    for (std::size_t e : same_key) {
      const Tensor& u = s.weights[e].data;
      if (u.dtype() == t.dtype() && u.nbytes() == t.nbytes() &&
          (t.nbytes() == 0 || std::memcmp(u.raw(), t.raw(), t.nbytes()) == 0)) {
        return s.weights[e].offset;
      }
    }
    const int64_t offset = s.weights_bytes;
    same_key.push_back(s.weights.size());
    s.weights.push_back({value, offset, t});
    s.weights_bytes = align_up(offset + static_cast<int64_t>(t.nbytes()), kBufferAlignment);
    return offset;
  };
  s.weights.clear();
  s.weights_bytes = 0;
  for (Buffer& b : s.buffers) {
    if (b.space == Space::weights) b.offset = -1;
  }
  for (const bool computed : {false, true}) {  // the graph's constants first, then the tactics' weights
    for (const Kernel& k : s.kernels) {
      for (const TensorView& v : k.inputs) {
        if (v.buffer < 0) continue;
        Buffer& b = s.buffers[static_cast<std::size_t>(v.buffer)];
        if (b.space != Space::weights || b.offset >= 0 || b.data.defined() != computed) continue;
        if (!computed && !b.value) throw Error("internal: weight buffer '" + b.name + "' holds no data");
        const Tensor data =
            computed ? b.data : b.ohwi ? ohwi_weights(b.value->constant(), *b.ohwi) : b.value->constant();
        b.offset = store(b.name, data);
      }
    }
  }
  for (Kernel& k : s.kernels) {
    for (TensorView& v : k.inputs) {
      if (v.buffer >= 0 && v.space == Space::weights) v.offset = s.buffers[static_cast<std::size_t>(v.buffer)].offset + v.buffer_offset;
    }
  }
  return !s.weights.empty();
}

}  // namespace modelc
