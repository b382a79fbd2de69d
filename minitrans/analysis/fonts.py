"""Fonts for figures whose labels are tokens of any script.

Matplotlib's own DejaVu Sans draws Latin, Greek, Cyrillic, Arabic and Hebrew; Chinese,
Japanese and Korean need a CJK font. The first of :data:`CJK_FAMILIES` found is added as a
fallback (matplotlib picks, glyph by glyph, the first family of ``font.family`` that has it):
a system font (Debian's ``fonts-noto-cjk``, ``fonts-wqy-zenhei`` ...) or Noto Sans CJK shipped
by the ``noto-cjk-sans-otc`` package, a dependency. A label with a character no font has is
said once per process, instead of matplotlib's warning per glyph per drawing.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path

try:
    from noto_cjk_sans_otc import FONT_PATH
except ImportError:  # a damaged or trimmed install: the system's CJK fonts, if any
    FONT_PATH = None

log = logging.getLogger(__name__)

BASE_FAMILY = "DejaVu Sans"  # matplotlib's own font: Latin, Greek, Cyrillic, Arabic, Hebrew
CJK_FAMILIES = (
    "Noto Sans CJK SC",
    "Noto Sans CJK JP",
    "Source Han Sans SC",
    "Source Han Sans",
    "WenQuanYi Zen Hei",
    "Droid Sans Fallback",
    "Arial Unicode MS",
)
INSTALL_HINT = "pip install noto-cjk-sans-otc, or the system's Noto CJK fonts (Debian: apt-get install fonts-noto-cjk)"
# matplotlib warns once per missing glyph and drawing (35 warnings for one Chinese sentence):
# the one warning of :func:`warn_missing_glyphs` replaces them
warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from (current )?font", category=UserWarning)
_warned: set[str] = set()


def shipped_cjk_font() -> Path | None:
    """The file of Noto Sans CJK from the ``noto-cjk-sans-otc`` package (None without it)."""
    if FONT_PATH is None:
        return None
    path = Path(FONT_PATH)
    return path if path.is_file() else None


def _register_shipped_font() -> None:
    from matplotlib import font_manager  # matplotlib comes with the first drawing (analysis/viz.py)

    if (path := shipped_cjk_font()) is None:
        return
    try:
        font_manager.fontManager.addfont(str(path))
    except (OSError, RuntimeError, ValueError) as error:  # a damaged install: fall back to the system's fonts
        log.debug("cannot load %s: %s", path, error)


@functools.cache
def font_families() -> tuple[str, ...]:
    """``font.family`` for figures with tokens: DejaVu Sans, then the first CJK family found."""
    from matplotlib import font_manager

    known = {font.name for font in font_manager.fontManager.ttflist}
    if not known & set(CJK_FAMILIES):
        _register_shipped_font()
        known = {font.name for font in font_manager.fontManager.ttflist}
    return (BASE_FAMILY, *[family for family in CJK_FAMILIES if family in known][:1])


@functools.cache
def _charmaps() -> tuple[frozenset[int], ...]:
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    maps = []
    for family in font_families():
        path = font_manager.findfont(font_manager.FontProperties(family=family), fallback_to_default=False)
        maps.append(frozenset(FT2Font(path).get_charmap()))
    return tuple(maps)


def missing_glyphs(texts: Iterable[str]) -> str:
    """The characters of ``texts`` that no font of :func:`font_families` can draw, in order."""
    maps = _charmaps()
    seen: dict[str, None] = {}
    for text in texts:
        for char in text:
            if char not in seen and not char.isspace() and not any(ord(char) in m for m in maps):
                seen[char] = None
    return "".join(seen)


def warn_missing_glyphs(texts: Iterable[str]) -> None:
    """Warn, once per process, that some labels will be drawn as boxes, and what to install."""
    missing = missing_glyphs(texts)
    if missing and not _warned:
        _warned.add(missing)
        warnings.warn(
            f"no font here draws {missing[:10]!r}{' ...' if len(missing) > 10 else ''}: those tokens show as "
            f"boxes in attention images ({INSTALL_HINT})",
            stacklevel=3,
        )


@contextlib.contextmanager
def token_fonts(texts: Iterable[str] = ()) -> Iterator[None]:
    """Build figures inside this context: their text gets :func:`font_families` (kept by the
    figure, so it draws the same after the context), and a missing glyph is said once."""
    import matplotlib

    warn_missing_glyphs(texts)
    with matplotlib.rc_context({"font.family": list(font_families())}):
        yield


__all__ = ["CJK_FAMILIES", "font_families", "missing_glyphs", "token_fonts", "warn_missing_glyphs"]
