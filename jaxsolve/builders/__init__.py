"""Fast array-native builders: OpenSpiel games generated directly as GameTrees.

`jaxsolve.compile_game` walks a game history by history in Python, which is fine up
to a few million histories. The builders here produce the same GameTree (same
breadth-first node order, infoset ids, sequences and names as compiling the
OpenSpiel game) with vectorised NumPy, one tree depth at a time, so games with
10^7 - 10^8 histories build in seconds to minutes:

    from jaxsolve.builders import goofspiel, liars_dice, battleship
    tree = goofspiel(6)                      # 1.0e6 histories
    tree = liars_dice(dice=(1, 1), faces=6)  # 2.9e5 histories

Each builder first estimates the memory it needs (`*_spec` + `estimate_bytes`) and
refuses with a GameError above `max_bytes`. See `assemble` for how a level stream
becomes a tree, and each module for its game's rules and sizes.
"""

from jaxsolve.builders.assemble import (DEFAULT_MAX_BYTES, Level, Spec, assemble,
                                        estimate_bytes, format_bytes, tree_bytes)
from jaxsolve.builders.battleship import battleship, battleship_spec
from jaxsolve.builders.goofspiel import goofspiel, goofspiel_spec
from jaxsolve.builders.liars_dice import liars_dice, liars_dice_spec

__all__ = [
    "DEFAULT_MAX_BYTES", "Level", "Spec", "assemble", "battleship", "battleship_spec",
    "estimate_bytes", "format_bytes", "goofspiel", "goofspiel_spec", "liars_dice",
    "liars_dice_spec", "tree_bytes",
]
