"""scripts/learning_curves.py and charts.line_chart: the curve PNG of docs/performance.md from TensorBoard events."""

import os

import pytest
from torch.utils.tensorboard import SummaryWriter

from spacewar_ai.util.charts import PALETTE
from tests.helpers import load_script

learning_curves = load_script("learning_curves")


def _run(path, points):
    w = SummaryWriter(str(path))
    for step, (minutes, win_rate) in enumerate(points):
        w.add_scalar("eval/win_rate", win_rate, step)
        w.add_scalar("eval/wall_minutes", minutes, step)
    w.close()
    return str(path)


def test_curves_are_drawn_where_their_values_are_and_the_legend_sits_below(tmp_path):
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    import pygame

    half = _run(tmp_path / "half", [(0.0, 0.5), (5.0, 0.5), (10.0, 0.5)])
    top = _run(tmp_path / "top", [(0.0, 1.0), (10.0, 1.0), (12.0, 0.0)])
    low = _run(tmp_path / "low", [(0.0, 0.1), (10.0, 0.1)])
    assert learning_curves.curve(top, 10.0) == [(0.0, 1.0), (10.0, 1.0)]  # 12 min: left out
    out = tmp_path / "curves.png"
    assert learning_curves.main([str(out), "--minutes", "10", f"half={half}", f"top={top}",
                                 f"low={low}"]) == 0
    img = pygame.image.load(str(out))
    # 800 x 480 of plot, then two legend rows of 22 pixels (three names, two a row) and a margin.
    assert img.get_size() == (800, 480 + 2 * 22 + 8)

    def color_near(x, y, color, r=2):
        return any(tuple(img.get_at((x + dx, y + dy)))[:3] == color
                   for dx in range(-r, r + 1) for dy in range(-r, r + 1))

    # Plot area: x from 100 to 780 over 0-10 minutes, y from 420 (0%) to 40 (100%).
    assert color_near(440, 230, PALETTE[0])  # 50% at 5 minutes
    assert color_near(700, 40, PALETTE[1])  # 100%, top right, where a legend used to sit
    assert color_near(440, 382, PALETTE[2])  # 10%
    legend = [tuple(img.get_at((x, y)))[:3]
              for x in range(800) for y in range(480, img.get_height())]
    assert all(c in legend for c in PALETTE[:3])


def test_a_folder_without_evaluations_is_named(tmp_path):
    with pytest.raises(SystemExit, match="other: no eval/win_rate events"):
        learning_curves.curve(_run(tmp_path / "other", []))


def test_runs_compare_at_fixed_decisions_as_the_mean_of_their_seeds(tmp_path, capsys):
    """--by decisions: a label's runs (seeds) are averaged at each decision count they all
    evaluated at, and the table gives the pooled games' 95% interval."""
    a = _run(tmp_path / "a", [(0.1, 0.2), (0.2, 0.6), (0.3, 0.9)])
    b = _run(tmp_path / "b", [(0.5, 0.4), (0.9, 0.8)])
    # a's third evaluation (step 2) is not b's: left out.
    points = learning_curves.by_decisions([a, b])
    assert [step for step, _ in points] == [0, 1]
    assert [win for _, win in points] == pytest.approx([0.3, 0.7])
    out = tmp_path / "steps.png"
    assert learning_curves.main([str(out), "--by", "decisions", f"two seeds={a},{b}"]) == 0
    table = capsys.readouterr().out
    assert "two seeds (2 runs, 200 games a point):" in table
    # 60 wins of 200: Wilson's interval is 24.07%-36.68%.
    assert "0 decisions   30.0%  [24.1%, 36.7%]" in table
    assert out.is_file()
