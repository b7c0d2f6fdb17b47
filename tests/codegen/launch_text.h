// tests/codegen/launch_text.h — a family's launches as text, for tests that check what an emit
// function returns: per launch its type on a line, then `FIELD = VALUE;` per param.
#pragma once

#include <string>

#include "codegen/launch.h"

namespace modelc::test {

inline std::string launch_text(const KernelLaunches& e) {
  std::string s;
  for (const Launch& l : e.launches) {
    s += l.type + "\n";
    for (const LaunchParam& p : l.params) s += p.field + " = " + p.value + ";\n";
  }
  return s;
}

}  // namespace modelc::test
