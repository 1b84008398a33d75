// SPDX-License-Identifier: MIT
// The NCCL tuner-plugin ABI, version 5: the newest NCCL 2.28 loads (it looks up the symbol
// "ncclTunerPlugin_v5" first, then v4, v3, v2; NCCL 2.28.9 src/plugin/tuner.cc). Written from the
// ABI's facts (layouts, constants, semantics as NCCL 2.28.9 src/include/plugin/tuner/tuner_v5.h
// and nccl_tuner.h define them), in a namespace of its own so that it never meets a real nccl.h.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sscnccl {

// ncclResult_t values (an int-sized enum in NCCL).
enum Result : int {
  kSuccess = 0,
  kInternalError = 3,
  kInvalidArgument = 4,
};

// ncclDebugLogLevel and the subsystem flags the plugin logs under.
enum LogLevel : int {
  kLogNone = 0,
  kLogVersion = 1,
  kLogWarn = 2,
  kLogInfo = 3,
  kLogAbort = 4,
  kLogTrace = 5
};
constexpr unsigned long kLogInit = 0x1, kLogTuning = 0x40;
typedef void (*Logger)(LogLevel level, unsigned long flags, const char* file, int line,
                       const char* fmt, ...);

// ncclFunc_t.
enum Func : int {
  kBroadcast = 0,
  kReduce = 1,
  kAllGather = 2,
  kReduceScatter = 3,
  kAllReduce = 4,
  kSendRecv = 5,
  kSend = 6,
  kRecv = 7,
  kAllToAll = 8,
  kScatter = 9,
  kGather = 10,
};

// Rows and columns of the cost table getCollInfo receives: float[numAlgo][numProto], times in
// microseconds; NCCL marks entries it will not use with -1.0 and takes the cheapest of the rest.
constexpr int kAlgoTree = 0, kAlgoRing = 1, kAlgoCollNetDirect = 2, kAlgoCollNetChain = 3,
              kAlgoNvls = 4, kAlgoNvlsTree = 5, kAlgoPat = 6, kNumAlgorithms = 7;
constexpr int kProtoLL = 0, kProtoLL128 = 1, kProtoSimple = 2, kNumProtocols = 3;
constexpr float kIgnore = -1.0f;
constexpr int kNumHwLinks = 3, kNumCompCaps = 4, kNumTuningScales = 3;

struct NvlDomainInfo {  // ncclNvlDomainInfo_v5_t
  int nNvlDomains;
  int minRanksPerNvlDomain;
  int maxRanksPerNvlDomain;
};

struct TunerConstants {  // ncclTunerConstants_v5_t: NCCL's own model's constants (in/out)
  double baseLatencies[kNumAlgorithms][kNumProtocols];
  double hwLatencies[kNumHwLinks][kNumAlgorithms][kNumProtocols];
  double llMaxBws[kNumCompCaps][kNumTuningScales];
  double perChMaxRingLL128Bws[kNumCompCaps][kNumTuningScales];
  double perChMaxTreeLL128Bws[kNumCompCaps][kNumTuningScales];
  double perChMaxTreeBws[kNumCompCaps][kNumTuningScales];
  double perChMaxNVLSTreeBws[kNumCompCaps][kNumTuningScales];
};

struct TunerV5 {  // ncclTuner_v5_t
  const char* name;
  Result (*init)(void** context, uint64_t commId, size_t nRanks, size_t nNodes, Logger logFunction,
                 NvlDomainInfo* nvlDomainInfo, TunerConstants* constants);
  // collCostTable is float[numAlgo][numProto] passed as float**. regBuff: the buffers are
  // registered. nChannels: left alone, NCCL decides.
  Result (*getCollInfo)(void* context, Func collType, size_t nBytes, int numPipeOps,
                        float** collCostTable, int numAlgo, int numProto, int regBuff,
                        int* nChannels);
  Result (*finalize)(void* context);
};

}  // namespace sscnccl

// The symbol NCCL 2.28 looks up in the library named by NCCL_TUNER_PLUGIN.
#define SSC_NCCL_TUNER_SYMBOL "ncclTunerPlugin_v5"
