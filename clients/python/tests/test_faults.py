"""The kit against the fault server (`fault_server.py`): transient failures retried to success,
rate limits waited as asked (within the ceiling), a year-long `retry_after` refused at once, a
non-idempotent tool not repeated unless nothing ran, a stale target ref re-resolved once, a
looping cursor stopped, a schema-violating envelope refused, a next action naming an unlisted
tool refused without a call. Waits run on a fake clock: nothing sleeps for real."""

from __future__ import annotations

from typing import Any

import pytest

from envelope_client import (
    MAX_CONTINUATION_CHARS,
    ActionArguments,
    ActionNotFound,
    ContinuationTooLong,
    CursorLoop,
    DeadlineExceeded,
    EnvelopeClient,
    EnvelopeClientError,
    EnvelopeSchemaError,
    NotAnEnvelope,
    NotRetriedUnsafe,
    PageLimitExceeded,
    PlainResult,
    ProtocolError,
    RetriesExhausted,
    RetryAfterTooLong,
    StaleTarget,
    ToolFailed,
    ToolNotListed,
    TotalChanged,
    is_plain,
    speaks_envelope,
)

pytestmark = pytest.mark.anyio


async def calls(client: EnvelopeClient) -> list[str]:
    """The tools the server ran so far (the log tool's own call not counted)."""
    log = await client.call("call_log")
    return log.data["calls"]


async def test_transient_failures_are_retried_with_jittered_backoff(faults: Any, clock: Any) -> None:
    async with faults(base_delay_s=0.5, multiplier=2, jitter=0.5, max_attempts=4) as client:
        envelope = await client.call("flaky", {"key": "a", "fail_times": 3})
        assert envelope.ok and envelope.data == {"attempt": 4}
    # Backoff 0.5, 1, 2 (each its upper half jittered; the fake draw is 0.5): 0.375, 0.75, 1.5.
    assert clock.waits == [0.375, 0.75, 1.5]


async def test_retries_stop_at_the_attempt_bound(faults: Any, clock: Any) -> None:
    async with faults(max_attempts=3) as client:
        with pytest.raises(RetriesExhausted) as raised:
            await client.call("flaky", {"key": "b", "fail_times": 10}, check=True)
        assert raised.value.attempts == 3
        assert raised.value.category == "transient"
        assert await calls(client) == ["flaky"] * 3
        # Unchecked, the last failure is the answer.
        envelope = await client.call("flaky", {"key": "c", "fail_times": 10}, check=False)
        assert not envelope.ok and envelope.error.code == "backend_timeout"
    assert len(clock.waits) == 4


async def test_every_wait_is_clamped_to_the_ceiling(faults: Any, clock: Any) -> None:
    async with faults(base_delay_s=5, multiplier=10, jitter=0, max_delay_s=2, max_attempts=4) as client:
        await client.call("flaky", {"key": "d", "fail_times": 3})
    assert clock.waits == [2, 2, 2]


async def test_a_rate_limit_is_waited_as_asked(faults: Any, clock: Any) -> None:
    async with faults() as client:
        envelope = await client.call("rate_limited", {"key": "e", "retry_after_ms": 1500})
        assert envelope.ok and envelope.data["attempt"] == 2
        # Asked past the ceiling but within the deadline: the ceiling bounds the wait.
        await client.call("rate_limited", {"key": "f", "retry_after_ms": 30_000})
    assert clock.waits == [1.5, 10.0]


async def test_a_retry_after_of_a_year_stops_at_once(faults: Any, clock: Any) -> None:
    async with faults(deadline_s=60) as client:
        with pytest.raises(RetryAfterTooLong) as raised:
            await client.call("year_wait", {"key": "g"})
        assert raised.value.retry_after_s == 365 * 24 * 3600
        assert raised.value.envelope.error.retry_after_ms == 365 * 24 * 3600 * 1000
        assert await calls(client) == ["year_wait"]
    assert clock.waits == []


async def test_the_deadline_bounds_the_whole_call(faults: Any, clock: Any) -> None:
    async with faults(base_delay_s=4, jitter=0, multiplier=1, deadline_s=10, max_attempts=100) as client:
        with pytest.raises(DeadlineExceeded):
            await client.call("flaky", {"key": "h", "fail_times": 100})
        # Two waits of 4 s fit in 10 s; a third would not, and is not slept.
        assert await calls(client) == ["flaky"] * 3
    assert clock.waits == [4, 4]


async def test_a_tool_not_declared_idempotent_is_not_repeated(faults: Any, clock: Any) -> None:
    async with faults() as client:
        with pytest.raises(NotRetriedUnsafe) as raised:
            await client.call("unsafe_write", {"key": "i"}, check=True)
        assert raised.value.attempts == 1
        assert await calls(client) == ["unsafe_write"]
        # Unless its error says nothing ran.
        envelope = await client.call("unsafe_write", {"key": "j", "say_nothing_ran": True})
        assert envelope.data == {"attempt": 2, "written": True}
    assert len(clock.waits) == 1


async def test_a_category_retries_cannot_help_is_not_retried(faults: Any, clock: Any) -> None:
    async with faults() as client:
        with pytest.raises(ToolFailed) as raised:
            await client.call("missing", {"key": "k"}, check=True)
        assert type(raised.value) is ToolFailed
        assert raised.value.category == "validation"
        assert await calls(client) == ["missing"]
    assert clock.waits == []


async def test_a_stale_ref_is_re_resolved_once(faults: Any) -> None:
    async with faults() as client:
        envelope = await client.read("stale_read", {"target_ref": "old", "path": "a.txt", "line": 4})
        assert envelope.ok
        # The fresh ref, and the hit's line moved to the nearest hit in the fresh page.
        assert envelope.data == {"path": "a.txt", "line": 5, "content": "needle"}
        [note] = envelope.warnings
        assert note.code == "target_relocated" and note.data["arguments"]["target_ref"] == "fresh-1"
        assert await calls(client) == ["stale_read", "find", "stale_read"]


async def test_a_ref_still_stale_after_one_re_resolution_gives_up(faults: Any) -> None:
    async with faults() as client:
        with pytest.raises(StaleTarget, match="stayed stale"):
            await client.read(
                "stale_read", {"target_ref": "old", "path": "a.txt", "line": 2, "stubborn": True}
            )
        # Once: read, search, read; no second search.
        assert await calls(client) == ["stale_read", "find", "stale_read"]
        with pytest.raises(StaleTarget, match="no recovery"):
            await client.read(
                "stale_read", {"target_ref": "old", "path": "a.txt", "line": 2, "no_recovery": True}
            )


async def test_a_repeated_cursor_stops_paging(faults: Any) -> None:
    async with faults() as client:
        seen = []
        with pytest.raises(CursorLoop) as raised:
            async for page in client.pages("looping"):
                seen.append(page)
        assert raised.value.token == "same-token"
        # The first page, the page the token gave; the token offered again is not sent.
        assert len(seen) == 2
        assert await calls(client) == ["looping", "looping"]
        with pytest.raises(CursorLoop):
            await client.collect("looping")


async def test_a_page_starting_over_stops_paging(faults: Any) -> None:
    async with faults() as client:
        with pytest.raises(CursorLoop, match="before the end"):
            async for _ in client.pages("backwards"):
                pass


async def test_paging_is_bounded(faults: Any) -> None:
    async with faults() as client:
        with pytest.raises(PageLimitExceeded):
            async for _ in client.pages("numbers", {"total": 40, "limit": 1}, max_pages=5):
                pass


async def test_a_schema_violating_envelope_is_refused(faults: Any) -> None:
    async with faults() as client:
        with pytest.raises(EnvelopeSchemaError) as raised:
            await client.call("bad_envelope")
        problems = " ".join(raised.value.problems)
        assert "verdict" in problems
        assert raised.value.raw["verdict"] == "CATASTROPHIC"
        # Not retried: one call.
        assert await calls(client) == ["bad_envelope"]


async def test_a_next_action_naming_an_unlisted_tool_is_not_called(faults: Any) -> None:
    async with faults() as client:
        envelope = await client.call("ghost_action")
        with pytest.raises(ToolNotListed) as raised:
            await client.follow(envelope, "ghost")
        assert raised.value.tool == "not_listed" and raised.value.action_id == "ghost"
        with pytest.raises(ActionNotFound):
            await client.follow(envelope, "next-page")
        with pytest.raises(ToolNotListed):
            await client.call("not_listed", {"x": 1})
        # Nothing but the one call reached the server.
        assert await calls(client) == ["ghost_action"]


async def test_pages_to_the_end_equal_the_combined_page(faults: Any) -> None:
    async with faults() as client:
        pages = [page async for page in client.pages("numbers", {"total": 10, "limit": 3})]
        assert [page.completeness.returned for page in pages] == [3, 3, 3, 1]
        rows = [row for page in pages for row in page.data["items"]]
        combined = await client.collect("numbers", {"total": 10, "limit": 3})
        assert combined.rows == rows == combined.envelope.data["items"]
        assert combined.envelope.completeness.wire() == {
            "unit": "item", "returned": 10, "total": 10, "complete": True, "truncated": False
        }  # fmt: skip
        assert combined.envelope.next_page() is None
        # Fields every page agrees on are kept.
        assert combined.envelope.data["generation"] == "g1"


async def test_a_row_limit_ends_on_a_page_boundary_with_a_next_page(faults: Any) -> None:
    async with faults() as client:
        combined = await client.collect("numbers", {"total": 20, "limit": 4}, max_rows=10)
        assert [row["n"] for row in combined.rows] == list(range(1, 11))
        completeness = combined.envelope.completeness
        assert (completeness.returned, completeness.total) == (10, 20)
        assert completeness.truncated and not completeness.complete
        assert completeness.truncation_reasons[0] == "page_limit"
        # The last page was asked for only the rows left: its next page starts at row 11.
        rest = await client.collect(combined.envelope.next_page().tool, combined.envelope.next_page().arguments)
        assert [row["n"] for row in rest.rows] == list(range(11, 21))
        assert rest.envelope.completeness.offset == 10 and rest.envelope.completeness.complete


async def test_a_token_limit_cuts_honestly(faults: Any) -> None:
    async with faults() as client:
        combined = await client.collect("numbers", {"total": 30, "limit": 8}, max_tokens=60)
        completeness = combined.envelope.completeness
        assert completeness.returned == len(combined.rows) < 30
        assert completeness.truncated and "budget_limit" in completeness.truncation_reasons
        action = combined.envelope.next_page()
        assert action is not None
        rest = await client.collect(action.tool, action.arguments)
        assert [row["n"] for row in combined.rows + rest.rows] == list(range(1, 31))


# --- faults keep what was fetched -------------------------------------------------------------


async def test_a_failed_page_keeps_the_rows_fetched_before_it(faults: Any) -> None:
    async with faults() as client:
        with pytest.raises(ToolFailed) as raised:
            await client.collect("breaks", {"total": 12, "break_at": 8})
        partial = raised.value.partial
        assert partial is not None
        assert [row["n"] for row in partial.rows] == list(range(1, 9))
        assert partial.envelope.completeness.returned == 8
        assert partial.envelope.completeness.truncated
        # Its next page is the call that failed, as the server offered it.
        resume = partial.envelope.next_page()
        assert resume is not None and resume.arguments["continuation"] == "p8"
        assert raised.value.resume == resume


async def test_a_server_that_dies_mid_walk_keeps_the_rows_fetched(faults_over: Any) -> None:
    # Over streamable HTTP as over stdio: the kit's own error, not a cancellation.
    async with faults_over() as client:
        with pytest.raises(ProtocolError) as raised:
            await client.collect("breaks", {"total": 12, "break_at": 8, "die": True})
        partial = raised.value.partial
        assert partial is not None
        assert [row["n"] for row in partial.rows] == list(range(1, 9))
        assert raised.value.resume is not None
        assert raised.value.resume.arguments["continuation"] == "p8"


async def test_pages_yields_a_failed_page_and_ends(faults: Any) -> None:
    async with faults() as client:
        seen = [page async for page in client.pages("breaks", {"total": 12, "break_at": 8})]
        # Two pages, then the failed one as read (a tool's failure is data), and no more.
        assert [page.ok for page in seen] == [True, True, False]
        assert seen[2].error is not None and seen[2].error.category == "internal"
        # Its call is the previous page's next-page action, to follow again.
        again = seen[1].next_page()
        assert again is not None and again.arguments["continuation"] == "p8"


async def test_pages_says_which_call_to_resume_with(faults_over: Any) -> None:
    async with faults_over() as client:
        seen = []
        with pytest.raises(ProtocolError) as raised:
            async for page in client.pages("breaks", {"total": 12, "break_at": 8, "die": True}):
                seen.append(page)
        assert len(seen) == 2
        assert raised.value.resume is not None
        assert raised.value.resume.arguments["continuation"] == "p8"
        assert raised.value.partial is None


async def test_a_dead_server_fails_each_later_call_as_the_kits_error(faults_over: Any) -> None:
    async with faults_over() as client:
        with pytest.raises(ProtocolError):
            await client.collect("breaks", {"total": 12, "break_at": 8, "die": True})
        # The server is gone: the next call fails at once, typed, and the session closes cleanly.
        with pytest.raises(ProtocolError):
            await client.call("numbers", {"total": 3})


@pytest.mark.parametrize("break_at", [0, 4, 8])
async def test_a_kill_at_any_page_keeps_every_row_before_it(faults_over: Any, break_at: int) -> None:
    # The server dies when asked for the page at `break_at` (the first, a middle one, the last),
    # over stdio and over streamable HTTP: the kit's own error, the rows before kept.
    async with faults_over() as client:
        with pytest.raises(ProtocolError) as raised:
            await client.collect("breaks", {"total": 12, "break_at": break_at, "die": True})
    partial = raised.value.partial
    if break_at == 0:
        # Nothing was fetched: no partial page, and the caller's own call starts again.
        assert partial is None and raised.value.resume is None
    else:
        assert partial is not None
        assert [row["n"] for row in partial.rows] == list(range(1, break_at + 1))
        assert partial.envelope.completeness.truncated and not partial.envelope.completeness.complete
        assert raised.value.resume is not None
        assert raised.value.resume.arguments["continuation"] == f"p{break_at}"


async def test_a_continuation_that_grows_without_bound_is_refused_rows_kept(faults: Any) -> None:
    async with faults() as client:
        with pytest.raises(ContinuationTooLong) as raised:
            await client.collect("growing", {})
        assert raised.value.chars > MAX_CONTINUATION_CHARS
        partial = raised.value.partial
        assert partial is not None
        # The first call, then continuations of 64, 128, … 65,536 characters: twelve pages of
        # two rows, in order.
        assert [row["n"] for row in partial.rows] == list(range(1, 25))
        # The page it would have fetched is not sent.
        assert await calls(client) == ["growing"] * 12


async def test_a_total_that_changes_mid_walk_stops_it_rows_kept(faults: Any) -> None:
    async with faults() as client:
        with pytest.raises(TotalChanged) as raised:
            await client.collect("shifting", {})
        assert (raised.value.first, raised.value.now, raised.value.page) == (100, 102, 2)
        partial = raised.value.partial
        assert partial is not None and [row["n"] for row in partial.rows] == [1, 2]
        # The pages no longer describe one result: nothing continues them.
        assert raised.value.resume is None and partial.envelope.next_page() is None


async def test_a_tool_that_leaves_the_listing_mid_walk_is_a_typed_error_rows_kept(faults: Any) -> None:
    async with faults() as client:
        with pytest.raises(EnvelopeClientError) as raised:
            await client.collect("vanishing", {})
        partial = raised.value.partial
        assert partial is not None and [row["n"] for row in partial.rows] == [1, 2, 3, 4]
        assert raised.value.resume is not None and raised.value.resume.arguments == {"continuation": "v4"}
        # The server answers the unlisted tool in plain text: no envelope, typed as such, with
        # the server's own answer kept.
        assert isinstance(raised.value, NotAnEnvelope) and raised.value.result.is_error
        # The server refused the third page without running it, and nothing was retried.
        assert (await calls(client)).count("vanishing") == 2


async def test_the_page_bound_keeps_the_rows_fetched(faults: Any) -> None:
    async with faults() as client:
        with pytest.raises(PageLimitExceeded) as raised:
            await client.collect("numbers", {"total": 40, "limit": 2}, max_pages=3)
        partial = raised.value.partial
        assert partial is not None
        assert [row["n"] for row in partial.rows] == list(range(1, 7))
        rest = await client.collect(partial.envelope.next_page().tool, partial.envelope.next_page().arguments)
        assert [row["n"] for row in partial.rows + rest.rows] == list(range(1, 41))


async def test_an_empty_combined_page_says_so_plainly(faults: Any) -> None:
    async with faults() as client:
        combined = await client.collect("numbers", {"total": 0})
        assert combined.rows == []
        assert combined.envelope.next_step == "no items (1 page combined)"


# --- plain tools pass through -----------------------------------------------------------------


async def test_plain_tools_pass_through_marked_as_not_envelopes(faults: Any) -> None:
    async with faults() as client:
        listing = await client.list_tools()
        assert is_plain(listing["weather"]) and not speaks_envelope(listing["weather"])
        assert not is_plain(listing["raw_text"])  # listed without an output schema
        sunny = await client.call_any("weather", {"city": "Paris"})
        assert isinstance(sunny, PlainResult) and sunny.envelope is False
        assert "sunny in Paris" in sunny.text and not sunny.is_error
        assert sunny.wire()["envelope"] is False
        # Told by its answer: no envelope in it.
        raw = await client.call_any("raw_text")
        assert isinstance(raw, PlainResult) and raw.text == "just text"
        # An envelope is read as one.
        page = await client.call_any("numbers", {"total": 3})
        assert not isinstance(page, PlainResult) and page.ok
        # `call` reads envelopes only: a plain answer is no envelope.
        with pytest.raises(NotAnEnvelope):
            await client.call("weather", {"city": "Paris"})
        # An answer that claims to be an envelope and breaks its schema still fails, naming it.
        with pytest.raises(EnvelopeSchemaError) as raised:
            await client.call_any("bad_envelope")
        assert not isinstance(raised.value, NotAnEnvelope)
        assert "verdict" in " ".join(raised.value.problems)
        # A plain tool is called once: nothing says a retry could help.
        assert (await calls(client)).count("weather") == 2


async def test_a_next_action_whose_arguments_fail_the_schema_is_not_called(faults: Any) -> None:
    async with faults() as client:
        envelope = await client.call("bad_args")
        with pytest.raises(ActionArguments) as raised:
            await client.follow(envelope, "count")
        assert raised.value.action_id == "count" and raised.value.tool == "numbers"
        assert "/total" in raised.value.detail
        assert await calls(client) == ["bad_args"]


def test_relocation_names_no_argument_of_its_own() -> None:
    """A hit is moved by the arguments the read and the fresh rows share, whatever the tool
    calls them: here `file` and `row`, not the example server's `path` and `line`."""
    from envelope_client import parse_envelope, relocate_hit

    recovered = parse_envelope(
        {
            "ok": True,
            "verdict": "INFO",
            "data": {
                "ref": "fresh-ref",
                "hits": [{"file": "a.txt", "row": 9}, {"file": "b.txt", "row": 4}, {"file": "a.txt", "row": 30}],
            },
            "completeness": {"unit": "item", "returned": 3, "total": 3, "complete": True, "truncated": False},
            "meta": {"request_id": "01HM3K2X9V7QY8R40000000000", "schema_version": 3},
        }
    )
    moved = relocate_hit({"ref": "stale", "file": "a.txt", "row": 7, "context": 2}, recovered, "ref")
    assert moved == {"ref": "fresh-ref", "file": "a.txt", "row": 9, "context": 2}
    # Still where it was: not moved.
    kept = relocate_hit({"ref": "stale", "file": "b.txt", "row": 4}, recovered, "ref")
    assert kept == {"ref": "fresh-ref", "file": "b.txt", "row": 4}
