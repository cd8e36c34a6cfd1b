from datetime import datetime, timedelta

import pytest

from core.webhooks.schedule import MAX_ATTEMPTS, next_attempt_at

START = datetime(2026, 1, 1, 8, 0, 0)


def test_delays_are_counted_from_the_previous_attempt_and_the_eighth_failure_is_final():
    expected_gaps = [timedelta(minutes=1), timedelta(minutes=5), timedelta(minutes=30), timedelta(hours=2),
                     timedelta(hours=12), timedelta(hours=24), timedelta(hours=24)]
    attempted_at = START
    gaps = []
    for attempt in range(1, MAX_ATTEMPTS + 1):
        following = next_attempt_at(attempt, attempted_at)
        if following is None:
            break
        gaps.append(following - attempted_at)
        attempted_at = following + timedelta(seconds=3)  # an attempt takes a little time
    assert MAX_ATTEMPTS == 8
    assert gaps == expected_gaps
    assert next_attempt_at(8, START) is None


def test_attempt_numbers_start_at_one():
    with pytest.raises(ValueError):
        next_attempt_at(0, START)
