// tests/templates/nvcc/channel_rnn_vision.cu — instantiates the templates of LRN (channel_norm.cuh),
// the recurrences (rnn.cuh) and GridSample / RoiAlign / NonMaxSuppression (vision.cuh) and their
// launches for nvcc (sm_75, sm_90; no run): float and __half storage, NCHW and channels-last
// strides, each cell and flag, projected and inline input, every sampling mode and padding.
//   nvcc -std=c++17 -arch=sm_75 -I runtime_stub -I templates -x cu -c channel_rnn_vision.cu
#include "channel_norm.cuh"
#include "rnn.cuh"
#include "vision.cuh"

namespace {

using mc::ix::Dims;

template <class K>
cudaError_t launch(cudaError_t e, cudaStream_t s, void (*kernel)(const typename K::Params), const typename K::Params& p,
                   size_t smem = 0) {
  if (e != cudaSuccess) return e;
  return mc::launch(kernel, K::grid(), K::block(), smem, s, p);
}

template <class K>
cudaError_t lrn(cudaError_t e, cudaStream_t s) {
  return launch<K>(e, s, mc::norm::lrn_kernel<K>, typename K::Params{});
}

template <class K>
cudaError_t rnn(cudaError_t e, cudaStream_t s) {
  return launch<K>(e, s, mc::rnn::recurrence_kernel<K>, typename K::Params{}, K::kSmemBytes);
}

template <class K>
cudaError_t vision(cudaError_t e, cudaStream_t s) {
  return launch<K>(e, s, mc::vision::vision_kernel<K>, typename K::Params{});
}

using None = Dims<>;

}  // namespace

cudaError_t channel_rnn_vision_launch_all(cudaStream_t s) {
  cudaError_t e = cudaSuccess;
  // LRN: NCHW, and channels-last with a pitch of 8 for 5 channels (FP16, an FP32 output).
  e = lrn<mc::norm::Lrn<float, float, Dims<2, 5, 3, 4>, Dims<60, 12, 4, 1>, Dims<60, 12, 4, 1>, 1, 1>>(e, s);
  e = lrn<mc::norm::Lrn<__half, float, Dims<2, 5, 3, 4>, Dims<96, 1, 32, 8>, Dims<60, 12, 4, 1>, 1, 2>>(e, s);

  // Recurrences: LSTM on XW (bidirectional, every optional input, input_forget), LSTM computing X W^T
  // itself (FP16), GRU (linear_before_reset 0 and 1, reversed), RNN (no bias, Y_h only).
  e = rnn<mc::rnn::Recurrence<mc::rnn::kLstm, mc::rnn::kInputForget, 64, float, Dims<2, 5, 3, 0, 20>,
                              Dims<1200, 240, 80, 1>, None, Dims<1600, 20, 1>, Dims<160, 1>, Dims<1>, Dims<60, 20, 1>,
                              Dims<60, 20, 1>, Dims<60, 1>, Dims<120, 60, 20, 1>, Dims<60, 20, 1>, Dims<60, 20, 1>>>(e, s);
  e = rnn<mc::rnn::Recurrence<mc::rnn::kLstm, 0, 128, __half, Dims<1, 7, 2, 16, 64>, Dims<32, 16, 1>,
                              Dims<4096, 16, 1>, Dims<16384, 64, 1>, Dims<512, 1>, None, None, None, None,
                              Dims<128, 128, 64, 1>, Dims<128, 64, 1>, None>>(e, s);
  e = rnn<mc::rnn::Recurrence<mc::rnn::kGru, mc::rnn::kReverse, 32, float, Dims<1, 4, 2, 0, 5>, Dims<120, 30, 15, 1>,
                              None, Dims<75, 5, 1>, Dims<30, 1>, None, Dims<10, 5, 1>, None, None, None,
                              Dims<10, 5, 1>, None>>(e, s);
  e = rnn<mc::rnn::Recurrence<mc::rnn::kGru, mc::rnn::kLinearBeforeReset, 96, __half, Dims<2, 4, 2, 0, 32>,
                              Dims<768, 192, 96, 1>, None, Dims<3072, 32, 1>, Dims<192, 1>, Dims<1>, None, None, None,
                              Dims<128, 64, 32, 1>, None, None>>(e, s);
  e = rnn<mc::rnn::Recurrence<mc::rnn::kRnn, 0, 32, float, Dims<1, 3, 2, 4, 5>, Dims<8, 4, 1>, Dims<20, 4, 1>,
                              Dims<25, 5, 1>, None, None, None, None, None, None, Dims<10, 5, 1>, None>>(e, s);

  // GridSample: each mode and padding, a channels-last X.
  using GX = Dims<2, 3, 5, 6>;
  using GY = Dims<2, 3, 4, 7>;
  e = vision<mc::vision::GridSample<float, float, float, mc::vision::kLinear, mc::vision::kZeros, false, GX,
                                    Dims<90, 30, 6, 1>, Dims<56, 14, 2, 1>, GY, Dims<84, 28, 7, 1>>>(e, s);
  e = vision<mc::vision::GridSample<__half, float, __half, mc::vision::kNearest, mc::vision::kReflection, true, GX,
                                    Dims<90, 1, 18, 3>, Dims<56, 14, 2, 1>, GY, Dims<84, 28, 7, 1>>>(e, s);
  e = vision<mc::vision::GridSample<float, float, float, mc::vision::kCubic, mc::vision::kBorder, false, GX,
                                    Dims<90, 30, 6, 1>, Dims<56, 14, 2, 1>, GY, Dims<84, 28, 7, 1>>>(e, s);
  // RoiAlign: average (adaptive sampling) and max (2 x 2).
  e = vision<mc::vision::RoiAlign<float, float, float, false, true, 0, Dims<2, 3, 12, 10>, Dims<360, 120, 10, 1>,
                                  Dims<4, 1>, Dims<1>, Dims<4, 3, 3, 4>, Dims<36, 12, 4, 1>>>(e, s);
  e = vision<mc::vision::RoiAlign<__half, __half, __half, true, false, 2, Dims<2, 3, 12, 10>, Dims<360, 1, 30, 3>,
                                  Dims<4, 1>, Dims<1>, Dims<4, 3, 2, 3>, Dims<18, 6, 3, 1>>>(e, s);
  // NonMaxSuppression: corners and centers.
  e = vision<mc::vision::NmsSelect<float, float, false, 2, 3, 9, 4, Dims<36, 4, 1>, Dims<27, 9, 1>>>(e, s);
  e = vision<mc::vision::NmsSelect<__half, __half, true, 1, 80, 1000, 100, Dims<4000, 4, 1>, Dims<80000, 1000, 1>>>(e, s);
  e = vision<mc::vision::NmsCompact<2, 3, 9, 4, Dims<3, 1>>>(e, s);
  return e;
}
