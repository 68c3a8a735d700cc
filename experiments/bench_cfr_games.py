"""bench_cfr's games: what each `--games` key builds, OpenSpiel's name for the same game
(for OpenSpiel's solvers and the pyspiel check), and how many iterations each is run
and timed for (its schedule, full or --quick).

Nothing here imports JAX or OpenSpiel, so the parent process (which only spawns one
worker per game) can check the command line without claiming an accelerator."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Game:
    label: str
    pyspiel: tuple[str, dict]  # OpenSpiel's name and parameters of the same game
    sources: tuple[str, ...]  # where the tree comes from, first available: pyspiel,
    # builder (jaxsolve.builders), native (jaxsolve.games)
    builder: tuple[str, tuple, dict] | None = None  # builder function, args, kwargs
    native: str | None = None  # jaxsolve.games.load name
    jaxsolve_only: str | None = None  # why the OpenSpiel solvers never run on it


def _goofspiel(n: int) -> Game:
    return Game(f"Goofspiel {n}", ("goofspiel", {"num_cards": n, "imp_info": True,
                                                 "points_order": "descending"}),
                ("builder",), builder=("goofspiel", (n,), {}))


def _battleship(width, height, ships, shots) -> Game:
    kwargs = dict(board_width=width, board_height=height, ship_sizes=ships, num_shots=shots)
    params = {"board_width": width, "board_height": height, "num_shots": shots,
              "ship_sizes": f"[{';'.join(map(str, ships))}]",
              "ship_values": f"[{';'.join('1.0' for _ in ships)}]"}
    return Game(f"Battleship {width}x{height} ships {list(ships)} {shots} shots",
                ("battleship", params), ("builder",), builder=("battleship", (), kwargs))


_LIARS = ("liars_dice", {"numdice": 1, "dice_sides": 6})
GAMES = {
    "kuhn": Game("Kuhn poker", ("kuhn_poker", {}), ("pyspiel", "native"),
                 native="kuhn_poker"),
    "leduc": Game("Leduc poker", ("leduc_poker", {}), ("pyspiel", "native"),
                  native="leduc_poker"),
    "liars": Game("liar's dice 1x6", _LIARS, ("pyspiel", "builder"),
                  builder=("liars_dice", ((1, 1), 6), {})),
    "liars_builder": Game("liar's dice 1x6 (builder)", _LIARS, ("builder",),
                          builder=("liars_dice", ((1, 1), 6), {}),
                          jaxsolve_only="the OpenSpiel solvers on this game are the "
                                        "`liars` entry"),
    "goofspiel5": _goofspiel(5),
    "goofspiel6": _goofspiel(6),
    "goofspiel7": _goofspiel(7),
    "battleship": _battleship(3, 2, (2,), 3),
    "battleship3x3": _battleship(3, 3, (1,), 3),
}

# Iteration counts per game: (checkpoints, OpenSpiel block, jaxsolve block, repeats,
# evaluation repeats). jaxsolve times blocks of exactly `block` iterations (on its
# way to the checkpoints, then more after the last one until it has `repeats`).
_BIG = ((100, 1000), 10, 100, 5, 3)
FULL = {
    "kuhn": ((100, 1000), 100, 1000, 7, 7),
    "leduc": ((100, 1000), 100, 1000, 7, 7),
    "liars": ((100, 1000), 100, 100, 5, 3),
    "liars_builder": _BIG,
    "goofspiel5": ((100, 1000), 10, 100, 5, 5),
    "goofspiel6": _BIG, "goofspiel7": _BIG, "battleship": _BIG, "battleship3x3": _BIG,
}
_BIG_QUICK = ((10, 30), 10, 10, 2, 1)
QUICK = {
    "kuhn": ((10, 100), 10, 100, 3, 3),
    "leduc": ((10, 100), 10, 100, 3, 3),
    "liars": _BIG_QUICK, "liars_builder": _BIG_QUICK,
    "goofspiel5": ((10, 30), 10, 10, 3, 2),
    "goofspiel6": _BIG_QUICK, "goofspiel7": _BIG_QUICK, "battleship": _BIG_QUICK,
    "battleship3x3": _BIG_QUICK,
}
# jaxsolve's full-width CFR family (the keys of jaxsolve.SOLVERS whose state is a
# CFRState; tests/experiments/test_bench_cfr.py checks the list), for --solver: the
# benchmark evaluates average policies, which mmd, a last-iterate method, does not keep.
# Named here so the parent process need not import JAX.
SOLVER_NAMES = ("cfr", "cfr-alt", "cfr+", "lcfr", "dcfr", "pcfr+", "dcfr+", "pdcfr+", "sapcfr+")
# Any other OpenSpiel game: `openspiel:SPEC`, SPEC as pyspiel.load_game takes it.
OPENSPIEL = "openspiel:"
_OTHER_FULL, _OTHER_QUICK = ((100, 1000), 100, 100, 5, 3), ((10, 100), 10, 10, 3, 2)


def game_entry(key: str) -> Game:
    """GAMES[key], or for `openspiel:SPEC` (e.g. openspiel:liars_dice(dice_sides=4))
    a game compiled from OpenSpiel's, with OpenSpiel's solvers as competitors."""
    if key.startswith(OPENSPIEL):
        spec = key[len(OPENSPIEL):]
        return Game(spec, (spec, {}), ("pyspiel",))
    return GAMES[key]


def schedule(key: str, quick: bool) -> tuple:
    """(checkpoints, OpenSpiel block, jaxsolve block, repeats, evaluation repeats)."""
    return (QUICK if quick else FULL).get(key, _OTHER_QUICK if quick else _OTHER_FULL)


def load_game(pyspiel, name: str, params: dict):
    """pyspiel.load_game of a name with parameters, or of a full spec string."""
    return pyspiel.load_game(name, params) if params else pyspiel.load_game(name)


# --games when none are given (--quick: QUICK_GAMES)
QUICK_GAMES = "goofspiel5,leduc"
DEFAULT_GAMES = "kuhn,leduc,liars"
