"""bench_cfr's printed tables: one per game (every solver's timings, checks and
memory) and a summary across games, with numbers formatted to the digits they need."""

from __future__ import annotations

import math

from bench_cfr_memory import fmt_bytes


def timed_label(r: dict) -> str:
    """The timed blocks as "count x iterations", or "count in N it" where the run was
    shorter than one block (--liars-iters 20 timed one block of 20, not of 100)."""
    blocks, block, done = r["timed_blocks"], r["block_iters"], r.get("iterations_done")
    if done is not None and blocks * block > done:
        return f"{blocks} in {done} it"
    return f"{blocks}x{block}"

def ratio_or_none(a, b):
    """a / b, or None where either is missing (or b is 0)."""
    return a / b if a is not None and b else None


def fmt(value, spec):
    """`value` in format `spec`; None (not measured) prints "-"."""
    return "-" if value is None else format(value, spec)


def sig_decimals(value: float, sig: int) -> int:
    """Decimals that give `value` `sig` significant digits in fixed point."""
    if not value or not math.isfinite(value):
        return 0
    return max(sig - 1 - math.floor(math.log10(abs(value))), 0)


def fmt_sig(value, sig: int = 4) -> str:
    """Fixed point with `sig` significant digits: 90.35, 0.1590, 0.0009120."""
    return "-" if value is None else f"{value:.{sig_decimals(value, sig)}f}"


def _fmt_load(r) -> str:
    """A solver's 1-minute load average before→after its timed iterations."""
    load = r.get("load_average_1min") or {}
    if load.get("before") is None:
        return "-"
    return f"{load['before']:.2f}→{fmt(load.get('after'), '.2f')}"


def _check_status(js) -> str:
    """'ok', 'MISMATCH' or 'UNCHECKED' for jaxsolve's exploitability."""
    compared = js.get("exploitability_check")
    if not compared:
        return "UNCHECKED"
    return "MISMATCH" if any(c["mismatch"] for c in compared.values()) else "ok"


def solver_label(name: str) -> str:
    """A --solver name as the tables print it: CFR+, PCFR+, CFR (alternating)."""
    return {"cfr-alt": "CFR (alternating)"}.get(name, name.upper())


def print_table(key, out):
    """One game's table: a row per solver, then the checks, evaluation times, memory
    and notes."""
    if "error" in out:
        print(f"\n== {key}: FAILED: {out['error']}")
        return
    first, last = (str(c) for c in out["checkpoints"][:1] + out["checkpoints"][-1:])
    rows = [("OpenSpiel C++ CFR+", out["openspiel_cpp"], "cpp_ms_per_iter_over_jaxsolve"),
            ("OpenSpiel JaxCFR", out["jaxcfr"], "jaxcfr_ms_per_iter_over_jaxsolve"),
            (f"jaxsolve {solver_label(out.get('solver', 'cfr+'))}", out["jaxsolve"], None)]
    js = out["jaxsolve"]
    ours, tree = js["ms_per_iter"], js["tree"]
    print(f"\n== {key}: {out['game']}  ({tree['nodes']:,} nodes, {tree['infosets']:,} "
          f"infosets, tree from {out['tree_source']})")
    head = (f"{'solver':<20} {'dtype':>8} {'ms/iter':>10} {'timed':>10} {'setup s':>8} "
            f"{'compile s':>9} {'expl@' + first:>10} {'expl@' + last:>10} "
            f"{'÷ jaxsolve':>10} {'load 1m':>11}")
    print(head)
    print("-" * len(head))
    for label, r, ratio_key in rows:
        if r is None:
            print(f"{label:<20} {'skipped':>8}")
            continue
        timed = timed_label(r)
        expl = r["exploitability"]
        ms = fmt_sig(r["ms_per_iter"])
        ratio = (out["ratios"].get(ratio_key) if ratio_key
                 else ratio_or_none(r["ms_per_iter"], ours))
        print(f"{label:<20} {r['dtype']:>8} {ms:>10} {timed:>10} "
              f"{fmt(r['setup_s'], '8.3f')} {fmt(r['compile_s'], '9.3f')} "
              f"{fmt(expl.get(first), '10.3e')} {fmt(expl.get(last), '10.3e')} "
              f"{fmt(ratio, '.3f'):>9}x {_fmt_load(r):>11}")
    print(f"jaxsolve setup: tree {js['setup_s']:.3f} s ({out['tree_source']}), device_put "
          f"{fmt(js.get('device_put_s'), '.3f')} s (in neither setup s nor compile s)")
    compared = js.get("exploitability_check")
    if compared:
        tol = js["check_tolerance"]
        print(f"jaxsolve expl checked by pyspiel.exploitability (MISMATCH above "
              f"{tol['rtol']:g} x |pyspiel| + {tol['atol']:.2g} in {js['dtype']}):")
        for c, v in compared.items():
            print(f"  @{c:<6} ours {v['ours']:.6e}  pyspiel {v['pyspiel']:.6e}  |diff| "
                  f"{v['abs_diff']:.2e} (rel {fmt(v['rel_diff'], '.2e')}, tolerance "
                  f"{v['tolerance']:.2e})  {'MISMATCH' if v['mismatch'] else 'ok'}")
    else:
        print(f"jaxsolve expl UNCHECKED (jaxsolve.exploitability only): "
              f"{out.get('jaxsolve_unchecked') or 'no pyspiel check ran'}")
    cpp = out["openspiel_cpp"]
    if cpp is not None:
        eval_key = "pyspiel_exploitability_over_jaxsolve"
        print(f"exploitability eval: pyspiel {fmt_sig(cpp['eval_ms_tabular_policy'])} ms "
              f"(TabularPolicy), {fmt_sig(cpp['eval_ms_average_policy'])} ms "
              f"(average_policy()); jaxsolve {fmt_sig(js['eval_ms'])} ms (compile "
              f"{js['eval_compile_s']:.2f} s); ratio "
              f"{fmt(out['ratios'][eval_key], '.3f')}x (vs the faster)")
        if cpp.get("eval_ms_reused_best_responses") is not None:
            reused_key = "pyspiel_reused_best_responses_over_jaxsolve"
            print(f"  setup left out on both sides: pyspiel with its best-response trees "
                  f"built once {fmt_sig(cpp['eval_ms_reused_best_responses'])} ms (same value: "
                  f"{cpp['reused_best_responses_agree']}); ratio "
                  f"{fmt(out['ratios'][reused_key], '.3f')}x")
    else:
        print(f"exploitability eval: jaxsolve {fmt_sig(js['eval_ms'])} ms "
              f"(compile {js['eval_compile_s']:.2f} s)")
    m = js["memory"]
    print(f"memory: tree {fmt_bytes(m['tree_bytes'])}; device in use after placing it "
          f"{fmt_bytes(m['device_bytes_in_use_after_tree'])}, peak after iterations "
          f"{fmt_bytes(m['device_peak_bytes_after_iterations'])}, after evaluation "
          f"{fmt_bytes(m['device_peak_bytes_after_evaluation'])} (limit "
          f"{fmt_bytes(m['device_bytes_limit'])}); host peak RSS "
          f"{fmt_bytes(m['host_peak_rss_bytes'])}")
    print("(load 1m: the 1-minute load average before→after each solver's timed "
          "iterations; the solvers run one after another, not interleaved)")
    for note in out["notes"]:
        print(f"note: {note}")


def print_summary(games: dict):
    """One row per game: jaxsolve's sizes, memory, timing and check, across games."""
    head = (f"{'game':<14} {'histories':>11} {'source':>8} {'build s':>8} {'put s':>7} "
            f"{'tree':>10} {'dev@tree':>10} {'dev peak':>10} {'compile s':>9} "
            f"{'ms/iter':>10} {'timed':>8} {'expl@last':>10} {'pyspiel chk':>11} "
            f"{'OpenSpiel':>9}")
    print("\n" + head)
    print("-" * len(head))
    for key, out in games.items():
        if "error" in out:
            print(f"{key:<14} FAILED: {out['error']}")
            continue
        js, m = out["jaxsolve"], out["jaxsolve"]["memory"]
        peak = m["device_peak_bytes_after_evaluation"] or m["device_peak_bytes_after_iterations"]
        last = str(out["checkpoints"][-1])
        print(f"{key:<14} {out['histories']:>11,} {out['tree_source']:>8} "
              f"{out['build_s']:>8.2f} {fmt(js.get('device_put_s'), '7.3f')} "
              f"{fmt_bytes(m['tree_bytes']):>10} "
              f"{fmt_bytes(m['device_bytes_in_use_after_tree']):>10} {fmt_bytes(peak):>10} "
              f"{js['compile_s']:>9.2f} {fmt_sig(js['ms_per_iter']):>10} "
              f"{timed_label(js):>8} "
              f"{fmt(js['exploitability'].get(last), '10.3e')} {_check_status(js):>11} "
              f"{'ran' if out['openspiel_cpp'] else 'skipped':>9}")
    print("(expl@last: jaxsolve.exploitability after the last checkpoint's iterations; "
          "pyspiel chk: that value against pyspiel.exploitability of the same policy, "
          "UNCHECKED where it was not run (--check-max-histories); put s: device_put of "
          "the tree; dev peak: peak device bytes including the evaluation; '-': the "
          "backend keeps no memory statistics)")
