"""The README and the guides in docs/ (issue 27): the README fits a newcomer (at most 20 KB, the
two set-up commands on the first screen of an 80-column terminal), docs/BENCHMARKS.md is one page
(at most 25 KB), and every relative link of README.md and docs/*.md leads to a file that exists
and, with a #fragment, to a heading of it.

Each check is a function of the text, and each is also shown failing on a document made to break
it, so that none can pass by not looking."""

import re
import unicodedata

import pytest

from support import REPO

pytestmark = pytest.mark.no_c_binary

README = REPO / "README.md"
BENCHMARKS = REPO / "docs" / "BENCHMARKS.md"
README_MAX_BYTES = 20_000
BENCHMARKS_MAX_BYTES = 25_000
SCREEN_ROWS, SCREEN_COLUMNS = 24, 80
SET_UP_COMMANDS = ("make demo", "make test")
DOCUMENTS = [README, *sorted((REPO / "docs").glob("*.md"))]

# [text](target) outside code; a target with no scheme is a path relative to the document.
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")


def first_screen(text, rows=SCREEN_ROWS, columns=SCREEN_COLUMNS):
    """The document's lines that show on the first screen of a terminal of that size, a long line
    wrapping onto the rows below it."""
    shown, used = [], 0
    for line in text.splitlines():
        height = max(1, -(-len(line) // columns))
        if used + height > rows:
            break
        shown.append(line)
        used += height
    return shown


def missing_set_up_commands(text):
    """The set-up commands that are not, as an indented command line, on the first screen."""
    screen = first_screen(text)
    return [command for command in SET_UP_COMMANDS
            if not any(re.match(rf"^ {{4}}{re.escape(command)}(\s|$)", line) for line in screen)]


def anchor(heading):
    """The fragment GitHub gives a heading: its text without markup, lower-cased, punctuation but
    '-' and '_' dropped, spaces made '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    text = "".join(c for c in text.strip().lower()
                   if c in " -_" or unicodedata.category(c)[0] in "LN")
    return text.replace(" ", "-")


def anchors(text):
    """Every heading's fragment; a repeated one gets -1, -2 ... as GitHub numbers them."""
    seen, found = {}, set()
    for heading in re.findall(r"^#{1,6} (.+?)\s*$", FENCE.sub("", text), re.M):
        base = anchor(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def broken_links(path, text=None):
    """Each relative link of the markdown file at path (text: its content, if not the file's)
    that leads to no file, or to no heading of its target."""
    text = path.read_text() if text is None else text
    prose = CODE_SPAN.sub("", FENCE.sub("", text))
    broken = []
    for match in LINK.finditer(prose):
        target = match.group(1) or match.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue  # https:, mailto:
        file_part, _, fragment = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{path.name}: {target}: no such file")
        elif fragment and linked.suffix == ".md":
            heads = anchors(text if linked == path else linked.read_text())
            if fragment not in heads:
                broken.append(f"{path.name}: {target}: no such heading")
    return broken


def test_the_readme_is_at_most_20_kb():
    size = len(README.read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes"


def test_the_benchmarks_page_is_at_most_25_kb():
    size = len(BENCHMARKS.read_bytes())
    assert size <= BENCHMARKS_MAX_BYTES, f"docs/BENCHMARKS.md is {size} bytes"


def test_the_readme_s_first_screen_holds_make_demo_and_make_test():
    assert missing_set_up_commands(README.read_text()) == []


def test_a_command_below_the_first_screen_is_missing():
    """A long line wraps: 23 rows of prose above the commands push them off the screen."""
    text = README.read_text()
    pushed = "x" * (SCREEN_COLUMNS * SCREEN_ROWS) + "\n" + text
    assert missing_set_up_commands(pushed) == list(SET_UP_COMMANDS)
    assert len(first_screen("y" * (SCREEN_COLUMNS + 1) + "\nz\n")) == 2
    assert len(first_screen("y\n" * 30)) == SCREEN_ROWS


def test_every_guide_the_readme_lists_is_a_file_of_docs():
    linked = set(re.findall(r"\]\((docs/[^)#]+)", README.read_text()))
    assert len(linked) >= 8, linked
    assert {p for p in linked if not (REPO / p).is_file()} == set()
    unlisted = {f"docs/{p.name}" for p in DOCUMENTS[1:]} - linked
    assert unlisted == set(), f"guides the README does not link to: {sorted(unlisted)}"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_every_relative_link_leads_to_a_file_and_a_heading(document):
    assert broken_links(document) == []


def test_a_broken_link_or_fragment_is_found():
    text = README.read_text() + ("\n[a](docs/no-such-guide.md) [b](docs/http.md#no-such-heading)"
                                 " [c](#try-it) `[d](not/checked.md)`\n")
    assert broken_links(README, text) == [
        "README.md: docs/no-such-guide.md: no such file",
        "README.md: docs/http.md#no-such-heading: no such heading"]


def test_anchors_are_github_s():
    assert anchor("Downloads: `?download`") == "downloads-download"
    assert anchor("CORS: web players on another origin") == "cors-web-players-on-another-origin"
    assert anchor("Installing: the package or make install") == \
        "installing-the-package-or-make-install"
    assert anchors("# A\n## A\n```\n# not a heading\n```\n") == {"a", "a-1"}
