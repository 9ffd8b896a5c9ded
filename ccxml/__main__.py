"""``python -m ccxml`` runs the command line."""
from ccxml.cli.app import run

run()
