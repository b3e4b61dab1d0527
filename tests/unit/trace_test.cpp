// The timeline recorder (core/trace.hpp): file names, per-thread buffers
// flushed when full and at stop, and nothing recorded while off.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/trace.hpp"

namespace {

using namespace tsu::core;

constexpr trace::EventType kTestEvent{"test event", "test", 'i', {"n", nullptr, nullptr}};

std::string read_all(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

std::string temp_pattern() {
  return ::testing::TempDir() + "tsu_trace_test_" + std::to_string(getpid()) + ".%r.json";
}

TEST(Trace, FileNames) {
  EXPECT_EQ(trace::file_for_rank("/tmp/t.%r.json", 3), "/tmp/t.3.json");
  EXPECT_EQ(trace::file_for_rank("/tmp/t", 12), "/tmp/t.12.json");
  EXPECT_EQ(trace::file_for_rank("%r/%r", 1), "1/1");
  EXPECT_EQ(trace::file_for_rank("/tmp/100%", 0), "/tmp/100%.0.json");
}

TEST(Trace, OffRecordsNothingAndStopIsANoOp) {
  EXPECT_FALSE(trace::on());
  TSU_TRACE(kTestEvent, 1, 0, 0);
  EXPECT_EQ(trace::start_time(), 0u);
  trace::stop();
}

TEST(Trace, BuffersOfEveryThreadReachTheFile) {
  const std::string pattern = temp_pattern();
  std::string error;
  ASSERT_EQ(trace::start(pattern, 5, error), TSU_OK) << error;
  ASSERT_TRUE(trace::on());
  // More than one buffer's worth from each thread: full buffers are written
  // while recording, the rest at stop().
  constexpr int kPerThread = 10000, kThreads = 3;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([] {
      for (int i = 0; i < kPerThread; ++i) TSU_TRACE(kTestEvent, i, 0, 0);
    });
  for (auto& t : threads) t.join();
  const uint64_t t0 = trace::start_time();
  EXPECT_NE(t0, 0u);
  trace::stop();
  EXPECT_FALSE(trace::on());
  TSU_TRACE(kTestEvent, 1, 0, 0);  // after stop: dropped

  const std::string path = trace::file_for_rank(pattern, 5);
  const std::string text = read_all(path);
  std::remove(path.c_str());
  EXPECT_EQ(count(text, "\"name\":\"test event\""), std::size_t{kPerThread} * kThreads);
  EXPECT_EQ(count(text, "\"thread_name\""), std::size_t{kThreads});
  EXPECT_NE(text.find("\"process_name\",\"ph\":\"M\",\"pid\":5"), std::string::npos);
  EXPECT_EQ(text.substr(text.size() - 4), "\n]}\n");
}

TEST(Trace, UnwritableFileIsAnError) {
  std::string error;
  EXPECT_EQ(trace::start("/nonexistent-dir/t.%r.json", 0, error), TSU_ERR_SYSTEM);
  EXPECT_NE(error.find("TSU_TRACE"), std::string::npos) << error;
  EXPECT_FALSE(trace::on());
}

}  // namespace
