// The JIT cache is private and checked (kernels/jit/jit_compiler.hpp): without HOME and
// XDG_CACHE_HOME it is a folder of this user's own (0700), not a shared one; a folder another user
// owns, or one its group or others may write into, is refused (also when $ATTN_JIT_CACHE_DIR
// names it); and a cached cubin is used only when its bytes hash to the SHA-256 written beside
// it: a changed or cut entry is compiled again and overwritten. Loading needs a GPU; what decides
// whether a cached file may be loaded is tested here, with NVRTC on the CPU.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "base/sha256.hpp"
#include "kernels/jit/jit_compiler.hpp"
#include "kernels/registry.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

// Sets (or, with nullptr, unsets) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = std::string(old);
    if (value) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

mode_t mode_of(const fs::path& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

class JitCacheTrust : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attn-jit-trust-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::permissions(dir_, fs::perms::owner_all);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The EnvironmentError check_cache_folder throws for `dir`, or "" when it accepts it.
  static std::string refusal(const fs::path& dir) {
    try {
      JitCompiler::check_cache_folder(dir.string());
      return "";
    } catch (const EnvironmentError& e) {
      return e.what();
    }
  }

  fs::path dir_;
};

TEST_F(JitCacheTrust, WithoutHomeTheCacheIsAPrivateFolderOfThisUser) {
  const ScopedEnv tmp("TMPDIR", dir_.c_str());
  const ScopedEnv cache("ATTN_JIT_CACHE_DIR", nullptr);
  const ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
  const ScopedEnv home("HOME", nullptr);
  const fs::path expected = dir_ / ("attn-bench-jit-" + std::to_string(::geteuid()));
  EXPECT_EQ(JitCompiler::default_cache_dir(), expected.string());
  EXPECT_EQ(refusal(expected), "");
  ASSERT_TRUE(fs::is_directory(expected));
  EXPECT_EQ(mode_of(expected), mode_t(0700)) << "created private";
}

TEST_F(JitCacheTrust, AFolderOthersMayWriteIntoIsRefused) {
  for (const mode_t mode : {mode_t(0777), mode_t(0775), mode_t(0757), mode_t(01777)}) {
    const fs::path shared = dir_ / ("shared-" + std::to_string(mode));
    fs::create_directories(shared);
    ASSERT_EQ(::chmod(shared.c_str(), mode), 0);
    const std::string why = refusal(shared);
    EXPECT_NE(why.find("is writable by its group or by others"), std::string::npos)
        << std::oct << mode << ": " << why;
    EXPECT_NE(why.find("ATTN_JIT_CACHE_DIR"), std::string::npos) << why;
  }
  const fs::path readable = dir_ / "readable";
  fs::create_directories(readable);
  ASSERT_EQ(::chmod(readable.c_str(), 0755), 0);
  EXPECT_EQ(refusal(readable), "") << "readable by others is fine: only writing is a way in";

  // $ATTN_JIT_CACHE_DIR is held to the same rule: the compiler refuses to start on it.
  const fs::path named = dir_ / ("shared-" + std::to_string(mode_t(0777)));
  const ScopedEnv cache("ATTN_JIT_CACHE_DIR", named.c_str());
  EXPECT_EQ(JitCompiler::default_cache_dir(), named.string());
  try {
    JitCompiler jit;
    FAIL() << "a JIT compiler started on a folder others may write into";
  } catch (const EnvironmentError& e) {
    EXPECT_NE(std::string(e.what()).find("is writable by its group or by others"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(JitCacheTrust, AFolderOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "giving a folder to another user needs root";
  const fs::path theirs = dir_ / "theirs";
  fs::create_directories(theirs);
  ASSERT_EQ(::chmod(theirs.c_str(), 0700), 0);
  ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);  // nobody
  const std::string why = refusal(theirs);
  EXPECT_NE(why.find("belongs to another user (uid 65534)"), std::string::npos) << why;
}

TEST_F(JitCacheTrust, AnEntryIsUsedOnlyWhenItHashesToTheRecordedSha256) {
  const fs::path entry = dir_ / "entry.cubin";
  write_verified_cache_entry(entry.string(), "ATTNJIT1\n0\nthe cubin's bytes");
  ASSERT_TRUE(fs::exists(entry.string() + ".sha256"));
  EXPECT_EQ(read_verified_cache_entry(entry.string()),
            std::optional<std::string>("ATTNJIT1\n0\nthe cubin's bytes"));

  // One byte changed, or the entry cut short: not used.
  { std::ofstream(entry, std::ios::binary) << "ATTNJIT1\n0\nthe cubin's bytez"; }
  EXPECT_EQ(read_verified_cache_entry(entry.string()), std::nullopt);
  { std::ofstream(entry, std::ios::binary) << "ATTNJIT1\n0\nthe cubin"; }
  EXPECT_EQ(read_verified_cache_entry(entry.string()), std::nullopt);
  // An entry without its hash (written by an older build, or the hash lost): not used.
  write_verified_cache_entry(entry.string(), "ATTNJIT1\n0\nthe cubin's bytes");
  fs::remove(entry.string() + ".sha256");
  EXPECT_EQ(read_verified_cache_entry(entry.string()), std::nullopt);
  // A hash file that is not a SHA-256.
  { std::ofstream(entry.string() + ".sha256") << "ok\n"; }
  EXPECT_EQ(read_verified_cache_entry(entry.string()), std::nullopt);
}

// A cubin changed in the cache is a miss: compiled again, and the entry rewritten with the
// compiler's bytes, never loaded as found.
TEST_F(JitCacheTrust, AChangedCubinIsCompiledAgainAndOverwritten) {
  testing::SpecShape shape;
  shape.head_dim = 128;
  shape.q_heads = 8;
  shape.kv_heads = 8;
  const Batch batch = generate_batch(testing::make_decode_spec(shape, {100}));
  DeviceInfo device;
  device.cc_major = 8;
  device.sm_count = 100;
  const Registry registry = make_registry();
  const Variant* splitkv = registry.find("paged_decode.splitkv");
  const Target target = Target::cuda(device);
  const JitProgram program =
      splitkv->programs(batch, splitkv->default_config(batch, target), target).front();

  const fs::path cache = dir_ / "cache";
  JitCompiler jit(JitOptions{cache.string()});
  const CompiledProgram first = jit.compile(program);
  ASSERT_FALSE(first.cache_hit);
  const fs::path entry = cache / first.key.substr(0, 2) / (first.key + ".cubin");
  ASSERT_TRUE(fs::exists(entry));
  ASSERT_TRUE(fs::exists(entry.string() + ".sha256"));
  EXPECT_TRUE(jit.compile(program).cache_hit);

  // Someone's bytes at the end of the entry (where the cubin is).
  { std::ofstream(entry, std::ios::binary | std::ios::app) << "injected"; }
  const CompiledProgram again = jit.compile(program);
  EXPECT_FALSE(again.cache_hit) << "a changed entry was used";
  // NVRTC's bytes may differ from one compile to the next: the entry holds the new ones.
  const std::string cubin(again.cubin.data(), again.cubin.size());
  EXPECT_EQ(cubin.rfind("\177ELF", 0), 0u) << "not an ELF file";
  const std::optional<std::string> rewritten = read_verified_cache_entry(entry.string());
  ASSERT_TRUE(rewritten.has_value()) << "rewritten, hash too";
  EXPECT_EQ(rewritten->find("injected"), std::string::npos);
  ASSERT_GE(rewritten->size(), cubin.size());
  EXPECT_EQ(rewritten->substr(rewritten->size() - cubin.size()), cubin);
  EXPECT_TRUE(jit.compile(program).cache_hit);
}

}  // namespace
}  // namespace attn
