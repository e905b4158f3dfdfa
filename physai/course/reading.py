"""A lesson page's time: its reading, counted from the rendered page at :data:`WORDS_PER_MINUTE`, and its hands-on
estimate; the track's time is their sum."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from html.parser import HTMLParser

WORDS_PER_MINUTE = 200
"""The reading speed a page's reading time is counted at: careful reading of technical prose."""
UNREAD = ("pre", "table", "math", "script", "style")
"""What the reading time leaves out: code listings (run in the hands-on time), tables and maths (looked up, not read
as prose)."""
UNREAD_FOLDS = ("more", "exercise")
"""The folded blocks the reading time leaves out, by class: "Going further" (optional) and the exercises (hands-on)."""
_VOID = {"img", "br", "hr", "input", "meta", "link", "col", "mspace", "source", "wbr"}


class _Prose(HTMLParser):
    """The text of a page body a reader reads, less :data:`UNREAD` and :data:`UNREAD_FOLDS`."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.text, self._open = [], []  # _open: (tag, left out with what it holds)

    def handle_starttag(self, tag, attrs):
        if tag in _VOID:
            return
        kinds = (dict(attrs).get("class") or "").split()
        out = tag in UNREAD or (tag == "details" and any(k in UNREAD_FOLDS for k in kinds))
        self._open.append((tag, out or bool(self._open and self._open[-1][1])))

    def handle_endtag(self, tag):
        if any(t == tag for t, _ in self._open):  # a stray end tag closes nothing
            while self._open.pop()[0] != tag:
                pass

    def handle_data(self, data):
        if not (self._open and self._open[-1][1]):
            self.text.append(data)


def reading_words(body_html: str) -> int:
    """The words of a page body a reader reads: its text less code listings, tables, maths, the folded "Going further"
    blocks and the exercises (:data:`UNREAD`, :data:`UNREAD_FOLDS`); a word is a run of non-space characters with a
    letter or digit in it. Quizzes, their explanations, captions and the predict-first blocks count.

    Examples
    --------
    >>> from physai.course.reading import reading_words
    >>> reading_words('<p>The lever is <span>0.22</span> m.</p><pre>x = 1</pre>'
    ...               '<details class="more"><summary>Going further</summary><p>skipped</p></details>')
    5
    """
    prose = _Prose()
    prose.feed(body_html)
    prose.close()
    return sum(1 for w in " ".join(prose.text).split() if any(c.isalnum() for c in w))


@dataclass(frozen=True)
class PageTime:
    """A lesson page's time in whole minutes: ``reading``, its body at :data:`WORDS_PER_MINUTE` (:func:`page_time`),
    and ``hands_on``, the lesson's estimate of what the learner does (front matter ``hands_on``: the Build-it, the
    experiment's predict-first, the exercises and the code they run)."""

    reading: int
    hands_on: int

    @property
    def total(self) -> int:
        return self.reading + self.hands_on

    def __str__(self) -> str:
        return f"~{self.total} min: ~{self.reading} min reading, ~{self.hands_on} min hands-on"


def page_time(hands_on: int, body_html: str) -> PageTime:
    """A page's time: its reading counted from its rendered body (:func:`reading_words`, rounded up to the minute)
    and ``hands_on`` (minutes, the lesson's front matter).

    Examples
    --------
    >>> from physai.course.reading import page_time
    >>> str(page_time(10, "<p>" + "word " * 401 + "</p>"))
    '~13 min: ~3 min reading, ~10 min hands-on'
    """
    return PageTime(math.ceil(reading_words(body_html) / WORDS_PER_MINUTE), hands_on)


def track_time(times: Iterable[PageTime]) -> PageTime:
    """The lessons' times added up.

    Examples
    --------
    >>> from physai.course.reading import PageTime, track_time
    >>> str(track_time([PageTime(20, 25), PageTime(15, 30)]))
    '~90 min: ~35 min reading, ~55 min hands-on'
    """
    times = list(times)
    return PageTime(sum(t.reading for t in times), sum(t.hands_on for t in times))
