"""Maneuver Detection: Mini Maneuver with maneuver intensities and noisy detection.

The tutorial that gives Mini Maneuver sketches this richer variant as its capstone
game: four maneuver intensities, five sensor allocations, and a detection that
succeeds with a probability set by both. The sketch gives no numbers; the defaults
below are this module's choice, and every one of them is a parameter.

Rules. Chance deals the Operator (player 0) a private situation, as in Mini
Maneuver: 0 = "No-maneuver" (nothing to hide) or 1 = "Maneuver" (a mission needs a
covert maneuver), with probabilities `situation_probs`. The Operator sees it and
picks a maneuver intensity i (default 4: 0 "None", 1 "Small", 2 "Medium",
3 "Large"); a No-maneuver Operator that maneuvers is flying a decoy. The Observer
(player 1) then picks a sensor allocation j (default 5: 0 "Wide survey",
1 "Small-burn watch", 2 "Medium-burn watch", 3 "Large-burn watch", 4 "Passive")
WITHOUT seeing the situation or the intensity: all it knows is that the Operator
has acted, so it has a single infoset. Chance then decides detection: 1 =
"Detected" with probability detection_probs[i][j], else 0 = "Not detected"
(outcomes of probability 0 are left out, so a sure outcome is a one-outcome
chance node; detecting intensity "None" would be a false alarm). The game ends.
The Operator gets

    payoff_detected[situation][i]    if detected,
    payoff_undetected[situation][i]  otherwise,

and the Observer the negative (zero-sum).

Parameters (array-likes; the number of intensities I and allocations A come from
the shape of detection_probs):
  situation_probs    (2,)   P(No-maneuver), P(Maneuver); >= 0, sum 1.
  detection_probs    (I, A) detection probability, each in [0, 1], I >= 1, A >= 1.
  payoff_undetected  (2, I) Operator's payoff when not detected.
  payoff_detected    (2, I) Operator's payoff when detected.
Defaults (intensity rows None/Small/Medium/Large; allocation columns as above):
  detection_probs = ((0.00, 0.00, 0.00, 0.00, 0.00),   "None" is never detected
                     (0.55, 0.85, 0.25, 0.10, 0.05),   each watch is tuned to one
                     (0.60, 0.25, 0.95, 0.10, 0.10),   burn size; the survey sees
                     (0.60, 0.20, 0.15, 0.85, 0.30))   all moderately
  payoff_undetected = ((0.0, -0.3, -0.7, -0.9),   No-maneuver: decoy fuel cost
                       (-0.5, 0.5, 2.0, 2.5))     Maneuver: mission value (None aborts)
  payoff_detected   = ((0.0, 0.9, 0.5, 0.3),      No-maneuver: decoy spotted, Observer
                                                  fooled (+1.2 minus fuel)
                       (-0.5, -1.5, -1.5, -1.5))  Maneuver: caught
Equilibrium with the defaults (sequence-form LP; every action off the support is
strictly worse, so it is unique): value +0.1313 to the Operator; No-maneuver plays
None 0.266 / Small 0.734 (a decoy), Maneuver plays Medium 0.508 / Large 0.492, the
Observer Wide survey 0.221 / Medium-burn watch 0.336 / Large-burn watch 0.443.

Information states:
  Operator: "situation=M" / "situation=N", then ",intensity=<i>" once it acted.
  Observer: "operator_acted" at its decision, then ",allocation=<j>".
Information-state tensor, length 2 + I + 1 + A (float32), one layout for both:
  [0:2] situation one-hot, [2:2+I] intensity one-hot (Operator only);
  [2+I] the Operator has acted (both), [3+I:] the Observer's own allocation
  one-hot (Observer only).
"""

from __future__ import annotations

import numpy as np

from jaxsolve.errors import ArgumentError
from jaxsolve.protocol import CHANCE, TERMINAL, Game, State

OPERATOR, OBSERVER = 0, 1
NO_MANEUVER, MANEUVER = 0, 1
NOT_DETECTED, DETECTED = 0, 1
SITUATION_NAMES = ("No-maneuver", "Maneuver")
INTENSITY_NAMES = ("None", "Small", "Medium", "Large")
ALLOCATION_NAMES = ("Wide survey", "Small-burn watch", "Medium-burn watch",
                    "Large-burn watch", "Passive")

DEFAULT_SITUATION_PROBS = (0.5, 0.5)
DEFAULT_DETECTION_PROBS = ((0.00, 0.00, 0.00, 0.00, 0.00),
                           (0.55, 0.85, 0.25, 0.10, 0.05),
                           (0.60, 0.25, 0.95, 0.10, 0.10),
                           (0.60, 0.20, 0.15, 0.85, 0.30))
DEFAULT_PAYOFF_UNDETECTED = ((0.0, -0.3, -0.7, -0.9),
                             (-0.5, 0.5, 2.0, 2.5))
DEFAULT_PAYOFF_DETECTED = ((0.0, 0.9, 0.5, 0.3),
                           (-0.5, -1.5, -1.5, -1.5))


def _array(name: str, value, ndim: int) -> np.ndarray:
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ArgumentError(f"maneuver_detection: parameter {name!r} must be a numeric "
                            f"array, got {value!r}") from err
    if arr.ndim != ndim or 0 in arr.shape or not np.all(np.isfinite(arr)):
        raise ArgumentError(f"maneuver_detection: parameter {name!r} must be a finite, "
                            f"non-empty {ndim}-d array, got shape {arr.shape}")
    return arr


class ManeuverDetection(Game):
    """Situation, intensity, blind sensor allocation, noisy detection."""

    players = 2

    def __init__(self, *, situation_probs=DEFAULT_SITUATION_PROBS,
                 detection_probs=DEFAULT_DETECTION_PROBS,
                 payoff_undetected=DEFAULT_PAYOFF_UNDETECTED,
                 payoff_detected=DEFAULT_PAYOFF_DETECTED):
        sit = _array("situation_probs", situation_probs, 1)
        det = _array("detection_probs", detection_probs, 2)
        if sit.shape != (2,) or np.any(sit < 0) or abs(sit.sum() - 1.0) > 1e-9:
            raise ArgumentError(f"maneuver_detection: parameter 'situation_probs' must be 2 "
                                f"non-negative probabilities summing to 1, got {sit.tolist()}")
        if np.any(det < 0) or np.any(det > 1):
            raise ArgumentError("maneuver_detection: parameter 'detection_probs' must lie "
                                "in [0, 1]")
        num_i, num_a = det.shape
        payoffs = []
        for name, value in (("payoff_undetected", payoff_undetected),
                            ("payoff_detected", payoff_detected)):
            arr = _array(name, value, 2)
            if arr.shape != (2, num_i):
                raise ArgumentError(f"maneuver_detection: parameter {name!r} must have shape "
                                    f"(2, {num_i}) (situations x intensities), got {arr.shape}")
            payoffs.append(arr)
        self.situation_probs, self.detection_probs = sit, det
        self.payoff_undetected, self.payoff_detected = payoffs
        self.num_intensities, self.num_allocations = num_i, num_a
        self.actions = max(num_i, num_a)

    def new_initial_state(self) -> "ManeuverDetectionState":
        return ManeuverDetectionState(self)

    def utility_sum(self) -> float:
        return 0.0

    def min_utility(self) -> float:
        both = np.concatenate([self.payoff_undetected, self.payoff_detected])
        return float(min(both.min(), -both.max()))

    def max_utility(self) -> float:
        return -self.min_utility()

    def information_state_tensor_shape(self) -> list[int]:
        return [3 + self.num_intensities + self.num_allocations]

    def __repr__(self) -> str:
        return (f"ManeuverDetection(situation_probs={self.situation_probs.tolist()}, "
                f"detection_probs={self.detection_probs.tolist()}, "
                f"payoff_undetected={self.payoff_undetected.tolist()}, "
                f"payoff_detected={self.payoff_detected.tolist()})")


class ManeuverDetectionState(State):
    """The moves so far: situation, intensity, allocation, detection (None until made)."""

    __slots__ = ("_game", "_situation", "_intensity", "_allocation", "_detected")

    def __init__(self, game: ManeuverDetection):
        self._game = game
        self._situation = self._intensity = self._allocation = self._detected = None

    def clone(self) -> "ManeuverDetectionState":
        new = ManeuverDetectionState.__new__(ManeuverDetectionState)
        new._game, new._situation = self._game, self._situation
        new._intensity, new._allocation, new._detected = (
            self._intensity, self._allocation, self._detected)
        return new

    def current_player(self) -> int:
        if self._situation is None:
            return CHANCE
        if self._intensity is None:
            return OPERATOR
        if self._allocation is None:
            return OBSERVER
        return CHANCE if self._detected is None else TERMINAL

    def legal_actions(self, player: int | None = None) -> list[int]:
        cur = self.current_player()
        if cur == CHANCE:
            return [a for a, _ in self.chance_outcomes()]
        if cur == OPERATOR:
            return list(range(self._game.num_intensities))
        if cur == OBSERVER:
            return list(range(self._game.num_allocations))
        return []

    def chance_outcomes(self) -> list[tuple[int, float]]:
        if self._situation is None:
            probs = self._game.situation_probs
        elif self._allocation is not None and self._detected is None:
            p = float(self._game.detection_probs[self._intensity, self._allocation])
            probs = (1.0 - p, p)
        else:
            return []
        return [(a, float(q)) for a, q in enumerate(probs) if q > 0]

    def _apply_action(self, action: int) -> None:
        if action not in self.legal_actions():
            raise ArgumentError(f"illegal action {action!r} at {self}")
        if self._situation is None:
            self._situation = action
        elif self._intensity is None:
            self._intensity = action
        elif self._allocation is None:
            self._allocation = action
        else:
            self._detected = action == DETECTED

    def returns(self) -> list[float]:
        if self._detected is None:
            return [0.0, 0.0]
        g = self._game
        table = g.payoff_detected if self._detected else g.payoff_undetected
        u = float(table[self._situation, self._intensity])
        return [u, -u]

    def information_state_string(self, player: int) -> str:
        if player == OPERATOR:
            if self._situation is None:
                return ""
            s = f"situation={'M' if self._situation == MANEUVER else 'N'}"
            return s if self._intensity is None else f"{s},intensity={self._intensity}"
        if player == OBSERVER:
            if self._intensity is None:
                return ""
            s = "operator_acted"
            return s if self._allocation is None else f"{s},allocation={self._allocation}"
        raise ArgumentError(f"player must be 0 or 1, got {player!r}")

    def information_state_tensor(self, player: int) -> np.ndarray:
        if player not in (OPERATOR, OBSERVER):
            raise ArgumentError(f"player must be 0 or 1, got {player!r}")
        num_i = self._game.num_intensities
        t = np.zeros(3 + num_i + self._game.num_allocations, dtype=np.float32)
        if player == OPERATOR:
            if self._situation is not None:
                t[self._situation] = 1.0
            if self._intensity is not None:
                t[2 + self._intensity] = 1.0
        if self._intensity is not None:
            t[2 + num_i] = 1.0
        if player == OBSERVER and self._allocation is not None:
            t[3 + num_i + self._allocation] = 1.0
        return t

    def action_to_string(self, player: int, action: int) -> str:
        if player == CHANCE:
            if self._situation is None:
                return SITUATION_NAMES[action]
            return "Detected" if action == DETECTED else "Not detected"
        names = INTENSITY_NAMES if player == OPERATOR else ALLOCATION_NAMES
        size = self._game.num_intensities if player == OPERATOR else self._game.num_allocations
        if size == len(names):
            return names[action]
        return f"{'Intensity' if player == OPERATOR else 'Allocation'} {action}"

    def __str__(self) -> str:
        fields = (self._situation, self._intensity, self._allocation, self._detected)
        return " ".join("?" if f is None else str(int(f)) for f in fields)
