# SPDX-License-Identifier: MIT
"""How starscream-run starts each Python rank (run as a file: python bootstrap.py ...):

    bootstrap.py [--no-verify] script.py [args]     as `python script.py args`
    bootstrap.py [--no-verify] --module M [args]    as `python -m M args`

1. torch.distributed's env:// variables from Open MPI's or PMI's where no launcher set them
   (starscream.run.mpi_to_torch_environment);
2. unless --no-verify: imports torch where it is installed (so the check covers PyTorch's own
   NCCL binding) and runs starscream.verify(); on failure prints the reason and exits with
   status 3, before the program makes a single NCCL call;
3. runs the program in this interpreter as Python would have (sys.argv, sys.path[0], __main__).

It is a file rather than `-m starscream.bootstrap` so that the launchers can run it with
whatever interpreter the command names; it finds the package next to itself.
"""
import importlib.util
import os
import runpy
import sys

EXIT_VERIFY_FAILED = 3


def _import_starscream():
    here = os.path.dirname(os.path.abspath(__file__))
    # Run as a file, Python put this package's own folder first on sys.path, where its module
    # names (run, ops, verify, ...) would shadow the program's imports: take it out.
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) == here:
        del sys.path[0]
    try:
        import starscream
    except ImportError:
        sys.path.append(os.path.dirname(here))
        import starscream
    return starscream


def main(argv):
    starscream = _import_starscream()
    from starscream.run import mpi_to_torch_environment

    verify, module = True, None
    while argv and argv[0].startswith("--"):
        flag = argv.pop(0)
        if flag == "--no-verify":
            verify = False
        elif flag == "--module" and argv:
            module = argv.pop(0)
            break
        elif flag == "--":
            break
        else:
            print(f"starscream bootstrap: unknown option {flag}", file=sys.stderr)
            return 2
    if module is None and not argv:
        print("starscream bootstrap: no script or --module given", file=sys.stderr)
        return 2

    os.environ.update(mpi_to_torch_environment(os.environ))
    rank = os.environ.get("RANK", "?")
    if verify:
        if importlib.util.find_spec("torch") is not None:
            import torch  # noqa: F401  (loads PyTorch's NCCL binding, which verify() checks)
        try:
            report = starscream.verify()
        except starscream.VerifyError as e:
            print(f"starscream-run: rank {rank}: {e}", file=sys.stderr, flush=True)
            return EXIT_VERIFY_FAILED
        if rank in ("0", "?"):
            how = "preloaded" if report.preloaded else "not through LD_PRELOAD"
            torch_nccl = f", torch's NCCL: {report.torch_nccl}" if report.torch else ""
            print(f"starscream-run: NCCL served by {report.shim} ({how}{torch_nccl})",
                  file=sys.stderr, flush=True)

    if module is not None:
        sys.argv = [module] + argv
        sys.path.insert(0, os.getcwd())
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        script = argv[0]
        sys.argv = list(argv)
        sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
        runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
