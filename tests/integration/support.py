"""Small helpers shared by the integration harness: paths, timeouts, ports, bounded waits."""

import os
import pathlib
import socket
import time

REPO = pathlib.Path(__file__).resolve().parents[2]

# MUSICD_SANITIZED=1: the binary under test is an ASan/UBSan build, several times slower.
SANITIZED = os.environ.get("MUSICD_SANITIZED", "") not in ("", "0")
TIMEOUT_SCALE = 4.0 if SANITIZED else 1.0

SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")

SANITIZER_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:halt_on_error=1:abort_on_error=0",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
}


def scaled(seconds):
    """A timeout, stretched when running against a sanitized build."""
    return seconds * TIMEOUT_SCALE


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate, timeout, interval=0.05, message="condition"):
    """Poll predicate() until it returns a truthy value (returned) or timeout seconds pass
    (AssertionError naming `message`, with the last value seen)."""
    deadline = time.monotonic() + timeout
    value = None
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.1f}s waiting for {message} "
                                 f"(last value: {value!r})")
        time.sleep(interval)


def port_accepts(port, host="127.0.0.1"):
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def sanitizer_errors(text):
    """The sanitizer error markers found in a process's stderr."""
    return [m for m in SANITIZER_MARKERS if m in text]


def read_text(path):
    try:
        return pathlib.Path(path).read_text(errors="replace")
    except FileNotFoundError:
        return ""
