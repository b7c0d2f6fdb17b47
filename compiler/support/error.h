// compiler/support/error.h — the one error type of modelc.
#pragma once

#include <stdexcept>
#include <string>

namespace modelc {

/// \brief Every user-facing failure: what is wrong, where (node, op, opset,
/// file), and what to do. Nothing in modelc aborts on bad input; it throws this.
class Error : public std::runtime_error {
 public:
  struct Where {
    std::string node;     ///< node name ("" when not about a node)
    std::string op;       ///< op type
    int opset = 0;        ///< opset of the op's domain (0 when unknown)
    std::string file;     ///< file at fault ("" when not about a file)
  };

  explicit Error(std::string message, std::string hint = {})
      : Error(Where{}, std::move(message), std::move(hint)) {}
  Error(Where where, std::string message, std::string hint = {});

  const Where& where() const { return where_; }
  /// True when the error names a node (Where::node).
  bool names_node() const { return !where_.node.empty(); }
  const std::string& message() const { return message_; }
  const std::string& hint() const { return hint_; }

  /// A copy with the node context filled in (used when an op rule throws
  /// without knowing which node it was called for).
  Error with_node(const std::string& node, const std::string& op, int opset) const;
  /// A copy naming `file` as the file at fault (for errors raised without knowing the file).
  Error with_file(const std::string& file) const;

 private:
  static std::string render(const Where& w, const std::string& message, const std::string& hint);
  Where where_;
  std::string message_;
  std::string hint_;
};

}  // namespace modelc
