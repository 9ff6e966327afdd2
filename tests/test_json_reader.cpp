#include <doctest/doctest.h>

#include "models/input/json_reader.hpp"

using namespace plumb;

namespace {

struct Fixture {
  Diagnostics diagnostics;
  SourceFile src{"x.json", ".", &diagnostics, {}};
  std::vector<std::string> messages() const {
    std::vector<std::string> out;
    for (const Diagnostic& d : diagnostics.list()) out.push_back(d.to_string());
    return out;
  }
};

}  // namespace

TEST_CASE("unknown keys are errors naming the pointer and the nearest valid key") {
  Fixture f;
  Json doc = parse_json_text(R"({"parallel": {"tp": 2, "ppp": 4}})", f.src);
  {
    ObjectReader r(doc, "", f.src);
    ObjectReader p(*r.child("parallel", Need::required), "/parallel", f.src);
    CHECK(p.integer("tp", Need::optional, 1, 64) == 2);
    CHECK_FALSE(p.integer("pp", Need::optional, 1, 64).has_value());
  }
  REQUIRE(f.messages().size() == 1);
  CHECK(f.messages()[0] == "x.json: /parallel/ppp: unknown key \"ppp\"; did you mean \"pp\"?");
}

TEST_CASE("all problems of a document are gathered, each with its pointer") {
  Fixture f;
  Json doc = parse_json_text(R"({"a": -1, "b": "fast", "c": 1.5, "d": 3})", f.src);
  {
    ObjectReader r(doc, "", f.src);
    r.integer("a", Need::required, 1, 10);
    r.quantity("b", Dimension::time, Need::required);
    r.integer("c", Need::required, 1, 10);
    r.string("d", Need::required);
    r.string("e", Need::required);
  }
  auto m = f.messages();
  REQUIRE(m.size() == 5);
  CHECK(m[0] == "x.json: /a: -1 is out of range: must be between 1 and 10");
  CHECK(m[1].starts_with("x.json: /b: \"fast\" does not start with a number"));
  CHECK(m[2] == "x.json: /c: expected a whole number, found 1.5");
  CHECK(m[3] == "x.json: /d: expected a string, found 3");
  CHECK(m[4] == "x.json: missing key \"e\"");
}

TEST_CASE("malformed JSON and duplicate keys are reported with their place") {
  Fixture f;
  Json bad = parse_json_text("{\n  \"a\": 1,\n  \"b\": \n}", f.src);
  CHECK(bad.is_discarded());
  REQUIRE(f.messages().size() == 1);
  CHECK(f.messages()[0].starts_with("x.json: malformed JSON at line 4, column 1:"));
  Fixture g;
  parse_json_text(R"({"a": [{"x": 0}, {"k": 1, "k": 2}], "b": {"c": {"k": 1}, "c": 2}})", g.src);
  REQUIRE(g.messages().size() == 2);
  CHECK(g.messages()[0] == "x.json: /a/1: key \"k\" appears twice; keep one");
  CHECK(g.messages()[1] == "x.json: /b: key \"c\" appears twice; keep one");
}

TEST_CASE("values set on the command line are named as such in errors") {
  Fixture f;
  f.src.overrides["/parallel/pp"] = "--set parallel.pp=0";
  f.src.error("/parallel/pp", "0 is out of range");
  CHECK(f.messages()[0] == "x.json: /parallel/pp: 0 is out of range (from --set parallel.pp=0)");
}

TEST_CASE("a choice outside its set names every valid word and the nearest one") {
  Fixture f;
  Json doc = parse_json_text(R"({"schedule": "dualpipv"})", f.src);
  {
    ObjectReader r(doc, "", f.src);
    r.choice<int>("schedule", Need::required, {{"dualpipe", 1}, {"dualpipev", 2}, {"1f1b", 3}});
  }
  CHECK(f.messages()[0] ==
        "x.json: /schedule: \"dualpipv\" is not one of \"dualpipe\", \"dualpipev\", \"1f1b\"; did you mean \"dualpipe\"?");
}

TEST_CASE("nearest_word suggests only plausible typos") {
  CHECK(nearest_word("ppp", {"pp", "tp", "dp"}) == "pp");
  CHECK(nearest_word("zero_stage", {"tp", "pp"}).empty());
}
