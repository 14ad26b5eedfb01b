"""Decode on a busy machine: Spore against llama.cpp with two busy loops beside them (issue 28,
NOTE [Threads that sleep]).

Two processes that spin forever (`while True: pass`) take the machine's cores for the whole run;
then `spore bench-llm` and llama.cpp's `llama-bench` measure tg<G> (G one-token decode passes) on
the same GGUF file at the same thread count, in interleaved rounds (the order flips every round),
and Spore also measures the same test on the quiet machine (the loops stopped) in the same rounds.
The environment is passed through as it is: no OMP_WAIT_POLICY is set for either engine unless
the caller's environment has one (--policy sets it for both), because what the row measures is
how each behaves by default beside other work. Figures are medians over the rounds.

    python3 bench/busy_decode_bench.py [--rounds 3] [--threads 2] [--model FILE] [--policy passive]
                                       [--isa native|avx2]

--isa avx2 runs Spore with SPORE_CPU_ISA=avx2 and the llama-bench built for AVX2 alone
(llm_bench.ISAS), so the row exists at both ISA levels.

Targets (issue 28): busy decode >= 1.5x llama.cpp's busy decode, and >= 0.5x Spore's own quiet
decode. Prints one table row per thread count; records nothing (copy the row into bench/README.md
with the machine and its load).
"""
import argparse
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llm_bench  # noqa: E402  (the two engines' runners and the peer's build)


def busy_loops(n):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop(procs):
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def env_with(base, policy, spore_isa=None):
    env = dict(base)
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    env.pop("SPORE_CPU_ISA", None)
    if spore_isa:
        env["SPORE_CPU_ISA"] = spore_isa
    return env


def spore_tg(spore, model, threads, tg, env):
    out = llm_bench.run([spore, "bench-llm", "--model", model, "--threads", str(threads), "--prompt-tokens", "8",
                         "--gen-tokens", str(tg), "--repetitions", "1", "--json", "--allow-unverified"], env=env)
    import json
    return next(r["tokens_per_s"] for r in json.loads(out) if r["test"].startswith("tg"))


def llama_tg(model, threads, tg, env, isa):
    import json
    out = llm_bench.run([llm_bench.llama_bench_path(isa), "-m", model, "-t", str(threads), "-p", "0", "-n", str(tg), "-r", "1",
                         "-o", "json"], env=env)
    return next(r["avg_ts"] for r in json.loads(out) if r["n_gen"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spore", default=os.path.join(llm_bench.ROOT, "build", "release", "bin", "spore"))
    ap.add_argument("--model", default=llm_bench.SMOLLM2_Q4_1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="2")
    ap.add_argument("--gen-tokens", type=int, default=64)
    ap.add_argument("--busy", type=int, default=2, help="busy-loop processes beside the engines")
    ap.add_argument("--policy", default="", help="OMP_WAIT_POLICY for both engines (default: the environment's)")
    ap.add_argument("--isa", choices=sorted(llm_bench.ISAS), default="native")
    a = ap.parse_args()
    llm_bench.ensure_llama_bench(a.isa)
    env = env_with(os.environ, a.policy, llm_bench.ISAS[a.isa]["spore_isa"])
    peer = env_with(llm_bench.peer_env(), a.policy)
    print(f"ISA level: {a.isa} ({llm_bench.ISAS[a.isa]['name']})")
    print("| model | threads | Spore quiet | Spore busy | llama.cpp busy | busy / llama.cpp (>= 1.5) | busy / quiet (>= 0.5) |")
    print("|---|---|---|---|---|---|---|")
    for threads in [int(t) for t in a.threads.split(",")]:
        quiet, busy, peer_busy = [], [], []
        for r in range(a.rounds):
            quiet.append(spore_tg(a.spore, a.model, threads, a.gen_tokens, env))
            loops = busy_loops(a.busy)
            try:
                runs = [lambda: busy.append(spore_tg(a.spore, a.model, threads, a.gen_tokens, env)),
                        lambda: peer_busy.append(llama_tg(a.model, threads, a.gen_tokens, peer, a.isa))]
                for f in (runs if r % 2 == 0 else runs[::-1]):
                    f()
            finally:
                stop(loops)
        q, b, p = statistics.median(quiet), statistics.median(busy), statistics.median(peer_busy)
        print(f"| {os.path.basename(a.model)} | {threads} | {q:.1f} | {b:.1f} | {p:.1f} | {b / p:.2f}x | {b / q:.2f}x |")


if __name__ == "__main__":
    main()
