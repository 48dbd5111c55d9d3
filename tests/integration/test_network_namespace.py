"""musicd in a network namespace of its own, as in a container: what only shows there.

Found by scripts/tests/check-fresh-machine, whose `make test` runs in a fresh network namespace: the
lingering close duplicated a closing connection's socket, so with the epoll changelist the
socket's registration outlived the close under its old number, and the next connection given
that number was woken by the lingering socket's EPOLLOUT; libevent 2.1 reports the sendfile
EAGAIN that follows as 0 bytes, which bufferevent_writecb takes for EOF: a download ended
midway (30 of 180 here). netns_downloads.py is the client; it runs in `unshare --net`.
"""

import os
import shutil
import subprocess
import sys

import pytest

from support import scaled

HERE = os.path.dirname(os.path.abspath(__file__))


def test_closing_downloads_arrive_whole_in_a_fresh_network_namespace():
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("needs root, unshare(1) and ip(8) for a network namespace")
    command = ["unshare", "--net", "/bin/sh", "-c", 'ip link set lo up && exec "$@"', "sh",
               sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               os.path.join(HERE, "netns_downloads.py")]
    result = subprocess.run(command, cwd=HERE, capture_output=True, text=True,
                            timeout=scaled(300), env=dict(os.environ))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "1 passed" in result.stdout, result.stdout[-2000:]
