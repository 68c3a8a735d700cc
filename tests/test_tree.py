"""GameTree structure and persistence."""

import numpy as np
import pytest

import jaxsolve
from conftest import RUN, builtin_tree
from jaxsolve import GameError, GameTree


def test_levels_are_contiguous_and_children_point_one_level_down():
    tree = builtin_tree("leduc_poker")
    offsets = tree.sizes.level_offsets
    depth = np.zeros(tree.sizes.num_nodes, int)
    for d in range(len(offsets) - 1):
        depth[offsets[d]:offsets[d + 1]] = d
    parent, children = np.asarray(tree.parent), np.asarray(tree.children)
    nodes, slots = np.nonzero(children >= 0)
    kids = children[nodes, slots]
    assert np.all(depth[kids] == depth[nodes] + 1)
    assert np.all(parent[kids] == nodes)
    assert np.all(np.asarray(tree.parent_action)[kids] == slots)
    # Every decision node's legal slots are exactly its children.
    decision = np.asarray(tree.node_player) >= 0
    legal = np.asarray(tree.legal)[np.asarray(tree.node_index)[decision]]
    assert np.array_equal(legal, children[decision][:, :tree.sizes.num_actions] >= 0)


def test_counts_match_openspiel_leduc():
    # OpenSpiel's leduc_poker: 9457 histories, 936 infosets (468 per player).
    s = builtin_tree("leduc_poker").summary()
    assert (s["histories"], s["infosets"], s["infosets_per_player"]) == (9457, 936, [468, 468])


def test_save_load_round_trip(tmp_path):
    tree = builtin_tree("kuhn_poker", players=3)
    path = tree.save(tmp_path / "kuhn3")
    loaded = GameTree.load(path)
    assert loaded.sizes == tree.sizes and loaded.names == tree.names
    assert loaded.names.infosets == tree.names.infosets
    for field in ("children", "utilities", "terminal_sequences", "chance_probs", "legal"):
        assert np.array_equal(getattr(loaded, field), getattr(tree, field))
    solver = jaxsolve.cfr_plus()
    a = RUN(solver, tree, solver.init(tree), 20)
    b = RUN(solver, loaded, solver.init(loaded), 20)
    assert np.array_equal(a.average, b.average)


def test_load_errors_name_the_file_and_problem(tmp_path):
    with pytest.raises(GameError, match="no such file"):
        GameTree.load(tmp_path / "missing.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(GameError, match="junk.npz: not a jaxsolve"):
        GameTree.load(tmp_path / "junk.npz")
    np.savez(tmp_path / "other.npz", x=np.zeros(3))
    with pytest.raises(GameError, match="no __meta__"):
        GameTree.load(tmp_path / "other.npz")
    tree = builtin_tree("kuhn_poker")
    path = tree.save(tmp_path / "k.npz")
    data = dict(np.load(path))
    data["children"] = data["children"][:-1]
    np.savez(tmp_path / "cut.npz", **data)
    with pytest.raises(GameError, match="'children' has shape"):
        GameTree.load(tmp_path / "cut.npz")


def test_tree_is_a_pytree_with_static_sizes():
    import jax
    tree = builtin_tree("kuhn_poker")
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    assert len(leaves) == 16
    again = jax.tree_util.tree_unflatten(treedef, leaves)
    assert again.sizes == tree.sizes and again.names.infosets == tree.names.infosets
