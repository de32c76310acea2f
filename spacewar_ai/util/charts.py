"""PNG line charts drawn with pygame (a dependency already), so reports need no matplotlib."""

from __future__ import annotations

from pathlib import Path

# Ten distinct colours (matplotlib's "tab10"), so a chart of up to ten series repeats none.
PALETTE = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189),
           (140, 86, 75), (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207)]


def line_chart(path: str | Path, series: dict[str, list[tuple[float, float]]], title: str,
               x_label: str, y_label: str, y_range: tuple[float, float] = (0.0, 1.0),
               size: tuple[int, int] = (800, 480)) -> None:
    """Draw named (x, y) series on shared axes and save a PNG. `size` is the plot's; the legend
    goes below it, two names a row, so it never hides a curve however many there are."""
    import os

    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    import pygame

    pygame.init()
    w, h = size
    left, right, top, bottom = 100, 20, 40, 60
    legend_row = 22
    legend_rows = (len(series) + 1) // 2
    surf = pygame.Surface((w, h + legend_rows * legend_row + (8 if series else 0)))
    surf.fill((255, 255, 255))
    font = pygame.font.Font(None, 22)
    xs = [x for pts in series.values() for x, _ in pts] or [0.0, 1.0]
    x0, x1 = min(0.0, min(xs)), max(xs) if max(xs) > 0 else 1.0
    y0, y1 = y_range

    def px(x, y):
        return (left + (x - x0) / (x1 - x0 or 1) * (w - left - right),
                h - bottom - (y - y0) / (y1 - y0 or 1) * (h - top - bottom))

    grey = (200, 200, 200)
    for k in range(6):
        y = y0 + (y1 - y0) * k / 5
        pygame.draw.line(surf, grey, px(x0, y), px(x1, y))
        surf.blit(font.render(f"{y:.0%}" if y1 <= 1 else f"{y:g}", True, (0, 0, 0)),
                  (45, px(x0, y)[1] - 8))
    for k in range(6):
        x = x0 + (x1 - x0) * k / 5
        surf.blit(font.render(f"{x:.1f}", True, (0, 0, 0)), (px(x, y0)[0] - 10, h - bottom + 8))
    pygame.draw.line(surf, (0, 0, 0), px(x0, y0), px(x1, y0), 2)
    pygame.draw.line(surf, (0, 0, 0), px(x0, y0), px(x0, y1), 2)
    surf.blit(font.render(title, True, (0, 0, 0)), (left, 10))
    surf.blit(font.render(x_label, True, (0, 0, 0)), (w // 2 - 60, h - 25))
    surf.blit(pygame.transform.rotate(font.render(y_label, True, (0, 0, 0)), 90), (12, top + 120))
    for i, (name, pts) in enumerate(series.items()):
        color = PALETTE[i % len(PALETTE)]
        pts = sorted(pts)
        if len(pts) >= 2:
            pygame.draw.lines(surf, color, False, [px(x, y) for x, y in pts], 3)
        for x, y in pts:
            pygame.draw.circle(surf, color, [int(v) for v in px(x, y)], 3)
        lx = left + (i % 2) * (w - left - right) // 2
        ly = h + (i // 2) * legend_row
        pygame.draw.line(surf, color, (lx, ly + 7), (lx + 24, ly + 7), 3)
        surf.blit(font.render(name, True, color), (lx + 32, ly))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pygame.image.save(surf, str(path))


def ratings_chart(path: str | Path, names: list[str], ratings: list[float],
                  errors: list[float], title: str) -> None:
    """Horizontal bars of ratings (best first) with 95% error bars, saved as a PNG."""
    bar_chart(path, names, ratings, title, errors, floor=None, label="{:.0f} +- {:.0f}")


def bar_chart(path: str | Path, names: list[str], values: list[float], title: str,
              errors: list[float] | None = None, floor: float | None = 0.0,
              label: str = "{:.3g}", size: tuple[int, int] = (800, 60)) -> None:
    """Horizontal bars, one a name, with optional error bars, saved as a PNG. Bars start at
    `floor` (None: just below the smallest value, for ratings that sit far from 0)."""
    import os

    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    import pygame

    pygame.init()
    errors = errors if errors is not None else [0.0] * len(values)
    row = 34
    w, h = size[0], size[1] + row * len(names)
    left, right, top = 260, 30, 45
    surf = pygame.Surface((w, h))
    surf.fill((255, 255, 255))
    font = pygame.font.Font(None, 22)
    spread = [v - e for v, e in zip(values, errors)] + [v + e for v, e in zip(values, errors)]
    low, high = (min(spread), max(spread)) if values else (0.0, 1.0)
    pad = 0.05 * (high - low or 1.0)
    lo = low - pad if floor is None else min(floor, low)
    hi = high + pad

    def px(v):
        return left + (v - lo) / (hi - lo or 1) * (w - left - right)

    surf.blit(font.render(title, True, (0, 0, 0)), (10, 12))
    for k, (name, v, e) in enumerate(zip(names, values, errors)):
        y = top + k * row
        surf.blit(font.render(f"{name[:18]}", True, (0, 0, 0)), (10, y + 8))
        pygame.draw.rect(surf, PALETTE[0], (left, y + 6, max(1, px(v) - left), row - 12))
        if e:
            pygame.draw.line(surf, (0, 0, 0), (px(v - e), y + row // 2),
                             (px(v + e), y + row // 2), 2)
            for end in (v - e, v + e):
                pygame.draw.line(surf, (0, 0, 0), (px(end), y + 8), (px(end), y + row - 8), 2)
        text = font.render(label.format(v, e), True, (0, 0, 0))
        surf.blit(text, (left - 8 - text.get_width(), y + 8))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pygame.image.save(surf, str(path))
