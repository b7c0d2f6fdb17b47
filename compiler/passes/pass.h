// compiler/passes/pass.h — the graph passes (Graph -> Graph) and what they read from the command
// line. compiler/pipeline/pipeline.h orders them, with the schedule stages, in one list.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace modelc {

struct AttentionOutcome;  // passes/fuse_attention.h
struct SeGateOutcome;     // passes/fuse_se_gate.h
struct CalibrationTable;  // passes/calibration.h
struct TuningCache;       // schedule/tuning_cache.h

/// \brief What passes/precision did, for report.md / report.json. The pass
/// fills the one PassOptions::precision_report points to (it starts by
/// clearing it); the caller owns it.
struct PrecisionReport {
  /// One weight (constant float tensor) converted to `type` at compile time.
  struct Weight {
    std::string name;        ///< the tensor's name in the model
    int64_t elements = 0;
    int64_t clamped = 0;     ///< finite values beyond the type's range, clamped to its largest finite value
    int64_t subnormal = 0;   ///< values whose result is subnormal (FP16: |x| < 2^-14; BF16: < 2^-126), not 0
    int64_t underflow = 0;   ///< non-zero values whose result is 0
  };
  /// A node with float tensors that stays FP32, and why.
  struct Fp32Node {
    std::string name, op, reason;  ///< the node's name, its op, why it stays FP32
  };
  std::vector<Weight> weights;          ///< in the order the pass converted them
  std::vector<Fp32Node> fp32_nodes;     ///< in graph order
  /// The 16-bit storage type: float16 (--fp16) or bfloat16 (--bf16).
  DType type = DType::float16;
  int64_t fp16_nodes = 0;               ///< nodes that now store their float tensors in `type`
  int64_t casts_inserted = 0;           ///< Cast nodes left in the graph at 16-bit/FP32 boundaries
  bool fp16_accumulate = false;         ///< copied from PassOptions
  bool io_fp16 = false;                 ///< copied from PassOptions
  /// --int8 (passes/precision_int8.cpp): each convolution and matrix product the pass considered,
  /// in graph order, with the precision it runs in and why it is not INT8.
  struct Int8Layer {
    std::string name, op;       ///< the ONNX node's name and its op
    std::string precision;      ///< "INT8", "FP16" or "FP32"
    std::string reason;         ///< why not INT8; empty for INT8
    double x_scale = 0;         ///< INT8: the input's scale (threshold / 127)
    double w_scale_min = 0, w_scale_max = 0;  ///< INT8: the weights' per-channel scales
  };
  bool int8 = false;                    ///< --int8
  std::vector<Int8Layer> int8_layers;
  std::string calibration_method;       ///< entropy, percentile, max
  std::string calibration_source;       ///< the table's source
  int64_t calibration_samples = 0;
  int64_t total_clamped() const;
  int64_t total_subnormal() const;
};

/// \brief What the passes read from the command line.
struct PassOptions {
  bool fp16 = false;                    ///< --fp16 (passes/precision, layout)
  bool bf16 = false;                    ///< --bf16: --fp16's policy with bfloat16 storage
  /// The 16-bit float type the precision pass stores in: float16 (--fp16), bfloat16 (--bf16), or
  /// undefined (neither: the pass does not run).
  DType half_type() const { return fp16 ? DType::float16 : bf16 ? DType::bfloat16 : DType::undefined; }
  /// --fp16-accumulate: FP16 accumulation in GEMM/conv kernels where faster.
  /// Read by the code generator; passes/precision only records it.
  bool fp16_accumulate = false;
  bool io_fp16 = false;                 ///< --io-fp16: graph inputs and outputs become float16
  /// --int8: calibrated convolutions and matrix products run on INT8 tensor cores, the rest as with
  /// --fp16 (which it implies: fp16 is set too); the thresholds come from `calibration`.
  bool int8 = false;
  const CalibrationTable* calibration = nullptr;  ///< --int8: required (passes/calibration.h)
  /// --winograd auto|always|never: 3x3 convolutions as Winograd F(2x2, 3x3) where the cost model
  /// predicts a win, wherever they qualify, or never (schedule/winograd.h; read by the tactics stage).
  std::string winograd = "auto";
  /// --tuning-cache FILE: measured tactic choices the tactics stage takes where a kernel's
  /// signature and the arch match (schedule/tuning_cache.h); null: the cost model alone.
  const TuningCache* tuning = nullptr;
  /// `modelc tune`: the tensor-core kernels keep this many candidate tactics (Kernel::tune_candidates,
  /// for the first --arch); 0: none (every other compile).
  int tune_candidates = 0;
  /// Run fuse_epilogue (on: the conv and gemm template families emit the fused epilogues of
  /// modelc.FusedConv/FusedGemm/FusedMatMul). `--disable-pass fuse_epilogue` turns it off.
  bool fuse_epilogue = true;
  std::vector<std::string> keep_fp32;   ///< --keep-fp32 NODE,...: nodes pinned to FP32 (by ONNX node name)
  PrecisionReport* precision_report = nullptr;  ///< filled by passes/precision when set
  /// The oldest --arch's SM number (75, 80, ...), set by the pipeline for the stages that need it
  /// (fuse_attention: no BF16 MMA below sm_80); 0: not known (any arch).
  int min_sm = 0;
  /// The fuse_attention stage's outcome per candidate (fused, covering which nodes, or why not),
  /// for the report; the stage clears and fills it when set.
  std::vector<AttentionOutcome>* attention_report = nullptr;
  /// The fuse_se_gate stage's outcome per candidate (a pool of a rank-4 value), for the report; the
  /// stage clears and fills it when set.
  std::vector<SeGateOutcome>* se_gate_report = nullptr;
  bool verify_each = false;             ///< --verify-each: run the verifiers after every stage
  std::set<std::string> disabled;       ///< --disable-pass NAME (a stage of pipeline/pipeline.h)
  std::set<std::string> print_after;    ///< --print-after NAME ("all" for every stage)
  std::ostream* log = nullptr;          ///< where --print-after writes (stderr when null)
};

/// A pass: returns true when it changed the graph. compiler/pipeline/pipeline.cpp orders them.
using PassFn = std::function<bool(Graph&, const PassOptions&)>;

/// \brief Removes node n, whose output 0 holds what its input 0 holds: readers read the input
/// instead; a graph output keeps its name (the input's producer writes it). False, and n stays,
/// when the output is a graph output straight from a graph input or output or a constant (a copy is
/// needed then). passes/simplify.cpp.
bool remove_passthrough(Graph& g, Node* n);

// The passes.
bool simplify(Graph& g, const PassOptions& o);
bool fold_constants(Graph& g, const PassOptions& o);
bool fold_pads(Graph& g, const PassOptions& o);
bool fold_batchnorm(Graph& g, const PassOptions& o);
bool split_recurrence(Graph& g, const PassOptions& o);
bool precision(Graph& g, const PassOptions& o);
bool fold_cast_pairs(Graph& g, const PassOptions& o);
bool sink_reshapes(Graph& g, const PassOptions& o);
bool fuse_epilogue(Graph& g, const PassOptions& o);
bool fold_scale(Graph& g, const PassOptions& o);
bool fuse_elementwise(Graph& g, const PassOptions& o);
bool quantize_explicit(Graph& g, const PassOptions& o);
bool fold_quantize(Graph& g, const PassOptions& o);

}  // namespace modelc
