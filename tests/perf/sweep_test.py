# SPDX-License-Identifier: MIT
"""perf/sweep.py against a fake launcher and a fake perf program: records are combined, every
kind of failed run (exit code, wrong results, timeout) is reported without stopping the sweep,
and the exit code says so. Needs no MPI and no library."""

import importlib.util
import json
import os
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest

SWEEP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "perf", "sweep.py")
HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None

FAKE_MPIRUN = """\
import os, sys
args = sys.argv[1:]
np = args[args.index("-np") + 1]
rest = args[args.index("-np") + 2:]
os.environ["FAKE_NP"] = np
os.execv(sys.executable, [sys.executable] + rest)
"""

# Behaves per algorithm: ring and auto succeed, direct fails to start, bidir_ring reports wrong
# results, hierarchical hangs.
FAKE_PERF = """\
import json, os, sys, time
args = sys.argv[1:]
opt = lambda flag: args[args.index(flag) + 1]
algo, out = opt("-A"), opt("-J")
if algo == "direct":
    print("Starscream failure: invalid argument", file=sys.stderr)
    sys.exit(3)
if algo == "hierarchical":
    time.sleep(60)
wrong = 1 if algo == "bidir_ring" else 0
with open(out, "w") as f:
    for i, size in enumerate([8, 64, 512]):
        half = {"time": 10.0 + i, "alg_bw": size / 1e4, "bus_bw": size / 1e4, "nwrong": wrong}
        f.write(json.dumps({"size": size, "count": size // 4, "algorithm": algo,
                            "nranks": int(os.environ["FAKE_NP"]), "cycle": 0,
                            "out_of_place": half, "in_place": half}) + "\\n")
sys.exit(1 if wrong else 0)
"""


class SweepTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.bin = os.path.join(self.tmp.name, "bin")
        os.makedirs(self.bin)
        self.mpirun = self._script("mpirun", FAKE_MPIRUN)
        self._script(os.path.join("bin", "all_reduce_perf"), FAKE_PERF)
        self.out = os.path.join(self.tmp.name, "out")

    def tearDown(self):
        self.tmp.cleanup()

    def _script(self, name, body):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write("#!%s\n%s" % (sys.executable, textwrap.dedent(body)))
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        return path

    def _sweep(self, algos):
        cmd = [sys.executable, SWEEP, "--collective", "all_reduce", "--np", "4",
               "--out", self.out, "--bin-dir", self.bin, "--mpirun", self.mpirun,
               "--mpirun-args", "", "--algos", algos, "--timeout", "3"]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)

    def _combined(self):
        with open(os.path.join(self.out, "all_reduce_sweep.json")) as f:
            return json.load(f)

    def test_all_good(self):
        result = self._sweep("ring,auto")
        runs = self._combined()["runs"]
        self.assertEqual([r["status"] for r in runs], ["ok", "ok"])
        self.assertEqual([len(r["records"]) for r in runs], [3, 3])
        self.assertEqual(runs[0]["records"][0]["nranks"], 4)
        self.assertIn("-A ring", runs[0]["command"])
        png = os.path.join(self.out, "all_reduce_sweep.png")
        if HAVE_MATPLOTLIB:
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertTrue(os.path.getsize(png) > 0)
        else:
            self.assertNotEqual(result.returncode, 0)
            self.assertIn("matplotlib", result.stderr)

    def test_failures_are_reported_and_the_sweep_goes_on(self):
        result = self._sweep("direct,bidir_ring,hierarchical,ring")
        self.assertNotEqual(result.returncode, 0)
        runs = {r["algorithm"]: r for r in self._combined()["runs"]}
        self.assertEqual(runs["direct"]["status"], "failed")
        self.assertIn("exit code 3", runs["direct"]["reason"])
        self.assertEqual(runs["bidir_ring"]["status"], "failed")
        self.assertIn("exit code 1", runs["bidir_ring"]["reason"])
        self.assertEqual(runs["hierarchical"]["status"], "failed")
        self.assertIn("timed out", runs["hierarchical"]["reason"])
        self.assertEqual(runs["ring"]["status"], "ok")
        self.assertIn("FAILED: direct, bidir_ring, hierarchical", result.stderr)
        with open(runs["direct"]["log"]) as f:
            self.assertIn("invalid argument", f.read())

    def test_summary_names_columns_and_logs(self):
        result = self._sweep("ring,auto")
        header = [l for l in result.stdout.splitlines() if l.startswith("algorithm")]
        self.assertEqual(len(header), 1, result.stdout)
        # Whole column names (no clipped header), and where each table is.
        for column in ("peak busbw", "time at 8", "busbw at 512", "table (log)"):
            self.assertIn(column, header[0])
        self.assertIn("all_reduce_ring.log", result.stdout)

    def test_sizes_that_miss_the_maximum_are_reported(self):
        sys.path.insert(0, os.path.dirname(SWEEP))
        import sweep
        args = sweep.parse_args(["-c", "all_reduce", "--np", "2", "-b", "8", "-e", "1M", "-f", "8"])
        self.assertEqual(sweep.planned_sizes(args)[-1], 256 << 10)
        args = sweep.parse_args(["-c", "all_reduce", "--np", "2", "-b", "4", "-e", "1M", "-f", "8"])
        self.assertEqual(sweep.planned_sizes(args)[-1], 1 << 20)
        cmd = [sys.executable, SWEEP, "--collective", "all_reduce", "--np", "4", "-b", "8",
               "-e", "1M", "-f", "8", "--out", self.out, "--bin-dir", self.bin,
               "--mpirun", self.mpirun, "--mpirun-args", "", "--algos", "ring"]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        self.assertIn("never lands on -e 1M; the largest size is 256K", result.stdout)

    def test_missing_program(self):
        os.remove(os.path.join(self.bin, "all_reduce_perf"))
        self.assertEqual(self._sweep("ring").returncode, 2)


if __name__ == "__main__":
    unittest.main()
