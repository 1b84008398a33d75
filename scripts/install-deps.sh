#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian packages Starscream builds and tests with. Idempotent: installs only what is
# missing, so it is cheap to run before every build (the README's commands and .ci/run do).
# Not root: it runs apt-get through sudo.
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '/^# SPDX-License-Identifier:/d; $d; s/^# \{0,1\}//'
  exit 0
fi

packages=(
  build-essential cmake pkg-config git
  libhwloc-dev libnuma-dev librocm-smi-dev      # topology providers
  libopenmpi-dev openmpi-bin                    # mpirun launches, perf tools, integration tests
  libgtest-dev googletest                       # unit tests
  nlohmann-json3-dev libcli11-dev libfmt-dev    # JSON files, tool CLIs, formatting
  python3 python3-matplotlib graphviz           # sweep plots, topology drawings
  clang-format                                  # scripts/check_format.sh (version 14 on Debian 12)
  hipcc                                         # CI compiles the HIP build (tests/gpu)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
