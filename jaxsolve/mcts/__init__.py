"""Batched, jittable Monte-Carlo tree search for perfect-information games, game-agnostic.

The interface is mctx's: the search knows a game only through two callbacks of the
caller, the root (`RootFnOutput`: prior logits, value, embedding and legal mask, [B]
roots at once) and `recurrent_fn(params, key, action, embedding) -> (RecurrentFnOutput,
embedding)`, which steps the environment and evaluates the model with explicit
`params`. Unlike mctx, every node is masked by its own legal actions and terminal
states are never expanded.

```python
root = mcts.RootFnOutput(prior_logits, value, embedding, legal_action_mask)  # [B, A], [B], ...
out = mcts.gumbel_policy(params, key, root, recurrent_fn, num_simulations=32)
out.action, out.action_weights  # [B], [B, A]: the move, and the policy target
```

* `alphazero_policy` (PUCT, Dirichlet root noise) and `gumbel_policy` (Gumbel
  AlphaZero: Sequential Halving at the root) return a `PolicyOutput`;
* `search` grows the `Tree` with any pair of selection rules (`puct_select`,
  `gumbel_root_select`, `gumbel_interior_select`), which see a node as a `NodeView`
  (`node_view`).

Private modules: `_tree` (the tree and the callbacks' types), `_search` (the loop,
one function per step of a simulation), `_selection` (the rules), `_packing` (how the
tree stores embeddings), `_noise` (the root noise), `_checks` (the arguments),
`_policies`. Nothing here imports Flax or a game.
"""

from jaxsolve.mcts._policies import SETTINGS, PolicyOutput, alphazero_policy, gumbel_policy
from jaxsolve.mcts._search import search
from jaxsolve.mcts._selection import (
    NodeView, Plan, considered_visits_table, gumbel_interior_select, gumbel_root_select,
    gumbel_waves, masked_logits, puct_select, q_by_parent_and_siblings,
    q_completed_by_mix_value)
from jaxsolve.mcts._tree import RecurrentFnOutput, RootFnOutput, Tree, node_view

__all__ = ["NodeView", "Plan", "PolicyOutput", "RecurrentFnOutput", "RootFnOutput", "SETTINGS",
           "Tree", "alphazero_policy", "considered_visits_table", "gumbel_interior_select",
           "gumbel_policy", "gumbel_root_select", "gumbel_waves", "masked_logits", "node_view",
           "puct_select", "q_by_parent_and_siblings", "q_completed_by_mix_value", "search"]
