"""Every test is in exactly one tier (unit, integration, browser); see conftest.py."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from tests.conftest import TIERS, tier_problems


@dataclass
class FakeItem:
    nodeid: str
    markers: list[str] = field(default_factory=list)

    def iter_markers(self) -> list[pytest.Mark]:
        return [getattr(pytest.mark, name).mark for name in self.markers]


def test_every_collected_test_has_exactly_one_tier(request: pytest.FixtureRequest) -> None:
    items = request.session.items
    assert items and request.node in items
    assert tier_problems(items) == []
    assert request.node.get_closest_marker("unit") is not None


def test_no_tier_or_two_tiers_are_reported_and_slow_is_not_a_tier() -> None:
    items = [FakeItem("a::none"), FakeItem("a::slow_only", ["slow"]),
             FakeItem("a::two", ["unit", "browser"]), FakeItem("a::one", ["integration", "slow"]),
             FakeItem("a::repeated", ["unit", "unit"])]
    assert tier_problems(items) == ["a::none: none", "a::slow_only: none",  # type: ignore[arg-type]
                                    "a::two: browser, unit"]
    assert set(TIERS) == {"unit", "integration", "browser"}
