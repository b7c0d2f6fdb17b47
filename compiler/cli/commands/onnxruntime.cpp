// compiler/cli/commands/onnxruntime.cpp — the model run by onnxruntime beside the reference
// interpreter (`modelc verify --ort`): scripts/ort_run.js under node, with onnxruntime-node's CPU
// library (support/data_dir.h says where it is looked for), on .npy files of the same inputs.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/commands/commands.h"
#include "io/tensor_io.h"
#include "runtime_stub/npy.h"
#include "support/data_dir.h"
#include "support/error.h"

namespace fs = std::filesystem;

namespace modelc::cli {

namespace {

std::string quoted(const std::string& s) {
  std::string r = "'";
  for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

OnnxRuntimeRun run_onnxruntime(const std::string& model, const Graph& g, const TensorMap& feeds, const std::string& work) {
  const std::string package = onnxruntime_node_dir();
  if (package.empty()) {
    const char* env = std::getenv("MODELC_ORT_DIR");
    throw Error(env && *env ? "--ort: MODELC_ORT_DIR=" + std::string(env) + " holds no onnxruntime-node package"
                            : "--ort: onnxruntime-node is not installed",
                "install it with `scripts/setup.sh --tests` (npm install --ignore-scripts --prefix build/ort "
                "onnxruntime-node), or set MODELC_ORT_DIR to its folder");
  }
  const fs::path script = fs::path(modelc_data_dir()) / "scripts" / "ort_run.js";
  if (!fs::is_regular_file(script)) {
    throw Error("--ort: modelc's data folder lacks scripts/ort_run.js (" + script.string() + ")",
                "set MODELC_DATA_DIR to the folder that holds templates/, runtime_stub/ and scripts/");
  }
  OnnxRuntimeRun r;
  try {
    r.version = nlohmann::json::parse(read_all(fs::path(package) / "package.json")).value("version", "");
  } catch (const std::exception&) {
  }
  const fs::path dir = fs::absolute(work);
  fs::remove_all(dir);
  fs::create_directories(dir / "inputs");
  std::string cmd = "node " + quoted(script.string()) + " --ort " + quoted(package) + " --model " +
                    quoted(fs::absolute(model).string()) + " --out " + quoted((dir / "outputs").string());
  // Every graph input: the fed ones, and those --bind made constants (onnxruntime reads the file).
  for (const Value* in : g.inputs()) {
    const auto it = feeds.find(in->name());
    const Tensor* t = it != feeds.end() ? &it->second : in->is_constant() ? &in->constant() : nullptr;
    if (!t) continue;
    if (t->dtype() == DType::bfloat16) {
      throw Error("--ort: input '" + in->name() + "' is bfloat16, which onnxruntime-node cannot take from .npy",
                  "leave out --ort for a BF16 model");
    }
    const std::string file = (dir / "inputs" / (mc_npy::sanitize_file_name(in->name()) + ".npy")).string();
    write_npy(file, *t);
    cmd += " --input " + quoted(in->name() + "=" + file);
  }
  const fs::path log = dir / "ort.log";
  cmd += " > " + quoted(log.string()) + " 2>&1";
  const int status = std::system(cmd.c_str());
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string text = read_all(log);
    if (text.size() > 4000) text = "..." + text.substr(text.size() - 4000);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) text = "node is not installed (it runs onnxruntime-node)";
    throw Error("--ort: onnxruntime did not run the model: " + text, "the whole log: " + log.string());
  }
  std::vector<std::string> names;
  try {
    names = nlohmann::json::parse(read_all(dir / "outputs" / "outputs.json")).get<std::vector<std::string>>();
  } catch (const std::exception& e) {
    throw Error(std::string("--ort: ort_run.js wrote no readable outputs.json: ") + e.what());
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    r.outputs[names[i]] = read_npy((dir / "outputs" / (std::to_string(i) + ".npy")).string());
  }
  return r;
}

}  // namespace modelc::cli
