"""The README and every guide page read in one pass: short sentences, one idea each.

Each page's prose is split into sentences and each sentence's words are counted: the mean is at most
18 words and no sentence runs past 40. Code blocks, directive blocks (figures, includes), tables,
headings and link targets are left out; a list item counts as a sentence of its own (more, if it
holds several); an inline code span or a link is one word. ``python -m tests.docs.test_plain_sentences``
prints each page's mean and longest sentence, and the longest sentences of a page named after it.
"""
from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

import pytest

from tests.markdown_blocks import REPO

#: the README and the pages of its "start" and "guides" rows, the rendering guide and the home page
PAGES = ["README.md", *(f"docs/{name}.md" for name in [
    "index", "installation", "quickstart", "concepts", "backends", "async", "wrappers", "rendering", "atari",
    "agents", "multiagent", "planning", "ray", "reliability", "performance", "migrating", "troubleshooting"])]
MAX_MEAN = 18.0
MAX_WORDS = 40

FENCE = re.compile(r"^(```|~~~|:::)")
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
#: a sentence ends at . ! or ? (and a closing bracket or quote) before a space, unless an abbreviation
END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)(?<!\bvs)(?<!\bcf)([.!?][)\"']?)\s+(?=\S)")
LABEL = re.compile(r"\([\w-]+\)=")  # a MyST target: (main-guard)=
CODE_SPAN = re.compile(r"`[^`]*`")
LINK = re.compile(r"\{[\w:-]+\}`([^`<]*?)(?:\s*<[^>]*>)?`|!?\[([^\]]*)\]\([^)]*\)")


def units(markdown: str) -> list[str]:
    """The prose of ``markdown``: its paragraphs and list items, each joined into one line; code,
    directive blocks, tables, headings, HTML comments and MyST labels left out.

    Example:
        >>> units("# Title\\n\\nOne line\\nwraps.\\n\\n- an item\\n- another\\n\\n| a | b |\\n```py\\nx = 1\\n```\\n")
        ['One line wraps.', 'an item', 'another']
    """
    out: list[str] = []
    current: list[str] = []
    fence = ""

    def flush() -> None:
        if current:
            out.append(" ".join(current))
            current.clear()

    for raw in markdown.splitlines():
        line = raw.strip()
        if fence:
            if line.startswith(fence) and line.rstrip("`~:") == "":
                fence = ""
            continue
        match = FENCE.match(line)
        if match:
            flush()
            fence = line[:len(line) - len(line.lstrip(line[0]))]
            continue
        if not line or line.startswith(("#", "|", "<!--")) or LABEL.fullmatch(line):
            flush()
            continue
        if LIST_ITEM.match(raw):
            flush()
            line = LIST_ITEM.sub("", raw).strip()
        current.append(line)
    flush()
    return out


def sentences(markdown: str) -> list[str]:
    """The sentences of ``markdown``'s prose (see ``units``), inline code and links each made one word.

    Example:
        >>> sentences("A VecEnv steps `n` envs, e.g. eight. See [the guide](g.md); it is short!\\n\\n- one item")
        ['A VecEnv steps CODE envs, e.g. eight.', 'See the guide; it is short!', 'one item']
    """
    out = []
    for unit in units(markdown):
        text = LINK.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), unit)
        text = CODE_SPAN.sub("CODE", text)
        out += [s.strip() for s in END.sub(r"\1\n", text).split("\n") if s.strip()]
    return out


def words(sentence: str) -> int:
    """The words of ``sentence``: its space-separated tokens that hold a letter or a digit.

    Example:
        >>> words("Env i gets seed 0 + i -- at the next reset.")
        10
    """
    return sum(1 for token in sentence.split() if any(c.isalnum() for c in token))


def figures(page: Path) -> tuple[float, int, int]:
    """(mean words per sentence, the longest sentence's words, sentences) of ``page``."""
    counts = [words(s) for s in sentences(page.read_text(encoding="utf-8"))]
    return statistics.mean(counts), max(counts), len(counts)


def test_the_counter_splits_sentences_and_leaves_code_out():
    text = ("# A heading of many words that are not counted at all\n\n"
            "First sentence here. Second one, with `code(a, b)` in it!\n"
            "```python\nprint('not prose. at all')\n```\n"
            "| a table | row. Not counted |\n\n"
            "1. a numbered item\n2. another item. With two sentences.\n")
    assert sentences(text) == ["First sentence here.", "Second one, with CODE in it!", "a numbered item",
                               "another item.", "With two sentences."]


def test_a_long_sentence_is_found():
    long = " ".join(["word"] * 41) + "."
    assert figures_of(long + " Short one.") == (21.5, 41)


def figures_of(text: str) -> tuple[float, int]:
    counts = [words(s) for s in sentences(text)]
    return statistics.mean(counts), max(counts)


@pytest.mark.parametrize("page", PAGES)
def test_the_page_reads_in_short_sentences(page):
    mean, longest, count = figures(REPO / page)
    assert count >= 5, f"{page}: only {count} sentences found"
    too_long = [s for s in sentences((REPO / page).read_text(encoding="utf-8")) if words(s) > MAX_WORDS]
    assert not too_long, f"{page}: sentences over {MAX_WORDS} words: {too_long}"
    assert mean <= MAX_MEAN, f"{page}: {mean:.1f} words per sentence on average (at most {MAX_MEAN})"


def main(argv: list[str]) -> int:
    """Print each page's figures; with a page's name, its ten longest sentences too."""
    print(f"{'page':28} {'mean':>5} {'max':>4} {'sentences':>9}")
    for page in PAGES:
        if (REPO / page).is_file():
            mean, longest, count = figures(REPO / page)
            print(f"{page:28} {mean:5.1f} {longest:4d} {count:9d}")
    for name in argv:
        ranked = sorted(sentences((REPO / name).read_text(encoding="utf-8")), key=words, reverse=True)
        print(f"\n{name}:", *(f"  {words(s):3d} {s}" for s in ranked[:10]), sep="\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
