// InputError's message stays readable for any input: at most 50 problems listed and a count of the
// rest (a million unknown keys once printed a million lines), each on one line of bounded length.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/errors.hpp"

namespace attn {
namespace {

TEST(InputErrorMessage, ListsFiftyProblemsAndCountsTheRest) {
  std::vector<std::string> problems;
  for (int i = 0; i < 1000; ++i) problems.push_back("/k" + std::to_string(i) + ": unknown key");
  const InputError e("w.json", problems, 5);
  EXPECT_EQ(e.problems().size(), kMaxListedProblems);
  EXPECT_EQ(e.problems().back(), "/k49: unknown key");
  EXPECT_EQ(e.problem_count(), 1005u);
  const std::string what = e.what();
  EXPECT_EQ(what.rfind("w.json: 1005 problems\n  /k0: unknown key\n", 0), 0u) << what;
  EXPECT_NE(what.find("\n  /k49: unknown key\n  ... and 955 more problems"), std::string::npos);
  EXPECT_EQ(what.find("/k50:"), std::string::npos);
}

TEST(InputErrorMessage, AFewProblemsAreListedWhole) {
  const InputError one("w.json", {"/seed: bad"});
  EXPECT_STREQ(one.what(), "w.json: 1 problem\n  /seed: bad");
  const InputError counted("w.json", {"/a: bad"}, 1);
  EXPECT_STREQ(counted.what(), "w.json: 2 problems\n  /a: bad\n  ... and 1 more problem");
}

TEST(InputErrorMessage, EachProblemIsOneBoundedLine) {
  const InputError e("w\nfile.json",
                     {"/a: line one\nline two\x01", "/b: " + std::string(5000, 'x')});
  const std::string what = e.what();
  EXPECT_EQ(what.rfind("w\\nfile.json: 2 problems\n  /a: line one\\nline two\\x01\n  /b: ", 0), 0u)
      << what;
  EXPECT_LT(what.size(), 1100u);
  EXPECT_EQ(what.substr(what.size() - 3), "...");
  EXPECT_EQ(e.problems()[0], "/a: line one\nline two\x01") << "problems() keeps the text";
}

}  // namespace
}  // namespace attn
