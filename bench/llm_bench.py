"""Spore against llama.cpp's llama-bench on the same GGUF files, in the same run (NOTE [LLM benchmark]).

The peer is llama.cpp's own `llama-bench`, built here (once, into build/peers/) from the llama.cpp
sources that the PyPI source distribution of llama-cpp-python carries (vendor/llama.cpp); it is
never linked into Spore. Each ISA table has its own pair (--isa): `native` runs Spore at the level
cpuid picks against a GGML_NATIVE llama-bench (build/peers/llama-build); `avx2` runs Spore with
SPORE_CPU_ISA=avx2 against a llama-bench built with AVX/AVX2/FMA/F16C and every AVX-512 option off
(build/peers/llama-build-avx2), so an AVX-512 machine also produces the AVX2 table. Spore's side is `spore bench-llm`, which measures
the same two tests: pp<P> (one forward pass over P prompt tokens) and tg<G> (G one-token passes).
For each model file and thread count the two engines run in interleaved rounds (the order flips
every round), and a read-bandwidth probe (bench/peers/read_bw.c, a 512 MiB sum) runs in the same
rounds, so the roofline and the engines see the same machine load. Figures are medians over the
rounds. Decode's roofline is bandwidth / bytes read per token (the weight bytes plus the KV cache
rows attention reads, on average over the G positions). Peak resident memory of each process comes
from wait4().

    .venv-peers/bin/python tools/make_bench_models.py        # the model files, once
    python3 bench/llm_bench.py [--isa native|avx2] [--rounds 3] [--threads 1,2] [--write-readme]

Prints the table; --write-readme replaces that ISA's table in bench/README.md (between the
llm-bench markers for native, llm-bench-avx2 for avx2) and writes outputs/llm_bench[-avx2].json
with every sample.
"""
import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS = os.path.join(ROOT, "build", "peers")
sys.path.insert(0, os.path.join(ROOT, "tools"))
from llama_cpp_sdist import llama_build_dir, llama_tool  # noqa: E402
MODELS = os.path.join(ROOT, "build", "bench-models")
SMOLLM2_Q4_1 = os.path.join(ROOT, "models", "smollm2-135m-instruct", "SmolLM2-135M-Instruct.Q4_1.gguf")
READ_BW = os.path.join(PEERS, "read_bw")
# Per ISA table: Spore's SPORE_CPU_ISA (None: cpuid's level), the README markers, and how the
# machine line names the pair; the peer's build flags are llama_cpp_sdist.ISA_FLAGS[isa].
ISAS = {
    "native": {"spore_isa": None, "marker": "llm-bench", "json": "llm_bench.json",
               "name": "Spore at cpuid's SIMD level; llama-bench GGML_NATIVE"},
    "avx2": {"spore_isa": "avx2", "marker": "llm-bench-avx2", "json": "llm_bench-avx2.json",
             "name": "ISA avx2: Spore with SPORE_CPU_ISA=avx2; llama-bench built with GGML_NATIVE=OFF, "
                     "AVX/AVX2/FMA/F16C on, every AVX-512 option off"},
}


def llama_bench_path(isa):
    return os.path.join(llama_build_dir(PEERS, isa), "bin", "llama-bench")


def markers(isa, row_set="main"):
    m = ISAS[isa]["marker"] + ("" if row_set == "main" else f"-{row_set}")
    return f"<!-- {m}:begin -->", f"<!-- {m}:end -->"


def default_models(qwen_pp, moe=False, row_set="main"):
    """(label, type, file, prompt tokens). Set "main", the issue 28 rows: SmolLM2-135M Q4_1 / Q8_0 /
    F16 and the Qwen2.5-0.5B-shaped F16 (`spore convert`) with its Q8_0 / Q4_0 / Q4_K_M written by
    llama.cpp's `llama-quantize` from that F16 (tools/make_bench_models.py). SmolLM2 prefills
    --prompt-tokens (512), the Qwen-shaped model --qwen-prompt-tokens (128, the size of the issue's
    reference figures; 512 on a quiet machine). moe: also the Qwen3-30B-A3B-routed rows. Set
    "types", issue 27's item 6: the Qwen-shaped model as Q5_0, Q3_K_M, IQ4_XS and Q4_K_M from
    llama-quantize, and the Qwen3-30B-A3B-routed model."""
    rows = []
    if row_set == "types":
        for t in ("q5_0", "q3_k_m", "iq4_xs", "q4_k_m"):
            rows.append(("Qwen2.5-0.5B shape", t.upper(), os.path.join(MODELS, f"qwen2.5-0.5b-shape-{t}.gguf"), qwen_pp))
        moe = True
    else:
        rows.append(("SmolLM2-135M", "Q4_1", SMOLLM2_Q4_1, None))
        for t in ("Q8_0", "F16"):
            rows.append(("SmolLM2-135M", t, os.path.join(MODELS, f"SmolLM2-135M-Instruct.{t}.gguf"), None))
        for t in ("f16", "q8_0", "q4_0", "q4_k_m"):
            rows.append(("Qwen2.5-0.5B shape", t.upper(), os.path.join(MODELS, f"qwen2.5-0.5b-shape-{t}.gguf"), qwen_pp))
    if moe:  # Qwen3-30B-A3B's routing (128 experts, top 8) at hidden 512 (tools/make_bench_models.py)
        for t in ("f16", "q8_0", "q4_k"):
            rows.append(("Qwen3-30B-A3B routing", t.upper(),
                         os.path.join(MODELS, f"qwen3-30b-a3b-routing-shape-{t}.gguf"), qwen_pp))
    return rows


def run(cmd, env=None):
    """Runs cmd; returns its stdout (exits with its stderr when it fails)."""
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return p.stdout


def run_rss(cmd, env=None):
    """Runs cmd and returns (stdout, peak RSS in bytes) from wait4()."""
    import tempfile
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if p.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{err.read()[-2000:]}")
        return out.read(), ru.ru_maxrss * 1024


def peer_env():
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)  # the environment's trap; only for the peer's command
    return env


def ensure_llama_bench(isa):
    """The ISA's llama-bench, built from llama-cpp-python's sdist into build/peers/ when missing."""
    pip = os.path.join(ROOT, ".venv-peers", "bin", "pip")
    llama_tool(PEERS, [pip if os.path.exists(pip) else "pip"], "llama-bench", isa)


def ensure_read_bw():
    src = os.path.join(ROOT, "bench", "peers", "read_bw.c")
    if not os.path.exists(READ_BW) or os.path.getmtime(READ_BW) < os.path.getmtime(src):
        subprocess.run(["cc", "-O3", "-march=native", "-fopenmp", src, "-o", READ_BW], check=True)


def gguf_kv_bytes_per_token(path):
    """KV cache bytes one token occupies (f16 keys and values), from the GGUF metadata."""
    try:
        import gguf
    except ImportError:
        return None
    r = gguf.GGUFReader(path)
    arch = r.fields["general.architecture"].contents()
    f = lambda k: int(r.fields[f"{arch}.{k}"].contents())
    layers, heads = f("block_count"), f("attention.head_count")
    kv = f("attention.head_count_kv") if f"{arch}.attention.head_count_kv" in r.fields else heads
    dim = f("embedding_length") // heads
    return layers * kv * dim * 2 * 2


def spore_bench(spore, path, threads, pp, tg, isa):
    env = dict(os.environ, OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "passive"))
    env.pop("SPORE_CPU_ISA", None)
    if ISAS[isa]["spore_isa"]:
        env["SPORE_CPU_ISA"] = ISAS[isa]["spore_isa"]
    out, rss = run_rss([spore, "bench-llm", "--model", path, "--threads", str(threads), "--prompt-tokens", str(pp),
                        "--gen-tokens", str(tg), "--repetitions", "1", "--json", "--allow-unverified"], env=env)
    rows = json.loads(out)
    return {r["test"]: r["tokens_per_s"] for r in rows}, rss, rows[0]["weights_bytes"]


def llama_bench(path, threads, pp, tg, isa):
    env = peer_env()
    env.setdefault("OMP_WAIT_POLICY", "passive")
    out, rss = run_rss([llama_bench_path(isa), "-m", path, "-t", str(threads), "-p", str(pp), "-n", str(tg), "-r", "1", "-o", "json"],
                       env=env)
    got = {}
    for r in json.loads(out):
        test = f"pp{r['n_prompt']}" if r["n_prompt"] else f"tg{r['n_gen']}"
        got[test] = r["avg_ts"]
    return got, rss


def read_bw(threads):
    out = run([READ_BW, "3"], env=dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_PROC_BIND="false"))
    return float(out.strip())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spore", default=os.path.join(ROOT, "build", "release", "bin", "spore"))
    ap.add_argument("--isa", choices=sorted(ISAS), default="native",
                    help="native: both at the machine's best; avx2: Spore's AVX2 level against an AVX2 llama-bench")
    ap.add_argument("--moe", action="store_true", help="also the Qwen3-30B-A3B-routed rows (not in the issue's table)")
    ap.add_argument("--set", choices=["main", "types"], default="main", dest="row_set",
                    help="main: issue 28's rows; types: issue 27's type rows (Q5_0, Q3_K_M, IQ4_XS, Q4_K_M, MoE), "
                         "their own README table")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--gen-tokens", type=int, default=128)
    ap.add_argument("--qwen-prompt-tokens", type=int, default=128)
    ap.add_argument("--only", default="", help="comma-separated substrings: only model rows whose label holds one")
    ap.add_argument("--write-readme", action="store_true")
    a = ap.parse_args()
    ensure_llama_bench(a.isa)
    ensure_read_bw()
    models = [m for m in default_models(a.qwen_prompt_tokens, a.moe, a.row_set) if os.path.exists(m[2])]
    missing = [m[2] for m in default_models(a.qwen_prompt_tokens, a.moe, a.row_set) if not os.path.exists(m[2])]
    for m in missing:
        print(f"missing {m}: .venv-peers/bin/python tools/make_bench_models.py")
    if a.only:
        keys = [k.strip().lower() for k in a.only.split(",")]
        models = [m for m in models if any(k in f"{m[0]} {m[1]}".lower() for k in keys)]
    threads = [int(t) for t in a.threads.split(",")]
    tg = f"tg{a.gen_tokens}"
    started = datetime.datetime.now(datetime.timezone.utc)
    loads = [os.getloadavg()[0]]
    samples = {}  # (label, type, threads) -> {"spore": {pp: [], tg: []}, "llama": {...}, "bw": [], "rss": {...}}
    for rnd in range(a.rounds):
        for name, qtype, path, model_pp in models:
            n_pp = model_pp or a.prompt_tokens
            pp = f"pp{n_pp}"
            for t in threads:
                s = samples.setdefault((name, qtype, t), {"spore": {pp: [], tg: []}, "llama": {pp: [], tg: []}, "bw": [],
                                                         "rss_spore": 0, "rss_llama": 0, "path": path, "pp": pp})
                order = ("spore", "llama") if rnd % 2 == 0 else ("llama", "spore")
                for who in order:
                    if who == "spore":
                        got, rss, wbytes = spore_bench(a.spore, path, t, n_pp, a.gen_tokens, a.isa)
                        s["weights_bytes"] = wbytes
                        s["rss_spore"] = max(s["rss_spore"], rss)
                    else:
                        got, rss = llama_bench(path, t, n_pp, a.gen_tokens, a.isa)
                        s["rss_llama"] = max(s["rss_llama"], rss)
                    for k in (pp, tg):
                        s[who][k].append(got[k])
                s["bw"].append(read_bw(t))
                loads.append(os.getloadavg()[0])
                print(f"round {rnd + 1}/{a.rounds} {name} {qtype} {t} thr: spore {s['spore'][pp][-1]:.1f}/{s['spore'][tg][-1]:.1f}"
                      f" llama.cpp {s['llama'][pp][-1]:.1f}/{s['llama'][tg][-1]:.1f} t/s (pp/tg), read {s['bw'][-1]:.1f} GB/s",
                      flush=True)
    rows = []
    for (name, qtype, t), s in samples.items():
        med = lambda v: statistics.median(v)
        pp = s["pp"]
        kv = gguf_kv_bytes_per_token(s["path"]) or 0
        # tg from position 0: attention reads on average (G - 1) / 2 earlier rows per token.
        bytes_per_token = s["weights_bytes"] + kv * (a.gen_tokens - 1) / 2
        bw = med(s["bw"]) * 1e9
        roof = bw / bytes_per_token
        r = {"model": name, "type": qtype, "threads": t, "pp": pp, "file": os.path.relpath(s["path"], ROOT),
             "spore_pp": med(s["spore"][pp]), "llama_pp": med(s["llama"][pp]),
             "spore_tg": med(s["spore"][tg]), "llama_tg": med(s["llama"][tg]),
             "read_gbs": med(s["bw"]), "roofline_tg": roof,
             "rss_spore_mib": s["rss_spore"] / 2**20, "rss_llama_mib": s["rss_llama"] / 2**20, "samples": s["spore"],
             "llama_samples": s["llama"], "bw_samples": s["bw"]}
        r["pp_ratio"] = r["spore_pp"] / r["llama_pp"]
        r["tg_ratio"] = r["spore_tg"] / r["llama_tg"]
        r["spore_roof"] = r["spore_tg"] / roof
        r["llama_roof"] = r["llama_tg"] / roof
        # Decode target: 1.2x llama.cpp or 90% of the roofline, whichever is lower.
        r["tg_target"] = min(1.2 * r["llama_tg"], 0.9 * roof)
        r["pp_met"] = r["pp_ratio"] >= 1.2
        r["tg_met"] = r["spore_tg"] >= r["tg_target"]
        rows.append(r)
    finished = datetime.datetime.now(datetime.timezone.utc)
    table = render(rows, a, started, finished, loads)
    print(table)
    if a.write_readme:
        os.makedirs(os.path.join(ROOT, "outputs"), exist_ok=True)
        suffix = "" if a.row_set == "main" else f"-{a.row_set}"
        with open(os.path.join(ROOT, "outputs", ISAS[a.isa]["json"].replace(".json", f"{suffix}.json")), "w") as f:
            json.dump({"isa": a.isa, "started": started.isoformat(), "finished": finished.isoformat(), "loadavg": loads,
                       "rows": rows}, f, indent=1)
        readme = os.path.join(ROOT, "bench", "README.md")
        text = replace_table(open(readme).read(), a.isa, table, a.row_set)
        open(readme, "w").write(text)
        print(f"wrote the table into {readme}")
    return 0


def replace_table(text, isa, table, row_set="main"):
    """text with the ISA's table (of the row set) between its markers; markers not there yet go
    after the native table of the set (or at the end)."""
    begin, end = markers(isa, row_set)
    block = f"{begin}\n{table}\n{end}"
    if begin in text:
        return re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: block, text, flags=re.S)
    native_end = markers("native", row_set)[1]
    if isa != "native" and native_end in text:
        at = text.index(native_end) + len(native_end)
        return text[:at] + "\n\n" + block + text[at:]
    return text + "\n" + block + "\n"


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def render(rows, a, started, finished, loads):
    lines = [f"Machine ({a.isa} table): {cpu_name()}, {os.cpu_count()} cores; {started:%Y-%m-%d %H:%M}-{finished:%H:%M} UTC; "
             f"load average (1 min) {min(loads):.1f}-{max(loads):.1f} during the run; {a.rounds} interleaved rounds, "
             f"medians; prefill test ppN as named per row, decode tg{a.gen_tokens}; llama-bench from llama-cpp-python's sdist "
             f"(vendor/llama.cpp); {ISAS[a.isa]['name']}; both with OMP_WAIT_POLICY=passive.", "",
             "| model | type | thr | test | prefill spore | prefill llama.cpp | ratio | decode spore | decode llama.cpp | ratio "
             "| read GB/s | roofline t/s | spore % roof | llama.cpp % roof | targets (pp, tg) | peak RSS spore / llama.cpp MiB |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['type']} | {r['threads']} | {r['pp']} | {r['spore_pp']:.1f} | {r['llama_pp']:.1f} | "
                     f"{r['pp_ratio']:.2f}x | {r['spore_tg']:.1f} | {r['llama_tg']:.1f} | {r['tg_ratio']:.2f}x | "
                     f"{r['read_gbs']:.1f} | {r['roofline_tg']:.1f} | {100 * r['spore_roof']:.0f}% | "
                     f"{100 * r['llama_roof']:.0f}% | {'met' if r['pp_met'] else 'MISSED'}, "
                     f"{'met' if r['tg_met'] else 'MISSED'} | {r['rss_spore_mib']:.0f} / {r['rss_llama_mib']:.0f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
