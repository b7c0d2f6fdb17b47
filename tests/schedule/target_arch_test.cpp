// --arch sm_90a (schedule/target.h arch_number, arch_specific, target_for): the arch-specific form
// parses to sm_90's number and Target; no other arch takes the suffix below 90.
#include <doctest/doctest.h>

#include "schedule/target.h"
#include "support/error.h"

using namespace modelc;

TEST_CASE("target: sm_90a is sm_90's chip, arch-specific; the suffix is refused below 90 and on bad forms") {
  CHECK(arch_number("sm_90a") == 90);
  CHECK(arch_specific("sm_90a"));
  CHECK_FALSE(arch_specific("sm_90"));
  CHECK(target_for("sm_90a").part == target_for("sm_90").part);
  CHECK(target_for("sm_90a").sm == 90);
  CHECK(arch_number("sm_100a") == 100);
  CHECK_THROWS_AS(arch_number("sm_80a"), Error);
  CHECK_THROWS_AS(arch_number("sm_90aa"), Error);
  CHECK_THROWS_AS(arch_number("sm_a"), Error);
  CHECK_THROWS_AS(arch_number("sm_9a"), Error);
  // one target for both forms of a chip: the tactics do not tell them apart yet (docs/hopper.md)
  CHECK(targets_for({"sm_90", "sm_90a"}, false).size() == 1);
}
