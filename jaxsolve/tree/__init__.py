"""The compiled game: `GameTree`, an extensive-form game as flat, padded arrays.

One concept, one package, imports flowing one way:

* `sizes`: the static sizes and names of a game and the catalogue of its arrays;
* `layout`: what the kernels derive from the arrays (`KernelLayout`);
* `structure` and `checks`: that the arrays describe one game, and their ranges;
* `file`: the `.npz` format;
* `game_tree`: the `GameTree` type, built on all of the above;
* `arguments`: the checks of public arguments that are trees, players and policies.
"""

from jaxsolve.tree.game_tree import GameTree
from jaxsolve.tree.layout import SLOT_COSTS, KernelLayout, SlotCosts, slot_costs
from jaxsolve.tree.sizes import TreeNames, TreeSizes

# The public API (re-exported by `jaxsolve`).
__all__ = ["GameTree", "KernelLayout", "SLOT_COSTS", "SlotCosts", "TreeNames", "TreeSizes",
           "slot_costs"]
