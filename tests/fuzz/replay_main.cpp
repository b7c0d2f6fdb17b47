// tests/fuzz/replay_main.cpp — the replay driver of a fuzz target: a plain main() that feeds files
// to the target's LLVMFuzzerTestOneInput, so its regression files and seeds run in every build
// (g++ too), and any folder of inputs can be checked (fuzz_model over a generated corpus).
//
//   fuzz_model_replay PATH...    a file, or a folder (every regular file under it, sorted)
//
// Prints each file before it runs (a crash names the file that caused it) and the count at the end.
// Exit 0 when every file ran; exit 1 when a PATH does not exist or no file was found (a test with
// no input must not pass). A finding aborts in the target, as under libFuzzer.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_FOLDER...\n", argv[0]);
    return 1;
  }
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const fs::path p = argv[i];
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> in;
      for (const auto& e : fs::recursive_directory_iterator(p)) {
        if (e.is_regular_file()) in.push_back(e.path());
      }
      std::sort(in.begin(), in.end());
      files.insert(files.end(), in.begin(), in.end());
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      std::fprintf(stderr, "error: %s is not a file or a folder\n", argv[i]);
      return 1;
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "error: no input files under the paths given\n");
    return 1;
  }
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "error: cannot read %s\n", f.c_str());
      return 1;
    }
    std::fprintf(stderr, "Running: %s (%zu bytes)\n", f.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::fprintf(stderr, "replayed %zu files\n", files.size());
  return 0;
}
