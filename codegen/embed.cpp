#include "codegen/embed.h"

#include <cctype>
#include <cstdio>

#include "codegen/c_api.h"
#include "codegen/emitter.h"
#include "codegen/literals.h"
#include "support/error.h"

namespace fs = std::filesystem;

namespace modelc {

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> r;
  std::string w;
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\n') {
      if (!w.empty()) r.push_back(w);
      w.clear();
    } else {
      w += c;
    }
  }
  if (!w.empty()) r.push_back(w);
  return r;
}

std::string render_template(const std::string& text, const std::map<std::string, std::string>& values,
                            const std::string& what) {
  // One pass: a value that holds "@X@" is never read as a placeholder.
  std::string r;
  r.reserve(text.size());
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t open = text.find('@', at);
    if (open == std::string::npos) break;
    std::size_t close = open + 1;
    while (close < text.size() &&
           (std::isupper(static_cast<unsigned char>(text[close])) || std::isdigit(static_cast<unsigned char>(text[close])) ||
            text[close] == '_')) {
      ++close;
    }
    if (close == open + 1 || close >= text.size() || text[close] != '@') {  // not a placeholder: an '@'
      r.append(text, at, open + 1 - at);
      at = open + 1;
      continue;
    }
    const std::string key = text.substr(open + 1, close - open - 1);
    const auto it = values.find(key);
    if (it == values.end()) {
      throw Error("internal: " + what + " has the placeholder @" + key + "@, which modelc does not fill");
    }
    r.append(text, at, open - at);
    r += it->second;
    at = close + 1;
  }
  r.append(text, at, std::string::npos);
  return r;
}

namespace {

// Text safe in any of the templates' contexts (a comment, a Python docstring, Markdown code, a CMake
// comment): printable ASCII without quotes, backslashes, backticks or '@'; the rest becomes '_'.
std::string plain(const std::string& s) {
  std::string r;
  for (unsigned char c : s) {
    const bool ok = c >= 0x20 && c < 0x7f && c != '"' && c != '\'' && c != '\\' && c != '`' && c != '@';
    r += ok ? static_cast<char>(c) : '_';
  }
  return r;
}

// A tensor name in a Markdown table cell, as code: no '|' or backtick or control character.
std::string markdown_code(const std::string& s) {
  std::string r;
  for (unsigned char c : valid_utf8(s)) {
    if (c == '|') {
      r += "\\|";
    } else if (c == '`') {
      r += '\'';
    } else if (c < 0x20 || c == 0x7f) {
      r += ' ';
    } else {
      r += static_cast<char>(c);
    }
  }
  return "`" + r + "`";
}

// A Python string literal of `s` (UTF-8 text kept; quotes, backslashes, control bytes escaped).
std::string python_string(const std::string& s) {
  std::string r = "\"";
  for (unsigned char c : valid_utf8(s)) {
    if (c == '"' || c == '\\') {
      r += '\\';
      r += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      r += buf;
    } else {
      r += static_cast<char>(c);
    }
  }
  return r + "\"";
}

std::string type_of(const ModelTensor& t) {
  std::string dims;
  for (std::size_t i = 0; i < t.shape.size(); ++i) dims += (i ? "x" : "") + std::to_string(t.shape[i]);
  return std::string(dtype_name(t.dtype)) + "[" + dims + "]";
}

std::string join(const std::vector<int>& v, const std::string& sep) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : sep) + std::to_string(x);
  return s;
}

std::string read_template(const fs::path& dir, const std::string& file) {
  const fs::path p = dir / file;
  if (!fs::is_regular_file(p)) {
    throw Error("modelc's template " + p.string() + " is missing",
                "set MODELC_DATA_DIR to the folder that holds embed/, templates/, runtime_stub/ and Makefile.gen");
  }
  return read_text_file(p);
}

}  // namespace

std::string render_embed_template(const fs::path& embed_dir, const std::string& file,
                                  const std::map<std::string, std::string>& values) {
  return render_template(read_template(embed_dir, file), values, "embed/" + file);
}

void add_embedding_files(const EmbedInfo& info, const fs::path& embed_dir, std::map<std::string, std::string>& files) {
  const std::string& n = info.name;
  std::map<std::string, std::string> v;
  v["NAME"] = n;
  v["SOURCE"] = plain(info.source);
  v["ARCHS"] = join(info.archs, " ");

  // CMakeLists.txt: the archs as a CMake list, the parts as extra sources.
  std::map<std::string, std::string> cm = v;
  cm["ARCHS"] = join(info.archs, ";");
  std::string parts;
  for (const std::string& p : info.parts) parts += " ${_mc_dir}/" + p;
  cm["PARTS"] = parts;
  cm["WEIGHTS_EMBEDDED"] = info.weights_file ? "OFF" : "ON";
  files["CMakeLists.txt"] = render_embed_template(embed_dir, "CMakeLists.txt.in", cm);

  files[n + ".pc"] = render_embed_template(embed_dir, "model.pc.in", v);
  files[n + "_emu.pc"] = render_embed_template(embed_dir, "model_emu.pc.in", v);
  files[n + ".map"] = render_embed_template(embed_dir, "model.map.in", v);
  std::map<std::string, std::string> py = v;
  py["C_API"] = python_prototypes(ApiModel{n, info.weights_file, false, 1});
  files[n + ".py"] = render_embed_template(embed_dir, "model.py", py);
  std::map<std::string, std::string> dk = v;
  dk["WEIGHTS_FILE"] = info.weights_file ? "True" : "False";
  files[n + "_dask.py"] = render_embed_template(embed_dir, "model_dask.py", dk);

  std::map<std::string, std::string> rd = v;
  std::string table;
  for (const ModelTensor& t : info.inputs) table += "| input | " + markdown_code(t.name) + " | " + type_of(t) + " |\n";
  for (const ModelTensor& t : info.outputs) table += "| output | " + markdown_code(t.name) + " | " + type_of(t) + " |\n";
  if (!table.empty()) table.pop_back();
  rd["IO_TABLE"] = table;
  rd["FIRST_INPUT"] = python_string(info.inputs.empty() ? std::string("input") : info.inputs.front().name);
  rd["WEIGHTS_NOTE"] =
      info.weights_file
          ? "\nThe weights are in `" + n + "_weights.bin` (compiled with `--weights-file`), read at create: `" + n +
                "_create` looks for it next to the executable, `" + n + "_create_with_weights(&ctx, 0, path)` takes "
                "its path; the Python module looks beside the library. Keep it with the library.\n"
          : "";
  files["README.md"] = render_embed_template(embed_dir, "README.md.in", rd);
}

}  // namespace modelc
