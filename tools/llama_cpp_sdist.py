"""llama.cpp's sources as llama-cpp-python's sdist carries them (PyPI is the only registry here):
downloaded into PEERS and unpacked there once, shared by the peer builds of bench/llm_bench.py
(llama-bench) and tools/make_quant_fixtures.py (the quantizer)."""
import glob
import os
import subprocess


def llama_cpp_source(peers, pip, version=None):
    """The vendored llama.cpp folder of the newest llama-cpp-python sdist in `peers` (or of
    `version`, when a test's expectations are tied to one), which `pip` (a command list, e.g.
    [sys.executable, "-m", "pip"]) downloads when none is there."""
    os.makedirs(peers, exist_ok=True)
    pattern = f"llama_cpp_python-{version or '*'}.tar.gz"
    tars = glob.glob(os.path.join(peers, pattern))
    if not tars:
        spec = f"llama-cpp-python=={version}" if version else "llama-cpp-python"
        subprocess.run(pip + ["download", "--no-binary", ":all:", "--no-deps", spec, "-d", peers], check=True)
        tars = glob.glob(os.path.join(peers, pattern))
    tar = sorted(tars)[-1]
    base = os.path.basename(tar)[: -len(".tar.gz")]
    src = os.path.join(peers, base, "vendor", "llama.cpp")
    if not os.path.exists(src):
        subprocess.run(["tar", "xzf", tar, "-C", peers, f"{base}/vendor/llama.cpp"], check=True)
    return src
