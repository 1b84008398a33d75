// SPDX-License-Identifier: MIT
// starscream-tune --calibrate (calibrate_mpi.cc).
#pragma once

// argv[1] is "--calibrate"; the rest are its options. Returns the exit code.
int runCalibrate(int argc, char** argv);
