"""The design's front door to tournaments and ratings: `from spacewar_ai.tournament import ...`.

Tournaments (round robin, Swiss, elimination, the report folder) live in
spacewar_ai/rating/tournament.py; results, Bradley-Terry, Elo and the ratings file in
spacewar_ai/rating/ratings.py; a match between two pilots in spacewar_ai/rating/match.py.
"""

from .rating.match import MatchResult, play_match, wilson_interval
from .rating.ratings import Entrant, RatingsFile, Results, bradley_terry, elo_incremental, standings
from .rating.tournament import (
                                        TournamentReport,
                                        play_elimination,
                                        play_round_robin,
                                        play_swiss,
                                        resolve_entrants,
                                        run_tournament,
)

__all__ = ["Entrant", "MatchResult", "RatingsFile", "Results", "TournamentReport",
           "bradley_terry", "elo_incremental", "play_elimination", "play_match",
           "play_round_robin", "play_swiss", "resolve_entrants", "run_tournament", "standings",
           "wilson_interval"]
