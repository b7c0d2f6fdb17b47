// compiler/frontend/onnx_import.cpp — .onnx -> Graph.
//
// Order of the steps matters:
//   parse -> every TensorProto checked (before any libonnx code reads one)
//   -> structure (graph, opsets, names, SSA, topological order)
//   -> external data checked (paths, ranges, sizes; nothing read yet)
//   -> symbolic dims resolved (written back into the graph inputs)
//   -> ONNX's checker (it only stats external files, relative to the model's folder)
//   -> external data read into the tensors
//   -> ONNX's shape inference (needs the data of shape initializers; sees static inputs)
//   -> import into the Graph IR -> modelc's own shape inference (ops::infer_graph) and verify.
#include "frontend/onnx_import.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>


#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "frontend/batch.h"
#include "frontend/import_detail.h"
#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"
#include "ops/registry.h"
#include "support/error.h"

// libonnx 1.12 exports, without declaring it in checker.h, the check_model
// that takes a CheckerContext: the one check_model(path) calls after setting
// the model's folder. check_model(const ModelProto&) would look for external
// data files relative to the working directory, and check_model(path) would
// parse the whole file a second time; this is the same check with the folder set.
namespace onnx::checker {
void check_model(const ModelProto& model, CheckerContext& ctx);
}  // namespace onnx::checker

namespace modelc {

namespace {

Error file_error(const std::string& file, const std::string& message, const std::string& hint = {}) {
  Error::Where w;
  w.file = file;
  return Error(w, message, hint);
}

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// External initializers bigger than this are read during the import, not
// before ONNX's shape inference (which only needs the values of small ones).
constexpr uint64_t kReadLaterBytes = uint64_t{1} << 20;

const char* kChecksHint = "pass --no-onnx-checks to skip ONNX's checker and shape inference";

// ---- parsing -------------------------------------------------------------------

bool parse_model(google::protobuf::io::ZeroCopyInputStream& in, onnx::ModelProto& m) {
  google::protobuf::io::CodedInputStream cis(&in);
  cis.SetTotalBytesLimit(INT_MAX);
  return m.ParseFromCodedStream(&cis) && cis.ConsumedEntireMessage();
}

Error malformed(const std::string& file) {
  return file_error(file, "not a valid ONNX model: the protobuf is malformed or truncated");
}

// ---- structure -----------------------------------------------------------------

std::map<std::string, int64_t> read_opsets(const onnx::ModelProto& m, const std::string& file) {
  std::map<std::string, int64_t> opsets;
  for (const auto& op : m.opset_import()) {
    const std::string d = is_default_domain(op.domain()) ? "" : op.domain();
    auto [it, inserted] = opsets.emplace(d, op.version());
    if (!inserted && it->second != op.version()) {
      throw file_error(file, "opset_import lists domain '" + op.domain() + "' twice, with versions " +
                                 std::to_string(it->second) + " and " + std::to_string(op.version()));
    }
  }
  if (!opsets.count("")) {
    // Before IR version 3 there was no opset_import: such models are opset 1.
    if (m.opset_import_size() == 0 && m.ir_version() > 0 && m.ir_version() < 3) {
      opsets[""] = 1;
    } else if (!opsets.empty()) {
      std::string domains;
      for (const auto& [d, v] : opsets) domains += (domains.empty() ? "'" : ", '") + d + "'";
      throw file_error(file, "the model imports only the operator domains " + domains +
                                 ", not the default ONNX domain, which is the only one modelc supports");
    } else {
      throw file_error(file, "the model imports no opset of the default ONNX domain (opset_import)",
                       "the file may be truncated or not an ONNX model");
    }
  }
  const int64_t v = opsets[""];
  if (v < 1) throw file_error(file, "default-domain opset " + std::to_string(v) + " is not valid");
  if (v > kMaxOpset) {
    throw file_error(file, "opset " + std::to_string(v) + " is newer than modelc supports (up to " +
                               std::to_string(kMaxOpset) + ")",
                     "re-export the model at opset " + std::to_string(kMaxOpset) + " or lower");
  }
  return opsets;
}

// Names used by nodes inside graph attributes (If/Loop bodies may read values
// of the enclosing graph by name).
void subgraph_inputs(const onnx::GraphProto& g, std::vector<std::string>& out) {
  for (const auto& n : g.node()) {
    for (const auto& i : n.input()) out.push_back(i);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) subgraph_inputs(a.g(), out);
      for (const auto& sg : a.graphs()) subgraph_inputs(sg, out);
    }
  }
}

// Checks names (SSA, every input defined, each output listed once) and puts the
// nodes in topological order when they are not (ONNX requires it; some tools do
// not respect it).
void check_names_and_sort(onnx::GraphProto& g, const std::string& file) {
  std::unordered_set<std::string> defined;  // graph inputs and initializers
  std::unordered_set<std::string> inits;
  for (const auto& t : g.initializer()) {
    if (t.name().empty()) throw file_error(file, "an initializer has no name");
    if (!inits.insert(t.name()).second) throw file_error(file, "initializer '" + t.name() + "' is defined twice");
    defined.insert(t.name());
  }
  std::unordered_set<std::string> inputs;
  for (const auto& i : g.input()) {
    if (i.name().empty()) throw file_error(file, "a graph input has no name");
    if (!inputs.insert(i.name()).second) throw file_error(file, "graph input '" + i.name() + "' is listed twice");
    defined.insert(i.name());
  }
  // Outputs are the generated C API's named results: each name once.
  std::unordered_set<std::string> outputs;
  for (const auto& o : g.output()) {
    if (!outputs.insert(o.name()).second) throw file_error(file, "graph output '" + o.name() + "' is listed twice");
  }
  const int n = g.node_size();
  std::unordered_map<std::string, int> producer;
  for (int k = 0; k < n; ++k) {
    for (const auto& o : g.node(k).output()) {
      if (o.empty()) continue;
      if (defined.count(o)) {
        throw file_error(file, "node '" + g.node(k).name() + "' output '" + o +
                                   "' has the name of a graph input or initializer (values must be assigned once)");
      }
      auto [it, inserted] = producer.emplace(o, k);
      if (!inserted) {
        throw file_error(file, "value '" + o + "' is produced by both node '" + g.node(it->second).name() +
                                   "' and node '" + g.node(k).name() + "' (values must be assigned once)");
      }
    }
  }
  std::vector<std::vector<int>> users(n);
  std::vector<int> indegree(n, 0);
  bool sorted = true;
  for (int k = 0; k < n; ++k) {
    const auto& node = g.node(k);
    std::set<int> deps;
    for (const auto& i : node.input()) {
      if (i.empty()) continue;
      auto it = producer.find(i);
      if (it != producer.end()) {
        deps.insert(it->second);
      } else if (!defined.count(i)) {
        throw file_error(file, "node '" + node.name() + "' (" + node.op_type() + ") reads '" + i +
                                   "', which is not a graph input, an initializer or the output of any node");
      }
    }
    std::vector<std::string> inner;
    for (const auto& a : node.attribute()) {
      if (a.has_g()) subgraph_inputs(a.g(), inner);
      for (const auto& sg : a.graphs()) subgraph_inputs(sg, inner);
    }
    for (const auto& i : inner) {
      auto it = producer.find(i);
      if (it != producer.end()) deps.insert(it->second);
    }
    for (int d : deps) {
      users[d].push_back(k);
      ++indegree[k];
      if (d >= k) sorted = false;
    }
  }
  if (sorted) return;

  // Kahn's algorithm, taking the earliest ready node first: the model's own
  // order is kept wherever it is already valid.
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int k = 0; k < n; ++k) if (indegree[k] == 0) ready.push(k);
  std::vector<int> order;
  while (!ready.empty()) {
    const int k = ready.top();
    ready.pop();
    order.push_back(k);
    for (int u : users[k]) if (--indegree[u] == 0) ready.push(u);
  }
  if (static_cast<int>(order.size()) != n) {
    std::string names;
    int listed = 0;
    for (int k = 0; k < n && listed < 6; ++k) {
      if (indegree[k] > 0) {
        names += std::string(listed ? ", " : "") + "'" + g.node(k).name() + "'";
        ++listed;
      }
    }
    throw file_error(file, "the graph has a cycle (nodes involved or behind it: " + names + ")");
  }
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (int k : order) nodes.Add()->Swap(g.mutable_node(k));
  g.mutable_node()->Swap(&nodes);
}

// ---- ONNX's checks ---------------------------------------------------------------

// Why ONNX's checks cannot run on this model ("" when they can): libonnx
// needs schemas for every opset the model imports from the domains it knows
// (custom domains are skipped by its checker anyway) and an IR version it knows.
std::string onnx_cannot_check(const onnx::ModelProto& m, const std::map<std::string, int64_t>& opsets) {
  if (m.ir_version() > onnx::IR_VERSION) {
    return "IR version " + std::to_string(m.ir_version()) + " is newer than libonnx's " +
           std::to_string(static_cast<int>(onnx::IR_VERSION));
  }
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  for (const auto& [domain, version] : opsets) {
    auto it = ranges.find(domain);
    if (it != ranges.end() && version > it->second.second) {
      return (domain.empty() ? std::string("opset ") : "domain '" + domain + "' opset ") + std::to_string(version) +
             " is newer than libonnx's " + std::to_string(it->second.second);
    }
  }
  return "";
}

void run_onnx_checker(const onnx::ModelProto& m, const std::string& base_dir, const std::string& file) {
  try {
    onnx::checker::CheckerContext ctx;
    ctx.set_model_dir(base_dir);
    onnx::checker::check_model(m, ctx);
  } catch (const std::exception& e) {
    throw file_error(file, std::string("ONNX checker: ") + e.what(), kChecksHint);
  }
}

// libonnx's convolution and pooling shape rule reads W's dims at X's rank and divides by strides,
// dilations and group without checking (a hostile model crashes it): those attributes, and the
// ranks known before its pass (graph inputs and initializers), are checked first.
void check_conv_ranks(const onnx::GraphProto& g, const std::string& file) {
  std::unordered_map<std::string, int> rank;
  for (const auto& t : g.initializer()) rank[t.name()] = t.dims_size();
  for (const auto& in : g.input()) {
    if (!rank.count(in.name()) && in.type().has_tensor_type() && in.type().tensor_type().has_shape()) {
      rank[in.name()] = in.type().tensor_type().shape().dim_size();
    }
  }
  for (const auto& n : g.node()) {
    const std::string& op = n.op_type();
    // It also divides by strides, dilations and group unchecked.
    const bool window = op == "Conv" || op == "ConvTranspose" || op == "ConvInteger" || op == "MaxPool" ||
                        op == "AveragePool" || op == "LpPool";
    if (!n.domain().empty() || !window) continue;
    for (const auto& a : n.attribute()) {
      const bool positive_ints = a.name() == "strides" || a.name() == "dilations" || a.name() == "kernel_shape";
      bool bad = a.name() == "group" && a.i() < 1;
      for (int64_t v : a.ints()) bad = bad || (positive_ints && v < 1);
      if (bad) {
        throw file_error(file, op + " node '" + n.name() + "': attribute '" + a.name() + "' must be positive");
      }
    }
    if (op == "MaxPool" || op == "AveragePool" || op == "LpPool" || n.input_size() < 2) continue;
    auto x = rank.find(n.input(0)), w = rank.find(n.input(1));
    if (x == rank.end() || w == rank.end() || x->second == w->second) continue;
    throw file_error(file, op + " node '" + n.name() + "': X '" + n.input(0) + "' has rank " + std::to_string(x->second) +
                               " but W '" + n.input(1) + "' has rank " + std::to_string(w->second) +
                               " (they must have the same rank: [N, C, spatial...] and [M, C/group, kernel...])");
  }
}

void run_onnx_shape_inference(onnx::ModelProto& m, const std::string& file) {
  // modelc infers every value itself; ONNX's pass is a consistency check on
  // the model. value_info and declared output shapes are dropped first so
  // stale annotations from the exporter (e.g. a batch of 1 written where
  // --batch now gives 8) are not reported as conflicts.
  onnx::GraphProto* g = m.mutable_graph();
  g->clear_value_info();
  for (auto& o : *g->mutable_output()) {
    if (o.type().has_tensor_type()) o.mutable_type()->mutable_tensor_type()->clear_shape();
  }
  check_conv_ranks(*g, file);
  try {
    // Strict about shapes, not about the schemas' type lists: old exporters
    // wrote e.g. int64 Constants at opset 6, whose schema only lists floats,
    // and runtimes accept them (modelc's op rules check the types they need).
    const onnx::ShapeInferenceOptions options(/*check_type=*/false, /*error_mode=*/1);
    onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception& e) {
    throw file_error(file, std::string("ONNX shape inference: ") + e.what(), kChecksHint);
  }
}

// ---- symbolic dims ----------------------------------------------------------------

// The batch a model fixes, when --batch re-batches it (0 otherwise): no input has a symbolic first
// dim, and the inputs whose first dim --batch sets (rank >= 1, fixed first dim, no --shape; or a
// --shape whose first dim is --batch's where the model fixes another) all fix the same one, other
// than --batch's. Error when they fix different ones: which is the batch is then unclear.
struct Rebatch {
  int64_t from = 0;                  ///< the batch the model fixes; 0: no re-batch
  std::set<std::string> shape_args;  ///< inputs whose --shape gives the new batch
};
Rebatch fixed_batch(const onnx::GraphProto& g, const LoadOptions& opt, const std::string& file) {
  if (opt.batch <= 0) return {};
  std::unordered_set<std::string> inits;
  for (const auto& t : g.initializer()) inits.insert(t.name());
  std::map<std::string, int64_t> first;  // input -> the first dim it fixes
  for (const auto& in : g.input()) {
    if (inits.count(in.name()) || !in.type().has_tensor_type() || !in.type().tensor_type().has_shape()) continue;
    const auto& shape = in.type().tensor_type().shape();
    if (shape.dim_size() == 0) continue;
    const auto& d0 = shape.dim(0);
    const bool fixed = d0.has_dim_value() && d0.dim_value() >= 0;
    auto given = opt.input_shapes.find(in.name());
    if (given != opt.input_shapes.end()) {
      // A --shape takes part only where it asks for --batch's first dim and the model fixes another.
      if (fixed && !given->second.empty() && given->second[0] == opt.batch && d0.dim_value() != opt.batch) {
        first[in.name()] = d0.dim_value();
      }
      continue;
    }
    if (!fixed) return {};  // a symbolic batch: --batch sets it
    first[in.name()] = d0.dim_value();
  }
  if (first.empty()) return {};
  const int64_t b0 = first.begin()->second;
  for (const auto& [name, d] : first) {
    if (d == b0) continue;
    std::string list;
    for (const auto& [n, v] : first) list += (list.empty() ? "'" : ", '") + n + "' " + std::to_string(v);
    throw file_error(file, "--batch " + std::to_string(opt.batch) + ": the model fixes its inputs' first dims to different "
                               "sizes (" + list + "), so which one is the batch is not clear",
                     "give the inputs that are not batched their shapes with --shape NAME=DIMS");
  }
  Rebatch r;
  if (b0 == opt.batch) return r;
  r.from = b0;
  for (const auto& [name, d] : first) {
    if (opt.input_shapes.count(name)) r.shape_args.insert(name);
  }
  return r;
}

// Every graph input (not an initializer) with a static shape, from the
// model's dims, --shape and --batch; written back into the proto for ONNX's
// shape inference. Errors list every dim left unresolved. `rebatch_from`: the
// batch the model fixes when --batch changes it (fixed_batch), else 0.
std::map<std::string, Shape> resolve_input_shapes(onnx::GraphProto& g, const LoadOptions& opt,
                                                  const std::string& file, int64_t rebatch_from) {
  std::unordered_set<std::string> inits;
  for (const auto& t : g.initializer()) inits.insert(t.name());
  std::vector<std::string> input_names;
  for (const auto& i : g.input()) if (!inits.count(i.name())) input_names.push_back(i.name());
  for (const auto& [name, shape] : opt.input_shapes) {
    if (std::find(input_names.begin(), input_names.end(), name) != input_names.end()) continue;
    std::string list;
    for (const auto& n : input_names) list += (list.empty() ? "'" : ", '") + n + "'";
    throw file_error(file,
                     "--shape names '" + name + "', which is " +
                         (inits.count(name) ? "a constant (initializer), not an input" : "not an input of the model") +
                         " (inputs: " + (list.empty() ? "none" : list) + ")");
  }

  std::map<std::string, Shape> result;
  std::vector<std::string> unresolved;
  std::string example;
  for (auto& in : *g.mutable_input()) {
    if (inits.count(in.name())) continue;
    const std::string what = "graph input '" + in.name() + "'";
    if (!in.type().has_tensor_type()) throw file_error(file, what + " is not a tensor (sequences, maps and optionals are not supported)");
    const auto& tt = in.type().tensor_type();
    if (tt.elem_type() == 0) throw file_error(file, what + " has no element type");
    try {
      detail::checked_dtype(tt.elem_type(), what);
    } catch (const Error& e) {
      throw file_error(file, e.message(), e.hint());
    }
    // Declared dims: >= 0 fixed, -1 symbolic (named or not).
    std::vector<int64_t> dims;
    std::vector<std::string> names;
    if (tt.has_shape()) {
      for (const auto& d : tt.shape().dim()) {
        const bool fixed = d.has_dim_value() && d.dim_value() >= 0;
        dims.push_back(fixed ? d.dim_value() : -1);
        names.push_back(d.has_dim_param() ? d.dim_param() : "");
      }
    }
    Shape shape;
    auto given = opt.input_shapes.find(in.name());
    if (given != opt.input_shapes.end()) {
      shape = given->second;
      if (tt.has_shape() && shape.size() != dims.size()) {
        throw file_error(file, "--shape " + in.name() + "=" + shape_str(shape) + " has rank " +
                                   std::to_string(shape.size()) + ", the model declares rank " +
                                   std::to_string(dims.size()) + " for input '" + in.name() + "'");
      }
      for (std::size_t i = 0; i < dims.size(); ++i) {
        // A re-batch (--batch N on a model that fixes its batch) changes the first dim.
        const bool rebatched = i == 0 && rebatch_from > 0 && dims[0] == rebatch_from && shape[0] == opt.batch;
        if (dims[i] >= 0 && dims[i] != shape[i] && !rebatched) {
          throw file_error(file, "--shape " + in.name() + "=" + shape_str(shape) + ": dim " + std::to_string(i) +
                                     " is " + std::to_string(shape[i]) + ", the model fixes it to " +
                                     std::to_string(dims[i]),
                           i == 0 ? "--batch " + std::to_string(shape[0]) + " re-batches a model that fixes its batch"
                                  : std::string());
        }
      }
    } else if (!tt.has_shape()) {
      unresolved.push_back("input '" + in.name() + "' has no declared shape (rank unknown)");
      continue;
    } else {
      std::vector<std::string> missing;
      std::string ex;
      for (std::size_t i = 0; i < dims.size(); ++i) {
        int64_t d = dims[i];
        if (d < 0 && i == 0 && opt.batch > 0) d = opt.batch;
        if (i == 0 && rebatch_from > 0 && d == rebatch_from) d = opt.batch;  // a re-batch
        if (d < 0) {
          missing.push_back((names[i].empty() ? "unnamed dim" : "'" + names[i] + "'") + " (dim " + std::to_string(i) + ")");
          ex += std::string(i ? "x" : "") + (names[i].empty() ? "?" : names[i]);
        } else {
          ex += std::string(i ? "x" : "") + std::to_string(d);
        }
        shape.push_back(d);
      }
      if (!missing.empty()) {
        std::string list;
        for (const auto& s : missing) list += (list.empty() ? "" : ", ") + s;
        unresolved.push_back("input '" + in.name() + "': " + list);
        if (example.empty()) example = in.name() + "=" + ex;
        continue;
      }
    }
    try {
      check_size_limit(shape, what + " (" + dtype_name(dtype_from_onnx(tt.elem_type())) + "[" + shape_str(shape) + "])");
    } catch (const Error& e) {
      throw e.with_file(file);
    }
    // Write the static shape back.
    auto* sp = in.mutable_type()->mutable_tensor_type()->mutable_shape();
    sp->clear_dim();
    for (int64_t d : shape) sp->add_dim()->set_dim_value(d);
    result[in.name()] = shape;
  }
  if (!unresolved.empty()) {
    std::string msg = "input shapes are not fully known: ";
    for (std::size_t i = 0; i < unresolved.size(); ++i) msg += (i ? "; " : "") + unresolved[i];
    throw file_error(file, msg,
                     "pass the full shape of each such input with --shape NAME=DIMS" +
                         (example.empty() ? std::string() : " (e.g. --shape " + example + " with numbers for the names)") +
                         ", or --batch N for a symbolic first dim");
  }
  return result;
}

// ---- import into the Graph IR -------------------------------------------------------

}  // namespace

Attribute detail::convert_attribute(const onnx::AttributeProto& a) {
  using AP = onnx::AttributeProto;
  const std::string what = "attribute '" + a.name() + "'";
  int type = a.type();
  if (type == AP::UNDEFINED) {  // very old models: the set field says the kind
    if (a.has_f()) type = AP::FLOAT;
    else if (a.has_i()) type = AP::INT;
    else if (a.has_s()) type = AP::STRING;
    else if (a.has_t()) type = AP::TENSOR;
    else if (a.has_g()) type = AP::GRAPH;
    else if (a.floats_size()) type = AP::FLOATS;
    else if (a.ints_size()) type = AP::INTS;
    else if (a.strings_size()) type = AP::STRINGS;
    else throw Error(what + " has no type and no value");
  }
  Attribute r;
  switch (type) {
    case AP::FLOAT: r.kind = Attribute::Kind::f; r.f = a.f(); break;
    case AP::INT: r.kind = Attribute::Kind::i; r.i = a.i(); break;
    case AP::STRING: r.kind = Attribute::Kind::s; r.s = a.s(); break;
    case AP::TENSOR: r.kind = Attribute::Kind::t; r.t = tensor_from_proto(a.t(), what); break;
    case AP::GRAPH:
    case AP::GRAPHS: r.kind = Attribute::Kind::graph; break;  // If / Loop are inlined (control_flow.cpp); else refused
    case AP::FLOATS:
      r.kind = Attribute::Kind::floats;
      r.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case AP::INTS:
      r.kind = Attribute::Kind::ints;
      r.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case AP::STRINGS:
      r.kind = Attribute::Kind::strings;
      r.strings.assign(a.strings().begin(), a.strings().end());
      break;
    default: {
      const std::string name = AP::AttributeType_IsValid(type) ? AP::AttributeType_Name(static_cast<AP::AttributeType>(type))
                                                               : "type " + std::to_string(type);
      throw Error(what + " has kind " + name + ", which modelc does not support");
    }
  }
  return r;
}

namespace {

// Shape inference (ops::infer_node, node by node as ops::infer_graph) that
// lists failing nodes instead of stopping at the first; nodes reading a value
// left untyped by a failure are skipped.
void infer_collecting(Graph& g, const std::map<const Node*, std::string>& problems,
                      std::vector<ops::Unsupported>& out) {
  for (const auto& up : g.nodes()) {
    Node& n = *up;
    auto record = [&](const std::string& why, const std::string& hint = {}) {
      out.push_back({n.name(), n.op(), why, hint});
      for (Value* o : n.outputs()) {
        if (!o) continue;
        o->clear_constant();
        o->set_type(DType::undefined, {});
      }
    };
    auto p = problems.find(&n);
    if (p != problems.end()) {
      record(p->second);
      continue;
    }
    const ops::OpDef* def = nullptr;
    try {
      def = &ops::lookup(n);
    } catch (const Error& e) {
      record(e.message(), e.hint());
      continue;
    }
    bool typed = true;
    for (Value* v : n.inputs()) typed = typed && (!v || v->has_type());
    if (!typed) continue;
    try {
      ops::infer_node(n, *def);
    } catch (const Error& e) {
      record(e.message(), e.hint());
    }
  }
}

std::unique_ptr<Graph> import_graph(onnx::ModelProto& m, const std::map<std::string, int64_t>& opsets,
                                    const std::map<std::string, Shape>& input_shapes,
                                    const std::vector<detail::ExternalRef>& external, const LoadOptions& opt,
                                    const std::string& file, std::vector<ops::Unsupported>& unsupported) {
  onnx::GraphProto& gp = *m.mutable_graph();
  auto g = std::make_unique<Graph>();
  g->set_name(gp.name());
  g->set_opset(static_cast<int>(opsets.at("")));
  std::unordered_map<std::string, Value*> values;

  std::unordered_map<const onnx::TensorProto*, const detail::ExternalRef*> external_of;
  for (const detail::ExternalRef& ref : external) external_of[ref.tensor] = &ref;
  for (auto& t : *gp.mutable_initializer()) {
    Tensor data;
    try {
      auto ext = external_of.find(&t);
      if (ext != external_of.end()) {
        // Checked by find_external_data: the dtype is supported and the size matches.
        std::vector<uint8_t> v(static_cast<std::size_t>(ext->second->length));
        if (!v.empty()) detail::read_external_data(*ext->second, file, reinterpret_cast<char*>(v.data()));
        if (t.data_type() == onnx::TensorProto::BOOL) {
          for (uint8_t& b : v) b = b ? 1 : 0;
        }
        data = Tensor(dtype_from_onnx(t.data_type()), Shape(t.dims().begin(), t.dims().end()), std::move(v));
      } else {
        data = tensor_from_proto(t, "initializer '" + t.name() + "'");
      }
    } catch (const Error& e) {
      throw e.with_file(file);
    }
    // The proto's copy is not needed any more: keep peak memory at one copy
    // (swapping releases the storage; clear() would keep the capacity).
    std::string().swap(*t.mutable_raw_data());
    t.clear_raw_data();
    t.clear_float_data();
    t.clear_int32_data();
    t.clear_int64_data();
    values[t.name()] = g->add_constant(t.name(), std::move(data), /*initializer=*/true);
  }
  for (const auto& in : gp.input()) {
    if (values.count(in.name())) continue;  // an initializer listed as an input (old exporters): a constant
    const DType dtype = dtype_from_onnx(in.type().tensor_type().elem_type());
    const Shape& shape = input_shapes.at(in.name());
    auto fixed = opt.input_values.find(in.name());
    if (fixed != opt.input_values.end()) {
      const Tensor& t = fixed->second;
      if (t.dtype() != dtype || t.shape() != shape) {
        throw file_error(file, "the value given for input '" + in.name() + "' is " + dtype_name(t.dtype()) + "[" +
                                   shape_str(t.shape()) + "], the model declares " + dtype_name(dtype) + "[" +
                                   shape_str(shape) + "]");
      }
      values[in.name()] = g->add_constant(in.name(), t);
      continue;
    }
    Value* v = g->add_value(in.name());
    v->set_type(dtype, shape);
    g->add_input(v);
    values[in.name()] = v;
  }
  for (const auto& given : opt.input_values) {
    const std::string& name = given.first;  // not a structured binding: clang 14 cannot capture one
    const bool is_input = std::any_of(gp.input().begin(), gp.input().end(),
                                      [&](const onnx::ValueInfoProto& in) { return in.name() == name; });
    if (!is_input) throw file_error(file, "a value was given for '" + name + "', which is not an input of the model");
  }

  // The nodes, in order; If and Loop inlined as their condition and trip count decide
  // (frontend/control_flow.cpp).
  std::map<const Node*, std::string> problems;
  detail::Scope scope;
  scope.values.insert(values.begin(), values.end());
  detail::NodeImport nodes{*g, opsets, opt.collect_unsupported, file, problems};
  detail::import_nodes(nodes, gp, scope, "");
  values = std::move(scope.values);

  for (const auto& o : gp.output()) {
    auto it = values.find(o.name());
    if (it == values.end()) {
      throw file_error(file, "graph output '" + o.name() + "' is not produced by any node, input or initializer");
    }
    if (o.type().has_tensor_type() && o.type().tensor_type().elem_type() != 0) {
      try {
        detail::checked_dtype(o.type().tensor_type().elem_type(), "graph output '" + o.name() + "'");
      } catch (const Error& e) {
        throw e.with_file(file);
      }
    } else if (o.has_type() && !o.type().has_tensor_type()) {
      throw file_error(file, "graph output '" + o.name() + "' is not a tensor (sequences, maps and optionals are not supported)");
    }
    g->add_output(it->second);
  }

  if (opt.collect_unsupported) {
    infer_collecting(*g, problems, unsupported);
    if (unsupported.empty()) {
      try {
        g->verify();
      } catch (const Error& e) {
        throw e.with_file(file);
      }
    }
  } else {
    try {
      ops::infer_graph(*g);
      g->verify();
    } catch (const Error& e) {
      throw e.with_file(file);
    }
  }
  return g;
}

std::string dir_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

LoadResult import_model(onnx::ModelProto& m, const std::string& base_dir_in, const std::string& file,
                        const LoadOptions& given_opt) {
  const std::string base_dir = base_dir_in.empty() ? "." : base_dir_in;
  if (!m.has_graph()) {
    throw file_error(file, "not an ONNX model: it has no graph", "the file may be truncated or not an ONNX model");
  }
  // First: libonnx (the checker, shape inference) trusts every tensor's sizes.
  detail::check_model_tensors(m, file);
  LoadResult r;
  r.info.file = file;
  r.info.ir_version = m.ir_version();
  r.info.producer_name = m.producer_name();
  r.info.producer_version = m.producer_version();
  r.info.opset_imports = read_opsets(m, file);
  if (m.graph().sparse_initializer_size()) {
    throw file_error(file, "sparse initializers are not supported", "re-export the model with dense weights");
  }

  // 'ai.onnx' is another name of the default domain; libonnx's checker only
  // matches names exactly, so spell it one way.
  for (auto& op : *m.mutable_opset_import()) {
    if (op.domain() == "ai.onnx") op.set_domain("");
  }
  onnx::GraphProto& g = *m.mutable_graph();
  for (int k = 0; k < g.node_size(); ++k) {
    onnx::NodeProto& n = *g.mutable_node(k);
    if (n.op_type().empty()) throw file_error(file, "node " + std::to_string(k) + " has no op_type");
    n.set_name(detail::node_name(n, k));
    if (n.domain() == "ai.onnx") n.clear_domain();
    // Trailing optional inputs/outputs may be left out or named "": keep one form.
    while (n.input_size() && n.input(n.input_size() - 1).empty()) n.mutable_input()->RemoveLast();
    while (n.output_size() && n.output(n.output_size() - 1).empty()) n.mutable_output()->RemoveLast();
  }
  check_names_and_sort(g, file);
  // --bind: the files' values join input_values, and their shapes fix the inputs' shapes.
  LoadOptions opt = given_opt;
  for (auto& [name, value] : detail::bound_inputs(g, opt.bind, opt.input_values, opt.input_shapes, file)) {
    opt.input_shapes[name] = value.shape();
    opt.input_values.emplace(name, std::move(value));
  }
  opt.bind.clear();

  std::vector<detail::ExternalRef> external = detail::find_external_data(m, base_dir, file);
  // Before ONNX's checker: it then sees static input shapes (and an input
  // whose shape only --shape gives is not refused for lacking one).
  // --batch N on a model that fixes another batch: a re-batch, checked against the model at its own
  // batch (frontend/batch.h) once both are imported.
  const Rebatch rebatch = fixed_batch(g, opt, file);
  std::unique_ptr<onnx::ModelProto> original;
  if (rebatch.from > 0) original = std::make_unique<onnx::ModelProto>(m);
  const std::string rebatch_text = "--batch " + std::to_string(opt.batch) + " (the model fixes batch " +
                                   std::to_string(rebatch.from) + ")";
  auto rebatch_error = [&](const Error& e) {
    return Error(e.where(), rebatch_text + ": " + e.message(), kDynamicBatchHint);
  };
  const std::map<std::string, Shape> input_shapes = resolve_input_shapes(g, opt, file, rebatch.from);
  const std::string cannot = onnx_cannot_check(m, r.info.opset_imports);
  const bool checks = opt.onnx_checks && cannot.empty();
  r.info.onnx_checks = checks ? "passed" : !opt.onnx_checks ? "skipped (--no-onnx-checks)" : "skipped: " + cannot;
  if (checks) run_onnx_checker(m, base_dir, file);
  // Small tensors are read into the model now (ONNX's shape inference may
  // need their values: Reshape shapes and the like); big initializers are
  // read straight into modelc's tensors during the import, so the weights
  // are in memory once.
  std::vector<detail::ExternalRef> now, later;
  for (detail::ExternalRef& ref : external) {
    (ref.initializer && ref.length > kReadLaterBytes ? later : now).push_back(std::move(ref));
  }
  detail::load_external_data(now, file);
  try {
    if (checks) run_onnx_shape_inference(m, file);
    r.graph = import_graph(m, r.info.opset_imports, input_shapes, later, opt, file, r.unsupported);
  } catch (const Error& e) {
    if (rebatch.from > 0) throw rebatch_error(e);  // a shape op that hard-codes the batch, most likely
    throw;
  }
  if (rebatch.from > 0 && r.unsupported.empty()) {
    LoadOptions at_own = opt;
    at_own.batch = rebatch.from;
    at_own.collect_unsupported = false;
    for (const std::string& name : rebatch.shape_args) at_own.input_shapes[name][0] = rebatch.from;
    const LoadResult own = import_model(*original, base_dir_in, file, at_own);
    try {
      check_batch(*own.graph, rebatch.from, *r.graph, opt.batch, rebatch_text);
    } catch (const Error& e) {
      throw e.where().file.empty() ? e.with_file(file) : e;
    }
  }
  return r;
}

}  // namespace

int onnx_max_known_opset() {
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = ranges.find("");
  return it == ranges.end() ? 0 : it->second.second;
}

LoadResult load_onnx_model(const std::string& path, const LoadOptions& opt) {
  mc_io::File f;
  try {
    detail::open_regular_file(path, "the model", f);
  } catch (const Error& e) {
    throw e.with_file(path);
  }
  if (f.size > INT_MAX) {
    throw file_error(path, "is larger than 2 GB, protobuf's limit for one message",
                     "save the weights as external data: onnx.save_model(model, path, save_as_external_data=True)");
  }
  onnx::ModelProto m;
  {
    google::protobuf::io::FileInputStream in(f.fd);  // f closes it
    const bool ok = parse_model(in, m);
    if (in.GetErrno() != 0) {
      throw file_error(path, std::string("cannot read the model: ") + std::strerror(in.GetErrno()));
    }
    if (!ok) throw malformed(path);
  }
  return import_model(m, dir_of(path), path, opt);
}

LoadResult load_onnx_model_bytes(const std::string& bytes, const std::string& base_dir,
                                 const std::string& display_name, const LoadOptions& opt) {
  if (bytes.size() > static_cast<std::size_t>(INT_MAX)) {
    throw file_error(display_name, "is larger than 2 GB, protobuf's limit for one message");
  }
  onnx::ModelProto m;
  google::protobuf::io::ArrayInputStream in(bytes.data(), static_cast<int>(bytes.size()));
  if (!parse_model(in, m)) throw malformed(display_name);
  return import_model(m, base_dir, display_name, opt);
}

std::unique_ptr<Graph> load_onnx(const std::string& path, const LoadOptions& opt) {
  return load_onnx_model(path, opt).graph;
}

std::unique_ptr<Graph> load_onnx_bytes(const std::string& bytes, const std::string& base_dir,
                                       const std::string& display_name, const LoadOptions& opt) {
  return load_onnx_model_bytes(bytes, base_dir, display_name, opt).graph;
}

}  // namespace modelc
