#include "support/error.h"

namespace modelc {

Error::Error(Where where, std::string message, std::string hint)
    : std::runtime_error(render(where, message, hint)),
      where_(std::move(where)),
      message_(std::move(message)),
      hint_(std::move(hint)) {}

std::string Error::render(const Where& w, const std::string& message, const std::string& hint) {
  std::string s;
  if (!w.file.empty()) s += "file '" + w.file + "': ";
  if (!w.node.empty() || !w.op.empty()) {
    s += "node '" + w.node + "' (" + w.op;
    if (w.opset > 0) s += ", opset " + std::to_string(w.opset);
    s += "): ";
  }
  s += message;
  if (!hint.empty()) s += "\nhint: " + hint;
  return s;
}

Error Error::with_file(const std::string& file) const {
  Where w = where_;
  w.file = file;
  return Error(w, message_, hint_);
}

Error Error::with_node(const std::string& node, const std::string& op, int opset) const {
  if (!where_.node.empty() || !where_.op.empty()) return *this;
  Where w = where_;
  w.node = node;
  w.op = op;
  w.opset = opset;
  return Error(w, message_, hint_);
}

}  // namespace modelc
