"""Integrations with other tools; each touches one tool's internals."""
