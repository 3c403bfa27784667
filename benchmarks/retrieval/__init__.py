"""Retrieval evaluation: long multi-session conversations with questions labelled by the turns that
answer them, and the harness that measures how often search finds those turns (``python -m
benchmarks.retrieval``)."""
