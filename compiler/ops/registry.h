// compiler/ops/registry.h — the op table: one entry per (op, opset form).
//
// Every op family lives in one file of compiler/ops and registers each form
// with one MODELC_REGISTER_OP statement. Passes and schedule stages never switch
// on op names: they read the facts recorded here (precision policy, layout rule
// and roles, fusion class, kernel templates). docs/operators.md is generated from this table.
#pragma once

#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "support/error.h"

namespace modelc::ops {

/// The domain of modelc's internal ops (FusedConv, ...), made by passes and
/// never read from a model file (see lookup).
inline constexpr const char* kModelcDomain = "modelc";

/// Read by passes/precision (--fp16). `unset`: the op stays FP32.
enum class Precision {
  unset,         ///< no policy: stays FP32
  fp16,          ///< computes and stores in FP16
  fp32_compute,  ///< FP16 storage, FP32 arithmetic inside the kernel
  never,         ///< shape math and indices: never converted
};

/// Read by passes/fuse_epilogue. `none`: never fused.
enum class Fusion {
  none,
  producer,             ///< conv / gemm: can take an epilogue
  epilogue_activation,  ///< unary activation that can run in a producer's epilogue
  epilogue_binary,      ///< Add/Mul/...: bias or residual in an epilogue
  normalization,        ///< BatchNormalization: folds into a producer's weights
};

/// How an op relates to the channels-last (NHWC) form of its tensors.
enum class Layout {
  unset,        ///< layout-sensitive, no NHWC form: forces NCHW around it
  agnostic,     ///< elementwise: follows its inputs
  /// Has an NHWC form (conv, pool, norm over channels): X is input 0, Y output 0, and LayoutRoles
  /// name the other inputs it reads channels-last. schedule/layout runs such an op channels-last
  /// where its template family can (schedule/families.h FamilyFacts::channels_last).
  channels,
};

/// \brief The inputs beside X that an op of Layout::channels reads in its NHWC form.
struct LayoutRoles {
  /// A constant weight [M, C/group, k...] (Conv's W): stored OHWI at X's channel pitch (one group)
  /// or at its own channel count (grouped). -1: none.
  int weight = -1;
  /// An input read exactly as Y is stored (a fused residual). -1: none.
  int residual = -1;
};

/// Inputs of a reference evaluation; null for an omitted optional input.
using TensorRefs = std::vector<const Tensor*>;
using ValidateFn = std::function<void(const Node&)>;
using InferFn = std::function<void(Node&)>;
using EvalFn = std::function<std::vector<Tensor>(const Node&, const TensorRefs&)>;
/// Floating-point operations of one run of the node (a multiply-add counts 2).
using FlopsFn = std::function<int64_t(const Node&)>;

/// \brief Everything modelc knows about one form of an op.
struct OpDef {
  std::string name;
  std::string domain;                    ///< "" = the default ONNX domain; kModelcDomain for internal ops
  int since = 1;                         ///< first opset of this form
  std::vector<std::string> attributes;   ///< known attribute names; any other is rejected
  int min_inputs = 0, max_inputs = -1;   ///< -1: variadic
  int min_outputs = 1, max_outputs = 1;
  ValidateFn validate;                   ///< attribute and input checks (throws Error)
  InferFn infer;                         ///< sets output dtypes and shapes
  EvalFn eval;                           ///< reference evaluation
  Precision precision = Precision::unset;
  Fusion fusion = Fusion::none;
  Layout layout = Layout::unset;          ///< read by schedule/layout
  LayoutRoles layout_roles;               ///< with Layout::channels
  /// The op moves or converts elements and computes nothing (Identity, Dropout, Where, Cast,
  /// CastLike): its kernel copies bits or its conversion is the op itself, so a boundary Cast does
  /// not fold into it (schedule's fold_boundary_casts).
  bool moves_data = false;
  /// The op converts input 0 to another type (Cast, CastLike): to the type input 0 already has it
  /// copies bits, and runs as a view of input 0, never a kernel (schedule/views.cpp find_views).
  bool view_when_same_type = false;
  /// Template families that can run it, tried in order by list_kernels (schedule/families.h
  /// family_for: the first whose FamilyFacts::accepts takes the node; "view": no kernel; "none":
  /// computed at compile time only).
  std::vector<std::string> kernels;
  /// Inputs whose values decide the output's shape (Reshape's shape, Slice's
  /// starts, ...): they must be constant when the model is compiled.
  std::vector<int> const_inputs;
  /// \brief An output whose extent along `dim` is a static bound on a count computed at run time
  /// (NonMaxSuppression's selected boxes): the entries past the count hold `fill`. Where ONNX's
  /// result is shorter, the reference and the kernel give it padded to the bound (the node-test
  /// runners pad the expected output the same way).
  struct BoundedOutput {
    int output = 0;
    int dim = 0;
    int64_t fill = 0;
  };
  std::vector<BoundedOutput> bounded_outputs;
  std::string family;                    ///< "conv", "gemm", "elementwise", ... (inspect's FLOPs table)
  FlopsFn flops;                         ///< null: 0 FLOPs (data movement, shape math)
  std::string doc;                       ///< one line for docs/operators.md
};

class OpRegistry {
 public:
  static OpRegistry& instance();
  /// Adds a form (references to the forms already added stay valid).
  void add(OpDef def);
  /// Removes every form of an op added with add() (a plugin's ops, compiler/plugin/plugin.h).
  void remove(const std::string& op, const std::string& domain);
  /// The form in force at `opset`: the highest `since` <= opset. Null when none.
  /// `domain`: "" for the default ONNX domain, kModelcDomain for internal ops.
  const OpDef* find(const std::string& op, int opset, const std::string& domain = "") const;
  /// True when some form of the op is registered (at any opset).
  bool knows(const std::string& op, const std::string& domain = "") const;
  /// Every form of one domain (the default ONNX domain unless told), sorted
  /// by name then since.
  std::vector<const OpDef*> all(const std::string& domain = "") const;

 private:
  std::deque<OpDef> defs_;
};

/// The form for a node; throws Error naming the node, op and opset when the
/// op or that opset's form is not supported. Nodes of the default domain ("" or
/// "ai.onnx") are looked up among the ONNX ops. A node of the kModelcDomain is
/// looked up among the internal ops only when a pass made it, which such a node
/// shows by recording the ONNX nodes it covers (Node::covers, never set by the
/// frontend): a model file that uses the "modelc" domain is refused like any
/// other non-ONNX domain. Another domain's op is found when a plugin registered it
/// (compiler/plugin/plugin.h: `--plugin DIR`).
const OpDef& lookup(const Node& n);

/// Checks a node against its OpDef: input/output counts, unknown attributes,
/// then the op's own validate. Throws Error naming the node and attribute.
void validate_node(const Node& n, const OpDef& def);

/// \brief Fluent builder used by MODELC_REGISTER_OP.
class OpBuilder {
 public:
  explicit OpBuilder(std::string name) { def_.name = std::move(name); }
  OpBuilder&& since(int v) && { def_.since = v; return std::move(*this); }
  OpBuilder&& domain(std::string d) && { def_.domain = std::move(d); return std::move(*this); }
  OpBuilder&& attrs(std::vector<std::string> a) && { def_.attributes = std::move(a); return std::move(*this); }
  OpBuilder&& inputs(int lo, int hi) && { def_.min_inputs = lo; def_.max_inputs = hi; return std::move(*this); }
  OpBuilder&& outputs(int lo, int hi) && { def_.min_outputs = lo; def_.max_outputs = hi; return std::move(*this); }
  OpBuilder&& validate(ValidateFn f) && { def_.validate = std::move(f); return std::move(*this); }
  OpBuilder&& infer(InferFn f) && { def_.infer = std::move(f); return std::move(*this); }
  OpBuilder&& eval(EvalFn f) && { def_.eval = std::move(f); return std::move(*this); }
  OpBuilder&& precision(Precision p) && { def_.precision = p; return std::move(*this); }
  OpBuilder&& fusion(Fusion f) && { def_.fusion = f; return std::move(*this); }
  OpBuilder&& layout(Layout l, LayoutRoles roles = {}) && {
    def_.layout = l;
    def_.layout_roles = roles;
    return std::move(*this);
  }
  OpBuilder&& moves_data() && { def_.moves_data = true; return std::move(*this); }
  OpBuilder&& view_when_same_type() && { def_.view_when_same_type = true; return std::move(*this); }
  OpBuilder&& kernel(std::string k) && { def_.kernels.push_back(std::move(k)); return std::move(*this); }
  OpBuilder&& const_inputs(std::vector<int> c) && { def_.const_inputs = std::move(c); return std::move(*this); }
  OpBuilder&& bounded_output(int output, int dim, int64_t fill) && {
    def_.bounded_outputs.push_back({output, dim, fill});
    return std::move(*this);
  }
  OpBuilder&& family(std::string f) && { def_.family = std::move(f); return std::move(*this); }
  OpBuilder&& flops(FlopsFn f) && { def_.flops = std::move(f); return std::move(*this); }
  OpBuilder&& doc(std::string d) && { def_.doc = std::move(d); return std::move(*this); }
  OpDef take() && { return std::move(def_); }

 private:
  OpDef def_;
};

/// Registers at static-initialisation time (the ops are linked as an object
/// library, so no registration is dropped by the linker).
struct Registration {
  Registration(OpBuilder&& b) { OpRegistry::instance().add(std::move(b).take()); }  // NOLINT: implicit on purpose
};

#define MODELC_CONCAT_INNER(a, b) a##b
#define MODELC_CONCAT(a, b) MODELC_CONCAT_INNER(a, b)
/// MODELC_REGISTER_OP(Relu).since(6).infer(...).eval(...);
#define MODELC_REGISTER_OP(NAME) \
  static const ::modelc::ops::Registration MODELC_CONCAT(modelc_op_reg_, __COUNTER__) = ::modelc::ops::OpBuilder(#NAME)

}  // namespace modelc::ops
