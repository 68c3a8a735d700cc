"""Builds big games with the array-native builders and reports time and memory.

    python experiments/build_big_games.py                 # the default list below
    python experiments/build_big_games.py goofspiel:7     # one game
    python experiments/build_big_games.py --estimate-only

For each game: histories, terminals, infosets, build seconds, bytes of the tree
arrays (names excluded), bytes per history, the builder's up-front estimate and
the peak resident memory of the build. Every build runs in its own subprocess so
that its peak RSS is its own. A game whose estimate exceeds the memory available
on this machine (or --max-gib) is not built: its estimate is printed instead.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

DEFAULT = ["goofspiel:5", "goofspiel:6", "goofspiel:7", "liars_dice:1,1,6",
           "liars_dice:2,2,3", "liars_dice:2,2,4"]


def _spec_and_build(item: str):
    from jaxsolve import builders  # noqa: PLC0415

    game, _, args = item.partition(":")
    nums = [int(x) for x in args.split(",")] if args else []
    if game == "goofspiel":
        return (builders.goofspiel_spec(*nums),
                lambda: builders.goofspiel(*nums, max_bytes=2**62))
    if game == "liars_dice":
        dice, faces = tuple(nums[:2]), nums[2]
        return (builders.liars_dice_spec(dice, faces),
                lambda: builders.liars_dice(dice, faces, max_bytes=2**62))
    raise SystemExit(f"unknown game {item!r}: goofspiel:N or liars_dice:D0,D1,FACES")


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def _one(item: str) -> dict:
    """Runs in the child: builds `item`, returns its numbers."""
    from jaxsolve.builders import estimate_bytes, tree_bytes  # noqa: PLC0415

    spec, build = _spec_and_build(item)
    before = _peak_rss()
    start = time.perf_counter()
    tree = build()
    seconds = time.perf_counter() - start
    size = tree_bytes(tree)
    return {"game": item, "histories": tree.sizes.num_nodes,
            "terminals": tree.sizes.num_terminals, "infosets": tree.sizes.num_infosets,
            "seconds": round(seconds, 2), "tree_bytes": size,
            "bytes_per_history": round(size / tree.sizes.num_nodes, 1),
            "estimate_bytes": estimate_bytes(spec), "peak_rss_bytes": _peak_rss(),
            "rss_before_bytes": before}


def _available_bytes() -> int:
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("games", nargs="*", default=DEFAULT)
    parser.add_argument("--estimate-only", action="store_true")
    parser.add_argument("--max-gib", type=float, default=None,
                        help="build only if the estimate is below this (default: 80%% "
                             "of the memory available now)")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_one(args.child)))
        return

    from jaxsolve.builders import estimate_bytes, format_bytes  # noqa: PLC0415

    limit = (args.max_gib * 2**30 if args.max_gib is not None
             else 0.8 * _available_bytes())
    rows = []
    print(f"{'game':<20}{'histories':>14}{'terminals':>14}{'infosets':>11}{'seconds':>9}"
          f"{'tree':>12}{'B/hist':>8}{'estimate':>12}{'peak RSS':>12}")
    for item in args.games:
        spec, _ = _spec_and_build(item)
        need = estimate_bytes(spec)
        if args.estimate_only or need > limit:
            why = "estimate only" if args.estimate_only else f"not built: > {format_bytes(limit)}"
            print(f"{item:<20}{spec.num_nodes:>14,}{spec.num_terminals:>14,}{'':>11}{'':>9}"
                  f"{'':>12}{'':>8}{format_bytes(need):>12}  ({why})")
            rows.append({"game": item, "histories": spec.num_nodes,
                         "terminals": spec.num_terminals, "estimate_bytes": need})
            continue
        out = subprocess.run([sys.executable, __file__, "--child", item], check=True,
                             capture_output=True, text=True).stdout
        row = json.loads(out.strip().splitlines()[-1])
        rows.append(row)
        print(f"{item:<20}{row['histories']:>14,}{row['terminals']:>14,}{row['infosets']:>11,}"
              f"{row['seconds']:>9.2f}{format_bytes(row['tree_bytes']):>12}"
              f"{row['bytes_per_history']:>8.1f}{format_bytes(need):>12}"
              f"{format_bytes(row['peak_rss_bytes']):>12}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    import jaxsolve.allocator  # a program of its own: keeps freed memory, as `jaxsolve` does
    jaxsolve.allocator.keep_freed_memory()
    main()
