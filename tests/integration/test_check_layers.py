"""tests/check_layers.py, the `make test` stage that keeps server/'s layers in order: run on small
trees written here, it passes the good ones and fails each bad one, naming the files and lines."""

import subprocess
import sys

import pytest

from support import REPO

# tests/check_layers.py is Python: nothing here runs musicd, so nothing differs under ASan.
pytestmark = pytest.mark.no_c_binary

CHECKER = REPO / "tests" / "check_layers.py"


def write_tree(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def check(root):
    result = subprocess.run([sys.executable, str(CHECKER), str(root)], capture_output=True,
                            text=True, timeout=30)
    assert result.stderr == "", result.stderr
    return result.returncode, result.stdout, result.stdout.splitlines()[-1]


LAYERED = {
    # a pure module, a resource using it, the wire, a handler on top, main; each includes its
    # own header.
    "http/range.h": "#include <stdint.h>\n",
    "http/range.c": '#include "http/range.h"\n#include <string.h>\n',
    "media/media.h": '#include "http/range.h"\n',
    "media/media.c": '#include "media/media.h"\n#include "http/range.h"\n',
    "wire/exchange.h": "#include <event2/http.h>\n",
    "wire/exchange.c": '#include "wire/exchange.h"\n#include <event2/http_struct.h>\n',
    "respond/track.h": '#include "wire/exchange.h"\n',
    "respond/track.c": '#include "respond/track.h"\n#include "media/media.h"\n',
    "base/clock.c": "#include <time.h>\nvoid f(void) { clock_gettime(CLOCK_MONOTONIC, 0); }\n",
    "ops/main.c": '#include "respond/track.h"\n#include "missing_elsewhere.h"\n',
}
CHECKS = 6


def test_a_layered_tree_passes(tmp_path):
    status, out, last = check(write_tree(tmp_path / "server", LAYERED))
    assert status == 0, out
    assert last == f"layers: {CHECKS} passed, 0 failed"
    assert "acyclic (6 modules)" in out


def test_an_include_up_a_layer_fails_naming_the_line(tmp_path):
    files = dict(LAYERED)
    files["http/range.c"] = '#include "http/range.h"\n\n#include "media/media.h"\n'
    status, out, last = check(write_tree(tmp_path / "server", files))
    assert status == 1, out
    assert 'FAIL server/http/range.c:3: #include "media/media.h" goes up (http 1 -> media 3)' in out
    # It is a cycle too: media includes range.
    assert last == f"layers: {CHECKS - 2} passed, 2 failed"


def test_an_include_sideways_between_sibling_layers_fails(tmp_path):
    files = dict(LAYERED)
    files["wire/exchange.h"] = '#include <event2/http.h>\n#include "media/media.h"\n'
    status, out, last = check(write_tree(tmp_path / "server", files))
    assert status == 1, out
    assert last == f"layers: {CHECKS - 1} passed, 1 failed"
    assert ('FAIL server/wire/exchange.h:2: #include "media/media.h" goes sideways '
            '(wire 3 -> media 3)') in out


def test_an_include_without_its_folder_fails(tmp_path):
    files = dict(LAYERED)
    files["respond/track.c"] = '#include "respond/track.h"\n#include "media.h"\n'
    status, out, last = check(write_tree(tmp_path / "server", files))
    assert status == 1, out
    assert last == f"layers: {CHECKS - 1} passed, 1 failed"
    assert ('FAIL server/respond/track.c:2: #include "media.h" names no folder '
            '(it is media/media.h)') in out


@pytest.mark.parametrize("name", ["track.c", "extra/track.c", "respond/deep/track.c"])
def test_a_file_outside_the_layer_folders_fails(tmp_path, name):
    files = dict(LAYERED)
    files[name] = "\n"
    status, out, last = check(write_tree(tmp_path / "server", files))
    assert status == 1, out
    assert f"FAIL server/{name} is not in a layer folder" in out
    assert last == f"layers: {CHECKS - 1} passed, 1 failed"


def test_a_cycle_inside_a_folder_fails_naming_its_modules_and_lines(tmp_path):
    files = dict(LAYERED)
    files["respond/answer.h"] = '#include "respond/track.h"\n'
    files["respond/track.h"] = '#include "wire/exchange.h"\n#include "respond/answer.h"\n'
    status, out, last = check(write_tree(tmp_path / "server", files))
    assert status == 1, out
    assert last == f"layers: {CHECKS - 1} passed, 1 failed"
    assert "FAIL include cycle: 2 modules reach each other" in out
    assert "respond/answer, respond/track" in out
    assert "one cycle: respond/answer -> respond/track -> respond/answer" in out
    assert 'server/respond/answer.h:1: #include "respond/track.h"' in out
    assert 'server/respond/track.h:2: #include "respond/answer.h"' in out


def test_every_separate_cycle_is_reported(tmp_path):
    files = dict(LAYERED)
    files["http/range.h"] = '#include "http/cond.h"\n'
    files["http/cond.h"] = '#include "http/range.h"\n'
    files["ops/worker.h"] = '#include "ops/main.h"\n'
    files["ops/main.h"] = '#include "ops/worker.h"\n'
    status, out, last = check(write_tree(tmp_path / "server", files))
    assert status == 1, out
    assert out.count("FAIL include cycle") == 2, out
    assert "http/cond, http/range" in out and "ops/main, ops/worker" in out


def test_a_module_including_its_own_header_is_no_cycle(tmp_path):
    status, out, _ = check(write_tree(tmp_path / "server", {
        "base/log.h": '#include "base/log.h"\n',
        "base/log.c": '#include "base/log.h"\n# include "base/log.h"\n'}))
    assert status == 0, out


@pytest.mark.parametrize("name", ["respond/response.c", "wire/exchange.h", "wire/linger.c"])
def test_http_struct_outside_its_owner_fails_naming_the_file(tmp_path, name):
    files = dict(LAYERED)
    files[name] = "\n".join(["/* private */", "#include <event2/http_struct.h>", ""])
    status, out, last = check(write_tree(tmp_path / "server", files))
    assert status == 1, out
    assert last == f"layers: {CHECKS - 1} passed, 1 failed"
    assert f"    server/{name}:2" in out
    assert "FAIL event2/http_struct.h" in out


def test_the_monotonic_clock_read_outside_clock_c_fails(tmp_path):
    files = dict(LAYERED)
    files["ops/main.c"] += "long t(void) { struct timespec n; clock_gettime(CLOCK_MONOTONIC, &n); }\n"
    files["wire/linger.c"] = "/* clock_gettime(CLOCK_MONOTONIC, &n) in a comment is no read */\n"
    status, out, last = check(write_tree(tmp_path / "server", files))
    assert status == 1, out
    assert last == f"layers: {CHECKS - 1} passed, 1 failed"
    assert "FAIL server/ops/main.c reads CLOCK_MONOTONIC itself" in out
    assert "linger.c" not in out


def test_a_directory_without_modules_is_an_error(tmp_path):
    status, out, _ = check(write_tree(tmp_path / "empty", {"README.md": "nothing\n"}))
    assert status == 2, out
    assert "no .c or .h files" in out


def test_the_real_tree_passes():
    status, out, last = check(REPO / "server")
    assert status == 0, out
    assert last == f"layers: {CHECKS} passed, 0 failed"
