#include "schedule/tactic.h"

#include <fmt/format.h>

#include <algorithm>

namespace modelc {

std::string TileConfig::name() const { return fmt::format("{}x{}x{} t{}x{}", bm, bn, bk, tm, tn); }

bool TileConfig::operator==(const TileConfig& o) const {
  return bm == o.bm && bn == o.bn && bk == o.bk && tm == o.tm && tn == o.tn;
}

int TcTile::smem_bytes() const {
  // Per operand the larger staging orientation (k-fast [X][BK + 8] or x-fast [BK][X + 8]) per stage;
  // or the epilogue's FP32 scratch, 16 rows of the warp tile's columns (+ 4) per warp, whichever
  // is larger (templates/tensor_core.cuh Mainloop::smem_bytes, scratch_bytes).
  // INT8 (templates/tensor_core_int8.cuh): k-fast [X][BK + 16] bytes only; the INT32 scratch is the
  // FP32 one's size.
  auto stage = [&](int x) { return int8 ? x * (bk + 16) : std::max(x * (bk + 8), bk * (x + 8)) * 2; };
  const int staging = stages * (stage(bm) + stage(bn));
  const int scratch = warps_m * warps_n * 16 * (bn / warps_n + 4) * 4;
  return std::max(staging, scratch);
}

int64_t TcTile::workspace_bytes(int64_t batch, int64_t M, int64_t N) const {
  return split_k > 1 ? int64_t{split_k} * batch * M * N * 4 : 0;
}

std::string TcTile::name() const {
  return fmt::format("{}x{}x{} w{}x{} {}{} {} stages{}", bm, bn, bk, warps_m, warps_n, int8 ? "INT8 " : "",
                     async ? "cp.async" : "register-staged", stages,
                     split_k > 1 ? fmt::format(" split-K {}", split_k) : std::string());
}

bool TcTile::operator==(const TcTile& o) const {
  return bm == o.bm && bn == o.bn && bk == o.bk && warps_m == o.warps_m && warps_n == o.warps_n &&
         async == o.async && fp16_accumulate == o.fp16_accumulate && stages == o.stages && split_k == o.split_k &&
         int8 == o.int8;
}

int SmallMTile::smem_bytes() const {
  // As TcTile: per operand the larger of the k-fast [X][BK + 8] and x-fast [BK][X + 8] stages (the
  // loader's orientation is the operand's strides'); the wk > 0 warps' accumulators; the epilogue's
  // 16 rows of each MN warp's columns (+ 4), FP32 (gemm_small_m.cuh Gemm::kSmemBytes).
  auto stage = [&](int x) { return std::max(x * (bk + 8), bk * (x + 8)) * 2; };
  const int staging = stages * (stage(bm) + stage(bn));
  const int reduce = (warps_k - 1) * bm * bn * 4;
  const int scratch = warps_m * warps_n * 16 * (bn / warps_n + 4) * 4;
  return std::max({staging, reduce, scratch});
}

int64_t SmallMTile::workspace_bytes(int64_t batch, int64_t M, int64_t N) const {
  if (split_k <= 1) return 0;
  return batch * ((M + bm - 1) / bm) * ((N + bn - 1) / bn) * bm * bn * 4;
}

int64_t SmallMTile::ticket_bytes(int64_t batch, int64_t M, int64_t N) const {
  return split_k > 1 ? batch * ((M + bm - 1) / bm) * ((N + bn - 1) / bn) * 4 : 0;
}

std::string SmallMTile::name() const {
  return fmt::format("small-M {}x{}x{} w{}x{}x{} {} stages{}", bm, bn, bk, warps_m, warps_n, warps_k, stages,
                     split_k > 1 ? fmt::format(" split-K {}", split_k) : std::string());
}

bool SmallMTile::operator==(const SmallMTile& o) const {
  return bm == o.bm && bn == o.bn && bk == o.bk && warps_m == o.warps_m && warps_n == o.warps_n && warps_k == o.warps_k &&
         stages == o.stages && split_k == o.split_k;
}

int HopperTile::smem_bytes() const {
  auto align1024 = [](int b) { return (b + 1023) / 1024 * 1024; };
  const int e = int8 ? 1 : 2;
  const int stage = align1024(bm * bk * e) + align1024(bn * bk * e);
  return 1024 + stages * stage + 16 * stages + consumers * 4 * 16 * 68 * 4;
}

std::string HopperTile::name() const {
  return fmt::format("wgmma {}{}x{}x{} {} stages {} consumer{}", int8 ? "INT8 " : "", bm, bn, bk, stages, consumers,
                     consumers == 1 ? "" : "s");
}

bool HopperTile::operator==(const HopperTile& o) const {
  return bm == o.bm && bn == o.bn && bk == o.bk && stages == o.stages && consumers == o.consumers && int8 == o.int8;
}

int AttentionTile::smem_bytes(int64_t d) const {
  const int ld = static_cast<int>((d + 15) / 16 * 16) + 8;  // a row of DPad + 8 halves
  return (bq + stages * 2 * bkv) * ld * 2;
}

std::string AttentionTile::name() const {
  return fmt::format("{}q x {}kv w{} {} stages{}", bq, bkv, warps, stages, q_regs ? "" : " Q from shared memory");
}

std::string WinogradTactic::name() const { return "Winograd F(2x2,3x3), GEMMs " + gemm.name(); }

std::string DepthwiseTactic::name() const {
  return fmt::format("{}x{}x{} cv{} r{}x{} {}{}", th, tw, cb, cv, rh, rw, async ? "cp.async" : "register-staged",
                     fp16_accumulate ? " fp16 sums" : "");
}

bool DepthwiseTactic::operator==(const DepthwiseTactic& o) const {
  return th == o.th && tw == o.tw && cb == o.cb && cv == o.cv && rh == o.rh && rw == o.rw && async == o.async &&
         fp16_accumulate == o.fp16_accumulate;
}

bool ReductionTile::operator==(const ReductionTile& o) const {
  return threads == o.threads && group == o.group && lanes_contiguous == o.lanes_contiguous;
}

std::map<std::string, int64_t> tactic_fields(const Tactic& tactic) {
  struct Fields {
    std::map<std::string, int64_t> operator()(std::monostate) const { return {}; }
    std::map<std::string, int64_t> operator()(const TileConfig& t) const {
      return {{"BM", t.bm}, {"BN", t.bn}, {"BK", t.bk}, {"TM", t.tm}, {"TN", t.tn}, {"threads", t.threads()}};
    }
    std::map<std::string, int64_t> operator()(const TcTile& t) const {
      std::map<std::string, int64_t> f{{"BM", t.bm},           {"BN", t.bn},           {"BK", t.bk},
                                       {"warps_m", t.warps_m}, {"warps_n", t.warps_n}, {"async", t.async ? 1 : 0},
                                       {"threads", t.threads()}, {"fp16_accumulate", t.fp16_accumulate ? 1 : 0},
                                       {"stages", t.stages},   {"split_k", t.split_k}};
      if (t.int8) f["int8"] = 1;
      return f;
    }
    std::map<std::string, int64_t> operator()(const HopperTile& t) const {
      std::map<std::string, int64_t> f{{"BM", t.bm},         {"BN", t.bn},           {"BK", t.bk}, {"stages", t.stages},
                                       {"consumers", t.consumers}, {"threads", t.threads()}, {"hopper", 1}};
      if (t.int8) f["int8"] = 1;
      return f;
    }
    std::map<std::string, int64_t> operator()(const SmallMTile& t) const {
      return {{"BM", t.bm},           {"BN", t.bn},         {"BK", t.bk},           {"warps_m", t.warps_m},
              {"warps_n", t.warps_n}, {"warps_k", t.warps_k}, {"stages", t.stages}, {"split_k", t.split_k},
              {"threads", t.threads()}, {"small_m", 1}};
    }
    std::map<std::string, int64_t> operator()(const GemvTactic& t) const {
      return {{"threads", t.threads()}, {"warps", t.warps}, {"k_split", t.k_split}, {"columns", t.columns}};
    }
    std::map<std::string, int64_t> operator()(const WinogradTactic& t) const {
      std::map<std::string, int64_t> f = (*this)(t.gemm);
      f["winograd"] = 1;
      return f;
    }
    std::map<std::string, int64_t> operator()(const ReductionTile& t) const {
      return {{"threads", t.threads}, {"group", t.group}, {"lanes_contiguous", t.lanes_contiguous ? 1 : 0}};
    }
    std::map<std::string, int64_t> operator()(const DirectTactic& t) const { return {{"threads", t.threads}}; }
    std::map<std::string, int64_t> operator()(const DepthwiseTactic& t) const {
      return {{"TH", t.th}, {"TW", t.tw}, {"CB", t.cb}, {"CV", t.cv}, {"RH", t.rh}, {"RW", t.rw},
              {"async", t.async ? 1 : 0}, {"threads", t.threads()}, {"fp16_accumulate", t.fp16_accumulate ? 1 : 0}};
    }
    std::map<std::string, int64_t> operator()(const AttentionTile& t) const {
      return {{"BQ", t.bq},         {"BKV", t.bkv}, {"warps", t.warps}, {"stages", t.stages},
              {"q_regs", t.q_regs ? 1 : 0}, {"threads", t.threads()}};
    }
    std::map<std::string, int64_t> operator()(const GridStrideTactic& t) const {
      std::map<std::string, int64_t> f{{"block", t.block}};
      if (t.grid) f["grid"] = *t.grid;
      return f;
    }
  };
  return std::visit(Fields{}, tactic);
}

}  // namespace modelc
