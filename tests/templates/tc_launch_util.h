// tests/templates/tc_launch_util.h — launching a tensor-core product template on the host emulation
// as the emitted code does: tc::Gemm (its shared memory limit raised; split-K into a NaN-filled
// workspace, so a partial sum the reduction reads but no split wrote shows, then SplitKReduce) or
// smallm::Gemm (split-K: the NaN-filled partial sums and zeroed tickets of its one launch, the
// tickets checked back at zero after it). Shared by the tensor-core and row-table template tests.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <type_traits>
#include <vector>

#include "templates/gemm_small_m.cuh"

namespace tc_test {

/// \brief Whether K is a smallm::Gemm instantiation.
template <class K>
struct IsSmallM : std::false_type {};
template <class... A>
struct IsSmallM<mc::smallm::Gemm<A...>> : std::true_type {};

/// \brief Launches product K (tc::Gemm or smallm::Gemm) with its split-K workspace, and waits.
template <class K>
void launch_product(typename K::Params p) {
  std::vector<float> partial;
  if constexpr (IsSmallM<K>::value) {
    REQUIRE(cudaFuncSetAttribute(mc::smallm::kernel<K>, cudaFuncAttributeMaxDynamicSharedMemorySize, K::kSmemBytes) ==
            cudaSuccess);
    std::vector<unsigned> tickets(static_cast<std::size_t>(K::kTickets), 0u);
    if constexpr (K::Tl::kSplitK > 1) {
      partial.assign(static_cast<std::size_t>(K::kPartialFloats), std::nanf(""));
      p.partial = partial.data();
      p.tickets = tickets.data();
    }
    REQUIRE(mc::launch(mc::smallm::kernel<K>, K::grid(), K::block(), K::kSmemBytes, cudaStream_t{}, p) == cudaSuccess);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    for (unsigned t : tickets) CHECK(t == 0u);
  } else {
    REQUIRE(cudaFuncSetAttribute(mc::tc::kernel<K>, cudaFuncAttributeMaxDynamicSharedMemorySize, K::kSmemBytes) ==
            cudaSuccess);
    if constexpr (K::Tl::kSplitK > 1) {
      partial.assign(static_cast<std::size_t>(K::Tl::kSplitK) * K::kBatches * K::kRows * K::kCols, std::nanf(""));
      p.partial = partial.data();
    }
    REQUIRE(mc::launch(mc::tc::kernel<K>, K::grid(), K::block(), K::kSmemBytes, cudaStream_t{}, p) == cudaSuccess);
    if constexpr (K::Tl::kSplitK > 1) {
      using R = mc::tc::SplitKReduce<K>;
      REQUIRE(mc::launch(mc::tc::kernel<R>, R::grid(), R::block(), 0, cudaStream_t{}, p) == cudaSuccess);
    }
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  }
}

}  // namespace tc_test
