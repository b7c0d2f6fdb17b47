// compiler/support/json_limits.h — bounds on JSON read from elsewhere (plugin manifests, the INT8
// calibration cache): files modelc did not write are hostile input, like a model.
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "support/error.h"

namespace modelc {

/// \brief The deepest nesting of arrays and objects any JSON file modelc reads may have (the
/// formats it reads nest at most 6 deep; libraries that walk a parsed value recurse per level).
constexpr int kMaxJsonDepth = 64;

/// \brief "" when `text` nests arrays and objects at most `max_depth` deep (brackets inside strings
/// are not counted), else a message saying where it goes deeper ("nests deeper than 64 levels at
/// line 3, column 17"). A scan of the bytes: it runs before, and whatever, the JSON parser.
std::string json_nesting_problem(const std::string& text, int max_depth = kMaxJsonDepth);

/// \brief `text` (a file modelc reads: the calibration cache, the tuning cache) parsed as a JSON
/// object whose key `marker` is 1, the file format's mark. Anything else throws bad(what), what
/// being "it nests deeper than ...", "invalid JSON (...)" or "no \"MARKER\": 1"; `bad` makes the
/// format's Error (naming the file).
nlohmann::json parse_marked_json(const std::string& text, const std::string& marker,
                                 const std::function<Error(const std::string&)>& bad);

}  // namespace modelc
