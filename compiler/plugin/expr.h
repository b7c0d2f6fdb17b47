// compiler/plugin/expr.h — the small expression language of plugin manifests (docs/PLUGINS.md,
// "Expressions"): the shape rule, the checks, the workspace size, the template arguments.
//
//   numbers      3  -1  0.5  1e-3           integers are int64, exact (overflow is an error)
//   tensor dims  X[0]  X[-1]                dim of input X (negative: from the last)
//   functions    rank(X) numel(X) itemsize(X) len(A) min(a, b, ...) max(a, b, ...) ceil_div(a, b)
//   attributes   alpha  pads[1]             a scalar attribute's value, an element of a list one
//   operators    + - * / %  == != < <= > >=  && || !  ( )     (C precedence; / on integers rounds
//                toward zero; a comparison is 1 or 0)
//   slices       X[1:]  X[:-1]  X[:]        the dims of X in that range (a whole item of a shape list
//                                           only)
//
// A manifest is read once (load time: syntax and names checked), and its expressions are evaluated
// per node (shape inference, the family's tactic, codegen). Nothing here runs any C++.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "support/error.h"

namespace modelc::plugin {

/// \brief A value of the language: an exact integer or a float.
struct Number {
  bool is_float = false;
  int64_t i = 0;
  double f = 0;
  static Number integer(int64_t v) { return {false, v, 0}; }
  static Number real(double v) { return {true, 0, v}; }
  double as_double() const { return is_float ? f : static_cast<double>(i); }
  std::string str() const;  ///< "3", "0.5"
};

/// \brief What an expression reads: the node's tensors (by their manifest names) and attributes.
class Scope {
 public:
  virtual ~Scope() = default;
  /// The dims of tensor `name`; null when no tensor has that name.
  virtual const Shape* tensor(const std::string& name) const = 0;
  /// The bytes of one element of tensor `name` (itemsize); 0 when unknown.
  virtual int64_t itemsize(const std::string& name) const = 0;
  /// A scalar attribute's value (int, float; a string attribute's index in its values); false when
  /// there is no such scalar.
  virtual bool scalar(const std::string& name, Number& out) const = 0;
  /// A list attribute's values; false when there is no such list.
  virtual bool list(const std::string& name, std::vector<Number>& out) const = 0;
};

/// \brief The names an expression may use, by kind (checked when it is parsed into a manifest).
struct Names {
  std::set<std::string> tensors, scalars, lists;
};

/// \brief A parsed expression (or a slice, where the parser was asked to allow one).
class Expr {
 public:
  struct Node;
  /// Parses `text`. `allow_slice`: the whole text may be a slice `X[a:b]` (a shape item). Throws
  /// Error naming the column for a syntax error, and each name used that `names` does not declare
  /// (or declares as another kind: `rank(alpha)`, `X + 1`).
  static Expr parse(const std::string& text, const Names& names, bool allow_slice = false);
  /// An integer literal.
  static Expr literal(int64_t v);

  const std::string& text() const { return text_; }
  bool is_slice() const;

  /// The value. Throws Error (a dim out of range, a division by zero, an overflow), the message
  /// quoting the expression.
  Number eval(const Scope& s) const;
  /// eval(), required to be an integer (`what` names it in the message).
  int64_t eval_int(const Scope& s, const std::string& what) const;
  /// A slice's dims (is_slice()), or the one integer value of another expression.
  std::vector<int64_t> eval_dims(const Scope& s, const std::string& what) const;

 private:
  std::shared_ptr<const Node> root_;
  std::string text_;
};

}  // namespace modelc::plugin
