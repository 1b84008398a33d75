// SPDX-License-Identifier: MIT
// starscream-tune --calibrate: the communicator's own calibration (tuner/calibrate.h), with the
// thorough sweep, written to the same cache file that communicator init reads on this machine.
// Launched like the application it prepares, one rank per partition:
//   mpirun -np 8 starscream-tune --calibrate [--budget SECONDS]
#include "tools/tune/calibrate_mpi.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#ifdef SSC_TUNE_HAVE_MPI
#include <mpi.h>

#include "src/api/calibration.h"
#include "starscream/starscream_mpi.h"
#endif

int runCalibrate(int argc, char** argv) {
  double budget = 120;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--budget") == 0 && i + 1 < argc) {
      char* end = nullptr;
      budget = std::strtod(argv[++i], &end);
      if (end == argv[i] || *end != '\0' || !(budget > 0)) {
        std::fprintf(stderr, "starscream-tune --calibrate: --budget wants seconds > 0, got '%s'\n",
                     argv[i]);
        return 2;
      }
    } else {
      std::fprintf(stderr,
                   "starscream-tune --calibrate: unknown argument '%s' (accepted: --budget "
                   "SECONDS)\n",
                   argv[i]);
      return 2;
    }
  }
#ifndef SSC_TUNE_HAVE_MPI
  (void)budget;
  std::fprintf(stderr,
               "starscream-tune --calibrate: this build has no MPI (install Open MPI and "
               "build again); communicator init calibrates by itself (STARSCREAM_TUNE=auto)\n");
  return 2;
#else
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // The init's own quick calibration would be thrown away: the thorough one replaces it.
  setenv("STARSCREAM_TUNE", "off", 1);
  sscComm_t comm = nullptr;
  int rc = 0;
  if (sscCommInitMpi(MPI_COMM_WORLD, &comm) != sscSuccess) {
    std::fprintf(stderr, "starscream-tune --calibrate: rank %d: init failed: %s\n", rank,
                 sscGetLastError(nullptr));
    rc = 1;
  } else {
    ssc::CalibrationOptions o;
    o.fromEnvironment = false;
    o.mode = ssc::TuneMode::kRefresh;
    o.thorough = true;
    o.budgetSeconds = budget;
    if (ssc::commCalibrate(comm, o) != sscSuccess) {
      std::fprintf(stderr, "starscream-tune --calibrate: rank %d: %s\n", rank,
                   sscGetLastError(comm));
      rc = 1;
    } else if (rank == 0) {
      const auto& p = comm->tuner->profile();
      std::printf("%s\n%s\n", p.origin.c_str(), p.source.c_str());
      if (p.name != "calibrated") {
        std::fprintf(stderr,
                     "starscream-tune --calibrate: nothing was calibrated (see the "
                     "log with STARSCREAM_DEBUG=INFO)\n");
        rc = 1;
      }
    }
    sscCommDestroy(comm);
  }
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
#endif
}
