// SPDX-License-Identifier: MIT
// starscream-env: prints the registry of STARSCREAM_* environment variables with their defaults
// and meanings, or the other inputs the library reads (the tables docs/environment.md holds), or
// one variable's effective value.
#include <cstdio>
#include <cstring>

#include "src/core/env.h"

int main(int argc, char** argv) {
  if (argc == 2 && (std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0)) {
    std::printf(
        "usage: starscream-env [--markdown | --external | NAME]\n"
        "Every STARSCREAM_* variable the library reads, with its default and meaning.\n"
        "  --markdown  the registry as a Markdown table (default; docs/environment.md)\n"
        "  --external  the variables it reads that are not its own (docs/environment.md)\n"
        "  NAME        the value NAME has in this environment (or its default)\n"
        "Examples:\n"
        "  starscream-env\n"
        "  STARSCREAM_TIMEOUT=30 starscream-env STARSCREAM_TIMEOUT   # prints 30\n");
    return 0;
  }
  if (argc == 2 && std::strcmp(argv[1], "--external") == 0) {
    std::fputs(ssc::env::externalMarkdownTable().c_str(), stdout);
    return 0;
  }
  if (argc == 2 && std::strcmp(argv[1], "--markdown") != 0) {
    for (const auto& v : ssc::env::registry())
      if (std::strcmp(v.name, argv[1]) == 0) {
        std::printf("%s\n", ssc::env::getString(v.name).c_str());
        return 0;
      }
    std::fprintf(stderr, "starscream-env: %s is not a Starscream variable\n", argv[1]);
    return 2;
  }
  std::fputs(ssc::env::markdownTable().c_str(), stdout);
  return 0;
}
