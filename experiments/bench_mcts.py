"""Our MCTS against mctx: simulations per second at batch 256 and 32 simulations.

Same game (the default 5x5 pursuit-evasion, `pe.Params()`), same 3x128 network, same
recurrent_fn; medians over repeated calls after compilation. The calls are interleaved
in rounds (each round times every function `repeats` times, in an order that rotates
from round to round), so that a change in the machine's load during the run hits all
four alike. The first call of each function, with its tracing and compilation, is timed
apart and printed beside its median. Prints our speed-up over mctx (mctx's median time
divided by ours: 2x means our search runs twice as many simulations per second), and its
spread over the rounds (a shared machine's load shifts it: mctx's larger ops run on two
threads and slow down more than ours when the other core is busy).

    python experiments/bench_mcts.py [--batch 256] [--sims 32] [--repeats 4] [--rounds 5]
                                     [--only both|gumbel|puct] [--waves] [--out PATH]
                                     [--processes N] [--publish] [--quick]

It prints what it ran on first (CPU, cores, load average, versions: the ratio moves
with the machine's load; under `taskset -c 1`
XLA:CPU sees one core, splits no op over two threads, and mctx runs at its fastest) and writes the same
with every median, round and ratio to `results/local/bench_mcts.json` on CPU,
`results/local/bench_mcts_<backend>.json` on an accelerator (ignored by git, so a trial
run replaces nothing; `--publish`: the same names directly under `results/`, the
tracked files the README cites; `--out` wins over both).

`--quick` is a smoke run (batch 16, 8 simulations, 1 round of 1 call; any of those
given explicitly wins) that checks the script and its report in well under a minute,
too short for its figures to mean anything, and writes
`results/bench_mcts_quick.json` (ignored by git).

It also times the model alone (the root call and `sims` calls of the same
recurrent_fn on the same rows, in one jitted loop) and prints each search's overhead,
its time minus the model's, and the ratio of those overheads: the part of the call
that is the search's own work.

`--processes N` runs the whole benchmark in N fresh processes, one after another, and
prints each ratio's median, minimum and maximum across them: both searches' times
move by 10-20% from one process to the next on a shared machine, so one process's
ratio is one sample.

`--waves` adds our Gumbel search run in waves (`gumbel_policy(wave_sizes="auto")`, the
same visit counts in fewer, wider steps) and prints its ratio to mctx as well.

`--sweep 1,9,16,32` instead times our Gumbel search and the model alone at each of
those numbers of simulations and prints the overhead (search minus model) at each,
and per simulation between consecutive counts: where in the search the overhead
grows (the first Sequential Halving round, whose walks stop at the root, or the
later ones, which walk down the tree).
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import os
import statistics
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import mctx

from jaxsolve import mcts
from jaxsolve.alphazero import network, selfplay
from jaxsolve.games import pursuit_evasion as pe
from machine import (RESULTS, add_publish_option, machine_info,  # noqa: E402
                     refuse_published_smoke_run, report_path, version,
                     where_written)  # experiments/machine.py


def _seconds(fns, params, repeats, rounds, compile_s=None):
    """{name: fn(params, key)} -> {name: [[seconds per call] per round]}, interleaved,
    the functions' order rotating from round to round (so that an order effect, a warm
    cache or a clock change after the previous call, does not always fall on the same
    side). The keys are made before timing: making one is a host-side call of ~40 us.
    The first call of each function (trace, compilation and one run) is timed apart
    and stored in `compile_s` when a dict is given."""
    keys = [jax.block_until_ready(jax.random.PRNGKey(i)) for i in range(repeats)]
    for name, fn in fns.items():
        t = time.perf_counter()
        jax.block_until_ready(fn(params, keys[0]))
        if compile_s is not None:
            compile_s[name] = time.perf_counter() - t
    times = {name: [] for name in fns}
    order = list(fns)
    for r in range(rounds):
        for name in order[r % len(order):] + order[:r % len(order)]:
            fn = fns[name]
            times[name].append([])
            for key in keys:
                t = time.perf_counter()
                jax.block_until_ready(fn(params, key))
                times[name][-1].append(time.perf_counter() - t)
    return times


def _ratio_report(label, ours, theirs):
    """Our speed-up: mctx's median time over ours, over all calls, and its spread over rounds (each round's own
    ratio of medians: the machine's load changes between rounds, not within one).
    Returns {"ratio", "per_round": sorted round ratios}."""
    flat = lambda ts: [t for r in ts for t in r]
    ratio = statistics.median(flat(theirs)) / statistics.median(flat(ours))
    rounds = sorted(statistics.median(t) / statistics.median(o) for o, t in zip(ours, theirs))
    print(f"speed-up {label} (mctx's median time / ours; above 1: ours faster): {ratio:.3f}x  "
          f"(per round: min {rounds[0]:.2f}, "
          f"median {statistics.median(rounds):.2f}, max {rounds[-1]:.2f}; "
          f"{len(rounds)} rounds)")
    return {"ratio": ratio, "per_round": rounds}


def _machine():
    """What the run is on, printed first and written to the report."""
    info = {**machine_info(), "mctx": version("mctx"), "flax": version("flax")}
    print(f"machine: {info['cpu']}, {info['cores']} cores, load "
          f"{', '.join(f'{x:.2f}' for x in info['load_average'])}; jax {info['jax']}, "
          f"jaxlib {info['jaxlib']}, mctx {info['mctx']}, backend {info['backend']}",
          flush=True)
    return info


def output_path(args, backend):
    """--out; a --quick run's own file under results/ (git-ignored: results/*quick*);
    results/ with --publish; else results/local/."""
    name = "bench_mcts" + ("_sweep" if args.sweep else "") + ("_quick" if args.quick else "")
    name = f"{name}.json" if backend == "cpu" else f"{name}_{backend}.json"
    return report_path(name, args.out, args.publish, RESULTS / name if args.quick else None)


def _write(path, report):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {where_written(path)}", flush=True)


def _counts(text):
    try:
        counts = [int(c) for c in text.split(",") if c.strip()]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"--sweep wants positive counts like 1,9,16,32, "
                                         f"got {text!r}")
    return sorted(set(counts))


def _sweep(args, ours_gumbel, model_only, params):
    """Our Gumbel search's overhead beyond the model at each count of `args.sweep`."""
    fns = {}
    for n in args.sweep:
        fns[("ours", n)] = jax.jit(functools.partial(ours_gumbel, sims=n))
        fns[("model", n)] = jax.jit(functools.partial(model_only, sims=n))
    times = _seconds(fns, params, args.repeats, args.rounds)
    med = {name: statistics.median([t for r in ts for t in r]) for name, ts in times.items()}
    results, prev = {}, None
    for n in args.sweep:
        over = med[("ours", n)] - med[("model", n)]
        results[n] = over
        step = "" if prev is None else (f"  {(over - prev[1]) / (n - prev[0]) * 1e6:6.1f} us "
                                        f"per simulation {prev[0] + 1}-{n}")
        print(f"{n:3d} simulations: ours {med[('ours', n)] * 1e3:6.3f} ms, model "
              f"{med[('model', n)] * 1e3:6.3f} ms, overhead {over * 1e3:6.3f} ms{step}",
              flush=True)
        prev = (n, over)
    return results


# The sizes of a full run, and of a --quick one: a smoke run (the script and its report
# work; its ratio means nothing) that finishes within a minute on a 2-core CPU, most of
# it compilation. An option given explicitly wins over either.
FULL = {"batch": 256, "sims": 32, "repeats": 4, "rounds": 5}
QUICK = {"batch": 16, "sims": 8, "repeats": 1, "rounds": 1}


def _without_option(argv, name, takes_value=True):
    """argv without `name` (and its value), in either `--name V` or `--name=V` form."""
    out, skip = [], False
    for word in argv:
        if skip:
            skip = False
        elif word == name:
            skip = takes_value
        elif not word.startswith(name + "="):
            out.append(word)
    return out


def _across_processes(args, argv):
    """Runs this script `args.processes` times in fresh processes, one after another
    (so they never share the cores), and summarises each ratio across them."""
    import subprocess  # noqa: PLC0415
    import tempfile  # noqa: PLC0415

    info = _machine()
    child_argv = _without_option(_without_option(argv, "--processes"), "--out")
    reports = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.processes):
            out = Path(tmp) / f"run{i}.json"
            print(f"--- process {i + 1} of {args.processes}", flush=True)
            subprocess.run([sys.executable, __file__, *child_argv, "--out", str(out)],
                           check=True)
            reports.append(json.loads(out.read_text()))
    summary = {}
    print(f"--- across {args.processes} processes:")
    for key in sorted({k for r in reports for k in r if k.startswith("ratio_")}):
        ratios = [r[key]["ratio"] for r in reports if key in r]
        summary[key] = {"median": statistics.median(ratios), "min": min(ratios),
                        "max": max(ratios), "ratios": ratios}
        line = (f"{key:19s} median {statistics.median(ratios):.3f}x, min {min(ratios):.3f}x, "
                f"max {max(ratios):.3f}x")
        print(line)
    for name in ("ours_gumbel", "mctx_gumbel", "model_only"):
        ms = [r["calls"][name]["ms"] for r in reports if name in r.get("calls", {})]
        if ms:
            summary[f"{name}_ms"] = {"median": statistics.median(ms), "min": min(ms),
                                     "max": max(ms)}
            print(f"{name:19s} {min(ms):.2f}-{max(ms):.2f} ms (median "
                  f"{statistics.median(ms):.2f})")
    report = {"machine": info, "argv": argv, "processes": args.processes,
              "summary": summary, "runs": reports,
              "load_average_after": list(os.getloadavg())}
    _write(output_path(args, info["backend"]), report)
    return summary


def parse_args(argv=None):
    """The command line, with a full run's sizes (or --quick's) where none was given;
    a bad combination exits with status 2 before anything runs."""
    ap = argparse.ArgumentParser(
        description="Our MCTS against mctx, interleaved in one process; run it under "
                    "`taskset -c 1` to time both on one core.")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: batch 16, 8 simulations, 1 round of 1 call (an explicit "
                         "--batch, --sims, --repeats or --rounds wins)")
    ap.add_argument("--batch", type=int, default=None,
                    help="root states per call (default 256; --quick 16)")
    ap.add_argument("--sims", type=int, default=None,
                    help="simulations per search (default 32; --quick 8)")
    ap.add_argument("--repeats", type=int, default=None,
                    help="calls of each function per round (default 4; --quick 1)")
    ap.add_argument("--rounds", type=int, default=None,
                    help="rounds, each timing every function in turn (default 5; --quick 1)")
    ap.add_argument("--only", choices=("both", "gumbel", "puct"), default="both",
                    help="which searches to time (default both)")
    ap.add_argument("--waves", action="store_true", help="also time Gumbel in waves")
    ap.add_argument("--sweep", type=_counts, default=None,
                    help="comma-separated simulation counts: overhead at each (ours only)")
    ap.add_argument("--out", default=None,
                    help="JSON report (default results/local/bench_mcts.json on CPU, "
                         "results/local/bench_mcts_<backend>.json on an accelerator, "
                         "bench_mcts_sweep*.json with --sweep; with --publish the same "
                         "names directly under results/; with --quick "
                         "results/bench_mcts_quick*.json)")
    add_publish_option(ap)
    ap.add_argument("--processes", type=int, default=1,
                    help="run the whole benchmark in N fresh processes, one after another, "
                         "and report the spread of the ratios across them (default 1; "
                         "both searches' times move 10-20%% from one process to the next)")
    args = ap.parse_args(argv)
    refuse_published_smoke_run(ap, args)
    for name, value in (QUICK if args.quick else FULL).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    for name in ("batch", "sims", "repeats", "rounds", "processes"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    if args.processes > 1 and args.sweep:
        ap.error("--processes does not combine with --sweep")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.processes > 1:
        return _across_processes(args, sys.argv[1:] if argv is None else list(argv))
    info = _machine()
    report = {"machine": info, "argv": sys.argv[1:] if argv is None else list(argv),
              "batch": args.batch, "sims": args.sims, "repeats": args.repeats,
              "rounds": args.rounds, "quick": args.quick}
    out_path = output_path(args, info["backend"])
    env = pe.Params()
    graphdef, params = network.init_params(env.obs_size)
    hidden = "x".join(map(str, inspect.signature(network.init_params).parameters["hidden"].default))
    print(f"setting: pursuit-evasion {env.grid_size}x{env.grid_size}, network {hidden} MLP, "
          f"batch {args.batch}, {args.sims} simulations, float32; ms/call are medians "
          f"after compilation over {args.rounds} rounds x {args.repeats} calls, "
          "the searches interleaved", flush=True)
    state = jax.vmap(lambda k: pe.init(env, k))(jax.random.split(jax.random.PRNGKey(0), args.batch))
    rec = functools.partial(selfplay.recurrent_fn, graphdef, env)

    def mctx_rec(p, k, a, s):
        out, nxt = rec(p, k, a, s)
        return mctx.RecurrentFnOutput(reward=out.reward, discount=out.discount,
                                      prior_logits=out.prior_logits, value=out.value), nxt

    def roots(p):
        r = selfplay.root_fn(graphdef, env, p, state)
        return r, mctx.RootFnOutput(prior_logits=r.prior_logits, value=r.value, embedding=state)

    def ours_gumbel(p, k, sims=args.sims):
        return mcts.gumbel_policy(p, k, roots(p)[0], rec, sims).action

    def ours_gumbel_waves(p, k):
        return mcts.gumbel_policy(p, k, roots(p)[0], rec, args.sims, wave_sizes="auto").action

    def mctx_gumbel(p, k):
        r = roots(p)[1]
        return mctx.gumbel_muzero_policy(p, k, r, mctx_rec, args.sims,
                                         invalid_actions=~state.legal_action_mask).action

    def model_only(p, k, sims=args.sims):
        """The model work every search does: the root call and `sims` steps."""
        def body(i, carry):
            s, total = carry
            out, nxt = rec(p, jax.random.fold_in(k, i),
                           jnp.argmax(s.legal_action_mask, -1).astype(jnp.int32), s)
            return nxt, total + out.value + out.prior_logits[:, 0]
        root = roots(p)[0]
        return jax.lax.fori_loop(0, sims, body, (state, root.value))[1]

    def ours_puct(p, k):
        return mcts.alphazero_policy(p, k, roots(p)[0], rec, args.sims).action

    def mctx_puct(p, k):
        r = roots(p)[1]
        return mctx.muzero_policy(p, k, r, mctx_rec, args.sims,
                                  invalid_actions=~state.legal_action_mask).action

    if args.sweep:
        results = _sweep(args, ours_gumbel, model_only, params)
        report["overhead_ms_by_sims"] = {str(n): v * 1e3 for n, v in results.items()}
        _write(out_path, report)
        return results
    sims = args.batch * args.sims
    fns = {"ours_gumbel": ours_gumbel, "mctx_gumbel": mctx_gumbel,
           "ours_puct": ours_puct, "mctx_puct": mctx_puct, "model_only": model_only}
    if args.waves and args.only != "puct":
        fns["ours_gumbel_waves"] = ours_gumbel_waves
    if args.only != "both":
        fns = {k: v for k, v in fns.items() if args.only in k or k == "model_only"}
    compile_s = {}
    times = _seconds({name: jax.jit(fn) for name, fn in fns.items()}, params,
                     args.repeats, args.rounds, compile_s)
    results = {}
    report["calls"] = {}
    for name, ts in times.items():
        sec = statistics.median([t for r in ts for t in r])
        results[name] = sims / sec
        report["calls"][name] = {"ms": sec * 1e3, "sims_per_s": sims / sec,
                                 "ms_per_round": [statistics.median(r) * 1e3 for r in ts],
                                 "compile_s": compile_s[name]}
        print(f"{name:17s} {sec * 1e3:8.2f} ms/call  {sims / sec:12,.0f} sims/s   "
              f"(first call, with compilation: {compile_s[name]:.2f} s)", flush=True)
    model = statistics.median([t for r in times["model_only"] for t in r])
    for kind in ("gumbel", "gumbel_waves", "puct"):
        if f"ours_{kind}" in times:
            theirs = times[f"mctx_{kind.split('_')[0]}"]
            ratio = _ratio_report(f"{kind:12s}", times[f"ours_{kind}"], theirs)
            results[f"ratio_{kind}"] = ratio["ratio"]
            report[f"ratio_{kind}"] = ratio
            if kind == "gumbel_waves":  # fewer, wider model calls: not the same model work
                continue
            ours_extra = statistics.median([t for r in times[f"ours_{kind}"] for t in r]) - model
            mctx_extra = statistics.median([t for r in theirs for t in r]) - model
            results[f"overhead_ratio_{kind}"] = mctx_extra / ours_extra
            report[f"overhead_ms_{kind}"] = {"ours": ours_extra * 1e3, "mctx": mctx_extra * 1e3,
                                             "model_alone": model * 1e3}
            print(f"  search overhead beyond the model ({model * 1e3:.2f} ms): ours "
                  f"{ours_extra * 1e3:.2f} ms, mctx {mctx_extra * 1e3:.2f} ms, "
                  f"{mctx_extra / ours_extra:.2f}x")
    report["load_average_after"] = list(os.getloadavg())
    _write(out_path, report)
    return results


if __name__ == "__main__":
    import jaxsolve.allocator  # a program of its own: keeps freed memory, as `jaxsolve` does
    jaxsolve.allocator.keep_freed_memory()
    main()
