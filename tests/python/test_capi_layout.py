#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The package's ctypes mirrors (starscream/_capi.py) against the real headers: a C program
compiled here with include/starscream/*.h prints every structure's size, every field's offset
and every initializer's values, and each must equal the mirror's. A field renamed, added or
retyped in starscream_ops.h fails here, not as a wrong answer on a GPU."""
import ctypes
import json
import os
import subprocess
import tempfile
import unittest

import _support
from starscream import _capi

STRUCTS = {
    "sscKvCacheConfig_t": (_capi.KvCacheConfig, "SSC_KV_CACHE_CONFIG_INITIALIZER"),
    "sscGemmConfig_t": (_capi.GemmConfig, "SSC_GEMM_CONFIG_INITIALIZER"),
    "sscGemmArgs_t": (_capi.GemmArgs, "SSC_GEMM_ARGS_INITIALIZER"),
    "sscGemmShard2dQuery_t": (_capi.GemmShard2dQuery, "SSC_GEMM_SHARD2D_QUERY_INITIALIZER"),
    "sscGemmShard2dPlan_t": (_capi.GemmShard2dPlan, "SSC_GEMM_SHARD2D_PLAN_INITIALIZER"),
    "sscRankTopology_t": (_capi.RankTopology, None),
    "sscUniqueId": (_capi.UniqueId, None),
}
# The package's initializers, by the C macro they mirror (called with the header's version).
INITIALIZERS = {
    "SSC_KV_CACHE_CONFIG_INITIALIZER": _capi.kv_cache_config,
    "SSC_GEMM_CONFIG_INITIALIZER": _capi.gemm_config,
    "SSC_GEMM_ARGS_INITIALIZER": _capi.gemm_args,
    "SSC_GEMM_SHARD2D_QUERY_INITIALIZER": _capi.gemm_shard2d_query,
    "SSC_GEMM_SHARD2D_PLAN_INITIALIZER": _capi.gemm_shard2d_plan,
}
CONSTANTS = {
    "SSC_UNIQUE_ID_BYTES": _capi.UNIQUE_ID_BYTES,
    "sscFloat16": _capi.FLOAT16, "sscFloat32": _capi.FLOAT32, "sscBfloat16": _capi.BFLOAT16,
    "sscKvPageRoundRobin": _capi.KV_INTERLEAVE["round_robin"],
    "sscKvContiguous": _capi.KV_INTERLEAVE["contiguous"],
    "sscKvSequenceOwner": _capi.KV_INTERLEAVE["sequence_owner"],
    "sscKvExchangeAuto": _capi.KV_EXCHANGE["auto"],
    "sscKvExchangeAllGather": _capi.KV_EXCHANGE["allgather"],
    "sscKvExchangeFused": _capi.KV_EXCHANGE["fused"],
    "SSC_ATTN_Q_SHARDED_HEADS": _capi.ATTN_Q_SHARDED_HEADS,
    "SSC_ATTN_OUT_SHARDED_HEADS": _capi.ATTN_OUT_SHARDED_HEADS,
    "sscGemmAuto": _capi.GEMM_VARIANT["auto"], "sscGemmUnfused": _capi.GEMM_VARIANT["unfused"],
    "sscGemmChunked": _capi.GEMM_VARIANT["chunked"], "sscGemmFused": _capi.GEMM_VARIANT["fused"],
    "sscGemmOpReduceScatter": _capi.GEMM_OP["reduce_scatter"],
    "sscGemmOpAllGather": _capi.GEMM_OP["all_gather"],
    "sscLinearColumnParallel": _capi.LINEAR_PARALLEL["column"],
    "sscLinearRowParallel": _capi.LINEAR_PARALLEL["row"],
    "SSC_GEMM_WEIGHT_KN": _capi.GEMM_WEIGHT_KN, "SSC_GEMM_COPY_ENGINE": _capi.GEMM_COPY_ENGINE,
    "SSC_GEMM_OUT_AS_INPUT": _capi.GEMM_OUT_AS_INPUT,
    "SSC_KV_CACHE_CONFIG_MAGIC": _capi.KV_CACHE_CONFIG_MAGIC,
    "SSC_GEMM_CONFIG_MAGIC": _capi.GEMM_CONFIG_MAGIC, "SSC_GEMM_ARGS_MAGIC": _capi.GEMM_ARGS_MAGIC,
    "SSC_GEMM_SHARD2D_QUERY_MAGIC": _capi.GEMM_SHARD2D_QUERY_MAGIC,
    "SSC_GEMM_SHARD2D_PLAN_MAGIC": _capi.GEMM_SHARD2D_PLAN_MAGIC,
}


def build_include():
    """The folder holding the generated starscream/version.h: SSC_TEST_BUILD_INCLUDE (ctest),
    else <the library's folder>/../include (a build tree)."""
    if os.environ.get("SSC_TEST_BUILD_INCLUDE"):
        return os.environ["SSC_TEST_BUILD_INCLUDE"]
    lib = _support.library_or_none()
    return os.path.join(os.path.dirname(os.path.dirname(lib)), "include") if lib else None


def c_program():
    lines = ["#include <stddef.h>", "#include <stdio.h>",
             "#include \"starscream/starscream.h\"", "#include \"starscream/starscream_ops.h\"",
             "int main(void) {", "  int first = 1;", "  printf(\"{\");",
             "#define SEP() (printf(first ? \"\" : \", \"), first = 0)"]
    lines.append('  SEP(); printf("\\"SSC_VERSION_CODE\\": %d", (int)SSC_VERSION_CODE);')
    for cname, (mirror, init) in STRUCTS.items():
        lines.append(f'  SEP(); printf("\\"size:{cname}\\": %zu", sizeof({cname}));')
        for field, ctype in mirror._fields_:
            lines.append(f'  SEP(); printf("\\"off:{cname}.{field}\\": %zu", '
                         f'offsetof({cname}, {field}));')
        if init:
            lines.append(f"  {{ {cname} v = {init};")
            for field, ctype in mirror._fields_:
                if ctype in (ctypes.c_double,):
                    lines.append(f'    SEP(); printf("\\"init:{init}.{field}\\": %.17g", v.{field});')
                elif ctype == ctypes.c_void_p:
                    lines.append(f'    SEP(); printf("\\"init:{init}.{field}\\": %lld", '
                                 f'(long long)(size_t)v.{field});')
                else:
                    # Through the mirror's C type: an enum field holding -1 (an unsigned enum
                    # in C) is the same 32 bits as the c_int -1 Python stores.
                    cast = {ctypes.c_int: "(int)", ctypes.c_uint: "(unsigned)"}.get(ctype, "")
                    lines.append(f'    SEP(); printf("\\"init:{init}.{field}\\": %lld", '
                                 f'(long long){cast}v.{field});')
            lines.append("  }")
    for name in CONSTANTS:
        lines.append(f'  SEP(); printf("\\"const:{name}\\": %lld", (long long)(int){name});')
    lines += ['  printf("}\\n");', "  return 0;", "}"]
    return "\n".join(lines) + "\n"


@unittest.skipIf(_support.c_compiler() is None, "no C compiler (cc) to compile the headers")
class LayoutTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        inc = build_include()
        if not inc or not os.path.exists(os.path.join(inc, "starscream", "version.h")):
            raise unittest.SkipTest("no build tree with include/starscream/version.h (build the "
                                    "library, or set SSC_TEST_BUILD_INCLUDE)")
        with tempfile.TemporaryDirectory() as d:
            src, exe = os.path.join(d, "layout.c"), os.path.join(d, "layout")
            with open(src, "w") as f:
                f.write(c_program())
            subprocess.run([_support.c_compiler(), "-std=c11", "-Wall", "-Werror",
                            "-I", os.path.join(_support.REPO, "include"), "-I", inc, src,
                            "-o", exe], check=True)
            cls.c = json.loads(subprocess.run([exe], capture_output=True, text=True,
                                              check=True).stdout)

    def test_sizes_and_offsets(self):
        for cname, (mirror, _) in STRUCTS.items():
            with self.subTest(struct=cname):
                self.assertEqual(ctypes.sizeof(mirror), self.c[f"size:{cname}"])
                for field, _ in mirror._fields_:
                    self.assertEqual(getattr(mirror, field).offset, self.c[f"off:{cname}.{field}"],
                                     f"{cname}.{field}")

    def test_initializers(self):
        version = self.c["SSC_VERSION_CODE"]
        for init, make in INITIALIZERS.items():
            value = make(version)
            for field, _ in type(value)._fields_:
                with self.subTest(initializer=init, field=field):
                    got = getattr(value, field)
                    self.assertEqual(0 if got is None else got, self.c[f"init:{init}.{field}"])

    def test_constants(self):
        for name, value in CONSTANTS.items():
            with self.subTest(constant=name):
                self.assertEqual(value, self.c[f"const:{name}"])

    def test_version_matches_the_package(self):
        v = self.c["SSC_VERSION_CODE"]
        import starscream
        self.assertEqual(starscream.__version__, f"{v // 10000}.{v // 100 % 100}.{v % 100}")


if __name__ == "__main__":
    _support.main()
