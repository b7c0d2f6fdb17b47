// schedule/target and schedule/cost_model: the targets' facts against their sources, the model's
// bounds and waves, and the tensor-core tactic rule at batch 1.
#include <doctest/doctest.h>

#include "schedule/cost_model.h"
#include "schedule/tactics.h"
#include "schedule/target.h"

using namespace modelc;

TEST_CASE("target facts: values from the datasheets and the programming guide; newer archs take the newest row") {
  const Target t75 = target_for("sm_75"), t80 = target_for("sm_80"), t90 = target_for("sm_90");
  CHECK(t75.part == "T4");
  CHECK(t75.sm_count == 40);
  CHECK(t75.tc_fp16_tflops == 65);
  CHECK(t75.smem_per_block == 64 * 1024);
  CHECK(t75.max_threads_per_sm == 1024);
  CHECK(t80.sm_count == 108);
  CHECK(t80.dram_gbps == 2039);
  CHECK(t80.smem_per_block == 163 * 1024);
  CHECK(t90.sm_count == 132);
  CHECK(t90.tc_fp16_tflops == 989);
  CHECK(t90.smem_per_sm == 228 * 1024);
  CHECK(t90.smem_per_block == 227 * 1024);
  CHECK(t90.l2_bytes == int64_t{50} << 20);
  CHECK(target_for("sm_86").max_threads_per_sm == 1536);
  CHECK(target_for("sm_89").max_blocks_per_sm == 24);
  // sm_87 takes sm_86's row; sm_100 and sm_120 take sm_90's, keeping their own SM number.
  CHECK(target_for("sm_87").part == "A10");
  const Target t120 = target_for("sm_120");
  CHECK(t120.sm == 120);
  CHECK(t120.part == "H100 SXM5");
}

TEST_CASE("cost model: compute, memory, launch bound; occupancy and waves") {
  const Target t90 = target_for("sm_90");
  SUBCASE("a 4096^3 FP16 GEMM on sm_90 is compute bound") {
    TcTile t{128, 128, 64, 2, 4, true, false};
    t.stages = 3;
    const KernelWork w = tc_gemm_work(1, 4096, 4096, 4096, 3.0 * 4096 * 4096 * 2, t);
    const Estimate e = estimate(w, t90);
    CHECK(e.bound == "compute");
    CHECK(e.blocks == 32 * 32);
    CHECK(e.flops == doctest::Approx(2.0 * 4096 * 4096 * 4096));
    // 137 GFLOP at 989 TFLOPS: at least 139 us.
    CHECK(e.us > 139);
    CHECK(e.us < 200);
  }
  SUBCASE("a large elementwise op is memory bound, a one-element op launch bound") {
    KernelWork big;
    big.flops = 64e6;
    big.bytes = 64e6 * 2 * 3;  // two FP16 inputs and an output
    big.blocks = 4096;
    big.threads = 256;
    const Estimate e = estimate(big, t90);
    CHECK(e.bound == "memory");
    CHECK(e.memory_us == doctest::Approx(384e6 / 3350e3));
    KernelWork one;
    one.flops = 1;
    one.bytes = 6;
    one.blocks = 1;
    one.threads = 256;
    CHECK(estimate(one, t90).bound == "launch");
  }
  SUBCASE("occupancy from threads, registers and shared memory; waves = blocks / (SMs x blocks per SM)") {
    CHECK(blocks_per_sm(256, 32, 0, t90) == 8);      // 2048 threads per SM
    CHECK(blocks_per_sm(32, 32, 0, t90) == 32);      // the block limit
    CHECK(blocks_per_sm(256, 128, 0, t90) == 2);     // 65536 registers / (128 x 256)
    CHECK(blocks_per_sm(128, 32, 100 * 1024, t90) == 2);  // 228 KB / (100 KB + 1 KB reserved)
    CHECK(blocks_per_sm(128, 32, 200 * 1024, target_for("sm_75")) == 0);
    KernelWork w;
    w.blocks = 132 * 8 * 3 / 2;
    w.threads = 256;
    CHECK(estimate(w, t90).waves == doctest::Approx(1.5));
    // 128x128 with 2x4 warps: 64 x 32 accumulators per warp, 64 per lane.
    CHECK(tc_registers(TcTile{128, 128, 32, 2, 4, true, false}) == 64 + 64);
  }
  SUBCASE("split-K's partials and second launch are part of the estimate") {
    TcTile t{64, 64, 32, 2, 2, true, false};
    const KernelWork one = tc_gemm_work(1, 64, 64, 4096, 1e6, t);
    t.split_k = 4;
    const KernelWork four = tc_gemm_work(1, 64, 64, 4096, 1e6, t);
    CHECK(four.blocks == 4 * one.blocks);
    CHECK(four.k_slices == one.k_slices / 4);
    CHECK(four.split_bytes == 2.0 * 4 * 64 * 64 * 4);
    CHECK(estimate(four, t90).launch_us == 2 * estimate(one, t90).launch_us);
  }
}

TEST_CASE("tensor-core tactic at batch 1 on sm_90: split-K where the tiles leave SMs idle") {
  const Target t90 = target_for("sm_90");
  auto conv = [](int64_t pixels, int64_t c_in, int64_t c_out, int64_t taps) {
    return linear::TcProblem{1, pixels, c_out, taps * c_in,
                             2.0 * static_cast<double>(pixels * c_in + c_out * taps * c_in + pixels * c_out)};
  };
  SUBCASE("resnet50 layer4 3x3 conv, 7x7x512 -> 512: split-K, a block for every SM") {
    std::string why;
    const TcTile t = linear::choose_tc_tile(conv(49, 512, 512, 9), t90, &why);
    INFO(why);
    CHECK(t.split_k > 1);
    const Estimate e = estimate(tc_gemm_work(1, 49, 512, 9 * 512, 0, t), t90);
    CHECK(e.blocks >= t90.sm_count);
    CHECK(linear::split_leaves_two_slices((9 * 512 + t.bk - 1) / t.bk, t.split_k));
    CHECK(why.find("split-K " + std::to_string(t.split_k)) != std::string::npos);
  }
  SUBCASE("a large conv (56x56 at batch 32, 256 -> 256 3x3): enough tiles, no split") {
    const TcTile t = linear::choose_tc_tile(conv(32 * 56 * 56, 256, 256, 9), t90);
    CHECK(t.split_k == 1);
  }
  SUBCASE("K too short to split (64: two slices of 32) and few tiles: the note says why") {
    std::string why;
    const TcTile t = linear::choose_tc_tile(conv(49, 64, 64, 1), t90, &why);
    CHECK(t.split_k == 1);
    CHECK(why.find("no split-K: K 64 leaves fewer than 2 slices of 32 per split") != std::string::npos);
  }
  SUBCASE("the split rule: every part at least 2 slices") {
    CHECK(linear::split_leaves_two_slices(8, 4));
    CHECK_FALSE(linear::split_leaves_two_slices(8, 5));  // 2, 2, 2, 2, 0
    CHECK_FALSE(linear::split_leaves_two_slices(7, 3));  // 3, 3, 1
    CHECK_FALSE(linear::split_leaves_two_slices(3, 2));
  }
}
