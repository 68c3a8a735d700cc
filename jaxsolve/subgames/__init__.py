"""Public states and subgames: parts of a game cut out to be solved on their own.

* `public`: `public_states(tree)`, the finest partition of each depth's histories into
  sets whose subtrees no infoset leaves;
* `subtree`: `subgame(tree, public_state, blueprint)`, such a set's subtrees as a
  `GameTree` below a chance node dealt by the blueprint's reach;
* `gadget`: `gadget(tree, states, blueprint, player, method)`, the re-solving gadget
  ("resolve", "max_margin" or "unsafe") of the public states of one depth, as one tree;
* `resolve`: `resolve(tree, blueprint, depth)`, every public state of a depth re-solved
  in one compiled call per player and written back; `write_back` puts a subgame's or a
  gadget's policy into the full game's, `restrict_policy` reads a subgame's out.

Below them: `splice` assembles trees from new nodes and copied subtrees, `histories`
computes reaches and values per history on the host.
"""

from jaxsolve.subgames.public import PublicState, PublicStates, public_states
from jaxsolve.subgames.subtree import Subgame, subgame
from jaxsolve.subgames.gadgets import METHODS, Gadget, gadget
from jaxsolve.subgames.resolving import (Resolution, resolve, restrict_policy, with_decisions,
                                         write_back)

# The public API (re-exported by `jaxsolve`).
__all__ = ["METHODS", "Gadget", "PublicState", "PublicStates", "Resolution", "Subgame",
           "gadget", "public_states", "resolve", "restrict_policy", "subgame", "with_decisions",
           "write_back"]
