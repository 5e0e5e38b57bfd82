"""NdjsonSplitter: newline-delimited framing for stdio, with a size limit."""

from __future__ import annotations

from types import ModuleType

import pytest

from mcp_lite.errors import MessageTooLarge


def too_large(max_size: int, head: bytes, response_id: int | str | None = None) -> MessageTooLarge:
    return MessageTooLarge(
        f"message larger than {max_size} bytes", max_size, head, response_id, True
    )


def test_messages_in_one_chunk(speedups: ModuleType) -> None:
    s = speedups.NdjsonSplitter()
    assert s.feed(b'{"a":1}\n{"b":2}\n') == [b'{"a":1}', b'{"b":2}']
    assert s.buffered == 0
    assert s.feed(b"") == []


def test_message_split_at_every_byte(speedups: ModuleType) -> None:
    stream = b'{"jsonrpc":"2.0","id":1}\r\n\n  \n{"x":"\xc3\xa9"}\n{"tail":1}'
    for cut in range(len(stream) + 1):
        s = speedups.NdjsonSplitter()
        got = s.feed(stream[:cut]) + s.feed(stream[cut:]) + s.flush()
        assert got == [b'{"jsonrpc":"2.0","id":1}', b'{"x":"\xc3\xa9"}', b'{"tail":1}'], cut


def test_byte_by_byte(speedups: ModuleType) -> None:
    s = speedups.NdjsonSplitter()
    out = []
    for b in b"ab\ncd\r\n":
        out += s.feed(bytes([b]))
    assert out == [b"ab", b"cd"]


def test_crlf_only_one_cr_is_stripped(speedups: ModuleType) -> None:
    s = speedups.NdjsonSplitter()
    assert s.feed(b"a\r\r\nb\rc\n") == [b"a\r", b"b\rc"]


def test_blank_and_whitespace_lines_are_skipped(speedups: ModuleType) -> None:
    s = speedups.NdjsonSplitter()
    assert s.feed(b"\n\r\n \t \n\x0b\x0c\r\n x \n") == [b" x "]


def test_buffered_and_flush(speedups: ModuleType) -> None:
    s = speedups.NdjsonSplitter()
    assert s.feed(b'{"a":1}\n{"par') == [b'{"a":1}']
    assert s.buffered == len(b'{"par')
    assert s.feed(b"tial") == []
    assert s.buffered == len(b'{"partial')
    assert s.flush() == [b'{"partial']
    assert s.buffered == 0
    assert s.flush() == []
    assert s.feed(b"x\n") == [b"x"]  # usable after flush


def test_flush_strips_cr_and_skips_blank(speedups: ModuleType) -> None:
    s = speedups.NdjsonSplitter()
    s.feed(b"abc\r")
    assert s.flush() == [b"abc"]
    s.feed(b"  \r")
    assert s.flush() == []


def test_accepts_bytearray_and_memoryview(speedups: ModuleType) -> None:
    s = speedups.NdjsonSplitter()
    assert s.feed(bytearray(b"a\n")) == [b"a"]
    assert s.feed(memoryview(b"b\nc")) == [b"b"]
    assert s.flush() == [b"c"]


@pytest.mark.parametrize("bad", ["text\n", None, 5, [1]])
def test_rejects_non_bytes(speedups: ModuleType, bad: object) -> None:
    with pytest.raises(TypeError, match="data must be bytes"):
        speedups.NdjsonSplitter().feed(bad)


@pytest.mark.parametrize(("size", "exc"), [(0, ValueError), (-1, ValueError), (2.5, TypeError)])
def test_bad_max_size(speedups: ModuleType, size: object, exc: type[Exception]) -> None:
    with pytest.raises(exc):
        speedups.NdjsonSplitter(size)


def test_max_size_property_and_default(speedups: ModuleType) -> None:
    assert speedups.NdjsonSplitter().max_size == 64 * 1024 * 1024
    assert speedups.NdjsonSplitter(10).max_size == 10


def test_oversized_complete_line_in_position(speedups: ModuleType) -> None:
    s = speedups.NdjsonSplitter(5)
    got = s.feed(b"12345\n123456\nok\n12345\r\n")
    assert got == [b"12345", too_large(5, b"123456"), b"ok", b"12345"]


def test_oversized_head_is_256_bytes(speedups: ModuleType) -> None:
    s = speedups.NdjsonSplitter(300)
    line = bytes(range(256)).replace(b"\n", b"x") * 2
    got = s.feed(line + b"\n")
    assert got == [too_large(300, line[:256])]


def test_oversized_partial_line_is_dropped_as_it_arrives_and_reported_at_its_end(
    speedups: ModuleType,
) -> None:
    s = speedups.NdjsonSplitter(1000)
    assert s.feed(b'{"ok":1}\n' + b"x" * 600) == [b'{"ok":1}']
    assert s.feed(b"y" * 600) == []
    assert s.buffered == 0
    for _ in range(100):  # the rest of the line is dropped, never buffered
        assert s.feed(b"z" * 10_000) == []
        assert s.buffered == 0
    got = s.feed(b'zzz\n{"next":2}\n')
    assert got == [too_large(1000, (b"x" * 600 + b"y" * 600)[:256]), b'{"next":2}']
    assert s.flush() == []


def test_buffer_never_exceeds_max_size_plus_one(speedups: ModuleType) -> None:
    s = speedups.NdjsonSplitter(10)
    assert s.feed(b"0123456789") == []
    assert s.buffered == 10
    assert s.feed(b"\r") == []  # 11 bytes, but the CR may be the line end's
    assert s.buffered == 11
    assert s.feed(b"\n") == [b"0123456789"]
    s.feed(b"0123456789")
    assert s.feed(b"a") == []
    assert s.buffered == 0
    assert s.feed(b"\n") == [too_large(10, b"0123456789a")]


def test_cr_then_more_bytes_past_limit(speedups: ModuleType) -> None:
    s = speedups.NdjsonSplitter(10)
    s.feed(b"0123456789\r")
    assert s.feed(b"x") == []
    assert s.feed(b"\nok\n") == [too_large(10, b"0123456789\rx"), b"ok"]


def test_flush_after_oversize_resets(speedups: ModuleType) -> None:
    s = speedups.NdjsonSplitter(4)
    assert s.feed(b"123456") == []
    assert s.flush() == [too_large(4, b"123456")]  # cut off by the end of the stream
    assert s.flush() == []
    assert s.feed(b"ab\n") == [b"ab"]  # not discarding any more


def test_big_message_in_64k_chunks(speedups: ModuleType) -> None:
    message = b'{"data":"' + b"x" * (20 * 1024 * 1024) + b'"}'
    stream = b'{"first":1}\n' + message + b"\n" + b'{"last":1}\n'
    s = speedups.NdjsonSplitter()
    got = []
    for i in range(0, len(stream), 65536):
        got += s.feed(stream[i : i + 65536])
    assert len(got) == 3
    assert got[0] == b'{"first":1}' and got[2] == b'{"last":1}'
    assert got[1] == message


def test_many_messages_per_chunk(speedups: ModuleType) -> None:
    messages = [b'{"jsonrpc":"2.0","id":%d,"result":{}}' % i for i in range(2000)]
    stream = b"\n".join(messages) + b"\n"
    s = speedups.NdjsonSplitter()
    got = []
    for i in range(0, len(stream), 4096):
        got += s.feed(stream[i : i + 4096])
    assert got == messages


# --- attribution of oversized lines: the top-level response id only -----------------------

PAD = b"x" * 5000


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":7,"result":{"t":"%s"}}' % PAD, 7),
        (b'{"jsonrpc":"2.0","result":{"meta":{"id":99},"t":"%s"},"id":7}' % PAD, 7),  # id last
        (b'{"jsonrpc":"2.0","id":"a\\"b","error":{"message":"%s"}}' % PAD, 'a"b'),
        (
            b'{"jsonrpc":"2.0","method":"notifications/message","params":{"id":7,"d":"%s"}}' % PAD,
            None,
        ),
        (
            b'{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{"d":"%s"}}' % PAD,
            None,
        ),
        (b'{"jsonrpc":"2.0","params":{"d":"%s"},"id":7,"method":"x"}' % PAD, None),  # method last
        (b'[{"jsonrpc":"2.0","id":7,"result":{"t":"%s"}}]' % PAD, None),  # a batch
        (b'{"jsonrpc":"2.0","id":7.5,"result":{"t":"%s"}}' % PAD, None),
        (b'{"jsonrpc":"2.0","id":null,"error":{"m":"%s"}}' % PAD, None),
        (b'{"jsonrpc":"2.0","t":"%s","id":7' % PAD, None),  # never completed
        (b'{"d":%s"%s"%s,  "id" : -3 }' % (b"[" * 3000, PAD, b"]" * 3000), -3),  # deep
        (b'{"id":8,"result":{"t":"\xff\xfe%s"}}' % PAD, 8),  # invalid UTF-8
        (b'{"k\\"id":1,"id":2,"result":"%s"}' % PAD, 2),  # an escaped quote in a key
    ],
)
def test_oversized_line_names_only_its_own_top_level_response_id(
    speedups: ModuleType, line: bytes, expected: object
) -> None:
    # Fed in small pieces, so that every token can be split across chunks.
    s = speedups.NdjsonSplitter(1000)
    got: list[object] = []
    for i in range(0, len(line), 7):
        got += s.feed(line[i : i + 7])
        assert s.buffered <= 1001
    got += s.feed(b"\n")
    assert len(got) == 1 and isinstance(got[0], MessageTooLarge)
    assert got[0].response_id == expected and got[0].scanned
    # The same line in one chunk, and the scanner on its own, agree.
    whole = speedups.NdjsonSplitter(1000).feed(line + b"\n")
    assert whole[0].response_id == expected
    assert speedups.scan_response_id(line) == expected


def test_scanner_likely_id_from_a_head(speedups: ModuleType) -> None:
    scanner = speedups.ResponseIdScanner()
    scanner.feed(b'{"jsonrpc":"2.0","id":4,"result":{"content":[')
    assert scanner.response_id is None  # not complete
    assert scanner.likely_response_id == 4  # a response by its keys so far
    scanner = speedups.ResponseIdScanner()
    scanner.feed(b'{"jsonrpc":"2.0","id":4,"params":{')
    assert scanner.likely_response_id is None  # no result/error seen: maybe a request
