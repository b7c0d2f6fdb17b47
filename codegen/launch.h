// codegen/launch.h — what a template family's emit function returns: the launches of a kernel,
// described, not written as C++ (the emitter prints them; codegen/emitter.cpp).
//
// The kernel contract (templates/*.cuh): every kernel type K a family instantiates provides
//   struct Params                     named fields with default member initializers where a
//                                     default means something (pointers null, alpha 1, an
//                                     activation's parameters neutral), so a launch sets only
//                                     what its kernel needs
//   static constexpr int kThreads     the block size (the entry point's launch bound)
//   static dim3 grid(), block()       the launch geometry
//   static __device__ void run(const Params&)
// The emitter writes, per distinct instantiation in a file, `using NAME_k12_t = TYPE;` and an
// entry point with a stable, unmangled symbol (what ptxas and the report name):
//   extern "C" __global__ void __launch_bounds__(NAME_k12_t::kThreads) NAME_k12(const NAME_k12_t::Params p)
// (`__launch_bounds__(NAME_k12_t::kThreads, 1)` for a launch with Launch::min_blocks 1; a
// `const __grid_constant__` Params for one with Launch::tensor_maps)
// and, in the enqueue function, `NAME_k12_t::Params p{};`, one `p.FIELD = VALUE;` per param and
// `MC_LAUNCH(NAME_k12, NAME_k12_t::grid(), NAME_k12_t::block(), 0, p);` (NAME_k12_t::kSmemBytes for
// a launch with dynamic shared memory, Launch::dynamic_smem).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace modelc {

/// \brief A field of the kernel's Params that a launch sets: `p.FIELD = VALUE;`.
struct LaunchParam {
  std::string field;  ///< "x", "x[1]", "epilogue.bias", "epilogue.act.alpha"
  std::string value;  ///< a C++ expression of the field's type, e.g. "reinterpret_cast<const float*>(arena + 256)"
};

/// \brief One launch of one instantiation of a kernel template.
struct Launch {
  std::string comment;              ///< one line: what this launch computes
  std::string type;                 ///< the instantiation, e.g. "mc::tc::Conv<__half, float, ...>"
  std::vector<LaunchParam> params;  ///< the Params fields set, in order; the others keep their defaults
  /// 0: the launch runs on every device. Otherwise an arch variant: the kernel's launches are all
  /// variants (min_sm non-decreasing; consecutive launches of one min_sm form one variant), and the
  /// device runs the variant with the largest min_sm not above its SM number (the first one on a
  /// device older than all of them).
  int min_sm = 0;
  /// 0: no dynamic shared memory. Otherwise the launch passes the type's kSmemBytes, and this is a
  /// bound on it: above 48 KiB the model's prepare function (run at create) raises the kernel's limit.
  int64_t dynamic_smem = 0;
  /// 0: `__launch_bounds__(kThreads)`. Otherwise the minimum resident blocks per SM the entry point
  /// is compiled for, `__launch_bounds__(kThreads, min_blocks)`: 1 lets ptxas use every register a
  /// thread may have (the tensor-core kernels: ptxas otherwise caps a small block at 128 registers
  /// and spills).
  int min_blocks = 0;
  /// The Hopper engine (templates/hopper_gemm.cuh; empty for every other launch): the arguments of
  /// K::make_maps after p, e.g. "A pointer, B pointer". The launch builds K's TMA tensor maps into
  /// p from them (host side, where the enqueue runs: at create, when the CUDA graph is captured,
  /// and again for a capture on new pointers), launches K::grid(ctas) blocks for
  /// ctas = mc::hopper::persistent_ctas (one per SM, at most one per tile: no stream-K workspace),
  /// and the entry point takes p as a `const __grid_constant__` parameter (TMA reads the maps
  /// there).
  std::string tensor_maps{};
};

/// \brief The code of one kernel: its launches, in order (Concat: one per input), or its arch
/// variants; none when there is nothing to run.
struct KernelLaunches {
  std::vector<Launch> launches;
  /// File-scope declarations the launches' types name (a resize's tap table); identical text is
  /// written once per file.
  std::string declarations;
  /// Why nothing runs when `launches` is empty ("the output is empty"), for the comment.
  std::string nothing_to_run;
  /// Headers of the kernel's own, beside modelc's templates (a plugin's, codegen/families/plugin.cpp):
  /// path under kernels/ -> text, copied into the folder; the code includes `includes` of them.
  std::map<std::string, std::string> own_headers;
  std::vector<std::string> includes;
};

/// A kernel of one launch.
inline KernelLaunches single_launch(Launch l) {
  KernelLaunches k;
  k.launches.push_back(std::move(l));
  return k;
}

/// A kernel with nothing to run, and why.
inline KernelLaunches nothing_to_run(std::string why) {
  KernelLaunches k;
  k.nothing_to_run = std::move(why);
  return k;
}

}  // namespace modelc
