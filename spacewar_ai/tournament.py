"""The design's front door to tournaments and ratings: `from spacewar_ai.tournament import ...`.

Tournaments (round robin, Swiss, elimination, the report folder) live in
spacewar_ai/rating/tournament.py; results, Bradley-Terry, Elo and the ratings file in
spacewar_ai/rating/ratings.py; a match between two pilots in spacewar_ai/rating/match.py.
"""

from spacewar_ai.rating.match import MatchResult, play_match
from spacewar_ai.rating.ratings import (bradley_terry, elo_incremental, Entrant, RatingsFile,
                                        Results, standings)
from spacewar_ai.rating.match import wilson_interval
from spacewar_ai.rating.tournament import (TournamentReport, play_elimination, play_round_robin,
                                           play_swiss, resolve_entrants, run_tournament)

__all__ = ["Entrant", "MatchResult", "RatingsFile", "Results", "TournamentReport",
           "bradley_terry", "elo_incremental", "play_elimination", "play_match",
           "play_round_robin", "play_swiss", "resolve_entrants", "run_tournament", "standings",
           "wilson_interval"]
