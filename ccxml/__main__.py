"""``python -m ccxml`` runs the command line."""
from ccxml.cli import run

run()
