#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds and runs a downstream project against it
# (CMake package config and pkg-config file).
set -euo pipefail
build_dir=$1
src_dir=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build_dir" --prefix "$tmp/prefix" > "$tmp/install.log"
libdir=$(ls -d "$tmp"/prefix/lib* | head -1)
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cmake -S "$src_dir/consumer" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" > "$tmp/configure.log"
cmake --build "$tmp/build" > "$tmp/build.log"
LD_LIBRARY_PATH="$libdir" STARSCREAM_BACKEND=host "$tmp/build/consumer"
LD_LIBRARY_PATH="$libdir" STARSCREAM_BACKEND=host "$tmp/build/consumer_pc"
