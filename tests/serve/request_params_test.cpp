#include "serve/request_params.h"

#include <gtest/gtest.h>

#include "serve/errors.h"

namespace batchlab::serve {
namespace {

using Raw = std::multimap<std::string, std::string>;

// The param a BadRequest names (empty when none was thrown).
template <class F>
std::string refused_param(F&& f) {
  try {
    f();
  } catch (const BadRequest& e) {
    return e.param();
  }
  return {};
}

TEST(RequestParams, ReadsWhatTheEndpointDeclares) {
  const RequestParams p(Raw{{"runs", "a,b,,c"}, {"points", "500"}, {"y", "val_acc"}},
                        {{"runs"}, {"points"}, {"y"}});
  EXPECT_EQ(p.list("runs", 8), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(p.integer("points", 10, 1000, 7), 500);
  EXPECT_EQ(p.integer("missing", 10, 1000, 7), 7);
  EXPECT_EQ(p.choice("y", {"val_acc", "lr"}, "lr"), "val_acc");
  EXPECT_EQ(p.choice("absent", {"val_acc", "lr"}, "lr"), "lr");
}

TEST(RequestParams, RefusesUnknownRepeatedLongAndControlValues) {
  EXPECT_EQ(refused_param([] {
              RequestParams(Raw{{"sql", "DROP TABLE runs"}}, {{"runs"}});
            }),
            "sql");
  EXPECT_EQ(refused_param([] { RequestParams(Raw{{"y", "a"}, {"y", "b"}}, {{"y"}}); }), "y");
  EXPECT_EQ(refused_param([] { RequestParams(Raw{{"y", "a"}, {"y", "b"}}, {{"y", true}}); }), "");
  EXPECT_EQ(refused_param([] {
              RequestParams(Raw{{"runs", std::string(kMaxParamLength + 1, 'a')}}, {{"runs"}});
            }),
            "runs");
  EXPECT_EQ(refused_param([] { RequestParams(Raw{{"runs", "a\nb"}}, {{"runs"}}); }), "runs");
}

TEST(RequestParams, NumbersChoicesAndListsAreBounded) {
  const RequestParams p(
      Raw{{"points", "10001"}, {"x", "1; DROP"}, {"n", "12abc"}, {"runs", "a,b,c"}},
      {{"points"}, {"x"}, {"n"}, {"runs"}});
  EXPECT_EQ(refused_param([&] { p.integer("points", 10, 10000, 1000); }), "points");
  EXPECT_EQ(refused_param([&] { p.integer("n", 0, 100, 1); }), "n");
  EXPECT_EQ(refused_param([&] { p.choice("x", {"step", "samples"}, "step"); }), "x");
  EXPECT_EQ(refused_param([&] { p.list("runs", 2); }), "runs");
}

TEST(RequestParams, IdentifiersAreBatchlabIds) {
  EXPECT_NO_THROW(check_identifier("run", "e3eee6181bdd2098"));
  EXPECT_NO_THROW(check_identifier("sweep", "fmnist_scaling-study.v2:a"));
  EXPECT_EQ(refused_param([] { check_identifier("run", "x' OR '1'='1"); }), "run");
  EXPECT_EQ(refused_param([] { check_identifier("run", "../../etc/passwd"); }), "run");
  EXPECT_EQ(refused_param([] { check_identifier("run", std::string(129, 'a')); }), "run");
  EXPECT_EQ(refused_param([] { check_identifier("run", ""); }), "run");
}

}  // namespace
}  // namespace batchlab::serve
