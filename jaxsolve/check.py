"""check_game: conformance checks for a protocol game, before it is compiled.

    report = jaxsolve.check_game(jaxsolve.games.load("spoof"))
    print(report)                  # one line per check: PASS/FAIL/SKIP name: message
    report.ok                      # False if any check failed
    report["legal_actions_valid"].history     # first offending history (action list)

The checks are those of OpenSpiel's game checker, listed in `CHECKS`.
SKIP means not applicable (the game declares nothing to check against); perfect
recall is reported per player as a finding, never as a failure. The tree is walked
breadth-first and iteratively when it has at most `max_nodes` histories, so a
reported history is a shortest offending one; otherwise the walk stops there, every
check runs along the random playouts instead, and a finding says so. An exception
raised by the game fails the check that made the call, with the history.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from jaxsolve.compile import (DEFAULT_MAX_DEPTH, PROBE_AFTER_NODES, endless_first_line,
                              turn_based_if_simultaneous)
from jaxsolve.protocol import CHANCE, TERMINAL, GameLike
from jaxsolve.rules import (action_list_problem, as_list, call_text, cannot_make_children,
                            chance_legal_problem, chance_outcomes_problem, class_given,
                            current_player_problem, declared_actions_problem,
                            declared_utility_sum, endless_problem, format_history,
                            children_change_parent, imperfect_recall,
                            infoset_consistency_problem, infoset_key_problem,
                            is_pair, make_child, missing_method, not_a_list,
                            num_players_problem, own_move, raised, returns_bounds_problem,
                            returns_problem, state_text, terminal_problem, utility_sum_problem)
from jaxsolve.validate import is_int, is_real

DEFAULT_MAX_NODES = 200_000
DEFAULT_MAX_STEPS = DEFAULT_MAX_DEPTH  # a playout ends within compile_game's max_depth
CHECKS = {  # name: what passing means
    "game_info": "num_players(), new_initial_state() and the declarations are sane",
    "current_player": "a player, CHANCE or TERMINAL, agreeing with is_terminal()",
    "legal_actions_deterministic": "two calls of legal_actions()/chance_outcomes() agree",
    "legal_actions_valid": "non-empty, integers, distinct, sorted, < num_distinct_actions",
    "apply_action": "two children per action agree (player, actions, returns, every "
                    "information-state string); the parent is unchanged",
    "chance_outcomes": "valid actions; probabilities finite, >= 0, summing to 1",
    "returns_valid": "one finite number per player at every terminal",
    "returns_in_bounds": "returns within the declared min_utility()/max_utility()",
    "constant_sum": "returns sum to the declared utility_sum()",
    "infostate_consistent": "strings; one player and one legal-action set per string",
    "perfect_recall": "per player (a finding, never a failure)",
    "tensor_shapes": "information_state_tensor(p): one finite shape per player, as declared",
    "playouts_finish": "no history walked and no seeded random playout goes past max_steps "
                       "actions without ending",
}
_ERR = object()  # a game call raised (already reported)


@dataclass
class CheckResult:
    """The outcome of one check of `check_game`.

    Attributes:
      name: the check's name, one of `CHECKS`.
      status: "PASS", "FAIL", "SKIP" (not applicable) or "NOTE" (a finding that is no
        failure: imperfect recall).
      message: what the check found.
      history: for a failure, the first offending history (actions from the root).
      failures: how many histories failed the check.
    """

    name: str
    status: str = "PASS"
    message: str = ""
    history: list[int] | None = None
    failures: int = 0

    @property
    def passed(self) -> bool:
        return self.status != "FAIL"

    def __str__(self) -> str:
        line = f"{self.status} {self.name}: {self.message}"
        if self.status == "FAIL":
            shown = format_history(self.history or [])
            more = f" (and {self.failures - 1} more)" if self.failures > 1 else ""
            line += f"\n     first at history {shown}{more}"
        return line


@dataclass
class CheckReport:
    """What `check_game` found; `str()` is the readable report, `report[name]` one result.

    Attributes:
      game: the game's name.
      results: one `CheckResult` per check, in the order of `CHECKS`.
      findings: remarks that are no failures (imperfect recall, a partial walk).
      histories: how many histories the breadth-first walk checked.
      full_tree: whether the walk covered the whole tree.
      perfect_recall: per player, whether no violation of perfect recall was seen.
    """

    game: str
    results: list[CheckResult]
    findings: list[str] = field(default_factory=list)
    histories: int = 0  # checked by the breadth-first walk
    full_tree: bool = True
    perfect_recall: tuple[bool, ...] = ()

    @property
    def ok(self) -> bool:
        return all(r.passed for r in self.results)

    def __getitem__(self, name: str) -> CheckResult:
        return next(r for r in self.results if r.name == name)

    def __str__(self) -> str:
        n = sum(not r.passed for r in self.results)
        return "\n".join([f"check_game: {self.game}", *map(str, self.results),
                          *(f"finding: {f}" for f in self.findings),
                          f"result: FAILED ({n} of {len(self.results)} checks failed)" if n
                          else "result: OK"])


def _norm(value):
    if isinstance(value, (list, tuple, range, np.ndarray)):
        return tuple(_norm(v) for v in value)
    return value.item() if isinstance(value, np.generic) else value


def _nan_as_text(value):
    """`value` (nested lists and tuples) with each NaN as "nan", for telling whether
    two calls agree: a NaN never equals itself."""
    if isinstance(value, (list, tuple)):
        return tuple(_nan_as_text(v) for v in value)
    return "nan" if isinstance(value, float) and math.isnan(value) else value


def _own_move(own) -> str:
    """A player's last own (information state, action), None for none, for a message."""
    return own_move(*own) if own else own_move(None, None)


def _is_finite(v) -> bool:
    return is_real(v) and math.isfinite(v)


def _first_diff(fp1, fp2):
    return next(((n, x, y) for (n, x), (_, y) in zip(fp1, fp2) if x != y), None)


def _declares_tensor(game) -> bool | None:
    """`game.get_type().provides_information_state_tensor` where the game has a
    get_type() (pyspiel's games, and protocol games that copy it); None otherwise."""
    try:
        return bool(game.get_type().provides_information_state_tensor)
    except Exception:  # noqa: BLE001 - no get_type(), or one that does not say
        return None


class _Checker:
    def __init__(self, game, playouts, seed, max_nodes, max_steps):
        self.game, self.playouts, self.seed = game, playouts, seed
        self.max_nodes, self.max_steps = max_nodes, max_steps
        self.results = {n: CheckResult(n) for n in CHECKS}
        self.infosets: dict[str, tuple] = {}  # string -> (player, legal, own parent, where)
        self.shapes: dict[int, tuple] = {}
        self.parents, self.actions = [0], [-1]  # breadth-first node -> parent, action
        self.depths = [0]  # breadth-first node -> number of actions from the root
        self.endless = False  # the walk met a history of max_steps actions not ended
        self.probed = False  # the first actions from the root followed (as compile_game does)
        self.endless_probed = False  # ... and the history that did not end found so
        self.states = self.terminals = 0
        self.full = True

    def fail(self, check: str, where, message: str, state=None) -> None:
        r = self.results[check]
        r.failures += 1
        if r.failures == 1:
            text = state_text(state, 100)
            r.status, r.history = "FAIL", self.history(where)
            r.message = message + (f" (state: {text})" if text else "")

    def call(self, check: str, where, state, fn, *args):
        """`fn(*args)`, where `fn` is a callable or the name of a method of `state`; a
        missing method or an exception is reported under `check` and gives _ERR."""
        if isinstance(fn, str):
            name, fn = fn, getattr(state, fn, None)
            if not callable(fn):
                self.fail(check, where, missing_method(state, name), state)
                return _ERR
        problem = cannot_make_children(state) if fn is make_child else None
        if problem:
            self.fail(check, where, problem, state)
            return _ERR
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001 - report, never escape
            what = (f"applying action {args[1]}" if fn is make_child else
                    call_text(getattr(fn, "__name__", "a game method"), args))
            self.fail(check, where, raised(what, e), state)
            return _ERR

    def history(self, where) -> list[int]:
        """`where` is a breadth-first node id, a playout path (list of actions), or
        (where, action) for a child: built only when a failure names it, since copying
        a path for every child costs O(depth) each on long games."""
        if isinstance(where, tuple):
            return self.history(where[0]) + [where[1]]
        if not isinstance(where, int):
            return list(where)
        out = []
        while where > 0:
            out.append(self.actions[where])
            where = self.parents[where]
        return out[::-1]

    def game_info(self) -> bool:
        g, decl, fail = self.game, {}, lambda m: self.fail("game_info", [], m)
        if isinstance(g, type):
            return fail(class_given(g)) or False
        # A pyspiel game that declares no tensor prints "OpenSpiel exception: ...
        # unimplemented" on stderr (from C++, past Python) when asked its shape: not asked.
        declared = _declares_tensor(g)
        for name in ("num_distinct_actions", "min_utility", "max_utility",
                     "information_state_tensor_shape", "utility_sum"):
            if name == "information_state_tensor_shape" and declared is False:
                decl[name] = None
                continue
            try:
                decl[name] = (declared_utility_sum(g) if name == "utility_sum" else
                              _norm(getattr(g, name)()) if hasattr(g, name) else None)
            except (NotImplementedError, RuntimeError, TypeError, AttributeError):
                decl[name] = None
            except Exception as e:  # noqa: BLE001
                decl[name] = fail(raised(f"{name}()", e))
        self.num_actions, self.lo, self.hi, self.tensor_shape, self.utility_sum = decl.values()
        try:
            self.P, self.root = g.num_players(), g.new_initial_state()
        except Exception as e:  # noqa: BLE001
            return fail(raised("setting up the game", e)) or False
        problem = num_players_problem(self.P)
        if problem:
            return fail(problem) or False
        problem = declared_actions_problem(self.num_actions)
        if problem:
            self.num_actions = fail(problem)
        if None not in (self.lo, self.hi) and not (_is_finite(self.lo) and _is_finite(self.hi)
                                                   and self.lo <= self.hi):
            self.lo = self.hi = fail(f"min_utility() {self.lo!r}, max_utility() {self.hi!r}")
        self.has_tensor = (declared if declared is not None
                           else hasattr(self.root, "information_state_tensor"))
        self.recall: list[str | None] = [None] * self.P
        self.results["game_info"].message = (
            f"{self.P} players, num_distinct_actions={self.num_actions}, utilities in "
            f"[{self.lo}, {self.hi}], utility_sum={self.utility_sum}, tensor {self.tensor_shape}")
        return True

    # ------------------------------------------------------------------ one state
    def visit(self, state, where, own):
        """The per-state checks. Returns (actions to expand, own-sequence update or
        None), or None at a terminal or a state too broken to go on from."""
        self.states += 1
        cp = self.call("current_player", where, state, "current_player")
        term = self.call("current_player", where, state, "is_terminal")
        if cp is _ERR or term is _ERR:
            return None
        problem = current_player_problem(cp, self.P) or terminal_problem(term, cp)
        if problem:
            return self.fail("current_player", where, problem, state)
        if cp == TERMINAL:
            return self.check_returns(state, where)
        chance = cp == CHANCE
        check = "chance_outcomes" if chance else "legal_actions_valid"
        fn = "chance_outcomes" if chance else "legal_actions"
        first = self.call(check, where, state, fn)
        second = self.call("legal_actions_deterministic", where, state, fn)
        if first is _ERR or second is _ERR:
            return None
        listed = as_list(first)
        if listed is None:
            return self.fail(check, where, chance_outcomes_problem(first) if chance
                             else not_a_list(first), state)
        again = as_list(second)
        first, second = list(_norm(listed)), list(_norm(again)) if again is not None else second
        if _nan_as_text(first) != _nan_as_text(second):  # NaN != NaN: chance_outcomes reports it
            self.fail("legal_actions_deterministic", where, f"{fn}() returned "
                      f"{first} and then {second}", state)
        if chance:
            return self.check_chance(state, where, first), None
        return self.check_decision(state, where, cp, own, first)

    def check_actions(self, check, where, state, actions, what, bound) -> list[int]:
        """Reports the first problem with an action list; returns the usable actions."""
        problem = action_list_problem(actions, what, bound,
                                      must_be_sorted=check == "legal_actions_valid")
        if problem:
            self.fail(check, where, problem, state)
        return list(dict.fromkeys(a for a in actions if is_int(a) and a >= 0))

    def check_chance(self, state, where, outcomes):
        problem = chance_outcomes_problem(outcomes)
        if problem:
            self.fail("chance_outcomes", where, problem, state)
        if not all(is_pair(o) for o in outcomes):
            return []
        actions = sorted(a for a in dict.fromkeys(a for a, _ in outcomes)
                         if is_int(a) and a >= 0)
        # A state that does not answer legal_actions() at chance nodes is left alone:
        # the protocol does not ask it to.
        try:
            legal = _norm(state.legal_actions())
        except Exception:  # noqa: BLE001 - not part of the protocol at chance nodes
            legal = None
        problem = chance_legal_problem(legal if isinstance(legal, tuple) else None, actions)
        if problem:
            self.fail("chance_outcomes", where, problem, state)
        return actions

    def check_decision(self, state, where, cp, own, legal):
        actions = self.check_actions("legal_actions_valid", where, state, legal,
                                     "legal_actions()", self.num_actions)
        key = self.call("infostate_consistent", where, state, "information_state_string", cp)
        problem = None if key is _ERR else infoset_key_problem(
            key, f"information_state_string({cp})")
        if problem:
            key = self.fail("infostate_consistent", where, problem, state) or _ERR
        if key is not _ERR:
            if key not in self.infosets:  # a playout's path is copied once per new infoset
                self.infosets[key] = (cp, tuple(legal), own[cp],
                                      where if isinstance(where, int) else list(where))
            player, legal0, parent0, where0 = self.infosets[key]
            problem = infoset_consistency_problem(key, player, legal0,
                                                  lambda: self.history(where0), cp, legal)
            if problem:
                self.fail("infostate_consistent", where, problem, state)
            elif parent0 != own[cp] and self.recall[cp] is None:
                self.recall[cp] = f"player {cp} has imperfect recall: it " + imperfect_recall(
                    key, _own_move(own[cp]), self.history(where), _own_move(parent0),
                    self.history(where0))
        for p in range(self.P if self.has_tensor else 0):
            if not self.check_tensor(state, where, p):
                break
        return actions, (None if key is _ERR else
                         lambda a: own[:cp] + ((key, a),) + own[cp + 1:])

    def check_tensor(self, state, where, p) -> bool:
        t = self.call("tensor_shapes", where, state, state.information_state_tensor, p)
        try:
            arr = None if t is _ERR else np.asarray(t, dtype=np.float64)
        except (TypeError, ValueError) as e:
            arr = self.fail("tensor_shapes", where, f"information_state_tensor({p}) is not "
                            f"numeric: {e}", state)
        if arr is None:
            return False
        want, declared = self.shapes.setdefault(p, arr.shape), self.tensor_shape
        if arr.shape != want or (declared is not None and arr.size != np.prod(declared)):
            return self.fail("tensor_shapes", where, f"information_state_tensor({p}) has "
                             f"shape {arr.shape}, expected {want} (declared {declared})",
                             state) or False
        if not np.all(np.isfinite(arr)):
            return self.fail("tensor_shapes", where, f"information_state_tensor({p}) is not "
                             "finite", state) or False
        return True

    def check_returns(self, state, where) -> None:
        self.terminals += 1
        values = self.call("returns_valid", where, state, "returns")
        if values is _ERR:
            return
        listed = as_list(values)  # once: a generator is read once
        problem = returns_problem(values if listed is None else listed, self.P)
        if problem:
            return self.fail("returns_valid", where, problem, state)
        values = [float(v) for v in listed]
        problem = returns_bounds_problem(values, self.lo, self.hi)
        if problem:
            self.fail("returns_in_bounds", where, problem, state)
        broken = (None if self.utility_sum is None else
                  utility_sum_problem(np.asarray([values]), self.utility_sum))
        if broken:
            self.fail("constant_sum", where, broken[1], state)

    # ------------------------------------------------------------------ children, walks
    def fingerprint(self, state) -> list[tuple[str, str]]:
        def get(name, *args):
            try:
                return repr(_norm(getattr(state, name)(*args)))
            except Exception as e:  # noqa: BLE001 - a missing method included
                return f"<raised {type(e).__name__}>"
        cp, term = get("current_player"), get("is_terminal")
        last = ("returns" if term == "True" else "chance_outcomes" if cp == repr(CHANCE)
                else "legal_actions")
        return [("current_player()", cp), ("is_terminal()", term), (f"{last}()", get(last)),
                *((f"information_state_string({p})", get("information_state_string", p))
                  for p in range(self.P))]

    def children(self, state, where, actions) -> list:
        """Two children per action, compared; the parent must not change. Returns the
        first child per action (None where applying it raised)."""
        before, out = self.fingerprint(state), []
        for a in actions:
            here = (where, a)
            c1 = self.call("apply_action", here, state, make_child, state, a)
            c2 = (_ERR if c1 is _ERR else
                  self.call("apply_action", here, state, make_child, state, a))
            diff = None if c2 is _ERR else _first_diff(self.fingerprint(c1), self.fingerprint(c2))
            if diff:
                self.fail("apply_action", here, f"two children for action {a} differ: "
                          f"{diff[0]} is {diff[1]} and then {diff[2]}", c1)
            out.append(None if c1 is _ERR else c1)
        diff = _first_diff(before, self.fingerprint(state))
        if diff:
            self.fail("apply_action", where, f"making children changed the parent: {diff[0]} "
                      f"was {diff[1]}, now {diff[2]} ({children_change_parent(state)})",
                      state)
        return out

    def walk(self) -> None:
        """Breadth-first over the histories, up to max_nodes of them. A history of
        max_steps actions that has not ended stops the walk (the game may never end;
        compile_game refuses it the same way). Once the walk holds as many histories as
        compile_game's does when it looks, the first actions from the root are followed
        for max_steps actions, as compile_game does: a game that never ends is then found
        in about a second, not after max_nodes histories and the playouts."""
        queue = deque([(self.root, 0, (None,) * self.P)])
        while queue:
            if not self.probed and len(self.parents) >= PROBE_AFTER_NODES:
                self.probed = True
                if self.endless_first_line():
                    return None
            state, node, own = queue.popleft()
            got = self.visit(state, node, own)
            if got is not None and self.depths[node] >= self.max_steps:
                self.endless, self.full = True, False
                return self.fail("playouts_finish", node, endless_problem(
                    self.depths[node], "max_steps", self.max_steps), state)
            if got is not None and len(self.parents) >= self.max_nodes:
                self.full = False
            elif got is not None:
                for a, c in zip(got[0], self.children(state, node, got[0])):
                    if c is not None:
                        self.parents.append(node)
                        self.actions.append(a)
                        self.depths.append(self.depths[node] + 1)
                        queue.append((c, len(self.parents) - 1, got[1](a) if got[1] else own))

    def endless_first_line(self) -> bool:
        """Follows the first action from a new root for max_steps actions; a history
        still not over fails playouts_finish, as the walk would when it got there."""
        try:
            root = self.game.new_initial_state()
        except Exception:  # noqa: BLE001 - game_info has called it once already
            return False
        endless = endless_first_line(root, self.max_steps)
        if endless is None:
            return False
        history, state = endless
        self.endless = self.endless_probed = True
        self.full = False
        self.fail("playouts_finish", history, endless_problem(
            len(history), "max_steps", self.max_steps), state)
        return True

    def play(self) -> None:
        """Seeded random playouts; after a partial walk they run every check as they go."""
        rng, check = random.Random(self.seed), "playouts_finish"
        for i in range(self.playouts):
            path, own = [], (None,) * self.P
            state = self.call(check, path, None, self.game.new_initial_state)
            for _ in range(self.max_steps):
                cp = _ERR if state is _ERR else self.call(check, path, state, "current_player")
                got = None if self.full or cp is _ERR else self.visit(state, path, own)
                if cp is _ERR or cp == TERMINAL or (not self.full and got is None):
                    break
                if cp == CHANCE:
                    # _norm: NumPy arrays as tuples (an array has no truth value).
                    outcomes = _norm(self.call(check, path, state, "chance_outcomes"))
                    if outcomes is _ERR or not outcomes:
                        break
                    try:
                        acts, probs = zip(*outcomes)
                        valid = all(_is_finite(p) and p >= 0 for p in probs) and sum(probs) > 0
                        a = rng.choices(acts, weights=probs if valid else None)[0]
                    except (TypeError, ValueError):  # malformed: chance_outcomes reports it
                        break
                else:
                    acts = got[0] if got else _norm(self.call(check, path, state,
                                                              "legal_actions"))
                    if acts is _ERR or not acts:
                        _ = acts is _ERR or self.fail(check, path, "no legal action", state)
                        break
                    a = rng.choice(list(acts))
                own = got[1](a) if got and got[1] else own
                child = (self.call(check, (path, a), state, make_child, state, a) if self.full
                         else self.children(state, path, [a])[0])
                state = _ERR if child is None else child
                path.append(a)  # in place: a copy per step would cost O(steps^2)
            else:
                return self.fail(check, path, f"playout {i} (seed {self.seed}) did not end "
                                 f"within max_steps={self.max_steps} steps", state)

    def report(self, name: str) -> CheckReport:
        r = self.results
        skips = {"returns_in_bounds": (None in (self.lo, self.hi), "the game declares no bounds"),
                 "constant_sum": (self.utility_sum is None, "the game declares no utility_sum(), so no "
                                  "constant sum is checked (compile_game infers one from the returns)"),
                 "tensor_shapes": (not self.has_tensor, "no information_state_tensor()")}
        for check, (skip, why) in skips.items():
            if skip:
                r[check].status, r[check].message = "SKIP", why
        for check, what in CHECKS.items():
            if r[check].status == "PASS" and check != "game_info":
                r[check].message = f"{what} ({self.states} states, {self.terminals} terminals)"
        # Imperfect recall is a finding, not a failure (it compiles, and sampling or
        # abstraction produce it on purpose), but it is not a PASS either.
        if any(self.recall) and r["perfect_recall"].status == "PASS":
            r["perfect_recall"].status = "NOTE"
        r["perfect_recall"].message = "; ".join(
            f"player {p}: {'imperfect' if f else 'perfect'} recall" for p, f in
            enumerate(self.recall)) + ("" if self.full else " (on the histories checked)")
        findings = [f for f in self.recall if f]
        if self.endless:
            how = ("a history of max_steps={:,} actions that had not ended, found by "
                   "following the first action from the root," if self.endless_probed else
                   "the first history of max_steps={:,} actions that had not ended,")
            findings.append(f"the walk stopped at {how.format(self.max_steps)} after "
                            f"{len(self.parents):,} histories; the random playouts were not "
                            "run, and the checks are not exhaustive")
        elif not self.full:
            findings.append(f"the tree has more than max_nodes={self.max_nodes:,} histories: "
                            f"checked the first {len(self.parents):,} breadth-first, then "
                            f"every check along {self.playouts} random playouts; the checks "
                            "are not exhaustive")
        return CheckReport(name, list(r.values()), findings, len(self.parents), self.full,
                           tuple(not f for f in self.recall))


def check_game(game: GameLike, *, playouts: int = 100, seed: int = 0,
               max_nodes: int = DEFAULT_MAX_NODES,
               max_steps: int = DEFAULT_MAX_STEPS) -> CheckReport:
    """Runs the checks of `CHECKS` on a protocol game (or a pyspiel game).

    Never raises because of the game: an exception the game raises fails the check that
    made the call.

    Args:
      game: the game to check.
      playouts: how many random playouts from the root.
      seed: the seed of those playouts.
      max_nodes: walk the whole tree when it has at most this many histories; else
        check the first `max_nodes` breadth-first, then along the playouts.
      max_steps: a playout longer than this fails playouts_finish.

    Returns:
      The `CheckReport`: `ok` unless a check failed, `results`, `findings`,
      `perfect_recall`.

    Examples:
      >>> import jaxsolve
      >>> from jaxsolve import games
      >>> report = jaxsolve.check_game(games.load("kuhn_poker"))
      >>> print(report.ok)
      True
    """
    name = (game.name if isinstance(getattr(game, "name", None), str) else repr(game)
            if type(game).__repr__ is not object.__repr__ else type(game).__name__)
    try:
        game = turn_based_if_simultaneous(game)
    except Exception:  # noqa: BLE001 - game_info reports what is wrong with it
        pass
    checker = _Checker(game, playouts, seed, max_nodes, max_steps)
    if not checker.game_info():
        for r in list(checker.results.values())[1:]:
            r.status, r.message = "SKIP", "not run: the game cannot be set up"
        return CheckReport(name, list(checker.results.values()), full_tree=False)
    try:
        checker.walk()
        if not checker.endless:  # the walk already found a history that does not end
            checker.play()
    except Exception as e:  # noqa: BLE001 - a value so odd that a check itself broke
        checker.fail("game_info", [], f"the checks stopped early: {type(e).__name__}: {e}")
    return checker.report(name)
