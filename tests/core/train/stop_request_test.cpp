#include "core/stop_request.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace batchlab::train {
namespace {

namespace fs = std::filesystem;

struct StopFile {
  fs::path path = fs::temp_directory_path() / ("stop-request-" + std::to_string(::getpid()) + "-" +
                                               std::to_string(std::rand()));
  void write(const std::string& text) const { std::ofstream(path) << text; }
  ~StopFile() { fs::remove(path); }
};

TEST(StopRequest, NoFileIsNoRequest) {
  StopFile f;
  std::string problem;
  EXPECT_FALSE(read_stop_request(f.path.string(), &problem));
  EXPECT_TRUE(problem.empty());
}

TEST(StopRequest, ReasonAndStep) {
  StopFile f;
  f.write("stopped_by_race 120\n");
  std::string problem;
  const auto r = read_stop_request(f.path.string(), &problem);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reason, "stopped_by_race");
  EXPECT_EQ(r->step, 120);
  EXPECT_TRUE(problem.empty());
}

TEST(StopRequest, MalformedFilesAreIgnoredWithAReason) {
  for (const std::string text :
       {"", "pruned", "pruned soon", "pruned -1", "pruned 12x", "pruned 12 extra", "two words 3"}) {
    StopFile f;
    f.write(text);
    std::string problem;
    EXPECT_FALSE(read_stop_request(f.path.string(), &problem)) << text;
    EXPECT_NE(problem.find(f.path.string()), std::string::npos) << problem;
    EXPECT_NE(problem.find("REASON STEP"), std::string::npos) << problem;
  }
}

TEST(StopRequest, WrittenAtomicallyAndReadBack) {
  const auto dir = fs::temp_directory_path() / ("batchlab-stopwrite-" + std::to_string(::getpid()));
  const std::string path = (dir / "run" / "stop").string();
  write_stop_request(path, StopRequest{"pruned", 120});
  std::string problem;
  const auto r = read_stop_request(path, &problem);
  ASSERT_TRUE(r.has_value()) << problem;
  EXPECT_EQ(r->reason, "pruned");
  EXPECT_EQ(r->step, 120);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  EXPECT_EQ(r->at_step(128), "pruned at step 128");
  EXPECT_EQ(stop_reason::kPruned, "pruned");
  EXPECT_EQ(stop_reason::kStoppedByRace, "stopped_by_race");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace batchlab::train
