// runtime_stub/tools/resources.cpp — `make resources` (and `modelc MODEL --build`): registers,
// shared memory, stack and spills per kernel and arch, from the ptxas -v logs the build keeps,
// into report.json and report.md. `make check-tensor-cores` runs it with --check.
//
//   resources --report report.json [--markdown report.md] --ptxas LOG... [--ptx-dir DIR]
//             [--headers DIR...] [--check] [--quiet]
//
// --ptxas: the logs the Makefile writes beside the objects (build/sm_*/FILE.ptxas);
// --ptx-dir: a folder searched for *.ptx (nvcc's kept intermediates, make KEEP_PTX=1);
// --headers: folders whose *.cuh / *.h define the enums template arguments use (kernels, runtime).
// --check: exit 1 unless every kernel marked tensor_core issues mma.sync for every arch, no such
// kernel spills, and every kernel has registers and shared memory for every arch.
// Exit status: 0 done, 1 the check failed, 2 usage or file error.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "resources.h"

namespace {

bool read_file(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return true;
}

bool write_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    if (!f) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

bool is_dir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Files under `dir` (recursively) whose names end with one of `suffixes`, sorted.
void find_files(const std::string& dir, const std::vector<std::string>& suffixes, std::vector<std::string>& out) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    const std::string p = dir + "/" + n;
    if (is_dir(p)) {
      find_files(p, suffixes, out);
      continue;
    }
    for (const std::string& s : suffixes) {
      if (ends_with(n, s)) {
        out.push_back(p);
        break;
      }
    }
  }
}

int usage(const std::string& why) {
  std::cerr << "resources: " << why
            << "\nusage: resources --report report.json [--markdown report.md] --ptxas LOG... [--ptx-dir DIR]"
               " [--headers DIR...] [--check] [--quiet]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string report_path, markdown_path;
  std::vector<std::string> logs, ptx_dirs, header_dirs;
  bool check = false, quiet = false;
  std::vector<std::string>* list = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--report" && i + 1 < argc) {
      report_path = argv[++i];
      list = nullptr;
    } else if (a == "--markdown" && i + 1 < argc) {
      markdown_path = argv[++i];
      list = nullptr;
    } else if (a == "--ptxas") {
      list = &logs;
    } else if (a == "--ptx-dir") {
      list = &ptx_dirs;
    } else if (a == "--headers") {
      list = &header_dirs;
    } else if (a == "--check") {
      check = true;
      list = nullptr;
    } else if (a == "--quiet") {
      quiet = true;
      list = nullptr;
    } else if (a == "--help" || a == "-h") {
      usage("registers, shared memory, stack and spills per kernel into the report");
      return 0;
    } else if (list && a.compare(0, 2, "--") != 0) {
      list->push_back(a);
    } else {
      return usage("unknown argument '" + a + "'");
    }
  }
  if (report_path.empty()) return usage("--report is required");

  std::string text;
  if (!read_file(report_path, text)) return usage("cannot read " + report_path);
  mc_resources::Json report;
  try {
    report = mc_resources::Json::parse(text);
  } catch (const std::exception& e) {
    std::cerr << "resources: " << report_path << ": " << e.what() << "\n";
    return 2;
  }

  std::vector<mc_resources::Resources> compiled;
  for (const std::string& log : logs) {
    std::string t;
    if (!read_file(log, t)) {
      std::cerr << "resources: cannot read " << log << " (build the objects first: make objs)\n";
      return 2;
    }
    for (const mc_resources::Resources& r : mc_resources::parse_ptxas_log(t)) compiled.push_back(r);
  }
  std::vector<mc_resources::PtxEntry> ptx;
  for (const std::string& dir : ptx_dirs) {
    std::vector<std::string> files;
    find_files(dir, {".ptx"}, files);
    for (const std::string& f : files) {
      std::string t;
      if (!read_file(f, t)) continue;
      for (const mc_resources::PtxEntry& e : mc_resources::parse_ptx(t)) ptx.push_back(e);
    }
  }
  mc_resources::EnumTable enums;
  for (const std::string& dir : header_dirs) {
    std::vector<std::string> files;
    find_files(dir, {".cuh", ".h"}, files);
    for (const std::string& f : files) {
      std::string t;
      if (read_file(f, t)) mc_resources::parse_enums(t, enums);
    }
  }

  const mc_resources::Outcome o = mc_resources::merge(report, compiled, ptx, enums, check);
  if (!write_file(report_path, report.dump() + "\n")) {
    std::cerr << "resources: cannot write " << report_path << "\n";
    return 2;
  }
  if (!markdown_path.empty()) {
    std::string md;
    read_file(markdown_path, md);
    if (!write_file(markdown_path, mc_resources::with_section(md, mc_resources::markdown(report, o)))) {
      std::cerr << "resources: cannot write " << markdown_path << "\n";
      return 2;
    }
  }
  if (!quiet) {
    std::cout << "resources: " << o.summary << " -> " << report_path
              << (markdown_path.empty() ? "" : ", " + markdown_path) << "\n";
    for (const std::string& m : o.missing) std::cout << "  missing: " << m << "\n";
    for (const std::string& u : o.unmapped) std::cout << "  unmatched: " << u << "\n";
  }
  if (!check) return 0;
  std::string ptx_archs;
  for (const std::string& a : o.ptx_archs) ptx_archs += (ptx_archs.empty() ? "" : ", ") + a;
  if (!o.failures.empty()) {
    std::cout << "check FAILED (" << o.failures.size() << "):\n";
    for (const std::string& f : o.failures) std::cout << "  " << f << "\n";
    return 1;
  }
  std::cout << "check passed: " << o.tensor_core_kernels << " tensor-core kernels, mma.sync in each for "
            << (ptx_archs.empty() ? "(no PTX kept)" : ptx_archs) << ", no spills; " << o.kernels_with_resources
            << " of " << o.kernels << " kernels with registers and shared memory\n";
  return 0;
}
