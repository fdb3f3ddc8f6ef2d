// grading/file_guard.cpp — see file_guard.hpp.
//
// The filter is a small classic-BPF program over struct seccomp_data:
//
//   arch != this arch            -> allow (nothing of ours runs there)
//   x86-64's x32 syscall bit     -> trap  (the same calls under other numbers)
//   nr in the path-writing list  -> trap
//   nr == open   && flags(arg 1) & (O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND) -> trap
//   nr == openat && flags(arg 2) & (the same)                                  -> trap
//   otherwise                    -> allow
//
// SECCOMP_RET_TRAP delivers SIGSYS before the call runs; the handler sets the
// call's return register to -EACCES and returns, so the call "fails".
#include "grading/file_guard.hpp"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <vector>

namespace convlab::grading {
namespace {

struct Guarded {
  long nr;
  const char* name;
  int path_arg;  // which argument is the path, for the report; -1: none
};

#define CONVLAB_NR(call, arg) {__NR_##call, #call, arg}
constexpr Guarded kPathCalls[] = {
#if defined(__x86_64__)
    CONVLAB_NR(creat, 0),   CONVLAB_NR(rename, 0),  CONVLAB_NR(mkdir, 0),
    CONVLAB_NR(rmdir, 0),   CONVLAB_NR(link, 0),     CONVLAB_NR(unlink, 0),  CONVLAB_NR(symlink, 0),
    CONVLAB_NR(chmod, 0),   CONVLAB_NR(chown, 0),    CONVLAB_NR(lchown, 0),  CONVLAB_NR(utime, 0),
    CONVLAB_NR(utimes, 0),  CONVLAB_NR(mknod, 0),    CONVLAB_NR(futimesat, 1),
#endif
    CONVLAB_NR(truncate, 0), CONVLAB_NR(mkdirat, 1),   CONVLAB_NR(mknodat, 1),   CONVLAB_NR(fchownat, 1),
    CONVLAB_NR(unlinkat, 1), CONVLAB_NR(renameat, 1),  CONVLAB_NR(linkat, 1),    CONVLAB_NR(symlinkat, 0),
    CONVLAB_NR(fchmodat, 1), CONVLAB_NR(utimensat, 1), CONVLAB_NR(renameat2, 1), CONVLAB_NR(openat2, 1),
    CONVLAB_NR(io_uring_setup, -1),
};
#undef CONVLAB_NR

#if defined(__x86_64__)
constexpr unsigned kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr unsigned kArch = AUDIT_ARCH_AARCH64;
#endif

constexpr unsigned kWriteFlags = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND;

constexpr int kReportedAttempts = 8;
int g_report_fd = -1;
std::atomic<int> g_blocked{0};

// ---- the SIGSYS handler: async-signal-safe only (write, no allocation) --------

void append(char* buf, std::size_t& n, std::size_t cap, const char* s) {
  while (*s && n + 1 < cap) buf[n++] = *s++;
}

// A JSON string body: quotes, backslashes and control characters escaped.
void append_json(char* buf, std::size_t& n, std::size_t cap, const char* s, std::size_t max_chars) {
  static const char hex[] = "0123456789abcdef";
  for (std::size_t i = 0; s[i] && i < max_chars && n + 7 < cap; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      buf[n++] = '\\';
      buf[n++] = char(c);
    } else if (c < 0x20 || c >= 0x7f) {
      const char esc[] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15], 0};
      append(buf, n, cap, esc);
    } else {
      buf[n++] = char(c);
    }
  }
}

const char* call_name(long nr, int* path_arg) {
  *path_arg = -1;
  if (nr == __NR_openat) {
    *path_arg = 1;
    return "openat";
  }
#if defined(__x86_64__)
  if (nr == __NR_open) {
    *path_arg = 0;
    return "open";
  }
#endif
  for (const Guarded& g : kPathCalls)
    if (g.nr == nr) {
      *path_arg = g.path_arg;
      return g.name;
    }
  return "a file-changing system call";
}

void on_sigsys(int, siginfo_t* info, void* context) {
  auto* uc = static_cast<ucontext_t*>(context);
  long args[3];
#if defined(__x86_64__)
  args[0] = uc->uc_mcontext.gregs[REG_RDI];
  args[1] = uc->uc_mcontext.gregs[REG_RSI];
  args[2] = uc->uc_mcontext.gregs[REG_RDX];
  uc->uc_mcontext.gregs[REG_RAX] = -EACCES;
#elif defined(__aarch64__)
  for (int i = 0; i < 3; ++i) args[i] = long(uc->uc_mcontext.regs[i]);
  uc->uc_mcontext.regs[0] = (unsigned long)(-EACCES);
#endif
  // Reported the first few times: a write inside a timed loop must not flood the result file.
  if (++g_blocked > kReportedAttempts || g_report_fd < 0) return;
  int path_arg = -1;
  const char* name = call_name(info->si_syscall, &path_arg);
  char line[512];
  std::size_t n = 0;
  append(line, n, sizeof line, "{\"event\": \"blocked_write\", \"syscall\": \"");
  append(line, n, sizeof line, name);
  append(line, n, sizeof line, "\", \"path\": \"");
  if (path_arg >= 0 && args[path_arg]) append_json(line, n, sizeof line, reinterpret_cast<const char*>(args[path_arg]), 200);
  append(line, n, sizeof line, "\"}\n");
  (void)!write(g_report_fd, line, n);
}

// ---- the filter -----------------------------------------------------------------------

struct Program {
  std::vector<sock_filter> code;
  std::vector<std::size_t> to_trap, to_allow;  // jumps whose true-branch goes to the trap / allow

  void emit(sock_filter f) { code.push_back(f); }
  void jump_if_equal(unsigned value, std::vector<std::size_t>& fixups) {
    fixups.push_back(code.size());
    emit(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, value, 0, 0));
  }
};

constexpr unsigned arg_low_word(int i) { return unsigned(offsetof(seccomp_data, args) + 8 * i); }  // little-endian

}  // namespace

int blocked_write_count() { return g_blocked.load(); }

std::string block_file_writes(int report_fd) {
#if !defined(__x86_64__) && !defined(__aarch64__)
  (void)report_fd;
  return "file-write blocking is implemented for x86-64 and AArch64 only";
#else
  g_report_fd = report_fd;
  struct sigaction sa{};
  sa.sa_sigaction = on_sigsys;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSYS, &sa, nullptr) != 0) return std::string("sigaction(SIGSYS): ") + std::strerror(errno);

  Program p;
  p.emit(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  p.emit(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0));
  p.emit(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  p.emit(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
#if defined(__x86_64__)
  p.to_trap.push_back(p.code.size());
  p.emit(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x40000000u, 0, 0));  // __X32_SYSCALL_BIT
#endif
  for (const Guarded& g : kPathCalls) p.jump_if_equal(unsigned(g.nr), p.to_trap);
  std::vector<std::size_t> to_open, to_openat;
#if defined(__x86_64__)
  p.jump_if_equal(__NR_open, to_open);
#endif
  p.jump_if_equal(__NR_openat, to_openat);
  p.emit(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  // The flag checks: the flags argument's low word against the write flags.
  auto flag_check = [&](std::vector<std::size_t>& from, int arg) {
    const std::size_t here = p.code.size();
    for (std::size_t j : from) p.code[j].jt = static_cast<unsigned char>(here - j - 1);
    p.emit(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, arg_low_word(arg)));
    p.to_trap.push_back(p.code.size());
    p.emit(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, kWriteFlags, 0, 0));
    p.emit(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  };
  if (!to_open.empty()) flag_check(to_open, 1);
  flag_check(to_openat, 2);
  const std::size_t trap = p.code.size();
  p.emit(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP));
  for (std::size_t j : p.to_trap) {
    if (trap - j - 1 > 255) return "internal error: seccomp jump too long";
    p.code[j].jt = static_cast<unsigned char>(trap - j - 1);
  }

  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return std::string("prctl(NO_NEW_PRIVS): ") + std::strerror(errno);
  sock_fprog prog{static_cast<unsigned short>(p.code.size()), p.code.data()};
  if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0)
    return std::string("seccomp: ") + std::strerror(errno);
  return "";
#endif
}

}  // namespace convlab::grading
