// Owner identities of database rows (base/process_identity.hpp): this process is alive, a process
// that exited (reaped or still a zombie) is gone, a pid whose start time differs is another process
// (gone), another host's owner cannot be judged here, and /proc/PID/stat is read correctly when the
// command name holds spaces and parentheses.
#include "base/process_identity.hpp"

#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace attn {
namespace {

// A child process that names itself `name` and waits until the pipe's write end is closed.
struct WaitingChild {
  explicit WaitingChild(const char* name) {
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    pid = ::fork();
    if (pid == 0) {
      ::close(fds[1]);
      ::prctl(PR_SET_NAME, name);
      char byte;
      while (::read(fds[0], &byte, 1) > 0) {
      }
      ::_exit(0);
    }
    ::close(fds[0]);
    release = fds[1];
    ::usleep(20000);  // let it name itself
  }
  // Lets it exit; `reap` waits for it (else it stays a zombie until the destructor).
  void finish(bool reap) {
    ::close(release);
    release = -1;
    if (reap) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      reaped = true;
    } else {
      // A zombie once it has exited.
      for (int i = 0; i < 200 && process_start(pid).has_value(); ++i) ::usleep(5000);
    }
  }
  ~WaitingChild() {
    if (release >= 0) ::close(release);
    if (!reaped) {
      int status = 0;
      ::waitpid(pid, &status, 0);
    }
  }
  pid_t pid = -1;
  int release = -1;
  bool reaped = false;
};

TEST(ProcessIdentity, ThisProcessIsAliveWithAStartTime) {
  const ProcessIdentity me = this_process();
  EXPECT_EQ(me.pid, ::getpid());
  EXPECT_EQ(me.host, this_host_name());
  EXPECT_FALSE(me.host.empty());
  ASSERT_FALSE(me.start.empty());
  EXPECT_NE(me.start.find('@'), std::string::npos) << me.start;
  EXPECT_EQ(process_start(::getpid()), me.start);
  EXPECT_EQ(owner_state(me), OwnerState::alive);
}

TEST(ProcessIdentity, AnExitedProcessIsGoneWhetherReapedOrAZombie) {
  for (const bool reap : {true, false}) {
    SCOPED_TRACE(reap ? "reaped" : "zombie");
    WaitingChild child("attn-owner-test");
    const std::optional<std::string> start = process_start(child.pid);
    ASSERT_TRUE(start.has_value());
    const ProcessIdentity owner{this_host_name(), child.pid, *start};
    EXPECT_EQ(owner_state(owner), OwnerState::alive);
    child.finish(reap);
    EXPECT_FALSE(process_start(child.pid).has_value());
    EXPECT_EQ(owner_state(owner), OwnerState::gone);
  }
}

TEST(ProcessIdentity, APidHeldByAnotherProcessIsGone) {
  ProcessIdentity reused = this_process();
  reused.start = "1@" + reused.start.substr(reused.start.find('@') + 1);
  EXPECT_EQ(owner_state(reused), OwnerState::gone);
}

TEST(ProcessIdentity, AnotherHostsOwnerCannotBeJudgedHere) {
  ProcessIdentity other = this_process();
  other.host += ".elsewhere";
  EXPECT_EQ(owner_state(other), OwnerState::elsewhere);
  EXPECT_EQ(owner_state({this_host_name(), 0, ""}), OwnerState::elsewhere);
  EXPECT_EQ(to_string(OwnerState::elsewhere), "elsewhere");
}

TEST(ProcessIdentity, TheStartTimeIsReadPastACommandNameWithSpacesAndParentheses) {
  WaitingChild plain("attn-plain");
  WaitingChild odd("a) b (c) 1 2");
  const std::optional<std::string> a = process_start(plain.pid), b = process_start(odd.pid);
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(b.has_value());
  // Both started within a moment of each other: their tick counts are close, not fields apart.
  const long long ticks_a = std::stoll(a->substr(0, a->find('@')));
  const long long ticks_b = std::stoll(b->substr(0, b->find('@')));
  EXPECT_GE(ticks_b, ticks_a);
  EXPECT_LT(ticks_b - ticks_a, 100 * ::sysconf(_SC_CLK_TCK));
  EXPECT_EQ(a->substr(a->find('@')), b->substr(b->find('@')));  // one boot
}

}  // namespace
}  // namespace attn
