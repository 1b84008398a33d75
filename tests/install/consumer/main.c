/* SPDX-License-Identifier: MIT */
/* Links against the installed library and makes one real call through it. Includes every
   installed header that needs no MPI, so they are checked to compile as C. */
#include <starscream/starscream.h>
#include <starscream/starscream_ops.h>
#include <stdio.h>

int main(void) {
  int version = 0;
  if (sscGetVersion(&version) != sscSuccess || version != SSC_VERSION_CODE) {
    fprintf(stderr, "version mismatch: %d vs %d\n", version, SSC_VERSION_CODE);
    return 1;
  }
  sscComm_t comm;
  if (sscCommInitAll(&comm, 1, NULL) != sscSuccess) {
    fprintf(stderr, "init failed: %s\n", sscGetLastError(NULL));
    return 1;
  }
  int x = 21, y = 0;
  sscResult_t r = sscAllReduce(&x, &y, 1, sscInt32, sscSum, comm, NULL);
  if (r == sscSuccess) r = sscCommFinalize(comm);
  sscCommDestroy(comm);
  if (r != sscSuccess || y != 21) {
    fprintf(stderr, "all-reduce gave %d (%s)\n", y, sscGetErrorString(r));
    return 1;
  }
  printf("consumer ok: version %d (%s)\n", version, SSC_VERSION_STRING);
  return 0;
}
