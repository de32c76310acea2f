"""A real pygame surface (SDL_VIDEODRIVER=dummy): the frame shows the star, both ships, the HUD."""

import numpy as np

from spacewar_ai import SpacewarEnv
from spacewar_ai.game import engine
from spacewar_ai.game.rendering import SHIP_COLORS, STAR


def _near(frame, x, y, color, radius=14):
    h, w, _ = frame.shape
    ys, xs = np.mgrid[max(0, y - radius):min(h, y + radius), max(0, x - radius):min(w, x + radius)]
    patch = frame[ys, xs].reshape(-1, 3)
    return np.any(np.all(patch == np.array(color, dtype=np.uint8), axis=1))


def test_rgb_frame_contains_star_ships_and_hud():
    env = SpacewarEnv(render_mode="rgb_array", render_size=512, opponent="idle")
    env.reset(seed=4)
    frame = env.render()
    assert frame.shape == (512, 512, 3) and frame.dtype == np.uint8
    scale = 512 / 1024
    assert _near(frame, 256, 256, STAR, 4)
    for s in range(2):
        x = int(env.batch.ship_f[0, s, engine.SX] * scale)
        y = int(env.batch.ship_f[0, s, engine.SY] * scale)
        assert _near(frame, x, y, SHIP_COLORS[s]), f"ship {s} not drawn near ({x}, {y})"
    hud = frame[:30, :200]
    assert np.any(np.all(hud == np.array(SHIP_COLORS[0], dtype=np.uint8), axis=-1))
    env.close()


def test_frames_change_as_the_game_runs():
    env = SpacewarEnv(render_mode="rgb_array", render_size=256)
    env.reset(seed=1)
    first = env.render()
    for _ in range(10):
        env.step(3)
    assert not np.array_equal(first, env.render())
    env.close()
