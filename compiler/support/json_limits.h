// compiler/support/json_limits.h — bounds on JSON read from elsewhere (plugin manifests, the INT8
// calibration cache): files modelc did not write are hostile input, like a model.
#pragma once

#include <cstddef>
#include <string>

namespace modelc {

/// \brief The deepest nesting of arrays and objects any JSON file modelc reads may have (the
/// formats it reads nest at most 6 deep; libraries that walk a parsed value recurse per level).
constexpr int kMaxJsonDepth = 64;

/// \brief "" when `text` nests arrays and objects at most `max_depth` deep (brackets inside strings
/// are not counted), else a message saying where it goes deeper ("nests deeper than 64 levels at
/// line 3, column 17"). A scan of the bytes: it runs before, and whatever, the JSON parser.
std::string json_nesting_problem(const std::string& text, int max_depth = kMaxJsonDepth);

}  // namespace modelc
