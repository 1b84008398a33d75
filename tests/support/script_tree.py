# SPDX-License-Identifier: MIT
"""What the tests of the repository's checker scripts share: write a small tree of files into a
temporary directory and run a checker on it (tests/arch/test_check_layers.py,
tests/docs/test_check_docs.py)."""
import os
import subprocess
import sys
import tempfile


def run_on_tree(script, files):
    """Runs `python3 script ROOT` on a fresh tree holding `files` ({path: text}); returns the
    exit code and stdout."""
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            full = os.path.join(root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write(text)
        p = subprocess.run([sys.executable, script, root], capture_output=True, text=True)
        return p.returncode, p.stdout
