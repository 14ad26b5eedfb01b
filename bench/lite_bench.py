#!/usr/bin/env python3
"""Spore Lite against ONNX Runtime (issue 10, Benchmarks): MobileNetV2 224x224 at batch 1 and 8
and 1 and 2 threads, on Spore's own IR and on the ONNX file of the same network; start-up
(build_from_file to the first prediction against ORT session creation plus its first run); a
BERT-base encoder layer (sequence 128, hidden 768, 12 heads, FFN 3072) as ONNX; the same layer
quantized to int8 by `spore lite quantize` (NOTE [Dynamic int8 products]: its speed-up over float32
in Lite, its error against float32, and ONNX Runtime on the same int8 file); the stripped size
of libspore_lite.a.

usage: .venv-peers/bin/python bench/lite_bench.py [--build build/release] [--rounds 5]
                                                  [--threads 1 2] [--only mobilenet|bert|quantize|startup]
                                                  [--spin] [--isa avx2] [--write-readme]

--isa runs Spore (and the oneDNN inside it) at that SIMD level (SPORE_CPU_ISA, ONEDNN_MAX_CPU_ISA),
as on a machine without AVX-512; ONNX Runtime has no such switch and keeps the machine's own level,
so on an AVX-512 machine the AVX2 table's ratios are a lower bound. Each level has its own table
in bench/README.md.

The models are made once into build/<preset>/bench/lite_bench_models/ (MobileNetV2 by
build/<preset>/bench/lite_models, the framework's exporter; the BERT layer here with onnx.helper).
Lite runs in build/<preset>/bench/lite_bench (a `serve` process per model that times each
prediction itself, so process start and Python are not in its figures); ONNX Runtime runs here,
with intra_op_num_threads = the row's thread count, one inter-op thread, sequential execution
and its default (full) graph optimisation. Idle worker threads sleep in both engines (Lite:
OMP_WAIT_POLICY=passive for libgomp; ORT: session.intra_op.allow_spinning = 0); --spin lets
both spin, their default, which on a machine loaded past its core count measures the scheduler.
Each round runs every engine of a row once, in a
rotating order, so the machine's swings hit all of them alike; figures are medians over all
predictions of all rounds, wall time and process CPU time (all threads) both, since this
machine is shared. Ratio = ORT median / Lite median: at least 1.0 means Lite is as fast or faster.
Every model is first run once by both and their outputs compared, so a row cannot be fast by
being wrong.
"""
import argparse
import datetime
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LITE_ENV = dict(os.environ)  # Lite runs with the environment as it is, but for the wait policy (--spin)
os.environ.pop("OPENBLAS_CORETYPE", None)  # the peer's own setting (see bench/README.md)
import onnxruntime as ort  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

BEGIN = "<!-- lite_bench: begin (written by bench/lite_bench.py --write-readme) -->"
END = "<!-- lite_bench: end -->"
sys.path.insert(0, os.path.join(ROOT, "tools"))
from onnx_wheel_corpus import ONEDNN_ISA  # noqa: E402  Spore's SIMD level -> oneDNN's cap, for --isa


def markers(isa):
    """The README block of one SIMD level: the machine's own (no --isa) keeps the original markers."""
    if not isa:
        return BEGIN, END
    return (f"<!-- lite_bench {isa}: begin (written by bench/lite_bench.py --isa {isa} --write-readme) -->",
            f"<!-- lite_bench {isa}: end -->")


# ---- models -------------------------------------------------------------------------------------
def bert_layer(path, seq=128, hidden=768, heads=12, ffn=3072, seed=3):
    """One BERT-base encoder layer (post-LayerNorm, erf GELU) in ONNX opset 17, fixed-seed weights."""
    rng = np.random.default_rng(seed)
    inits, nodes = [], []

    def w(name, *shape, scale=0.02):
        inits.append(numpy_helper.from_array(rng.normal(0, scale, shape).astype(np.float32), name))
        return name

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(op, ins, out, **attrs):
        nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out

    def dense(x, n_in, n_out, name):
        y = node("MatMul", [x, w(name + ".w", n_in, n_out)], name + ".mm")
        return node("Add", [y, w(name + ".b", n_out)], name + ".out")

    hd = hidden // heads
    const("heads_shape", np.array([1, seq, heads, hd], np.int64))
    const("flat_shape", np.array([1, seq, hidden], np.int64))
    q = node("Transpose", [node("Reshape", [dense("x", hidden, hidden, "q"), "heads_shape"], "q.r")], "q.t", perm=[0, 2, 1, 3])
    k = node("Transpose", [node("Reshape", [dense("x", hidden, hidden, "k"), "heads_shape"], "k.r")], "k.t", perm=[0, 2, 3, 1])
    v = node("Transpose", [node("Reshape", [dense("x", hidden, hidden, "v"), "heads_shape"], "v.r")], "v.t", perm=[0, 2, 1, 3])
    s = node("Div", [node("MatMul", [q, k], "s.mm"), const("scale", np.array(np.sqrt(hd), np.float32))], "s")
    p = node("Softmax", [s], "p", axis=-1)
    c = node("Reshape", [node("Transpose", [node("MatMul", [p, v], "c.mm")], "c.t", perm=[0, 2, 1, 3]), "flat_shape"], "c")
    h = node("Add", [dense(c, hidden, hidden, "o"), "x"], "h")
    ones = lambda n: const(n, np.ones(hidden, np.float32))  # noqa: E731
    zeros = lambda n: const(n, np.zeros(hidden, np.float32))  # noqa: E731
    h1 = node("LayerNormalization", [h, ones("ln1.g"), zeros("ln1.b")], "h1", axis=-1, epsilon=1e-12)
    f = dense(h1, hidden, ffn, "ffn1")
    g = node("Mul", [node("Mul", [f, const("half", np.array(0.5, np.float32))], "g.half"),
                     node("Add", [node("Erf", [node("Div", [f, const("sqrt2", np.array(np.sqrt(2.0), np.float32))], "g.d")], "g.e"),
                                  const("one", np.array(1.0, np.float32))], "g.p")], "g")
    y = node("Add", [dense(g, ffn, hidden, "ffn2"), h1], "y0")
    node("LayerNormalization", [y, ones("ln2.g"), zeros("ln2.b")], "y", axis=-1, epsilon=1e-12)
    graph = helper.make_graph(nodes, "bert_layer", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, hidden])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, hidden])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="spore-bench")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


# ---- engines ------------------------------------------------------------------------------------
class Lite:
    """A `lite_bench serve` process: builds the model once, times N predictions per request."""

    def __init__(self, exe, model, threads, extra_env=None):
        env = dict(LITE_ENV, **(extra_env or {}))
        self.p = subprocess.Popen([exe, "serve", model, str(threads)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, env=env)
        line = self.p.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError(f"lite_bench serve {model} did not start: {line!r}")

    def run(self, n):
        self.p.stdin.write(f"{n}\n")
        self.p.stdin.flush()
        v = [float(x) for x in self.p.stdout.readline().split()]
        return [(v[i] / 1e3, v[i + 1] / 1e3) for i in range(0, len(v), 2)]  # (wall ms, cpu ms)

    def close(self):
        self.p.stdin.close()
        self.p.wait()


SPIN = False  # --spin: idle workers spin (libgomp's and ORT's default) instead of sleeping


def ort_session(model, threads):
    so = ort.SessionOptions()
    so.add_session_config_entry("session.intra_op.allow_spinning", "1" if SPIN else "0")
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def feeds_for(sess, seed=5):
    rng = np.random.default_rng(seed)
    return {i.name: rng.uniform(-1, 1, [d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
            for i in sess.get_inputs()}


class Ort:
    def __init__(self, model, threads):
        self.s = ort_session(model, threads)
        self.feeds = feeds_for(self.s)
        self.s.run(None, self.feeds)

    def run(self, n):
        out = []
        for _ in range(n):
            w0, c0 = time.perf_counter(), time.process_time()
            self.s.run(None, self.feeds)
            c1, w1 = time.process_time(), time.perf_counter()
            out.append(((w1 - w0) * 1e3, (c1 - c0) * 1e3))
        return out

    def close(self):
        pass


def check_outputs(exe, model, tol):
    """Lite and ORT on the same input: max abs difference of output 0 (must be within tol)."""
    sess = ort_session(model, 1)
    feeds = feeds_for(sess)
    want = sess.run(None, feeds)[0]
    with tempfile.TemporaryDirectory() as d:
        ins = []
        for k, (name, arr) in enumerate(feeds.items()):
            ins.append(os.path.join(d, f"in{k}.f32"))
            np.ascontiguousarray(arr, np.float32).tofile(ins[-1])
        out = os.path.join(d, "out.f32")
        for ext in ([".spore", ".onnx"] if os.path.exists(model[:-5] + ".spore") else [".onnx"]):
            subprocess.run([exe, "run", model[:-5] + ext, "1", *ins, "--out", out], check=True, env=LITE_ENV)
            err = float(np.max(np.abs(np.fromfile(out, np.float32).astype(np.float64) - want.reshape(-1))))
            print(f"  check {os.path.basename(model[:-5] + ext)}: max |Lite - ORT| = {err:.2e} (tolerance {tol:g})")
            if not err <= tol:
                raise SystemExit(f"{model[:-5] + ext}: Lite's output differs from ONNX Runtime's by {err:g} > {tol:g}")


def relative_error(exe, model, reference):
    """Lite's output 0 of `model` against `reference`'s on one input: max |a - b| / max |b|."""
    sess = ort_session(reference, 1)
    feeds = feeds_for(sess)
    outs = []
    with tempfile.TemporaryDirectory() as d:
        ins = []
        for k, arr in enumerate(feeds.values()):
            ins.append(os.path.join(d, f"in{k}.f32"))
            np.ascontiguousarray(arr, np.float32).tofile(ins[-1])
        for m in (model, reference):
            out = os.path.join(d, "out.f32")
            subprocess.run([exe, "run", m, "1", *ins, "--out", out], check=True, env=LITE_ENV)
            outs.append(np.fromfile(out, np.float32).astype(np.float64))
    return float(np.max(np.abs(outs[0] - outs[1])) / np.max(np.abs(outs[1])))


def interleave(engines, rounds, iters):
    """engines: name -> engine. Returns name -> (median wall ms, median cpu ms)."""
    samples = {k: [] for k in engines}
    names = list(engines)
    for r in range(rounds):
        for k in names[r % len(names):] + names[:r % len(names)]:
            samples[k] += engines[k].run(iters)
    return {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in samples.items()}


def startup_rows(exe, stem, threads, rounds):
    res = {"lite .spore": [], "lite .onnx": [], "ORT": []}
    for _ in range(rounds):
        for ext in (".spore", ".onnx"):
            out = subprocess.run([exe, "startup", stem + ext, str(threads)], check=True, capture_output=True, text=True,
                                 env=LITE_ENV).stdout.split()
            res["lite " + ext].append((float(out[0]) / 1e3, float(out[1]) / 1e3))
        w0, c0 = time.perf_counter(), time.process_time()
        s = ort_session(stem + ".onnx", threads)
        s.run(None, feeds_for(s))
        c1, w1 = time.process_time(), time.perf_counter()
        res["ORT"].append(((w1 - w0) * 1e3, (c1 - c0) * 1e3))
    return {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in res.items()}


def stripped_size(build):
    libs = {}
    for name in ("src/libspore_lite.a", "src/libspore_format.a", "src/libspore_core.a"):
        path = os.path.join(build, name)
        if not os.path.exists(path):
            continue
        with tempfile.TemporaryDirectory() as d:
            copy = os.path.join(d, "lib.a")
            shutil.copy(path, copy)
            subprocess.run(["strip", "--strip-unneeded", copy], check=True)
            libs[os.path.basename(name)] = (os.path.getsize(path), os.path.getsize(copy))
    return libs


# ---- main ---------------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build/release"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--only", choices=["mobilenet", "bert", "quantize", "startup"], action="append")
    ap.add_argument("--write-readme", action="store_true")
    ap.add_argument("--spin", action="store_true", help="let idle worker threads spin (both engines' default)")
    ap.add_argument("--isa", choices=sorted(ONEDNN_ISA), help="run Spore (and its oneDNN) at this SIMD level")
    a = ap.parse_args()
    if a.isa:
        LITE_ENV["SPORE_CPU_ISA"] = a.isa
        LITE_ENV["ONEDNN_MAX_CPU_ISA"] = ONEDNN_ISA[a.isa]
    global SPIN
    SPIN = a.spin
    # Idle workers sleep in both engines unless --spin: on a machine loaded past its core count a
    # spinning worker burns the time slice its busy partner needs (libgomp's spinning made Lite's
    # 2-thread MobileNetV2 100x slower at load 15 here; ONNX Runtime's slowed it too).
    LITE_ENV["OMP_WAIT_POLICY"] = "active" if a.spin else "passive"
    only = set(a.only or ["mobilenet", "bert", "quantize", "startup"])
    exe = os.path.join(a.build, "bench/lite_bench")
    if not os.path.exists(exe):
        sys.exit(f"{exe} is missing: cmake --build {a.build} --target lite_bench lite_models (configure with -DSPORE_BUILD_BENCH=ON)")
    models = os.path.join(a.build, "bench/lite_bench_models")
    if not os.path.exists(os.path.join(models, "mobilenetv2_b8.onnx")):
        maker = os.path.join(a.build, "bench/lite_models")
        if not os.path.exists(maker):
            sys.exit(f"{maker} is missing: cmake --build {a.build} --target lite_models")
        subprocess.run([maker, models], check=True, env=LITE_ENV)
    bert = os.path.join(models, "bert_layer.onnx")
    if not os.path.exists(bert):
        bert_layer(bert)
    load0 = open("/proc/loadavg").read().split()[:3]
    rows = []  # (row, lite wall, lite cpu, ort wall, ort cpu)
    quant = []  # lines about the int8 layer against float32

    if "mobilenet" in only:
        for b in (1, 8):
            check_outputs(exe, os.path.join(models, f"mobilenetv2_b{b}.onnx"), 1e-3)
        for b in (1, 8):
            stem = os.path.join(models, f"mobilenetv2_b{b}")
            for t in a.threads:
                eng = {"spore": Lite(exe, stem + ".spore", t), "onnx": Lite(exe, stem + ".onnx", t), "ort": Ort(stem + ".onnx", t)}
                med = interleave(eng, a.rounds, 3 if b == 1 else 1)
                for e in eng.values():
                    e.close()
                for kind in ("spore", "onnx"):
                    rows.append((f"MobileNetV2 b{b}, {t} thread{'s' * (t > 1)}, Lite on .{kind}", *med[kind], *med["ort"]))
                    print_row(rows[-1])
    if "bert" in only:
        check_outputs(exe, bert, 1e-3)
        for t in a.threads:
            eng = {"onnx": Lite(exe, bert, t), "ort": Ort(bert, t)}
            med = interleave(eng, a.rounds, 2)
            for e in eng.values():
                e.close()
            rows.append((f"BERT-base layer s128, {t} thread{'s' * (t > 1)}", *med["onnx"], *med["ort"]))
            print_row(rows[-1])
    if "quantize" in only:
        q = os.path.join(models, "bert_layer.int8.onnx")
        subprocess.run([os.path.join(a.build, "bin/spore"), "lite", "quantize", bert, "--out", q], check=True,
                       capture_output=True)
        check_outputs(exe, q, 2e-2)  # Lite and ORT on the same int8 file (their GELU and LayerNorm differ)
        err = relative_error(exe, q, bert)
        quant.append(f"int8 against float32 in Lite: max |y_int8 - y_f32| / max |y_f32| = {err * 100:.2f}% (target < 2%)")
        print(quant[-1])
        for t in a.threads:
            eng = {"f32": Lite(exe, bert, t), "int8": Lite(exe, q, t), "ort_f32": Ort(bert, t), "ort_int8": Ort(q, t)}
            med = interleave(eng, a.rounds, 2)
            for e in eng.values():
                e.close()
            rows.append((f"BERT-base layer s128 int8, {t} thread{'s' * (t > 1)}", *med["int8"], *med["ort_int8"]))
            print_row(rows[-1])
            up, ort_up = med["f32"][0] / med["int8"][0], med["ort_f32"][0] / med["ort_int8"][0]
            met = "" if t != 1 else (" (target 1.5x: met)" if up >= 1.5 else " (target 1.5x: **missed**)")
            quant.append(f"{t} thread{'s' * (t > 1)}: Lite int8 {up:.2f}x faster than Lite float32{met}; "
                         f"ONNX Runtime on the same file {ort_up:.2f}x faster than on float32")
            print(quant[-1])
        # Convolutions: MobileNetV2 b1 in both of `spore lite quantize`'s forms.
        mnv2 = os.path.join(models, "mobilenetv2_b1.onnx")
        forms = {}
        for form in ("dynamic", "qdq"):
            forms[form] = os.path.join(models, f"mobilenetv2_b1.{form}.onnx")
            subprocess.run([os.path.join(a.build, "bin/spore"), "lite", "quantize", mnv2, "--format", form, "--out",
                            forms[form]], check=True, capture_output=True)
            err = relative_error(exe, forms[form], mnv2)
            quant.append(f"MobileNetV2 b1, {form} int8 against float32 in Lite: max |y_int8 - y_f32| / max |y_f32| = "
                         f"{err * 100:.2f}%")
            print(quant[-1])
        for t in a.threads:
            eng = {"f32": Lite(exe, mnv2, t), "ort_f32": Ort(mnv2, t)}
            for form, path in forms.items():
                eng[form], eng["ort_" + form] = Lite(exe, path, t), Ort(path, t)
            med = interleave(eng, a.rounds, 3)
            for e in eng.values():
                e.close()
            for form in forms:
                rows.append((f"MobileNetV2 b1 int8 {form}, {t} thread{'s' * (t > 1)}", *med[form], *med["ort_" + form]))
                print_row(rows[-1])
                quant.append(f"MobileNetV2 b1 {form}, {t} thread{'s' * (t > 1)}: Lite int8 "
                             f"{med['f32'][0] / med[form][0]:.2f}x Lite float32; ONNX Runtime on the same file "
                             f"{med['ort_f32'][0] / med['ort_' + form][0]:.2f}x its float32")
                print(quant[-1])
    if "startup" in only:
        t = a.threads[0]
        med = startup_rows(exe, os.path.join(models, "mobilenetv2_b1"), t, a.rounds)
        for kind in (".spore", ".onnx"):
            rows.append((f"start-up MobileNetV2 b1, {t} thread{'s' * (t > 1)}, Lite {kind}", *med["lite " + kind], *med["ORT"]))
            print_row(rows[-1])
    libs = stripped_size(a.build)
    for name, (full, stripped) in libs.items():
        print(f"{name}: {full / 1e6:.2f} MB, stripped (--strip-unneeded) {stripped / 1e6:.2f} MB")
    load1 = open("/proc/loadavg").read().split()[:3]
    print(f"load average before {' '.join(load0)}, after {' '.join(load1)}")
    if a.write_readme:
        write_readme(rows, libs, load0, load1, a, quant)


def print_row(r):
    name, lw, lc, ow, oc = r
    print(f"{name:52s} Lite {lw:8.2f} ms (cpu {lc:8.2f})  ORT {ow:8.2f} ms (cpu {oc:8.2f})  ratio {ow / lw:5.2f} (cpu {oc / lc:5.2f})")


def write_readme(rows, libs, load0, load1, a, quant):
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
    flags = open("/proc/cpuinfo").read()
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE"
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    begin, end = markers(a.isa)
    level = (f"; Spore at SIMD level {a.isa} (SPORE_CPU_ISA, ONEDNN_MAX_CPU_ISA), ONNX Runtime at the machine's own"
             if a.isa else "")
    out = [begin, "", f"Measured {date} at commit {commit}: {os.cpu_count()} vCPU {cpu} ({isa}{level}), onnxruntime "
           f"{ort.__version__} (PyPI), {a.rounds} interleaved rounds, medians; load average {' '.join(load0)} before, "
           f"{' '.join(load1)} after (the machine is shared: CPU time is given beside wall time); idle workers "
           f"{'spin' if a.spin else 'sleep'} in both engines. Ratio = ORT / Lite (target >= 1.0 for latency rows).", "",
           "| row | Lite wall ms | Lite CPU ms | ORT wall ms | ORT CPU ms | ratio wall | ratio CPU | target met |",
           "|---|---|---|---|---|---|---|---|"]
    missed = []
    for name, lw, lc, ow, oc in rows:
        # Met on wall time; "CPU only" when the wall ratio missed but the CPU-time ratio did not
        # (on this loaded machine the wall clock of one round can be mostly waiting for a core).
        target = "-" if name.startswith("start-up") else (
            "yes" if ow / lw >= 1.0 else "CPU only" if oc / lc >= 1.0 else "**no**")
        if target in ("**no**", "CPU only"):
            missed.append(f"{name} ({ow / lw:.2f}x wall, {oc / lc:.2f}x CPU)")
        out.append(f"| {name} | {lw:.2f} | {lc:.2f} | {ow:.2f} | {oc:.2f} | {ow / lw:.2f} | {oc / lc:.2f} | {target} |")
    out.append("")
    for name, (full, stripped) in libs.items():
        out.append(f"- `{name}`: {full / 1e6:.2f} MB, {stripped / 1e6:.2f} MB stripped (`strip --strip-unneeded`)")
    if quant:
        out += ["", "`spore lite quantize` (issue 26, item 5): the BERT-base layer (dynamic), MobileNetV2 b1 (both forms):", ""] + [f"- {q}" for q in quant]
    out += ["", "Rows missing the 1.0x target on wall time: " + ("; ".join(missed) if missed else "none") + ".", "", end]
    path = os.path.join(ROOT, "bench/README.md")
    text = open(path).read()
    block = "\n".join(out)
    if begin in text and end in text:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    elif a.isa and END in text:  # a level's first table goes right after the machine's own
        at = text.index(END) + len(END)
        text = text[:at] + f"\n\nThe same rows with Spore at SIMD level {a.isa}:\n\n" + block + text[at:]
    else:
        text += "\n## Lite against ONNX Runtime (issue 10)\n\n" + block + "\n"
    open(path, "w").write(text)
    print(f"wrote the table into {path}")


if __name__ == "__main__":
    main()
