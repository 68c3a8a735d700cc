"""Public states and subgames: parts of a game cut out to be solved on their own.

* `public`: `public_states(tree)`, the finest partition of each depth's histories into
  sets whose subtrees no infoset leaves;
* `subtree`: `subgame(tree, public_state, blueprint)`, such a set's subtrees as a
  `GameTree` below a chance node dealt by the blueprint's reach; `write_back` puts a
  policy of the subgame into the full game's, `restrict_policy` reads it out.
"""

from jaxsolve.subgames.public import PublicState, PublicStates, public_states
from jaxsolve.subgames.subtree import Subgame, restrict_policy, subgame, write_back

# The public API (re-exported by `jaxsolve`).
__all__ = ["PublicState", "PublicStates", "Subgame", "public_states", "restrict_policy",
           "subgame", "write_back"]
