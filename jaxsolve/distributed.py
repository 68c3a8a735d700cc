"""Solving on many devices with JAX's own distributed runtime.

Everything here is `jax.sharding.Mesh`, `NamedSharding` and `jax.shard_map`; the only
collective is a `psum` and the same code runs on one host or many. There are two
ways to use a mesh of D devices:

**Batch sharding** (`solve_batch`, `exploitability_batch`): a batch from
`jaxsolve.sweep` or `jaxsolve.stack` (leading axis B) is padded to a multiple of D by
repeating its last element, and each batched array is split along B over the mesh
(`shard_batch`); arrays the batch shares stay whole on every device. Every device
then `vmap`s the solver over its own B/D games. The games are independent, so no
data moves between devices; the padding is stripped from the results.

    batch, axes = jaxsolve.sweep(tree, utilities=u)              # u: [B, Z, P]
    states = distributed.solve_batch(solver, batch, axes, 1000)  # CFRState, [B, ...]
    expl = distributed.exploitability_batch(batch, axes, states) # [B]

**Terminal sharding** (`shard_tree`, `run_sharded`, `nash_conv_sharded`,
`exploitability_sharded`, `on_terminal_shards`): one tree too large for a device.
The solver maths (`jaxsolve.sequences`) is gathers over per-terminal arrays, sums
over terminals, then work on infoset-sized arrays. So the five per-terminal arrays
(`utilities` [Z, P], `terminal_node` [Z], `terminal_sequences` [P, Z, L],
`terminal_last` [P, Z], `terminal_chance` [Z, Lc]) are split along Z over the mesh
and everything else (infoset and node arrays, chance probabilities, the solver
state) is replicated. Inside `shard_map` each device runs the ordinary solver code
on its Z/D terminals; every sum over terminals (`sequences.terminal_sum`: the
segment sums of counterfactual values and of best-response leaf values, and the
sum in `policy_value`) is then a partial sum, completed by one `psum` of an
[I*A + 1] vector (a [P] vector for policy values). A CFR iteration costs
one such psum per player; after it every device holds identical regrets and runs the
infoset-sized updates redundantly, which is cheap next to the per-terminal work.

Z is padded to a multiple of D with inert leaves: utility 0, every own sequence and
last sequence the empty sequence, every chance outcome the padding index C*Ac. Their
reach products are exactly 1 (both padding indices read a 1.0) and their utility is
0, so each one adds an exact 0 to the empty-sequence slot of the counterfactual-value
and best-response sums (a slot dropped from the values, and a +0 to the root value)
and an exact 0 to policy values; `terminal_node` is padded with -1 (no history).

    sharded = distributed.shard_tree(tree)                       # default: all devices
    state = distributed.run_sharded(solver, sharded, solver.init(tree), 1000)
    distributed.exploitability_sharded(sharded, jaxsolve.average_policy(tree, state))

The solver state and policies are infoset-sized, so they are interchangeable between
the sharded and the plain tree. D partial sums added by a psum round differently
from one long sum, so results agree to rounding, not bit for bit: an evaluation to
about 1e-15 in float64, solver iterates to rounding that CFR's dynamics amplify
(Leduc CFR+: 4e-16 after 1 iteration, 5e-12 after 50, the same drift as between
jaxsolve and OpenSpiel). Where a regret is exactly 0 in exact arithmetic (two
actions worth the same, e.g. a game whose uniform play is already an equilibrium),
that rounding decides its sign, regret matching then jumps from uniform to a pure
action, and the sharded run follows another trajectory than the plain one, as
another device count does: a user's small Battleship under vanilla CFR stayed at
exploitability 0 plain and read 0.35 after 50 sharded iterations. CFR's guarantee
holds for both, and the gap closes with iterations; compare runs on one device count
when iterates must match. On a one-device mesh the result is the plain solve exactly.

Meshes: by default a 1-D mesh over `jax.devices()` named "batch" or "terminals". A
mesh you pass may have several axes; the batch or terminal axis is split over all of
them (`P(mesh.axis_names)`) and the psum runs over all of them.

**Several processes.** One run may span several processes, one per host or several
on one host (`jaxsolve.processes`): every process calls `processes.initialize(...)`
(or `jax.distributed.initialize()`) before any other JAX call, then runs the same
program. `jax.devices()` then lists the devices of every process, so the default
meshes (or `Mesh(np.array(jax.devices()).reshape(hosts, -1), ("hosts", "local"))`)
are global. Every process builds the same tree and makes the same calls:
`shard_tree` and `shard_batch` build global arrays with
`jax.make_array_from_callback`, each process placing only its own devices' slices,
and first compare a digest of the tree across processes (`processes.agree`), so
processes that built different trees fail with a `DistributedError` instead of
adding up partial sums of different games. Results of terminal sharding are
replicated, so every process reads them (`np.asarray`); batch results are split over
processes, and `gather` collects them onto every process.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jax.experimental import multihost_utils

from jaxsolve import base, processes, validate
from jaxsolve.tree import arguments as tree_arguments
from jaxsolve.errors import GameError
from jaxsolve.evaluate import exploitability, nash_conv
from jaxsolve.batch import unstack
from jaxsolve.policy import final_policy
from jaxsolve.solvers import CFRState, MMDState, Solver, check_solver, run
from jaxsolve.tree import GameTree
from jaxsolve.tree.layout import SlotCosts, derive
from jaxsolve.tree.sizes import ARRAY_FIELDS, SAVED_FIELDS, TERMINAL_DIM, array_shapes

if not hasattr(jax, "shard_map"):  # pragma: no cover - JAX < 0.6 has it in experimental only
    from jax.experimental.shard_map import shard_map as _experimental_shard_map


def _shard_map(f, mesh: Mesh, in_specs, out_specs, check: bool = True):
    """`jax.shard_map` (JAX >= 0.6) or the same function from `jax.experimental` before.

    `check` is shard_map's replication check (check_vma, formerly check_rep): it
    proves that results declared replicated (out_specs P()) really are, i.e. that
    every sum over terminals was psummed.
    """
    if hasattr(jax, "shard_map"):
        return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                             check_vma=check)
    return _experimental_shard_map(f, mesh=mesh, in_specs=in_specs,  # pragma: no cover
                                   out_specs=out_specs, check_rep=check)


BATCH_AXIS = "batch"
TERMINAL_AXIS = "terminals"



def default_mesh(axis_name: str = TERMINAL_AXIS) -> Mesh:
    """A 1-D mesh over all devices (of all hosts after `jax.distributed.initialize`).

    Built with `Mesh` rather than `jax.make_mesh`, whose axes default to Explicit
    sharding; shard_map needs none of that and Auto keeps plain jit code working.

    Args:
      axis_name: the mesh axis's name.

    Returns:
      A `jax.sharding.Mesh` of shape `[D]`.
    """
    return Mesh(np.array(jax.devices()), (axis_name,))


def _place(x: np.ndarray, mesh: Mesh, spec: P) -> jax.Array:
    """A global array from a host array every process holds in full; each process
    transfers only the slices of its own devices (what makes this multi-host safe)."""
    return jax.make_array_from_callback(x.shape, NamedSharding(mesh, spec), lambda i: x[i])


def _pad(x: np.ndarray, dim: int, count: int, fill=None) -> np.ndarray:
    """`x` with `count` entries appended along `dim`: `fill`, or copies of the last."""
    if count == 0:
        return x
    if fill is None:
        last = np.take(x, [-1], axis=dim)
        return np.concatenate([x, np.repeat(last, count, axis=dim)], axis=dim)
    widths = [(0, 0)] * x.ndim
    widths[dim] = (0, count)
    return np.pad(x, widths, constant_values=fill)


def _agree_on(where: str, host: dict[str, Any], mesh: Mesh) -> None:
    """On a mesh that spans several processes, every process must place the same
    arrays: a digest of `host` (fields to arrays or pytrees of arrays) is compared
    across processes (`processes.agree`). Nothing is exchanged on one process's mesh."""
    if len({d.process_index for d in mesh.devices.flat}) < 2:
        return
    digest = hashlib.sha256()
    for field in sorted(host):
        for leaf in jax.tree_util.tree_leaves(host[field]):
            array = np.ascontiguousarray(np.asarray(leaf))
            digest.update(f"{field} {array.dtype} {array.shape};".encode())
            digest.update(array.tobytes())
    processes.agree(f"{where}: the tree", digest.digest())


def gather(tree: Any) -> Any:
    """Every array of a pytree as a NumPy array on this process, wherever it lies.

    An array split over the devices of several processes (`solve_batch`'s results on
    several hosts) is collected from all of them with
    `jax.experimental.multihost_utils.process_allgather`: a collective, so every
    process calls `gather` at the same point. Other arrays (on this process's
    devices, or replicated, as terminal sharding's results are) are read directly.

    Args:
      tree: a pytree of arrays (a solver state, a `[B]` array of exploitabilities).

    Returns:
      The same pytree of NumPy arrays, each of its array's global shape.
    """
    def one(x):
        if (isinstance(x, jax.Array) and not x.is_fully_addressable
                and not x.is_fully_replicated):
            return np.asarray(multihost_utils.process_allgather(x, tiled=True))
        return np.asarray(x)
    return jax.tree.map(one, tree)


# ---------------------------------------------------------------------- batch sharding
def _batch_axes(in_axes) -> dict[str, int | None]:
    """in_axes (0, or a GameTree of 0/None as from `sweep`) -> {field: 0 or None}."""
    if isinstance(in_axes, int):
        axes = {f: in_axes for f in ARRAY_FIELDS}
    else:
        axes = {f: getattr(in_axes, f) for f in ARRAY_FIELDS}
    if any(a not in (0, None) for a in axes.values()) or 0 not in axes.values():
        raise GameError("distributed: in_axes must batch some arrays along axis 0 "
                        "(use the in_axes from jaxsolve.sweep, or 0 after jaxsolve.stack)")
    return axes


def _batch_size(batched_tree: GameTree, axes: dict[str, int | None]) -> int:
    one = array_shapes(batched_tree.sizes)

    def shape_of(field):  # () where the tree has none
        value = getattr(batched_tree, field)
        return () if value is None else tuple(np.shape(value))

    axes = {f: a for f, a in axes.items() if f in one}  # the layout follows the arrays
    for f, a in axes.items():
        shape = shape_of(f)
        if a == 0 and shape[1:] != one[f]:
            batched = [g for g in axes if len(shape_of(g)) > len(one[g])]
            why = ("" if shape != one[f] else
                   f": this batch holds one {f!r} shared by all games (batched: "
                   f"{', '.join(batched)}); pass the in_axes jaxsolve.sweep returned, or "
                   "jaxsolve.batch_axes(batch)" if batched else
                   ": one tree, not a batch (solve one tree with run_sharded(shard_tree("
                   "tree)); build a batch with jaxsolve.sweep or jaxsolve.stack)")
            raise GameError(
                f"distributed: in_axes batches {f!r} along axis 0, so it needs shape "
                f"(B,) + {one[f]}, got {shape}{why}")
    sizes = {shape_of(f)[0] for f, a in axes.items() if a == 0}
    if len(sizes) != 1:
        raise GameError(f"distributed: batched arrays disagree on the batch size: {sorted(sizes)}")
    return sizes.pop()


def shard_batch(batched_tree: GameTree, in_axes: GameTree | int = 0,
                mesh: Mesh | None = None) -> tuple[GameTree, int]:
    """Places a batch on the mesh: batched arrays split along B, the rest replicated.

    Args:
      batched_tree: from `jaxsolve.sweep` or `jaxsolve.stack`; batched arrays have a
        leading axis B.
      in_axes: the in_axes `sweep` returned, or 0 (every array batched, as `stack`).
      mesh: default `default_mesh("batch")`.
    Returns:
      (placed tree with B padded to B' = a multiple of mesh.size by repeating the
      last element, B). Each device holds B'/mesh.size elements of the batched arrays.

    Raises:
      GameError: the arrays do not form a batch along `in_axes`.
      DistributedError: on a mesh over several processes, the batch differs between
        them.
    """
    mesh = mesh or default_mesh(BATCH_AXIS)
    axes = _batch_axes(in_axes)
    size = _batch_size(batched_tree, axes)
    _agree_on("shard_batch", {f: getattr(batched_tree, f) for f in axes}, mesh)
    extra = -size % mesh.size
    arrays = {}
    for f, a in axes.items():
        arrays[f] = jax.tree_util.tree_map(lambda x, a=a: (
            _place(_pad(np.asarray(x), 0, extra), mesh, P(mesh.axis_names)) if a == 0
            else _place(np.asarray(x), mesh, P())), getattr(batched_tree, f))
    return dataclasses.replace(batched_tree, **arrays), size


def _on_batch_shards(fn, mesh: Mesh, axes: dict, tree: GameTree, batched, shared):
    """shard_map(vmap(fn)): each device maps fn(tree, batched, shared) over its slice.

    `tree` arrays with axis 0 in `axes` and every leaf of `batched` are split along
    their leading axis; `shared` is replicated. No collectives: the games are
    independent. Results keep the leading (padded) batch axis, split over the mesh.
    """
    split = P(mesh.axis_names)
    tree_axes = dataclasses.replace(tree, **axes)
    tree_specs = dataclasses.replace(tree, **{f: split if a == 0 else P() for f, a in axes.items()})
    mapped = jax.vmap(fn, in_axes=(tree_axes, 0, None))
    # No check: results are split, not replicated, so there is nothing to prove, and
    # the check would reject the solver's loop, whose carry starts as replicated
    # zeros (solver.init) and becomes per-device data after one step.
    return _shard_map(mapped, mesh, (tree_specs, split, P()), split, check=False)(
        tree, batched, shared)


def _pad_on_devices(states, size: int, mesh: Mesh):
    """Pads batched states from B to B' like `shard_batch` pads the tree (repeating the
    last game), on the devices, not the host, so states that are global arrays split
    over hosts need no gathering."""
    extra = -size % mesh.size
    return jax.tree.map(
        lambda x: jnp.concatenate([x, jnp.repeat(x[-1:], extra, axis=0)]) if extra else x, states)


@functools.partial(jax.jit, static_argnames=("solver", "mesh", "axes", "size"))
def _solve_batch(tree, states, num_iterations, *, solver, mesh, axes, size):
    def one(t, s, n):
        return run(solver, t, solver.init(t) if s is None else s, n)

    if states is not None:
        states = _pad_on_devices(states, size, mesh)
    states = _on_batch_shards(one, mesh, dict(axes), tree, states, num_iterations)
    return jax.tree.map(lambda x: x[:size], states)


@functools.partial(jax.jit, static_argnames=("mesh", "axes", "size"))
def _exploitability_batch(tree, states, *, mesh, axes, size):
    def one(t, s, _):
        return exploitability(t, final_policy(t, s))  # the average; an MMDState's policy

    states = _pad_on_devices(states, size, mesh)
    return _on_batch_shards(one, mesh, dict(axes), tree, states, ())[:size]


def _sampling_states(solver: Solver, batched_tree: GameTree, size: int, key):
    """[B]-stacked `solver.init(game_b, keys[b])` of a sampling solver, keys =
    split(key, B): its init reads each game's concrete arrays (outside jit)."""
    key = jax.random.PRNGKey(0) if key is None else validate.prng_key(key, "solve_batch")
    states = [solver.init(game, k)
              for game, k in zip(unstack(batched_tree), jax.random.split(key, size))]
    for b, state in enumerate(states[1:], 1):
        differ = [f for f, x, y in zip(state._fields, states[0], state) if x.shape != y.shape]
        if differ:
            raise GameError(f"solve_batch: {solver.name}'s sampling frontier of game {b} "
                            f"differs from game 0's ({', '.join(differ)}); the games must "
                            "share their structure and chance supports")
    return jax.tree.map(lambda *xs: jnp.stack(xs), *states)


def _check_batch_states(states, tree: GameTree, size: int, where: str) -> None:
    """States of B games of `tree`'s structure: [B, I, A] rows, as `solve_batch` returns."""
    field = "policy" if isinstance(states, MMDState) else "average"
    if not hasattr(states, field):
        validate.fail(where, "expected the batched solver state solve_batch returns, got "
                             f"{type(states).__name__}")
    want = (size, tree.sizes.num_infosets, tree.sizes.num_actions)
    got = tuple(np.shape(getattr(states, field)))
    if got != want:
        validate.fail(where, f"states.{field} is {list(got)} but the batch needs {list(want)} "
                             f"([B, I, A] for its {size} games)")


def solve_batch(solver: Solver, batched_tree: GameTree, in_axes: GameTree | int,
                num_iterations: int | jax.Array, mesh: Mesh | None = None,
                key: jax.Array | None = None) -> CFRState | base.MCCFRState:
    """Solves every game of a batch from `solver.init`, each device its own slice.

    A full-width solver's game b is `run(solver, game_b, solver.init(game_b), n)`; a
    sampling solver's (`jaxsolve.external_sampling`, ...) starts from
    `solver.init(game_b, jax.random.split(key, B)[b])`, initialised on the host. Each
    game's result equals its run alone up to round-off: XLA may fuse the batched
    program differently for another batch size or slice per device, and CFR's
    regret-matching ties can then break the other way (another valid run of the
    algorithm, of similar exploitability; see `jaxsolve.batch`).

    Args:
      solver: a `Solver`, full-width or sampling.
      batched_tree: a batch of trees from `jaxsolve.sweep` (or `stack`).
      in_axes: its axes, from `jaxsolve.sweep` (or 0 for `stack`).
      num_iterations: iterations per game (traced: other counts reuse the program).
      mesh: default `default_mesh("batch")`.
      key: a sampling solver's PRNG key (default PRNGKey(0)); full-width solvers take
        none.

    Returns:
      The solver's state with a leading axis B on its arrays (`[B, I, A]`, `[B]`).

    Raises:
      ArgumentError: a bad solver or count, or a key given to a full-width solver.
    """
    solver = check_solver(solver, "solve_batch")
    validate.iterations(num_iterations, "solve_batch")
    mesh = mesh or default_mesh(BATCH_AXIS)
    placed, size = shard_batch(batched_tree, in_axes, mesh)
    axes = tuple(_batch_axes(in_axes).items())
    if solver.samples:
        states = _sampling_states(solver, batched_tree, size, key)
    elif key is not None:
        validate.fail("solve_batch", f"key is for sampling solvers; {solver.name} is "
                                     "deterministic (it draws nothing)")
    else:
        states = None
    return _solve_batch(placed, states, num_iterations, solver=solver, mesh=mesh, axes=axes,
                        size=size)


def exploitability_batch(batched_tree: GameTree, in_axes: GameTree | int, states: CFRState,
                         mesh: Mesh | None = None) -> jax.Array:
    """The exploitability of each game's average policy, e.g. of `solve_batch`'s states
    (of its current policy, for magnetic mirror descent's `MMDState`).

    Args:
      batched_tree: from `jaxsolve.sweep` or `jaxsolve.stack`.
      in_axes: the in_axes `sweep` returned, or 0 (every array batched).
      states: the games' states, with a leading batch axis B.
      mesh: default `default_mesh("batch")`.

    Returns:
      `[B]` float array.

    Raises:
      ArgumentError: `states` not batched like the tree.
    """
    mesh = mesh or default_mesh(BATCH_AXIS)
    placed, size = shard_batch(batched_tree, in_axes, mesh)
    _check_batch_states(states, batched_tree, size, "exploitability_batch")
    axes = tuple(_batch_axes(in_axes).items())
    return _exploitability_batch(placed, states, mesh=mesh, axes=axes, size=size)


# ------------------------------------------------------------------- terminal sharding
def shard_tree(tree: GameTree, mesh: Mesh | None = None) -> GameTree:
    """Places a tree on the mesh with its terminals split over all mesh axes.

    The per-terminal arrays are padded from Z to Z' (a multiple of mesh.size) with inert
    leaves (see the module docstring) and split along Z: each device holds utilities
    `[Z'/D, P]`, terminal_node `[Z'/D]`, terminal_sequences `[P, Z'/D, L]`,
    terminal_last `[P, Z'/D]` and terminal_chance `[Z'/D, Lc]`. All other arrays are
    replicated. `sizes.num_terminals` becomes Z'.

    The result is an ordinary GameTree: `run_sharded` and friends run on it with
    explicit collectives; plain `jax.jit(jaxsolve.run)` also accepts it and lets XLA
    choose the communication.

    Args:
      tree: one compiled game (no batch axis).
      mesh: default `default_mesh()`.

    Returns:
      The placed GameTree, Z' terminals.

    Raises:
      GameError: `tree` is a batch.
      DistributedError: on a mesh over several processes, the tree differs between
        them (a digest of its arrays is compared).
    """
    mesh = mesh or default_mesh(TERMINAL_AXIS)
    s = tree.sizes
    if np.ndim(tree.utilities) != 2:
        raise GameError("shard_tree: expected one tree, got a batch (use solve_batch)")
    extra = -s.num_terminals % mesh.size
    fill = {"utilities": 0, "terminal_node": -1, "terminal_sequences": s.empty_sequence,
            "terminal_last": s.empty_sequence,
            "terminal_chance": s.num_chance * s.num_chance_outcomes}
    host = {f: getattr(tree, f) for f in SAVED_FIELDS}
    for f, x in host.items():
        if x is not None and f in TERMINAL_DIM:
            host[f] = _pad(np.asarray(x), TERMINAL_DIM[f], extra, fill[f])
    if tree.layout.packed:  # the padding terminals end at the empty sequence
        # Every leaf added by scatter: slots would name leaves of the whole tree,
        # where a device adds only its own.
        host["layout"] = derive(tree.legal, tree.infoset_player, tree.infoset_depth,
                                tree.infoset_parent, tree.infoset_ancestors,
                                host["terminal_last"], s.perfect_recall,
                                SlotCosts(scatter_ns=1.0, slot_ns=math.inf))
    else:
        host["layout"] = tree.layout
    _agree_on("shard_tree", host, mesh)
    specs = _terminal_specs(dataclasses.replace(tree, layout=host["layout"]), mesh)
    arrays = {f: jax.tree_util.tree_map(lambda x, spec: _place(np.asarray(x), mesh, spec),
                                        host[f], getattr(specs, f))
              for f in ARRAY_FIELDS if host[f] is not None}  # None: dropped by without_histories
    sizes = dataclasses.replace(s, num_terminals=s.num_terminals + extra)
    return dataclasses.replace(tree, sizes=sizes, **arrays)


def _terminal_specs(tree: GameTree, mesh: Mesh) -> GameTree:
    """A GameTree of PartitionSpecs: Z split over all mesh axes, the rest replicated."""
    split = lambda dim: P(*[None] * dim, mesh.axis_names)  # noqa: E731
    layout = jax.tree_util.tree_map(lambda _: P(), tree.layout)
    if tree.layout.last is not None:  # each player's [Z] last sequences
        layout = dataclasses.replace(layout, last=tuple(split(0) for _ in tree.layout.last))
    return dataclasses.replace(tree, layout=layout, **{
        f: None if getattr(tree, f) is None else
        split(TERMINAL_DIM[f]) if f in TERMINAL_DIM else P() for f in SAVED_FIELDS})


def _mesh_of(tree: GameTree, mesh: Mesh | None) -> Mesh:
    if mesh is None:
        sharding = getattr(tree.utilities, "sharding", None)
        if not isinstance(sharding, NamedSharding):  # e.g. a tracer: placement unseen
            raise GameError("distributed: no mesh given and the tree is not placed on "
                            "one; call shard_tree first, and pass mesh= under jit")
        mesh = sharding.mesh
    if np.shape(tree.utilities)[0] % mesh.size:
        raise GameError(f"distributed: {np.shape(tree.utilities)[0]} terminals do not split "
                        f"over {mesh.size} devices; call shard_tree(tree, mesh) first")
    return mesh


def on_terminal_shards(fn: Callable[..., Any], tree: GameTree, *args: Any,
                       mesh: Mesh | None = None) -> Any:
    """Runs `fn(tree, *args)` with the tree's terminals split over the mesh.

    `fn` is ordinary jaxsolve code (a solver step or run, a `jaxsolve.evaluate`
    function): inside `shard_map` it sees a tree of Z'/D terminals whose sums over
    terminals psum across the mesh. `args` (states, policies, counts) are replicated,
    and so must be `fn`'s results: anything infoset-sized or a sum over terminals
    qualifies, per-terminal arrays do not (shard_map's replication check rejects them).
    Call under `jax.jit`.

    Args:
      fn: `(tree, *args) -> result`, jaxsolve array code.
      tree: from `shard_tree` (terminal count a multiple of mesh.size).
      *args: replicated arguments of `fn`.
      mesh: the mesh; default, the one `tree` was placed on (required when `tree` is a
        tracer, called inside jit).

    Returns:
      `fn`'s result, replicated.

    Raises:
      GameError: no mesh given for an unplaced tree, or terminals that do not split
        evenly over the mesh.
    """
    mesh = _mesh_of(tree, mesh)

    def local(t, *a):
        # One device's Z/D terminals: `GameTree.terminal_axis` names the mesh axes they
        # are split over, and through it `sequences.terminal_sum` turns every partial
        # sum over terminals into a psum. It is static (pytree metadata), so programs
        # with and without the psum never share a jit cache entry.
        return fn(dataclasses.replace(t, terminal_axis=mesh.axis_names), *a)

    specs = (_terminal_specs(tree, mesh),) + (P(),) * len(args)
    return _shard_map(local, mesh, specs, P())(tree, *args)


def _replicated(state: Any, mesh: Mesh) -> Any:
    """`state` with every array replicated over the mesh, as `run_sharded` returns it: a
    fresh `solver.init` or a loaded checkpoint (on one device, or NumPy) is placed so,
    and the first call compiles the program that every later call reuses."""
    whole = NamedSharding(mesh, P())

    def one(x):
        if isinstance(x, jax.Array) and x.sharding == whole:  # as jit keys its programs
            return x
        return _place(np.asarray(x), mesh, P())
    return jax.tree.map(one, state)


@functools.partial(jax.jit, static_argnames=("solver", "mesh"))
def _run_sharded(tree, state, num_iterations, *, solver, mesh):
    return on_terminal_shards(functools.partial(run, solver), tree, state, num_iterations,
                              mesh=mesh)


@functools.partial(jax.jit, static_argnames=("mesh",))
def _nash_conv_sharded(tree, policy, *, mesh):
    return on_terminal_shards(nash_conv, tree, policy, mesh=mesh)


def run_sharded(solver: Solver, tree: GameTree, state: CFRState, num_iterations: int,
                mesh: Mesh | None = None) -> CFRState:
    """`jaxsolve.run` on a terminal-sharded tree (from `shard_tree`), jitted.

    The state (`[I, A]` arrays) is replicated on every device, in and out, and
    interchangeable with the plain tree's: `solver.init(tree)` of the unsharded tree is
    a valid start (a state on one device or in NumPy is first placed on every device,
    so every call runs one compiled program). One psum of `[I*A + 1]` values per player
    per iteration.

    Args:
      solver: a full-width `Solver` (a sampling one is refused).
      tree: from `shard_tree`.
      state: the solver's state on the tree.
      num_iterations: an integer >= 0.
      mesh: the mesh; default, the one `tree` was placed on (required when `tree` is a
        tracer, called inside jit).

    Returns:
      The state after the iterations, replicated.

    Raises:
      ArgumentError: a sampling solver, or a bad argument as `jaxsolve.run` refuses it.
      GameError: as `on_terminal_shards` raises.
    """
    solver = check_solver(solver, "run_sharded")
    if solver.samples:
        # A sampled traversal gathers the utilities of the terminals it reaches by their
        # ids in the whole tree, which a device holding Z'/D of them does not have.
        validate.fail("run_sharded", f"{solver.name} samples terminals by their ids in the "
                                     "whole tree, so it cannot run on a terminal-split tree; "
                                     "run it with jaxsolve.run on the unsplit tree (it visits "
                                     "few terminals an iteration), or split a batch of games "
                                     "with solve_batch")
    base.state_of(solver, tree, state, "run_sharded")
    validate.iterations(num_iterations, "run_sharded")
    mesh = _mesh_of(tree, mesh)
    return _run_sharded(tree, _replicated(state, mesh), num_iterations, solver=solver,
                        mesh=mesh)


def nash_conv_sharded(tree: GameTree, policy: jax.Array, mesh: Mesh | None = None) -> jax.Array:
    """`jaxsolve.nash_conv` of `policy` on a terminal-sharded tree.

    A concrete policy is checked as `jaxsolve.nash_conv` checks it (inside the sharded
    jit it is traced, and would pass unchecked).

    Args:
      tree: from `shard_tree`.
      policy: `[I, A]` action probabilities.
      mesh: the mesh; default, the one `tree` was placed on (required when `tree` is a
        tracer, called inside jit).

    Returns:
      `[]` float array.

    Raises:
      ArgumentError: `policy` is not a policy of `tree`.
    """
    policy = tree_arguments.policy(tree, policy, "nash_conv_sharded")
    return _nash_conv_sharded(tree, policy, mesh=_mesh_of(tree, mesh))


def exploitability_sharded(tree: GameTree, policy: jax.Array,
                           mesh: Mesh | None = None) -> jax.Array:
    """`jaxsolve.exploitability` (NashConv / players) on a terminal-sharded tree.

    Args:
      tree: from `shard_tree`.
      policy: `[I, A]` action probabilities.
      mesh: the mesh; default, the one `tree` was placed on (required when `tree` is a
        tracer, called inside jit).

    Returns:
      `[]` float array.

    Raises:
      ArgumentError: `policy` is not a policy of `tree`.
    """
    return nash_conv_sharded(tree, policy, mesh) / tree.sizes.num_players
