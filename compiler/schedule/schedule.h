// compiler/schedule/schedule.h — the Schedule: what the generated program does, in order.
//
// Graph -> Schedule (schedule/lower.cpp): an ordered list of kernels, each naming its
// template family, its tactic (compile-time tile parameters) and the views of the
// buffers it reads and writes. Reshape, Flatten, Squeeze, Unsqueeze and Identity are
// views (no kernel). Codegen (codegen/) turns a Schedule into files.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/pass.h"
#include "schedule/memory_plan.h"
#include "schedule/tactic.h"

namespace modelc {

/// Where a tensor's bytes live in the generated program.
enum class Space {
  input,    ///< a model input: the caller's device pointer (index = graph input index)
  output,   ///< a model output: the caller's device pointer (index = graph output index)
  arena,    ///< the activation arena (offset in bytes)
  weights,  ///< the weights blob uploaded at create (offset in bytes)
};
const char* space_name(Space s);

/// \brief A strided window on a buffer.
struct TensorView {
  std::string value;              ///< the IR value it holds (comments, report)
  DType dtype = DType::float32;
  Shape shape;
  std::vector<int64_t> strides;   ///< in elements, one per dim (C order when dense)
  Space space = Space::arena;
  int index = 0;                  ///< graph input/output index (Space::input / output)
  int64_t offset = 0;             ///< bytes from the start of the arena / weights blob (0 otherwise)

  int64_t numel() const { return num_elements(shape); }
  int64_t nbytes() const { return numel() * static_cast<int64_t>(dtype_size(dtype)); }
  bool dense() const;             ///< C-order contiguous
  /// Same buffer, new shape (only for dense views).
  TensorView reshaped(const Shape& s) const;
};

/// \brief One output of a horizontally fused kernel (schedule stage fuse_horizontal): the node
/// whose output it is, and the channels [begin, end) of the fused product it holds (a convolution's
/// output channels; a matrix product's columns).
struct OutputRange {
  const Node* node = nullptr;
  int64_t begin = 0, end = 0;
};

/// \brief One kernel launch (or a group of launches of one template family).
struct Kernel {
  std::string id;                       ///< "k7": unique, a C identifier
  std::string family;                   ///< templates/<family>.cuh, codegen/families/<family>.cpp
  const Node* node = nullptr;           ///< the (main) node: attributes are read from it at emit time
  std::vector<std::string> nodes;       ///< every ONNX node this kernel covers (report)
  std::vector<TensorView> inputs;       ///< node inputs in order (absent optional inputs: dtype undefined)
  std::vector<TensorView> outputs;      ///< node outputs in order (absent: dtype undefined)
  /// The template's compile-time parameters (tile, threads), set by the tactics stage for the oldest
  /// --arch; report.json and the emitted comments print tactic_fields(tactic).
  Tactic tactic;
  std::string note;                     ///< why this template / tactic (report.md)
  /// Convolutions and matrix products (the gemm and conv families): "tensor_core" when the kernel
  /// runs on the tensor-core templates, "simt" otherwise; empty for every other family. A BF16
  /// "tensor_core" kernel planned for sm_75 too runs a SIMT tile there (its arch_tactic entry is a
  /// TileConfig: no BF16 MMA below sm_80).
  std::string engine;
  /// Why a convolution or matrix product is not on tensor cores ("depthwise", "FP32 storage", ...);
  /// empty when it is, or when engine is empty.
  std::string fallback_reason;
  /// The tactic per --arch (SM number, e.g. 75 or 90) where the choice depends on the target;
  /// `tactic` is the choice for the lowest --arch. Empty: one tactic for every arch.
  std::map<int, Tactic> arch_tactic;
  /// The cost model's estimate with the tactic for the first (oldest) --arch, on that arch's
  /// target (schedule/cost_model.h; set by the tactics stage; report.json "estimate").
  Estimate estimate;
  /// Matrix products (the gemm family): the innermost batch dims that B broadcasts over (stride 0)
  /// and along which A, Y and C continue their rows run as more rows of one product
  /// (schedule/linear.h lower_gemm); set by the fold_gemm_batch stage.
  bool batch_as_rows = false;
  /// A horizontally fused convolution or matrix product (schedule/fuse_horizontal.cpp): output i is
  /// ranges[i].node's output, channels (columns) [begin, end) of the product of the concatenated
  /// weights (inputs 1, 2); each range has its node's epilogue. Empty for every other kernel.
  std::vector<OutputRange> ranges;
  /// Scratch the kernel needs in the arena while it runs (a split-K product's FP32 partial sums):
  /// its size, set by the tactic rule (the largest over the --arch targets), and the view the tactics
  /// stage places it at (dtype undefined when the kernel needs none).
  int64_t workspace_bytes = 0;
  TensorView workspace{"", DType::undefined, {}, {}, Space::arena, 0, 0};
  /// The streams stage (schedule/streams.h): the stream it runs on (0 = the caller's), the events
  /// it waits on before it starts (ids of Schedule's events), and the event recorded after it (-1:
  /// none, no kernel on another stream waits for it).
  int stream = 0;
  std::vector<int> waits;
  int event = -1;

  /// An Error about this kernel: naming its node (op, opset) when it has one, else its id and family.
  Error error(const std::string& message, const std::string& hint = {}) const;
};

/// \brief A weight in the blob (constants the kernels read).
struct WeightEntry {
  std::string value;
  int64_t offset = 0;  ///< bytes, 256-aligned
  Tensor data;
};

/// \brief What the elide_concat stage (schedule/lower.h) decided for one Concat kernel: elided (its
/// producers write their slices of its buffer, no kernel runs) or kept, with the inputs that stop it.
struct ConcatElision {
  std::string node;    ///< the Concat node
  std::string output;  ///< its output value
  bool elided = false;
  struct Input {
    std::string value;
    int64_t offset = 0;  ///< where its slice starts along the Concat's axis (elements of that axis)
    std::string reason;  ///< why it cannot be a slice of the output; empty when it can
  };
  std::vector<Input> inputs;
  std::string reason;  ///< kept for a reason of the Concat as a whole (its axis, its output); may be empty
};

/// \brief The kernels one optional stage of the pipeline saves: the stages after it run again on a
/// copy of the graph without it, up to the last stage that may change the kernel count
/// (pipeline/pipeline.h, LowerOptions::count_stage_kernels).
struct StageKernels {
  std::string stage;
  int64_t kernels_without = -1;  ///< the kernel count without the stage; -1 when that did not compile
  int64_t kernels = 0;           ///< the kernel count with every stage (the Schedule's)
  std::string error;             ///< why the compile without the stage failed; empty when it did not
};

struct ModelTensor {
  std::string name;
  DType dtype;
  Shape shape;
  /// Batch profiles (schedule/profiles.h): the first dim is the batch times a constant, so the
  /// program pads (an input) or trims (an output) it at run time. False with one profile.
  bool batched = false;
};

/// \brief Everything codegen needs.
struct Schedule {
  std::string name;                     ///< --name: prefix of every symbol
  std::vector<std::string> archs;       ///< --arch list, e.g. {"sm_75", "sm_90"}
  /// The batch it runs: --batch's, else its first input's first dim (the CLI sets it; 0: unset, and
  /// the emitter takes schedule/profiles.h default_batch). With batch profiles (--batch 1,8,32), one
  /// schedule per batch (schedule/profiles.h).
  int64_t batch = 0;
  std::vector<ModelTensor> inputs, outputs;
  std::vector<Kernel> kernels;
  std::vector<WeightEntry> weights;
  int64_t weights_bytes = 0;
  int64_t arena_bytes = 0;              ///< after liveness planning
  int64_t activation_bytes_total = 0;   ///< sum of every activation's size (what no reuse would need)
  int64_t arena_max_live_bytes = 0;     ///< the arena's lower bound (schedule/memory_plan.h)
  int64_t arena_alignment = 0;          ///< every buffer's offset and size are rounded to this
  std::string arena_order;              ///< the placement order that gave the plan
  /// The arena's buffers: live interval (positions in `kernels`), size and offset.
  std::vector<LiveBuffer> arena_buffers;
  /// --fp16: what passes/precision did (report.md / report.json's "precision"); unset without it.
  std::optional<PrecisionReport> precision;
  /// The layout pass's one-line account (schedule/layout.h): kernels and buffers channels-last,
  /// padded ones, conversions; empty when every buffer is dense.
  std::string layout;
  /// The elide_concat stage's decision per Concat kernel, in kernel order (report.json "concats").
  std::vector<ConcatElision> concats;
  /// The streams stage (schedule/streams.h): streams used (1: every kernel on the caller's stream),
  /// cudaEvent_t's created (the kernels' events 0..E-1, then the fork event E and the join events
  /// E+1.. of streams 1..; 0 with one stream), and the kernels on the longest dependency chain (0
  /// when the stage did not run).
  int streams = 1;
  int events = 0;
  int critical_path = 0;
  /// Per optional stage that ran, the kernels without it (report.json "passes"); empty unless
  /// LowerOptions::count_stage_kernels.
  std::vector<StageKernels> stage_kernels;
};

}  // namespace modelc
