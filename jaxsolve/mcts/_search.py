"""`search`: batched, jittable Monte-Carlo tree search, one function per step of a
simulation.

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
with the root noise off or on (tests/mcts/test_policies.py).

A simulation (`simulate`, the body of the loop) is five steps, each a function of the
tree and of what the step before returned:

1. `select_path` walks from the root: `root_select` picks the root's action, then
   `select_child` applies `interior_select` at each node below, until the walk reaches
   an unexpanded edge, a terminal node or `max_depth` edges. The batch walks in one
   `while_loop` that runs while any walk is live; a finished walk keeps its last step.
2. `fetch_embeddings` reads the stored embedding of the node the last edge leaves.
3. The model, `recurrent_fn`, steps from there, once for the whole batch.
4. `expand` stores the new node's prior logits and embedding in the rows of this
   simulation, links it under its parent and makes the `Leaf`: the new node's row
   (one visit, the model's value), or, where the walk stopped at a node already in
   the tree (terminal, or at the depth cap), that node's with one more visit, so that
   its stored value is backed up again and nothing is expanded.
5. `backup` writes the leaf's row and its parent's in one scatter, climbs the rest of
   the path by parent pointers (`_climb`) and updates the root once (`_update_root`).

Why the loop is shaped so. On XLA:CPU, at batch sizes in the hundreds, a simulation
is a chain of small kernels whose cost is mostly fixed per kernel, and XLA:CPU hands
work to a second thread when a kernel is large or many are ready at once, then waits
for that thread. So the loop carries few arrays and keeps them small (the layout is
in `_tree`), and:

* selection is actions-major: a node's rows and its children's (visits, q) are
  gathered straight into [A, B] arrays (`NodeView`), so every reduction over actions
  runs along the major axis, which XLA:CPU vectorises across the batch; along a short
  minor axis it emits a scalar loop per row;
* the embedding leaves the model reads are bit-packed into at most four int32
  arrays, node-major [N, B, w] (`_packing`), so that storing the new node's state is
  one contiguous block per array and fetching the parent's one gather each. Which
  leaves the model reads is found once, at trace time, from the jaxpr of
  `recurrent_fn`; the others (a game's observation, say, which its step recomputes)
  are stored apart, one array each, and XLA removes them from the loop when the
  caller does not read the tree's embeddings, as the policies do not;
* the backup needs no recorded path: every node stores its parent's id, and the
  walk's length says how far to climb;
* the root's prior never changes, so its actions-major logits are taken once, before
  the loop, and passed to every `select_path`.

A change to this loop is judged by paired runs of the whole search with the same
visit counts (experiments/bench_mcts.py): one that is cheaper alone can be slower
inside the loop, where it changes which kernels run at once.

Waves (`search(plan=...)`, `gumbel_policy(wave_sizes=...)`): Gumbel's Sequential
Halving fixes in advance which root actions most rounds visit, and walks below
different root actions share no node, so those simulations can run together, one
model call for the whole round, with the visit counts of one-at-a-time search
(`_selection.gumbel_waves`). On a CPU the cost of a step grows with its rows, so
fewer, wider steps save nothing there and each extra loop segment costs a little: the
policies run one simulation at a time unless asked. Waves are meant for
accelerators, where a step's latency, not its rows, is the cost.

References: Silver et al. (2017/2018) for PUCT with Dirichlet root noise; Schrittwieser
et al. (2020), Appendix B, for the pb_c schedule and the min-max q normalisation;
Danihelka et al., "Policy improvement by planning with Gumbel" (ICLR 2022).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, NamedTuple, Optional, Union

import jax
import jax.numpy as jnp

from jaxsolve import validate
from jaxsolve.errors import ArgumentError
from jaxsolve.mcts import _checks as checks
from jaxsolve.mcts import _packing as packing
from jaxsolve.mcts._selection import Plan
from jaxsolve.mcts._tree import (
    N_DISCOUNT, N_PARENT, N_RAW, N_REWARD, N_TERMINAL, N_VALUE, N_VISITS, NODE_FIELDS, ROOT,
    RecurrentFnOutput, RootFnOutput, Tree, batch_offsets, gather_actions, gather_children,
    gather_rows, pick, view)


class Path(NamedTuple):
    """Where the k walks of a wave (k = 1 but in waves) stopped: each field [B, k]."""

    parent: jax.Array  # [B, k] int32, the node the last edge leaves
    action: jax.Array  # [B, k] int32, that edge's action
    child: jax.Array  # [B, k] int32, the node it leads to; N (tree.num_nodes) if unexpanded
    child_row: jax.Array  # [B, k, 8] that node's row of `nodes` (all zeros if unexpanded)
    length: jax.Array  # [B, k] int32, edges from the root to `child`


class Leaf(NamedTuple):
    """Where each walk of a wave ends, as `expand` makes it for `backup`: [B, k] each."""

    node: jax.Array  # [B, k] int32: the new node, or the existing node the walk ended at
    row: jax.Array  # [B, k, 8] its row of `nodes` with this simulation's visit
    q: jax.Array  # [B, k] what it returns to its parent: reward + discount * value


def _node_rows(node, m):
    """Row ids [B, k] in `nodes` flattened to [B * m, 8] of the node ids node [B, k]."""
    return node + batch_offsets(node.shape[0], m, node)


def _dropped(b, m, slot):
    """Row ids past the last row of `nodes` flattened to [B * m, 8], one per slot [k]: a
    scatter with mode="drop" discards the writes there."""
    return b * m + slot


# ---------------------------------------------------------------- the initial tree
def init_tree(root: RootFnOutput, num_simulations: int,
              layout: Optional[packing.Packing]) -> Tree:
    """The tree before any simulation: room for `num_simulations` + 1 nodes, the root's row
    (one visit, its value, terminal if it has no legal action), its logits (the dtype
    minimum where illegal), every edge unexpanded.

    Args:
      root: the `RootFnOutput` of B roots with A actions.
      num_simulations: the simulations to come; N = num_simulations + 1 nodes.
      layout: how embeddings are stored packed (`_packing.plan_packing`), or None to
        store them as they are.

    Returns:
      The `Tree`: nodes `[B, N + 1, 8]`, children `[B, N, A]`, logits `[B, N, A]`; the
        embeddings in their stored form, each leaf of `root.embedding` `[B, ...]`
        becoming `[N, B, ...]` packed by `layout` (`_packing.pack`), or `[B, N, ...]` as
        it is when `layout` is None.
    """
    b, a = root.prior_logits.shape
    dt = root.value.dtype
    n_nodes = num_simulations + 1
    low = jnp.finfo(dt).min
    root_logits = jnp.where(root.legal_action_mask, root.prior_logits.astype(dt), low)
    root_terminal = ~jnp.any(root.legal_action_mask, -1)
    nodes = jnp.zeros((b, n_nodes + 1, NODE_FIELDS), dt).at[:, ROOT].set(jnp.stack(
        [jnp.ones((b,), dt), jnp.zeros((b,), dt), root.value.astype(dt), root.value.astype(dt),
         jnp.zeros((b,), dt), jnp.zeros((b,), dt), root_terminal.astype(dt),
         jnp.full((b,), ROOT, dt)], -1))
    # Broadcast from a root array (not jnp.full) so that inside shard_map it varies
    # over the mesh axes the root does, as the loop's updates of it will.
    children = jnp.broadcast_to(jnp.full_like(root_terminal, n_nodes, jnp.int32)[:, None, None],
                                (b, n_nodes, a))
    logits = jnp.full((b, n_nodes, a), low, dt).at[:, ROOT].set(root_logits)
    if layout is not None:
        embeddings = tuple(jnp.zeros((n_nodes, b) + c.shape[1:], c.dtype).at[ROOT].set(c)
                           for c in packing.pack(layout, root.embedding))
    else:
        embeddings = jax.tree.map(
            lambda x: jnp.zeros((b, n_nodes) + x.shape[1:], x.dtype).at[:, ROOT].set(x),
            root.embedding)
    return Tree(nodes=nodes, children=children, logits=logits, embeddings=embeddings)


# ------------------------------------------------------------------- selection
def select_child(tree: Tree, node: jax.Array, own: jax.Array,
                 interior_select: Callable) -> tuple:
    """One step down: `interior_select` at nodes `node` [B, k], whose own rows of
    `tree.nodes` are `own` [B, k, 8]. Returns (action [B, k] int32, child id [B, k]
    (N where the edge is unexpanded), child row [B, k, 8])."""
    b, _, a = tree.children.shape
    k = node.shape[1]
    child_row = gather_actions(tree.children, node).reshape(a, b * k)
    logits_row = gather_actions(tree.logits, node).reshape(a, b * k)
    child_stats = gather_children(tree.nodes, child_row.reshape(a, b, k)).reshape(a, b * k, 2)
    act = interior_select(view(child_stats, logits_row,
                               own.reshape(b * k, -1))).astype(jnp.int32)
    child = pick(child_row, act).reshape(b, k)
    return act.reshape(b, k), child, gather_rows(tree.nodes, child)


def _goes_on(child, row, length, none, max_depth):
    """[B, k] bool: the walk continues below `child`, which is expanded (not `none`),
    not terminal, and fewer than `max_depth` edges from the root."""
    return (child != none) & (row[..., N_TERMINAL] == 0) & (length < max_depth)


def _descend(carry, tree, interior_select, max_depth):
    """One level of `select_path`'s loop: the live walks step from their child down."""
    node, act, child, row, length, live = carry
    node = jnp.where(live, child, node)
    new_act, new_child, new_row = select_child(tree, node, row, interior_select)
    act = jnp.where(live, new_act, act)
    child = jnp.where(live, new_child, child)
    row = jnp.where(live[..., None], new_row, row)
    length = length + live.astype(jnp.int32)
    live = live & _goes_on(child, row, length, tree.num_nodes, max_depth)
    return node, act, child, row, length, live


def select_path(tree: Tree, root_logits: jax.Array, root_select: Callable,
                interior_select: Callable, width: int, max_depth: int) -> Path:
    """The `width` walks of a wave from the root down to an unexpanded edge, a terminal
    node or `max_depth` edges.

    Args:
      tree: the search tree.
      root_logits: `[A, B]` the root's stored logits, actions-major
        (`tree.logits[:, ROOT].T`).
      root_select: `(view) -> [B]` actions, and with `width` > 1
        `(view, width=width) -> [B, width]` distinct actions.
      interior_select: `(view) -> [B]` actions below the root.
      width: walks per wave (static; 1 but in waves).
      max_depth: the most edges a walk takes (a static int >= 1).

    Returns:
      The `Path`, each field `[B, width]`.
    """
    nodes, children = tree.nodes, tree.children
    with jax.named_scope("root_select"):
        root_view = view(gather_children(nodes, children[:, ROOT].T), root_logits,
                         nodes[:, ROOT])
        act = root_select(root_view)[:, None] if width == 1 else root_select(root_view,
                                                                             width=width)
        act = act.astype(jnp.int32)
        child = gather_rows(children[:, ROOT][..., None], act)[..., 0]  # [B, width]
        row = gather_rows(nodes, child)
    # Made from `act`, not by jnp.zeros: inside shard_map the carry must vary over
    # the same mesh axes as the body's outputs do.
    node = jnp.zeros_like(act)
    length = node + 1
    live = _goes_on(child, row, length, tree.num_nodes, max_depth)
    node, act, child, row, length, _ = jax.lax.while_loop(
        lambda c: jnp.any(c[5]),
        functools.partial(_descend, tree=tree, interior_select=interior_select,
                          max_depth=max_depth),
        (node, act, child, row, length, live))
    return Path(parent=node, action=act, child=child, child_row=row, length=length)


# ------------------------------------------------------------ expansion, backup
def fetch_embeddings(embeddings: Any, parent: jax.Array,
                     layout: Optional[packing.Packing]) -> Any:
    """The embeddings of nodes `parent` [B, k] from the tree's stored ones (see
    `init_tree`), as the model reads them: a pytree of [B * k, ...]."""
    b, k = parent.shape
    flat = lambda x: x.reshape((b * k,) + x.shape[2:])
    if layout is not None:
        return packing.unpack(layout, tuple(flat(gather_rows(x, parent, node_axis=0))
                                            for x in embeddings))
    return jax.tree.map(lambda x: flat(gather_rows(x, parent)), embeddings)


def expand(tree: Tree, sim: Union[int, jax.Array], path: Path, out: RecurrentFnOutput,
           embedding: Any, layout: Optional[packing.Packing]) -> tuple[Tree, Leaf]:
    """Stores what the model returned for the walks of the wave that starts at simulation
    `sim`: new node ids sim + 1 ... sim + k.

    Writes every new node's logits and embedding (rows sim + 1 ...; unused where the walk
    ended at an existing node) and links the new nodes under their parents in
    `children`. `tree.nodes` is left as it is: the leaf's row is returned for `backup` to
    write with its parent's. The leaf's q is computed from the values the row is made
    of, not read back from the row, so that XLA fuses the row into the scatter that
    writes it instead of materialising it for a second reader.

    Args:
      tree: the search tree.
      sim: the wave's first simulation, an int (traced in the loop).
      path: `select_path`'s, `[B, k]` fields.
      out: the model's `RecurrentFnOutput` on the B * k rows (fields `[B * k]` and
        `[B * k, A]`).
      embedding: the model's new embeddings, leaves `[B * k, ...]`.
      layout: the embeddings' packing, or None.

    Returns:
      (tree, `Leaf`): a new node's row has one visit, q = reward + discount * value, the
        value 0 at a terminal state; an existing node's is its row with one more visit.
    """
    b, n_nodes, a = tree.children.shape
    k = path.parent.shape[1]
    dt = tree.nodes.dtype
    low = jnp.finfo(dt).min
    parent, action, child, stats = path.parent, path.action, path.child, path.child_row
    unflat = lambda x: x.reshape((b, k) + x.shape[1:])
    slot = jnp.arange(k, dtype=jnp.int32)
    is_new = child == n_nodes  # an unexpanded edge: the walk's end is a new node
    new = sim + 1 + slot
    legal = unflat(out.legal_action_mask)
    terminal = ~jnp.any(legal, -1)
    value = jnp.where(terminal, 0.0, unflat(out.value)).astype(dt)
    put = lambda x, v: jax.lax.dynamic_update_slice_in_dim(x, v.astype(x.dtype), sim + 1, 1)
    logits = put(tree.logits, jnp.where(legal, unflat(out.prior_logits).astype(dt), low))
    with jax.named_scope("store_embedding"):
        if layout is not None:
            embeddings = tuple(jax.lax.dynamic_update_slice_in_dim(
                x, jnp.swapaxes(unflat(v), 0, 1), sim + 1, 0)
                for x, v in zip(tree.embeddings, packing.pack(layout, embedding)))
        else:
            embeddings = jax.tree.map(lambda x, v: put(x, unflat(v)), tree.embeddings, embedding)
    children = tree.children
    cells = jnp.where(is_new, (parent + batch_offsets(b, n_nodes, parent)) * a + action,
                      children.size + slot)
    children = children.reshape(-1).at[cells].set(
        jnp.broadcast_to(new, (b, k)), mode="drop", unique_indices=True).reshape(children.shape)
    reward = jnp.where(is_new, unflat(out.reward).astype(dt), stats[..., N_REWARD])
    discount = jnp.where(is_new, unflat(out.discount).astype(dt), stats[..., N_DISCOUNT])
    leaf_value = jnp.where(is_new, value, stats[..., N_VALUE])
    one = jnp.ones((b, k), dt)
    row = jnp.where(is_new[..., None], jnp.stack(
        [one, reward + discount * value, value, value, reward, discount,
         terminal.astype(dt), parent.astype(dt)], -1),
        stats.at[..., N_VISITS].add(1.0))
    leaf = Leaf(node=jnp.where(is_new, new, child), row=row, q=reward + discount * leaf_value)
    tree = Tree(nodes=tree.nodes, children=children, logits=logits, embeddings=embeddings)
    return tree, leaf


def _running_mean(row, q, count_added=1.0):
    """A node's (visits, q, value) [..., 3] after `count_added` more returns summing to
    `q` [...]: the value is the running mean of the returns, the q the edge's reward
    plus discount times that value. `row` [..., 8] is its row before."""
    count, value = row[..., N_VISITS], row[..., N_VALUE]
    mean = (value * count + q) / (count + count_added)
    q_in = row[..., N_REWARD] + row[..., N_DISCOUNT] * mean
    return jnp.stack([count + count_added, q_in, mean], -1)


def _climb(nodes, start, length, qrg):
    """Climbs every path by parent pointers from `start` [B, k], the second node above
    its leaf, to the root's child, in lockstep (the paths aligned at their leaves):
    at each node, q <- r + g * q with the reward and discount of the edge below, then
    visits + 1 and the running mean of q, one [B, k]-row scatter per level. `length`
    [B, k] is each path's number of edges; `qrg` [B, k, 3] is (q, reward, discount)
    at the leaf's parent, carried as one array. Returns (nodes, qrg at the root's
    child, or at the leaf's parent where that is the root)."""
    b, m, _ = nodes.shape
    slot = jnp.arange(start.shape[1], dtype=jnp.int32)

    def body(c):
        j, node, qrg, nodes = c
        live = length - 1 - j >= 1  # this level's node is below the root
        row = gather_rows(nodes, node)
        q = qrg[..., 1] + qrg[..., 2] * qrg[..., 0]
        flat = nodes.reshape(b * m, NODE_FIELDS)
        rows = jnp.where(live, _node_rows(node, m), _dropped(b, m, slot))
        nodes = flat.at[rows, N_VISITS:N_VALUE + 1].set(
            _running_mean(row, q), mode="drop", unique_indices=True).reshape(nodes.shape)
        new = jnp.stack([q, row[..., N_REWARD], row[..., N_DISCOUNT]], -1)
        up = jnp.where(live, row[..., N_PARENT].astype(jnp.int32), node)
        return j + 1, up, jnp.where(live[..., None], new, qrg), nodes

    levels = jnp.max(length) - 1
    _, _, qrg, nodes = jax.lax.while_loop(lambda c: c[0] < levels, body,
                                          (jnp.int32(1), start, qrg, nodes))
    return nodes, qrg


def _update_root(nodes, returns):
    """The root takes the k returns [B, k] of a wave at once: visits + k and their
    running mean. Returns the nodes."""
    k = returns.shape[1]
    top = nodes[:, ROOT]
    return nodes.at[:, ROOT, N_VISITS:N_VALUE + 1].set(
        _running_mean(top, jnp.sum(returns, -1), k))


def backup(nodes: jax.Array, path: Path, leaf: Leaf) -> jax.Array:
    """Backs the wave's returns up from its leaves to the root.

    The leaf's row is written with its parent's in one scatter: the parent (unless it is
    the root) takes the leaf's q = reward + discount * value; then `_climb` carries
    q <- reward + discount * q up to the root's child, and `_update_root` gives the root
    all k returns at once.

    Args:
      nodes: `[B, N + 1, 8]` the tree's node statistics.
      path: `select_path`'s, `[B, k]` fields.
      leaf: `expand`'s, `[B, k]` fields.

    Returns:
      The nodes `[B, N + 1, 8]` after the backup.
    """
    b, m, _ = nodes.shape
    k = leaf.node.shape[1]
    parent = path.parent
    above = gather_rows(nodes, parent)
    q = leaf.q
    above = jnp.concatenate([_running_mean(above, q), above[..., N_RAW:]], -1)
    index = jnp.stack([_node_rows(leaf.node, m),
                       jnp.where(parent == ROOT, _dropped(b, m, jnp.arange(k, dtype=jnp.int32)),
                                 _node_rows(parent, m))], -1)
    nodes = nodes.reshape(b * m, NODE_FIELDS).at[index].set(
        jnp.stack([leaf.row, above], 2), mode="drop", unique_indices=True).reshape(nodes.shape)
    with jax.named_scope("backup"):
        nodes, qrg = _climb(nodes, above[..., N_PARENT].astype(jnp.int32), path.length,
                            jnp.stack([q, above[..., N_REWARD], above[..., N_DISCOUNT]], -1))
        # The return each walk brings to the root: q itself where the parent was the
        # root, else r + g * q at the root's child.
        returns = jnp.where(path.length == 1, qrg[..., 0],
                            qrg[..., 1] + qrg[..., 2] * qrg[..., 0])
        return _update_root(nodes, returns)


# ------------------------------------------------------------------ the loop
def simulate(params: Any, key: jax.Array, recurrent_fn: Callable, tree: Tree,
             sim: Union[int, jax.Array], *, width: int,
             root_logits: jax.Array, root_select: Callable, interior_select: Callable,
             max_depth: int, layout: Optional[packing.Packing]) -> Tree:
    """The `width` simulations sim ... sim + width - 1: `select_path`, `fetch_embeddings`,
    one model call on B * width rows with the key `fold_in(key, sim)`, `expand` and
    `backup`.

    Args:
      params: the model's parameters.
      key: the search's PRNG key.
      recurrent_fn: the model, as in `search`.
      tree: the search tree.
      sim: the first simulation's index, an int (traced in the loop).
      width: simulations in this wave (static).
      root_logits: `[A, B]` as in `select_path`.
      root_select: as in `select_path`.
      interior_select: as in `select_path`.
      max_depth: as in `select_path`.
      layout: the embeddings' packing, or None.

    Returns:
      The tree after the simulations.
    """
    with jax.named_scope("walk"):
        path = select_path(tree, root_logits, root_select, interior_select, width, max_depth)
    with jax.named_scope("fetch"):
        embedding = fetch_embeddings(tree.embeddings, path.parent, layout)
    with jax.named_scope("model"):
        out, new_embedding = recurrent_fn(params, jax.random.fold_in(key, sim),
                                          path.action.reshape(-1), embedding)
    tree, leaf = expand(tree, sim, path, out, new_embedding, layout)
    return dataclasses.replace(tree, nodes=backup(tree.nodes, path, leaf))


def _plan(plan: Optional[Plan], num_simulations: int, num_actions: int) -> Plan:
    """`search`'s plan, checked: one simulation at a time by default."""
    if plan is None:
        plan = ((1, num_simulations),) if num_simulations else ()
    plan = tuple((int(w), int(c)) for w, c in plan)
    if any(w < 1 or c < 1 for w, c in plan) or sum(w * c for w, c in plan) != num_simulations:
        raise ArgumentError(f"search: plan {plan} must be (width >= 1, count >= 1) segments "
                            f"whose width * count sum to num_simulations={num_simulations}")
    if max((w for w, _ in plan), default=1) > num_actions:
        raise ArgumentError(f"search: plan {plan}: a wave is wider than the {num_actions} root "
                            "actions")
    return plan


def search(params: Any, key: jax.Array, root: RootFnOutput, recurrent_fn: Callable, *,
           num_simulations: int, root_select: Callable, interior_select: Callable,
           max_depth: Optional[int] = None, plan: Optional[Plan] = None) -> Tree:
    """Runs `num_simulations` simulations from `root` and returns the tree.

    A walk stopped by `max_depth`, or by a terminal node, backs up the value stored at
    the node it reached instead of expanding a new one.

    `plan` (static; default one simulation at a time) groups the simulations into waves:
    a tuple of (width, count) segments, `count` waves of `width` simulations, in order,
    summing to `num_simulations`. The `width` walks of a wave start together through the
    distinct root actions `root_select(view, width=width)` returns (`[B, width]`),
    descend in lockstep, expand in one model call on B * width rows and back up
    together. That equals running them one after another exactly when no walk of a wave
    can change another's root action: below the root they share no node, so only the
    root's choice could couple them (`gumbel_waves` says when it cannot). The root's
    value then averages the wave's returns in one sum (rounding may differ from one at a
    time in the last bit); visit counts and every other node are equal.

    Args:
      params: the model's parameters, passed to `recurrent_fn` as they are.
      key: PRNG key; simulation i calls the model with `fold_in(key, i)`.
      root: the `RootFnOutput` of B roots with A actions.
      recurrent_fn: `(params, key, action [B], embedding) -> (RecurrentFnOutput,
        embedding)`.
      num_simulations: an int >= 0.
      root_select: `NodeView -> [B]` actions at the root (`puct_select`, or
        `gumbel_root_select`).
      interior_select: `NodeView -> [B]` actions below it (`puct_select`, or
        `gumbel_interior_select`).
      max_depth: caps the walk (None or an int >= 1, in edges).
      plan: the waves, see above.

    Returns:
      The `Tree`, with room for num_simulations + 1 nodes, embeddings `[B, N, ...]`.

    Raises:
      ValueError: a bad count, depth or plan; a root or model of inconsistent shapes;
        a batch too large for int32 indices.

    Examples:
      A bandit: action 1 pays 1, action 0 nothing, and either ends the game.

      >>> import jax
      >>> import jax.numpy as jnp
      >>> from jaxsolve import mcts
      >>> def recurrent_fn(params, key, action, embedding):
      ...     b = action.shape[0]
      ...     out = mcts.RecurrentFnOutput(
      ...         reward=action.astype(jnp.float32), discount=jnp.zeros(b, jnp.float32),
      ...         prior_logits=jnp.zeros((b, 2), jnp.float32), value=jnp.zeros(b, jnp.float32),
      ...         legal_action_mask=jnp.zeros((b, 2), bool))
      ...     return out, embedding
      >>> root = mcts.RootFnOutput(
      ...     prior_logits=jnp.zeros((1, 2), jnp.float32), value=jnp.zeros(1, jnp.float32),
      ...     embedding=jnp.zeros(1, jnp.float32), legal_action_mask=jnp.ones((1, 2), bool))
      >>> run = jax.jit(lambda root: mcts.search(
      ...     None, jax.random.PRNGKey(0), root, recurrent_fn, num_simulations=8,
      ...     root_select=mcts.puct_select, interior_select=mcts.puct_select))
      >>> tree = run(root)
      >>> tree.children_visits[:, 0].tolist()   # [B, A] at the root
      [[1, 7]]
    """
    num_simulations = checks.num_simulations(num_simulations, "search")
    b, a = checks.root(root, "search")
    max_depth = validate.static("search", "max_depth", max_depth,
                                validate.optional_rule(validate.integer_rule(1)))
    plan = _plan(plan, num_simulations, a)
    depth = num_simulations if max_depth is None else max(1, min(max_depth, num_simulations))
    n_nodes = num_simulations + 1
    if b * (n_nodes + 1) * max(a, NODE_FIELDS) >= 2 ** 31:
        raise ArgumentError(f"search: batch {b} x {num_simulations} simulations x {a} actions "
                            "is too large for the tree's int32 indices (at most 2**31 cells "
                            "per array); split the batch")
    checks.model(recurrent_fn, params, key, jnp.zeros((b,), jnp.int32), root.embedding, b, a,
                 "search")
    layout = packing.plan_packing(root.embedding, n_nodes, packing.leaves_read(
        recurrent_fn, params, key, jnp.zeros((b,), jnp.int32), root.embedding))
    tree = init_tree(root, num_simulations, layout)
    step = functools.partial(simulate, params, key, recurrent_fn,
                             root_logits=tree.logits[:, ROOT].T, root_select=root_select,
                             interior_select=interior_select, max_depth=depth, layout=layout)
    sim = 0
    for width, count in plan:
        if count == 1:  # outside any loop
            tree = step(tree, sim, width=width)
        else:
            tree = jax.lax.fori_loop(
                0, count, lambda t, tr, s=sim, w=width: step(tr, s + t * w, width=w), tree)
        sim += width * count
    if layout is not None:
        embeddings = packing.unpack(layout, tuple(jnp.swapaxes(x, 0, 1) for x in tree.embeddings))
    elif not num_simulations:
        embeddings = root.embedding
    else:
        embeddings = tree.embeddings
    return dataclasses.replace(tree, embeddings=embeddings)


__all__ = ["Leaf", "Path", "backup", "expand", "fetch_embeddings", "init_tree", "search",
           "select_child", "select_path", "simulate"]
