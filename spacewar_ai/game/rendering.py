"""Drawing a game with pygame: the window ("human") and frames as arrays ("rgb_array").

pygame is imported here only, when something is first drawn, so training never loads it.
"""

from __future__ import annotations

import math

import numpy as np

from ..config import GameConfig
from . import engine

BLACK = (0, 0, 0)
STAR = (255, 255, 220)
SHIP_COLORS = ((120, 220, 255), (255, 190, 90))  # ship 0 needle, ship 1 wedge
TORPEDO = (255, 255, 255)
FLAME = (255, 120, 40)
HUD = (170, 200, 170)

# Outlines in ship units (x forward, y right), after the 1962 needle and wedge.
NEEDLE = ((14, 0), (4, 3), (-10, 3), (-13, 5), (-13, -5), (-10, -3), (4, -3))
WEDGE = ((13, 0), (-9, 8), (-5, 0), (-9, -8))


def _import_pygame():
    try:
        import pygame
    except ImportError as exc:  # pragma: no cover - pygame is a runtime dependency
        raise ImportError("rendering needs pygame: pip install pygame") from exc
    return pygame


class Renderer:
    """Draws game g of a GameBatch onto a square surface of `size` pixels."""

    def __init__(self, config: GameConfig, size: int = 640, mode: str = "rgb_array",
                 title: str = "Spacewar! AI", phosphor: bool = False, own_events: bool = True):
        pygame = _import_pygame()
        self.pg = pygame
        self.config = config
        self.size = int(size)
        self.mode = mode
        self.phosphor = phosphor
        # The renderer answers the window's close button itself unless a game loop reads events.
        self.own_events = own_events
        self.closed = False
        self.scale = self.size / max(config.width, config.height)
        # Off-screen drawing needs only fonts: starting the display and sound as well would make
        # SDL complain on a headless machine (a training run's evaluation videos).
        if mode == "human":
            pygame.init()
            self.screen = pygame.display.set_mode((self.size, self.size))
            pygame.display.set_caption(title)
            self.clock = pygame.time.Clock()
        else:
            pygame.font.init()
            self.screen = pygame.Surface((self.size, self.size))
            self.clock = None
        self.font = pygame.font.Font(None, max(14, self.size // 36))
        self.big_font = pygame.font.Font(None, max(20, self.size // 18))
        # Phosphor: each frame dims the last instead of clearing it, as the PDP-1's P7 tube did.
        self.fade = pygame.Surface((self.size, self.size))
        self.fade.set_alpha(110)
        self.fade.fill(BLACK)
        rng = np.random.default_rng(1962)  # the same starfield every time
        self.stars = [(int(x), int(y), int(b)) for x, y, b in zip(
            rng.integers(0, self.size, 120), rng.integers(0, self.size, 120),
            rng.integers(60, 200, 120))]

    def _pt(self, x, y):
        return int(x * self.scale), int(y * self.scale)

    def _shape(self, shape, x, y, ang):
        c, s = math.cos(ang), math.sin(ang)
        k = self.scale * 1.2
        return [self._pt(x + (px * c - py * s) * k / self.scale, y + (px * s + py * c) * k / self.scale)
                for px, py in shape]

    def draw(self, batch, g: int = 0, hud_lines: tuple[str, ...] = (), wait: bool = True,
             overlay: tuple[str, ...] = ()):
        """Draw game g; in a window, wait for the next frame at the game's fps unless wait=False
        (training draws without waiting so the other games do not slow down). `overlay` lines
        are shown large in the middle (round results, pause, help)."""
        pg = self.pg
        if self.closed:
            return None
        if self.mode == "human" and self.own_events:
            for event in pg.event.get(pg.QUIT):
                if event.type == pg.QUIT:
                    self.close()
                    return None
        surf = self.screen
        if self.phosphor:
            surf.blit(self.fade, (0, 0))
        else:
            surf.fill(BLACK)
        for x, y, b in self.stars:
            surf.set_at((x, y), (b, b, b))
        cfg = self.config
        if not cfg.no_star:
            cx, cy = self._pt(cfg.width / 2, cfg.height / 2)
            r = max(2, int(cfg.star_radius * self.scale * 0.6))
            pg.draw.circle(surf, STAR, (cx, cy), r)
            for k in range(6):
                a = k * math.pi / 3 + batch.game_i[g, engine.FRAME] * 0.05
                pg.draw.line(surf, STAR, (cx, cy), (cx + int(1.8 * r * math.cos(a)),
                                                    cy + int(1.8 * r * math.sin(a))))
        sf, si = batch.ship_f[g], batch.ship_i[g]
        for s in range(2):
            if si[s, engine.HYPER_HIDDEN] > 0:
                continue
            x, y, ang = sf[s, engine.SX], sf[s, engine.SY], sf[s, engine.SANG]
            color = SHIP_COLORS[s] if si[s, engine.ALIVE] else (90, 90, 90)
            pg.draw.polygon(surf, color, self._shape(NEEDLE if s == 0 else WEDGE, x, y, ang), 1)
            if si[s, engine.THRUSTING]:
                flame = ((-13, 0), (-22 - 4 * (batch.game_i[g, engine.FRAME] % 3), 0))
                pg.draw.line(surf, FLAME, *self._shape(flame, x, y, ang), 2)
        for o in range(2):
            for k in range(batch.torp_t.shape[2]):
                if batch.torp_t[g, o, k] > 0:
                    pg.draw.circle(surf, TORPEDO, self._pt(batch.torp_f[g, o, k, 0],
                                                          batch.torp_f[g, o, k, 1]), 2)
        lines = [f"P{s + 1} fuel {sf[s, engine.SFUEL] / max(cfg.max_fuel, 1):4.0%}  "
                 f"torpedoes {si[s, engine.AMMO]:2d}" for s in range(2)]
        lines += list(hud_lines)
        for i, text in enumerate(lines):
            color = SHIP_COLORS[i] if i < 2 else HUD
            surf.blit(self.font.render(text, True, color), (6, 4 + i * (self.font.get_height() + 2)))
        if overlay:
            self._overlay(overlay)
        if self.mode == "human":
            pg.display.flip()
            if wait:
                self.clock.tick(cfg.fps)
            return None
        return self.frame_rgb()

    def _overlay(self, lines) -> None:
        pg = self.pg
        rendered = [self.big_font.render(t, True, (235, 235, 235)) for t in lines]
        height = sum(r.get_height() + 6 for r in rendered) + 14
        width = max(r.get_width() for r in rendered) + 28
        box = pg.Surface((width, height))
        box.set_alpha(200)
        box.fill((20, 28, 40))
        top = (self.size - height) // 2
        self.screen.blit(box, ((self.size - width) // 2, top))
        y = top + 10
        for r in rendered:
            self.screen.blit(r, ((self.size - r.get_width()) // 2, y))
            y += r.get_height() + 6

    def frame_rgb(self) -> np.ndarray:
        """What is on the surface now, as an (H, W, 3) uint8 array."""
        return np.transpose(self.pg.surfarray.array3d(self.screen), (1, 0, 2)).copy()

    def close(self):
        if self.mode == "human" and not self.closed:
            self.pg.display.quit()
        self.closed = True
