"""The search tree and the callbacks' types: `RootFnOutput`, `RecurrentFnOutput`,
`Tree`, and the gathers that read a node's statistics from it (`node_view`).

The layout is compact because a simulation is a chain of small operations whose cost
is mostly fixed per operation, and because XLA:CPU gives an operation a second thread
once its operands exceed a few hundred KiB, where it then waits for that thread. So
the arrays the walk gathers from stay small and few:

* everything about a node, including the edge into it, is one row of
  `nodes [B, N + 1, 8]` (visits, q, value, raw value, reward, discount, terminal,
  parent id); the extra last row, all zeros, stands in for every unexpanded edge, so
  that reading an unexpanded child needs no mask;
* per edge there are only `children [B, N, A]` (the child's id, N if unexpanded) and
  the prior `logits [B, N, A]` as the model gave them (the dtype minimum where
  illegal), one row of each written per expansion; the prior's softmax is taken when
  a node is selected from (`NodeView`), which only the walk's nodes need.

Every gather indexes the batch and node axes as one flattened axis, with row id
b * M + node, rather than as a batched gather (`operand_batching_dims`): XLA expands a
batched gather's indices into a separate concatenation kernel, while the flat id is
elementwise and fuses into the gather. The ids are int32; `search` checks that every
flat array stays below 2**31 cells.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, NamedTuple, Optional

import jax
import jax.numpy as jnp

from jaxsolve.mcts._selection import NodeView, masked_logits, softmax_legal

UNVISITED = -1  # `Tree.children_index` of an unexpanded edge
ROOT = 0  # the root's node id

# Columns of Tree.nodes [B, N + 1, :]. Reward and discount are those of the edge into
# the node (0 at the root) and N_Q its q-value, reward + discount * value; selection
# reads the first two columns of every child. N_PARENT is the parent's id (the root's
# is itself), so the backup climbs from the leaf without a recorded path.
N_VISITS, N_Q, N_VALUE, N_RAW, N_REWARD, N_DISCOUNT, N_TERMINAL, N_PARENT = range(8)
NODE_FIELDS = 8


class RootFnOutput(NamedTuple):
    """The root of a search, as mctx's `RootFnOutput` plus the legal mask.

    Attributes:
      prior_logits: `[B, A]` the model's prior logits.
      value: `[B]` the value for the player to move at the root.
      embedding: any pytree of `[B, ...]` arrays, what `recurrent_fn` reads.
      legal_action_mask: `[B, A]` bool.
    """

    prior_logits: jax.Array
    value: jax.Array
    embedding: Any
    legal_action_mask: jax.Array


class RecurrentFnOutput(NamedTuple):
    """What `recurrent_fn(params, key, action [B], embedding) -> (RecurrentFnOutput, new
    embedding)` returns for the new states.

    Attributes:
      reward: `[B]` the reward of the player who acted.
      discount: `[B]` -1 when the other player moves next (two-player zero-sum), +1
        when the same player does, 0 into a terminal state.
      prior_logits: `[B, A]` the model's prior logits at the new state.
      value: `[B]` the value for the player to move at the new state.
      legal_action_mask: `[B, A]` bool, all False at a terminal state (whose value and
        prior are then ignored: its worth is the reward on the edge into it).
    """

    reward: jax.Array
    discount: jax.Array
    prior_logits: jax.Array
    value: jax.Array
    legal_action_mask: jax.Array


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Tree:
    """Search tree; node i is created by simulation i (node 0 is the root).

    The arrays are the compact layout of the module docstring; the properties give
    mctx-style views (for inspection and tests). While the search runs, `embeddings`
    holds the stored form instead (`_search.init_tree`): node-major `[N, B, ...]`,
    bit-packed where `_packing` can.

    Attributes:
      nodes: `[B, N + 1, 8]` float, each node's statistics (visits, q, value, raw value,
        reward, discount, terminal, parent); row N is the all-zero unexpanded stand-in.
      children: `[B, N, A]` int32 child ids, N where unexpanded.
      logits: `[B, N, A]` the model's prior logits; the dtype minimum where illegal.
      embeddings: pytree of `[B, N, ...]`, each node's embedding.
    """

    ROOT_INDEX: ClassVar[int] = ROOT
    UNVISITED: ClassVar[int] = UNVISITED

    nodes: jax.Array
    children: jax.Array
    logits: jax.Array
    embeddings: Any

    @property
    def num_nodes(self):
        return self.children.shape[1]

    @property
    def children_index(self):
        """[B, N, A] int32 child ids, `UNVISITED` where unexpanded (mctx's)."""
        return jnp.where(self.children == self.num_nodes, UNVISITED, self.children)

    def _children_field(self, k):
        flat = self.children.reshape(self.children.shape[0], -1)
        return jnp.take_along_axis(self.nodes[..., k], flat, 1).reshape(self.children.shape)

    @property
    def children_qvalues(self):
        return self._children_field(N_Q)

    @property
    def children_visits(self):
        return self._children_field(N_VISITS).astype(jnp.int32)

    @property
    def children_values(self):
        return self._children_field(N_VALUE)

    @property
    def children_rewards(self):
        return self._children_field(N_REWARD)

    @property
    def children_discounts(self):
        return self._children_field(N_DISCOUNT)

    @property
    def children_prior_logits(self):
        """Masked: legal maximum 0, illegal at the dtype minimum."""
        return masked_logits(self.logits, self.legal, -1)

    @property
    def prior(self):
        """softmax of the prior logits over legal actions (0 where illegal)."""
        return softmax_legal(self.children_prior_logits, self.legal, -1)

    @property
    def legal(self):
        return self.logits > jnp.finfo(self.logits.dtype).min

    @property
    def terminal(self):
        return self.nodes[:, :-1, N_TERMINAL] > 0

    @property
    def node_visits(self):
        return self.nodes[:, :-1, N_VISITS].astype(jnp.int32)

    @property
    def node_values(self):
        return self.nodes[:, :-1, N_VALUE]

    @property
    def raw_values(self):
        return self.nodes[:, :-1, N_RAW]


# ---------------------------------------------------------------------- gathers
def batch_offsets(b, m, like, batch_axis=0):
    """b * m offsets [.., b, ..], shaped to broadcast against `like` whose batch axis is
    `batch_axis`: added to a node id it gives the row id in the flattened [B * M] axis."""
    shape = [1] * like.ndim
    shape[batch_axis] = b
    return (jnp.arange(b, dtype=like.dtype) * m).reshape(shape)


def _flat_gather(flat, idx, offset_first):
    """Rows of flat [R, ...] at row ids idx [...] (in range) -> idx.shape + the row's
    shape, or the row's shape + idx.shape with `offset_first`."""
    rest = flat.ndim - 1
    nd = idx.ndim
    offset_dims = tuple(range(rest)) if offset_first else tuple(range(nd, nd + rest))
    dnums = jax.lax.GatherDimensionNumbers(offset_dims=offset_dims, collapsed_slice_dims=(0,),
                                           start_index_map=(0,))
    return jax.lax.gather(flat, idx[..., None], dnums, (1,) + flat.shape[1:],
                          mode=jax.lax.GatherScatterMode.PROMISE_IN_BOUNDS)


def gather_actions(x, node):
    """x [B, M, A] at node [B] or [B, k] -> [A, B] or [A, B, k]: the rows, actions-major."""
    b, m, a = x.shape
    return _flat_gather(x.reshape(b * m, a), node + batch_offsets(b, m, node), True)


def gather_children(nodes, child_row, fields=2):
    """The first `fields` columns of nodes [B, N + 1, F] at child ids [A, B, ...] (the
    batch on axis 1) -> [A, B, ..., fields]."""
    b, m, f = nodes.shape
    flat = nodes.reshape(b * m, f)[:, :fields]
    return _flat_gather(flat, child_row + batch_offsets(b, m, child_row, 1), False)


def gather_rows(x, node, node_axis: int = 1):
    """x [B, M, ...] (or [M, B, ...] with `node_axis=0`) at node [B] or [B, k] (in range)
    -> [B, ...] or [B, k, ...]."""
    if node_axis == 1:
        b, m = x.shape[:2]
        idx = node + batch_offsets(b, m, node)
    else:
        m, b = x.shape[:2]
        idx = node * b + batch_offsets(b, 1, node)
    return _flat_gather(x.reshape((b * m,) + x.shape[2:]), idx, False)


def pick(row, act):
    """row [A, B] at act [B] -> [B] (a one-hot reduction, vectorised over the batch)."""
    hit = jnp.arange(row.shape[0], dtype=act.dtype)[:, None] == act[None]
    return jnp.sum(jnp.where(hit, row, 0), 0, dtype=row.dtype)


def view(child_stats, logits, own) -> NodeView:
    """A `NodeView` from the children's (visits, q) [A, B, 2], the node's stored logits
    [A, B] (the dtype minimum where illegal) and its own row [B, 8]."""
    legal = logits > jnp.finfo(logits.dtype).min
    masked = masked_logits(logits, legal, 0)
    return NodeView(child_stats[..., N_VISITS], child_stats[..., N_Q], masked,
                    softmax_legal(masked, legal, 0), legal, own[:, N_VISITS],
                    own[:, N_VALUE], own[:, N_RAW])


def node_view(tree: Tree, node: Optional[jax.Array] = None) -> NodeView:
    """The statistics of `node` for action selection (actions-major, see `NodeView`).

    Args:
      tree: the search tree.
      node: `[B]` int node ids; None is the root (static slices).

    Returns:
      The `NodeView`: per-action arrays `[A, B]`, per-node arrays `[B]`.
    """
    if node is None:  # static slices
        child_row = tree.children[:, ROOT].T
        return view(gather_children(tree.nodes, child_row), tree.logits[:, ROOT].T,
                    tree.nodes[:, ROOT])
    child_row = gather_actions(tree.children, node)
    return view(gather_children(tree.nodes, child_row), gather_actions(tree.logits, node),
                gather_rows(tree.nodes, node))


__all__ = ["NODE_FIELDS", "ROOT", "RecurrentFnOutput", "RootFnOutput", "Tree", "UNVISITED",
           "node_view"]
