"""``Hub.submit``: a tool call on a worker thread, returned as a ``Future`` whose ``cancel()``
reaches the server, with at most ``max_pending`` submitted calls outstanding (see
docs/explanation/inside-the-hub.md)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ...errors import ConnectionClosed, McpError

__all__ = ["Submitter"]


class Submitter:
    def __init__(self, max_workers: int = 8, max_pending: int = 1024) -> None:
        self._max_workers = max_workers
        self._slots = threading.BoundedSemaphore(max_pending)
        self._max_pending = max_pending
        self._pool: ThreadPoolExecutor | None = None
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, fn: Callable[[threading.Event], Any]) -> Future[Any]:
        """Run ``fn(cancel_event)`` on a worker; the future's ``cancel()`` sets the event."""
        if not self._slots.acquire(False):
            raise McpError(f"more than {self._max_pending} submitted tool calls are outstanding")
        try:
            pool = self._get_pool()
        except BaseException:
            self._slots.release()
            raise
        future: Future[Any] = Future()
        cancel = threading.Event()
        future.add_done_callback(lambda f: cancel.set() if f.cancelled() else None)

        def run() -> None:
            try:
                if future.done():  # cancelled before a worker was free
                    return
                try:
                    result = fn(cancel)
                except BaseException as exc:
                    if not future.done():
                        try:
                            future.set_exception(exc)
                        except Exception:  # cancelled meanwhile
                            pass
                    if not isinstance(exc, Exception):
                        raise
                else:
                    if not future.done():
                        try:
                            future.set_result(result)
                        except Exception:
                            pass
            finally:
                self._slots.release()

        try:
            pool.submit(run)
        except RuntimeError:  # shut down by a racing close()
            self._slots.release()
            raise ConnectionClosed("the Hub is closed") from None
        return future

    def _get_pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._closed:
                raise ConnectionClosed("the Hub is closed")
            if self._pid != os.getpid():  # a forked child: the parent's workers are not here
                self._pid, self._pool = os.getpid(), None
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    self._max_workers, thread_name_prefix="mcp-lite-hub-submit"
                )
            return self._pool

    def close(self) -> None:
        """Stop taking calls; queued ones are cancelled, running ones end with their
        connection (closed by the Hub right after)."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
