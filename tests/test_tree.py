"""GameTree structure and persistence."""

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest

import jaxsolve
from conftest import RUN, builtin_tree
from jaxsolve import GameError, GameTree, cli, games
from jaxsolve.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from jaxsolve.errors import CheckpointNotTreeError
from jaxsolve.tree.file import CHECKPOINT_V1_FIELDS


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
    # OpenSpiel's leduc_poker: 9457 histories (a walk of pyspiel's tree counts them,
    # test_games_poker), 936 infosets (468 per player; the same partition as
    # pyspiel's, test_games_poker).
    s = builtin_tree("leduc_poker").summary()
    assert (s["histories"], s["infosets"], s["infosets_per_player"]) == (9457, 936, [468, 468])


def test_save_load_round_trip(tmp_path):
    tree = builtin_tree("kuhn_poker", players=3)
    path = tree.save(tmp_path / "kuhn3")
    assert path == tmp_path / "kuhn3.npz"
    loaded = GameTree.load(path)
    # Names with dots keep them: a sweep's points 1.5 and 1.25 must not both write
    # "point_1.npz", the second silently replacing the first.
    assert tree.save(tmp_path / "point_1.5").name == "point_1.5.npz"
    assert tree.save(tmp_path / "point_1.25").name == "point_1.25.npz"
    assert tree.save(tmp_path / "same.npz").name == "same.npz"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "kuhn3.npz", "point_1.25.npz", "point_1.5.npz", "same.npz"]
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
    with pytest.raises(GameError, match="is a folder, not a saved tree file"):
        GameTree.load(tmp_path)
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(GameError, match=r"junk\.npz: not a saved tree \(not an \.npz archive\)"):
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
    # The leaves are exactly the tree's arrays, each once, and its layout's (each
    # player's [Z] last sequences apart); sizes, names and terminal_axis (the static
    # metadata) and the layout's static shape are not leaves.
    fields = [f.name for f in dataclasses.fields(tree)]
    arrays = [name for name in fields
              if name not in ("sizes", "names", "terminal_axis", "layout")]
    assert len(arrays) == len(fields) - 4
    layout = tree.layout
    assert len(layout.last) == tree.sizes.num_players
    held = [id(getattr(tree, name)) for name in arrays] + [id(x) for x in (
        layout.rows, layout.sequences, layout.parent, layout.ancestors, *layout.last,
        layout.slot_leaves, layout.slot_sequences)]
    assert sorted(map(id, leaves)) == sorted(held)
    again = jax.tree_util.tree_unflatten(treedef, leaves)
    assert again.sizes == tree.sizes and again.names.infosets == tree.names.infosets


# ---------------------------------------------------------------- saved files, checked
def _saved_kuhn(tmp_path) -> tuple[dict, dict]:
    """Kuhn poker's saved arrays and metadata, to tamper with."""
    data = dict(np.load(builtin_tree("kuhn_poker").save(tmp_path / "kuhn.npz")))
    return data, json.loads(str(data.pop("__meta__")))


def _write(tmp_path, data, meta) -> Path:
    path = tmp_path / "tampered.npz"
    np.savez(path, __meta__=np.array(meta if isinstance(meta, str) else json.dumps(meta)),
             **data)
    return path


def test_every_builtin_tree_round_trips_through_the_checks(tmp_path):
    from jaxsolve.builders import battleship, goofspiel, liars_dice
    trees = [builtin_tree(name) for name in games.names()]
    trees += [goofspiel(3), liars_dice((1, 1), 3), battleship(2, 2, (1,), num_shots=2)]
    kuhn = builtin_tree("kuhn_poker")
    trees += [jaxsolve.stack([kuhn, kuhn.replace(utilities=2 * np.asarray(kuhn.utilities))]),
              jaxsolve.sweep(kuhn, utilities=np.stack([np.asarray(kuhn.utilities)] * 3))[0]]
    for k, tree in enumerate(trees):
        loaded = GameTree.load(tree.save(tmp_path / f"{k}.npz"))  # validate_values inside
        assert loaded.sizes == tree.sizes and loaded.names == tree.names, tree.names.game
        assert np.array_equal(loaded.terminal_sequences, tree.terminal_sequences)


def test_files_that_are_not_npz_archives(tmp_path):
    notes = tmp_path / "strategy.json"
    notes.write_text('{"game": "kuhn_poker"}')
    with pytest.raises(GameError, match=r"strategy\.json: not a saved tree \(not an \.npz "
                                        r"archive\)$"):
        GameTree.load(notes)
    with pytest.raises(CheckpointError, match=r"strategy\.json: not a checkpoint \(not an "
                                              r"\.npz archive\)$"):
        load_checkpoint(notes)


@pytest.mark.parametrize("change, says", [
    (lambda meta: "{not json", r"tampered\.npz: its metadata \(__meta__\) is not JSON"),
    (lambda meta: [1, 2], r"tampered\.npz: its metadata \(__meta__\) is not a JSON object"),
    (lambda meta: {k: v for k, v in meta.items() if k != "sizes"},
     r"tampered\.npz: the metadata lacks sizes"),
    (lambda meta: {**meta, "sizes": {**meta["sizes"], "colour": 1}},
     r"tampered\.npz: metadata 'sizes' has unknown field\(s\) colour"),
    (lambda meta: {**meta, "sizes": {**meta["sizes"], "num_nodes": "58"}},
     r"tampered\.npz: metadata sizes\.num_nodes is '58', expected an integer >= 0"),
    (lambda meta: {**meta, "infosets": [1] * len(meta["infosets"])},
     r"tampered\.npz: metadata 'infosets' is not a list of strings"),
])
def test_bad_metadata_names_the_file_and_problem(tmp_path, change, says):
    data, meta = _saved_kuhn(tmp_path)
    with pytest.raises(GameError, match=says):
        GameTree.load(_write(tmp_path, data, change(meta)))


def _set(field, index, value, dtype=None):
    def change(data):
        a = data[field].astype(dtype or data[field].dtype)
        a[index] = value
        data[field] = a
    return change


@pytest.mark.parametrize("change, says", [
    (_set("utilities", (3, 0), np.nan),
     r"array 'utilities' holds nan at \[3, 0\]; expected finite numbers"),
    (_set("children", (0, 1), 58),
     r"array 'children' holds 58 at \[0, 1\], outside \[-1, 57\] \(node ids"),
    (_set("terminal_sequences", (1, 2, 0), -1),
     r"array 'terminal_sequences' holds -1 at \[1, 2, 0\], outside \[0, 24\]"),
    (_set("terminal_chance", (0, 0), 99), r"array 'terminal_chance' holds 99"),
    (_set("legal", (4, slice(None)), False),
     r"infoset 4 \('.*'\) has no legal action: row \[4\] of 'legal' is all False"),
    (_set("node_player", 0, 0.5, np.float64),
     r"array 'node_player' has dtype float64, expected integers"),
    (_set("terminal_sequences", (0, 0, 0), 0.5, np.float32),
     r"array 'terminal_sequences' has dtype float32, expected integers"),
    (_set("legal", (0, 0), 1, np.int8), r"array 'legal' has dtype int8, expected bool"),
    # Kuhn's deal, 1/3 each, cast to float16 reads 0.33325: another game, refused.
    (_set("chance_probs", (0, 0), 1 / 3, np.float16),
     r"array 'chance_probs' has dtype float16; a tree file stores numbers as float32 or "
     r"float64"),
    (_set("node_player", 0, -1, np.int8),
     r"array 'node_player' has dtype int8; a tree file stores indices as int32 or int64"),
    (_set("node_player", 5, -2),
     r"array 'node_player' holds -2 at \[5\]; expected a player 0..1, CHANCE"),
    (_set("node_index", 0, 4),  # the root deals a card: a chance node, of 4
     r"array 'node_index' holds 4 at \[0\], a chance node; expected a row of "
     r"chance_probs in \[0, 3\]"),
    (_set("chance_probs", (0, 0), 0.5), r"row \[0\] of 'chance_probs' sums to 1\.1666"),
    (_set("chance_probs", (0, 0), -0.5), r"array 'chance_probs' holds -0\.5 at \[0, 0\], outside"),
])
def test_bad_arrays_name_the_file_and_field(tmp_path, change, says):
    data, meta = _saved_kuhn(tmp_path)
    change(data)
    with pytest.raises(GameError, match=r"tampered\.npz: " + says):
        GameTree.load(_write(tmp_path, data, meta))


def _swap(field, a, b):
    def change(data):
        x = data[field].copy()
        x[a], x[b] = data[field][b], data[field][a]
        data[field] = x
    return change


# Files whose every index is in range but whose arrays do not describe one game, each
# of which would load unchecked (and give wrong numbers). Kuhn's layout, read off the
# compiled tree: node 0 deals player 0's card (nodes 1-3 deal player 1's), nodes 4-9
# are player 0's first decisions (infosets 0-2, one per card, actions 0 pass, 1 bet),
# nodes 10-21 player 1's replies (infosets 3-8), infosets 9-11 player 0's second
# decision after pass-bet, whose own parent is the pass (sequence 2 * card + 0).
# Sequences are infoset * 2 + action, 24 the empty one; chance outcomes row * 3 +
# outcome, 12 the padding; terminal 0 is node 22 (cards 0 and 1, pass, pass).
@pytest.mark.parametrize("change, says", [
    (_set("terminal_node", 0, 0),
     r"terminal_node\[0\] is node 0, which is not a terminal; expected the node whose "
     r"node_index is 0"),
    (_swap("terminal_node", 0, 1), r"terminal_node\[0\] is node 24, which is terminal 1"),
    (_swap("children", (4, 0), (4, 1)),
     r"node 10 has parent 4 by action 0, but children\[4, 0\] is 11"),
    (_set("parent", 10, 5), r"node 10 has parent 5 by action 0, but children\[5, 0\] is 12"),
    (_set("legal", (0, 1), False),
     r"node 4 has a child for action 1, but legal\[0, 1\] \('p0 card=0 history='\) is False"),
    (_set("infoset_player", 3, 0),
     r"node 10 is player 1's, but its infoset 3 \('p1 card=1 history=p'\) is player 0's"),
    (_set("infoset_parent", 9, 2),
     r"infoset 9 \('p0 card=0 history=pb'\) of player 0, who has perfect recall "
     r"\(sizes.perfect_recall\), has infoset_parent 2, but its node \d+ follows own "
     r"sequence 0"),
    (_set("infoset_ancestors", (9, 0), 2),
     r"array 'infoset_ancestors' holds 2 at \[9, 0\], but the infoset_parent chain gives 0 "
     r"\(row \[9\] should be \[0\]\)"),
    (_set("infoset_depth", 9, 0),
     r"array 'infoset_depth' holds 0 at \[9\], but the infoset_parent chain gives 1$"),
    (_set("terminal_sequences", (0, 0, 0), 2),
     r"array 'terminal_sequences' holds 2 at \[0, 0, 0\], but the path from the root to "
     r"terminal 0 \(node 22\) gives 0$"),
    (_set("terminal_sequences", (0, 0, 1), 1),
     r"array 'terminal_sequences' holds 1 at \[0, 0, 1\], but the path to terminal 0 \(node "
     r"22\) has 1 entries: the rest must be the padding 24"),
    (_set("terminal_last", (1, 0), 2),
     r"array 'terminal_last' holds 2 at \[1, 0\], but the path from the root gives 6"),
    (_set("terminal_chance", (0, 0), 1),
     r"array 'terminal_chance' holds 1 at \[0, 0\], but the path from the root to terminal 0 "
     r"\(node 22\) gives 0$"),
    (_set("node_index", 22, 1), r"row of utilities 0 belongs to no terminal node"),
])
def test_arrays_that_are_not_one_game_are_refused(tmp_path, change, says):
    data, meta = _saved_kuhn(tmp_path)
    change(data)
    with pytest.raises(GameError, match=r"tampered\.npz: " + says):
        GameTree.load(_write(tmp_path, data, meta))


def test_the_structure_check_can_be_skipped_and_nothing_else(tmp_path):
    data, meta = _saved_kuhn(tmp_path)
    _set("terminal_node", 0, 0)(data)
    path = _write(tmp_path, data, meta)
    assert GameTree.load(path, check_structure=False).terminal_node[0] == 0
    _set("children", (0, 1), 58)(data)  # out of range: refused either way
    with pytest.raises(GameError, match="array 'children' holds 58"):
        GameTree.load(_write(tmp_path, data, meta), check_structure=False)


def test_levels_must_be_the_breadth_first_order(tmp_path):
    data, meta = _saved_kuhn(tmp_path)  # levels start at 0, 1, 4, 10: move node 9 down one
    meta["sizes"]["level_offsets"] = [0, 1, 4, 9, 22, 46, 58]
    with pytest.raises(GameError, match=r"node 9 is on level 3 of sizes.level_offsets but its "
                                        r"parent 3 is on level 1"):
        GameTree.load(_write(tmp_path, data, meta))


def test_each_structure_of_a_batch_is_checked(tmp_path):
    kuhn = builtin_tree("kuhn_poker")
    data = dict(np.load(jaxsolve.stack([kuhn, kuhn]).save(tmp_path / "pair.npz")))
    meta = json.loads(str(data.pop("__meta__")))
    data["terminal_node"] = data["terminal_node"].copy()
    data["terminal_node"][1, 0] = 0
    with pytest.raises(GameError, match=r"tampered\.npz: batch element \[1\]: terminal_node"
                                        r"\[0\] is node 0, which is not a terminal"):
        GameTree.load(_write(tmp_path, data, meta))


def test_a_checkpoint_is_not_a_tree_and_a_tree_is_not_a_checkpoint(tmp_path, capsys):
    tree = builtin_tree("kuhn_poker")
    state = jaxsolve.cfr_plus().init(tree)
    ckpt = save_checkpoint(tmp_path / "run" / "checkpoint.npz", state,
                           {"game": "kuhn_poker", "params": {"players": 2}, "algo": "dcfr"})
    # From Python: how to read it; on the command line: the command that resumes it.
    with pytest.raises(CheckpointNotTreeError, match=r"checkpoint\.npz: this is a solver "
                       r"checkpoint, not a saved tree; read it with jaxsolve\.checkpoint\."
                       r"load_checkpoint\('.*checkpoint\.npz'\)$"):
        GameTree.load(ckpt)
    says = (r"checkpoint\.npz: this is a solver checkpoint, not a saved tree; resume its run "
            r"with: jaxsolve solve kuhn_poker --algo dcfr --param players=2 --out .*run "
            r"--resume")
    assert cli.main(["solve", str(ckpt)]) == cli.EXIT_USAGE
    assert re.search(says, capsys.readouterr().err)
    # Format 1 held CFRState's arrays and no state record: the loaders know it by them.
    assert set(CHECKPOINT_V1_FIELDS) == set(jaxsolve.CFRState._fields)
    with pytest.raises(CheckpointError, match="a saved game tree .*, not a solver checkpoint"):
        load_checkpoint(tree.save(tmp_path / "tree.npz"))
    # Saved from Python with metadata of one's own: no command to repeat, no placeholders.
    mine = save_checkpoint(tmp_path / "mine.npz", state, {"note": "my run"})
    with pytest.raises(GameError, match=r"mine\.npz: this is a solver checkpoint, not a saved "
                                        r"tree; read it with jaxsolve\.checkpoint\.load_checkpoint"
                                        r"\('.*mine\.npz'\)$"):
        GameTree.load(mine)


def test_check_refuses_a_saved_tree_with_its_reason(tmp_path, capsys):
    path = builtin_tree("kuhn_poker").save(tmp_path / "kuhn.npz")
    assert cli.main(["check", str(path)]) == cli.EXIT_USAGE
    assert "check takes a game (a built-in name, openspiel:NAME or FILE.py:NAME), not a saved tree" in (
        capsys.readouterr().err)
    assert cli.main(["check", "no_such_game"]) == cli.EXIT_USAGE
    assert "FILE.npz" not in capsys.readouterr().err  # check never took one


def test_compile_progress_bar_counts_every_history_and_changes_nothing(monkeypatch):
    import tqdm.auto

    import jaxsolve.compile as compile_module
    seen = {}

    class Bar(tqdm.auto.tqdm):  # the real bar, recording what it was told
        def close(self):
            seen["n"], seen["postfix"] = self.n, self.postfix
            super().close()
    monkeypatch.setattr(tqdm.auto, "tqdm", Bar)  # jaxsolve.progress makes every bar with it
    monkeypatch.setattr(compile_module, "_PROGRESS_EVERY", 7)
    game = games.load("leduc_poker")
    quiet, shown = jaxsolve.compile_game(game), jaxsolve.compile_game(game, progress=True)
    for field in ("children", "utilities", "legal", "terminal_sequences"):
        np.testing.assert_array_equal(getattr(quiet, field), getattr(shown, field))
    assert seen["n"] == quiet.sizes.num_nodes
    assert seen["postfix"].startswith(f"depth {len(quiet.sizes.level_offsets) - 2}")


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
def test_summary_depth_is_the_longest_history(name):
    """OpenSpiel's own count: Kuhn 5 (two cards dealt, three bets), Leduc 11. It read
    one more (the number of levels, the root's included)."""
    from conftest import pyspiel_game, pyspiel_tree
    game = pyspiel_game(name)
    assert pyspiel_tree(name).summary()["depth"] == game.max_history_length()
