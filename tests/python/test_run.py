#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""starscream-run: the commands it builds for torchrun, mpirun, the automatic launcher and
--partitions (the ranks' environment, where the bootstrap goes, what is refused), the
bootstrap's own work (torch.distributed's variables from Open MPI's, verify() before the
program, the program run as Python would), and, where the shim is built and mpirun is there,
two real ranks started by starscream-run."""
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

import _support
from starscream import _find, run

BOOT = run.BOOTSTRAP


class Fixture(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        lib = os.path.join(self.tmp.name, "lib")
        os.makedirs(os.path.join(lib, "nccl-compat"))
        self.shim = os.path.join(lib, _find.LIBNCCL_SHIM)
        open(self.shim, "w").close()
        self.lib, self.compat = lib, os.path.join(lib, "nccl-compat")
        self.env = {"STARSCREAM_LIB_DIR": lib, "PATH": "/usr/bin", "MASTER_PORT": "12345"}

    def tearDown(self):
        self.tmp.cleanup()

    def build(self, *argv, which=None, flavor="openmpi", env=None):
        tools = which if which is not None else {"mpirun": "/opt/mpi/bin/mpirun",
                                                  "torchrun": "/opt/py/bin/torchrun"}
        return run.build(list(argv), dict(self.env, **(env or {})), which=tools.get,
                         mpi_flavor=lambda launcher: flavor)


class EnvironmentTest(Fixture):
    def test_rank_environment(self):
        env = run.rank_environment({"LD_PRELOAD": "/x/libfoo.so", "LD_LIBRARY_PATH": "/a:/b"},
                                   self.shim)
        self.assertEqual(env["LD_PRELOAD"], f"{self.shim}:/x/libfoo.so")
        self.assertEqual(env["LD_LIBRARY_PATH"], f"{self.compat}:{self.lib}:/a:/b")
        self.assertEqual(env["NCCL_NVLS_ENABLE"], "0")

    def test_rank_environment_without_compat_dir(self):
        os.rmdir(self.compat)
        env = run.rank_environment({"LD_PRELOAD": self.shim}, self.shim)
        self.assertEqual(env["LD_PRELOAD"], self.shim)  # not twice
        self.assertEqual(env["LD_LIBRARY_PATH"], self.lib)

    def test_mpi_to_torch(self):
        ompi = {"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "8",
                "OMPI_COMM_WORLD_LOCAL_RANK": "3", "OMPI_COMM_WORLD_LOCAL_SIZE": "8"}
        self.assertEqual(run.mpi_to_torch_environment(ompi),
                         {"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "3",
                          "LOCAL_WORLD_SIZE": "8", "MASTER_ADDR": "127.0.0.1",
                          "MASTER_PORT": "29500"})
        self.assertEqual(run.mpi_to_torch_environment(dict(ompi, MASTER_ADDR="n1", MASTER_PORT="7"))
                         .keys(), {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"})
        self.assertEqual(run.mpi_to_torch_environment(dict(ompi, RANK="0")), {})  # torchrun's
        self.assertEqual(run.mpi_to_torch_environment({"PMI_RANK": "1", "PMI_SIZE": "2"})["RANK"], "1")
        self.assertEqual(run.mpi_to_torch_environment({}), {})


class WrapPythonTest(unittest.TestCase):
    def test_cases(self):
        cases = [
            (["python3", "t.py", "-x"], ["python3", BOOT, "t.py", "-x"]),
            (["/usr/bin/python3.11", "-u", "-W", "ignore", "-X", "dev", "t.py"],
             ["/usr/bin/python3.11", "-u", "-W", "ignore", "-X", "dev", BOOT, "t.py"]),
            (["python", "-Wignore", "-m", "pkg.mod", "a"], ["python", "-Wignore", BOOT, "--module", "pkg.mod", "a"]),
            (["python3", "--", "-odd.py"], ["python3", BOOT, "--", "-odd.py"]),
        ]
        for program, want in cases:
            with self.subTest(program=program):
                self.assertEqual(run.wrap_python(program), (want, True))
        self.assertEqual(run.wrap_python(["python3", "t.py"], verify=False),
                         (["python3", BOOT, "--no-verify", "t.py"], True))
        for program in (["./a.out"], ["python3", "-c", "x"], ["python3", "-uc", "x"], ["python3"],
                        ["python3", "-"], ["env", "python3", "t.py"]):
            with self.subTest(program=program):
                self.assertEqual(run.wrap_python(program), (program, False))


class TorchrunTest(Fixture):
    def test_split_with_the_table(self):
        # The table, as used where torch cannot be imported; where it can, its parser agrees.
        args = ["--nproc-per-node", "4", "--standalone", "--rdzv_endpoint=h:1", "-r3",
                "train.py", "--lr", "3"]
        opts, script, rest, flags = run.split_torchrun(args, use_torch=False)
        if _torch_importable():
            self.assertEqual(run.split_torchrun(args), (opts, script, rest, flags))
        self.assertEqual((opts, script, rest), (args[:5], "train.py", ["--lr", "3"]))
        self.assertEqual(flags, {"module": False, "no_python": False})

    def test_module_and_no_python_flags(self):
        _, script, rest, flags = run.split_torchrun(["--nnodes", "1", "-m", "pkg.train", "x"],
                                                    use_torch=False)
        self.assertEqual((script, rest, flags["module"]), ("pkg.train", ["x"], True))
        _, script, rest, flags = run.split_torchrun(["--no_python", "python3", "t.py"],
                                                    use_torch=False)
        self.assertEqual((script, rest, flags["no_python"]), ("python3", ["t.py"], True))

    def test_command(self):
        launch = self.build("torchrun", "--nproc-per-node", "4", "train.py", "--lr", "3")
        self.assertEqual(launch.argv, ["/opt/py/bin/torchrun", "--nproc-per-node", "4", BOOT,
                                       "train.py", "--lr", "3"])
        # torchrun itself carries the variables (its workers inherit them).
        self.assertEqual(launch.env["LD_PRELOAD"], self.shim)
        self.assertTrue(launch.env["LD_LIBRARY_PATH"].startswith(self.compat + ":"))
        self.assertTrue(launch.verified)

    def test_module(self):
        launch = self.build("torchrun", "--standalone", "-m", "pkg.train", "a")
        self.assertEqual(launch.argv[1:], ["--standalone", BOOT, "--module", "pkg.train", "a"])

    def test_no_python_program(self):
        launch = self.build("torchrun", "--no-python", "./a.out")
        self.assertEqual(launch.argv[1:], ["--no-python", "./a.out"])
        self.assertFalse(launch.verified)
        launch = self.build("--no-verify", "torchrun", "t.py")
        self.assertEqual(launch.argv[1:], [BOOT, "--no-verify", "t.py"])

    def test_unknown_option(self):
        if _torch_importable():
            self.skipTest("torch is importable here: torchrun's own parser reads the options")
        with self.assertRaisesRegex(run.LaunchError, "--frobnicate=VALUE"):
            self.build("torchrun", "--frobnicate", "3", "t.py")


def _torch_importable():
    try:
        import torch.distributed.run  # noqa: F401
        return True
    except ImportError:
        return False


class MpirunTest(Fixture):
    def test_open_mpi(self):
        launch = self.build("mpirun", "-np", "4", "--bind-to", "none", "python3", "-u", "t.py", "a")
        fwd = ["-x", f"LD_PRELOAD={self.shim}", "-x", f"LD_LIBRARY_PATH={self.compat}:{self.lib}",
               "-x", "NCCL_NVLS_ENABLE=0", "-x", "MASTER_PORT=12345"]
        self.assertEqual(launch.argv, ["/opt/mpi/bin/mpirun"] + fwd +
                         ["-np", "4", "--bind-to", "none", "python3", "-u", BOOT, "t.py", "a"])
        self.assertNotIn("LD_PRELOAD", launch.env)  # mpirun itself is not preloaded
        self.assertTrue(launch.verified)

    def test_hydra(self):
        launch = self.build("mpiexec", "-n", "2", "python3", "t.py", flavor="hydra")
        self.assertEqual(launch.argv[1:4], ["-genv", "LD_PRELOAD", self.shim])

    def test_unknown_mpi_passes_the_environment(self):
        launch = self.build("mpirun", "-n", "2", "./a.out", flavor="unknown")
        self.assertEqual(launch.argv, ["/opt/mpi/bin/mpirun", "-n", "2", "./a.out"])
        self.assertEqual(launch.env["LD_PRELOAD"], self.shim)
        self.assertFalse(launch.verified)
        self.assertIn("no Python interpreter", launch.describe())

    def test_free_port_when_unset(self):
        env = dict(self.env)
        del env["MASTER_PORT"]
        launch = run.build(["mpirun", "-n", "2", "python3", "t.py"], env,
                           which={"mpirun": "/m"}.get, mpi_flavor=lambda _: "openmpi")
        port = launch.rank_env["MASTER_PORT"]
        self.assertTrue(port.isdigit() and 0 < int(port) < 65536)


class AutoAndPartitionsTest(Fixture):
    def test_auto_prefers_mpirun(self):
        launch = self.build("-n", "3", "t.py", "x")
        self.assertIn("-np", launch.argv)
        self.assertEqual(launch.argv[-4:], [sys.executable, BOOT, "t.py", "x"])

    def test_auto_torchrun_without_mpirun(self):
        launch = self.build("--nproc=2", "t.py", which={"torchrun": "/t/torchrun"})
        self.assertEqual(launch.argv, ["/t/torchrun", "--standalone", "--nproc-per-node=2", BOOT,
                                       "t.py"])
        launch = self.build("-n", "2", "./a.out", which={"torchrun": "/t/torchrun"})
        self.assertEqual(launch.argv[1:], ["--standalone", "--nproc-per-node=2", "--no-python",
                                           "./a.out"])

    def test_auto_without_launchers(self):
        with self.assertRaisesRegex(run.LaunchError, "neither mpirun nor torchrun"):
            self.build("t.py", which={})

    def test_partitions(self):
        launch = self.build("--partitions", "8", "python3", "t.py", "--x")
        script = os.path.join(_support.REPO, "tools", "emulate", "partition-run.sh")
        self.assertEqual(launch.argv[:3], [script, "8", "env"])
        self.assertIn(f"LD_PRELOAD={self.shim}", launch.argv)
        self.assertIn("NCCL_NVLS_ENABLE=0", launch.argv)
        self.assertEqual(launch.argv[-4:], ["python3", BOOT, "t.py", "--x"])
        self.assertNotIn("LD_PRELOAD", launch.env)  # the script and its mpirun are not preloaded
        launch = self.build("--partitions=2", "t.py")
        self.assertEqual(launch.argv[-3:], [sys.executable, BOOT, "t.py"])

    def test_refusals(self):
        for argv, why in ((["--partitions", "4", "torchrun", "t.py"], "give the program"),
                          (["--partitions", "4", "-n", "2", "t.py"], "not both"),
                          (["-n", "2", "mpirun", "-np", "2", "t"], "its own count"),
                          (["--partitions", "0", "t.py"], "positive integer"),
                          (["--bogus", "t.py"], "unknown option --bogus"),
                          (["--dry-run"], "no program")):
            with self.subTest(argv=argv), self.assertRaisesRegex(run.LaunchError, why):
                self.build(*argv)

    def test_shim_missing(self):
        os.remove(self.shim)
        with self.assertRaises(_support.starscream.LibraryNotFoundError):
            self.build("mpirun", "-n", "1", "./a.out")

    def test_dry_run_prints_and_runs_nothing(self):
        env = _support.subprocess_env(**self.env)
        env["PATH"] = os.environ.get("PATH", "/usr/bin")
        out = _support.run_python(["-m", "starscream.run", "--dry-run", "--partitions", "4",
                                   "t.py"], env=env)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn(f"rank environment: LD_PRELOAD={self.shim}", out.stdout)
        self.assertIn("partition-run.sh 4 env", out.stdout)
        out = _support.run_python(["-m", "starscream.run", "--partitions"], env=env)
        self.assertEqual(out.returncode, 2)
        self.assertIn("--partitions needs a value", out.stderr)
        out = _support.run_python(["-m", "starscream.run", "--help"], env=env)
        self.assertEqual(out.returncode, 0)
        self.assertIn("starscream-run", out.stdout)


class BootstrapTest(Fixture):
    def write(self, name, text):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text))
        return path

    def test_runs_the_script_as_python_would(self):
        script = self.write("prog.py", """
            import os, sys
            print("argv", sys.argv, "path0", sys.path[0], "name", __name__)
            print("rank", os.environ.get("RANK"), os.environ.get("MASTER_ADDR"))
            sys.exit(7)
        """)
        env = _support.subprocess_env(OMPI_COMM_WORLD_RANK="1", OMPI_COMM_WORLD_SIZE="2")
        env.pop("RANK", None)
        out = _support.run_python([BOOT, "--no-verify", script, "a", "b"], env=env)
        self.assertEqual(out.returncode, 7, out.stderr)
        self.assertIn(f"argv ['{script}', 'a', 'b'] path0 {self.tmp.name} name __main__", out.stdout)
        self.assertIn("rank 1 127.0.0.1", out.stdout)

    def test_module(self):
        os.makedirs(os.path.join(self.tmp.name, "pkg"))
        self.write("pkg/__init__.py", "")
        self.write("pkg/mod.py", "import sys\nprint('module', __name__, sys.argv[1:])\n")
        out = subprocess.run([sys.executable, BOOT, "--no-verify", "--module", "pkg.mod", "z"],
                             cwd=self.tmp.name, env=_support.subprocess_env(), capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("module __main__ ['z']", out.stdout)

    def test_verify_failure_stops_the_rank(self):
        script = self.write("never.py", "print('the program ran')\n")
        env = _support.subprocess_env(RANK="0")
        env.pop("LD_PRELOAD", None)
        out = _support.run_python([BOOT, script], env=env)
        self.assertEqual(out.returncode, 3, out.stdout + out.stderr)
        self.assertNotIn("the program ran", out.stdout)
        self.assertIn("starscream-run: rank 0: libstarscream-nccl.so is not loaded", out.stderr)

    def test_shadowing_names_removed(self):
        # Run as a file, the package folder must not shadow the program's `import run`.
        self.write("run.py", "print('the program own run module')\n")
        script = self.write("main.py", "import run\n")
        out = _support.run_python([BOOT, "--no-verify", script])
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("the program own run module", out.stdout)


@_support.need_library(_find.LIBNCCL_SHIM)
@unittest.skipIf(shutil.which("mpirun") is None, "mpirun is not installed")
class EndToEndTest(unittest.TestCase):
    def test_two_ranks(self):
        with tempfile.TemporaryDirectory() as d:
            script = os.path.join(d, "probe.py")
            with open(script, "w") as f:
                f.write(textwrap.dedent("""
                    import os, starscream
                    r = starscream.verify()
                    assert r.preloaded, r
                    print("rank", os.environ["RANK"], "of", os.environ["WORLD_SIZE"], "ok",
                          flush=True)
                """))
            env = _support.subprocess_env(OMPI_ALLOW_RUN_AS_ROOT="1",
                                          OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
            env.pop("RANK", None)
            out = _support.run_python(["-m", "starscream.run", "-n", "2", script], env=env,
                                      timeout=120)
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            self.assertIn("rank 0 of 2 ok", out.stdout)
            self.assertIn("rank 1 of 2 ok", out.stdout)
            self.assertIn("NCCL served by", out.stderr)


if __name__ == "__main__":
    _support.main()
