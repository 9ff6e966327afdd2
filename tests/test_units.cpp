#include <doctest/doctest.h>

#include "models/input/units.hpp"

using namespace plumb;

TEST_CASE("bits and bytes, decimal and binary prefixes stay apart") {
  CHECK(*parse_quantity("400Gb/s", Dimension::bandwidth) == doctest::Approx(50e9));
  CHECK(*parse_quantity("400GB/s", Dimension::bandwidth) == doctest::Approx(400e9));
  CHECK(*parse_quantity("80GiB", Dimension::bytes) == doctest::Approx(80.0 * 1073741824.0));
  CHECK(*parse_quantity("80GB", Dimension::bytes) == doctest::Approx(80e9));
  CHECK(*parse_quantity("2us", Dimension::time) == doctest::Approx(2e-6));
  CHECK(*parse_quantity("1.5 ms", Dimension::time) == doctest::Approx(1.5e-3));
  CHECK(*parse_quantity("989.4TFLOP/s", Dimension::flop_rate) == doctest::Approx(989.4e12));
  CHECK(*parse_quantity("14.8T", Dimension::count) == doctest::Approx(14.8e12));
  CHECK(*parse_quantity("671B", Dimension::count) == doctest::Approx(671e9));
  CHECK(*parse_quantity("4096", Dimension::count) == doctest::Approx(4096));
  CHECK(*parse_quantity("750W", Dimension::power) == doctest::Approx(750));
  CHECK(*parse_quantity("1.2 kW", Dimension::power) == doctest::Approx(1200));
  CHECK(!parse_quantity("750", Dimension::power));  // a power needs its unit
}

TEST_CASE("a quantity without its unit, or with a unit of another kind, is refused with a reason") {
  std::string why;
  CHECK_FALSE(parse_quantity("80", Dimension::bytes, &why));
  CHECK(why == "\"80\" has no unit; expected a size such as \"80GiB\" or \"80GB\"");
  CHECK_FALSE(parse_quantity("80GB", Dimension::bandwidth, &why));
  CHECK(why.starts_with("unknown unit \"GB\" in \"80GB\""));
  CHECK_FALSE(parse_quantity("fast", Dimension::time, &why));
  CHECK(why.starts_with("\"fast\" does not start with a number"));
  CHECK_FALSE(parse_quantity("1e999GB", Dimension::bytes, &why));
}

TEST_CASE("formatting picks binary prefixes for bytes") {
  CHECK(format_bytes(80.0 * 1073741824.0) == "80.0 GiB");
  CHECK(format_bytes(512) == "512 B");
  CHECK(format_count(671.03e9) == "671.03B");
}
