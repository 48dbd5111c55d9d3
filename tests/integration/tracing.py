"""strace attached to a running musicd for the span of a block: which system calls moved how
many bytes (a body by sendfile, or through user space). Skips the test where ptrace is not
permitted or strace is missing."""

import contextlib
import re
import shutil
import signal
import subprocess
import time

import pytest

from support import scaled, wait_until

# "1234  sendfile(9, 11, [0] => [65536], 4001378) = 65536", or split by strace -f into
# "... <unfinished ...>" and "1234  <... sendfile resumed> => [65536]) = 65536"
SYSCALL_RESULT = re.compile(r"^\d+\s+(?:(\w+)\(|<\.\.\. (\w+) resumed>).*\)\s+= (-?\d+)")
WRITE_CALLS = ("write", "writev", "pwrite64", "pwritev", "send", "sendto", "sendmsg")


def syscall_bytes(strace_text):
    """{syscall name: [positive results]} from strace -f output."""
    calls = {}
    for line in strace_text.splitlines():
        m = SYSCALL_RESULT.match(line)
        if m and int(m.group(3)) > 0:
            calls.setdefault(m.group(1) or m.group(2), []).append(int(m.group(3)))
    return calls


@contextlib.contextmanager
def traced(pid, directory, calls=("sendfile",) + WRITE_CALLS):
    """strace -f on pid while the block runs; yields a list that holds, after the block,
    the trace's text (strace detaches first: LeakSanitizer cannot run in a traced process)."""
    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    out, err = directory / "strace.out", directory / "strace.err"
    with open(err, "wb") as errf:
        strace = subprocess.Popen(["strace", "-f", "-e", "trace=" + ",".join(calls),
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
