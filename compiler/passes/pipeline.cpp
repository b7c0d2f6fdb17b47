// compiler/passes/pipeline.cpp — the order of the passes, readable top to bottom.
#include <algorithm>
#include <iostream>

#include "passes/pass.h"
#include "support/error.h"

namespace modelc {

bool run_pass(Graph& g, const PassOptions& o, const char* name, const PassFn& pass) {
  if (o.disabled.count(name)) return false;
  const bool changed = pass(g, o);
  if (o.verify_each) {
    try {
      g.verify();
    } catch (const Error& e) {
      throw Error(std::string("after pass ") + name + ": " + e.what());
    }
  }
  if (o.print_after.count(name) || o.print_after.count("all")) {
    std::ostream& os = o.log ? *o.log : std::cerr;
    os << "// after " << name << (changed ? "" : " (unchanged)") << "\n" << g.to_string();
  }
  return changed;
}

const std::vector<std::string>& pipeline_pass_names() {
  static const std::vector<std::string> names = {"simplify", "fold_constants", "fold_batchnorm", "precision",
                                                 "fuse_epilogue"};
  return names;
}

void run_pipeline(Graph& g, const PassOptions& o) {
  for (const std::string& d : o.disabled) {
    const auto& n = pipeline_pass_names();
    if (std::find(n.begin(), n.end(), d) == n.end()) throw Error("--disable-pass: no pass named '" + d + "'");
  }
  run_pass(g, o, "simplify", simplify);              // needs: shapes inferred (frontend)
  run_pass(g, o, "fold_constants", fold_constants);  // needs: constants propagated (ops::infer_graph)
  run_pass(g, o, "fold_batchnorm", fold_batchnorm);  // needs: constant weights (fold_constants); folds in FP32
  // needs: weights final (fold_batchnorm), so each is converted to FP16 once, after folding
  if (o.fp16) run_pass(g, o, "precision", precision);
  // needs: BN and constant scales folded (fold_batchnorm); the precision's Casts in place, since a
  // Cast between a producer and its epilogue (an FP32-pinned node) must stop the fusion
  if (o.fuse_epilogue) run_pass(g, o, "fuse_epilogue", fuse_epilogue);
}

}  // namespace modelc
