// runtime_stub/tools/resources.h — registers, shared memory, stack and spills per kernel, from
// ptxas -v, into report.json and report.md (copied into every output folder as
// runtime/tools/resources.h; `make resources` builds runtime/tools/resources.cpp with it).
//
// Header only, the C++17 standard library and libstdc++'s demangler: the folder stays
// self-contained, and modelc's unit tests include this file.
//
// The pieces:
//   parse_ptxas_log   "ptxas info : Compiling entry function '_Z...' for 'sm_75'" and the lines after
//                     it (stack frame, spill stores/loads, registers, barriers, smem) -> one
//                     Resources per (function, arch)
//   parse_ptx         ".target sm_75", ".entry NAME(" and the body: does it hold mma.sync
//                     (wmma.mma.sync or mma.sync)?
//   parse_enums       enum definitions of the kernel headers (qualified name -> enumerator values):
//                     the demangler writes an enum template argument as (mc::gemm::Act)1, the
//                     emitted code as mc::gemm::Act::relu
//   canonical_tokens  one form for both sides: the demangled ptxas name and the kernel's launched
//                     function as report.json lists it ("launches"): no return type or parameter
//                     list, no spaces, no literal suffixes or integer casts (64l, (long)64 -> 64),
//                     enums as #mc::gemm::Act=1, fixed-width typedefs as the builtin types,
//                     (anonymous namespace):: and _GLOBAL__N_... qualifiers dropped
//   same_function     compares two canonical forms; the launched text may leave out trailing
//                     (default) template arguments
//   Json              a small JSON value that keeps the key order and the numbers' text, and
//                     writes what nlohmann's dump(2) writes, so report.json keeps its form
//   merge             resources (and mma) per kernel and arch into report.json; a section of
//                     report.md; the check of the tensor-core kernels (ctest codegen_resources_*)
#pragma once

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace mc_resources {

// ---- ptxas -v --------------------------------------------------------------------------------

/// What ptxas says about one entry function for one arch.
struct Resources {
  std::string function;  ///< mangled name
  std::string arch;      ///< "sm_75"
  int registers = -1;    ///< -1: not reported
  long shared_bytes = 0;  ///< static shared memory (smem)
  long stack_bytes = 0;
  long spill_store_bytes = 0;
  long spill_load_bytes = 0;
  long constant_bytes = 0;  ///< cmem[0]
  int barriers = 0;
};

namespace detail {

inline std::string trim(const std::string& s) {
  const std::size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r\n") + 1 - a);
}

// The number just before `what` in `line` ("Used 22 registers" -> 22 for " registers"); -1 if absent.
inline long number_before(const std::string& line, const std::string& what) {
  const std::size_t p = line.find(what);
  if (p == std::string::npos || p == 0) return -1;
  std::size_t a = p;
  while (a > 0 && std::isdigit(static_cast<unsigned char>(line[a - 1]))) --a;
  if (a == p) return -1;
  return std::stol(line.substr(a, p - a));
}

// The number just after `what` ("used 1 barriers": after "used "); -1 if absent.
inline long number_after(const std::string& line, const std::string& what) {
  const std::size_t p = line.find(what);
  if (p == std::string::npos) return -1;
  std::size_t a = p + what.size(), b = a;
  while (b < line.size() && std::isdigit(static_cast<unsigned char>(line[b]))) ++b;
  if (a == b) return -1;
  return std::stol(line.substr(a, b - a));
}

inline std::string quoted(const std::string& line, std::size_t from) {
  const std::size_t a = line.find('\'', from);
  if (a == std::string::npos) return "";
  const std::size_t b = line.find('\'', a + 1);
  return b == std::string::npos ? "" : line.substr(a + 1, b - a - 1);
}

}  // namespace detail

/// \brief The entry functions of a ptxas -v log (nvcc -Xptxas -v; any number of archs and
/// compilations concatenated), in order.
inline std::vector<Resources> parse_ptxas_log(const std::string& text) {
  std::vector<Resources> out;
  std::map<std::pair<std::string, std::string>, std::size_t> index;  // (function, arch) -> out
  std::string arch, entry, properties_of;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t compiling = line.find("Compiling entry function");
    if (compiling != std::string::npos) {
      entry = detail::quoted(line, compiling);
      const std::size_t for_at = line.find(" for ", compiling);
      arch = for_at == std::string::npos ? "" : detail::quoted(line, for_at);
      properties_of.clear();
      if (entry.empty()) continue;
      const auto key = std::make_pair(entry, arch);
      if (!index.count(key)) {
        index[key] = out.size();
        Resources r;
        r.function = entry;
        r.arch = arch;
        out.push_back(r);
      }
      continue;
    }
    const std::size_t props = line.find("Function properties for ");
    if (props != std::string::npos) {
      properties_of = detail::trim(line.substr(props + 24));
      continue;
    }
    if (entry.empty()) continue;
    Resources& r = out[index[std::make_pair(entry, arch)]];
    if (line.find("bytes stack frame") != std::string::npos) {
      if (properties_of != entry) continue;  // a called function's frame
      r.stack_bytes = std::max(0L, detail::number_before(line, " bytes stack frame"));
      r.spill_store_bytes = std::max(0L, detail::number_before(line, " bytes spill stores"));
      r.spill_load_bytes = std::max(0L, detail::number_before(line, " bytes spill loads"));
      continue;
    }
    if (line.find("Used ") != std::string::npos && line.find(" registers") != std::string::npos) {
      r.registers = static_cast<int>(detail::number_before(line, " registers"));
      r.barriers = static_cast<int>(std::max(0L, detail::number_after(line, "used ")));
      r.shared_bytes = std::max(0L, detail::number_before(line, " bytes smem"));
      r.constant_bytes = std::max(0L, detail::number_before(line, " bytes cmem[0]"));
    }
  }
  return out;
}

// ---- PTX ---------------------------------------------------------------------------------------

struct PtxEntry {
  std::string function;  ///< mangled name
  std::string arch;      ///< "sm_75" (the .target of its file)
  bool mma = false;      ///< holds wmma.mma.sync or mma.sync
};

/// \brief The .entry functions of a PTX file and whether each issues tensor-core MMAs: in its own
/// body, or in a .func it calls (directly or through others), should one not be inlined.
inline std::vector<PtxEntry> parse_ptx(const std::string& text) {
  struct Function {
    std::string name;
    bool entry = false;
    std::string body;
  };
  std::string arch;
  const std::size_t target = text.find(".target ");
  if (target != std::string::npos) {
    std::size_t a = target + 8, b = a;
    while (b < text.size() && (std::isalnum(static_cast<unsigned char>(text[b])) || text[b] == '_')) ++b;
    arch = text.substr(a, b - a);
  }
  auto skip_space = [&](std::size_t i) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    return i;
  };
  auto skip_parens = [&](std::size_t i) {  // i at '(' -> after its ')'
    int depth = 0;
    for (; i < text.size(); ++i) {
      if (text[i] == '(') ++depth;
      if (text[i] == ')' && --depth == 0) return i + 1;
    }
    return i;
  };
  std::vector<Function> functions;
  std::size_t p = 0;
  for (;;) {
    const std::size_t e = text.find(".entry ", p), f = text.find(".func ", p);
    if (e == std::string::npos && f == std::string::npos) break;
    const bool entry = e < f;
    std::size_t i = skip_space(entry ? e + 7 : f + 6);
    if (!entry && i < text.size() && text[i] == '(') i = skip_space(skip_parens(i));  // return values
    std::size_t n = i;
    while (n < text.size() && text[n] != '(' && text[n] != ';' && !std::isspace(static_cast<unsigned char>(text[n]))) ++n;
    Function fn;
    fn.name = text.substr(i, n - i);
    fn.entry = entry;
    n = skip_space(n);
    if (n < text.size() && text[n] == '(') n = skip_parens(n);
    const std::size_t open = text.find_first_of("{;", n);
    if (open == std::string::npos) break;
    if (text[open] == ';') {  // a declaration
      p = open + 1;
      continue;
    }
    int depth = 0;
    std::size_t end = open;
    for (; end < text.size(); ++end) {
      if (text[end] == '{') ++depth;
      if (text[end] == '}' && --depth == 0) break;
    }
    fn.body = text.substr(open, end - open);
    functions.push_back(fn);
    p = end;  // the next function starts after this body
  }
  // MMAs: in the body, or in a called function (to a fixed point).
  std::vector<bool> mma(functions.size());
  for (std::size_t k = 0; k < functions.size(); ++k) mma[k] = functions[k].body.find("mma.sync") != std::string::npos;
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t k = 0; k < functions.size(); ++k) {
      if (mma[k]) continue;
      for (std::size_t c = 0; c < functions.size(); ++c) {
        if (c == k || functions[c].entry || !mma[c] || functions[c].name.empty()) continue;
        const std::string& body = functions[k].body;
        const std::size_t at = body.find(functions[c].name);
        if (at != std::string::npos && body.rfind("call", at) != std::string::npos) {
          mma[k] = true;
          changed = true;
          break;
        }
      }
    }
  }
  std::vector<PtxEntry> out;
  for (std::size_t k = 0; k < functions.size(); ++k) {
    if (functions[k].entry) out.push_back({functions[k].name, arch, mma[k]});
  }
  return out;
}

// ---- demangling and the canonical form ----------------------------------------------------------

/// The demangled name (libstdc++'s demangler, as c++filt / cu++filt print it); the input when it
/// does not demangle.
inline std::string demangle(const std::string& mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !d) {
    std::free(d);
    return mangled;
  }
  std::string r = d;
  std::free(d);
  return r;
}

/// Enum qualified name ("mc::gemm::Act") -> enumerator -> value.
using EnumTable = std::map<std::string, std::map<std::string, long>>;

namespace detail {

inline bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

inline bool is_word(const std::string& t) { return !t.empty() && word_char(t[0]); }

inline bool is_number(const std::string& t) {
  std::size_t i = t.size() > 1 && t[0] == '-' ? 1 : 0;
  return i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]));
}

// Tokens: words (identifiers, numbers with their suffixes), "::", literals, single punctuation.
inline std::vector<std::string> tokens(const std::string& s) {
  std::vector<std::string> t;
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      i = s.find('\n', i);
      if (i == std::string::npos) i = s.size();
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      i = s.find("*/", i + 2);
      i = i == std::string::npos ? s.size() : i + 2;
    } else if (c == '"' || c == '\'') {
      std::size_t j = i + 1;
      for (; j < s.size() && s[j] != c; ++j) {
        if (s[j] == '\\') ++j;
      }
      t.push_back(s.substr(i, j + 1 - i));
      i = j + 1;
    } else if (word_char(c)) {
      std::size_t j = i;
      while (j < s.size() && word_char(s[j])) ++j;
      t.push_back(s.substr(i, j - i));
      i = j;
    } else if (c == ':' && i + 1 < s.size() && s[i + 1] == ':') {
      t.push_back("::");
      i += 2;
    } else {
      t.push_back(std::string(1, c));
      ++i;
    }
  }
  return t;
}

// "64l", "64ul", "7u", "1LL" -> "64", "64", "7", "1"; anything else unchanged.
inline std::string strip_suffix(const std::string& t) {
  if (t.empty() || !std::isdigit(static_cast<unsigned char>(t[0]))) return t;
  std::size_t e = t.size();
  while (e > 0 && (t[e - 1] == 'u' || t[e - 1] == 'U' || t[e - 1] == 'l' || t[e - 1] == 'L')) --e;
  if (t.compare(0, 2, "0x") == 0 || t.compare(0, 2, "0X") == 0) {
    return std::to_string(std::stoull(t.substr(0, e), nullptr, 16));
  }
  return t.substr(0, e);
}

// Builtin integer types the demangler writes in casts, and the typedefs the emitted code uses.
inline const std::set<std::string>& builtin_words() {
  static const std::set<std::string> w = {"bool", "char", "short", "int", "long", "signed", "unsigned", "__int128"};
  return w;
}

inline const std::map<std::string, std::vector<std::string>>& typedefs() {
  static const std::map<std::string, std::vector<std::string>> t = {
      {"int64_t", {"long"}},
      {"uint64_t", {"unsigned", "long"}},
      {"int32_t", {"int"}},
      {"uint32_t", {"unsigned", "int"}},
      {"int16_t", {"short"}},
      {"uint16_t", {"unsigned", "short"}},
      {"int8_t", {"signed", "char"}},
      {"uint8_t", {"unsigned", "char"}},
      {"size_t", {"unsigned", "long"}},
      {"ptrdiff_t", {"long"}},
      {"half", {"__half"}},
      {"nv_bfloat16", {"__nv_bfloat16"}},
  };
  return t;
}

// Same type, one spelling: "long int" -> "long", "unsigned" -> "unsigned int", "long unsigned int"
// -> "unsigned long".
inline std::vector<std::string> builtin_spelling(std::vector<std::string> words) {
  const bool is_unsigned = std::count(words.begin(), words.end(), "unsigned") > 0;
  const bool is_signed = std::count(words.begin(), words.end(), "signed") > 0;
  const long longs = std::count(words.begin(), words.end(), "long");
  const bool is_short = std::count(words.begin(), words.end(), "short") > 0;
  const bool is_char = std::count(words.begin(), words.end(), "char") > 0;
  const bool is_bool = std::count(words.begin(), words.end(), "bool") > 0;
  std::vector<std::string> r;
  if (is_bool) return {"bool"};
  if (is_char) {
    if (is_unsigned) return {"unsigned", "char"};
    if (is_signed) return {"signed", "char"};
    return {"char"};
  }
  if (is_unsigned) r.push_back("unsigned");
  if (is_short) {
    r.push_back("short");
  } else if (longs > 0) {
    for (long i = 0; i < longs; ++i) r.push_back("long");
  } else {
    r.push_back("int");
  }
  return r;
}

}  // namespace detail

/// \brief The enums of C++ headers (the folder's kernels/ and runtime/): qualified name ->
/// enumerator -> value. Namespaces, classes and structs qualify the names; an enumerator whose
/// value is not an integer literal (or the previous one plus one) ends its enum's list.
inline void parse_enums(const std::string& text, EnumTable& table) {
  using detail::is_word;
  // Without preprocessor lines (a macro's braces need not balance), continuations included.
  std::string code;
  {
    std::istringstream lines(text);
    bool continued = false;
    for (std::string line; std::getline(lines, line);) {
      const std::size_t a = line.find_first_not_of(" \t");
      const bool directive = continued || (a != std::string::npos && line[a] == '#');
      continued = directive && !line.empty() && line.back() == '\\';
      if (!directive) code += line + "\n";
    }
  }
  const std::vector<std::string> t = detail::tokens(code);
  std::vector<std::string> scope;  // one entry per open brace: a name, or "" for other blocks
  std::string pending;             // the name of the namespace / class the next '{' opens
  for (std::size_t i = 0; i < t.size(); ++i) {
    const std::string& x = t[i];
    if ((x == "namespace" || x == "struct" || x == "class" || x == "union") && i + 1 < t.size() &&
        (is_word(t[i + 1]) || t[i + 1] == "{")) {
      if (x == "class" && i > 0 && t[i - 1] == "enum") continue;
      std::string name;
      std::size_t j = i + 1;
      while (j < t.size() && (is_word(t[j]) || t[j] == "::")) name += t[j++];
      // A declaration only (struct X;), or a use (struct X x;): no scope.
      std::size_t k = j;
      while (k < t.size() && t[k] != "{" && t[k] != ";" && t[k] != "(" && t[k] != ")") ++k;
      if (k < t.size() && t[k] == "{") pending = name.empty() ? " " : name;
      continue;
    }
    if (x == "enum") {
      std::size_t j = i + 1;
      if (j < t.size() && (t[j] == "class" || t[j] == "struct")) ++j;
      if (j >= t.size() || !is_word(t[j])) continue;
      const std::string name = t[j];
      while (j < t.size() && t[j] != "{" && t[j] != ";") ++j;
      if (j >= t.size() || t[j] != "{") continue;
      std::string qualified;
      for (const std::string& s : scope) {
        if (!s.empty() && s != " ") qualified += s + "::";
      }
      qualified += name;
      std::map<std::string, long> values;
      long next = 0;
      bool ok = true;
      std::size_t k = j + 1;
      while (k < t.size() && t[k] != "}") {
        if (!is_word(t[k])) {
          ++k;
          continue;
        }
        const std::string enumerator = t[k++];
        long value = next;
        if (k < t.size() && t[k] == "=") {
          ++k;
          bool negative = false;
          if (k < t.size() && t[k] == "-") {
            negative = true;
            ++k;
          }
          if (k < t.size() && detail::is_number(t[k]) && k + 1 < t.size() && (t[k + 1] == "," || t[k + 1] == "}")) {
            value = std::stol(detail::strip_suffix(t[k])) * (negative ? -1 : 1);
            ++k;
          } else {
            ok = false;
          }
        }
        if (ok) values[enumerator] = value;
        next = value + 1;
        while (k < t.size() && t[k] != "," && t[k] != "}") ++k;
        if (k < t.size() && t[k] == ",") ++k;
      }
      if (!values.empty()) table[qualified] = values;
      i = k;  // at the '}'
      continue;
    }
    if (x == "{") {
      scope.push_back(pending.empty() ? "" : pending);
      pending.clear();
    } else if (x == "}") {
      if (!scope.empty()) scope.pop_back();
    } else if (x == ";") {
      pending.clear();
    }
  }
}

/// \brief The canonical tokens of a function name: a demangled ptxas name ("void
/// mc::gemm::kernel<mc::gemm::Gemm<float, (mc::gemm::Act)1, 64l>>(mc::gemm::Gemm<...>::Params)")
/// or an emitted one ("mc::gemm::kernel<mc::gemm::Gemm<float, mc::gemm::Act::relu, 64>>") give
/// the same tokens: mc :: gemm :: kernel < mc :: gemm :: Gemm < float , #mc::gemm::Act=1 , 64 > >.
inline std::vector<std::string> canonical_tokens(const std::string& text, const EnumTable& enums) {
  using detail::is_word;
  std::string s = text;
  for (std::size_t p; (p = s.find("(anonymous namespace)::")) != std::string::npos;) s.erase(p, 23);
  std::vector<std::string> t = detail::tokens(s);
  // Drop _GLOBAL__N_... :: (nvcc's names of unnamed namespaces) and a leading ::.
  std::vector<std::string> u;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].compare(0, 10, "_GLOBAL__N") == 0 && i + 1 < t.size() && t[i + 1] == "::") {
      ++i;
      continue;
    }
    if (t[i] == "::" && (u.empty() || !(is_word(u.back()) || u.back() == ">"))) continue;
    u.push_back(t[i]);
  }
  t.swap(u);
  // The return type: a leading "void" (or any words) before the qualified name.
  while (t.size() > 1 && is_word(t[0]) && is_word(t[1])) t.erase(t.begin());
  // The parameter list: the first '(' outside the template arguments.
  {
    int angle = 0, paren = 0;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t[i] == "<") ++angle;
      if (t[i] == ">") --angle;
      if (t[i] == "(") {
        if (angle == 0 && paren == 0 && i > 0) {
          t.resize(i);
          break;
        }
        ++paren;
      }
      if (t[i] == ")") --paren;
    }
  }
  std::vector<std::string> r;
  auto enum_value = [&](const std::string& type, const std::string& number) {
    return "#" + type + "=" + detail::strip_suffix(number);
  };
  for (std::size_t i = 0; i < t.size(); ++i) {
    const std::string& x = t[i];
    // (TYPE)N and (TYPE)-N: an integer cast -> N; an enum -> #TYPE=N.
    if (x == "(") {
      std::size_t j = i + 1;
      std::string type;
      std::vector<std::string> words;
      bool simple = true;
      while (j < t.size() && t[j] != ")") {
        if (!is_word(t[j]) && t[j] != "::") simple = false;
        type += t[j];
        if (is_word(t[j])) words.push_back(t[j]);
        ++j;
      }
      if (simple && j + 1 < t.size() && !type.empty()) {
        std::size_t n = j + 1;
        std::string sign;
        if (t[n] == "-" && n + 1 < t.size()) {
          sign = "-";
          ++n;
        }
        if (detail::is_number(t[n])) {
          bool builtin = true;
          for (const std::string& w : words) builtin = builtin && detail::builtin_words().count(w) > 0;
          if (builtin && detail::builtin_spelling(words) == std::vector<std::string>{"bool"}) {
            r.push_back(detail::strip_suffix(t[n]) == "0" ? "false" : "true");
          } else if (builtin) {
            r.push_back(sign + detail::strip_suffix(t[n]));
          } else {
            r.push_back(enum_value(type, sign + t[n]));
          }
          i = n;
          continue;
        }
      }
    }
    // -N after '<' or ',': one token.
    if (x == "-" && i + 1 < t.size() && detail::is_number(t[i + 1]) &&
        (r.empty() || r.back() == "<" || r.back() == ",")) {
      r.push_back("-" + detail::strip_suffix(t[i + 1]));
      ++i;
      continue;
    }
    if (detail::is_number(x)) {
      r.push_back(detail::strip_suffix(x));
      continue;
    }
    // A qualified name: an enumerator (A::B::E::x with A::B::E in the table), a typedef, a builtin.
    if (is_word(x)) {
      std::vector<std::string> parts{x};
      std::size_t j = i + 1;
      while (j + 1 < t.size() && t[j] == "::" && is_word(t[j + 1])) {
        parts.push_back(t[j + 1]);
        j += 2;
      }
      if (parts.size() >= 2) {
        std::string type;
        for (std::size_t k = 0; k + 1 < parts.size(); ++k) type += (k ? "::" : "") + parts[k];
        auto e = enums.find(type);
        if (e == enums.end()) {  // not qualified as the table has it: a unique match by suffix
          const std::string suffix = "::" + type;
          for (auto it = enums.begin(); it != enums.end(); ++it) {
            const std::string& q = it->first;
            if (q.size() > suffix.size() && q.compare(q.size() - suffix.size(), suffix.size(), suffix) == 0) {
              if (e != enums.end()) {
                e = enums.end();
                break;
              }
              e = it;
            }
          }
        }
        if (e != enums.end()) {
          auto v = e->second.find(parts.back());
          if (v != e->second.end()) {
            r.push_back("#" + e->first + "=" + std::to_string(v->second));
            i = j - 1;
            continue;
          }
        }
      }
      if (parts.size() == 1 || (parts.size() == 2 && parts[0] == "std")) {
        const auto td = detail::typedefs().find(parts.back());
        if (td != detail::typedefs().end()) {
          for (const std::string& w : td->second) r.push_back(w);
          i = j - 1;
          continue;
        }
      }
      if (detail::builtin_words().count(x)) {
        std::vector<std::string> words;
        std::size_t k = i;
        while (k < t.size() && detail::builtin_words().count(t[k])) words.push_back(t[k++]);
        for (const std::string& w : detail::builtin_spelling(words)) r.push_back(w);
        i = k - 1;
        continue;
      }
    }
    r.push_back(x);
  }
  // Demangled enum casts may name the enum with its namespace while the table has it too: done.
  // Canonical #E=N for an enum cast whose type is only partly qualified: qualify by the table.
  for (std::string& x : r) {
    if (x.size() < 2 || x[0] != '#') continue;
    const std::size_t eq = x.find('=');
    const std::string type = x.substr(1, eq - 1);
    if (enums.count(type)) continue;
    const std::string suffix = "::" + type;
    std::string found;
    int n = 0;
    for (const auto& [q, values] : enums) {
      if (q.size() > suffix.size() && q.compare(q.size() - suffix.size(), suffix.size(), suffix) == 0) {
        found = q;
        ++n;
      }
    }
    if (n == 1) x = "#" + found + x.substr(eq);
  }
  return r;
}

/// The canonical form as one string (tokens joined; a space between two words).
inline std::string canonical(const std::string& text, const EnumTable& enums) {
  const std::vector<std::string> t = canonical_tokens(text, enums);
  std::string s;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (i > 0 && detail::is_word(t[i - 1]) && detail::is_word(t[i])) s += ' ';
    if (i > 0 && t[i - 1] == ",") s += ' ';
    s += t[i];
  }
  return s;
}

namespace detail {

// Matches launched[a, ...) against compiled[b, ...): equal tokens, except that the launched text
// may close an argument list early (trailing default arguments: `defaults`), and may name an
// enumerator the enum table does not know (A::E::x against #A::E=N: `wildcards`).
inline bool match_tokens(const std::vector<std::string>& l, const std::vector<std::string>& c, bool& defaults,
                         bool& wildcards) {
  std::size_t a = 0, b = 0;
  while (a < l.size() && b < c.size()) {
    if (l[a] == ">" && c[b] == ",") {  // the compiled list goes on: default arguments
      int depth = 0;
      for (; b < c.size(); ++b) {
        if (c[b] == "<") ++depth;
        if (c[b] == ">") {
          if (depth == 0) break;
          --depth;
        }
      }
      if (b >= c.size()) return false;
      defaults = true;
    }
    if (c[b].size() > 1 && c[b][0] == '#' && is_word(l[a])) {
      // #A::E=N against A :: E :: x
      const std::string type = c[b].substr(1, c[b].find('=') - 1);
      std::string chain = l[a];
      std::size_t j = a + 1;
      std::size_t last = a;
      while (j + 1 < l.size() && l[j] == "::" && is_word(l[j + 1])) {
        last = j + 1;
        chain += "::" + l[j + 1];
        j += 2;
      }
      const std::string prefix = chain.substr(0, chain.size() - l[last].size());
      if (last > a && (prefix == type + "::" ||
                       (type.size() > prefix.size() - 2 &&
                        type.compare(type.size() - (prefix.size() - 2), prefix.size() - 2, prefix, 0, prefix.size() - 2) == 0 &&
                        type[type.size() - (prefix.size() - 2) - 1] == ':'))) {
        wildcards = true;
        a = j;
        ++b;
        continue;
      }
    }
    if (l[a] != c[b]) return false;
    ++a;
    ++b;
  }
  return a == l.size() && b == c.size();
}

}  // namespace detail

/// \brief How well a launched function (canonical tokens) names a compiled one: 0 not at all;
/// 3 the same tokens; 2 the same but for trailing template arguments the launched text leaves to
/// their defaults; 1 the same if enumerators the enum table does not know have the right values.
inline int same_function(const std::vector<std::string>& launched, const std::vector<std::string>& compiled) {
  if (launched == compiled) return 3;
  bool defaults = false, wildcards = false;
  if (!detail::match_tokens(launched, compiled, defaults, wildcards)) return 0;
  return wildcards ? 1 : 2;
}

// ---- JSON that keeps report.json's form ----------------------------------------------------------

/// \brief A JSON value: objects keep their key order, numbers their text; dump() writes what
/// nlohmann::ordered_json::dump(2) writes.
struct Json {
  enum Kind { null, boolean, number, string, array, object } kind = null;
  bool b = false;
  std::string text;  ///< number text, or the string
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;

  static Json str(const std::string& s) {
    Json j;
    j.kind = string;
    j.text = s;
    return j;
  }
  static Json num(long long v) {
    Json j;
    j.kind = number;
    j.text = std::to_string(v);
    return j;
  }
  static Json boolean_value(bool v) {
    Json j;
    j.kind = boolean;
    j.b = v;
    return j;
  }
  static Json new_array() {
    Json j;
    j.kind = array;
    return j;
  }
  static Json new_object() {
    Json j;
    j.kind = object;
    return j;
  }

  const Json* find(const std::string& key) const {
    for (const auto& [k, v] : members) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  /// The member `key`, added at the end when absent.
  Json& operator[](const std::string& key) {
    for (auto& [k, v] : members) {
      if (k == key) return v;
    }
    if (kind == null) kind = object;
    members.emplace_back(key, Json());
    return members.back().second;
  }
  void erase(const std::string& key) {
    members.erase(std::remove_if(members.begin(), members.end(), [&](const auto& m) { return m.first == key; }),
                  members.end());
  }
  std::string as_string() const { return kind == string ? text : ""; }
  long long as_int() const { return kind == number ? std::stoll(text) : 0; }

  static Json parse(const std::string& s) {
    std::size_t i = 0;
    Json j = parse_value(s, i);
    skip(s, i);
    if (i != s.size()) throw std::runtime_error("JSON: trailing characters at offset " + std::to_string(i));
    return j;
  }

  std::string dump() const {
    std::string out;
    write(out, 0);
    return out;
  }

 private:
  static void skip(const std::string& s, std::size_t& i) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  static void expect(const std::string& s, std::size_t& i, char c) {
    skip(s, i);
    if (i >= s.size() || s[i] != c) {
      throw std::runtime_error(std::string("JSON: expected '") + c + "' at offset " + std::to_string(i));
    }
    ++i;
  }
  static void put_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  static std::string parse_string(const std::string& s, std::size_t& i) {
    expect(s, i, '"');
    std::string r;
    while (i < s.size() && s[i] != '"') {
      char c = s[i++];
      if (c != '\\') {
        r += c;
        continue;
      }
      if (i >= s.size()) break;
      c = s[i++];
      switch (c) {
        case 'n': r += '\n'; break;
        case 't': r += '\t'; break;
        case 'r': r += '\r'; break;
        case 'b': r += '\b'; break;
        case 'f': r += '\f'; break;
        case 'u': {
          unsigned cp = static_cast<unsigned>(std::stoul(s.substr(i, 4), nullptr, 16));
          i += 4;
          if (cp >= 0xD800 && cp < 0xDC00 && i + 6 <= s.size() && s[i] == '\\' && s[i + 1] == 'u') {
            const unsigned lo = static_cast<unsigned>(std::stoul(s.substr(i + 2, 4), nullptr, 16));
            i += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          put_utf8(r, cp);
          break;
        }
        default: r += c;
      }
    }
    if (i >= s.size()) throw std::runtime_error("JSON: unterminated string");
    ++i;
    return r;
  }
  static Json parse_value(const std::string& s, std::size_t& i) {
    skip(s, i);
    if (i >= s.size()) throw std::runtime_error("JSON: unexpected end");
    Json j;
    const char c = s[i];
    if (c == '{') {
      j.kind = object;
      ++i;
      skip(s, i);
      if (i < s.size() && s[i] == '}') {
        ++i;
        return j;
      }
      for (;;) {
        std::string key = parse_string(s, i);
        expect(s, i, ':');
        Json v = parse_value(s, i);
        j.members.emplace_back(std::move(key), std::move(v));
        skip(s, i);
        if (i < s.size() && s[i] == ',') {
          ++i;
          skip(s, i);
          continue;
        }
        expect(s, i, '}');
        return j;
      }
    }
    if (c == '[') {
      j.kind = array;
      ++i;
      skip(s, i);
      if (i < s.size() && s[i] == ']') {
        ++i;
        return j;
      }
      for (;;) {
        j.items.push_back(parse_value(s, i));
        skip(s, i);
        if (i < s.size() && s[i] == ',') {
          ++i;
          continue;
        }
        expect(s, i, ']');
        return j;
      }
    }
    if (c == '"') {
      j.kind = string;
      j.text = parse_string(s, i);
      return j;
    }
    if (s.compare(i, 4, "true") == 0) {
      i += 4;
      return boolean_value(true);
    }
    if (s.compare(i, 5, "false") == 0) {
      i += 5;
      return boolean_value(false);
    }
    if (s.compare(i, 4, "null") == 0) {
      i += 4;
      return j;
    }
    const std::size_t a = i;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '-' || s[i] == '+' ||
                            s[i] == '.' || s[i] == 'e' || s[i] == 'E')) {
      ++i;
    }
    if (a == i) throw std::runtime_error("JSON: unexpected character at offset " + std::to_string(i));
    j.kind = number;
    j.text = s.substr(a, i - a);
    return j;
  }
  static void write_string(std::string& out, const std::string& s) {
    out += '"';
    for (unsigned char c : s) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c < 0x20) {
            static const char* hex = "0123456789abcdef";
            out += "\\u00";
            out += hex[c >> 4];
            out += hex[c & 15];
          } else {
            out += static_cast<char>(c);
          }
      }
    }
    out += '"';
  }
  void write(std::string& out, int indent) const {
    const std::string pad(static_cast<std::size_t>(indent + 2), ' '), close(static_cast<std::size_t>(indent), ' ');
    switch (kind) {
      case null: out += "null"; return;
      case boolean: out += b ? "true" : "false"; return;
      case number: out += text; return;
      case string: write_string(out, text); return;
      case array:
        if (items.empty()) {
          out += "[]";
          return;
        }
        out += "[\n";
        for (std::size_t i = 0; i < items.size(); ++i) {
          out += pad;
          items[i].write(out, indent + 2);
          out += i + 1 < items.size() ? ",\n" : "\n";
        }
        out += close + "]";
        return;
      case object:
        if (members.empty()) {
          out += "{}";
          return;
        }
        out += "{\n";
        for (std::size_t i = 0; i < members.size(); ++i) {
          out += pad;
          write_string(out, members[i].first);
          out += ": ";
          members[i].second.write(out, indent + 2);
          out += i + 1 < members.size() ? ",\n" : "\n";
        }
        out += close + "}";
        return;
    }
  }
};

// ---- merging into the report ------------------------------------------------------------------

/// \brief What merge() found.
struct Outcome {
  std::vector<std::string> archs;            ///< archs ptxas compiled for ("sm_75", ...)
  std::vector<std::string> ptx_archs;        ///< archs with PTX (KEEP_PTX=1 builds)
  int kernels = 0;                           ///< kernels that launch something
  int kernels_with_resources = 0;            ///< ... with resources for every arch
  std::vector<std::string> unmapped;         ///< compiled functions no kernel launches (demangled)
  std::vector<std::string> missing;          ///< "k7 sm_75: ..." (kernels without resources)
  std::vector<std::string> failures;         ///< the check's failures (tensor-core kernels)
  int tensor_core_kernels = 0;
  std::string summary;                       ///< one line
};

namespace detail {

inline std::string grouped(long long n) {
  std::string d = std::to_string(n < 0 ? -n : n), r;
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (i && (d.size() - i) % 3 == 0) r += ',';
    r += d[i];
  }
  return (n < 0 ? "-" : "") + r;
}

inline std::string cell(const std::string& s) {
  std::string r;
  for (char c : s) r += c == '|' ? std::string("\\|") : c == '\n' ? std::string(" ") : std::string(1, c);
  return r;
}

}  // namespace detail

/// \brief Puts the resources of every kernel into `report` (report.json's value): per kernel
/// "resources": {ARCH: {registers, shared_bytes, stack_bytes, spill_store_bytes, spill_load_bytes,
/// barriers, constant_bytes, functions, mma (with PTX)}} and a top-level "resources" summary. A
/// kernel that launches several functions (a tactic per arch, picked at run time) gets the
/// largest registers / shared / stack and the summed spills, and each one's in "per_function".
/// With `check`, also checks every kernel the report marks "tensor_core": its PTX issues
/// mma.sync for every arch and ptxas reports no spills; and that every kernel has registers and
/// shared memory for every arch. Returns what it found; the markdown section is markdown().
inline Outcome merge(Json& report, const std::vector<Resources>& compiled, const std::vector<PtxEntry>& ptx,
                     const EnumTable& enums, bool check) {
  Outcome o;
  std::set<std::string> arch_set, ptx_arch_set;
  for (const Resources& r : compiled) arch_set.insert(r.arch);
  for (const PtxEntry& p : ptx) ptx_arch_set.insert(p.arch);
  o.archs.assign(arch_set.begin(), arch_set.end());
  o.ptx_archs.assign(ptx_arch_set.begin(), ptx_arch_set.end());

  // Canonical forms of the compiled functions (once per mangled name).
  std::map<std::string, std::vector<std::string>> canon;
  std::map<std::string, std::string> demangled;
  for (const Resources& r : compiled) {
    if (!canon.count(r.function)) {
      demangled[r.function] = demangle(r.function);
      canon[r.function] = canonical_tokens(demangled[r.function], enums);
    }
  }
  for (const PtxEntry& p : ptx) {
    if (!canon.count(p.function)) {
      demangled[p.function] = demangle(p.function);
      canon[p.function] = canonical_tokens(demangled[p.function], enums);
    }
  }

  Json* kernels = nullptr;
  for (auto& [k, v] : report.members) {
    if (k == "kernels" && v.kind == Json::array) kernels = &v;
  }
  std::set<std::string> mapped;
  if (kernels) {
    for (Json& k : kernels->items) {
      const std::string id = k.find("id") ? k.find("id")->as_string() : "";
      const Json* launches = k.find("launches");
      const bool tensor_core = k.find("engine") && k.find("engine")->as_string() == "tensor_core";
      if (tensor_core) ++o.tensor_core_kernels;
      k.erase("resources");
      if (!launches || launches->items.empty()) {
        if (tensor_core && check) o.failures.push_back(id + ": marked tensor_core but launches no kernel");
        continue;
      }
      ++o.kernels;
      // The compiled functions of this kernel: the best match of each launched function.
      std::vector<std::string> functions;
      for (const Json& l : launches->items) {
        const std::vector<std::string> want = canonical_tokens(l.as_string(), enums);
        int best = 0;
        std::vector<std::string> found;
        for (const auto& [name, tokens] : canon) {
          const int m = same_function(want, tokens);
          if (m > best) {
            best = m;
            found.clear();
          }
          if (m == best && m > 0) found.push_back(name);
        }
        for (const std::string& f : found) {
          if (std::find(functions.begin(), functions.end(), f) == functions.end()) functions.push_back(f);
        }
        if (found.empty()) o.missing.push_back(id + ": no compiled function matches " + l.as_string());
      }
      for (const std::string& f : functions) mapped.insert(f);
      Json res = Json::new_object();
      bool complete = !functions.empty();
      for (const std::string& arch : o.archs) {
        int registers = -1, barriers = 0, count = 0;
        long smem = 0, stack = 0, spill_st = 0, spill_ld = 0, cmem = 0;
        for (const Resources& r : compiled) {
          if (r.arch != arch || std::find(functions.begin(), functions.end(), r.function) == functions.end()) continue;
          ++count;
          registers = std::max(registers, r.registers);
          barriers = std::max(barriers, r.barriers);
          smem = std::max(smem, r.shared_bytes);
          stack = std::max(stack, r.stack_bytes);
          cmem = std::max(cmem, r.constant_bytes);
          spill_st += r.spill_store_bytes;
          spill_ld += r.spill_load_bytes;
        }
        if (count == 0 || registers < 0) {
          complete = false;
          if (!functions.empty()) o.missing.push_back(id + " " + arch + ": ptxas reported no registers");
          continue;
        }
        Json a = Json::new_object();
        a["registers"] = Json::num(registers);
        a["shared_bytes"] = Json::num(smem);
        a["stack_bytes"] = Json::num(stack);
        a["spill_store_bytes"] = Json::num(spill_st);
        a["spill_load_bytes"] = Json::num(spill_ld);
        a["barriers"] = Json::num(barriers);
        a["constant_bytes"] = Json::num(cmem);
        a["functions"] = Json::num(count);
        if (count > 1) {  // e.g. one instantiation per arch's tactic, chosen at run time: each one's numbers
          Json each = Json::new_array();
          for (const Resources& r : compiled) {
            if (r.arch != arch || std::find(functions.begin(), functions.end(), r.function) == functions.end()) continue;
            Json f = Json::new_object();
            f["function"] = Json::str(demangled[r.function]);
            f["registers"] = Json::num(r.registers);
            f["shared_bytes"] = Json::num(r.shared_bytes);
            f["stack_bytes"] = Json::num(r.stack_bytes);
            f["spill_store_bytes"] = Json::num(r.spill_store_bytes);
            f["spill_load_bytes"] = Json::num(r.spill_load_bytes);
            each.items.push_back(std::move(f));
          }
          a["per_function"] = std::move(each);
        }
        if (ptx_arch_set.count(arch)) {
          bool all_mma = true, any = false;
          for (const PtxEntry& p : ptx) {
            if (p.arch != arch || std::find(functions.begin(), functions.end(), p.function) == functions.end()) continue;
            any = true;
            all_mma = all_mma && p.mma;
          }
          if (any) a["mma"] = Json::boolean_value(all_mma);
          if (check && tensor_core && (!any || !all_mma)) {
            o.failures.push_back(id + " " + arch + ": " +
                                 (any ? "no wmma.mma.sync / mma.sync in the PTX" : "no PTX of its kernel"));
          }
        }
        if (check && tensor_core && (spill_st > 0 || spill_ld > 0)) {
          o.failures.push_back(id + " " + arch + ": ptxas spills " + std::to_string(spill_st) + " bytes stored, " +
                               std::to_string(spill_ld) + " bytes loaded");
        }
        res[arch] = std::move(a);
      }
      if (complete) ++o.kernels_with_resources;
      k["resources"] = std::move(res);
      if (check && tensor_core) {
        for (const std::string& arch : o.archs) {
          if (!ptx_arch_set.count(arch)) {
            o.failures.push_back(id + " " + arch + ": no PTX for " + arch +
                                 " (build with KEEP_PTX=1 from a clean folder: make clean; make KEEP_PTX=1)");
          }
        }
      }
    }
  }
  for (const auto& [name, tokens] : canon) {
    if (!mapped.count(name)) o.unmapped.push_back(demangled[name]);
    // Contract: mc::tc::kernel<...> is a tensor-core kernel, wherever it is used.
    if (check && demangled[name].compare(0, 20, "void mc::tc::kernel<") == 0) {
      for (const PtxEntry& p : ptx) {
        if (p.function == name && !p.mma) o.failures.push_back(demangled[name] + " " + p.arch + ": no mma.sync in its PTX");
      }
      for (const Resources& r : compiled) {
        if (r.function == name && (r.spill_store_bytes > 0 || r.spill_load_bytes > 0)) {
          o.failures.push_back(demangled[name] + " " + r.arch + ": ptxas spills");
        }
      }
    }
  }
  if (check) {
    for (const std::string& m : o.missing) o.failures.push_back(m);
    if (o.archs.empty()) o.failures.push_back("no ptxas -v output (the objects were built without it: make clean; make)");
  }

  std::string archs;
  for (const std::string& a : o.archs) archs += (archs.empty() ? "" : ", ") + a;
  o.summary = std::to_string(o.kernels_with_resources) + " of " + std::to_string(o.kernels) +
              " kernels with registers and shared memory for " + (archs.empty() ? "no arch" : archs) + " (ptxas -v)";
  if (!o.unmapped.empty()) o.summary += "; " + std::to_string(o.unmapped.size()) + " compiled functions unmatched";
  Json top = Json::new_object();
  top["source"] = Json::str("ptxas -v");
  Json a = Json::new_array();
  for (const std::string& x : o.archs) a.items.push_back(Json::str(x));
  top["archs"] = a;
  Json pa = Json::new_array();
  for (const std::string& x : o.ptx_archs) pa.items.push_back(Json::str(x));
  top["ptx_archs"] = pa;
  top["kernels"] = Json::num(o.kernels);
  top["kernels_with_resources"] = Json::num(o.kernels_with_resources);
  top["compiled_functions"] = Json::num(static_cast<long long>(canon.size()));
  Json un = Json::new_array();
  for (const std::string& x : o.unmapped) un.items.push_back(Json::str(x));
  top["unmatched_functions"] = un;
  Json mi = Json::new_array();
  for (const std::string& x : o.missing) mi.items.push_back(Json::str(x));
  top["missing"] = mi;
  top["summary"] = Json::str(o.summary);
  report.erase("resources");
  report["resources"] = std::move(top);
  return o;
}

/// The heading of the section markdown() writes (report.md keeps one: a new one replaces it).
inline const char* markdown_heading() { return "## Registers and shared memory"; }

/// \brief The report.md section: one row per kernel, per arch "registers / shared bytes / stack
/// bytes / spilled bytes" (and whether its PTX has mma.sync when the build kept it).
inline std::string markdown(const Json& report, const Outcome& o) {
  std::string m = std::string(markdown_heading()) + "\n\n";
  m += "From ptxas -v during the nvcc build (`make resources`; `modelc MODEL --build` runs it): " + o.summary +
       ". Per arch: registers / static shared memory bytes / stack bytes / spilled bytes (stores + loads)";
  m += o.ptx_archs.empty() ? ".\n\n" : "; \"mma\" when the kernel's PTX issues wmma.mma.sync or mma.sync.\n\n";
  m += "| id | family | engine |";
  std::string rule = "|---|---|---|";
  for (const std::string& a : o.archs) {
    m += " " + a + " |";
    rule += "---|";
  }
  m += "\n" + rule + "\n";
  const Json* kernels = report.find("kernels");
  if (kernels) {
    for (const Json& k : kernels->items) {
      const Json* res = k.find("resources");
      if (!res) continue;
      const Json* engine = k.find("engine");
      m += "| " + (k.find("id") ? k.find("id")->as_string() : "") + " | " +
           detail::cell(k.find("family") ? k.find("family")->as_string() : "") + " | " +
           (engine ? engine->as_string() : "") + " |";
      for (const std::string& a : o.archs) {
        const Json* r = res->find(a);
        if (!r) {
          m += " - |";
          continue;
        }
        auto get = [&](const char* key) { return r->find(key) ? r->find(key)->as_int() : 0; };
        m += " " + std::to_string(get("registers")) + " / " + detail::grouped(get("shared_bytes")) + " / " +
             detail::grouped(get("stack_bytes")) + " / " +
             detail::grouped(get("spill_store_bytes") + get("spill_load_bytes"));
        if (const Json* mma = r->find("mma")) m += mma->b ? " mma" : "";
        m += " |";
      }
      m += "\n";
    }
  }
  if (!o.unmapped.empty()) {
    m += "\nCompiled functions no kernel of the report launches:\n\n";
    for (const std::string& u : o.unmapped) m += "- `" + u + "`\n";
  }
  return m;
}

/// report.md with `section` in place of its previous one (or appended).
inline std::string with_section(const std::string& md, const std::string& section) {
  std::string base = md;
  const std::size_t at = base.find(std::string("\n") + markdown_heading());
  if (at != std::string::npos) base.resize(at);
  while (!base.empty() && base.back() == '\n') base.pop_back();
  return base + "\n\n" + section;
}

}  // namespace mc_resources
