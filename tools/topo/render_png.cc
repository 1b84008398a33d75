// SPDX-License-Identifier: MIT
#include "tools/topo/render_png.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

extern char** environ;

namespace ssc::topo {

std::string renderPng(const std::string& dot, const std::string& pngPath) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return fmt::format("pipe: {}", std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[0], STDIN_FILENO);
  std::string outArg = "-o" + pngPath;
  char* argv[] = {const_cast<char*>("dot"), const_cast<char*>("-Tpng"), outArg.data(), nullptr};
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, "dot", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[0]);
  if (rc != 0) {
    close(fds[1]);
    if (rc == ENOENT)
      return "the Graphviz 'dot' program is not installed (apt-get install graphviz), or not on "
             "PATH; --dot prints the graph for rendering elsewhere";
    return fmt::format("cannot run 'dot': {}", std::strerror(rc));
  }
  // dot may exit early (bad output path) and close its end: write errors are reported through
  // its exit status, so ignore SIGPIPE while writing.
  struct sigaction ignore {
  }, previous{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &previous);
  size_t done = 0;
  while (done < dot.size()) {
    const ssize_t n = write(fds[1], dot.data() + done, dot.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  close(fds[1]);
  sigaction(SIGPIPE, &previous, nullptr);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return fmt::format("'dot -Tpng -o {}' failed (exit status {})", pngPath,
                       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return "";
}

}  // namespace ssc::topo
