"""tests/check_layers.py, the `make test` stage that keeps server/'s include graph acyclic and
evhttp's private structures inside exchange.c: run on small trees written here, it passes the
good ones and fails each bad one, naming the modules and the lines."""

import subprocess
import sys

import pytest

from support import REPO

CHECKER = REPO / "tests" / "check_layers.py"


def write_tree(root, files):
    root.mkdir(exist_ok=True)
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def check(root):
    result = subprocess.run([sys.executable, str(CHECKER), str(root)], capture_output=True,
                            text=True, timeout=30)
    assert result.stderr == "", result.stderr
    return result.returncode, result.stdout, result.stdout.splitlines()[-1]


LAYERED = {
    # a pure module, a resource using it, a handler on top; each includes its own header.
    "range.h": "#include <stdint.h>\n",
    "range.c": '#include "range.h"\n#include <string.h>\n',
    "media.h": '#include "range.h"\n',
    "media.c": '#include "media.h"\n#include "range.h"\n',
    "exchange.h": "#include <event2/http.h>\n",
    "exchange.c": '#include "exchange.h"\n#include <event2/http_struct.h>\n',
    "track.h": '#include "exchange.h"\n',
    "track.c": '#include "track.h"\n#include "media.h"\n',
    "main.c": '#include "track.h"\n#include "missing_elsewhere.h"\n',
}


def test_a_layered_tree_passes(tmp_path):
    status, out, last = check(write_tree(tmp_path / "server", LAYERED))
    assert status == 0, out
    assert last == "layers: 2 passed, 0 failed"
    assert "acyclic (5 modules)" in out


def test_a_cycle_through_headers_fails_naming_its_modules_and_lines(tmp_path):
    files = dict(LAYERED)
    files["media.h"] = '#include "range.h"\n#include "track.h"\n'  # media -> track -> media
    status, out, last = check(write_tree(tmp_path / "server", files))
    assert status == 1, out
    assert last == "layers: 1 passed, 1 failed"
    assert "FAIL include cycle: 2 modules reach each other" in out
    assert "media, track" in out
    assert "one cycle: media -> track -> media" in out
    assert 'server/media.h:2: #include "track.h"' in out
    assert 'server/track.c:2: #include "media.h"' in out


def test_a_cycle_through_source_files_fails(tmp_path):
    files = dict(LAYERED)
    files["range.c"] = '#include "range.h"\n\n#include "main.h"\n'
    files["main.h"] = "\n"
    status, out, _ = check(write_tree(tmp_path / "server", files))
    assert status == 1, out
    assert "4 modules reach each other" in out
    assert "main, media, range, track" in out
    assert 'server/range.c:3: #include "main.h"' in out


def test_every_separate_cycle_is_reported(tmp_path):
    files = dict(LAYERED)
    files["range.h"] = '#include "media.h"\n'
    files["exchange.h"] = '#include "track.h"\n'
    status, out, last = check(write_tree(tmp_path / "server", files))
    assert status == 1, out
    assert out.count("FAIL include cycle") == 2, out
    assert "exchange, track" in out and "media, range" in out
    assert last == "layers: 1 passed, 1 failed"


def test_a_module_including_its_own_header_is_no_cycle(tmp_path):
    status, out, _ = check(write_tree(tmp_path / "server", {
        "log.h": '#include "log.h"\n', "log.c": '#include "log.h"\n# include "log.h"\n'}))
    assert status == 0, out


@pytest.mark.parametrize("name", ["response.c", "exchange.h"])
def test_http_struct_outside_exchange_c_fails_naming_the_file(tmp_path, name):
    files = dict(LAYERED)
    files[name] = "\n".join(["/* private */", "#include <event2/http_struct.h>", ""])
    status, out, last = check(write_tree(tmp_path / "server", files))
    assert status == 1, out
    assert last == "layers: 1 passed, 1 failed"
    assert f"    server/{name}:2" in out
    assert "FAIL event2/http_struct.h" in out


def test_a_cycle_and_http_struct_outside_exchange_fail_both(tmp_path):
    files = dict(LAYERED)
    files["media.h"] = '#include "track.h"\n'
    files["track.c"] = '#include "media.h"\n#include "event2/http_struct.h"\n'
    status, out, last = check(write_tree(tmp_path / "server", files))
    assert status == 1, out
    assert last == "layers: 0 passed, 2 failed"
    assert "    server/track.c:2" in out


def test_a_directory_without_modules_is_an_error(tmp_path):
    status, out, _ = check(write_tree(tmp_path / "empty", {"README.md": "nothing\n"}))
    assert status == 2, out
    assert "no .c or .h files" in out
