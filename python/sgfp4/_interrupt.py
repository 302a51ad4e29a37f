# SPDX-License-Identifier: MIT
"""Ctrl-C during a long library call (the encodes, whole-model jobs).

The library runs with the GIL released, so Python runs a signal's handler only at the next
Python code, which during the call is one of the binding's callbacks. The default SIGINT
handler would raise KeyboardInterrupt there, possibly at the callback's first instruction,
before any `try`, where ctypes can only print the exception and drop it. So while such a
call runs on the main thread (where Python handles signals) with the default handler in
place, a handler that only records the signal takes its place; the library asks the
call's cancel hook about every 10 ms and stops; the call then raises KeyboardInterrupt,
after the binding has cleaned up (no output, no temporary file). A handler the program
installed itself is left alone.
"""

import signal
import threading

from . import _lib


class Interruptible:
    """Context manager around one cancellable library call: `hook` is the C cancel hook to
    put in its options; it also stops the call when `stop()` (if given) turns true (an
    exception a callback stored). Leaving the block raises KeyboardInterrupt if SIGINT
    arrived meanwhile, in place of whatever the call raised."""

    def __init__(self, stop=None):
        self.interrupted = False
        self._stop = stop
        self._previous = None
        self.hook = _lib.CANCEL_FN(self._cancel)

    def _cancel(self, _user):
        return 1 if self.interrupted or (self._stop is not None and self._stop()) else 0

    def _record(self, _signum, _frame):
        self.interrupted = True

    def __enter__(self):
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            self._previous = signal.signal(signal.SIGINT, self._record)
        return self

    def __exit__(self, *exc):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None
        if self.interrupted:
            raise KeyboardInterrupt
        return False
