"""Helpers every floor may use, importing no other room: the store where several processes meet
(`rendezvous.py`)."""
