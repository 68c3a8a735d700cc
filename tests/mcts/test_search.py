"""The search loop: each step of a simulation alone, on hand-built trees with
hand-computed results, and whole searches on the pursuit-evasion game (the tree's
invariants, the depth cap, the arguments)."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsolve import mcts
from jaxsolve.alphazero import network, selfplay
from jaxsolve.mcts import _packing, _search, _tree
from jaxsolve.games import pursuit_evasion as pe
from pursuit_models import ENV
from pursuit_models import net, roots  # noqa: F401 (fixtures)

F32 = jnp.float32
LOW = np.finfo(np.float32).min


# ----------------------------------------------------- each step on a hand-built tree
def _row(visits, q, value, reward, discount, parent, terminal=0.0):
    """A row of `Tree.nodes` (the raw value equal to the value)."""
    return jnp.array([visits, q, value, value, reward, discount, terminal, parent], F32)


def _hand_tree(batch, rows, links, num_nodes=5, num_actions=3):
    """An empty tree with room for `num_nodes` nodes and `num_actions` actions, every
    action legal with prior logit 0, then nodes[b, node] = row for each (b, node, row)
    of `rows` and children[b, parent, action] = child for each (b, parent, action,
    child) of `links`. The embeddings {"x": [B, N]} are stored as they are (no
    packing); the root's is 0."""
    root = mcts.RootFnOutput(jnp.zeros((batch, num_actions), F32), jnp.zeros(batch, F32),
                             {"x": jnp.zeros(batch, jnp.int32)},
                             jnp.ones((batch, num_actions), bool))
    tree = _search.init_tree(root, num_nodes - 1, None)
    nodes, children = tree.nodes, tree.children
    for b, node, row in rows:
        nodes = nodes.at[b, node].set(row)
    for b, parent, action, child in links:
        children = children.at[b, parent, action].set(child)
    return dataclasses.replace(tree, nodes=nodes, children=children,
                               logits=jnp.zeros_like(tree.logits))


def _first(view, width=1):
    """A rule that always plays action 0."""
    return jnp.zeros(view.node_visit.shape, jnp.int32)


def test_init_tree_holds_the_root_alone():
    root = mcts.RootFnOutput(jnp.array([[0.5, 1.0, 2.0]], F32), jnp.array([0.25], F32),
                             {"x": jnp.array([[7, 8]], jnp.int32)},
                             jnp.array([[True, False, True]]))
    tree = _search.init_tree(root, 3, None)
    assert tree.nodes.shape == (1, 5, 8) and tree.children.shape == tree.logits.shape == (1, 4, 3)
    # One visit, the root's value as value and raw value, its own parent, not terminal.
    np.testing.assert_array_equal(tree.nodes[0, 0], [1, 0, 0.25, 0.25, 0, 0, 0, 0])
    assert not np.asarray(tree.nodes[0, 1:]).any()  # the other nodes and the stand-in row
    assert (np.asarray(tree.children) == 4).all()  # every edge unexpanded (id N = 4)
    np.testing.assert_array_equal(tree.logits[0, 0], [0.5, LOW, 2.0])  # illegal at the minimum
    assert (np.asarray(tree.logits[0, 1:]) == LOW).all()
    np.testing.assert_array_equal(tree.embeddings["x"][0], [[7, 8], [0, 0], [0, 0], [0, 0]])
    # Packed: node-major int32 columns, from which fetch_embeddings reads the root back.
    layout = _packing.plan_packing(root.embedding, 4)
    packed = _search.init_tree(root, 3, layout)
    assert all(x.shape[:2] == (4, 1) and x.dtype == jnp.int32 for x in packed.embeddings)
    got = _search.fetch_embeddings(packed.embeddings, jnp.zeros((1, 1), jnp.int32), layout)
    np.testing.assert_array_equal(got["x"], [[7, 8]])
    # A root without a legal action is terminal.
    dead = _search.init_tree(root._replace(legal_action_mask=jnp.zeros((1, 3), bool)), 3, None)
    assert dead.nodes[0, 0, _tree.N_TERMINAL] == 1


def test_select_child_picks_the_puct_action_computed_by_hand():
    # The root was visited 3 times: action 0 led to node 1, action 2 to node 2, action 1
    # is unexpanded. Uniform prior, root value 0. PUCT scores Q + c P sqrt(3) / (1 + n)
    # with c = 1.25 + log((3 + 19652 + 1) / 19652) = 1.2502: c P sqrt(3) = 0.7218, so
    # the exploration term is 0.3609 for a visited action and 0.7218 for the other.
    # Q is min-max normalised over the root's value and the visited q's; an unvisited
    # action gets the minimum.
    # Batch 0: q = (0.5, -, -0.5), Q = (1, 0, 0): scores (1.36, 0.72, 0.36), action 0.
    # Batch 1: q = (-0.5, -, -0.5), Q = (0, 0, 0): scores (0.36, 0.72, 0.36), action 1.
    rows = [(0, 0, _row(3, 0, 0, 0, 0, 0)), (0, 1, _row(1, 0.5, -0.5, 0, -1, 0)),
            (0, 2, _row(1, -0.5, 0.5, 0, -1, 0)),
            (1, 0, _row(3, 0, 0, 0, 0, 0)), (1, 1, _row(1, -0.5, 0.5, 0, -1, 0)),
            (1, 2, _row(1, -0.5, 0.5, 0, -1, 0))]
    links = [(b, 0, a, c) for b in (0, 1) for a, c in ((0, 1), (2, 2))]
    tree = _hand_tree(2, rows, links)
    action, child, row = _search.select_child(tree, jnp.zeros((2, 1), jnp.int32),
                                              tree.nodes[:, :1], mcts.puct_select)
    assert action.tolist() == [[0], [1]]
    assert child.tolist() == [[1], [5]]  # id N = 5: the unexpanded edge
    np.testing.assert_array_equal(row[0, 0], tree.nodes[0, 1])
    assert not np.asarray(row[1, 0]).any()  # the unexpanded edges' all-zero stand-in row


def test_select_path_stops_at_an_unexpanded_edge_a_terminal_node_or_the_depth_cap():
    # Every rule plays action 0. Batch 0: 0 -> 1 -> 2, whose action 0 is unexpanded: the
    # walk stops below node 2, 3 edges down. Batch 1: the same, but node 2 is terminal:
    # the walk ends at it, 2 edges down. Batch 2: the root's action 0 is unexpanded.
    rows = [(b, node, _row(3 - node, 0, 0, 0, -1, node - 1, float(b == 1 and node == 2)))
            for b in (0, 1) for node in (1, 2)]
    links = [(b, parent, 0, parent + 1) for b in (0, 1) for parent in (0, 1)]
    tree = _hand_tree(3, rows, links)
    root_logits = tree.logits[:, 0].T
    path = _search.select_path(tree, root_logits, _first, _first, width=1, max_depth=10)
    assert path.parent.tolist() == [[2], [1], [0]]
    assert path.action.tolist() == [[0], [0], [0]]
    assert path.child.tolist() == [[5], [2], [5]]
    assert path.length.tolist() == [[3], [2], [1]]
    np.testing.assert_array_equal(path.child_row[1, 0], tree.nodes[1, 2])
    assert not np.asarray(path.child_row[0]).any() and not np.asarray(path.child_row[2]).any()
    # Capped at 2 edges, batch 0 stops at node 2 too.
    capped = _search.select_path(tree, root_logits, _first, _first, width=1, max_depth=2)
    assert capped.parent.tolist() == [[1], [1], [0]] and capped.child.tolist() == [[2], [2], [5]]
    assert capped.length.tolist() == [[2], [2], [1]]
    # A wave of 2 walks leaves the root by the two actions its rule returns, 0 and 2.
    both = lambda view, width: jnp.tile(jnp.array([[0, 2]], jnp.int32), (3, 1))
    wave = _search.select_path(tree, root_logits, both, _first, width=2, max_depth=10)
    assert wave.parent.tolist() == [[2, 0], [1, 0], [0, 0]]
    assert wave.action.tolist() == [[0, 2], [0, 2], [0, 2]]
    assert wave.length.tolist() == [[3, 1], [2, 1], [1, 1]]


def test_expand_stores_the_new_node_and_links_it():
    # Nodes 0, 1, 2 exist (0 -> 1 -> 2 by action 0; node 2 terminal in batch 1), so
    # simulation 2 creates node 3. Batch 0: the walk ends below node 2 by action 1,
    # the model's state is not terminal. Batch 1: it ends at the terminal node 2.
    # Batch 2: it ends below the root by action 1, in a terminal state (no legal move).
    rows = [(b, node, _row(3 - node, 0.2, -0.2, 0, -1, node - 1, float(b == 1 and node == 2)))
            for b in (0, 1) for node in (1, 2)]
    links = [(b, parent, 0, parent + 1) for b in (0, 1) for parent in (0, 1)]
    tree = _hand_tree(3, rows, links)
    child = jnp.array([[5], [2], [5]])
    path = _search.Path(parent=jnp.array([[2], [1], [0]]), action=jnp.array([[1], [0], [1]]),
                        child=child, child_row=tree.nodes[jnp.arange(3)[:, None], child],
                        length=jnp.array([[3], [2], [1]]))
    out = mcts.RecurrentFnOutput(
        reward=jnp.array([1.0, 0.5, -1.0], F32), discount=jnp.array([-1.0, -1.0, 0.0], F32),
        prior_logits=jnp.tile(jnp.array([[1.0, 2.0, 3.0]], F32), (3, 1)),
        value=jnp.array([0.25, 0.5, 0.9], F32),
        legal_action_mask=jnp.array([[True, True, False], [True] * 3, [False] * 3]))
    new, leaf = _search.expand(tree, 2, path, out, {"x": jnp.array([30, 31, 32])}, None)
    assert leaf.node.tolist() == [[3], [2], [3]]
    # A new node: one visit, q = r + g v = 1 - 0.25, value and raw value 0.25, the edge's
    # reward and discount, its parent. At a terminal state the value is 0, whatever the
    # model said. An existing node: its row with one more visit.
    np.testing.assert_array_equal(leaf.row[0, 0], [1, 0.75, 0.25, 0.25, 1, -1, 0, 2])
    np.testing.assert_array_equal(leaf.row[1, 0], tree.nodes[1, 2].at[0].add(1))
    np.testing.assert_array_equal(leaf.row[2, 0], [1, -1, 0, 0, -1, 0, 1, 0])
    # What each leaf returns to its parent: r + g v (node 2 in batch 1: 0 - 1 * -0.2).
    np.testing.assert_allclose(leaf.q, [[0.75], [0.2], [-1]], atol=1e-7)
    # Linked under their parents; batch 1's edges unchanged.
    expected = np.asarray(tree.children).copy()
    expected[0, 2, 1] = expected[2, 0, 1] = 3
    np.testing.assert_array_equal(new.children, expected)
    # Row 3 holds the model's logits (illegal ones at the minimum) and the new state.
    np.testing.assert_array_equal(new.logits[0, 3], [1, 2, LOW])
    np.testing.assert_array_equal(new.logits[2, 3], [LOW] * 3)
    np.testing.assert_array_equal(new.embeddings["x"][:, 3], [30, 31, 32])
    np.testing.assert_array_equal(new.nodes, tree.nodes)  # the backup writes the rows


def test_backup_of_known_paths_gives_the_hand_computed_statistics():
    # Batch 0: 0 -> 1 -> 2 -> 3, node 3 new: value 0.4, reward 1, discount -1, q 0.6.
    #   node 2 (visits 1, value -0.2, edge reward 0.1): visits 2, value (-0.2 + 0.6) / 2
    #     = 0.2, q = 0.1 - 0.2 = -0.1;
    #   node 1 (visits 2, value 0.5): its return is 0.1 - 0.6 = -0.5: visits 3, value
    #     (1.0 - 0.5) / 3 = 1/6, q = -1/6;
    #   root (visits 3, value 0.1): its return is 0 + 0.5: visits 4, value 0.8 / 4 = 0.2.
    # Batch 1: 0 -> 1, node 1 new with q -0.2: root (visits 1, value 0.1) gets visits 2,
    #   value (0.1 - 0.2) / 2 = -0.05.
    # Batch 2: 0 -> 1 -> 2, node 2 terminal and already there (reward 1, value 0): it
    #   gets visits 2; node 1 (visits 1, value -0.5) visits 2, value 0.25, q -0.25; the
    #   root (visits 2, value 0.3) gets -1: visits 3, value (0.6 - 1) / 3.
    rows = [(0, 0, _row(3, 0, 0.1, 0, 0, 0)), (0, 1, _row(2, -0.5, 0.5, 0, -1, 0)),
            (0, 2, _row(1, 0.3, -0.2, 0.1, -1, 1)),
            (1, 0, _row(1, 0, 0.1, 0, 0, 0)),
            (2, 0, _row(2, 0, 0.3, 0, 0, 0)), (2, 1, _row(1, 0.5, -0.5, 0, -1, 0)),
            (2, 2, _row(1, 1, 0, 1, 0, 1, terminal=1))]
    tree = _hand_tree(3, rows, [])
    path = _search.Path(parent=jnp.array([[2], [0], [1]]), action=jnp.zeros((3, 1), jnp.int32),
                        child=jnp.array([[5], [5], [2]]), child_row=jnp.zeros((3, 1, 8), F32),
                        length=jnp.array([[3], [1], [2]]))
    leaf_row = jnp.stack([_row(1, 0.6, 0.4, 1, -1, 2), _row(1, -0.2, 0.5, 0.3, -1, 0),
                          tree.nodes[2, 2].at[0].add(1)])[:, None]
    leaf = _search.Leaf(node=jnp.array([[3], [1], [2]]), row=leaf_row,
                        q=jnp.array([[0.6], [-0.2], [1.0]], F32))
    nodes = np.asarray(_search.backup(tree.nodes, path, leaf))
    stats = lambda b, node: nodes[b, node, :3].tolist()  # visits, q, value
    np.testing.assert_allclose(nodes[0, 3], leaf_row[0, 0])
    np.testing.assert_allclose(stats(0, 2), [2, -0.1, 0.2], atol=1e-6)
    np.testing.assert_allclose(stats(0, 1), [3, -1 / 6, 1 / 6], atol=1e-6)
    np.testing.assert_allclose(stats(0, 0), [4, 0, 0.2], atol=1e-6)
    np.testing.assert_allclose(nodes[1, 1], leaf_row[1, 0])
    np.testing.assert_allclose(stats(1, 0), [2, 0, -0.05], atol=1e-6)
    np.testing.assert_allclose(stats(2, 2), [2, 1, 0], atol=1e-6)
    np.testing.assert_allclose(stats(2, 1), [2, -0.25, 0.25], atol=1e-6)
    np.testing.assert_allclose(stats(2, 0), [3, 0, (0.6 - 1) / 3], atol=1e-6)
    # Nothing else moves: the other columns of the nodes on the paths, the other nodes.
    before = np.asarray(tree.nodes)
    for b, kept in ((0, [0, 1, 2]), (1, [0]), (2, [0, 1, 2])):
        np.testing.assert_array_equal(nodes[b, kept, 3:], before[b, kept, 3:])
    assert not nodes[0, 4:].any() and not nodes[1, 2:].any() and not nodes[2, 3:].any()


def test_backup_of_a_wave_gives_the_root_every_return_at_once():
    # Two new children of the root in one wave, with q 0.2 and 0.4: the root (visits 1,
    # value 0) gets visits 3 and value (0 + 0.2 + 0.4) / 3 = 0.2.
    tree = _hand_tree(1, [], [])
    path = _search.Path(parent=jnp.zeros((1, 2), jnp.int32), action=jnp.array([[0, 1]]),
                        child=jnp.full((1, 2), 5), child_row=jnp.zeros((1, 2, 8), F32),
                        length=jnp.ones((1, 2), jnp.int32))
    leaf_row = jnp.stack([_row(1, 0.2, -0.2, 0, -1, 0), _row(1, 0.4, -0.4, 0, -1, 0)])[None]
    leaf = _search.Leaf(node=jnp.array([[1, 2]]), row=leaf_row, q=jnp.array([[0.2, 0.4]], F32))
    nodes = np.asarray(_search.backup(tree.nodes, path, leaf))
    np.testing.assert_allclose(nodes[0, 0, :3], [3, 0, 0.2], atol=1e-6)
    np.testing.assert_array_equal(nodes[0, 1:3], leaf_row[0])


def _counter(params, key, action, emb):
    """A toy game: every state has two legal moves, the mover earns the action's index,
    the players alternate; the model's prior is uniform and its value 0. The embedding
    counts the moves made."""
    b = action.shape[0]
    out = mcts.RecurrentFnOutput(reward=action.astype(F32), discount=jnp.full(b, -1.0, F32),
                                 prior_logits=jnp.zeros((b, 2), F32), value=jnp.zeros(b, F32),
                                 legal_action_mask=jnp.ones((b, 2), bool))
    return out, {"moves": emb["moves"] + 1}


def test_simulate_and_search_on_a_toy_game():
    # By hand, PUCT with a uniform prior: simulation 0 sees no visited child (every Q
    # is 0, the exploration terms equal) and takes action 0; node 1, reward 0, value 0,
    # q 0. Simulation 1: Q is 0 for both (the range is empty), action 1 is unvisited so
    # its exploration term is the larger: node 2, reward 1, q 1; the root's value is
    # (0 + 0 + 1) / 3.
    root = mcts.RootFnOutput(jnp.zeros((1, 2), F32), jnp.zeros(1, F32),
                             {"moves": jnp.zeros(1, jnp.int32)}, jnp.ones((1, 2), bool))
    tree = _search.init_tree(root, 2, None)
    one = _search.simulate(None, jax.random.key(0), _counter, tree, 0, width=1,
                           root_logits=tree.logits[:, 0].T, root_select=mcts.puct_select,
                           interior_select=mcts.puct_select, max_depth=2, layout=None)
    assert np.asarray(one.children_index[0, 0]).tolist() == [1, -1]
    np.testing.assert_allclose(one.nodes[0, 0, :3], [2, 0, 0])
    np.testing.assert_allclose(one.nodes[0, 1], [1, 0, 0, 0, 0, -1, 0, 0])
    assert np.asarray(one.embeddings["moves"]).tolist() == [[0, 1, 0]]
    full = jax.jit(lambda k: mcts.search(None, k, root, _counter, num_simulations=2,
                                         root_select=mcts.puct_select,
                                         interior_select=mcts.puct_select))(jax.random.key(0))
    assert np.asarray(full.children_index[0, 0]).tolist() == [1, 2]
    np.testing.assert_allclose(full.children_qvalues[0, 0], [0, 1])
    np.testing.assert_allclose(full.nodes[0, 0, :3], [3, 0, 1 / 3], atol=1e-6)
    assert np.asarray(full.embeddings["moves"]).tolist() == [[0, 1, 1]]


# ------------------------------------------------- whole searches on the pursuit game
@pytest.mark.parametrize("kind", ["puct", "gumbel", "gumbel_waves"])
def test_tree_is_consistent(net, roots, kind):
    """Node statistics agree with the edges, every stored state is the environment step
    from its parent's, and q = reward + discount * value."""
    graphdef, params = net
    sims = 40
    root = selfplay.root_fn(graphdef, ENV, params, roots)
    legal = root.legal_action_mask
    root = root._replace(prior_logits=mcts.masked_logits(root.prior_logits, legal))
    rec = functools.partial(selfplay.recurrent_fn, graphdef, ENV)
    if kind == "puct":
        sel = dict(root_select=mcts.puct_select, interior_select=mcts.puct_select)
    else:
        schedule = jnp.asarray(mcts.considered_visits_table(9, sims), jnp.int32)[
            jnp.minimum(9, jnp.sum(root.legal_action_mask, -1))]
        sel = dict(root_select=functools.partial(
            mcts.gumbel_root_select, gumbel_logits=root.prior_logits.T, schedule=schedule),
            interior_select=mcts.gumbel_interior_select)
        if kind == "gumbel_waves":  # every root here has 8 legal actions
            sel["plan"] = mcts.gumbel_waves(9, sims, 8)
            assert max(w for w, _ in sel["plan"]) == 8
    tree = jax.jit(lambda p, k: mcts.search(p, k, root, rec, num_simulations=sims, **sel))(
        params, jax.random.key(3))
    idx = np.asarray(tree.children_index)
    visits, cvisits = np.asarray(tree.node_visits), np.asarray(tree.children_visits)
    assert visits[:, 0].tolist() == [sims + 1] * idx.shape[0]
    expanded = idx >= 0
    for b in range(idx.shape[0]):
        kids = idx[b][expanded[b]]
        assert sorted(kids.tolist()) == list(range(1, sims + 1))  # each node linked once
    # The parent pointers the backup climbs agree with the links; the root's is itself.
    parents = np.asarray(tree.nodes[:, :-1, _tree.N_PARENT]).astype(int)
    bi, ni, _ = np.nonzero(expanded)
    np.testing.assert_array_equal(parents[bi, idx[expanded]], ni)
    assert (parents[:, 0] == mcts.Tree.ROOT_INDEX).all()
    # Every selection passed through a node visits one child: sum(children) = visits - 1.
    inner = expanded.any(-1)
    np.testing.assert_array_equal(np.where(inner, cvisits.sum(-1), 0),
                                  np.where(inner, visits - 1, 0))
    q = np.asarray(tree.children_qvalues)
    want = np.asarray(tree.children_rewards + tree.children_discounts * tree.children_values)
    np.testing.assert_array_equal(q[expanded], want[expanded])
    # Stored states: child = step(parent, action).
    b_, n_, a_ = idx.shape
    parent = np.repeat(np.arange(n_), a_)[None].repeat(b_, 0).reshape(b_, n_, a_)
    action = np.broadcast_to(np.arange(a_), idx.shape)
    bi, ni, ai = np.nonzero(expanded)
    take = lambda x, n: x[bi, n]
    before = jax.tree.map(lambda x: take(x, parent[bi, ni, ai]), tree.embeddings)
    after = jax.tree.map(lambda x: take(x, idx[bi, ni, ai]), tree.embeddings)
    stepped = jax.vmap(functools.partial(pe.step, ENV))(before, jnp.asarray(action[bi, ni, ai]))
    for got, want in zip(jax.tree.leaves(after), jax.tree.leaves(stepped)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_max_depth_caps_the_walk(net, roots):
    graphdef, params = net
    root = selfplay.root_fn(graphdef, ENV, params, roots)
    rec = functools.partial(selfplay.recurrent_fn, graphdef, ENV)
    out = jax.jit(lambda p, k: mcts.alphazero_policy(
        p, k, root, rec, 30, dirichlet_fraction=0.0, temperature=0.0, max_depth=1))(
        params, jax.random.key(0))
    tree = jax.jit(lambda p, k: mcts.search(
        p, k, root, rec, num_simulations=30, root_select=mcts.puct_select,
        interior_select=mcts.puct_select, max_depth=1))(params, jax.random.key(0))
    idx = np.asarray(tree.children_index)
    assert np.all(idx[:, 1:] == mcts.Tree.UNVISITED)  # nothing below depth 1
    assert np.asarray(out.visit_counts).sum(-1).tolist() == [30] * idx.shape[0]
    # Depth 1 only: the root's q-values are its children's network values.
    np.testing.assert_array_equal(np.asarray(tree.children_index[:, 0] >= 0),
                                  np.asarray(out.visit_counts) > 0)
    # Computed here from the game and the network directly: the mover's reward on the
    # edge plus discount -1 times the network's value of the child for the player to
    # move there (no child ends the game: the roots are a few plies in, see `roots`).
    expanded = np.asarray(tree.children_index[:, 0] >= 0)
    qvalues = np.asarray(tree.children_qvalues[:, 0])
    for a in range(pe.NUM_ACTIONS):
        rows = expanded[:, a]
        if not rows.any():
            continue
        child = jax.vmap(functools.partial(pe.step, ENV))(roots, jnp.full(len(rows), a))
        assert not np.asarray(child.terminated).any()
        _, value = network.apply(graphdef, params, child.observation)
        mover = np.asarray(roots.current_player)
        reward = np.asarray(child.rewards)[np.arange(len(rows)), mover]
        np.testing.assert_allclose(qvalues[rows, a], (reward - np.asarray(value))[rows],
                                   atol=1e-5)


def test_wave_arguments_are_checked(net, roots):
    graphdef, params = net
    root = selfplay.root_fn(graphdef, ENV, params, roots)
    rec = functools.partial(selfplay.recurrent_fn, graphdef, ENV)
    select = dict(root_select=mcts.puct_select, interior_select=mcts.puct_select)
    with pytest.raises(ValueError, match="sum to num_simulations"):
        mcts.search(params, jax.random.key(0), root, rec, num_simulations=5,
                    plan=((2, 2),), **select)
    with pytest.raises(ValueError, match="wider than the 9 root actions"):
        mcts.search(params, jax.random.key(0), root, rec, num_simulations=10,
                    plan=((10, 1),), **select)
    with pytest.raises(ValueError, match="wave_sizes"):
        mcts.gumbel_policy(params, jax.random.key(0), root, rec, 8, wave_sizes=(12,))


def test_too_large_a_tree_is_refused_before_tracing(net):
    """The flat int32 row ids would overflow: a clear error, found from shapes alone."""
    graphdef, params = net
    b, sims = 2 ** 20, 256
    root = mcts.RootFnOutput(
        prior_logits=jax.ShapeDtypeStruct((b, 9), jnp.float32),
        value=jax.ShapeDtypeStruct((b,), jnp.float32),
        embedding=jax.ShapeDtypeStruct((b, 4), jnp.float32),
        legal_action_mask=jax.ShapeDtypeStruct((b, 9), jnp.bool_))
    select = dict(root_select=mcts.puct_select, interior_select=mcts.puct_select)
    with pytest.raises(ValueError, match="int32 indices"):
        jax.eval_shape(lambda r: mcts.search(params, jax.random.key(0), r, lambda *a: None,
                                             num_simulations=sims, **select), root)
