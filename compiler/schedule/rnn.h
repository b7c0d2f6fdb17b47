// compiler/schedule/rnn.h — the rnn family (LSTM / GRU / RNN and their recurrence forms) as the
// schedule sees it: its facts (registered beside families.cpp's table), its tactic rule and the
// geometry of its one kernel (templates/rnn.cuh, mc::rnn::Recurrence), which the printer and the
// cost model read.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/rnn.h"
#include "schedule/schedule.h"
#include "schedule/target.h"

namespace modelc::rnn {

/// \brief The kernel of a recurrent node: a block per (direction, batch item) looping over the
/// steps; warps split the gates' rows (gates * hidden).
struct RnnKernel {
  ops::RnnParams p;
  int threads = 32;
  int64_t smem_bytes = 0;  ///< dynamic shared memory: the gates, h, c, GRU's terms, X's step row
  int64_t blocks() const { return p.directions * p.batch; }
};
/// The family's plan: the node's recurrence (ops::rnn_params) and its block.
RnnKernel rnn_kernel(const Kernel& k);
/// Threads for `rows` gate rows: a warp per row up to 8 warps (rows / 8 rounded up, at least one).
int rnn_threads(int64_t rows);

/// rnn: the block size and the shared memory, checked against every target's per-block limit (an
/// Error naming the node when the hidden size needs more).
void rnn_tactic(Kernel& k, const std::vector<Target>& targets);

}  // namespace modelc::rnn
