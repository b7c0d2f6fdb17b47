// tests/cli/run_modelc.h — runs the `modelc` binary the build made, for the tests of its commands.
#pragma once

#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "support/build_paths.h"
#include "tests/frontend/onnx_builder.h"

namespace modelc::test {

/// What a `modelc` run did: its exit status and both streams.
struct Result {
  int code = -1;
  std::string out, err;
};

/// `s` as one single-quoted shell word.
inline std::string shell_quoted(const std::string& s) {
  std::string r = "'";
  for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

/// Runs `modelc ARGS` (ARGS as a shell command line) in `dir`, capturing both streams; with
/// `timeout_s`, killed after that many seconds (exit status 124), for runs that could block.
inline Result run_modelc(const TempDir& dir, const std::string& args, int timeout_s = 0) {
  const std::string binary = std::string(build_binary_dir()) + "/modelc";
  REQUIRE_MESSAGE(std::filesystem::exists(binary), "build the modelc binary first: ", binary);
  const std::string timeout = timeout_s > 0 ? "timeout " + std::to_string(timeout_s) + " " : "";
  const std::string cmd = "cd " + shell_quoted(dir.str()) + " && " + timeout + shell_quoted(binary) + " " + args + " >" +
                          shell_quoted(dir / ".stdout") + " 2>" + shell_quoted(dir / ".stderr");
  const int status = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_bytes(dir / ".stdout");
  r.err = read_bytes(dir / ".stderr");
  return r;
}

inline bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace modelc::test
