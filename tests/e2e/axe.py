"""axe-core in Playwright: inject the vendored axe into a page and fail on serious or critical violations.

axe-core is vendored for the tests only (`tests/e2e/vendor/axe-core/`, see its VERSION file); the portal never
serves it. It is evaluated through the DevTools protocol, which the page's Content-Security-Policy does not
govern, so the pages are checked under their real policy.
"""
from __future__ import annotations

from pathlib import Path

AXE_SOURCE = Path(__file__).resolve().parent / "vendor" / "axe-core" / "axe.min.js"
FAILING_IMPACTS = ("serious", "critical")
# WCAG 2.x A and AA plus axe's best practices (landmarks, headings, regions).
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]


def axe_violations(page, impacts: tuple[str, ...] = FAILING_IMPACTS) -> list[dict]:
    """axe's violations of the page as it is now, of the given impacts."""
    # A fading element (an htmx indicator after its request) has a contrast of the moment: measure the page at rest.
    page.evaluate("() => Promise.all(document.getAnimations().filter((a) => a instanceof CSSTransition)"
                  ".map((a) => a.finished.catch(() => null)))")
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.evaluate(AXE_SOURCE.read_text(encoding="utf-8"))
    results = page.evaluate(
        "async (tags) => await window.axe.run(document, {runOnly: {type: 'tag', values: tags},"
        " resultTypes: ['violations']})", AXE_TAGS)
    return [violation for violation in results["violations"] if violation["impact"] in impacts]


def describe(violations: list[dict]) -> str:
    """One readable block per violation: rule, impact, help and the first few offending elements."""
    lines = []
    for violation in violations:
        lines.append(f"{violation['id']} ({violation['impact']}): {violation['help']} {violation['helpUrl']}")
        for node in violation["nodes"][:5]:
            lines.append(f"    {' '.join(node['target'])}: {node['html'][:200]}")
    return "\n".join(lines)


def assert_accessible(page, where: str = "") -> None:
    """Fail with a readable list when axe finds a serious or critical violation on the page."""
    violations = axe_violations(page)
    assert not violations, f"axe found serious or critical problems on {where or page.url}:\n{describe(violations)}"
