// compiler/cli/commands/profiles.cpp — the model lowered at each batch the flags ask for
// (cli/commands/profiles.h).
#include "cli/commands/profiles.h"

#include "frontend/batch.h"
#include "schedule/profiles.h"
#include "support/error.h"

namespace modelc::cli {

std::vector<const Schedule*> LoweredModel::profiles() const {
  std::vector<const Schedule*> r;
  for (const Schedule& s : schedules) r.push_back(&s);
  return r;
}

namespace {

// The pipeline on one graph; an error about the model as a whole ("no outputs") names its file.
Schedule lower_one(Graph& g, const LowerOptions& opt, const std::string& model) {
  try {
    return lower(g, opt);
  } catch (const Error& e) {
    if (e.where().node.empty() && e.where().file.empty()) throw e.with_file(model);
    throw;
  }
}

}  // namespace

LoweredModel lower_model(const std::string& model, const LoadFlags& flags, const LowerOptions& opt) {
  const std::vector<int64_t> batches = batch_profiles(flags);
  LoweredModel r;
  if (batches.size() <= 1) {
    r.graphs.push_back(load_onnx(model, load_options(flags)));
    r.schedules.push_back(lower_one(*r.graphs[0], opt, model));
    r.schedules[0].batch = batches.empty() ? default_batch(r.schedules[0]) : batches[0];
    return r;
  }
  // Every profile's graph first: the batch rules compare two imports before the passes change them.
  for (int64_t b : batches) r.graphs.push_back(load_onnx(model, load_options(flags, b)));
  std::string list;
  for (int64_t b : batches) list += (list.empty() ? "" : ",") + std::to_string(b);
  try {
    check_batch(*r.graphs.front(), batches.front(), *r.graphs.back(), batches.back(), "batch profiles " + list);
  } catch (const Error& e) {
    throw e.where().file.empty() ? e.with_file(model) : e;
  }
  for (std::size_t i = 0; i < batches.size(); ++i) {
    try {
      r.schedules.push_back(lower_one(*r.graphs[i], opt, model));
    } catch (const Error& e) {
      throw Error(e.where(), "batch profile " + std::to_string(batches[i]) + ": " + e.message(), e.hint());
    }
    r.schedules.back().batch = batches[i];
  }
  std::vector<Schedule*> ps;
  for (Schedule& s : r.schedules) ps.push_back(&s);
  try {
    mark_batched(ps);
  } catch (const Error& e) {
    throw e.with_file(model);
  }
  share_weights(ps);
  return r;
}

}  // namespace modelc::cli
