"""Batched, jittable Monte-Carlo tree search: the tree, and `search`, which grows it.

The rules it calls to pick actions are in `selection` (PUCT, Gumbel), the storage of
the nodes' embeddings in `packing`, and the policies users call (`alphazero_policy`,
`gumbel_policy`) in `policies`.

The interface follows mctx: the model is a callback `recurrent_fn(params, key, action,
embedding) -> (RecurrentFnOutput, embedding)` with explicit `params`; values are
backed up as `q = reward + discount * value`, so two-player zero-sum games flip the
sign with `discount = -1` (and `discount = 0` into a terminal state). Differences:

* legal moves are masked at *every* node (mctx masks only the root): the callback
  returns each new node's `legal_action_mask`; a node with no legal move is terminal,
  its value is 0 (its outcome is the reward on the edge into it) and it is never
  expanded, so no simulation is spent beyond the end of the game;
* the whole batch walks the tree in lockstep, and the backup climbs every path by
  parent pointers in lockstep too (one [B]-row scatter per level);
* ties are broken by the lowest action index instead of by 1e-7 random noise.

With masking that mctx's root-only masking cannot notice (the callback masks its own
logits), no terminal state inside the tree and no exact tie between PUCT scores, the
visit counts equal mctx's `muzero_policy` / `gumbel_muzero_policy` on the same key,
with the root noise off or on: the policies split their key in mctx's order, so the
Dirichlet and Gumbel noise are mctx's own (tests/test_alphazero_search.py).

Performance notes (XLA:CPU, batch 256, tens of simulations). A simulation is a chain
of small ops, each costing about 0.3-4 us whatever its size, and XLA:CPU splits a loop
fusion over two threads once its operands exceed ~512 KiB (parallel_task_assignment.cc):
a gather of 256 rows from a [256, 33, 9, 5] array then waits for a second core, tens
of microseconds as soon as that core is busy. The layout therefore keeps every array
the loop gathers from small, and the loop carries few arrays:

* everything about a node, including the edge into it, is one row of
  `nodes [B, N + 1, 8]` (visits, q, value, raw value, reward, discount, terminal,
  parent id); the extra last row is an all-zero stand-in for every unexpanded edge;
* per edge there are only `children [B, N, A]` (child id, N if unexpanded) and the
  prior `logits [B, N, A]` as the model gave them (the dtype minimum where illegal),
  one row each written per expansion; the prior's softmax is taken when a node is
  selected from, where it is cheap (next point);
* selection is actions-major: a node's rows, and the (visits, q) of its children, are
  gathered straight into [A, B] arrays (`NodeView`), so every reduction over actions
  (max, sums, argmax) runs along the major axis, vectorised across the batch.
  XLA:CPU emits a reduction over a minor axis of 9 as a scalar loop per row, 1-3 us
  for [256, 9]; along the major axis it is a few vector instructions. This cut the
  Gumbel search by ~11% (5.69 -> 5.05 and 5.94 -> 5.27 ms per call in two runs, each
  in one process, same visit counts);
* the embedding leaves the model reads are bit-packed into at most four int32
  arrays, node-major [N, B, w], so storing the new node's state is one contiguous
  block per array and fetching the parent's one gather each. Which leaves it reads is
  found once, at trace time, from the jaxpr of `recurrent_fn` (`packing.leaves_read`:
  a leaf is read if the outputs, or a stored leaf that is read, depend on it). The others
  (for the pursuit-evasion game the observation, the legal mask and the rewards, 46
  of 52 words, which its step recomputes) are stored apart, one array each; when the
  caller does not use the tree's embeddings, as the policies do not, XLA removes
  them from the loop. This cut the Gumbel search by ~10% (5.52 -> 4.94 ms in one
  process, with the game's step no longer passing a terminal state's observation
  through);
* the leaf and its parent are written by one scatter; the rest of the path below the
  root is walked up with one [B]-row scatter per level, carrying (q, reward,
  discount) as one array, and the root is updated once at the end.

Cost per simulation at batch 256, 32 simulations (XLA:CPU profile, 10th percentile
per op): the model (network and environment step) ~100 us, the same work as in
mctx; ours ~8 us for the root selection, ~15 us per interior level (~1.2 per
simulation with Gumbel), ~3 us to store the new node's state and prior, ~10 us to
link it and back up. In such profiles the network's first two layers look slower
inside the search than in a loop alone (11 -> 17 us and 42 -> 53 us medians). That
is the profiler's doing, not the search's: a synthetic loop with ~100 small kernels
between model calls shows the same in a profile, whatever the size of the array
those kernels touch (9 KB or 300 KB), but timed without the profiler it costs no more
than the model alone plus the kernels alone (0.23-0.48 ms less, in four runs of
experiments/profile_artifact.py). Per-op profile times are therefore upper bounds.
Without the profiler, running a part twice per simulation measures it: the whole walk
adds ~0.65 ms of the ~1.3 ms the search costs beyond the model, the interior rule's
arithmetic 0.07-0.23 ms and the root rule's nothing measurable. The walk's cost is its
gathers and per-level bookkeeping, not the rules.

What was measured and not kept, about forty variants over sessions 5-21 with
their paired figures, is in experiments/bench_mcts_history.md ("Tried and not kept"):
other layouts of the node and edge statistics, carried root statistics, unrolled,
split or two-lane loops, two host devices, XLA:CPU flags, stored priors. Two lessons
from it shape this code. A change that is cheaper alone is often slower inside the
loop: XLA:CPU's thunk executor hands half of its ready queue to the other thread when
more than 8 kernels are ready at once, and splits a loop fusion over two threads above
a cost threshold, and each hand-off waits ~12-25 us for that thread; so a variant is
judged only by paired runs of the whole search with the same visit counts. And the
second core cannot be put to work: the network's dots run on one thread near its peak,
and everything else is a chain of small kernels on the same thread.

Waves (`search(plan=...)`, `gumbel_policy(wave_sizes=...)`): Gumbel's Sequential
Halving fixes in advance which root actions most rounds visit, and walks below
different root actions share no node, so those simulations can run together, one
model call for the whole round: 15 sequential steps instead of 32 at 9 considered
actions and 32 simulations, with the visit counts of one-at-a-time search. Measured on
the 2-core CPU (experiments/bench_mcts.py --waves) this is *slower* at every batch
size from 1 to 256 (by 8-28%): there the cost of a step grows with its rows (the
search overhead is ~1.0, 1.4, 2.8 and 8.3 ms for 32 simulations at B = 64, 128,
256, 512, and the network costs more per row at 512 rows than at 256), so fewer,
wider steps save nothing, and each extra loop segment costs a few tens of us. A
segment of count 1 runs outside any loop, where a simulation costs ~70-110 us more
than inside one: nine single simulations inline, then 23 in a loop, took 5.51 and
5.90 ms against 4.85 ms for one loop of 32 (session 10). The network alone is cheaper
per row only from ~2048 rows on (8192 rows: 3.2-3.3 ms in calls of 256, 2.1 ms in
calls of 2048 or more), which only the first wave reaches. It is
therefore off by default; it is meant for accelerators, where a step's latency, not
its rows, is the cost.

Float sums whose order matters are plain `jnp.sum`, as in mctx; order-free reductions
(min, max) share one variadic reduction.

References: Silver et al. (2017/2018) for PUCT with Dirichlet root noise; Schrittwieser
et al. (2020), Appendix B, for the pb_c schedule and the min-max q normalisation;
Danihelka et al., "Policy improvement by planning with Gumbel" (ICLR 2022).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp

from jaxsolve.alphazero import checks, packing
from jaxsolve.alphazero.selection import (  # noqa: F401  (re-exported: the rules live there)
    NodeView, Plan, considered_visits_table, gumbel_interior_select, gumbel_root_select,
    gumbel_waves, masked_logits, puct_select, q_by_parent_and_siblings,
    q_completed_by_mix_value, softmax_legal)

UNVISITED = -1
ROOT = 0

# Columns of Tree.nodes [B, N + 1, :]. Reward and discount are those of the edge into
# the node (0 at the root) and N_Q its q-value, reward + discount * value; selection
# reads the first two columns of every child. N_PARENT is the parent's id (the root's
# is itself), so the backup climbs from the leaf without a recorded path.
N_VISITS, N_Q, N_VALUE, N_RAW, N_REWARD, N_DISCOUNT, N_TERMINAL, N_PARENT = range(8)
_NODE_FIELDS = 8


class RootFnOutput(NamedTuple):
    """The root of a search, as mctx's `RootFnOutput` plus the legal mask:
    `prior_logits` [B, A], `value` [B] (for the player to move at the root),
    `embedding` (any pytree of [B, ...], what `recurrent_fn` reads) and
    `legal_action_mask` [B, A] bool."""

    prior_logits: jax.Array  # [B, A]
    value: jax.Array  # [B], for the player to move at the root
    embedding: Any  # pytree of [B, ...]
    legal_action_mask: jax.Array  # [B, A] bool


class RecurrentFnOutput(NamedTuple):
    """What `recurrent_fn(params, key, action [B], embedding) -> (RecurrentFnOutput,
    new embedding)` returns for the new states: `reward` [B] for the player who acted;
    `discount` [B], -1 when the other player moves next (two-player zero-sum), +1 when
    the same player does, 0 into a terminal state; `prior_logits` [B, A]; `value` [B]
    for the player to move at the new state; `legal_action_mask` [B, A] bool, all
    False at a terminal state (whose value and prior are then ignored: its worth is
    the reward on the edge into it)."""

    reward: jax.Array  # [B], for the player who acted
    discount: jax.Array  # [B], -1 between alternating players, 0 into a terminal state
    prior_logits: jax.Array  # [B, A]
    value: jax.Array  # [B], for the player to move at the new state
    legal_action_mask: jax.Array  # [B, A] bool; all False at a terminal state



@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Tree:
    """Search tree; node i is created by simulation i (node 0 is the root).

    The arrays are the compact layout of the module docstring; the properties give
    mctx-style views (for inspection and tests)."""

    nodes: jax.Array  # [B, N + 1, 8] float; row N is the all-zero unexpanded stand-in
    children: jax.Array  # [B, N, A] int32 child id, N where unexpanded
    logits: jax.Array  # [B, N, A] the model's prior logits; the dtype minimum where illegal
    embeddings: Any  # pytree of [B, N, ...] (stored node-major while searching)

    @property
    def num_nodes(self):
        return self.children.shape[1]

    @property
    def children_index(self):
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



def _view(child_stats, logits, own) -> NodeView:
    """Children's (visits, q) [A, B, 2], stored logits [A, B] (the dtype minimum where
    illegal), the node's own row [B, 8]."""
    legal = logits > jnp.finfo(logits.dtype).min
    masked = masked_logits(logits, legal, 0)
    return NodeView(child_stats[..., N_VISITS], child_stats[..., N_Q], masked,
                    softmax_legal(masked, legal, 0), legal, own[:, N_VISITS],
                    own[:, N_VALUE], own[:, N_RAW])



# Every gather and scatter below indexes the batch and node axes as one flattened axis,
# with row id b * M + node, rather than as a batched gather (operand_batching_dims):
# XLA expands a batched gather's indices into a separate concatenation kernel, while
# the flat id is elementwise and fuses into the gather. ~2% of the Gumbel search at
# batch 256 (paired runs, 0.965, 0.984 and 0.994 of the time, same visit counts).
# The ids are int32: `search` checks that every flat array stays below 2**31 cells.
def _batch_offsets(b, m, like, batch_axis=0):
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


def _gather_actions(x, node):
    """x [B, M, A] at node [B] or [B, k] -> [A, B] or [A, B, k]: the rows, actions-major."""
    b, m, a = x.shape
    return _flat_gather(x.reshape(b * m, a), node + _batch_offsets(b, m, node), True)


def _gather_children(nodes, child_row, fields=2):
    """The first `fields` columns of nodes [B, N + 1, F] at child ids [A, B, ...] (the
    batch on axis 1) -> [A, B, ..., fields]."""
    b, m, f = nodes.shape
    flat = nodes.reshape(b * m, f)[:, :fields]
    return _flat_gather(flat, child_row + _batch_offsets(b, m, child_row, 1), False)


def _gather_rows(x, node, node_axis: int = 1):
    """x [B, M, ...] (or [M, B, ...] with `node_axis=0`) at node [B] or [B, k] (in range)
    -> [B, ...] or [B, k, ...]."""
    if node_axis == 1:
        b, m = x.shape[:2]
        idx = node + _batch_offsets(b, m, node)
    else:
        m, b = x.shape[:2]
        idx = node * b + _batch_offsets(b, 1, node)
    return _flat_gather(x.reshape((b * m,) + x.shape[2:]), idx, False)


def _pick(row, act):
    """row [A, B] at act [B] -> [B] (a one-hot reduction, vectorised over the batch)."""
    hit = jnp.arange(row.shape[0], dtype=act.dtype)[:, None] == act[None]
    return jnp.sum(jnp.where(hit, row, 0), 0, dtype=row.dtype)


def node_view(tree: Tree, node: Optional[jax.Array] = None) -> NodeView:
    """The statistics of `node` [B] (actions-major, see `NodeView`); `node=None` is the
    root."""
    if node is None:  # static slices
        child_row = tree.children[:, ROOT].T
        return _view(_gather_children(tree.nodes, child_row), tree.logits[:, ROOT].T,
                     tree.nodes[:, ROOT])
    child_row = _gather_actions(tree.children, node)
    return _view(_gather_children(tree.nodes, child_row), _gather_actions(tree.logits, node),
                 _gather_rows(tree.nodes, node))



# ----------------------------------------------------------------------- the search
def search(params, key: jax.Array, root: RootFnOutput, recurrent_fn: Callable, *,
           num_simulations: int, root_select: Callable, interior_select: Callable,
           max_depth: Optional[int] = None, plan: Optional[Plan] = None) -> Tree:
    """Runs `num_simulations` simulations from `root` and returns the tree.

    `root_select` / `interior_select` map a `NodeView` to actions [B]. `max_depth`
    (None or an int >= 1, in edges) caps the walk; a walk stopped by the cap, or by a
    terminal node, backs up the value stored at the node it reached instead of
    expanding a new one.

    `plan` (static; default one simulation at a time) groups the simulations into
    waves: a tuple of (width, count) segments, `count` waves of `width` simulations,
    in order, summing to `num_simulations`. The `width` walks of a wave start together
    through the distinct root actions `root_select(view, width=width)` returns
    ([B, width]), descend in lockstep, expand in one model call on B * width rows and
    back up together. That equals running them one after another exactly when no walk
    of a wave can change another's root action: below the root they share no node,
    so only the root's choice could couple them (`gumbel_waves` says when it cannot).
    The root's value then averages the wave's returns in one sum (rounding may differ
    from one at a time in the last bit); visit counts and every other node are equal.
    """
    num_simulations = checks.num_simulations(num_simulations, "search")
    b, a = checks.root(root, "search")
    max_depth = checks.static("search", "max_depth", max_depth,
                              checks.optional(checks.integer(1)))
    dt = root.value.dtype
    if plan is None:
        plan = ((1, num_simulations),) if num_simulations else ()
    plan = tuple((int(w), int(c)) for w, c in plan)
    if any(w < 1 or c < 1 for w, c in plan) or sum(w * c for w, c in plan) != num_simulations:
        raise ValueError(f"plan {plan} must be (width >= 1, count >= 1) segments whose "
                         f"width * count sum to num_simulations={num_simulations}")
    if max((w for w, _ in plan), default=1) > a:
        raise ValueError(f"plan {plan}: a wave is wider than the {a} root actions")
    cap = num_simulations if max_depth is None else max(1, min(max_depth, num_simulations))
    n_nodes = num_simulations + 1
    if b * (n_nodes + 1) * max(a, _NODE_FIELDS) >= 2 ** 31:
        raise ValueError(f"batch {b} x {num_simulations} simulations x {a} actions is too large "
                         f"for the tree's int32 indices (at most 2**31 cells per array); "
                         f"split the batch")
    checks.model(recurrent_fn, params, key, jnp.zeros((b,), jnp.int32), root.embedding, b, a,
                 "search")
    none = n_nodes  # the all-zero stand-in row of unexpanded edges
    layout = packing.plan_packing(root.embedding, n_nodes, packing.leaves_read(
        recurrent_fn, params, key, jnp.zeros((b,), jnp.int32), root.embedding))
    low = jnp.finfo(dt).min

    # --- initial tree
    root_logits = jnp.where(root.legal_action_mask, root.prior_logits.astype(dt), low)
    root_terminal = ~jnp.any(root.legal_action_mask, -1)
    nodes = jnp.zeros((b, n_nodes + 1, _NODE_FIELDS), dt).at[:, ROOT].set(jnp.stack(
        [jnp.ones((b,), dt), jnp.zeros((b,), dt), root.value.astype(dt), root.value.astype(dt),
         jnp.zeros((b,), dt), jnp.zeros((b,), dt), root_terminal.astype(dt),
         jnp.full((b,), ROOT, dt)], -1))
    # Broadcast from a root array (not jnp.full) so that inside shard_map it varies
    # over the mesh axes the root does, as the loop's updates of it will.
    children = jnp.broadcast_to(jnp.full_like(root_terminal, none, jnp.int32)[:, None, None],
                                (b, n_nodes, a))
    all_logits = jnp.full((b, n_nodes, a), low, dt).at[:, ROOT].set(root_logits)
    # The root's prior never changes: its actions-major view parts are computed once.
    root_logits_am = root_logits.T
    if layout is not None:
        # Node-major [N, B, w]: storing a new node's state is one contiguous block.
        embeddings = tuple(jnp.zeros((n_nodes, b) + c.shape[1:], c.dtype).at[ROOT].set(c)
                           for c in packing.pack(layout, root.embedding))
    else:
        embeddings = jax.tree.map(
            lambda x: jnp.zeros((b, n_nodes) + x.shape[1:], x.dtype).at[:, ROOT].set(x),
            root.embedding)
    # Flat row ids of `nodes` (see `_batch_offsets`); a write to a row id from
    # `dropped(slot)`, past the last row, is discarded by the scatter (mode="drop").
    node_row = lambda node: node + _batch_offsets(b, n_nodes + 1, node)
    dropped = lambda slot: b * (n_nodes + 1) + slot

    def choose(tree_arrays, node, own, k):
        """Interior selection at `node` [B, k] with own rows `own` [B, k, 8]:
        (action, child id, child row), [B, k] each ([B, k, 8] for the row)."""
        nodes, children, all_logits = tree_arrays
        child_row = _gather_actions(children, node).reshape(a, b * k)
        logits_row = _gather_actions(all_logits, node).reshape(a, b * k)
        child_stats = _gather_children(nodes, child_row.reshape(a, b, k)).reshape(a, b * k, 2)
        act = interior_select(_view(child_stats, logits_row,
                                    own.reshape(b * k, -1))).astype(jnp.int32)
        child = _pick(child_row, act).reshape(b, k)
        return act.reshape(b, k), child, _gather_rows(nodes, child)

    def walk(tree_arrays, k):
        """The k walks of a wave from the root down to an unexpanded edge, a terminal
        node or the depth cap. Returns (parent, action, child id, child row [.., 8],
        length (edges)), each with leading [B, k]."""
        nodes, children, all_logits = tree_arrays
        with jax.named_scope("root_select"):
            view = _view(_gather_children(nodes, children[:, ROOT].T), root_logits_am,
                         nodes[:, ROOT])
            act = root_select(view)[:, None] if k == 1 else root_select(view, width=k)
            act = act.astype(jnp.int32)
            child = _gather_rows(children[:, ROOT][..., None], act)[..., 0]  # [B, k]
            stats = _gather_rows(nodes, child)
        # Made from `act`, not by jnp.zeros: inside shard_map the carry must vary over
        # the same mesh axes as the body's outputs do.
        node = jnp.zeros_like(act)
        length = node + 1
        go = lambda child, stats, length: ((child != none) & (stats[..., N_TERMINAL] == 0)
                                           & (length < cap))

        def body(c):
            node, act, child, stats, length, active = c
            node = jnp.where(active, child, node)
            new_act, new_child, new_stats = choose(tree_arrays, node, stats, k)
            act = jnp.where(active, new_act, act)
            child = jnp.where(active, new_child, child)
            stats = jnp.where(active[..., None], new_stats, stats)
            length = length + active.astype(jnp.int32)
            active = active & go(child, stats, length)
            return node, act, child, stats, length, active

        init = (node, act, child, stats, length, go(child, stats, length))
        node, act, child, stats, length, _ = jax.lax.while_loop(
            lambda c: jnp.any(c[5]), body, init)
        return node, act, child, stats, length

    def backup(nodes, start, length, qrg, k):
        """Climbs every path by parent pointers from `start` [B, k], the second node
        above its leaf (the caller writes the leaf and its parent), to the root's
        child, in lockstep (aligned at the leaves): q <- r + g * q with the reward and
        discount of the edge below, then visits + 1 and the running mean of q, one
        [B, k]-row scatter per level. `qrg` [B, k, 3] is (q, reward, discount) at the
        parent; the loop carries it as one array. Then the root takes all k returns at
        once. Returns the nodes."""
        slot = jnp.arange(k, dtype=jnp.int32)

        def body(c):
            j, node, qrg, nodes = c
            live = length - 1 - j >= 1  # this level's node is below the root
            row = _gather_rows(nodes, node)
            q = qrg[..., 1] + qrg[..., 2] * qrg[..., 0]
            count, value = row[..., N_VISITS], row[..., N_VALUE]
            mean = (value * count + q) / (count + 1.0)
            q_in = row[..., N_REWARD] + row[..., N_DISCOUNT] * mean
            update = jnp.stack([count + 1.0, q_in, mean], -1)
            flat = nodes.reshape(b * (n_nodes + 1), _NODE_FIELDS)
            rows = jnp.where(live, node_row(node), dropped(slot))
            nodes = flat.at[rows, N_VISITS:N_VALUE + 1].set(
                update, mode="drop", unique_indices=True).reshape(nodes.shape)
            new = jnp.stack([q, row[..., N_REWARD], row[..., N_DISCOUNT]], -1)
            up = jnp.where(live, row[..., N_PARENT].astype(jnp.int32), node)
            return j + 1, up, jnp.where(live[..., None], new, qrg), nodes

        levels = jnp.max(length) - 1
        _, _, qrg, nodes = jax.lax.while_loop(lambda c: c[0] < levels, body,
                                              (jnp.int32(1), start, qrg, nodes))
        # The return each walk brings to the root: q itself where the parent was the
        # root, else r + g * q at the root's child.
        ret = jnp.where(length == 1, qrg[..., 0], qrg[..., 1] + qrg[..., 2] * qrg[..., 0])
        top = nodes[:, ROOT]
        count, value = top[:, N_VISITS], top[:, N_VALUE]
        mean = (value * count + jnp.sum(ret, -1)) / (count + k)
        q_in = top[:, N_REWARD] + top[:, N_DISCOUNT] * mean
        return nodes.at[:, ROOT, N_VISITS:N_VALUE + 1].set(jnp.stack([count + k, q_in, mean], -1))

    def expand_and_backup(sim, tree, walked, model_out, k):
        """Stores the new nodes of the wave starting at simulation `sim` (ids sim + 1
        ... sim + k), links them and backs their values up."""
        nodes, children, all_logits, embeddings = tree
        parent, action, child, stats, length = walked
        out, new_emb = model_out
        unflat = lambda x: x.reshape((b, k) + x.shape[1:])
        slot = jnp.arange(k, dtype=jnp.int32)
        expand = child == none
        new = sim + 1 + slot
        legal = unflat(out.legal_action_mask)
        terminal = ~jnp.any(legal, -1)
        value = jnp.where(terminal, 0.0, unflat(out.value)).astype(dt)
        put = lambda x, v: jax.lax.dynamic_update_slice_in_dim(x, v.astype(x.dtype), sim + 1, 1)
        all_logits = put(all_logits, jnp.where(legal, unflat(out.prior_logits).astype(dt), low))
        with jax.named_scope("store_embedding"):
            if layout is not None:
                embeddings = tuple(jax.lax.dynamic_update_slice_in_dim(
                    x, jnp.swapaxes(unflat(v), 0, 1), sim + 1, 0)
                    for x, v in zip(embeddings, packing.pack(layout, new_emb)))
            else:
                embeddings = jax.tree.map(lambda x, v: put(x, unflat(v)), embeddings, new_emb)
        cells = jnp.where(expand, (parent + _batch_offsets(b, n_nodes, parent)) * a + action,
                          children.size + slot)
        children = children.reshape(-1).at[cells].set(
            jnp.broadcast_to(new, (b, k)), mode="drop", unique_indices=True).reshape(children.shape)
        # The leaf: a new node (visits 1, its value), or an existing one (visits + 1).
        reward = jnp.where(expand, unflat(out.reward).astype(dt), stats[..., N_REWARD])
        discount = jnp.where(expand, unflat(out.discount).astype(dt), stats[..., N_DISCOUNT])
        leaf_value = jnp.where(expand, value, stats[..., N_VALUE])
        one = jnp.ones((b, k), dt)
        leaf_row = jnp.where(expand[..., None], jnp.stack(
            [one, reward + discount * value, value, value, reward, discount,
             terminal.astype(dt), parent.astype(dt)], -1),
            stats.at[..., N_VISITS].add(1.0))
        # ... and its parent, unless that is the root, which the
        # backup updates once for the whole wave: q = r + g * leaf value, one scatter.
        above = _gather_rows(nodes, parent)
        q = reward + discount * leaf_value
        count, mean_value = above[..., N_VISITS], above[..., N_VALUE]
        mean = (mean_value * count + q) / (count + 1.0)
        q_in = above[..., N_REWARD] + above[..., N_DISCOUNT] * mean
        above = jnp.concatenate([jnp.stack([count + 1.0, q_in, mean], -1), above[..., N_RAW:]], -1)
        index = jnp.stack([node_row(jnp.where(expand, new, child)),
                           jnp.where(parent == ROOT, dropped(slot), node_row(parent))], -1)
        nodes = nodes.reshape(b * (n_nodes + 1), _NODE_FIELDS).at[index].set(
            jnp.stack([leaf_row, above], 2), mode="drop", unique_indices=True).reshape(nodes.shape)
        with jax.named_scope("backup"):
            nodes = backup(nodes, above[..., N_PARENT].astype(jnp.int32), length,
                           jnp.stack([q, above[..., N_REWARD], above[..., N_DISCOUNT]], -1), k)
        return nodes, children, all_logits, embeddings

    def wave(sim, tree, k):
        """The k simulations sim ... sim + k - 1: walks, one model call, backup."""
        nodes, children, all_logits, embeddings = tree
        with jax.named_scope("walk"):
            walked = walk((nodes, children, all_logits), k)
        parent, action = walked[0], walked[1]
        flat = lambda x: x.reshape((b * k,) + x.shape[2:])
        # Expansion: every walk calls the model; only unvisited edges are linked.
        with jax.named_scope("fetch"):
            if layout is not None:
                emb = packing.unpack(layout, tuple(flat(_gather_rows(x, parent, node_axis=0))
                                             for x in embeddings))
            else:
                emb = jax.tree.map(lambda x: flat(_gather_rows(x, parent)), embeddings)
        with jax.named_scope("model"):
            model_out = recurrent_fn(params, jax.random.fold_in(key, sim), flat(action), emb)
        return expand_and_backup(sim, tree, walked, model_out, k)

    tree = (nodes, children, all_logits, embeddings)
    sim = 0
    for width, count in plan:
        if count == 1:
            tree = wave(sim, tree, width)
        else:
            tree = jax.lax.fori_loop(
                0, count, lambda t, tr, s=sim, w=width: wave(s + t * w, tr, w), tree)
        sim += width * count
    nodes, children, all_logits, embeddings = tree
    if layout is not None:
        embeddings = packing.unpack(layout, tuple(jnp.swapaxes(x, 0, 1) for x in embeddings))
    elif not num_simulations:
        embeddings = root.embedding
    return Tree(nodes=nodes, children=children, logits=all_logits, embeddings=embeddings)



__all__ = ["NodeView", "RecurrentFnOutput", "RootFnOutput", "Tree", "considered_visits_table",
           "gumbel_interior_select", "gumbel_root_select", "gumbel_waves", "node_view",
           "puct_select", "q_by_parent_and_siblings", "q_completed_by_mix_value", "search"]
