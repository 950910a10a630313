"""``python -m aka.cli``."""

from aka.cli import main

main()
