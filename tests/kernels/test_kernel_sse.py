"""SseParser / SseEvent: WHATWG text/event-stream parsing, chunk by chunk."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from mcp_lite.errors import MessageTooLarge


def ev(e: Any) -> Any:
    """An event as a plain tuple (MessageTooLarge items pass through)."""
    if isinstance(e, MessageTooLarge):
        return e
    return (e.event, e.data, e.id)


def parse(speedups: ModuleType, *chunks: bytes, max_size: int | None = None) -> list[Any]:
    p = speedups.SseParser() if max_size is None else speedups.SseParser(max_size)
    out: list[Any] = []
    for chunk in chunks:
        out += [ev(e) for e in p.feed(chunk)]
    return out


def test_simple_event(speedups: ModuleType) -> None:
    assert parse(speedups, b"data: hello\n\n") == [("message", "hello", "")]


def test_event_type_multiline_data_and_id(speedups: ModuleType) -> None:
    stream = b"event: update\ndata: a\ndata:b\ndata:  c\nid: 42\n\n"
    assert parse(speedups, stream) == [("update", "a\nb\n c", "42")]


def test_line_ends_cr_lf_crlf(speedups: ModuleType) -> None:
    for nl in (b"\n", b"\r", b"\r\n"):
        stream = b"data: x" + nl + b"data: y" + nl + nl + b"data: z" + nl + nl
        assert parse(speedups, stream) == [("message", "x\ny", ""), ("message", "z", "")]


def test_cr_and_lf_split_across_chunks_is_one_line_end(speedups: ModuleType) -> None:
    assert parse(speedups, b"data: x\r", b"\ndata: y\r", b"\n\r", b"\n") == [
        ("message", "x\ny", "")
    ]
    # CR at a chunk end followed by CR is two line ends: a blank line dispatches
    assert parse(speedups, b"data: x\r", b"\r") == [("message", "x", "")]
    # CR at a chunk end, then an empty chunk, then the LF
    assert parse(speedups, b"data: x\r", b"", b"\n", b"\n") == [("message", "x", "")]


def test_comments_unknown_fields_and_colonless_lines(speedups: ModuleType) -> None:
    stream = b": keep-alive\n:\nfoo: bar\ndata\nDATA: no\n\n"
    assert parse(speedups, stream) == [("message", "", "")]


def test_no_data_no_dispatch_but_id_and_retry_update(speedups: ModuleType) -> None:
    p = speedups.SseParser()
    assert p.last_event_id == "" and p.retry is None
    assert p.feed(b"event: ping\nid: 7\nretry: 1500\n") == []
    assert p.retry == 1500  # set as soon as its line is complete
    assert p.feed(b"\n") == []  # no data: nothing dispatched ...
    assert p.last_event_id == "7"  # ... but the last event ID is updated
    assert [ev(e) for e in p.feed(b"data: x\n\n")] == [("message", "x", "7")]  # id persists


def test_id_only_counts_at_the_blank_line(speedups: ModuleType) -> None:
    p = speedups.SseParser()
    p.feed(b"id: 1\ndata: a\n\nid: 2\ndata: cut off by the end of the stream\n")
    assert p.last_event_id == "1"


def test_id_with_nul_is_ignored_and_empty_id_resets(speedups: ModuleType) -> None:
    p = speedups.SseParser()
    out = p.feed(b"id: 5\ndata: a\n\nid: 6\x007\ndata: b\n\nid\ndata: c\n\n")
    assert [ev(e) for e in out] == [
        ("message", "a", "5"),
        ("message", "b", "5"),
        ("message", "c", ""),
    ]
    assert p.last_event_id == ""


@pytest.mark.parametrize("value", [b"12a", b" 12", b"-1", b"1.5", b"", b"\xd9\xa3"])
def test_retry_needs_ascii_digits(speedups: ModuleType, value: bytes) -> None:
    p = speedups.SseParser()
    p.feed(b"retry: 10\nretry: " + value + b"\n")
    assert p.retry == 10


def test_event_type_resets_after_dispatch(speedups: ModuleType) -> None:
    stream = b"event: a\ndata: 1\n\ndata: 2\n\nevent:\ndata: 3\n\n"
    assert parse(speedups, stream) == [("a", "1", ""), ("message", "2", ""), ("message", "3", "")]


def test_event_without_blank_line_is_not_dispatched(speedups: ModuleType) -> None:
    assert parse(speedups, b"data: never finished\n") == []


def test_bom_is_stripped_once(speedups: ModuleType) -> None:
    bom = b"\xef\xbb\xbf"
    assert parse(speedups, bom + b"data: x\n\n") == [("message", "x", "")]
    # a second BOM is part of the field name: an unknown field
    assert parse(speedups, bom + bom + b"data: x\n\n") == []
    for cut in range(1, 4):
        stream = bom + b"data: y\n\n"
        assert parse(speedups, stream[:cut], stream[cut:]) == [("message", "y", "")]
    assert parse(speedups, b"\xef", b"\xbb", b"\xbf", b"data: z\n\n") == [("message", "z", "")]


def test_no_bom_short_first_chunks(speedups: ModuleType) -> None:
    assert parse(speedups, b"d", b"a", b"ta: x\n\n") == [("message", "x", "")]
    assert parse(speedups, b"\xef", b"data: x\n\n") == []  # "\ufffddata" is an unknown field


def test_invalid_utf8_becomes_replacement_char(speedups: ModuleType) -> None:
    assert parse(speedups, b"data: a\xffb\xe2\x82\n\n") == [("message", "a\ufffdb\ufffd", "")]


def test_split_at_every_byte(speedups: ModuleType) -> None:
    stream = (
        b'\xef\xbb\xbf: hi\r\nevent: message\r\ndata: {"a":"\xc3\xa9"}\r\nid: 1\r\n\r\n'
        b"data: 1\rdata: 2\r\rretry: 30\n:c\ndata:3\n\n"
    )
    expected = parse(speedups, stream)
    assert expected == [
        ("message", '{"a":"é"}', "1"),
        ("message", "1\n2", "1"),
        ("message", "3", "1"),
    ]
    for cut in range(len(stream) + 1):
        assert parse(speedups, stream[:cut], stream[cut:]) == expected, cut
    assert parse(speedups, *[bytes([b]) for b in stream]) == expected


def test_oversized_event_is_reported_dropped_and_parsing_goes_on(speedups: ModuleType) -> None:
    p = speedups.SseParser(10)
    out = p.feed(b"data: 12345\ndata: 67890\nid: 3\ndata: more\n\ndata: ok\n\n")
    assert [ev(e) for e in out] == [
        MessageTooLarge("message larger than 10 bytes", 10, b"12345\n67890", None, True),
        ("message", "ok", "3"),
    ]


def test_data_of_exactly_max_size_is_accepted(speedups: ModuleType) -> None:
    assert parse(speedups, b"data: 1234\ndata: 56789\n\n", max_size=10) == [
        ("message", "1234\n56789", "")
    ]


def test_oversized_partial_line_is_bounded(speedups: ModuleType) -> None:
    p = speedups.SseParser(100)
    assert p.feed(b"data: " + b"x" * 100) == []
    assert p.feed(b"y" * 50) == []  # dropped as it arrives, reported at the event's end
    for _ in range(50):
        assert p.feed(b"z" * 10_000) == []
    assert p.buffered == 0
    assert [ev(e) for e in p.feed(b"z\n\ndata: next\n\n")] == [
        MessageTooLarge("message larger than 100 bytes", 100, b"x" * 100 + b"y" * 50, None, True),
        ("message", "next", ""),
    ]


def test_big_event_in_chunks(speedups: ModuleType) -> None:
    data = b"x" * (5 * 1024 * 1024)
    stream = b"id: 9\ndata: " + data + b"\n\n"
    p = speedups.SseParser()
    out = []
    for i in range(0, len(stream), 65536):
        out += p.feed(stream[i : i + 65536])
    assert [ev(e) for e in out] == [("message", data.decode(), "9")]


def test_rejects_non_bytes_and_bad_size(speedups: ModuleType) -> None:
    with pytest.raises(TypeError, match="data must be bytes"):
        speedups.SseParser().feed("data: x\n\n")
    with pytest.raises(ValueError):
        speedups.SseParser(0)
    assert speedups.SseParser().max_size == 64 * 1024 * 1024


def test_sse_event_value_object(speedups: ModuleType) -> None:
    e = speedups.SseEvent(data="x")
    assert (e.event, e.data, e.id) == ("message", "x", "")
    assert e == speedups.SseEvent("message", "x", "")
    assert e != speedups.SseEvent("message", "x", "1")
    assert e != ("message", "x", "")
    assert hash(e) == hash(speedups.SseEvent("message", "x", ""))
    assert repr(e) == "SseEvent(event='message', data='x', id='')"
    with pytest.raises(AttributeError):
        e.data = "y"


def test_over_long_event_or_id_line_drops_the_event(speedups: ModuleType) -> None:
    p = speedups.SseParser(10)
    out = p.feed(
        b"event: " + b"e" * 20 + b"\ndata: x\n\nid: " + b"i" * 20 + b"\ndata: y\n\ndata: z\n\n"
    )
    assert [ev(e) for e in out] == [
        MessageTooLarge("message larger than 10 bytes", 10, b"event: " + b"e" * 20, None, True),
        MessageTooLarge("message larger than 10 bytes", 10, b"id: " + b"i" * 20, None, True),
        ("message", "z", ""),
    ]


def test_over_long_comments_and_unknown_fields_are_ignored(speedups: ModuleType) -> None:
    p = speedups.SseParser(10)
    assert p.feed(b": " + b"c" * 100) == []  # a huge partial comment: skipped, not buffered
    assert p.buffered == 0
    out = p.feed(b"c\nfoo: " + b"f" * 50 + b"\nretry: " + b"1" * 30 + b"\ndata: ok\n\n")
    assert [ev(e) for e in out] == [("message", "ok", "")]
    assert p.retry is None


PAD = b"x" * 3000


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        # id last, after an "id" inside the result; split over data lines and chunk edges
        (
            b'data: {"jsonrpc":"2.0","result":{"meta":{"id":99},\ndata: "t":"%s"},\ndata: "id":7}\n\n'
            % PAD,
            7,
        ),
        (
            b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"id":7,"d":"%s"}}\n\n'
            % PAD,
            None,
        ),
        (
            b'data: {"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{"d":"%s"}}\n\n'
            % PAD,
            None,
        ),
        (b'id: 5\ndata: {"jsonrpc":"2.0","id":"r-1","error":{"message":"%s"}}\n\n' % PAD, "r-1"),
    ],
)
def test_oversized_event_names_only_its_own_top_level_response_id(
    speedups: ModuleType, event: bytes, expected: object
) -> None:
    for step in (len(event), 5, 997):
        p = speedups.SseParser(1000)
        got: list[object] = []
        for i in range(0, len(event), step):
            got += p.feed(event[i : i + step])
            assert p.buffered <= 2 * 1000 + 8
        assert len(got) == 1 and isinstance(got[0], MessageTooLarge), got
        assert got[0].response_id == expected and got[0].scanned
