// compiler/reference/accumulation.h — how the reference interpreter's products accumulate: the
// float64 path (the ground truth) or the float32 path (the precision simulations); see
// reference/kernels.h for what each computes.
#pragma once

namespace modelc::reference {

/// \brief How the products of a reference run accumulate: f64, double accumulators (the ground
/// truth of verify and the tests); f32, float accumulators (sgemm) where the data is float32.
enum class Accumulation { f64, f32 };

/// \brief The accumulation of the run on this thread (run_reference sets it; f64 outside a run).
Accumulation accumulation();

/// \brief Sets the calling thread's accumulation for its lifetime, then restores the previous.
class AccumulationScope {
 public:
  explicit AccumulationScope(Accumulation a);
  ~AccumulationScope();
  AccumulationScope(const AccumulationScope&) = delete;
  AccumulationScope& operator=(const AccumulationScope&) = delete;

 private:
  Accumulation saved_;
};

}  // namespace modelc::reference
