"""What each endpoint has cost today (UTC), in the cache's SQLite file, and the caps on it.

A batch run's `--max-cost` bounds one invocation (`Budget`); an endpoint's `daily_cap` bounds the day
for the Playground and batch runs together, across processes, and its `person_daily_cap` each person's
share of the day (the person is whoever the write is by, `store.writer.author()`: the signed-in e-mail
on a lab server). All are checked *before* a request with its worst case (the prompt's tokens,
estimated at 4 characters each, plus `max_tokens` of output) and charged after it with what the server
reports it used.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from backend.models.output import RunStopped
from backend.store import endpoint_cache
from backend.store.writer import author


class BudgetReached(RunStopped):
    """A spending limit would be passed by the next request."""


def today() -> str:
    return datetime.now(UTC).date().isoformat()


def spent_today(endpoint: str, where: Path | None = None) -> float:
    return endpoint_cache.spent(endpoint, today(), where)


def charge(endpoint: str, usd: float, where: Path | None = None) -> None:
    if usd > 0:
        endpoint_cache.add_spend(endpoint, today(), usd, where, person=author())


def spent_by_me(endpoint: str, where: Path | None = None) -> float:
    return endpoint_cache.spent_by(endpoint, today(), author(), where)


POLL_S = 0.02  # how often a request waiting for budget looks again while others are in flight


def usd(amount: float) -> str:
    """An amount as people read a cap: cents above a dollar, four decimals below (a $0.001 cap is not "$0.00").

    >>> usd(12.5), usd(0.001), usd(0.5)
    ('$12.50', '$0.0010', '$0.5000')
    """
    return f"${amount:,.2f}" if amount >= 1 else f"${amount:.4f}"


def cost(tokens_in: int, tokens_out: int, price_in: float, price_out: float) -> float:
    """USD, prices per million tokens."""
    return (tokens_in * price_in + tokens_out * price_out) / 1e6


@dataclass
class Budget:
    """One invocation's spending: what was charged, what is reserved by requests in flight, the limit."""

    limit: float | None = None
    spent: float = 0.0
    reserved: float = 0.0

    async def reserve_when_it_fits(
        self,
        endpoint: str,
        estimate: float,
        daily_cap: float | None,
        where: Path | None = None,
        person_cap: float | None = None,
    ) -> None:
        """`reserve`, waiting while requests in flight hold what the next one needs: their settling frees what they
        did not spend. BudgetReached only when the next request would pass a cap with nothing in flight."""
        while True:
            try:
                return self.reserve(endpoint, estimate, daily_cap, where, person_cap)
            except BudgetReached:
                if self.reserved <= 1e-12:
                    raise
                await asyncio.sleep(POLL_S)

    def reserve(
        self,
        endpoint: str,
        estimate: float,
        daily_cap: float | None,
        where: Path | None = None,
        person_cap: float | None = None,
    ) -> None:
        if self.limit is not None and self.spent + self.reserved + estimate > self.limit:
            raise BudgetReached(
                f"{endpoint}: stopped before passing --max-cost ${self.limit:.4f} (spent ${self.spent:.4f}, "
                f"the next request may cost up to ${estimate:.4f}); raise it and run the same command to go on"
            )
        if daily_cap is not None and spent_today(endpoint, where) + self.reserved + estimate > daily_cap:
            raise BudgetReached(
                f"{endpoint}: today's spending cap {usd(daily_cap)} would be passed "
                f"(spent ${spent_today(endpoint, where):.4f} today, UTC); raise daily_cap in the registry or wait"
            )
        if person_cap is not None and spent_by_me(endpoint, where) + self.reserved + estimate > person_cap:
            raise BudgetReached(
                f"{endpoint}: your spending cap today, {usd(person_cap)} per person, would be passed (you spent "
                f"${spent_by_me(endpoint, where):.4f} today, UTC); ask a lab owner to raise person_daily_cap, or wait"
            )
        self.reserved += estimate

    def settle(self, endpoint: str, estimate: float, actual: float, where: Path | None = None) -> None:
        self.reserved -= estimate
        self.spent += actual
        charge(endpoint, actual, where)
