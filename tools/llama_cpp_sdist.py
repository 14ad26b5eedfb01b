"""llama.cpp's sources as llama-cpp-python's sdist carries them (PyPI is the only registry here):
downloaded into PEERS and unpacked there once, shared by the peer builds of bench/llm_bench.py
(llama_tool: llama-bench, llama-server, llama-embedding, llama-quantize) and tools/make_quant_fixtures.py (the quantizer)."""
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


# The CPU levels a peer is built for, one folder under PEERS each (llama-build-<isa>): "native"
# (GGML_NATIVE: whatever this CPU has) and "avx2" (AVX/AVX2/FMA/F16C with every AVX-512 and AMX option
# off, the level of the machines without them), so that an AVX-512 machine also produces the AVX2
# tables (Spore's side: SPORE_CPU_ISA=avx2; NOTE [LLM benchmark]).
ISA_FLAGS = {
    "native": ["-DGGML_NATIVE=ON"],
    "avx2": ["-DGGML_NATIVE=OFF", "-DGGML_SSE42=ON", "-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_BMI2=ON",
             "-DGGML_FMA=ON", "-DGGML_F16C=ON", "-DGGML_AVX_VNNI=OFF", "-DGGML_AVX512=OFF", "-DGGML_AVX512_VBMI=OFF",
             "-DGGML_AVX512_VNNI=OFF", "-DGGML_AVX512_BF16=OFF", "-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF",
             "-DGGML_AMX_BF16=OFF"],
}


def llama_build_dir(peers, isa):
    return os.path.join(peers, f"llama-build-{isa}")


def llama_tool(peers, pip, target, isa="native", env=None):
    """The path of llama.cpp's `target` (llama-bench, llama-server, llama-embedding, llama-quantize,
    ...) built for `isa` from the sdist into peers/llama-build-<isa>, building it (niced, 2 jobs: a
    small shared machine) only when it is missing; the build's output goes to a log beside it."""
    build = llama_build_dir(peers, isa)
    exe = os.path.join(build, "bin", target)
    if os.path.exists(exe):
        return exe
    if env is None:
        env = dict(os.environ)
        env.pop("OPENBLAS_CORETYPE", None)  # the environment's trap; only for the peer's build
    src = llama_cpp_source(peers, pip)
    print(f"building {target} ({isa}) into {build}, log {build}.log", flush=True)
    with open(build + ".log", "a") as log:  # set-up noise, kept out of the tables
        build_llama_tool(src, build, target, isa, env, log)
    return exe


def build_llama_tool(src, build, target, isa, env, log):
    # Configured every time a tool is missing: the same flags, so an earlier configure is kept.
    subprocess.run(["cmake", "-S", src, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release", *ISA_FLAGS[isa],
                    "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=ON",
                    "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_TOOLS=ON", "-DGGML_OPENMP=ON"], check=True, env=env,
                   stdout=log, stderr=log)
    subprocess.run(["nice", "-n", "10", "cmake", "--build", build, "-j2", "--target", target], check=True, env=env,
                   stdout=log, stderr=log)
