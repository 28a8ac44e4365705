"""``python -m pattern_gen.cli``."""

from . import main

main()
