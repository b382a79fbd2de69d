"""Language names for language codes, from ``langcodes`` (the IETF tags and CLDR names it
maintains): ``zh`` -> Chinese, ``pt-BR`` -> Portuguese (Brazil), ``yue`` -> Cantonese."""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=256)
def language_name(code: str) -> str:
    """The English name of a language code; the code itself when it names no language
    (``xx``, ``?``, a file suffix that is not a language)."""
    import langcodes  # its name data loads on first use: keep it off the import path

    try:
        if not langcodes.tag_is_valid(code) or langcodes.Language.get(code).language in (None, "und"):
            return code
        return langcodes.Language.get(code).display_name()
    except (langcodes.LanguageTagError, ValueError, ImportError):
        return code


__all__ = ["language_name"]
