// compiler/plugin/expr.cpp — a recursive-descent parser and an evaluator for plugin manifests'
// expressions (expr.h lists the language).
#include "plugin/expr.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace modelc::plugin {

std::string Number::str() const {
  if (!is_float) return std::to_string(i);
  char b[40];
  std::snprintf(b, sizeof b, "%.9g", f);
  return b;
}

struct Expr::Node {
  enum class Kind { number, name, index, slice, call, unary, binary };
  Kind kind = Kind::number;
  int depth = 1;                                 // levels of the tree from here down (kMaxDepth)
  Number value;                                  // number
  std::string name;                              // name, index/slice base, call's function, operator
  std::vector<std::shared_ptr<const Node>> args;  // index: [i]; slice: [begin or null, end or null]; call, unary, binary
};

namespace {

using NodeP = std::shared_ptr<const Expr::Node>;
using Kind = Expr::Node::Kind;

const char* kFunctions = "rank, numel, itemsize, len, min, max, ceil_div";

// A manifest comes from elsewhere, like a model: its expressions are bounded before anything
// recurses over them. The parser, the name checks, the evaluator and the tree's destruction recurse
// once per level, so a chain of 50,000 `1*1*...*1` (a tree 50,000 deep) overflowed the stack. A
// real rule is a line: 4096 characters and 128 levels leave room for any of them.
constexpr std::size_t kMaxLength = 4096;
constexpr int kMaxDepth = 128;

// An expression as messages quote it: a long one cut to its first 100 characters.
std::string shown(const std::string& text) { return text.size() > 120 ? text.substr(0, 100) + "..." : text; }

struct Token {
  enum class Type { number, ident, op, end } type = Type::end;
  std::string text;
  std::size_t column = 0;  // 1-based
};

std::vector<Token> tokenize(const std::string& s) {
  std::vector<Token> r;
  std::size_t i = 0;
  auto fail = [&](const std::string& what) {
    throw Error(what + " at column " + std::to_string(i + 1) + " of '" + shown(s) + "'");
  };
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    Token t;
    t.column = i + 1;
    if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      std::size_t j = i;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      if (j < s.size() && s[j] == '.') {
        ++j;
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      }
      if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
        std::size_t k = j + 1;
        if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
        if (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) {
          j = k;
          while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
        }
      }
      if (j < s.size() && (std::isalpha(static_cast<unsigned char>(s[j])) || s[j] == '_')) fail("a malformed number");
      t.type = Token::Type::number;
      t.text = s.substr(i, j - i);
      i = j;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      t.type = Token::Type::ident;
      t.text = s.substr(i, j - i);
      i = j;
    } else {
      static const char* kTwo[] = {"==", "!=", "<=", ">=", "&&", "||"};
      t.type = Token::Type::op;
      for (const char* two : kTwo) {
        if (s.compare(i, 2, two) == 0) t.text = two;
      }
      if (t.text.empty()) {
        if (std::string("+-*/%<>!()[],:").find(c) == std::string::npos) fail(std::string("unexpected character '") + c + "'");
        t.text = std::string(1, c);
      }
      i += t.text.size();
    }
    r.push_back(t);
  }
  Token end;
  end.column = s.size() + 1;
  r.push_back(end);
  return r;
}

class Parser {
 public:
  Parser(const std::string& text, bool allow_slice) : text_(text), tokens_(tokenize(text)), allow_slice_(allow_slice) {}

  // Entered by every production that recurses (a parenthesis, an argument, an index, a unary
  // operator): the parser's own stack is bounded as the tree is.
  struct Nesting {
    Parser& p;
    explicit Nesting(Parser& parser) : p(parser) {
      if (++p.nesting_ > kMaxDepth) p.too_deep();
    }
    ~Nesting() { --p.nesting_; }
  };

  NodeP parse() {
    if (peek().type == Token::Type::end) throw Error("the expression is empty");
    NodeP n = parse_or(true);
    if (peek().type != Token::Type::end) fail("unexpected '" + peek().text + "'");
    return n;
  }

 private:
  const Token& peek() const { return tokens_[pos_]; }
  bool accept(const char* op) {
    if (peek().type == Token::Type::op && peek().text == op) {
      ++pos_;
      return true;
    }
    return false;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(what + " at column " + std::to_string(peek().column) + " of '" + shown(text_) + "'");
  }
  void expect(const char* op) {
    if (!accept(op)) fail(std::string("expected '") + op + "'" + (peek().type == Token::Type::end ? " at the end" : ""));
  }
  [[noreturn]] void too_deep() const {
    fail("the expression nests more than " + std::to_string(kMaxDepth) + " levels (operators, parentheses, calls)");
  }
  // A node's depth from its arguments', refused past kMaxDepth (a left-associative chain deepens
  // the tree without recursing in the parser).
  NodeP sized(std::shared_ptr<Expr::Node> n) const {
    for (const NodeP& a : n->args) {
      if (a) n->depth = std::max(n->depth, a->depth + 1);
    }
    if (n->depth > kMaxDepth) too_deep();
    return n;
  }
  NodeP binary(const std::string& op, NodeP a, NodeP b) const {
    auto n = std::make_shared<Expr::Node>();
    n->kind = Kind::binary;
    n->name = op;
    n->args = {std::move(a), std::move(b)};
    return sized(std::move(n));
  }

  // `top`: this is the whole expression, where a slice may stand.
  NodeP parse_or(bool top = false) {
    const Nesting nest(*this);
    NodeP a = parse_and(top);
    while (accept("||")) a = binary("||", a, parse_and());
    return a;
  }
  NodeP parse_and(bool top = false) {
    NodeP a = parse_compare(top);
    while (accept("&&")) a = binary("&&", a, parse_compare());
    return a;
  }
  NodeP parse_compare(bool top = false) {
    NodeP a = parse_add(top);
    for (const char* op : {"==", "!=", "<=", ">=", "<", ">"}) {
      if (accept(op)) return binary(op, a, parse_add());
    }
    return a;
  }
  NodeP parse_add(bool top = false) {
    NodeP a = parse_mul(top);
    for (;;) {
      if (accept("+")) a = binary("+", a, parse_mul());
      else if (accept("-")) a = binary("-", a, parse_mul());
      else return a;
    }
  }
  NodeP parse_mul(bool top = false) {
    NodeP a = parse_unary(top);
    for (;;) {
      if (accept("*")) a = binary("*", a, parse_unary());
      else if (accept("/")) a = binary("/", a, parse_unary());
      else if (accept("%")) a = binary("%", a, parse_unary());
      else return a;
    }
  }
  NodeP parse_unary(bool top = false) {
    for (const char* op : {"-", "!", "+"}) {
      if (accept(op)) {
        const Nesting nest(*this);
        NodeP a = parse_unary();
        if (std::string(op) == "+") return a;
        auto n = std::make_shared<Expr::Node>();
        n->kind = Kind::unary;
        n->name = op;
        n->args = {a};
        return sized(std::move(n));
      }
    }
    return parse_primary(top);
  }
  NodeP parse_primary(bool top) {
    const Token t = peek();
    if (t.type == Token::Type::number) {
      ++pos_;
      auto n = std::make_shared<Expr::Node>();
      const bool real = t.text.find_first_of(".eE") != std::string::npos;
      errno = 0;
      if (real) {
        n->value = Number::real(std::strtod(t.text.c_str(), nullptr));
      } else {
        const long long v = std::strtoll(t.text.c_str(), nullptr, 10);
        if (errno == ERANGE) {
          --pos_;
          fail("the integer " + t.text + " is too large");
        }
        n->value = Number::integer(v);
      }
      return n;
    }
    if (t.type == Token::Type::ident) {
      ++pos_;
      auto n = std::make_shared<Expr::Node>();
      n->name = t.text;
      if (accept("(")) {
        n->kind = Kind::call;
        if (!accept(")")) {
          do {
            n->args.push_back(parse_or());
          } while (accept(","));
          expect(")");
        }
        return sized(std::move(n));
      }
      if (accept("[")) {
        NodeP begin, end;
        if (!(peek().type == Token::Type::op && peek().text == ":")) begin = parse_or();
        if (accept(":")) {
          if (!top || !allow_slice_) {
            --pos_;
            fail("a slice X[a:b] stands only as a whole item of an output's shape");
          }
          if (!(peek().type == Token::Type::op && peek().text == "]")) end = parse_or();
          expect("]");
          n->kind = Kind::slice;
          n->args = {begin, end};
          if (peek().type != Token::Type::end) fail("a slice X[a:b] stands only as a whole item of an output's shape");
          return sized(std::move(n));
        }
        if (!begin) fail("expected an index");
        expect("]");
        n->kind = Kind::index;
        n->args = {begin};
        return sized(std::move(n));
      }
      n->kind = Kind::name;
      return n;
    }
    if (accept("(")) {
      NodeP a = parse_or();
      expect(")");
      return a;
    }
    fail(t.type == Token::Type::end ? "the expression ends early" : "unexpected '" + t.text + "'");
  }

  std::string text_;
  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  bool allow_slice_ = false;
  int nesting_ = 0;
};

// ---- name checks ------------------------------------------------------------------------------

void check_names(const Expr::Node& n, const Names& names, const std::string& text) {
  auto fail = [&](const std::string& what) { throw Error(what + " in '" + shown(text) + "'"); };
  auto is_tensor = [&](const std::string& s) { return names.tensors.count(s) != 0; };
  auto is_list = [&](const std::string& s) { return names.lists.count(s) != 0; };
  auto bare_arg = [&](std::size_t i) -> const std::string* {
    if (i >= n.args.size() || n.args[i]->kind != Kind::name) return nullptr;
    return &n.args[i]->name;
  };
  switch (n.kind) {
    case Kind::number: return;
    case Kind::name:
      if (names.scalars.count(n.name)) return;
      if (is_tensor(n.name)) fail("'" + n.name + "' is a tensor: use " + n.name + "[i], rank(" + n.name + "), numel(" + n.name + ") or itemsize(" + n.name + ")");
      if (is_list(n.name)) fail("'" + n.name + "' is a list attribute: use " + n.name + "[i] or len(" + n.name + ")");
      fail("'" + n.name + "' is neither an input nor an attribute of the op");
    case Kind::index:
    case Kind::slice:
      if (n.kind == Kind::slice && !is_tensor(n.name)) fail("'" + n.name + "[a:b]' slices the dims of an input, and '" + n.name + "' is not an input");
      if (!is_tensor(n.name) && !is_list(n.name)) {
        fail("'" + n.name + "[...]' indexes neither an input's dims nor a list attribute");
      }
      break;
    case Kind::call: {
      const std::string& f = n.name;
      if (f == "rank" || f == "numel" || f == "itemsize") {
        const std::string* a = bare_arg(0);
        if (n.args.size() != 1 || !a || !is_tensor(*a)) fail(f + "() takes one input's name");
        return;
      }
      if (f == "len") {
        const std::string* a = bare_arg(0);
        if (n.args.size() != 1 || !a || !is_list(*a)) fail("len() takes one list attribute's name");
        return;
      }
      if (f == "min" || f == "max") {
        if (n.args.empty()) fail(f + "() takes one or more values");
      } else if (f == "ceil_div") {
        if (n.args.size() != 2) fail("ceil_div() takes two values");
      } else {
        fail("unknown function '" + f + "' (there are " + std::string(kFunctions) + ")");
      }
      break;
    }
    case Kind::unary:
    case Kind::binary: break;
  }
  for (const auto& a : n.args) {
    if (a) check_names(*a, names, text);
  }
}

// ---- evaluation -------------------------------------------------------------------------------

class Evaluator {
 public:
  Evaluator(const Scope& s, const std::string& text) : s_(s), text_(text) {}

  [[noreturn]] void fail(const std::string& what) const { throw Error(what + " (in '" + shown(text_) + "')"); }

  const Shape& tensor(const std::string& name) const {
    const Shape* shape = s_.tensor(name);
    if (!shape) fail("no input '" + name + "'");
    return *shape;
  }

  // Index i of a sequence of `size` (negative from the end).
  int64_t position(int64_t i, int64_t size, const std::string& what) const {
    const int64_t p = i < 0 ? i + size : i;
    if (p < 0 || p >= size) {
      fail(what + " has " + std::to_string(size) + (size == 1 ? " entry" : " entries") + ", no index " + std::to_string(i));
    }
    return p;
  }

  int64_t integer(const Expr::Node& n, const std::string& what) const {
    const Number v = eval(n);
    if (v.is_float) fail(what + " must be an integer, got " + v.str());
    return v.i;
  }

  Number eval(const Expr::Node& n) const {
    switch (n.kind) {
      case Kind::number: return n.value;
      case Kind::name: {
        Number v;
        if (!s_.scalar(n.name, v)) fail("no attribute '" + n.name + "'");
        return v;
      }
      case Kind::index: {
        const int64_t i = integer(*n.args[0], "an index");
        if (const Shape* shape = s_.tensor(n.name)) {
          const int64_t rank = static_cast<int64_t>(shape->size());
          const int64_t p = i < 0 ? i + rank : i;
          if (p < 0 || p >= rank) {
            fail("input '" + n.name + "' has rank " + std::to_string(rank) + ", no dim " + std::to_string(i));
          }
          return Number::integer((*shape)[static_cast<std::size_t>(p)]);
        }
        std::vector<Number> list;
        if (!s_.list(n.name, list)) fail("no input or list attribute '" + n.name + "'");
        return list[static_cast<std::size_t>(position(i, static_cast<int64_t>(list.size()), "attribute '" + n.name + "'"))];
      }
      case Kind::slice: fail("a slice has no single value");
      case Kind::call: return call(n);
      case Kind::unary: {
        const Number a = eval(*n.args[0]);
        if (n.name == "!") return Number::integer(truth(a) ? 0 : 1);
        if (a.is_float) return Number::real(-a.f);
        if (a.i == std::numeric_limits<int64_t>::min()) fail("-" + a.str() + " overflows int64");
        return Number::integer(-a.i);
      }
      case Kind::binary: return binary(n);
    }
    fail("internal: unknown expression node");
  }

  static bool truth(const Number& v) { return v.is_float ? v.f != 0 : v.i != 0; }

  Number call(const Expr::Node& n) const {
    const std::string& f = n.name;
    if (f == "rank") return Number::integer(static_cast<int64_t>(tensor(n.args[0]->name).size()));
    if (f == "numel") return Number::integer(num_elements(tensor(n.args[0]->name)));
    if (f == "itemsize") {
      tensor(n.args[0]->name);
      return Number::integer(s_.itemsize(n.args[0]->name));
    }
    if (f == "len") {
      std::vector<Number> list;
      if (!s_.list(n.args[0]->name, list)) fail("no list attribute '" + n.args[0]->name + "'");
      return Number::integer(static_cast<int64_t>(list.size()));
    }
    if (f == "min" || f == "max") {
      Number best = eval(*n.args[0]);
      for (std::size_t i = 1; i < n.args.size(); ++i) {
        const Number v = eval(*n.args[i]);
        const bool less = (v.is_float || best.is_float) ? v.as_double() < best.as_double() : v.i < best.i;
        const bool greater = (v.is_float || best.is_float) ? v.as_double() > best.as_double() : v.i > best.i;
        if (f == "min" ? less : greater) best = v;
      }
      return best;
    }
    if (f == "ceil_div") {
      const int64_t a = integer(*n.args[0], "ceil_div's first value");
      const int64_t b = integer(*n.args[1], "ceil_div's second value");
      if (b <= 0) fail("ceil_div by " + std::to_string(b));
      if (a < 0) fail("ceil_div of a negative value " + std::to_string(a));
      return Number::integer(a / b + (a % b != 0 ? 1 : 0));
    }
    fail("unknown function '" + f + "'");
  }

  Number binary(const Expr::Node& n) const {
    const std::string& op = n.name;
    if (op == "&&") return Number::integer(truth(eval(*n.args[0])) && truth(eval(*n.args[1])) ? 1 : 0);
    if (op == "||") return Number::integer(truth(eval(*n.args[0])) || truth(eval(*n.args[1])) ? 1 : 0);
    const Number a = eval(*n.args[0]), b = eval(*n.args[1]);
    const bool real = a.is_float || b.is_float;
    if (op == "==" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=") {
      int c;
      if (real) {
        const double x = a.as_double(), y = b.as_double();
        c = x < y ? -1 : x > y ? 1 : (x == y ? 0 : 2);  // 2: unordered (NaN)
      } else {
        c = a.i < b.i ? -1 : a.i > b.i ? 1 : 0;
      }
      bool r = false;
      if (op == "==") r = c == 0;
      else if (op == "!=") r = c != 0;
      else if (op == "<") r = c == -1;
      else if (op == "<=") r = c == -1 || c == 0;
      else if (op == ">") r = c == 1;
      else r = c == 1 || c == 0;
      return Number::integer(r ? 1 : 0);
    }
    if (real) {
      const double x = a.as_double(), y = b.as_double();
      if (op == "+") return Number::real(x + y);
      if (op == "-") return Number::real(x - y);
      if (op == "*") return Number::real(x * y);
      if (op == "/") {
        if (y == 0) fail("division by zero");
        return Number::real(x / y);
      }
      fail("% takes integers, got " + a.str() + " % " + b.str());
    }
    int64_t r = 0;
    bool overflow = false;
    if (op == "+") overflow = __builtin_add_overflow(a.i, b.i, &r);
    else if (op == "-") overflow = __builtin_sub_overflow(a.i, b.i, &r);
    else if (op == "*") overflow = __builtin_mul_overflow(a.i, b.i, &r);
    else {
      if (b.i == 0) fail(op == "/" ? "division by zero" : "% by zero");
      if (a.i == std::numeric_limits<int64_t>::min() && b.i == -1) overflow = true;
      else r = op == "/" ? a.i / b.i : a.i % b.i;
    }
    if (overflow) fail(a.str() + " " + op + " " + b.str() + " overflows int64");
    return Number::integer(r);
  }

 private:
  const Scope& s_;
  const std::string& text_;
};

}  // namespace

Expr Expr::parse(const std::string& text, const Names& names, bool allow_slice) {
  if (text.size() > kMaxLength) {
    throw Error("the expression is " + std::to_string(text.size()) + " characters long, more than the " +
                std::to_string(kMaxLength) + " an expression may have ('" + shown(text) + "')");
  }
  Expr e;
  e.text_ = text;
  Parser p(text, allow_slice);
  e.root_ = p.parse();
  check_names(*e.root_, names, text);
  return e;
}

Expr Expr::literal(int64_t v) {
  Expr e;
  auto n = std::make_shared<Node>();
  n->value = Number::integer(v);
  e.root_ = n;
  e.text_ = std::to_string(v);
  return e;
}

bool Expr::is_slice() const { return root_ && root_->kind == Node::Kind::slice; }

Number Expr::eval(const Scope& s) const {
  if (!root_) throw Error("internal: an empty plugin expression");
  return Evaluator(s, text_).eval(*root_);
}

int64_t Expr::eval_int(const Scope& s, const std::string& what) const {
  const Number v = eval(s);
  if (v.is_float) throw Error(what + " must be an integer, '" + shown(text_) + "' is " + v.str());
  return v.i;
}

std::vector<int64_t> Expr::eval_dims(const Scope& s, const std::string& what) const {
  if (!is_slice()) return {eval_int(s, what)};
  const Evaluator ev(s, text_);
  const Shape& shape = ev.tensor(root_->name);
  const int64_t rank = static_cast<int64_t>(shape.size());
  auto bound = [&](const std::shared_ptr<const Node>& b, int64_t def) {
    if (!b) return def;
    int64_t v = ev.integer(*b, "a slice bound");
    if (v < 0) v += rank;
    return std::clamp<int64_t>(v, 0, rank);  // Python's rule: out-of-range bounds clamp
  };
  const int64_t begin = bound(root_->args[0], 0), end = bound(root_->args[1], rank);
  std::vector<int64_t> r;
  for (int64_t d = begin; d < end; ++d) r.push_back(shape[static_cast<std::size_t>(d)]);
  return r;
}

}  // namespace modelc::plugin
