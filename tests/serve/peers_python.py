"""The openai-client tests' start (one place for it): they need PyPI packages (the `serve` group of
scripts/install-py-peers.sh), which the system Python may lack. `require("openai", ...)` imports
them; where one is missing it re-runs the calling script under $SPORE_PEERS_PYTHON or the peers'
virtual environment (<source>/.venv-peers), and with neither it exits 77, which ctest reads as
skipped (SKIP_RETURN_CODE)."""
import importlib
import os
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def require(*modules):
    try:
        for name in modules:
            importlib.import_module(name)
    except ImportError:
        for py in (os.environ.get("SPORE_PEERS_PYTHON", ""), os.path.join(ROOT, ".venv-peers", "bin", "python")):
            if py and os.path.exists(py) and os.path.abspath(py) != os.path.abspath(sys.executable):
                os.execv(py, [py] + sys.argv)
        print(f"skipped: needs {', '.join(modules)} (scripts/install-py-peers.sh serve)")
        sys.exit(77)
    # The openai-client check's helpers (check() and its failures, free_port, wait_healthy).
    sys.path.insert(0, os.path.join(ROOT, "tools"))
