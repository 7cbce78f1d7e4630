"""Reading a report back: a strict HTML5 parse (any parse error fails), its sections by id, their text."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import html5lib

SVG = "{http://www.w3.org/2000/svg}svg"
EVOLVE_SECTIONS = ("overview", "growth", "rate", "failures", "speedups", "lineage", "code", "feedback")
TARGET_SECTIONS = ("timeline", "tests", "e2e", "body")


def parse_strict(html: str) -> ET.Element:
    parser = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False)
    return parser.parse(html)


def sections(doc: ET.Element) -> dict[str, ET.Element]:
    return {s.get("id", ""): s for s in doc.iter("section")}


def text(element: ET.Element) -> str:
    return " ".join(" ".join(element.itertext()).split())


def missing(section: ET.Element) -> bool:
    return section.get("class") == "absent"


def figures(section: ET.Element) -> list[ET.Element]:
    return [svg for fig in section.iter("figure") for svg in fig.iter(SVG)]
