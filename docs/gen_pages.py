"""The generated parts of the docs pages, made at build time so they cannot drift.

A page holds a marker line, `<!-- generated: NAME -->`, and `docs/hooks.py` replaces it
with `GENERATORS[NAME]()` while MkDocs builds:

* `cli`: every subcommand's `--help`, read from `jaxsolve.cli.build_parser()`;
* `bench_peers`, `bench_peers_eval`, `bench_peers_bounds`, `bench_malloc`, `bench_cfr`,
  `bench_mccfr`, `bench_mcts`, `bench_rules`, `convergence`, `cfr_variants`, `variant_sweep`,
  `abstraction`, `pursuit`, `time_to_target`, `resolving`: the results tables, read from the committed
  `results/*.json`, each headed by the date, machine and command that produced it;
* `games`, `big_games`: sizes computed from the games and builders while the page is built;
* `rerunning`: the benchmarks `make bench-all` reruns, read from the Makefile.
* `changelog`: CHANGELOG.md at the repository root, whole, so that the site's
  changelog page is the file itself.

A figure inside a sentence is written inline as `{{ figure: FILE.NAME }}` and replaced
with `figure("FILE.NAME")`: `FIGURES["FILE.NAME"]` pairs a results file with a small
function of its contents, FILE being that file's name without `.json` (`pursuit.`
reads results/pursuit/summary.json). For example, "lean trees hold
{{ figure: bench_peers.bytes_per_history }} bytes a history" becomes "... 24–33 bytes
...". The braces are neither Markdown nor Python, so no code block holds them by
accident. An unknown name, a key missing from the results file, or a `{{ figure` that
does not parse stops the build, so that a typo or a renamed key cannot leave a hole.

Run it by hand to see one part or one figure: `python docs/gen_pages.py cli`,
`python docs/gen_pages.py bench_peers.bytes_per_history`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
MARKER = re.compile(r"^<!-- generated: ([a-z_]+) -->$", re.M)
FIGURE = re.compile(r"\{\{ figure: ([a-z0-9_]+\.[a-z0-9_]+) \}\}")
FIGURE_START = "{{ figure"  # what every inline figure begins with, parsed or not
HELP_WIDTH = 76  # columns of the --help text: what the page shows without scrolling


# ---------------------------------------------------------------- command line
def subcommands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    """Every (words, parser) below `parser`, depth first: ("solve",), ("pursuit",),
    ("pursuit", "solve"), ... in the order the parser lists them."""
    for action in parser._actions:  # argparse keeps no public list of its subparsers
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                words = prefix + (name,)
                yield words, sub
                yield from subcommands(sub, words)


@contextlib.contextmanager
def _columns(width: int):
    """argparse wraps help at $COLUMNS; a fixed width gives the same page everywhere."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


def cli(parser: argparse.ArgumentParser | None = None) -> str:
    """The command-line reference: the top-level help, then each subcommand's."""
    if parser is None:
        from jaxsolve.cli import build_parser  # noqa: PLC0415 (imports JAX)

        parser = build_parser()
    with _columns(HELP_WIDTH):
        parts = ["## jaxsolve", "", "```text", parser.format_help().rstrip(), "```", ""]
        for words, sub in subcommands(parser):
            parts += [f"## jaxsolve {' '.join(words)}", "", "```text",
                      sub.format_help().rstrip(), "```", ""]
    return "\n".join(parts)


# ---------------------------------------------------------------- results
def _load(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def _committed(name: str) -> str | None:
    """The date the results file's figures were committed (for files that record no
    date): its `committed` field, kept where a later edit renamed or removed keys and
    left the figures as measured, else the file's last commit."""
    recorded = _load(name).get("committed")
    if recorded:
        return recorded
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%cs", "--", f"results/{name}"],
                             cwd=ROOT, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _machine(m: dict) -> str:
    cores = m.get("cores", m.get("cpu_count"))
    words = [f"{m.get('cpu', 'CPU')}, {cores} cores" if cores else m.get("cpu", "CPU")]
    versions = [f"{k} {m[k]}" for k in ("python", "jax", "open_spiel", "mctx") if m.get(k)]
    words.append(", ".join(versions))
    backend = m.get("backend", m.get("jax_backend"))
    if backend:
        words.append(f"backend {backend}")
    if m.get("x64") is not None:
        words.append("float64" if m["x64"] else "float32")
    return "; ".join(w for w in words if w)


def _source(name: str, date: str | None, machine: dict, command: str) -> str:
    committed = None if date else _committed(name)
    when = (f"measured {date}" if date else f"committed {committed}" if committed
            else "date not recorded")
    return (f"*From `results/{name}`: {when}; {_machine(machine)}; "
            f"`{command}`.*")


def _without_out(words: list[str]) -> str:
    """A command's arguments without `--out PATH` (where that run wrote is no part of
    how to rerun it)."""
    out, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word == "--out":
            skip = True
        elif not word.startswith("--out="):
            out.append(word)
    return " ".join(out)


def _num(x: float | None, digits: int = 3) -> str:
    """A time or rate with `digits` significant digits, thousands separated."""
    if x is None:
        return "—"
    if x == 0:
        return "0"
    if abs(x) >= 10 ** digits:
        return f"{x:,.0f}"
    text = f"{x:.{digits}g}"
    if "e" in text:
        mantissa, exp = text.split("e")
        return f"{mantissa}e{int(exp)}"
    return text


def _sci(x: float) -> str:
    """A rate in two significant digits, as 2.4e5."""
    mantissa, exp = f"{x:.1e}".split("e")
    return f"{mantissa}e{int(exp)}"


def _ratio(x: float) -> str:
    return f"{x:.2g}×" if x < 10 else f"{x:.0f}×"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


PEERS = (("jaxsolve", "jaxsolve"), ("noregret", "NoRegret"), ("liteefg", "LiteEFG"),
         ("openspiel", "OpenSpiel C++"))


def _peers_command(data: dict) -> str:
    return "python experiments/" + data.get("command", "bench_peers.py")


def bench_peers(data: dict | None = None) -> str:
    """ms per CFR+ iteration of jaxsolve and its peers, one row per game."""
    data = data or _load("bench_peers.json")
    rows = []
    for game in data["games"]:
        solvers = game["solvers"]
        cells = [_num(solvers[k]["ms_per_iter"]) if k in solvers else "—" for k, _ in PEERS]
        ours = solvers["jaxsolve"]["ms_per_iter"]
        fastest_peer = min((s["ms_per_iter"] for k, s in solvers.items() if k != "jaxsolve"),
                           default=None)
        ratio = f"{fastest_peer / ours:.1f}×" if fastest_peer else "—"
        rows.append([game["game"], f"{game['histories']:,}", *cells, ratio])
    header = ["game", "histories", *(f"{label} (ms)" for _, label in PEERS),
              "fastest peer ÷ jaxsolve"]
    notes = [f"* {r['game']}: timed again with "
             f"`python experiments/{_without_out(r['command'].split())}` "
             f"({r['date']}): {r['why']}." for r in data.get("reruns", [])]
    versions = ", ".join(f"{k} {v}" for k, v in data.get("versions", {}).items())
    return "\n".join([
        _source("bench_peers.json", data.get("date"), data["machine"], _peers_command(data)),
        "", _table(header, rows), "",
        f"Peers: {versions}." if versions else "", *([""] + notes if notes else [])])


def readme_rows(data: dict | None = None) -> list[str]:
    """The README's headline table rows (tests/integration/test_docs.py checks the README holds
    exactly these, so the README cannot drift from results/bench_peers.json)."""
    data = data or _load("bench_peers.json")
    rows = []
    for game in data["games"]:
        solvers = game["solvers"]
        cells = [_num(solvers[k]["ms_per_iter"]) if k in solvers else "—" for k, _ in PEERS]
        rows.append("| " + " | ".join([game["game"], f"{game['histories']:,}", *cells]) + " |")
    return rows


def bench_peers_eval(data: dict | None = None) -> str:
    """ms to evaluate exploitability of a fixed policy, each solver's own evaluation."""
    data = data or _load("bench_peers.json")
    labels = [(k, v) for k, v in PEERS if k != "openspiel"]
    rows = []
    for game in data["games"]:
        solvers = game["solvers"]
        rows.append([game["game"], *(_num(solvers[k].get("eval_ms")) if k in solvers else "—"
                                     for k, _ in labels)])
    return _table(["game", *(f"{label} (ms)" for _, label in labels)], rows)


def bench_peers_bounds(data: dict | None = None) -> str:
    """jaxsolve's ms per iteration and per evaluation against the memory-traffic bound
    and the leaf-sum floor of the same run, for the games large enough to have them."""
    data = data or _load("bench_peers.json")
    rows = []
    for game in data["games"]:
        if "floor_ms" not in game or game["histories"] < 100_000:
            continue
        ours = game["solvers"]["jaxsolve"]
        rows.append([game["game"], _num(ours["ms_per_iter"]), _num(game["bound_ms"]),
                     _num(game["floor_ms"]), f"{game['x_floor']:.2f}×",
                     _num(ours["eval_ms"]), _num(game["eval_bound_ms"]),
                     _num(game["eval_floor_ms"]), f"{game['eval_x_floor']:.2f}×"])
    return _table(["game", "iteration (ms)", "traffic bound", "leaf-sum floor",
                   "÷ floor", "evaluation (ms)", "traffic bound", "leaf-sum floor",
                   "÷ floor"], rows)


def bench_malloc(data: dict | None = None) -> str:
    """Evaluation and iteration with glibc's malloc defaults against `import jaxsolve`'s
    settings, in processes that take turns (experiments/bench_malloc.py)."""
    data = data or _load("bench_malloc.json")
    rows = []
    for game in data["games"]:
        system, kept = game["system"], game["kept"]
        rows.append([game["game"], f"{game['histories']:,}",
                     f"{game['eval_temp_bytes'] / 1e6:.1f}",
                     f"{system['faults_per_eval']:,.0f} → {kept['faults_per_eval']:,.0f}",
                     f"{_num(system['eval_ms'])} → {_num(kept['eval_ms'])}",
                     f"{game['eval_ms_system_over_kept']:.2f}×",
                     f"{_num(system['ms_per_iter'])} → {_num(kept['ms_per_iter'])}",
                     f"{game['ms_per_iter_system_over_kept']:.2f}×"])
    return "\n".join([
        _source("bench_malloc.json", data.get("date"), data["machine"],
                "python experiments/" + _without_out(data["command"].split())), "",
        _table(["game", "histories", "evaluation scratch (MB)", "page faults per evaluation",
                "evaluation (ms)", "defaults ÷ kept", "iteration (ms)", "defaults ÷ kept"],
               rows)])


def bench_cfr(data: dict | None = None) -> str:
    """ms per CFR+ iteration: OpenSpiel's C++ CFRPlusSolver and JaxCFR against jaxsolve."""
    data = data or _load("bench_cfr.json")
    rows = []
    for game in data["games"].values():
        cpp, jax_cfr, ours = (game.get(k) or {} for k in ("openspiel_cpp", "jaxcfr", "jaxsolve"))
        t = {k: v.get("ms_per_iter") for k, v in
             (("cpp", cpp), ("jaxcfr", jax_cfr), ("ours", ours))}
        rows.append([game["label"], f"{game['histories']:,}", _num(t["cpp"]), _num(t["jaxcfr"]),
                     _num(t["ours"]),
                     f"{t['cpp'] / t['ours']:.1f}×" if t["cpp"] and t["ours"] else "—",
                     f"{t['jaxcfr'] / t['ours']:.1f}×" if t["jaxcfr"] and t["ours"] else "—"])
    header = ["game", "histories", "OpenSpiel C++ (ms)", "OpenSpiel JaxCFR (ms)",
              "jaxsolve (ms)", "C++ ÷ jaxsolve", "JaxCFR ÷ jaxsolve"]
    command = "python experiments/bench_cfr.py --publish " + _without_out(data.get("argv", []))
    return "\n".join([_source("bench_cfr.json", None, data["machine"], command.strip()), "",
                      _table(header, rows)])


def _scheme_rows(game: dict) -> tuple[list[list[str]], list[int]]:
    sizes = sorted({v["batch_size"] for runs in game["throughput"].values()
                    for v in runs.values() if v.get("batch_size")})
    rows = []
    for scheme, runs in game["throughput"].items():
        cpp = next(v for k, v in runs.items() if k.startswith("C++"))["samples_per_s"]
        cells = []
        for b in sizes:
            ours = next((v for v in runs.values() if v.get("batch_size") == b), None)
            cells.append("—" if ours is None else
                         f"{_sci(ours['samples_per_s'])} "
                         f"({_ratio(ours['samples_per_s'] / cpp)})")
        rows.append([game["label"], {"es": "external", "os": "outcome"}.get(scheme, scheme),
                     _sci(cpp), *cells])
    return rows, sizes


def bench_mccfr(data: dict | None = None) -> str:
    """Samples per second and exploitability after equal solver time, MCCFR."""
    data = data or _load("bench_mccfr.json")
    throughput, sizes = [], []
    for game in data["games"].values():
        rows, sizes = _scheme_rows(game)
        throughput += rows
    equal = []
    for game in data["games"].values():
        for scheme, runs in game["equal_time"].items():
            cpp = next(v for k, v in runs.items() if k.startswith("C++"))["final"]["exploitability"]
            cells = []
            for k, v in runs.items():
                if k.startswith("C++"):
                    continue
                value = v.get("pyspiel_exploitability", v["final"]["exploitability"])
                cells.append(f"{_num(value)} ({_ratio(value / cpp)}), B={v['batch_size']}, "
                             f"rule {v['rule']}")
            equal.append([game["label"], {"es": "external", "os": "outcome"}.get(scheme, scheme),
                          _num(cpp), "; ".join(cells)])
    config = data.get("config", {})
    seconds = config.get("seconds", 10)
    return "\n".join([
        _source("bench_mccfr.json", None, data["machine"], "python experiments/bench_mccfr.py"),
        "", "Samples per second (ratio to OpenSpiel's C++ in brackets):", "",
        _table(["game", "scheme", "C++", *(f"jaxsolve B={b}" for b in sizes)], throughput), "",
        f"Exploitability after {seconds:g} s of solver time (ratio to C++ in brackets; "
        "lower is better):", "",
        _table(["game", "scheme", "C++", "jaxsolve"], equal)])


def bench_mcts(data: dict | None = None) -> str:
    """ms per batched search call, ours against mctx."""
    data = data or _load("bench_mcts.json")
    calls, rows = data["calls"], []
    for kind, label in (("gumbel", "Gumbel (`gumbel_policy` / `gumbel_muzero_policy`)"),
                        ("puct", "PUCT (`alphazero_policy` / `muzero_policy`)")):
        ours, theirs = calls.get(f"ours_{kind}"), calls.get(f"mctx_{kind}")
        if not ours or not theirs:
            continue
        over = data.get(f"overhead_ms_{kind}", {})
        rows.append([label, _num(ours["ms"]), _num(theirs["ms"]),
                     f"{theirs['ms'] / ours['ms']:.2f}×", _num(over.get("model_alone")),
                     _num(over.get("ours")), _num(over.get("mctx"))])
    command = "python experiments/bench_mcts.py --publish " + _without_out(data.get("argv", []))
    return "\n".join([
        _source("bench_mcts.json", None, data["machine"], command.strip()), "",
        f"Batch {data['batch']}, {data['sims']} simulations, the same network and "
        "`recurrent_fn`, medians after compilation:", "",
        _table(["search", "jaxsolve (ms)", "mctx (ms)", "mctx ÷ jaxsolve", "model alone (ms)",
                "jaxsolve beyond the model (ms)", "mctx beyond the model (ms)"], rows)])


def bench_rules(data: dict | None = None) -> str:
    """ms per iteration of a `cfr_variant` of one's own against the built-in `cfr_plus()`,
    and XLA's count of each compiled iteration's bytes and flops against the built-in's."""
    data = data or _load("bench_rules.json")
    solvers = [row["solver"] for row in data["games"][0]["rows"]]
    timing, cost = [], []
    for game in data["games"]:
        rows = {row["solver"]: row for row in game["rows"]}
        timing.append([game["game"], *(
            f"{_num(rows[s]['ms_per_iteration'])} ({rows[s]['ratio_to_builtin']:.2f}×)"
            if s in rows else "—" for s in solvers)])
        cost.append([game["game"], *(
            f"{rows[s]['bytes_ratio']:.2f}, {rows[s]['flops_ratio']:.2f}" if s in rows else "—"
            for s in solvers)])
    return "\n".join([
        _source("bench_rules.json", data.get("date"), data["machine"],
                _without_out(data["command"].split())), "",
        "Milliseconds per iteration (median after compilation, float32) and the ratio to "
        "`cfr_plus()`:", "",
        _table(["game", *solvers], timing), "",
        "Bytes accessed and flops of one compiled iteration, each over `cfr_plus()`'s "
        "(XLA's cost analysis):", "",
        _table(["game", *solvers], cost)])


def cfr_variants(data: dict | None = None) -> str:
    """Each full-width solver's exploitability after a fixed number of iterations."""
    data = data or _load("cfr_variants.json")
    checkpoints = [str(n) for n in data["checkpoints"]]
    games = list(data["games"].values())
    solvers = list(dict.fromkeys(s for g in games for s in g["solvers"]))
    label = {"mmd": "`mmd()`, current policy"}
    rows = [[label.get(s, f"`{s}()`"), *(_sci(g["solvers"][s][n]) if s in g["solvers"] else "—"
                           for g in games for n in checkpoints)] for s in solvers]
    header = ["solver", *(f"{g['label']}, {n}" for g in games for n in checkpoints)]
    return "\n".join([
        _source("cfr_variants.json", data.get("date"), data["machine"],
                _without_out(data["command"].split())), "",
        _table(header, rows)])


def variant_sweep(data: dict | None = None) -> str:
    """Per game, each hyperparameter grid's best setting against the authors' default,
    and the best built-in at its defaults, after the sweep's last checkpoint."""
    data = data or _load("variant_sweep.json")
    alphas, gammas = data["alphas"], data["gammas"]
    last = data["checkpoints"][-1]
    rows = []
    for game in data["games"].values():
        cells = [game["label"]]
        for name, grid in game["grids"].items():
            default = game["defaults"][name]["relative"][-1]  # the built-in, same settings
            best = grid["best"]
            cells += [f"{_sci(default)}",
                      f"{_sci(best['relative'])} (α {best['alpha']:g}, γ {best['gamma']:g})"]
        builtins = {k: v["relative"][-1] for k, v in game["defaults"].items()}
        leader = min(builtins, key=builtins.get)
        cells.append(f"`{leader}()`: {_sci(builtins[leader])}")
        rows.append(cells)
    grids = list(data["grids"])
    header = ["game"]
    for name in grids:
        alpha, gamma = data["grids"][name]["default"]
        header += [f"{name}, default (α {alpha:g}, γ {gamma:g})", f"{name}, best of the grid"]
    header.append("best built-in at its defaults")
    return "\n".join([
        _source("variant_sweep.json", data.get("date"), data["machine"],
                _without_out(data["command"].split())), "",
        f"Exploitability over the payoff range after {last:,} iterations, float64, "
        f"α over {', '.join(f'{a:g}' for a in alphas)} and γ over "
        f"{', '.join(f'{g:g}' for g in gammas)}:", "",
        _table(header, rows)])


def _grid_apart(data: dict) -> str:
    """Where DCFR's default lies on its grid, the game on which the grid's cell and the
    built-in run alone part most after the last checkpoint: both values and the game."""
    a, g = data["grids"]["dcfr"]["default"]
    i, j = data["alphas"].index(a), data["gammas"].index(g)
    apart = [(abs(game["grids"]["dcfr"]["relative"][-1][i][j]
                  / game["defaults"]["dcfr"]["relative"][-1] - 1),
              game["grids"]["dcfr"]["relative"][-1][i][j],
              game["defaults"]["dcfr"]["relative"][-1], game["label"])
             for game in data["games"].values()]
    _, in_grid, alone, label = max(apart)
    return f"{_sci(in_grid)} in the grid and {_sci(alone)} alone on {label}"


def convergence(data: dict | None = None) -> str:
    """Each solver's exploitability at the end of the same solver-time budget."""
    data = data or _load("convergence.json")
    games = data["games"]
    solvers = list(dict.fromkeys(s for g in games.values() for s in g["runs"]))
    rows = []
    for game in games.values():
        cells = []
        for s in solvers:
            run = game["runs"].get(s)
            value = run["points"][-1]["value"] if run and run.get("points") else None
            # Float32 round-off leaves a converged NashConv within ~1e-8 of 0, either side.
            cells.append("—" if value is None else "< 1e-8" if value < 1e-8
                         else _num(value, 2))
        rows.append([game["label"], f"{game['sizes']['num_nodes']:,}", *cells])
    config = data.get("config", {})
    return "\n".join([
        _source("convergence.json", None, data["machine"], "python experiments/convergence.py"),
        "", f"Exploitability (NashConv / players; NashConv on the general-sum conjunction "
        f"game) after {config.get('seconds', 20):g} s of solver time; the sampling solvers "
        f"at B = {config.get('batch_size', 256)}:", "",
        _table(["game", "histories", *solvers], rows)])


def time_to_target(data: dict | None = None) -> str:
    """Per game and threshold, jaxsolve's best variant's time to that exploitability
    against the best peer's; each solver's figures; where a peer arrives before
    jaxsolve's best and where a variant after PCFR+; the plot beside the file."""
    if data is None:
        if not (RESULTS / "time_to_target.json").exists():
            return ("*`results/time_to_target.json` is not published yet: "
                    "`.venv-bench/bin/python experiments/bench_time_to_target.py --publish` "
                    "writes it and its plot.*")
        data = _load("time_to_target.json")
    levels = [f"{level:g}" for level in data["thresholds"]]
    summary, details, notes = [], [], []
    for game in data["games"]:
        solvers = game["solvers"]

        def reached(s: dict, level: str) -> str:
            at = s["time_to"][level]
            if at is None:
                return (f"not in {_num(s['seconds'])} s (best "
                        f"{_sci(s['best_exploitability'] / game['payoff_range'])})")
            return f"{_num(at['seconds'])} s ({at['iterations']:,} it.)"

        def best(key: str | None, level: str) -> str:
            return f"{solvers[key]['label']}: {reached(solvers[key], level)}" if key else "none"

        for level in levels:
            r = game["ratios"].get(level) or {"jaxsolve": None, "peer": None}
            bound = {"exact": "", "at least": "≥ ", "at most": "≤ "}.get(r.get("bound"))
            summary.append([game["game"], level, best(r["jaxsolve"], level),
                            _num(solvers[r["jaxsolve"]]["compile_s"]) if r["jaxsolve"] else "—",
                            best(r["peer"], level),
                            "—" if bound is None else f"{bound}{_num(r['ratio'])}×"])
            if r["peer"] and r["ratio"] < 1:
                notes.append(f"* {game['game']}, {level}: {solvers[r['peer']]['label']} "
                             "arrives before jaxsolve's best.")
            pcfr = solvers.get("jaxsolve pcfr+", {}).get("time_to", {}).get(level)
            slower = [s["label"].removeprefix("jaxsolve ") for s in solvers.values()
                      if pcfr and s["library"] == "jaxsolve" and s["algorithm"] != "PCFR+"
                      and (s["time_to"][level] or {"seconds": float("inf")})["seconds"]
                      > pcfr["seconds"]]
            if slower:
                notes.append(f"* {game['game']}, {level}: slower than jaxsolve's PCFR+ "
                             f"(or not there): {', '.join(slower)}.")
        rows = [[s["label"], _num(s["setup_s"]), _num(s["compile_s"]) if s["compile_s"] else "—",
                 _num(s["ms_per_iter"]), _num(s["eval_ms"]),
                 *(reached(s, level) for level in levels)] for s in solvers.values()]
        details += [f"**{game['game']}** ({game['histories']:,} histories, payoff range "
                    f"{game['payoff_range']:g}):", "",
                    _table(["solver", "setup (s)", "compile (s)", "ms / iteration",
                            "ms / evaluation", *(f"to {level}" for level in levels)], rows), ""]
    if not any("arrives before" in note for note in notes):
        notes.insert(0, "* At every threshold, jaxsolve's best variant arrives first.")
    versions = ", ".join(f"{k} {v}" for k, v in data.get("versions", {}).items() if v)
    plot = ["![Exploitability against seconds, every solver, one panel per game]"
            "(results/time_to_target.png)", ""] if (RESULTS / "time_to_target.png").exists() else []
    return "\n".join([
        _source("time_to_target.json", data.get("date"), data["machine"],
                "python experiments/" + _without_out(data["command"].split())), "",
        _table(["game", "exploitability / payoff range", "jaxsolve's best", "its compile (s)",
                "best peer", "peer ÷ jaxsolve"], summary), "",
        *plot, *notes, "", *details, f"Peers: {versions}." if versions else ""])


ABSTRACTIONS = {"none": "none", "ranks": "ranks only (suits dropped)",
                "J=Q preflop": "J = Q before the public card", "J=Q": "J = Q",
                "board-relative": "board-relative (pair / higher / lower)",
                "no private card": "no private card"}


def abstraction(data: dict | None = None) -> str:
    """Leduc solved on coarsened infosets, measured in the true game."""
    data = data or _load("abstraction.json")
    rows = [[ABSTRACTIONS.get(r["abstraction"], r["abstraction"]), f"{r['coarse_infosets']:,}",
             "perfect" if r["perfect_recall"] else "imperfect",
             _num(r["exploitability_true"]),
             "n/a" if r["exploitability_abstract"] is None else _num(r["exploitability_abstract"])]
            for r in data["rows"]]
    return "\n".join([
        f"*From `results/abstraction.json`: {data['game']}, {data['solver']} for "
        f"{data['iterations']:,} iterations per abstraction; committed "
        f"{_committed('abstraction.json') or 'on a date not recorded'}; "
        "`python experiments/abstraction.py`.*", "",
        _table(["abstraction", "infosets", "recall", "exploitability in the true game",
                "in the abstract game"], rows)])


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.2f}%"


def pursuit(data: dict | None = None) -> str:
    """The AlphaZero runs: time to 95% wins against random, mistake rates."""
    data = data or _load("pursuit/summary.json")
    rows = []
    for key, run in data["scaling"].items():
        grid, _, rest = key.partition("_")
        final = run["final"]
        label = f"{grid}×{grid}" + (", no exploring starts" if rest else "")
        seconds = run.get("seconds_to_95pct_vs_random")
        rows.append([label, "never" if seconds is None else
                     f"{seconds:.1f} s ({run['iterations_to_95pct_vs_random']} it.)",
                     _pct(run.get("mistake_rate_at_95pct")),
                     f"{final['train_seconds']:.0f} s ({final['iteration']} it.)",
                     _pct(final["win_vs_random_as_evader"]),
                     _pct(final["win_vs_random_as_defender"]), _pct(final["mistake_rate"])])
    sims = [[str(r["simulations"]), _pct(r["win_vs_random_as_evader"]),
             _pct(r["win_vs_random_as_defender"]), _pct(r["mistake_rate"])]
            for r in data.get("simulations", [])]
    committed = _committed("pursuit/summary.json") or "on a date not recorded"
    return "\n".join([
        f"*From `results/pursuit/summary.json`: committed {committed}; 2 CPU cores; "
        "`python experiments/pursuit_alphazero.py --publish`.*", "",
        "Goal variant, Gumbel search with 16 simulations, 3×128 MLP, 64 games per "
        "iteration; time includes compilation:", "",
        _table(["board", "to ≥ 95% wins vs random as each side", "mistake rate then",
                "trained", "wins as evader", "wins as defender", "mistake rate"], rows),
        "", "The 5×5 agent evaluated with other numbers of simulations:", "",
        _table(["simulations", "wins as evader", "wins as defender", "mistake rate"], sims)])


# ---------------------------------------------------------------- rerunning
BENCH_ALL = re.compile(r"^bench-all:.*\n((?:\t.*\n?)+)", re.M)
BENCH_LINE = re.compile(r"^\t\$\(BENCH_PY\) (experiments/\S+\.py[^#]*?)\s*# (.+): (\d+) min$")
BENCH_TOTAL = re.compile(r"^\t@echo \"bench-all: (\d+) experiments, about (\d+) minutes")


def bench_all(makefile: str | None = None) -> tuple[list[tuple[str, str, int]], tuple[int, int]]:
    """The Makefile's `bench-all` recipe: (command, what it measures, minutes) per
    experiment, and the (experiments, minutes) its first line announces."""
    text = makefile if makefile is not None else (ROOT / "Makefile").read_text()
    recipe = BENCH_ALL.search(text)
    if recipe is None:
        raise ValueError("the Makefile has no bench-all target")
    lines = recipe.group(1).splitlines()
    total = BENCH_TOTAL.match(lines[0])
    runs = [BENCH_LINE.match(line) for line in lines[1:]]
    if total is None or not all(runs):
        raise ValueError("bench-all's recipe is an echo of the total, then lines "
                         "`$(BENCH_PY) experiments/X.py ...  # what: N min`")
    return ([(m.group(1), m.group(2), int(m.group(3))) for m in runs],
            (int(total.group(1)), int(total.group(2))))


def rerunning(makefile: str | None = None) -> str:
    """The experiments behind the docs' figures, as `make bench-all` reruns them."""
    runs, (_, total) = bench_all(makefile)
    rows = [[f"`python {command}`", what, f"{minutes} min"] for command, what, minutes in runs]
    return "\n".join([_table(["command", "what", "time on 2 cores"], rows), "",
                      f"`make bench-all` runs them all, one after another, in about "
                      f"{total} minutes on 2 CPU cores."])


# ---------------------------------------------------------------- games
GAME_VARIANTS = (("kuhn_poker", {}), ("kuhn_poker", {"players": 3}), ("leduc_poker", {}),
                 ("mini_maneuver", {}), ("orbital_pursuit_evasion", {}),
                 ("orbital_pursuit_evasion", {"detection": "stochastic"}),
                 ("maneuver_detection", {}), ("conjunction", {}),
                 ("conjunction", {"num_actions": 3}), ("spoof", {}))


def games_table() -> str:
    """The built-in games' sizes, compiled with these parameters while the page is built."""
    from jaxsolve import games
    from jaxsolve import compile_game  # noqa: PLC0415

    rows = []
    for name, params in GAME_VARIANTS:
        tree = compile_game(games.load(name, **params))
        sizes = tree.sizes
        per_player = np.bincount(np.asarray(tree.infoset_player), minlength=sizes.num_players)
        kind = "" if sizes.utility_sum == 0 else (
            " (general-sum)" if sizes.utility_sum is None else f" (sum {sizes.utility_sum:g})")
        settings = ", ".join(f"{k}={v!r}" for k, v in params.items())
        rows.append([f"`{name}`" + (f" {settings}" if settings else ""),
                     f"{sizes.num_players}{kind}", f"{sizes.num_nodes:,}",
                     " + ".join(f"{n:,}" for n in per_player), f"{sizes.num_terminals:,}"])
    return _table(["game", "players", "histories", "infosets (per player)", "terminals"],
                  rows)


# ---------------------------------------------------------------- builders
BIG_GAMES = (("Goofspiel 5", "goofspiel_spec", (5,), {}),
             ("Goofspiel 6", "goofspiel_spec", (6,), {}),
             ("Goofspiel 7", "goofspiel_spec", (7,), {}),
             ("liar's dice 1×6", "liars_dice_spec", ((1, 1), 6), {}),
             ("liar's dice 2×2, 4 faces", "liars_dice_spec", ((2, 2), 4), {}),
             ("Battleship 3×2, ship 2, 3 shots", "battleship_spec", (3, 2, (2,), None, 3), {}))


def _bytes(n: float) -> str:
    from jaxsolve.builders import format_bytes  # noqa: PLC0415

    return format_bytes(int(n))


def big_games() -> str:
    """The builders' sizes and memory estimates, computed from the builders' own specs
    (no tree is built), and the bytes per history of two trees built here."""
    from jaxsolve import builders  # noqa: PLC0415

    rows = []
    for label, spec_of, args, kwargs in BIG_GAMES:
        spec = getattr(builders, spec_of)(*args, **kwargs)
        estimate = builders.estimate_bytes(spec)
        rows.append([label, f"{spec.num_nodes:,}", f"{spec.num_infosets:,}",
                     f"{spec.num_terminals:,}", _bytes(estimate),
                     f"{estimate / spec.num_nodes:.0f}"])
    built = []
    for label, tree in (("Goofspiel 5", builders.goofspiel(5)),
                        ("liar's dice 1×6", builders.liars_dice((1, 1), 6))):
        n = tree.sizes.num_nodes
        full, lean = builders.tree_bytes(tree), builders.tree_bytes(tree.without_histories())
        built.append([label, f"{n:,}", _bytes(full), f"{full / n:.0f}", _bytes(lean),
                      f"{lean / n:.0f}"])
    return "\n".join([
        _table(["game", "histories", "infosets", "terminals", "build estimate",
                "bytes / history"], rows), "",
        "Trees built while this page was made (float32 utilities, int32 indices):", "",
        _table(["game", "histories", "tree", "bytes / history", "without histories",
                "bytes / history"], built)])


def changelog() -> str:
    """CHANGELOG.md, the repository's one changelog, for the site's changelog page."""
    return (ROOT / "CHANGELOG.md").read_text()


# ---------------------------------------------------------------- inline figures
def _and(words: list[str]) -> str:
    return " and ".join(words) if len(words) < 3 else ", ".join(words[:-1]) + " and " + words[-1]


def _share(x: float) -> str:
    """A share in three significant digits: 0.9453 as 94.5%, 1.0 as 100%."""
    return f"{100 * x:.3g}%"


def _duration(ms: float) -> str:
    return f"{_num(ms, 2)} ms" if ms < 1000 else f"{_num(ms / 1000, 2)} s"


def _peer_checks(data: dict, peer: str) -> tuple[list[str], list[str], float]:
    """The games where `peer`'s average after the check iterations has jaxsolve's
    exploitability to six digits, the others, and the largest relative gap there."""
    same, apart, gap = [], [], 0.0
    for game in data["games"]:
        ours = game["solvers"]["jaxsolve"]["check_exploitability"]
        theirs = game["solvers"].get(peer, {}).get("check_exploitability")
        if theirs is None:
            continue
        relative = abs(theirs - ours) / abs(ours)
        if relative < 5e-6:
            same.append(game["game"])
        else:
            apart.append(game["game"])
            gap = max(gap, relative)
    return same, apart, gap


def _peers_same(peer: str):
    def render(data: dict) -> str:
        same, _, _ = _peer_checks(data, peer)
        if not same:
            raise ValueError(f"{peer} agrees with jaxsolve on no game: reword the sentence")
        return _and(same)
    return render


def _peers_apart(peer: str):
    def render(data: dict) -> str:
        _, apart, gap = _peer_checks(data, peer)
        if not apart:
            raise ValueError(f"{peer} parts from jaxsolve on no game: reword the sentence")
        return f"{100 * gap:.2g}% of ours on {_and(apart)}"
    return render


def _bytes_per_history(data: dict) -> str:
    """The range of a lean tree's bytes per history over the games of 10⁵ histories
    and more (the small games' fixed arrays weigh more per history)."""
    per = [g["solvers"]["jaxsolve"]["tree_bytes"] / g["histories"] for g in data["games"]
           if g["histories"] >= 100_000]
    return f"{min(per):.0f}–{max(per):.0f}"


def _closest_equal_time(data: dict) -> str:
    """The equal-time run of ours that comes closest to OpenSpiel's C++ exploitability."""
    best = None
    for game in data["games"].values():
        for scheme, runs in game["equal_time"].items():
            cpp = next(v for k, v in runs.items() if k.startswith("C++"))["final"]["exploitability"]
            for key, run in runs.items():
                if key.startswith("C++"):
                    continue
                value = run.get("pyspiel_exploitability", run["final"]["exploitability"])
                if best is None or value / cpp > best[0]:
                    best = (value / cpp, game["label"], scheme, run["batch_size"])
    ratio, label, scheme, batch = best
    name = {"es": "external", "os": "outcome"}.get(scheme, scheme)
    return f"{name} sampling on {label} at B = {batch}, at {_ratio(ratio)} C++'s exploitability"


def _convergence_final(game: str, solver: str):
    def render(data: dict) -> str:
        return _num(data["games"][game]["runs"][solver]["points"][-1]["value"], 2)
    return render


def _abstraction(name: str, field: str):
    def render(data: dict) -> str:
        return _num(next(r for r in data["rows"] if r["abstraction"] == name)[field], 2)
    return render


def _unfaulted(data: dict) -> str:
    """The games whose evaluation faults no page under either malloc setting."""
    games = [g["game"] for g in data["games"]
             if g["system"]["faults_per_eval"] == 0 and g["kept"]["faults_per_eval"] == 0]
    if not games:
        raise ValueError("every game faults pages: reword the sentence around this figure")
    return _and(games)


METHOD_NAMES = {"unsafe": "unsafe", "resolve": "resolve gadget", "max_margin": "max-margin"}


def resolving(data: dict | None = None) -> str:
    """Each game, depth and blueprint: the full game's exploitability before re-solving
    and after each gadget, with the seconds of a compiled call."""
    data = data or _load("resolving.json")
    methods = list(METHOD_NAMES)
    rows = []
    for game in data["games"].values():
        for depth, entry in game["depths"].items():
            by_method = entry["rows"]
            for k, n in enumerate(data["blueprints"]):
                first = by_method[methods[0]][k]
                rows.append([game["label"], f"{depth} ({entry['states']:,} states)",
                             "uniform" if n == 0 else f"CFR+ {n:,}", _num(first["before"])]
                            + [_num(by_method[m][k]["after"]) for m in methods])
            seconds = entry["seconds_compiled"]
            rows.append(["", "", "seconds a call, compiled", ""]
                        + [_num(seconds[m]) for m in methods])
    return "\n".join([
        _source("resolving.json", data.get("date"), data["machine"],
                _without_out(data["command"].split())), "",
        f"Exploitability of the full game (NashConv / 2) before and after re-solving both "
        f"players at one depth; each gadget tree solved by {data['solver']} for "
        f"{data['iterations']:,} iterations, float64:", "",
        _table(["game", "depth", "blueprint", "before"]
               + [f"after, {METHOD_NAMES[m]}" for m in methods], rows)])


def _one_call(data: dict) -> str:
    """One gadget tree for a depth against a loop of one per state: the ratio, with
    the states and game."""
    c = data["one_call"]
    return (f"{_ratio(c['loop_seconds'] / c['one_call_seconds'])} faster than a Python loop "
            f"over its {c['states']} public states ({c['game']}, depth {c['depth']}: "
            f"{_duration(1000 * c['one_call_seconds'])} against "
            f"{_duration(1000 * c['loop_seconds'])}, both compiled)")


PURSUIT = "pursuit/summary.json"
FIGURES = {
    "abstraction.jq_true": ("abstraction.json", _abstraction("J=Q", "exploitability_true")),
    "abstraction.jq_abstract": ("abstraction.json",
                                _abstraction("J=Q", "exploitability_abstract")),
    "bench_malloc.unfaulted": ("bench_malloc.json", _unfaulted),
    "bench_mccfr.closest_equal_time": ("bench_mccfr.json", _closest_equal_time),
    "bench_mcts.model_calls": ("bench_mcts.json", lambda d: str(d["sims"] + 1)),
    "bench_mcts.gumbel_ratio_rounds": ("bench_mcts.json", lambda d: (
        f"{_ratio(min(d['ratio_gumbel']['per_round']))} to "
        f"{_ratio(max(d['ratio_gumbel']['per_round']))}")),
    "bench_peers.bytes_per_history": ("bench_peers.json", _bytes_per_history),
    "bench_peers.noregret_same": ("bench_peers.json", _peers_same("noregret")),
    "bench_peers.openspiel_same": ("bench_peers.json", _peers_same("openspiel")),
    "bench_peers.noregret_apart": ("bench_peers.json", _peers_apart("noregret")),
    "bench_peers.openspiel_apart": ("bench_peers.json", _peers_apart("openspiel")),
    "bench_peers.pyspiel_eval_range": ("bench_peers.json", lambda d: " to ".join(
        _duration(f(g["solvers"]["openspiel"]["eval_ms"] for g in d["games"]))
        for f in (min, max))),
    "conjunction.cfr_iterations": ("conjunction.json",
                                   lambda d: f"{d['default_game']['iterations']:,}"),
    "conjunction.cfr_costs": ("conjunction.json", lambda d: " and ".join(
        f"{d['default_game']['expected_cost'][p]:.4f}" for p in ("alice", "bob"))),
    "variant_sweep.dcfr_default_apart": ("variant_sweep.json", _grid_apart),
    "resolving.one_call": ("resolving.json", _one_call),
    "conjunction.sweep_tables": ("conjunction.json", lambda d: f"{d['sweep']['tables']:,}"),
    "convergence.seconds": ("convergence.json", lambda d: f"{d['config']['seconds']:g}"),
    "convergence.leduc_cfr_plus": ("convergence.json", _convergence_final("leduc", "cfr+")),
    "convergence.leduc_es_mccfr": ("convergence.json",
                                   _convergence_final("leduc", "es-mccfr")),
    "pursuit.random_evader_5x5": (PURSUIT, lambda d: _share(
        1 - d["exact"]["goal_5x5"]["best_vs_random_as_defender"])),
    "pursuit.baseline_iterations": (PURSUIT, lambda d: str(d["goal_5x5"]["final"]["iteration"])),
    "pursuit.vs_mcts_as_evader": (PURSUIT, lambda d: _share(
        d["goal_5x5"]["vs_pure_mcts"]["win_vs_mcts_as_evader"])),
    "pursuit.vs_mcts_as_defender": (PURSUIT, lambda d: _share(
        d["goal_5x5"]["vs_pure_mcts"]["win_vs_mcts_as_defender"])),
    "pursuit.heatmap_agreement": (PURSUIT, lambda d: _share(
        d["goal_5x5"]["heatmap_sign_agreement"])),
}


def figure(name: str, data: dict | None = None) -> str:
    """The inline figure `name` (a key of FIGURES), read from its results file, or
    from `data` where given."""
    if name not in FIGURES:
        raise KeyError(f"unknown figure {name!r}; known: {sorted(FIGURES)}")
    file, render = FIGURES[name]
    return render(_load(file) if data is None else data)


GENERATORS = {"cli": cli, "bench_peers": bench_peers, "bench_peers_eval": bench_peers_eval,
              "bench_peers_bounds": bench_peers_bounds, "bench_malloc": bench_malloc,
              "bench_cfr": bench_cfr, "bench_mccfr": bench_mccfr, "bench_mcts": bench_mcts,
              "convergence": convergence, "big_games": big_games,
              "bench_rules": bench_rules, "cfr_variants": cfr_variants,
              "variant_sweep": variant_sweep,
              "abstraction": abstraction, "pursuit": pursuit,
              "time_to_target": time_to_target, "resolving": resolving,
              "games": games_table, "rerunning": rerunning, "changelog": changelog}


def fill(markdown: str) -> str:
    """`markdown` with every marker replaced by its generated part and every inline
    figure by its value; an unknown name or a `{{ figure` that does not parse is an
    error, so that a typo fails the build instead of leaving a hole."""
    def replace(match: re.Match) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise KeyError(f"unknown generated part {name!r}; known: {sorted(GENERATORS)}")
        return GENERATORS[name]()
    # Figures first, in the page's own text: a generated part (the changelog, say) may
    # quote the figure syntax and is not itself a page to fill.
    markdown = FIGURE.sub(lambda m: figure(m.group(1)), markdown)
    if FIGURE_START in markdown:
        at = markdown.index(FIGURE_START)
        raise ValueError(f"malformed inline figure {markdown[at:at + 60]!r}; write "
                         "{{ figure: FILE.NAME }}")
    return MARKER.sub(replace, markdown)


if __name__ == "__main__":
    for name in sys.argv[1:] or sorted(GENERATORS):
        print(figure(name) if "." in name else GENERATORS[name]())
        print()
