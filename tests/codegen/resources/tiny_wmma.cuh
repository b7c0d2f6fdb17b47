// tests/codegen/resources/tiny_wmma.cuh — the types of tiny_wmma.cu (a header, as the emitted
// folder's kernels/*.cuh: the resources tool reads the enums from the headers).
#pragma once

#include <cstdint>

#include <cuda_fp16.h>

namespace mc {

enum class Act { none, relu, gelu = 5 };

template <int64_t B, int64_t R, int64_t C>
struct Strides {};

namespace tc {

template <class T, class S, Act A, bool Mma, int Warps = 4>
struct Gemm {
  static constexpr bool kMma = Mma;
  struct Params {
    const T* a;
    const T* b;
    float* y;
  };
};

}  // namespace tc

namespace simt {

template <class T, int64_t N, Act A, class Tag>
struct Ew {
  static constexpr int64_t kN = N;
  static constexpr Act kAct = A;
  struct Params {
    const T* x;
    float* y;
  };
};

}  // namespace simt
}  // namespace mc
