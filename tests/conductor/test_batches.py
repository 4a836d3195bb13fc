"""A batch stays a batch through the conductor, and bad input is answered at the first hop.

The test plays the client and the agent on the raw wire: what the agent receives is what the
conductor wrote on its link, what the client receives what it answered.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from acpio.jsonrpc.messages import MAX_BATCH_ENTRIES

from ._support import PYTHON, ROOT, TIMEOUT, initialized_raw_chain

INIT = {"protocolVersion": 1}


def request(request_id: int, method: str, params: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def notification(method: str, params: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


async def test_a_client_batch_reaches_the_agent_as_one_batch_and_is_answered_with_one() -> None:
    async with initialized_raw_chain() as (client, me):
        client.send(
            [request(7, "x/first", {"n": 1}), notification("x/note", {"n": 2}), request(8, "x/second", {})]
        )
        batch = await me.recv()
        assert isinstance(batch, list), batch
        assert [m["method"] for m in batch] == ["x/first", "x/note", "x/second"]
        assert batch[0]["params"] == {"n": 1}
        assert "id" not in batch[1]
        first, second = batch[0]["id"], batch[2]["id"]
        me.send(
            [
                {"jsonrpc": "2.0", "id": second, "result": {"two": True}},
                {"jsonrpc": "2.0", "id": first, "error": {"code": -32000, "message": "nope"}},
            ]
        )
        answers = await client.recv()
        assert isinstance(answers, list), answers
        by_id = {answer["id"]: answer for answer in answers}
        assert set(by_id) == {7, 8}
        assert by_id[8]["result"] == {"two": True}
        assert by_id[7]["error"]["message"] == "nope"
        # A single message afterwards is single again, both ways.
        client.request("x/third", {}, request_id=9)
        third = await me.recv()
        assert isinstance(third, dict)
        assert third["method"] == "x/third"
        me.respond(third["id"], {})
        assert (await client.recv()) == {"jsonrpc": "2.0", "id": 9, "result": {}}


async def test_an_agent_batch_of_notifications_reaches_the_client_as_one_batch() -> None:
    async with initialized_raw_chain() as (client, me):
        updates = [notification("session/update", {"sessionId": "s", "n": i}) for i in range(3)]
        me.send(updates)
        assert (await client.recv()) == updates


async def test_bad_entries_of_a_batch_are_answered_by_the_conductor_and_the_rest_goes_on() -> None:
    async with initialized_raw_chain() as (client, me):
        client.send([17, request(3, "x/ok", {})])
        forwarded = await me.recv()
        assert isinstance(forwarded, list)
        assert [m["method"] for m in forwarded] == ["x/ok"]  # still a batch: of the one valid entry
        me.send([{"jsonrpc": "2.0", "id": forwarded[0]["id"], "result": {"ok": 1}}])
        answers = await client.recv()
        assert isinstance(answers, list)
        invalid = [a for a in answers if a["id"] is None]
        assert [a["error"]["code"] for a in invalid] == [-32600]
        assert [a["result"] for a in answers if a["id"] == 3] == [{"ok": 1}]


async def test_a_line_that_is_not_json_is_answered_at_the_first_hop_and_goes_no_further() -> None:
    async with initialized_raw_chain() as (client, me):
        client.send(b'{"jsonrpc": "2.0", "id": 4, "method": ')
        answer = await client.recv()
        assert answer["id"] is None
        assert answer["error"]["code"] == -32700
        client.request("x/after", {}, request_id=5)
        after = await me.recv()  # the agent's next frame is the next valid message: nothing else came
        assert after["method"] == "x/after"
        me.respond(after["id"], {"fine": True})
        assert (await client.response_to(5))["result"] == {"fine": True}


async def test_acpio_conductor_passes_a_batch_to_its_agent_process_as_one_line(tmp_path: Path) -> None:
    """The program, on the wire: the client's batch is one line on the agent's stdin (its --debug log
    shows the lines as they crossed), and the answer one line on the conductor's stdout."""
    debug = tmp_path / "debug"
    process = await asyncio.create_subprocess_exec(
        PYTHON,
        "-m",
        "acpio",
        "conductor",
        "--debug",
        str(debug),
        "agent",
        f"{PYTHON} -m acpio testy",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        process.stdin.write(json.dumps(request(0, "initialize", INIT)).encode() + b"\n")
        new = {"cwd": str(tmp_path), "mcpServers": []}
        process.stdin.write(
            json.dumps([request(1, "session/new", new), request(2, "session/new", new)]).encode() + b"\n"
        )
        await process.stdin.drain()
        async with asyncio.timeout(TIMEOUT):
            assert json.loads(await process.stdout.readline())["id"] == 0
            answers = json.loads(await process.stdout.readline())
        assert isinstance(answers, list)
        assert sorted(answer["id"] for answer in answers) == [1, 2]
        assert all("sessionId" in answer["result"] for answer in answers)
    finally:
        process.stdin.close()
        async with asyncio.timeout(TIMEOUT):
            await process.wait()
    sent = [
        line.split(" ", 2)[2]
        for line in (debug / "1-agent.log").read_text().splitlines()[1:]
        if " → " in line
    ]
    batch = json.loads(sent[1])
    assert [entry["method"] for entry in batch] == ["session/new", "session/new"]
    received = [
        line.split(" ", 2)[2]
        for line in (debug / "1-agent.log").read_text().splitlines()[1:]
        if " ← " in line
    ]
    assert isinstance(json.loads(received[1]), list)  # testy answered the batch with one array


async def test_a_batch_refused_whole_is_answered_with_one_error_object_not_an_array() -> None:
    """JSON-RPC answers ``[]`` (and a ``[``-line that is not JSON) with one error, as the engine does;
    the conductor wrapped it in an array, which a client waiting for one object could not read."""
    async with initialized_raw_chain() as (client, me):
        for line, code in [(b"[]", -32600), (b"[ ]", -32600), (b" [\t] ", -32600), (b"[1,", -32700)]:
            client.send(line)
            answer = await client.recv()
            assert isinstance(answer, dict), (line, answer)
            assert (answer["id"], answer["error"]["code"]) == (None, code), line
        client.request("x/after", {}, request_id=5)
        after = await me.recv()  # nothing of those lines went on to the agent
        assert after["method"] == "x/after"


async def test_a_batch_of_non_objects_is_answered_with_one_error_per_entry_in_an_array() -> None:
    async with initialized_raw_chain() as (client, me):
        client.send(b"[1,2]")
        answers = await client.recv()
        assert isinstance(answers, list), answers
        assert [(a["id"], a["error"]["code"]) for a in answers] == [(None, -32600)] * 2
        client.request("x/after", {}, request_id=5)
        assert (await me.recv())["method"] == "x/after"


async def test_a_batch_over_the_limit_is_refused_at_the_first_hop_with_an_error_per_request() -> None:
    """The conductor forwarded the first 1,000 entries and left the rest unanswered under their ids."""
    async with initialized_raw_chain() as (client, me):
        client.send([request(i, "x/many", {}) for i in range(MAX_BATCH_ENTRIES + 1)])
        answers = await client.recv()
        assert isinstance(answers, list), answers
        assert [a["id"] for a in answers] == list(range(MAX_BATCH_ENTRIES + 1))
        assert {a["error"]["code"] for a in answers} == {-32600}
        assert "the limit is 1000" in answers[-1]["error"]["message"]
        client.request("x/after", {}, request_id="after")
        assert (await me.recv())["method"] == "x/after"  # nothing of the batch went on
