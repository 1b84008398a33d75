#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""starscream.verify() against the loader's real behaviour, without PyTorch or a GPU: small C
libraries compiled here stand in for the shim (libstarscream-nccl.so), a vendor NCCL
(libnccl.so.2) and PyTorch's GPU library (libtorch_cuda.so, linking NCCL dynamically, or
statically with the symbols hidden or exported). Each case runs in a fresh process that loads
them the way a real run would (LD_PRELOAD, LD_LIBRARY_PATH, dlopen order), and verify() must
accept exactly the cases where every nccl* call of "torch" reaches the shim. The real shim, where
it is built, is checked preloaded too."""
import json
import os
import subprocess
import tempfile
import textwrap
import unittest

import _support
from starscream import _find

SYMBOLS = ["ncclGetVersion", "ncclGetUniqueId", "ncclCommInitRank", "ncclAllReduce",
           "ncclGroupStart", "ncclGroupEnd", "ncclCommDestroy"]
NCCL_C = "".join(f"int {s}(void) {{ return 0; }}\n" for s in SYMBOLS)
TORCH_DYNAMIC_C = "extern int ncclAllReduce(void);\nint torch_all_reduce(void) { return ncclAllReduce(); }\n"
TORCH_HIDDEN_C = ("__attribute__((visibility(\"hidden\"))) int ncclAllReduce(void) { return 1; }\n"
                  "int torch_all_reduce(void) { return ncclAllReduce(); }\n")
TORCH_EXPORTED_C = "int ncclAllReduce(void) { return 1; }\nint torch_all_reduce(void) { return ncclAllReduce(); }\n"

PROBE = textwrap.dedent("""
    import ctypes, json, os, sys
    import starscream
    for path, glob in json.loads(os.environ["PROBE_LOADS"]):
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL if glob else ctypes.RTLD_LOCAL)
    try:
        r = starscream.verify()
        print(json.dumps({"ok": True, "report": dict(r)}))
    except starscream.VerifyError as e:
        print(json.dumps({"ok": False, "error": str(e)}))
""")


@unittest.skipIf(_support.c_compiler() is None, "no C compiler (cc) to build the stand-in libraries")
class VerifyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.tmp.name
        cc = _support.c_compiler()

        def build(out, source, *extra, soname=None):
            src = os.path.join(d, os.path.basename(out) + ".c")
            with open(src, "w") as f:
                f.write(source)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            cmd = [cc, "-shared", "-fPIC", "-o", out, src] + list(extra)
            if soname:
                cmd.append(f"-Wl,-soname,{soname}")
            subprocess.run(cmd, check=True)
            return out

        cls.shim = build(os.path.join(d, "shim", "libstarscream-nccl.so"), NCCL_C,
                         soname="libstarscream-nccl.so")
        cls.vendor = build(os.path.join(d, "vendor", "libnccl.so.2"), NCCL_C, soname="libnccl.so.2")
        cls.torch = build(os.path.join(d, "torch", "libtorch_cuda.so"), TORCH_DYNAMIC_C, cls.vendor)
        cls.torch_hidden = build(os.path.join(d, "hidden", "libtorch_cuda.so"), TORCH_HIDDEN_C)
        cls.torch_exported = build(os.path.join(d, "exported", "libtorch_cuda.so"), TORCH_EXPORTED_C)
        cls.compat = os.path.join(d, "shim", "nccl-compat")
        os.makedirs(cls.compat)
        os.symlink("../libstarscream-nccl.so", os.path.join(cls.compat, "libnccl.so.2"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def probe(self, loads=(), preload=None, ld_path=None):
        env = _support.subprocess_env(PROBE_LOADS=json.dumps(list(loads)))
        env.pop("LD_PRELOAD", None)
        env.pop("LD_LIBRARY_PATH", None)
        if preload:
            env["LD_PRELOAD"] = preload
        if ld_path:
            env["LD_LIBRARY_PATH"] = ld_path
        out = _support.run_python(PROBE, env=env)
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout.strip().splitlines()[-1])

    def assertRefused(self, result, *phrases):
        self.assertFalse(result["ok"], result)
        for p in phrases:
            self.assertIn(p, result["error"])

    def test_nothing_loaded(self):
        self.assertRefused(self.probe(), "libstarscream-nccl.so is not loaded", "LD_PRELOAD",
                           "starscream-run")

    def test_vendor_only(self):
        r = self.probe([(self.torch, False)], ld_path=os.path.dirname(self.vendor))
        self.assertRefused(r, "is not loaded", self.vendor)

    def test_preloaded(self):
        r = self.probe(preload=self.shim)
        self.assertTrue(r["ok"], r)
        rep = r["report"]
        self.assertEqual(rep["shim"], self.shim)
        self.assertTrue(rep["preloaded"])
        self.assertIsNone(rep["torch"])
        self.assertEqual(set(rep["bindings"].values()), {self.shim})

    def test_preloaded_with_torch_linking_vendor_nccl(self):
        # PyTorch's usual case: its NEEDED libnccl.so.2 loads the vendor library, and the
        # preloaded shim still comes first in every lookup.
        r = self.probe([(self.torch, False)], preload=self.shim,
                       ld_path=os.path.dirname(self.vendor))
        self.assertTrue(r["ok"], r)
        self.assertEqual(r["report"]["torch"], self.torch)
        self.assertEqual(r["report"]["torch_nccl"], "dynamic")

    def test_compat_dir_without_preload(self):
        r = self.probe([(self.torch, False)], ld_path=self.compat)
        self.assertTrue(r["ok"], r)
        self.assertFalse(r["report"]["preloaded"])
        self.assertEqual(r["report"]["torch_nccl"], "shim")

    def test_shim_loaded_after_vendor(self):
        r = self.probe([(self.torch, False), (self.shim, True)],
                       ld_path=os.path.dirname(self.vendor))
        self.assertRefused(r, "was loaded after", self.vendor, "starscream-run")

    def test_shim_loaded_locally(self):
        r = self.probe([(self.shim, False)])
        self.assertRefused(r, "does not serve NCCL's symbols", "ncclGetVersion -> nothing")

    def test_static_hidden_nccl_in_torch(self):
        r = self.probe([(self.torch_hidden, False)], preload=self.shim)
        self.assertRefused(r, "statically", self.torch_hidden)

    def test_static_exported_nccl_in_torch(self):
        # Exported symbols are interposed by the preloaded shim: accepted, and said so.
        r = self.probe([(self.torch_exported, False)], preload=self.shim)
        self.assertTrue(r["ok"], r)
        self.assertEqual(r["report"]["torch_nccl"], "static, exported")

    @_support.need_library(_find.LIBNCCL_SHIM)
    def test_real_shim_preloaded(self):
        shim = os.path.realpath(_find.find(_find.LIBNCCL_SHIM))
        r = self.probe(preload=shim)
        self.assertTrue(r["ok"], r)
        self.assertEqual(set(r["report"]["bindings"].values()), {shim})


if __name__ == "__main__":
    _support.main()
