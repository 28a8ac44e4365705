"""The catalogue: every card, platform profile and naming table loaded and cross-checked."""

from .catalogue import Catalogue, card_files, load_catalogue

__all__ = ["Catalogue", "card_files", "load_catalogue"]
