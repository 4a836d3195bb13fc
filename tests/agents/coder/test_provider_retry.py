"""The providers' retry policy: which errors are retried, how long it waits, what ``retry-after`` means."""

from __future__ import annotations

import email.utils
import time

from acpio.agents.coder.model import ModelAuthError, ModelBadRequest, ModelError, ModelRateLimited
from acpio.agents.coder.providers._common import RetryPolicy, retry_after


def test_waits_double_with_jitter_up_to_the_cap() -> None:
    policy = RetryPolicy(attempts=10, base_delay=1.0, max_delay=5.0)
    limited = ModelRateLimited("slow down")
    for failures, full in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 5.0), (8, 5.0)]:
        waits = [policy.wait(limited, failures) for _ in range(50)]
        assert all(w is not None and full * 0.5 <= w <= full for w in waits), (failures, waits)
        assert len(set(waits)) > 1  # jittered: clients limited together do not come back together


def test_what_is_retried_and_for_how_long() -> None:
    policy = RetryPolicy(attempts=3, base_delay=1.0, max_delay=20.0)
    assert policy.wait(ModelRateLimited("x", retry_after=7.5), 1) == 7.5
    assert policy.wait(ModelRateLimited("x", retry_after=60), 1) is None  # longer than max_delay: give up now
    assert policy.wait(ModelError("overloaded", status=529), 2) is not None
    assert policy.wait(ModelError("overloaded", status=529), 3) is None  # the attempts are used up
    assert policy.wait(ModelAuthError("bad key", status=401), 1) is None
    assert policy.wait(ModelBadRequest("no such model", status=404), 1) is None
    assert policy.wait(ModelError("quota", status=429), 1) is None  # not a rate limit: a used-up quota
    assert policy.wait(ModelError("unreachable"), 1) is None


def test_options_set_the_policy_and_bad_values_are_ignored() -> None:
    assert RetryPolicy.from_options(
        {"max_retries": 0, "retry_base_delay": 2, "retry_max_delay": 9.5}
    ) == RetryPolicy(attempts=1, base_delay=2.0, max_delay=9.5)
    assert RetryPolicy.from_options({"max_retries": "many", "retry_base_delay": True}) == RetryPolicy()


def test_retry_after_headers() -> None:
    assert retry_after({"retry-after": "3"}) == 3.0
    assert retry_after({"retry-after-ms": "250", "retry-after": "3"}) == 0.25
    assert retry_after({}) is None
    assert retry_after({"retry-after": "soon"}) is None
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    wait = retry_after({"retry-after": later})
    assert wait is not None
    assert 25 <= wait <= 31
