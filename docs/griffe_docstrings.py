"""A griffe extension for the API page (mkdocs.yml: mkdocstrings' ``extensions``): the docstrings'
Sphinx roles (``:func:`~a.b.name```) become code spans (```name```) instead of showing raw, and a
bullet list that follows its sentence directly gets the blank line Markdown needs to see a list.
"""

from __future__ import annotations

import re

import griffe

ROLE = re.compile(r":(?:func|meth|class|attr|mod|data|obj|exc|const):`(~?)([\w.]+)`")
BULLET = re.compile(r"^(\s*)[-*] ")


def markdown_docstring(text: str) -> str:
    text = ROLE.sub(lambda m: "`" + (m.group(2).rsplit(".", 1)[-1] if m.group(1) else m.group(2)) + "`", text)
    out: list[str] = []
    list_indent = None  # the indent of the bullets of the list being read, None outside a list
    for line in text.split("\n"):
        bullet = BULLET.match(line)
        if not line.strip():
            list_indent = None
        elif bullet:
            if list_indent is None and out and out[-1].strip():
                out.append("")
            list_indent = len(bullet.group(1))
        elif list_indent is not None and len(line) - len(line.lstrip()) <= list_indent:
            list_indent = None  # a line as far left as the bullets: the list has ended
        out.append(line)
    return "\n".join(out)


class MarkdownDocstrings(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown_docstring(obj.docstring.value)
