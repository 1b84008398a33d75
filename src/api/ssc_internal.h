/* SPDX-License-Identifier: MIT */
/*
 * libstarscream.so's internal interface: what Starscream's own NCCL shim (libstarscream-nccl.so,
 * src/nccl) needs of the library beyond the public C API, so that a process holds one
 * environment registry, one logger, one last-error slot per thread and one group state per
 * thread, whichever of the two APIs it calls.
 *
 * Not a public API: this header is not installed and nothing outside this repository may rely on
 * it. The whole interface is one exported function that returns a table of functions for a
 * version, so it adds one symbol to libstarscream.so (tests/install/check_install.sh counts it
 * with the public ones) and a shim and a library from different builds refuse each other
 * instead of misbehaving: a library that does not serve the version asked for returns NULL.
 * Any change to the table (a member added, removed, reordered or changing meaning) bumps
 * SSC_INTERNAL_VERSION.
 */
#ifndef STARSCREAM_SRC_API_SSC_INTERNAL_H_
#define STARSCREAM_SRC_API_SSC_INTERNAL_H_

#include "starscream/starscream.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SSC_INTERNAL_VERSION 1

/* Log levels, those of STARSCREAM_DEBUG (src/core/log.h). */
enum {
  sscInternalLogNone = 0,
  sscInternalLogWarn = 1,
  sscInternalLogInfo = 2,
  sscInternalLogTrace = 3
};

/* Version 1. None of the functions throws; all may be called from any thread. */
typedef struct sscInternal_v1 {
  /* ---- the logger (src/core/log.h) */
  /* The level in force: STARSCREAM_DEBUG, read once per process. */
  int (*logLevel)(void);
  /* Writes one line to stderr at `level`, with the prefix of the library's own lines (host,
     pid, and the rank this thread last worked for). */
  void (*logWrite)(int level, const char* message);

  /* ---- the environment registry (src/core/env.h) */
  /* The value of the STARSCREAM_* variable `name`, or its declared default when unset or empty
     ("" for an undeclared name, with the registry's warning). The text stays valid until this
     thread's next call of envGet. */
  const char* (*envGet)(const char* name);

  /* ---- the thread's last error, the one sscGetLastError(NULL) returns (src/core/errors.h) */
  /* Replaces it with `message`, without logging (the caller logs in its own words). When the
     thread's open group failed with the message being replaced, the group reports `message`
     instead: a caller restating a failure of the library under its own entry point's name keeps
     that name in the group's report. */
  void (*setLastError)(const char* message);

  /* ---- the thread's group (sscGroupStart/End; src/api/group.h) */
  /* How many groups this thread has open (0: none). */
  int (*groupDepth)(void);
  /* Fails the open group because of a call its caller refused: the outermost sscGroupEnd then
     launches nothing and returns `code` with the thread's last error (set it first), exactly as
     for a call the library refused. The group's first failure wins; no effect outside a group. */
  void (*groupFail)(sscResult_t code);
  /* Ends one level as sscGroupEnd does, but the outermost launches nothing: its recorded calls
     are dropped and sscSuccess returned, or the failure recorded in the group as sscGroupEnd
     would return it. sscInvalidUsage outside a group. */
  sscResult_t (*groupDiscard)(void);
} sscInternal_v1;

/* The table of `version`, or NULL when this library does not serve that version. */
SSC_EXPORT const sscInternal_v1* sscInternalInterface(int version);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* STARSCREAM_SRC_API_SSC_INTERNAL_H_ */
