// compiler/support/json_limits.cpp — see json_limits.h.
#include "support/json_limits.h"

#include <nlohmann/json.hpp>

namespace modelc {

std::string json_nesting_problem(const std::string& text, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  enum { none, line_comment, block_comment } comment = none;  // manifests may hold // and /* */
  std::size_t line = 1, column = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const char next = i + 1 < text.size() ? text[i + 1] : '\0';
    ++column;
    if (c == '\n') {
      ++line;
      column = 0;
    }
    if (comment == line_comment) {
      if (c == '\n') comment = none;
      continue;
    }
    if (comment == block_comment) {
      if (c == '*' && next == '/') {
        comment = none;
        ++i;
        ++column;
      }
      continue;
    }
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '/' && (next == '/' || next == '*')) {
      comment = next == '/' ? line_comment : block_comment;
      ++i;
      ++column;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        return "nests arrays and objects deeper than " + std::to_string(max_depth) + " levels (line " +
               std::to_string(line) + ", column " + std::to_string(column) + ")";
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return "";
}

nlohmann::json parse_marked_json(const std::string& text, const std::string& marker,
                                 const std::function<Error(const std::string&)>& bad) {
  if (const std::string deep = json_nesting_problem(text); !deep.empty()) throw bad("it " + deep);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw bad(std::string("invalid JSON (") + e.what() + ")");
  }
  if (!j.is_object() || !j.contains(marker) || j[marker] != 1) throw bad("no \"" + marker + "\": 1");
  return j;
}

}  // namespace modelc
