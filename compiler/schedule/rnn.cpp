// compiler/schedule/rnn.cpp — see rnn.h.
#include "schedule/rnn.h"

#include <fmt/format.h>

#include <algorithm>

#include "schedule/families.h"
#include "schedule/family_work.h"
#include "support/error.h"

namespace modelc::rnn {

int rnn_threads(int64_t rows) { return 32 * static_cast<int>(std::clamp<int64_t>((rows + 7) / 8, 1, 8)); }

RnnKernel rnn_kernel(const Kernel& k) {
  if (!k.source.node) throw Error("internal: rnn kernel " + k.id + " has no node");
  RnnKernel r;
  r.p = ops::rnn_params(*k.source.node);
  const int64_t H = r.p.hidden, GH = r.p.gates * H;
  r.threads = rnn_threads(GH);
  r.smem_bytes = 4 * (GH + 4 * H + (r.p.projected ? 0 : r.p.input));
  return r;
}

void rnn_tactic(Kernel& k, const std::vector<Target>& targets) {
  const RnnKernel& r = plan_of<RnnKernel>(k);
  for (const Target& t : targets) {
    if (r.smem_bytes > t.smem_per_block) {
      throw k.source.node->error(fmt::format("hidden size {} needs {} bytes of shared memory per block (the gates and the "
                                      "state of a sequence), more than sm_{}'s {}",
                                      r.p.hidden, r.smem_bytes, t.sm, t.smem_per_block),
                          "a smaller hidden size, or an --arch with more shared memory per block");
    }
  }
  k.tactic = DirectTactic{r.threads};
  const char* cell = r.p.cell == ops::RnnCell::lstm ? "LSTM" : r.p.cell == ops::RnnCell::gru ? "GRU" : "RNN";
  k.note = fmt::format("{} steps of {} ({} direction{}, batch {}, hidden {}) looped in one kernel: a block per "
                       "(direction, batch item), a warp per row of R; {}",
                       r.p.seq, cell, r.p.directions, r.p.directions > 1 ? "s" : "", r.p.batch, r.p.hidden,
                       r.p.projected ? "the input projection X * W^T computed before, as a product"
                                     : "the input projection computed per step in the loop");
}

namespace {

FamilyFacts rnn_facts() {
  FamilyFacts f;
  f.name = "rnn";
  f.choose_tactic = rnn_tactic;
  f.plan = [](const Kernel& k) { return make_plan("rnn", rnn_kernel(k)); };
  f.work = work::rnn;
  return f;
}

const FamilyFactsRegistration rnn_registration{rnn_facts()};

}  // namespace
}  // namespace modelc::rnn
