"""strace attached to a running musicd for the span of a block: which system calls moved how
many bytes (a body by sendfile, or through user space). Skips the test where ptrace is not
permitted or strace is missing.

The trace names each descriptor's file (strace -y), so that a disk thread's read-ahead, a
sendfile to /dev/null that brings a window into the page cache, is told apart from a send to
a client: syscall_bytes counts it as "readahead", not "sendfile"."""

import contextlib
import re
import shutil
import signal
import subprocess
import time

import pytest

from support import scaled, wait_until

# "1234  sendfile(9<socket:[5]>, 11</m/a.mp3>, [0] => [65536], 4001378) = 65536", or split by
# strace -f into "1234  sendfile(9<...>, ... <unfinished ...>" and
# "1234  <... sendfile resumed> => [65536]) = 65536"
SYSCALL_RESULT = re.compile(r"^(\d+)\s+(?:(\w+)\(|<\.\.\. (\w+) resumed>).*\)\s+= (-?\d+)")
SYSCALL_START = re.compile(r"^(\d+)\s+(\w+)\((\d+)<([^>]*)>")
WRITE_CALLS = ("write", "writev", "pwrite64", "pwritev", "send", "sendto", "sendmsg")


def syscall_bytes(strace_text):
    """{syscall name: [positive results]} from strace -f -y output; a sendfile to /dev/null (the
    disk pool's read-ahead) is counted as "readahead"."""
    calls = {}
    first_file = {}  # pid -> the file of the first argument of its call under way
    for line in strace_text.splitlines():
        start = SYSCALL_START.match(line)
        if start:
            first_file[start.group(1)] = start.group(4)
        m = SYSCALL_RESULT.match(line)
        if m and int(m.group(4)) > 0:
            name = m.group(2) or m.group(3)
            if name == "sendfile" and first_file.get(m.group(1)) == "/dev/null":
                name = "readahead"
            calls.setdefault(name, []).append(int(m.group(4)))
    return calls


@contextlib.contextmanager
def traced(pid, directory, calls=("sendfile",) + WRITE_CALLS):
    """strace -f on pid while the block runs; yields a list that holds, after the block,
    the trace's text (strace detaches first: LeakSanitizer cannot run in a traced process)."""
    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    out, err = directory / "strace.out", directory / "strace.err"
    with open(err, "wb") as errf:
        strace = subprocess.Popen(["strace", "-f", "-y", "-e", "trace=" + ",".join(calls),
                                   "-p", str(pid), "-o", str(out)],
                                  stdout=subprocess.DEVNULL, stderr=errf)
    text = []
    try:
        def attached():
            message = err.read_text(errors="replace")
            if strace.poll() is not None:
                if "Operation not permitted" in message:
                    pytest.skip(f"ptrace is not permitted here: {message.strip()}")
                raise AssertionError(f"strace exited {strace.returncode}: {message}")
            return "attached" in message and out.exists()

        wait_until(attached, scaled(5), message="strace to attach")
        time.sleep(0.3)
        yield text
        time.sleep(0.3)
    finally:
        strace.send_signal(signal.SIGINT)
        try:
            strace.wait(scaled(10))
        except subprocess.TimeoutExpired:
            strace.kill()
            strace.wait(10)
    text.append(out.read_text(errors="replace"))
