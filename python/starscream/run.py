# SPDX-License-Identifier: MIT
"""starscream-run: launch a PyTorch (or any NCCL) program on Starscream.

    starscream-run [options] torchrun [torchrun options] script.py [args]
    starscream-run [options] mpirun [mpirun options] python3 script.py [args]
    starscream-run [options] -n N script.py [args]          (auto: mpirun, else torchrun)
    starscream-run [options] --partitions K script.py [args]

Every rank gets the NCCL shim preloaded and its nccl-compat folder first on the library path:

    LD_PRELOAD=<libstarscream-nccl.so>[:the caller's LD_PRELOAD]
    LD_LIBRARY_PATH=<lib>/nccl-compat:<lib>[:the caller's LD_LIBRARY_PATH]
    NCCL_NVLS_ENABLE=0

LD_PRELOAD puts the shim first in every lookup of an nccl* symbol (docs/nccl-shim.md); the
nccl-compat folder (libnccl.so.2, or librccl.so.1, linking to the shim) lets a library whose
NEEDED libnccl.so.2 is found through the library path load the shim instead of the vendor's.
NCCL_NVLS_ENABLE=0 keeps a vendor NCCL that still gets loaded (through an RPATH) from
setting up NVLink SHARP resources it will never use.

Each Python rank starts through starscream/bootstrap.py, which fills torch.distributed's
RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT from Open MPI's (or
PMI's) variables where the launcher did not set them, imports torch where it is installed, runs
starscream.verify() (the rank exits with status 3 and the reason if PyTorch's NCCL calls would
not reach the shim), then runs the program as `python script.py` or `python -m module` would.

With mpirun the variables go to the ranks only (-x NAME=VALUE; -genv with MPICH's Hydra), so
mpirun itself is not preloaded. torchrun gets them itself and hands them to its workers.

--partitions K runs K ranks on one NVIDIA GPU under MPS, each limited to 100/K % of the SMs,
through tools/emulate/partition-run.sh of the Starscream checkout (which starts MPS, runs mpirun
and stops MPS again): the program then runs under that script's mpirun, not torchrun.
"""
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys

from . import _find
from ._errors import StarscreamError

LAUNCHERS = {"torchrun": "torchrun", "mpirun": "mpi", "mpiexec": "mpi", "orterun": "mpi",
             "prterun": "mpi"}
BOOTSTRAP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bootstrap.py")
PYTHON_RE = re.compile(r"^python(\d+(\.\d+)*)?$")

# torchrun's options that take a value (torch.distributed.run, underscores read as hyphens),
# for when torch's own parser cannot be imported here; its flags are TORCHRUN_FLAGS.
TORCHRUN_VALUED = {
    "--nnodes", "--nproc-per-node", "--rdzv-backend", "--rdzv-endpoint", "--rdzv-id",
    "--rdzv-conf", "--max-restarts", "--monitor-interval", "--start-method",
    "--event-log-handler", "--role", "--log-dir", "-r", "--redirects", "-t", "--tee",
    "--local-ranks-filter", "--node-rank", "--master-addr", "--master-port", "--local-addr",
    "--logs-specs", "--numa-binding", "--signals-to-handle",
}
TORCHRUN_FLAGS = {"--standalone", "-m", "--module", "--no-python", "--run-path",
                  "--virtual-local-rank"}

USAGE = """usage: starscream-run [--partitions K | -n N] [--no-verify] [--dry-run] [--]
                      [torchrun|mpirun|mpiexec] [launcher options] program [args]"""


class LaunchError(StarscreamError):
    """A command line starscream-run cannot launch (the message says why)."""


# ------------------------------------------------------------------ the ranks' environment
def rank_environment(environ, shim):
    """The variables every rank gets (a dict), given the caller's environment and the shim."""
    lib_dir = os.path.dirname(shim)
    compat = _find.nccl_compat_dir(shim)
    preload = [shim] + [p for p in environ.get("LD_PRELOAD", "").replace(" ", ":").split(":")
                        if p and os.path.realpath(p) != os.path.realpath(shim)]
    paths = [p for p in (compat, lib_dir) if p]
    paths += [p for p in environ.get("LD_LIBRARY_PATH", "").split(":") if p and p not in paths]
    env = {"LD_PRELOAD": ":".join(preload), "LD_LIBRARY_PATH": ":".join(paths),
           "NCCL_NVLS_ENABLE": "0"}
    return env


def mpi_to_torch_environment(environ):
    """torch.distributed's env:// variables from Open MPI's (or PMI's) where the launcher set
    none (torchrun sets them itself): returns the variables to add."""
    if environ.get("RANK"):
        return {}
    sources = (("RANK", ("OMPI_COMM_WORLD_RANK", "PMI_RANK")),
               ("WORLD_SIZE", ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE")),
               ("LOCAL_RANK", ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID")),
               ("LOCAL_WORLD_SIZE", ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS")))
    out = {}
    for name, names in sources:
        value = next((environ[n] for n in names if environ.get(n)), None)
        if value is not None and not environ.get(name):
            out[name] = value
    if "RANK" in out:
        # One node by default; several nodes need MASTER_ADDR set by the caller.
        if not environ.get("MASTER_ADDR"):
            out["MASTER_ADDR"] = "127.0.0.1"
        if not environ.get("MASTER_PORT"):
            out["MASTER_PORT"] = "29500"
    return out


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


# ------------------------------------------------------------------ the rank program
def wrap_python(program, verify=True):
    """program (argv) with the bootstrap put in front of its script or module where program
    starts a Python interpreter: (new argv, True); else (program, False): not Python, or
    python -c, stdin or an interactive interpreter, which have no script to run after it."""
    program = list(program)
    if not program or not PYTHON_RE.match(os.path.basename(program[0])):
        return program, False
    boot = [BOOTSTRAP] + ([] if verify else ["--no-verify"])
    i = 1
    while i < len(program):
        tok = program[i]
        if tok == "--" and i + 1 < len(program):  # the script follows, whatever its name
            return program[:i] + boot + ["--"] + program[i + 1:], True
        if not tok.startswith("-"):
            return program[:i] + boot + program[i:], True
        if tok == "-m" and i + 1 < len(program):
            return program[:i] + boot + ["--module"] + program[i + 1:], True
        if tok in ("-c", "-", "-m", "--"):
            return program, False
        if tok in ("-W", "-X", "--check-hash-based-pycs"):
            i += 2
        elif tok.startswith(("--", "-W", "-X")):
            i += 1
        elif set(tok[1:]) & set("cm"):  # clustered, as -uc 'code' or -um module
            return program, False
        else:
            i += 1
    return program, False


def _python_program(program):
    """An auto-mode program: a .py file runs under this interpreter."""
    if program and program[0].endswith(".py"):
        return [sys.executable] + list(program)
    return list(program)


def split_torchrun(args, use_torch=True):
    """torchrun's arguments as (options, script, script args, {module, no_python}): with
    torch's own parser where torch imports (and use_torch), else with TORCHRUN_VALUED and
    TORCHRUN_FLAGS."""
    get_args_parser = None
    if use_torch:
        try:
            from torch.distributed.run import get_args_parser
        except ImportError:
            pass
    if get_args_parser is not None:
        ns = get_args_parser().parse_args(list(args))
        at = len(args) - len(ns.training_script_args) - 1
        return (list(args[:at]), args[at], list(args[at + 1:]),
                {"module": bool(ns.module), "no_python": bool(ns.no_python)})
    i, flags = 0, {"module": False, "no_python": False}
    while i < len(args):
        tok = args[i]
        if tok == "--":
            i += 1
            break
        if not tok.startswith("-") or tok == "-":
            break
        name = tok.split("=", 1)[0]
        norm = name if not name.startswith("--") else "--" + name[2:].replace("_", "-")
        if norm in ("-m", "--module"):
            flags["module"] = True
        elif norm == "--no-python":
            flags["no_python"] = True
        if norm in TORCHRUN_FLAGS or "=" in tok:
            i += 1
        elif norm in TORCHRUN_VALUED:
            i += 2
        elif norm in ("-r", "-t") or re.match(r"^-[rt]\S", tok):  # -r3: value attached
            i += 1
        else:
            raise LaunchError(f"torchrun option {name} is unknown to starscream-run (torch is not "
                              f"importable here to ask its parser): write it as {name}=VALUE if "
                              "it takes a value")
    if i >= len(args):
        raise LaunchError("torchrun: no training script given")
    return list(args[:i]), args[i], list(args[i + 1:]), flags


def _torchrun(launcher, args, verify):
    opts, script, script_args, flags = split_torchrun(args)
    if flags["no_python"]:
        program, wrapped = wrap_python([script] + script_args, verify)
        return [launcher] + opts + program, wrapped
    boot = [BOOTSTRAP] + ([] if verify else ["--no-verify"])
    if flags["module"]:
        # The bootstrap is a file: torchrun runs it as a script and it runs the module.
        opts = [o for o in opts if o not in ("-m", "--module")]
        return [launcher] + opts + boot + ["--module", script] + script_args, True
    return [launcher] + opts + boot + [script] + script_args, True


def _mpi_flavor(launcher):
    try:
        out = subprocess.run([launcher, "--version"], capture_output=True, text=True,
                             timeout=30, check=False)
        text = out.stdout + out.stderr
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if re.search(r"Open MPI|OpenRTE|open-mpi|PRRTE", text):
        return "openmpi"
    if re.search(r"HYDRA|MPICH|Intel", text):
        return "hydra"
    return "unknown"


def _mpi_program_at(args):
    """Index of the rank program in mpirun's arguments: the first Python interpreter there
    (mpirun's own options are too many to parse), else None."""
    for i, tok in enumerate(args):
        if PYTHON_RE.match(os.path.basename(tok)):
            return i
    return None


def _partition_script():
    root = _find.clone_root()
    path = os.path.join(root, "tools", "emulate", "partition-run.sh") if root else None
    if not path or not os.access(path, os.X_OK):
        raise LaunchError("--partitions runs tools/emulate/partition-run.sh of a Starscream "
                          "checkout (it starts and stops MPS), and none was found: install the "
                          "package from a clone (pip install ./python) or run "
                          "`python -m starscream.run` from one")
    return path


# ------------------------------------------------------------------ the command line
class Launch:
    """What starscream-run will run: argv, the launcher process's environment (env), the
    variables added for the ranks (rank_env), whether the ranks run the bootstrap (verified)."""

    def __init__(self, argv, env, rank_env, verified, note=""):
        self.argv, self.env, self.rank_env = argv, env, rank_env
        self.verified, self.note = verified, note

    def describe(self):
        lines = [f"rank environment: {k}={v}" for k, v in self.rank_env.items()]
        lines.append("verify in each rank: " + ("yes" if self.verified else
                                                 "no (" + (self.note or "--no-verify") + ")"))
        lines.append("command: " + " ".join(shlex.quote(a) for a in self.argv))
        return "\n".join(lines)


def parse_options(argv):
    """starscream-run's own options, then the rest: (options dict, rest)."""
    opts = {"partitions": None, "nproc": None, "verify": True, "dry_run": False, "help": False}
    i = 0
    while i < len(argv):
        tok = argv[i]
        name, eq, value = tok.partition("=")
        if tok == "--":
            i += 1
            break
        if name in ("--partitions", "-n", "--nproc"):
            if not eq:
                if i + 1 >= len(argv):
                    raise LaunchError(f"{name} needs a value")
                value = argv[i + 1]
                i += 1
            if not value.isdigit() or int(value) < 1:
                raise LaunchError(f"{name} takes a positive integer, not {value!r}")
            opts["partitions" if name == "--partitions" else "nproc"] = int(value)
        elif tok == "--no-verify":
            opts["verify"] = False
        elif tok == "--dry-run":
            opts["dry_run"] = True
        elif tok in ("-h", "--help"):
            opts["help"] = True
        elif tok.startswith("-"):
            raise LaunchError(f"unknown option {tok} (starscream-run's options come before the "
                              "launcher or the program; --help lists them)")
        else:
            break
        i += 1
    return opts, list(argv[i:])


def build(argv, environ=None, which=shutil.which, mpi_flavor=_mpi_flavor):
    """The Launch for starscream-run's arguments (no side effect: the tests call it)."""
    environ = dict(os.environ if environ is None else environ)
    opts, rest = parse_options(argv)
    if opts["help"]:
        raise LaunchError(USAGE)
    if not rest:
        raise LaunchError("no program given\n" + USAGE)
    if opts["partitions"] and opts["nproc"]:
        raise LaunchError("--partitions K already sets K ranks: give -n or --partitions, not both")
    verify = opts["verify"]
    shim = _find.find(_find.LIBNCCL_SHIM, environ)
    rank_env = rank_environment(environ, shim)
    kind = LAUNCHERS.get(os.path.basename(rest[0]))

    if opts["partitions"]:
        if kind:
            raise LaunchError(f"--partitions runs the ranks itself (mpirun under MPS, "
                              f"tools/emulate/partition-run.sh): give the program, not "
                              f"{os.path.basename(rest[0])}")
        script = _partition_script()
        program, wrapped = wrap_python(_python_program(rest), verify)
        rank_env["MASTER_PORT"] = environ.get("MASTER_PORT") or _free_port()
        assigns = [f"{k}={v}" for k, v in rank_env.items()]
        return Launch([script, str(opts["partitions"]), "env"] + assigns + program, environ,
                      rank_env, verify and wrapped, "" if wrapped else "the program is not Python")

    if kind is None:  # auto
        n = opts["nproc"] or 1
        program = _python_program(rest)
        if which("mpirun"):
            root = ["--allow-run-as-root"] if hasattr(os, "getuid") and os.getuid() == 0 else []
            rest = ["mpirun"] + root + ["--oversubscribe", "-np", str(n)] + program
            kind = "mpi"
        elif which("torchrun"):
            flag = [] if program[0] == sys.executable else ["--no-python"]
            body = program[1:] if program[0] == sys.executable else program
            rest = ["torchrun", "--standalone", f"--nproc-per-node={n}"] + flag + body
            kind = "torchrun"
        else:
            raise LaunchError("neither mpirun nor torchrun is on PATH")
    elif opts["nproc"]:
        raise LaunchError(f"-n is for the automatic launcher: give {rest[0]} its own count")

    launcher = which(rest[0]) or rest[0]
    if kind == "torchrun":
        argv_out, wrapped = _torchrun(launcher, rest[1:], verify)
        env = dict(environ, **rank_env)
        return Launch(argv_out, env, rank_env, verify and wrapped,
                      "" if wrapped else "the program is not Python")

    at = _mpi_program_at(rest[1:])
    if at is None:
        program, wrapped, head = [], False, rest[1:]
    else:
        head = rest[1:1 + at]
        program, wrapped = wrap_python(rest[1 + at:], verify)
    rank_env["MASTER_PORT"] = environ.get("MASTER_PORT") or _free_port()
    flavor = mpi_flavor(launcher)
    env = dict(environ)
    if flavor == "openmpi":
        fwd = [a for k, v in rank_env.items() for a in ("-x", f"{k}={v}")]
    elif flavor == "hydra":
        fwd = [a for k, v in rank_env.items() for a in ("-genv", k, v)]
    else:  # local ranks inherit mpirun's environment
        fwd = []
        env.update(rank_env)
    note = "" if wrapped else "no Python interpreter among mpirun's arguments"
    return Launch([launcher] + fwd + head + program, env, rank_env, verify and wrapped, note)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in argv[:1]) or not argv:
        print(__doc__.strip())
        return 0 if argv else 2
    try:
        launch = build(argv)
    except LaunchError as e:
        print(f"starscream-run: {e}", file=sys.stderr)
        return 2
    except StarscreamError as e:  # the shim not found
        print(f"starscream-run: {e}", file=sys.stderr)
        return 2
    opts, _ = parse_options(argv)
    if opts["dry_run"]:
        print(launch.describe())
        return 0
    if not launch.verified and opts["verify"]:
        print(f"starscream-run: not verifying the ranks: {launch.note}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(launch.argv[0] if os.sep in launch.argv[0] else
                  (shutil.which(launch.argv[0]) or launch.argv[0]), launch.argv, launch.env)
    except OSError as e:
        print(f"starscream-run: cannot run {launch.argv[0]}: {e}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main())
