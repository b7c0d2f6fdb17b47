// compiler/schedule/fold_casts.cpp — the fold_boundary_casts stage (--fp16 / --bf16).
//
// The Casts at the model's boundaries fold into the kernels beside them, where those are
// elementwise, softmax, normalization or reduce kernels (their templates take each operand's
// element type: FamilyFacts::converts_types, not for ops that only move data). A Cast of a model
// input that only such kernels read: they read the input and convert as they load (their source
// value for it becomes the input). A Cast into a model output of a value that only it reads,
// written by such a kernel (its other outputs unused): that kernel stores the output's type (its
// source value becomes the output). The Cast runs no kernel; each kernel that took one lists it
// (Kernel::folded_casts, in its note). Conv and gemm kernels take their output type themselves.
// After the layout stage (on its kernel list): only dense buffers, and kernels it leaves NCHW.
#include <algorithm>
#include <set>

#include "ops/registry.h"
#include "schedule/families.h"
#include "schedule/stages.h"
#include "schedule/views.h"

namespace modelc {

namespace {

bool default_domain(const Node& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

bool only_used_output(const Node& n, const Value* v) {
  for (const Value* o : n.outputs()) {
    if (o != v && used_value(o)) return false;
  }
  return true;
}

}  // namespace

bool fold_boundary_casts(Schedule& s, const LowerOptions& o) {
  const std::map<const Node*, std::size_t> kernel = kernel_of_node(s);
  const ValueIndex index(s);
  // Whether node n reads and writes its operands in their own types: a kernel the layout left
  // alone (not an output copy or a conversion, not channels-last) of a converting family.
  auto converts_operands = [&](const Node& n) {
    auto k = kernel.find(&n);
    const Kernel* kn = k == kernel.end() ? nullptr : &s.kernels[k->second];
    if ((kn && kn->output_copy) || compile_time_node(n) || !default_domain(n)) return false;
    if (kn && (kn->channels_last || !kn->conversion.empty())) return false;
    const ops::OpDef& def = ops::lookup(n);
    if (def.moves_data) return false;
    const FamilyFacts* f = kn ? kn->family : find_family(family_of(n, o));
    return f && f->converts_types;
  };
  auto channels_last = [&](const Value* v) {
    const int b = index.buffer(index.root(v));
    return b >= 0 && s.buffers[static_cast<std::size_t>(b)].storage.channels_last;
  };
  auto output_buffer = [&](const Value* v) { return index.space(v) == Space::output; };
  // Per folded Cast: the value its readers (writer) take instead of its output (input).
  std::map<const Value*, const Value*> folded_as;
  std::set<const Node*> folded;
  for (const Kernel& k : s.kernels) {
    const Node& c = *k.source.node;
    if (c.op() != "Cast" || !default_domain(c) || k.output_copy || !k.conversion.empty()) continue;
    Value& in = c.input(0);
    Value& out = c.output(0);
    // Between the FP32-computed float types only: a float64 side keeps its Cast kernel.
    if (!is_narrow_float(in.dtype()) || !is_narrow_float(out.dtype()) || in.dtype() == out.dtype()) continue;
    if (channels_last(&in) || channels_last(&out)) continue;
    const auto& readers = out.users();
    if (index.root(&in)->is_graph_input() && !out.is_graph_output() && !readers.empty() && index.root(&out) == &out &&
        std::all_of(readers.begin(), readers.end(), [&](const Node* r) { return converts_operands(*r); })) {
      folded_as[&out] = &in;
      folded.insert(&c);
      for (const Node* r : readers) {
        auto kr = kernel.find(r);  // a reader that runs no kernel (dead, with remove_dead off) takes nothing
        if (kr != kernel.end()) s.kernels[kr->second].folded_casts.push_back(c.name());
      }
    } else if (output_buffer(&out) && index.root(&out) == &out && index.root(&in) == &in && !in.is_graph_output() &&
               in.users().size() == 1 && in.producer() && converts_operands(*in.producer()) &&
               only_used_output(*in.producer(), &in)) {
      folded_as[&in] = &out;
      folded.insert(&c);
      s.kernels[kernel.at(in.producer())].folded_casts.push_back(c.name());
    }
  }
  if (folded.empty()) return false;
  for (Kernel& k : s.kernels) {
    for (auto* values : {&k.source.inputs, &k.source.outputs}) {
      for (const Value*& v : *values) {
        auto f = v ? folded_as.find(v) : folded_as.end();
        if (f != folded_as.end()) v = f->second;
      }
    }
  }
  s.kernels.erase(std::remove_if(s.kernels.begin(), s.kernels.end(),
                                 [&](const Kernel& k) { return folded.count(k.source.node) != 0; }),
                  s.kernels.end());
  resolve(s);
  return true;
}

}  // namespace modelc
