// compiler/schedule/fold_gemm_batch.cpp — the fold_gemm_batch stage: a matrix product's batch dims
// that B broadcasts over (stride 0), and along which A, Y and C continue their rows, run as more
// rows (M) of one product (Kernel::batch_as_rows; schedule/linear.h lower_gemm reads it), where
// that leaves fewer products.
#include "schedule/linear.h"
#include "schedule/stages.h"

namespace modelc {

bool fold_gemm_batch(Schedule& s, const LowerOptions&) {
  bool changed = false;
  for (Kernel& k : s.kernels) {
    if (k.family_name() != "gemm") continue;
    const int64_t products = linear::lower_gemm(k).batch_count();
    k.batch_as_rows = true;
    if (linear::lower_gemm(k).batch_count() == products) {
      k.batch_as_rows = false;  // nothing to fold: the kernel stays as it was
    } else {
      changed = true;
    }
  }
  return changed;
}

}  // namespace modelc
