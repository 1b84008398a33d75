// SPDX-License-Identifier: MIT
// attention_perf --prefill: the prefill mode of perf/attention_perf (attention_prefill.cc).
#pragma once

// Runs the prefill benchmark with argv[first..argc) as its flags, after MPI_Init; returns the
// process's exit code.
int prefillMain(int argc, char** argv, int first);
