"""A game written as a nested literal, for tests that need odd or broken games.

    spec = {"chance": [(0, 0.5, LEAF), (1, 0.5, NODE)]}
    NODE = {"player": 0, "info": "x", "actions": [(0, LEAF), (1, LEAF)]}
    LEAF = {"returns": [1.0, -1.0]}

`legal` (optional) overrides what legal_actions() reports, to break the protocol.
"""

from jaxsolve.protocol import CHANCE, TERMINAL


class SpecState:
    def __init__(self, game, node, path=()):
        self.game, self.node, self.path = game, node, path

    def current_player(self):
        if "returns" in self.node:
            return TERMINAL
        if "chance" in self.node:
            return CHANCE
        return self.node["player"]

    def is_terminal(self):
        return "returns" in self.node

    def legal_actions(self):
        if "legal" in self.node:
            return list(self.node["legal"])
        return [a for a, *_ in self.node.get("actions", self.node.get("chance", []))]

    def chance_outcomes(self):
        return [(a, p) for a, p, _ in self.node["chance"]]

    def child(self, action):
        for entry in self.node.get("actions", []):
            if entry[0] == action:
                return SpecState(self.game, entry[1], self.path + (action,))
        for a, _, nxt in self.node.get("chance", []):
            if a == action:
                return SpecState(self.game, nxt, self.path + (action,))
        raise ValueError(f"no action {action} at {self.path}")

    def returns(self):
        return self.node["returns"]

    def information_state_string(self, player):
        return self.node.get("info", "") if "player" in self.node else ""

    def __str__(self):
        return "path=" + ",".join(map(str, self.path))


class SpecGame:
    def __init__(self, spec, players=2, name="toy"):
        self.spec, self.players, self.name = spec, players, name

    def num_players(self):
        return self.players

    def new_initial_state(self):
        return SpecState(self, self.spec)


def leaf(*values):
    return {"returns": list(values)}


def decision(player, info, *children, actions=None):
    actions = actions if actions is not None else range(len(children))
    return {"player": player, "info": info, "actions": list(zip(actions, children))}


def chance(*outcomes):
    """outcomes: (probability, child) pairs; action ids 0, 1, ..."""
    return {"chance": [(a, p, c) for a, (p, c) in enumerate(outcomes)]}


def matching_pennies():
    """Player 0 picks, player 1 picks without seeing it; 1 if they match."""
    p1 = lambda: decision(1, "p1", leaf(1, -1), leaf(-1, 1))  # noqa: E731
    p1b = lambda: decision(1, "p1", leaf(-1, 1), leaf(1, -1))  # noqa: E731
    return SpecGame(decision(0, "p0", p1(), p1b()), name="matching_pennies")


def spread_infoset_game():
    """Player 1's infoset "x" has one history at depth 1 (chance's outcome 0 leads to
    it) and one at depth 2 (outcome 1 lets player 0 move first): infosets that do not
    count the moves."""
    x = lambda: decision(1, "x", leaf(1, -1), leaf(-1, 1))  # noqa: E731
    return SpecGame(chance((0.5, x()), (0.5, decision(0, "a", x(), leaf(0, 0)))))
