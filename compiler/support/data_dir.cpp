// compiler/support/data_dir.cpp — see data_dir.h.
#include "support/data_dir.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "support/build_paths.h"

namespace fs = std::filesystem;

namespace modelc {

std::string modelc_data_dir() {
  if (const char* env = std::getenv("MODELC_DATA_DIR"); env && *env) return env;
  // An installed modelc: PREFIX/bin/modelc and PREFIX/share/modelc (CMakeLists.txt's install rules).
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path share = exe.parent_path().parent_path() / "share" / "modelc";
    if (fs::is_regular_file(share / "Makefile.gen", ec)) return share.string();
  }
  return build_source_dir();
}

std::string onnxruntime_node_dir() {
  std::error_code ec;
  auto package = [&](const fs::path& p) -> std::string {
    if (fs::is_regular_file(p / "node_modules" / "onnxruntime-node" / "package.json", ec)) {
      return (p / "node_modules" / "onnxruntime-node").string();
    }
    return fs::is_regular_file(p / "package.json", ec) ? p.string() : std::string();
  };
  if (const char* env = std::getenv("MODELC_ORT_DIR"); env && *env) return package(env);
  return package(fs::path(build_binary_dir()) / "ort");
}

}  // namespace modelc
