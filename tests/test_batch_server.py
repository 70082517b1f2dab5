"""pipeline.testing.batch_api (Files + Batches API of the test server) through the real openai client.

Every status path (completed, failed, expired, cancelled), out-of-order output, error-file
contents, content faults inside output lines, expiry, idempotent downloads, lists and the
counters. Status progression is driven by retrieves, so nothing here depends on timing.
"""

from __future__ import annotations

import argparse
import json

import openai
import pytest
from pydantic import ValidationError
from samples import SPARSEFORMER, stub_answer, validate

from pipeline.testing.batch_api import (
    CANCELLED_MESSAGE,
    EXPIRED_MESSAGE,
    BatchConfig,
    add_cli_arguments,
    config_from_args,
    parse_multipart,
    validate_input,
)
from pipeline.testing.faults import UNGROUNDED_TAG
from pipeline.testing.openai_server import OpenAIServer, ServerConfig

pytestmark = pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])

ENDPOINT = "/v1/chat/completions"
MODEL = "batch-model"
TERMINAL = ("completed", "failed", "expired", "cancelled")
STAGES = ("tldr", "tags", "claims")


def abstract(i: int) -> str:
    return f"Item {i}. {SPARSEFORMER}"


def request_line(i: int, stage: str = "tldr", **overrides) -> dict:
    body = {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": f"Answer with JSON only. (name: {stage})"},
            {"role": "user", "content": f"Read this.\n<abstract>\n{abstract(i)}\n</abstract>"},
        ],
        "temperature": 0,
        "max_tokens": 400,
    }
    line = {"custom_id": f"{stage}-{i}", "method": "POST", "url": ENDPOINT, "body": body}
    return {**line, **overrides}


def jsonl(lines) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def requests(n: int, stage: str = "tldr") -> bytes:
    return jsonl(request_line(i, stage) for i in range(n))


@pytest.fixture
def make_server():
    servers: list[OpenAIServer] = []

    def make(answer_fn=stub_answer, batch: BatchConfig | None = None, **config) -> OpenAIServer:
        server = OpenAIServer(ServerConfig(batch=batch, **config), answer_fn=answer_fn)
        server.start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


def client_for(server: OpenAIServer, api_key: str = "test-key") -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key=api_key, max_retries=0, timeout=10)


def upload(client: openai.OpenAI, data: bytes, name: str = "in.jsonl"):
    return client.files.create(file=(name, data, "application/jsonl"), purpose="batch")


def submit(client: openai.OpenAI, data: bytes):
    file = upload(client, data)
    return client.batches.create(input_file_id=file.id, endpoint=ENDPOINT, completion_window="24h")


def poll(client: openai.OpenAI, batch, limit: int = 50) -> tuple[object, list[str]]:
    """Retrieve until terminal; (last batch, statuses seen including the first one)."""
    seen = [batch.status]
    for _ in range(limit):
        if batch.status in TERMINAL:
            return batch, seen
        batch = client.batches.retrieve(batch.id)
        seen.append(batch.status)
    raise AssertionError(f"not terminal after {limit} polls: {seen}")


def read_lines(client: openai.OpenAI, file_id: str | None) -> list[dict]:
    if file_id is None:
        return []
    return [json.loads(line) for line in client.files.content(file_id).text.splitlines()]


# --- the normal path ----------------------------------------------------------------------


def test_completed_path_statuses_counts_and_output_format(make_server):
    server = make_server(batch=BatchConfig(polls_per_status=2))
    client = client_for(server)
    data = jsonl(request_line(i, stage) for i in range(4) for stage in STAGES)
    batch = submit(client, data)
    assert batch.status == "validating"
    assert batch.request_counts.total == 0 and batch.output_file_id is None
    counts = []
    seen = [batch.status]
    while batch.status not in TERMINAL:
        batch = client.batches.retrieve(batch.id)
        seen.append(batch.status)
        counts.append(batch.request_counts.completed)
    assert seen == ["validating", "validating"] + ["in_progress"] * 2 + ["finalizing"] * 2 + [
        "completed"
    ]
    assert counts[1:3] == [0, 6]  # the answered share grows while in progress
    assert batch.request_counts.model_dump() == {"total": 12, "completed": 12, "failed": 0}
    assert batch.error_file_id is None and batch.errors is None and batch.model == MODEL
    assert batch.in_progress_at and batch.finalizing_at and batch.completed_at
    assert batch.usage is not None and batch.usage.total_tokens > 0

    out = read_lines(client, batch.output_file_id)
    assert sorted(r["custom_id"] for r in out) == sorted(
        f"{s}-{i}" for i in range(4) for s in STAGES
    )
    for row in out:
        assert set(row) == {"id", "custom_id", "response", "error"}
        assert row["id"].startswith("batch_req_") and row["error"] is None
        assert row["response"]["status_code"] == 200
        assert row["response"]["request_id"].startswith("req_")
        completion = openai.types.chat.ChatCompletion.model_validate(row["response"]["body"])
        assert completion.object == "chat.completion" and completion.model == MODEL
        stage, i = row["custom_id"].split("-")
        validate(stage, completion.choices[0].message.content, abstract(int(i)))
    meta = client.files.retrieve(batch.output_file_id)
    assert meta.purpose == "batch_output" and meta.filename.endswith("_output.jsonl")


def test_output_lines_are_out_of_order_unless_configured(make_server):
    for shuffle in (True, False):
        server = make_server(batch=BatchConfig(shuffle=shuffle))
        client = client_for(server)
        batch, _ = poll(client, submit(client, requests(30)))
        ids = [r["custom_id"] for r in read_lines(client, batch.output_file_id)]
        expected = [f"tldr-{i}" for i in range(30)]
        assert sorted(ids) == sorted(expected)
        assert (ids != expected) is shuffle


def test_same_config_same_ids_and_order(make_server):
    runs = []
    for _ in range(2):
        client = client_for(make_server(seed=7))
        batch, _ = poll(client, submit(client, requests(10)))
        rows = read_lines(client, batch.output_file_id)
        runs.append((batch.id, [(r["id"], r["custom_id"]) for r in rows]))
    assert runs[0] == runs[1]


def test_content_download_is_idempotent(make_server):
    server = make_server(batch=BatchConfig(line_errors={"tldr-1": 500}))
    client = client_for(server)
    batch, _ = poll(client, submit(client, requests(6)))
    for file_id in (batch.output_file_id, batch.error_file_id):
        first = client.files.content(file_id).content
        second = client.files.content(file_id).content
        assert first == second and first.endswith(b"\n")
        assert client.files.retrieve(file_id).bytes == len(first)
    again = client.batches.retrieve(batch.id)  # polling a finished batch changes nothing
    assert again.model_dump() == batch.model_dump()
    assert server.stats()["batch"]["content_downloads"] == 4


async def test_async_client_both_transports(make_server):
    server = make_server()
    for http_client in (None, openai.DefaultAioHttpClient()):
        kwargs = {"http_client": http_client} if http_client is not None else {}
        async with openai.AsyncOpenAI(
            base_url=server.base_url, api_key="k", max_retries=0, **kwargs
        ) as client:
            file = await client.files.create(file=("a.jsonl", requests(5)), purpose="batch")
            batch = await client.batches.create(
                input_file_id=file.id, endpoint=ENDPOINT, completion_window="24h"
            )
            while batch.status not in TERMINAL:
                batch = await client.batches.retrieve(batch.id)
            assert batch.status == "completed"
            content = await client.files.content(batch.output_file_id)
            assert len(content.text.splitlines()) == 5
            page = await client.batches.list(limit=5)
            assert batch.id in [b.id for b in page.data]
    assert server.stats()["batch"]["batches_created"] == 2


# --- per-line outcomes --------------------------------------------------------------------


def test_line_errors_go_to_the_error_file(make_server):
    errors = {"tldr-1": 400, "tldr-3": 500, "tldr-4": 429}
    server = make_server(batch=BatchConfig(line_errors=errors))
    client = client_for(server)
    batch, _ = poll(client, submit(client, requests(6)))
    assert batch.status == "completed"
    assert batch.request_counts.model_dump() == {"total": 6, "completed": 3, "failed": 3}
    out = read_lines(client, batch.output_file_id)
    err = read_lines(client, batch.error_file_id)
    assert sorted(r["custom_id"] for r in out) == ["tldr-0", "tldr-2", "tldr-5"]
    assert {r["custom_id"]: r["response"]["status_code"] for r in err} == errors
    for row in err:
        assert row["error"] is None and row["id"].startswith("batch_req_")
        body = row["response"]["body"]
        assert set(body["error"]) == {"message", "type", "param", "code"}
    by_id = {r["custom_id"]: r["response"]["body"]["error"] for r in err}
    assert by_id["tldr-3"]["type"] == "server_error"
    assert by_id["tldr-4"]["code"] == "rate_limit_exceeded"
    assert server.stats()["batch"]["lines_by_status"] == {200: 3, 400: 1, 500: 1, 429: 1}


def test_server_faults_apply_per_line(make_server):
    # The script gives the first admitted requests (input order) these outcomes.
    script = ("ok", "500", "ungrounded", "503", "truncated", "refusal", "schema", "429")
    stages = ["claims"] * len(script)
    server = make_server(script=script)
    client = client_for(server)
    data = jsonl(request_line(i, s) for i, s in enumerate(stages))
    batch, _ = poll(client, submit(client, data))
    out = {r["custom_id"]: r["response"]["body"] for r in read_lines(client, batch.output_file_id)}
    err = {r["custom_id"]: r["response"] for r in read_lines(client, batch.error_file_id)}
    assert sorted(err) == ["claims-1", "claims-3", "claims-7"]
    assert [err[c]["status_code"] for c in ("claims-1", "claims-3", "claims-7")] == [500, 503, 429]
    message = {c: body["choices"][0]["message"] for c, body in out.items()}
    validate("claims", message["claims-0"]["content"], abstract(0))  # clean
    with pytest.raises(ValidationError, match="protein folding|evidence"):
        validate("claims", message["claims-2"]["content"], abstract(2))  # ungrounded
    with pytest.raises(json.JSONDecodeError):
        json.loads(message["claims-4"]["content"])  # truncated
    assert message["claims-5"]["content"] is None and message["claims-5"]["refusal"]
    with pytest.raises(ValidationError):
        validate("claims", message["claims-6"]["content"], abstract(6))  # schema
    stats = server.stats()
    assert stats["faults"] == {f: 1 for f in script if f != "ok"}
    assert stats["by_stage"] == {"claims": 8}
    assert stats["requests"] == 0  # batch lines are not chat-completions requests


def test_ungrounded_tags_fault_rate_inside_output_lines(make_server):
    server = make_server(faults={"ungrounded": 1.0})
    client = client_for(server)
    batch, _ = poll(client, submit(client, requests(3, "tags")))
    for row in read_lines(client, batch.output_file_id):
        content = row["response"]["body"]["choices"][0]["message"]["content"]
        assert UNGROUNDED_TAG in json.loads(content)["tags"]


def test_unreadable_body_is_a_400_line(make_server):
    client = client_for(make_server())
    bad = request_line(1)
    bad["body"]["messages"][1]["content"] = "no abstract tags here"
    batch, _ = poll(client, submit(client, jsonl([request_line(0), bad])))
    assert batch.status == "completed"
    (row,) = read_lines(client, batch.error_file_id)
    assert row["custom_id"] == "tldr-1" and row["response"]["status_code"] == 400
    assert "abstract" in row["response"]["body"]["error"]["message"]


# --- expiry, validation failure, cancellation --------------------------------------------


def test_expired_batch_has_partial_output_and_batch_expired_errors(make_server):
    server = make_server(batch=BatchConfig(expire_after_lines=3, shuffle=False))
    client = client_for(server)
    batch, seen = poll(client, submit(client, requests(5)))
    assert seen == ["validating", "in_progress", "expired"]
    assert batch.expired_at and batch.completed_at is None and batch.finalizing_at is None
    assert batch.request_counts.model_dump() == {"total": 5, "completed": 3, "failed": 2}
    assert [r["custom_id"] for r in read_lines(client, batch.output_file_id)] == [
        "tldr-0",
        "tldr-1",
        "tldr-2",
    ]
    err = read_lines(client, batch.error_file_id)
    assert [r["custom_id"] for r in err] == ["tldr-3", "tldr-4"]
    for row in err:
        assert row["response"] is None
        assert row["error"] == {"code": "batch_expired", "message": EXPIRED_MESSAGE}
    stats = server.stats()["batch"]
    assert stats["lines_answered"] == 3 and stats["lines_expired"] == 2
    assert stats["batches_by_status"] == {"expired": 1}


def test_expired_with_nothing_answered_has_no_output_file(make_server):
    client = client_for(make_server(batch=BatchConfig(expire_after_lines=0)))
    batch, _ = poll(client, submit(client, requests(2)))
    assert batch.status == "expired" and batch.output_file_id is None
    assert len(read_lines(client, batch.error_file_id)) == 2


def test_a_stalled_request_expires_the_batch(make_server):
    server = make_server(script=("ok", "stall", "ok"))
    client = client_for(server)
    batch, _ = poll(client, submit(client, requests(3)))
    assert batch.status == "expired"
    assert len(read_lines(client, batch.output_file_id)) == 2
    (row,) = read_lines(client, batch.error_file_id)
    assert row["custom_id"] == "tldr-1" and row["error"]["code"] == "batch_expired"
    assert server.stats()["batch"]["lines_stalled"] == 1


def _line(**changes) -> dict:
    line = request_line(0)
    for key, value in changes.items():
        if value is None:
            line.pop(key)
        else:
            line[key] = value
    return line


@pytest.mark.parametrize(
    "data,code,line_no",
    [
        (jsonl([request_line(0)]) + b"not json\n", "invalid_json_line", 2),
        (jsonl([_line(custom_id=None)]), "missing_required_parameter", 1),
        (jsonl([_line(body=None)]), "missing_required_parameter", 1),
        (jsonl([request_line(0), request_line(0)]), "duplicate_custom_id", 2),
        (jsonl([_line(method="GET")]), "invalid_method", 1),
        (jsonl([_line(url="/v1/embeddings")]), "invalid_url", 1),
        (
            jsonl(
                [request_line(0), request_line(1, body={**request_line(1)["body"], "model": "x"})]
            ),
            "mismatched_model",
            2,
        ),
        (b"\n\n", "empty_file", None),
        (requests(3), "too_many_requests", None),
    ],
)
def test_invalid_input_fails_the_batch(make_server, data, code, line_no):
    server = make_server(batch=BatchConfig(max_requests=2))
    client = client_for(server)
    batch, seen = poll(client, submit(client, data))
    assert seen == ["validating", "failed"]
    assert batch.failed_at and batch.in_progress_at is None
    assert batch.output_file_id is None and batch.error_file_id is None
    assert batch.errors is not None and batch.errors.object == "list"
    assert (code, line_no) in [(e.code, e.line) for e in batch.errors.data]
    stats = server.stats()["batch"]
    assert stats["lines_answered"] == 0 and stats["batches_failed"] == 1


def test_validate_on_upload_rejects_the_file(make_server):
    client = client_for(make_server(batch=BatchConfig(validate_on_upload=True)))
    with pytest.raises(openai.BadRequestError) as err:
        upload(client, jsonl([request_line(0), request_line(0)]))
    assert err.value.code == "duplicate_custom_id"
    assert upload(client, requests(2)).purpose == "batch"


def test_cancel_in_progress_keeps_the_answered_lines(make_server):
    server = make_server(batch=BatchConfig(polls_per_status=2, shuffle=False))
    client = client_for(server)
    batch = submit(client, requests(6))
    for _ in range(3):  # validating, in_progress (0 answered), in_progress (3 answered)
        batch = client.batches.retrieve(batch.id)
    assert batch.status == "in_progress" and batch.request_counts.completed == 3
    cancelled = client.batches.cancel(batch.id)
    assert cancelled.status == "cancelling" and cancelled.cancelling_at
    assert client.batches.cancel(batch.id).status == "cancelling"  # idempotent
    batch, seen = poll(client, cancelled)
    assert seen == ["cancelling", "cancelling", "cancelling", "cancelled"]
    assert batch.cancelled_at and batch.completed_at is None
    assert [r["custom_id"] for r in read_lines(client, batch.output_file_id)] == [
        "tldr-0",
        "tldr-1",
        "tldr-2",
    ]
    assert batch.error_file_id is None  # the unanswered requests are in no file
    assert batch.request_counts.model_dump() == {"total": 6, "completed": 3, "failed": 0}
    with pytest.raises(openai.ConflictError):
        client.batches.cancel(batch.id)
    stats = server.stats()["batch"]
    assert stats["cancels"] == 1 and stats["batches_cancelled"] == 1


def test_cancel_while_validating_and_list_cancelled(make_server):
    client = client_for(make_server(batch=BatchConfig(list_cancelled=True)))
    batch = submit(client, requests(3))
    batch, seen = poll(client, client.batches.cancel(batch.id))
    assert seen == ["cancelling", "cancelling", "cancelled"]
    assert batch.output_file_id is None
    err = read_lines(client, batch.error_file_id)
    assert sorted(r["custom_id"] for r in err) == ["tldr-0", "tldr-1", "tldr-2"]
    assert {json.dumps(r["error"]) for r in err} == {
        json.dumps({"code": "batch_cancelled", "message": CANCELLED_MESSAGE})
    }


def test_cancel_a_completed_batch_is_a_conflict(make_server):
    client = client_for(make_server())
    batch, _ = poll(client, submit(client, requests(1)))
    with pytest.raises(openai.ConflictError, match="completed"):
        client.batches.cancel(batch.id)


# --- lists, files, errors -----------------------------------------------------------------


def test_batch_list_is_newest_first_with_cursor_pages(make_server):
    client = client_for(make_server())
    file = upload(client, requests(2))
    ids = [
        client.batches.create(input_file_id=file.id, endpoint=ENDPOINT, completion_window="24h").id
        for _ in range(5)
    ]
    first = client.batches.list(limit=2)
    assert [b.id for b in first.data] == ids[::-1][:2] and first.has_more
    assert [b.id for b in client.batches.list(limit=2, after=ids[3]).data] == [ids[2], ids[1]]
    assert [b.id for b in client.batches.list(limit=2)] == ids[::-1]  # auto-pagination
    assert {b.status for b in client.batches.list()} == {"validating"}  # listing is no poll
    with pytest.raises(openai.BadRequestError):
        client.batches.list(limit=101)


def test_files_retrieve_list_delete(make_server):
    server = make_server()
    client = client_for(server)
    file = upload(client, requests(2), name="two.jsonl")
    assert file.id.startswith("file-") and file.filename == "two.jsonl"
    assert file.bytes == len(requests(2)) and file.expires_at > file.created_at
    assert client.files.retrieve(file.id).model_dump() == file.model_dump()
    assert client.files.content(file.id).content == requests(2)
    assert [f.id for f in client.files.list(purpose="batch")] == [file.id]
    deleted = client.files.delete(file.id)
    assert deleted.deleted and deleted.id == file.id
    for call in (client.files.retrieve, client.files.content, client.files.delete):
        with pytest.raises(openai.NotFoundError):
            call(file.id)
    stats = server.stats()["batch"]
    assert (stats["files_uploaded"], stats["files_deleted"], stats["files"]) == (1, 1, 0)


def test_upload_checks(make_server):
    client = client_for(make_server(batch=BatchConfig(max_file_bytes=200)))
    with pytest.raises(openai.APIStatusError) as err:
        upload(client, requests(3))  # ~1 kB over a 200-byte limit
    assert err.value.status_code == 413
    with pytest.raises(openai.BadRequestError, match="jsonl"):
        upload(client, b"{}\n", name="in.txt")
    with pytest.raises(openai.BadRequestError, match="purpose"):
        client.files.create(file=("in.jsonl", b"{}\n"), purpose="nonsense")  # type: ignore[arg-type]
    ok = client.files.create(file=("notes.txt", b"hello"), purpose="user_data")
    assert ok.purpose == "user_data" and ok.expires_at is None


def test_upload_larger_than_the_chat_body_limit(make_server):
    client = client_for(make_server())
    padding = "x" * (9 * 1024 * 1024)  # > the 8 MiB limit of chat-completions bodies
    line = request_line(0)
    line["body"]["metadata_padding"] = padding
    data = jsonl([line])
    assert upload(client, data).bytes == len(data)


def test_create_errors(make_server):
    client = client_for(make_server())
    file = upload(client, requests(1))
    with pytest.raises(openai.NotFoundError):
        client.batches.create(input_file_id="file-nope", endpoint=ENDPOINT, completion_window="24h")
    with pytest.raises(openai.BadRequestError, match="endpoint"):
        client.batches.create(
            input_file_id=file.id, endpoint="/v1/embeddings", completion_window="24h"
        )
    with pytest.raises(openai.BadRequestError, match="completion_window"):
        client.batches.create(
            input_file_id=file.id,
            endpoint=ENDPOINT,
            completion_window="48h",  # type: ignore[arg-type]
        )
    other = client.files.create(file=("n.txt", b"x"), purpose="user_data")
    with pytest.raises(openai.BadRequestError, match="purpose"):
        client.batches.create(input_file_id=other.id, endpoint=ENDPOINT, completion_window="24h")
    for call in (client.batches.retrieve, client.batches.cancel):
        with pytest.raises(openai.NotFoundError):
            call("batch_nope")
    batch = client.batches.create(
        input_file_id=file.id, endpoint=ENDPOINT, completion_window="24h", metadata={"a": "b"}
    )
    assert batch.metadata == {"a": "b"}


def test_api_key_applies_to_files_and_batches(make_server):
    server = make_server(api_key="right")
    with pytest.raises(openai.AuthenticationError):
        upload(client_for(server, api_key="wrong"), requests(1))
    with pytest.raises(openai.AuthenticationError):
        client_for(server, api_key="wrong").batches.list()
    assert upload(client_for(server, api_key="right"), requests(1)).purpose == "batch"


def test_chat_completions_still_served_alongside(make_server):
    server = make_server()
    client = client_for(server)
    poll(client, submit(client, requests(2)))
    line = request_line(5)
    reply = client.chat.completions.create(**line["body"])
    validate("tldr", reply.choices[0].message.content, abstract(5))
    stats = server.stats()
    assert stats["requests"] == 1 and stats["by_status"] == {200: 1}
    assert stats["batch"]["lines_answered"] == 2


# --- pure parts ---------------------------------------------------------------------------


def test_parse_multipart():
    body = (
        b"--XyZ\r\n"
        b'Content-Disposition: form-data; name="purpose"\r\n\r\n'
        b"batch\r\n"
        b"--XyZ\r\n"
        b'Content-Disposition: form-data; name="file"; filename="a b.jsonl"\r\n'
        b"Content-Type: application/octet-stream\r\n\r\n"
        b"line1\r\nline2\r\n\r\n"
        b"--XyZ--\r\n"
    )
    fields = parse_multipart(body, 'multipart/form-data; boundary="XyZ"')
    assert fields == {"purpose": (None, b"batch"), "file": ("a b.jsonl", b"line1\r\nline2\r\n")}
    with pytest.raises(ValueError):
        parse_multipart(body, "application/json")
    with pytest.raises(ValueError):
        parse_multipart(body[:-9], "multipart/form-data; boundary=XyZ")


def test_validate_input_reports_line_numbers():
    data = jsonl([request_line(0)]) + b"\n" + jsonl([request_line(1, method="PUT")])
    lines, errors = validate_input(data, ENDPOINT, 10)
    assert [r["custom_id"] for r in lines] == ["tldr-0"]
    assert [(e["code"], e["line"], e["param"]) for e in errors] == [("invalid_method", 3, "method")]


def test_batch_config_and_cli():
    with pytest.raises(ValueError):
        BatchConfig(polls_per_status=0)
    with pytest.raises(ValueError):
        BatchConfig(line_errors={"a": 302})
    parser = argparse.ArgumentParser()
    add_cli_arguments(parser)
    args = parser.parse_args(
        ["--batch-polls", "3", "--batch-expire-after", "5", "--batch-line-error", "x=y=500"]
    )
    config = config_from_args(args)
    assert config.polls_per_status == 3 and config.expire_after_lines == 5
    assert config.line_errors == {"x=y": 500} and config.shuffle
